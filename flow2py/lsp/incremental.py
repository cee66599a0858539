"""Re-checking an edited module quickly, with the result a fresh check gives (docs/spec/editor.md).

A whole check of a 10,000-line module takes most of a second, nearly all of it parsing and walking
function bodies; an edit changes one declaration. So the language server checks a document in
pieces it keeps between edits:

- **Parsing, by declaration.** The text is cut at every line that starts a declaration in column 1
  (the parser cuts there too: grammar.md), and each piece is parsed on its own once, then reused
  while its text is unchanged. A piece keeps the coordinates it was first parsed at: the module
  handed to the checker is a *virtual* text holding every piece at its own offset and line (a
  piece that moved is not re-parsed nor its tree rewritten), and every span the checker reports
  is mapped back to the piece's place in the real text. The virtual text starts with an empty
  line (offset 0, where a missing `use` goes in a module without any, is in no piece) and every
  piece starts a line of it (columns the checker computes from the text are the real ones). A
  piece that does not parse on its own
  makes the text parsed and checked whole, as `flow2py check` does.
- **Checking, by function.** When no declaration's signature changed (types, `use`s, function
  headers, their order: the "signature key"), a function whose body is unchanged is not walked
  again: what its walk wrote is kept (its diagnostics, side-table entries, the declarations and
  aliases it used, its data requirements and generic instantiations) and replayed, and only the
  edited function is walked. A kept diagnostic that points into a piece that was re-parsed is
  stale, so its function is walked again. The declarations pass and the program-wide rules
  (unused declarations, data requirements, the entry function) run every time.

The result is compared with a fresh check's after edits in tests/test_lsp_incremental.py.
"""

from __future__ import annotations

import bisect
import os
import re
import sys
from dataclasses import dataclass, field, fields, replace

from flow2py.check.declare import Declarations
from flow2py.check import habit_fixes, one_mistake
from flow2py.check.driver import (
    CheckResult,
    Modules,
    _annotation_args,
    _data_requirements,
    _entry,
    _unused,
    line_removed_end,
    check_modules,
    collection_paused,
    read_modules,
)
from flow2py.check.exhaust import Exhaust
from flow2py.check.infer import check_fn, program_state
from flow2py.check.modgraph import STD_VERSION, LoadedModule, Loader
from flow2py.syntax.broken import NOTHING_BROKEN
from flow2py.check.post import finish_fn
from flow2py.check.typed import CheckedProgram, FnRef, MethodRef
from flow2py.diagnostics import Diagnostic, Edit, Fix, Problems, Related
from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module

Span = ast.Span

# a line that may start a declaration (the parser's column-1 rule, on text)
_DECL_START = re.compile(r"^(?:(?:pub|flow|type|opaque|use)\b|@)", re.M)


@dataclass(eq=False)
class Piece:
    """One declaration-sized piece of the entry module, parsed once at virtual coordinates."""

    text: str
    uses: list
    decls: list
    voff: int  # where the piece starts in the virtual text
    vline: int  # its first line there, 0-based
    sig: str  # the text with every function body cut out: what other declarations depend on
    roff: int = 0  # where it is in the real text now
    rline: int = 0
    # the last piece of a text without a final newline: parsed again at the very end of the
    # virtual text on every check (so that nothing follows it there either), and never kept
    transient: bool = False


@dataclass
class EditorCheck:
    """A check as the editor reads it: real coordinates for the entry module's diagnostics; the
    program (checked, or partial when there are errors) and the maps between coordinates."""

    result: CheckResult
    modules: list[LoadedModule]
    program: CheckedProgram | None  # result.program, or the partial side tables
    entry_key: str | None
    display: str  # the entry module's file name in spans
    pieces: list[Piece] = field(default_factory=list)  # empty: the module was parsed whole
    whole: bool = True  # parsed and checked whole (no virtual coordinates)
    reused: int = 0  # function walks replayed
    text: str = ""  # the entry module's real text (pieces: empty when it was checked whole)
    walked: int = 0  # function walks done

    def to_real(self, span: Span) -> Span:
        if self.whole or span.file != self.display or span.line <= 0:
            return span
        return _map_span(span, self._by_voff(span.start))

    def to_virtual(self, offset: int) -> int:
        """The virtual offset of the real `offset` in the entry module."""
        if self.whole or not self.pieces:
            return offset
        i = bisect.bisect_right([p.roff for p in self.pieces], offset) - 1
        p = self.pieces[max(i, 0)]
        return offset - p.roff + p.voff

    def _by_voff(self, voff: int) -> Piece | None:
        starts = self._vstarts
        i = bisect.bisect_right(starts, voff) - 1
        if i < 0:
            return None
        p = self._vsorted[i]
        return p if voff <= p.voff + len(p.text) else None

    def __post_init__(self):
        self._vsorted = sorted(self.pieces, key=lambda p: p.voff)
        self._vstarts = [p.voff for p in self._vsorted]


@dataclass
class _FnWalk:
    """What walking one function wrote, to be replayed while nothing it depends on changed."""

    shell: CheckedProgram
    diags: list
    data_reqs: list
    insts: list
    used: set
    aliases: set
    deps: frozenset = frozenset()  # every declaration it referred to: it is stale when one changes
    # the modules said to need a `use` before it was walked (one such report a module: it is
    # stale when that set differs), and those it said so of
    missing_before: frozenset = frozenset()
    missing: frozenset = frozenset()


def split(text: str) -> list[tuple[int, str]]:
    """The text cut before every line that starts a declaration in column 1, a piece of only
    annotations and comments staying with the declaration after it: (offset, piece text)."""
    cuts = [m.start() for m in _DECL_START.finditer(text) if m.start()]
    out = []
    prev = 0
    for c in cuts + [len(text)]:
        piece = text[prev:c]
        if c < len(text) and (piece[:1] in "@/\n" or not prev) and _prefix_only(piece):
            continue  # `@tool` on its own line: the declaration follows
        if piece:
            out.append((prev, piece))
        prev = c
    return out


_ANNOTATIONS_ONLY = re.compile(r"@\w+(?:\([^()]*\))?(?:\s+@\w+(?:\([^()]*\))?)*")


def _prefix_only(piece: str) -> bool:
    """Only annotations and comments (a declaration's head is still to come)."""
    for line in piece.splitlines():
        s = line.strip()
        if s and not s.startswith("//") and not _ANNOTATIONS_ONLY.fullmatch(s):
            return False
    return True


class Document:
    """The pieces of one open document, and the function walks kept between its checks."""

    def __init__(self, path: str, *, cache_dir: str | None = None) -> None:
        self.path = path
        self.cache_dir = cache_dir
        self._reset()

    def _reset(self) -> None:
        self.pieces: dict[str, list[Piece]] = {}
        # the virtual text, piece after piece (dead ones kept), after one empty line: no piece
        # starts at offset 0, where a missing `use` is inserted in a module without any
        self.parts: list[str] = ["\n"]
        self.vlen = 1
        self.vlines = 1
        self.walks: dict[int, _FnWalk] = {}  # FnDecl node id -> its walk
        self.env_key: tuple | None = None
        self.names_key: tuple | None = None  # env_key with function headers left out
        self.headers: dict[str, str] = {}  # function declaration id -> its piece's signature
        self.tables: tuple | None = None  # the side tables the walks filled (persistent)
        self._decls = None  # the last declarations pass, when it reported nothing
        self.open_texts: dict[str, str] = {}

    def check(self, text: str, open_texts: dict[str, str] | None = None) -> EditorCheck:
        """The check of `text` as the entry module; `open_texts` (absolute path -> text) holds
        the other documents open in the editor, read instead of their files where imported."""
        self.open_texts = open_texts or {}
        with collection_paused():
            try:
                return self._check(text)
            except RecursionError:
                self._reset()
                return self._whole(text)
            except Exception as e:  # a bug here must not cost the author the diagnostics
                print(
                    f"flow2py lsp: incremental check failed ({type(e).__name__}: {e}); checking whole",
                    file=sys.stderr,
                )
                self._reset()
                return self._whole(text)

    # -- whole --------------------------------------------------------------------------------

    def _whole(self, text: str) -> EditorCheck:
        mods = read_modules(self.path, cache_dir=self.cache_dir, source=text, open_texts=self.open_texts)
        r = check_modules(mods)
        display = _display_of(mods)
        return EditorCheck(r, mods.modules, r.program or r.partial, mods.entry_key, display)

    # -- in pieces ----------------------------------------------------------------------------

    def _check(self, text: str) -> EditorCheck:
        if self.vlen > 3 * len(text) + 200_000:
            self._reset()
        open_end = not text.endswith("\n")
        display = self.path  # spans name the entry file as the loader is given it
        live: list[Piece] = []
        spare = {k: list(v) for k, v in self.pieces.items()}
        line = 0
        prev = 0
        cut = split(text)
        first = self._first_layout(text, display, cut) if self.vlen == 1 else None
        for i, (off, piece_text) in enumerate(cut if first is None else ()):
            line += text.count("\n", prev, off)
            prev = off
            if open_end and i == len(cut) - 1:
                p = self._parse_piece(piece_text, display, gap=False)
                if p is not None:
                    p.transient = True
            else:
                got = spare.get(piece_text)
                p = got.pop() if got else self._parse_piece(piece_text, display)
            if p is None:
                self.walks, self.env_key, self.tables, self._decls = {}, None, None, None
                return self._whole(text)
            p.roff, p.rline = off, line
            live.append(p)
        if first is not None:
            live = first
        kept: dict[str, list[Piece]] = {}
        for p in live:
            if not p.transient:
                kept.setdefault(p.text, []).append(p)
        self.pieces = kept
        virtual = "".join(self.parts)
        module = ast.Module(
            display,
            [u for p in live for u in p.uses],
            [d for p in live for d in p.decls],
            source=virtual,
            span=Span(display, 1, 1, self.vlines + 1, 1, 0, len(virtual)),
        )
        problems = Problems()
        loader = _EditorLoader(
            self.path,
            problems,
            self.cache_dir,
            entry_source=text,
            entry_module=module,
            open_texts=self.open_texts,
        )
        modules = loader.load()
        mods = Modules(
            self.path,
            modules,
            loader._local_key(loader.entry_abs),
            tuple(problems.items),
            dict(loader.sources),
            loader.commits,
            bool(modules) and not loader.syntax_errors,
        )
        mods.sources[display] = text
        out = EditorCheck(CheckResult(None, []), modules, None, mods.entry_key, display, live, whole=False)
        out.text = text
        if not mods.readable:
            r = check_modules(mods)
            out.result = CheckResult(None, _mapped(r.diagnostics, out), mods.sources)
            return out
        self._check_bodies(mods, problems, out)
        return out

    def _first_layout(self, text: str, display: str, cut) -> list[Piece] | None:
        """The first check parses the text whole (much faster than piece by piece) and lays
        the pieces out where they are: the virtual text starts as the real one."""
        module, diags = parse_module("\n" + text, display)
        if diags or module.source != "\n" + text:
            return None
        live, line, prev = [], 0, 0
        for off, piece_text in cut:
            line += text.count("\n", prev, off)
            prev = off
            live.append(Piece(piece_text, [], [], off + 1, line + 1, "", off, line))
        starts = [p.voff for p in live]
        for n in [*module.uses, *module.decls]:
            p = live[bisect.bisect_right(starts, n.span.start) - 1]
            if n.span.end > p.voff + len(p.text):
                return None  # a declaration across a cut: the pieces would not parse on their own
            (p.uses if isinstance(n, ast.Use) else p.decls).append(n)
        for p in live:
            p.sig = _signature(p.text, p.decls, p.voff)
        if text.endswith("\n"):
            self.parts = ["\n", text, "\n"]  # a gap line after it, as after every piece
        else:
            self.parts = ["\n", text]
            if live:
                live[-1].transient = True
        self.vlen = sum(len(x) for x in self.parts)
        self.vlines = sum(x.count("\n") for x in self.parts)
        return live

    def _parse_piece(self, piece_text: str, display: str, gap: bool = True) -> Piece | None:
        module, diags = parse_module(piece_text, display)
        if diags or module.source != piece_text:
            return None
        if not self.parts[-1].endswith("\n"):
            # after a last piece without a final newline: each piece starts a line (columns
            # the checker computes from the text are then the real ones)
            self.parts.append("\n")
            self.vlen += 1
            self.vlines += 1
        voff, vline = self.vlen, self.vlines
        nodes = [*module.uses, *module.decls]
        _shift(nodes, vline, voff)
        sig = _signature(piece_text, module.decls, voff)
        part = piece_text + "\n" if gap else piece_text  # a gap line: no span of one piece touches the next
        self.parts.append(part)
        self.vlen += len(part)
        self.vlines += part.count("\n")
        return Piece(piece_text, module.uses, module.decls, voff, vline, sig)

    def _declarations(self, modules: list[LoadedModule], entry_key, problems: Problems, same: bool):
        """The declarations pass, or the last one's result when no signature changed and it
        reported nothing: its tables are then rebound to this check's trees and the state the
        body walks and the program-wide rules add to is put back as the pass left it."""
        kept = self._decls if same else None
        if kept is not None:
            decls, used, data_params, aliases, missing = kept
            decls.problems = problems
            decls.used = set(used)
            decls.missing_uses = set(missing)
            decls.suggest_cache = {}  # its candidates' spans are the last check's trees'

            decls.data_params = {k: set(v) for k, v in data_params.items()}
            for m in modules:
                env = decls.envs[m.key]
                env.lm, env.cm.ast, env.used_aliases = m, m.ast, set(aliases[m.key])
            env = decls.envs[entry_key]
            for d in env.lm.ast.decls:  # the same names in the same order: the signature key says so
                info = (env.cm.fns if isinstance(d, ast.FnDecl) else env.cm.types)[d.name]
                info.node = d
            return decls
        decls = Declarations(modules, problems)
        before = len(problems.items)
        decls.run()
        self._decls = None
        if len(problems.items) == before:
            self._decls = (
                decls,
                set(decls.used),
                {k: set(v) for k, v in decls.data_params.items()},
                {k: set(e.used_aliases) for k, e in decls.envs.items()},
                set(decls.missing_uses),
            )
        return decls

    def _reusable(self, out: EditorCheck, modules, entry_key) -> tuple[dict, bool, bool]:
        """The walks still right for this check: all of them while no signature changed; when
        only function headers changed (no type, no `use`, the same names in the same order),
        those that never referred to a changed function. Also: whether no signature changed,
        and whether the side tables can be kept."""
        others = tuple((m.key, id(m.ast)) for m in modules if m.key != entry_key)
        env_key = tuple(p.sig for p in out.pieces) + others
        same = env_key == self.env_key
        headers = {}
        for p in out.pieces:
            for d in p.decls:
                if isinstance(d, ast.FnDecl):
                    headers[f"{entry_key}::{d.name}"] = p.sig
        names_key = (
            tuple(
                tuple(d.name for d in p.decls)
                if p.decls and not p.uses and all(isinstance(d, ast.FnDecl) for d in p.decls)
                else p.sig
                for p in out.pieces
            )
            + others
        )
        walks = self.walks if same else {}
        headers_only = not same and self.env_key is not None and names_key == self.names_key
        if headers_only:
            changed = {k for k, v in headers.items() if self.headers.get(k) != v}
            walks = {k: w for k, w in self.walks.items() if not (w.deps & changed)}
        self.env_key, self.names_key, self.headers = env_key, names_key, headers
        return walks, same, (same or headers_only) and self.tables is not None

    def _check_bodies(self, mods: Modules, problems: Problems, out: EditorCheck) -> None:
        modules, entry_key = mods.modules, mods.entry_key
        old_walks = self.walks
        walks, same, keep_tables = self._reusable(out, modules, entry_key)
        decls = self._declarations(modules, entry_key, problems, same)
        prog = CheckedProgram(
            modules={m.key: decls.envs[m.key].cm for m in modules},
            entry_module=entry_key,
            identity="",
            std_version=STD_VERSION,
            type_decls=decls.type_decls,
            fn_decls=decls.fn_decls,
        )
        # the side tables stay from check to check: only the walks done again change them
        if keep_tables:
            prog.types, prog.refs, prog.effects, prog.type_args = self.tables[:4]
            prog.tail_calls, prog.captures, prog.patterns = self.tables[4:]
        st = program_state(decls, prog, problems)
        new_walks = self._walk_all(modules, decls, st, prog, problems, out, walks, keep_tables)
        if keep_tables:
            for k, w in old_walks.items():
                if new_walks.get(k) is not w:
                    _forget(prog, w.shell)
            for k, w in new_walks.items():
                if old_walks.get(k) is not w:
                    _merge(prog, w.shell)  # again: forgetting the old walk of the same node took its keys
        st.prog, st.types, st.refs, st.effects, st.type_args = (
            prog,
            prog.types,
            prog.refs,
            prog.effects,
            prog.type_args,
        )
        self.walks = new_walks
        self.tables = (prog.types, prog.refs, prog.effects, prog.type_args, prog.tail_calls, prog.captures)
        self.tables += (prog.patterns,)
        _annotation_args(decls, prog, modules)
        _data_requirements(decls, st, problems)
        _unused(decls, modules, problems)
        _entry(decls, entry_key, problems)
        habit_fixes.refine(modules, prog, problems)
        one_mistake.fold(problems)
        out.program = prog
        diags = _mapped(problems.items, out)
        out.result = CheckResult(
            prog if not diags else None, diags, mods.sources, partial=prog if diags else None
        )

    def _walk_all(self, modules, decls, st, prog, problems, out: EditorCheck, walks, keep_tables) -> dict:
        """Every function body, in the driver's order: each walked, or its walk replayed."""
        live_ranges = sorted((p.voff, p.voff + len(p.text)) for p in out.pieces)
        live_starts = [a for a, _ in live_ranges]
        exhaust = Exhaust(decls)
        new_walks: dict[int, _FnWalk] = {}
        display = out.display
        for m in modules:
            env = decls.envs[m.key]
            for fn in env.cm.fns.values():
                w = walks.get(fn.node.id)
                if (
                    w is not None
                    and w.diags
                    and not all(
                        _live(s, display, live_ranges, live_starts) for d in w.diags for s in _spans(d)
                    )
                ):
                    w = None  # it points into a piece parsed again
                if w is not None and (w.missing_before or decls.missing_uses):
                    if w.missing_before != decls.missing_uses:
                        w = None  # a missing `use` reported before it, or no longer
                fresh = w is None
                if fresh:
                    w = _walk(st, env, fn, exhaust, decls, problems, prog)
                    out.walked += 1
                else:
                    out.reused += 1
                new_walks[fn.node.id] = w
                if w.diags:
                    problems.extend(w.diags)
                if w.data_reqs:
                    st.data_reqs.extend(w.data_reqs)
                if w.insts:
                    st.insts.extend(w.insts)
                if w.used:
                    decls.used |= w.used
                if w.aliases:
                    env.used_aliases |= w.aliases
                if w.missing:
                    decls.missing_uses |= w.missing
                if w.shell.checkpoints:
                    prog.checkpoints.extend(w.shell.checkpoints)
                if fresh or not keep_tables:
                    _merge(prog, w.shell)
        return new_walks


def _merge(prog: CheckedProgram, s: CheckedProgram) -> None:
    prog.types.update(s.types)
    prog.refs.update(s.refs)
    prog.effects.update(s.effects)
    prog.type_args.update(s.type_args)
    prog.tail_calls |= s.tail_calls
    prog.captures.update(s.captures)
    prog.patterns.update(s.patterns)


def _forget(prog: CheckedProgram, s: CheckedProgram) -> None:
    for mine, theirs in (
        (prog.types, s.types),
        (prog.refs, s.refs),
        (prog.effects, s.effects),
        (prog.type_args, s.type_args),
        (prog.captures, s.captures),
        (prog.patterns, s.patterns),
    ):
        for k in theirs:
            mine.pop(k, None)
    prog.tail_calls -= s.tail_calls


def _walk(st, env, fn, exhaust, decls, problems, prog) -> _FnWalk:
    """Walk one function as the driver does, into tables of its own."""
    shell = CheckedProgram(
        modules=prog.modules,
        entry_module=prog.entry_module,
        identity="",
        std_version=STD_VERSION,
        type_decls=prog.type_decls,
        fn_decls=prog.fn_decls,
    )
    st.prog, st.types, st.refs, st.effects, st.type_args = (
        shell,
        shell.types,
        shell.refs,
        shell.effects,
        shell.type_args,
    )
    n_diags, n_reqs, n_insts = len(problems.items), len(st.data_reqs), len(st.insts)
    used, aliases = decls.used, env.used_aliases
    decls.used, env.used_aliases = set(), set()
    missing_before = frozenset(decls.missing_uses)
    try:
        check_fn(st, env, fn)
        finish_fn(st, exhaust)
        refs = {r.decl for r in shell.refs.values() if type(r) is FnRef or type(r) is MethodRef}
        w = _FnWalk(
            shell,
            problems.items[n_diags:],
            st.data_reqs[n_reqs:],
            st.insts[n_insts:],
            decls.used,
            env.used_aliases,
            frozenset(refs | decls.used | {i.callee for i in st.insts[n_insts:]}),
            missing_before,
            frozenset(decls.missing_uses - missing_before),
        )
    finally:
        decls.used, env.used_aliases = used, aliases
    # the caller replays the walk: take back what it wrote to the shared lists
    decls.missing_uses.difference_update(w.missing)
    del problems.items[n_diags:]
    del st.data_reqs[n_reqs:]
    del st.insts[n_insts:]
    return w


class _EditorLoader(Loader):
    """The driver's loader, with the entry module given as a tree (the virtual module) and local
    imports kept parsed while their file (or their text open in the editor) is unchanged."""

    _local_cache: dict[str, tuple[tuple, tuple]] = {}

    def __init__(self, *args, entry_module: ast.Module, **kw) -> None:
        super().__init__(*args, **kw)
        self._entry_module = entry_module

    def _read(self, file, display, is_std, source):
        if not is_std and file == self.entry_abs:
            # parsed in pieces, each without errors (a piece that has any is checked whole)
            return self._entry_module.source, self._entry_module, [], NOTHING_BROKEN
        if is_std or source is not None:
            return super()._read(file, display, is_std, source)
        opened = self.open_texts.get(os.path.abspath(file))
        if opened is not None:
            stamp: tuple = ("open", opened, display)
        else:
            try:
                st = os.stat(file)
            except OSError:
                return None
            stamp = (st.st_mtime_ns, st.st_size, display)
        hit = self._local_cache.get(file)
        if hit and hit[0] == stamp:
            return hit[1]
        got = super()._read(file, display, is_std, source)
        if got is not None:
            self._local_cache[file] = (stamp, got)
        return got


def _display_of(mods: Modules) -> str:
    for m in mods.modules:
        if m.key == mods.entry_key:
            return m.display
    return mods.entry_path


# -- coordinates --------------------------------------------------------------------------------


def _shift(nodes, dl: int, do: int) -> None:
    """Move every span of the trees `nodes` (parsed at line 1, offset 0) by `dl` lines, `do`
    characters. Only a fresh piece's own tree is moved, before anything has read it."""
    if not dl and not do:
        return
    for root in nodes:
        for n in ast.walk(root):
            s = n.span
            if s.line:
                n.span = Span(
                    s.file, s.line + dl, s.column, s.end_line + dl, s.end_column, s.start + do, s.end + do
                )
            s = getattr(n, "name_span", None)
            if s is not None and s.line:
                n.name_span = Span(
                    s.file, s.line + dl, s.column, s.end_line + dl, s.end_column, s.start + do, s.end + do
                )


def _signature(text: str, decls, voff: int) -> str:
    """The piece's text with each function body cut out."""
    cuts = [
        (d.body.span.start - voff, d.body.span.end - voff)
        for d in decls
        if isinstance(d, ast.FnDecl) and d.body is not None
    ]
    if not cuts:
        return text
    out, prev = [], 0
    for a, b in cuts:
        out.append(text[prev:a])
        out.append("\x00")
        prev = b
    out.append(text[prev:])
    return "".join(out)


def _map_span(s: Span, p: Piece | None) -> Span:
    if p is None:
        return s
    dl, do = p.rline - p.vline, p.roff - p.voff
    return Span(s.file, s.line + dl, s.column, s.end_line + dl, s.end_column, s.start + do, s.end + do)


def _spans(d: Diagnostic):
    yield d.span
    for r in d.related:
        yield r.span
    for f in d.fixes:
        for e in f.edits:
            yield e.span


def _live(s: Span, display: str, ranges, starts) -> bool:
    if s.file != display or s.line <= 0:
        return True
    i = bisect.bisect_right(starts, s.start) - 1
    return i >= 0 and s.end <= ranges[i][1]


def _mapped(diags, out: EditorCheck) -> list[Diagnostic]:
    """The diagnostics in real coordinates, sorted and deduplicated as a fresh check's are."""
    m = out.to_real
    mapped = Problems()
    for d in diags:
        sp = m(d.span)
        fixes = tuple(
            Fix(f.message, tuple(Edit(m(e.span), e.text) for e in f.edits), f.safe) for f in d.fixes
        )
        if d.code == "E112" and fixes and out.text and sp.file == out.display and sp.end > sp.start:
            # how much the removal takes depends on the lines around it: the real ones
            end = line_removed_end(out.text, sp.start, sp.end)
            fixes = (Fix(fixes[0].message, (Edit(replace(sp, end=end), ""),), True),)
        related = tuple(Related(r.message, m(r.span)) for r in d.related)
        mapped.items.append(Diagnostic(d.code, d.message, sp, related, fixes, _mapped_data(d.data, m)))
    return mapped.sorted()


def _mapped_data(data, m):
    """The typed object with every place it holds (a span, or a tuple of spans) in real
    coordinates, as its diagnostic's: an editor action reading `.data` sees what the author sees."""
    if data is None:
        return None
    moved = {}
    for f in fields(data):
        v = getattr(data, f.name)
        if isinstance(v, Span):
            moved[f.name] = m(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, Span) for x in v):
            moved[f.name] = tuple(m(x) for x in v)
    return replace(data, **moved)
