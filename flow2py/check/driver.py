"""The checker's pipeline on one screen:

    read_modules: find, read and parse the modules (modgraph.py) -> Modules;
    check_modules: declarations (declare.py) -> every function body (infer.py and its
    infer_*.py parts, patterns.py, over one BodyState), each settled when done (post.py,
    exhaust.py) ->
    program-wide rules (data requirements, unused declarations and imports, the entry
    function) -> solved side tables and the program identity.

A syntax error does not stop the pipeline: the parser keeps every declaration that parsed (a
function whose body did not parse keeps its signature), and checking goes on over all of them,
in every module; what only the missing part explains is then dropped
(`_explained_by_syntax_errors`, from each module's `LoadedModule.broken`: flow2py/syntax/broken.py).
Independent parts keep reporting, so one run lists every mistake. A program with any error,
a syntax error included, is never a CheckedProgram.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from flow2py.check import codes  # noqa: F401  (registers E1xx-E5xx)
from flow2py.check import habit_fixes, one_mistake
from flow2py.check.body_state import BodyState
from flow2py.check.checkpoints import refine_checkpoint_sites
from flow2py.check.annotations import has_ann
from flow2py.check.declare import Declarations
from flow2py.check.exhaust import Exhaust
from flow2py.check.identity import program_identity
from flow2py.check.infer import check_fn, program_state
from flow2py.check.infer_ctx import DataReq, Instantiation
from flow2py.check.modgraph import STD_VERSION, LoadedModule, Loader
from flow2py.check.post import finish_fn
from flow2py.check.typed import (
    TOOL,
    CheckedProgram,
    FnRef,
    ModuleRef,
    TCon,
    TFun,
    TParam,
    TTuple,
)
from flow2py.check.typeterms import zonk
from flow2py.diagnostics import Diagnostic, Edit, Fix, Problems, Related
from flow2py.syntax import ast


@dataclass
class CheckResult:
    program: CheckedProgram | None
    diagnostics: list[Diagnostic]
    sources: dict[str, str] = field(default_factory=dict)
    # the side tables as far as checking got when there are diagnostics (`program` is then None):
    # what an editor's hover and go-to-definition read; unsolved variables are left in them
    partial: CheckedProgram | None = None


@dataclass(frozen=True)
class Modules:
    """A program's modules found, read and parsed (modgraph.py), in dependency order, with what
    reading them reported: the checker's input, which checking reads and never changes."""

    entry_path: str
    modules: list[LoadedModule]
    entry_key: str | None
    diagnostics: tuple[Diagnostic, ...]  # reading's: unresolved `use`s, syntax errors
    sources: dict[str, str]  # module key -> text, for rendering diagnostics
    commits: dict[str, str]  # repository -> the commit it was read at
    readable: bool  # every module parsed without a syntax error (checking goes on either way)


def check_program(
    entry_path: str,
    *,
    cache_dir: str | None = None,
    source: str | None = None,
    sources: dict[str, str] | None = None,
    commits: dict[str, str] | None = None,
) -> CheckResult:
    """Check the program whose entry module is `entry_path` (with `source` standing in for the
    file's text when given). `sources` (module key -> text) and `commits` (repository -> commit)
    give a stored program: every module is read from them, nothing from disk. Never raises on bad
    input: every problem is a diagnostic."""
    with collection_paused():
        return check_modules(
            read_modules(entry_path, cache_dir=cache_dir, source=source, sources=sources, commits=commits)
        )


def check_source(text: str, path: str = "main.flow", *, cache_dir: str | None = None) -> CheckResult:
    """Check one module given as text (its `use "./x"` imports are read relative to `path`)."""
    return check_program(path, cache_dir=cache_dir, source=text)


def read_modules(
    entry_path: str,
    *,
    cache_dir: str | None = None,
    source: str | None = None,
    sources: dict[str, str] | None = None,
    commits: dict[str, str] | None = None,
    bundle: dict[str, str] | None = None,
    pins: dict | None = None,
    open_texts: dict[str, str] | None = None,
) -> Modules:
    """Find, read and parse the program's modules (the arguments as `check_program`'s; `bundle`,
    module key -> text, and `pins`, flow.lock's `repos`: a submitted bundle, flow2py/bundles.py;
    `open_texts`, absolute path -> text of local modules open in an editor, read instead of
    their files)."""
    problems = Problems()
    with _checking(entry_path, problems):
        loader = Loader(
            entry_path,
            problems,
            cache_dir,
            entry_source=source,
            stored=sources,
            stored_commits=commits,
            bundle=bundle,
            pins=pins,
            open_texts=open_texts,
        )
        modules = loader.load()
        return Modules(
            entry_path,
            modules,
            loader._local_key(loader.entry_abs),
            tuple(problems.items),
            loader.sources,
            loader.commits,
            bool(modules) and not loader.syntax_errors,
        )
    return Modules(entry_path, [], None, tuple(problems.items), {}, {}, False)  # nested too deeply (E212)


def check_modules(mods: Modules) -> CheckResult:
    """Check the program `mods` holds: every independent diagnostic, or the checked program. The
    declarations of a module with syntax errors that parsed are checked too (see the docstring
    at the top)."""
    problems = Problems()
    problems.extend(mods.diagnostics)
    if not mods.modules:
        return CheckResult(None, problems.sorted(), mods.sources)
    with _checking(mods.entry_path, problems):
        return _check(mods, problems)
    return CheckResult(None, problems.sorted(), {})  # nested too deeply (E212)


@contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic collector off for the block (the checker allocates many small objects and frees
    few: collecting only costs), back on afterwards only if it was on before. Reading and checking
    one program share one pause: turned on between them, the collector would walk the whole parsed
    program once (an eighth of checking a large file)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _checking(entry_path: str, problems: Problems):
    """Collection off while a stage runs; nesting too deep for Python is E212, after which the
    `with` falls through to its caller's fallback."""
    with collection_paused():
        try:
            yield
        except RecursionError:
            problems.report(codes.CannotInfer(ast.Span(entry_path, 1, 1, 1, 1), "nesting"))


# flow2py/lsp/incremental.py runs these steps too (the language server's re-check, function by
# function); tests/test_lsp_incremental.py holds its diagnostics equal to this one's
def _check(mods: Modules, problems: Problems) -> CheckResult:
    modules, entry_key = mods.modules, mods.entry_key
    decls = Declarations(modules, problems)
    decls.run()
    prog = CheckedProgram(
        modules={m.key: decls.envs[m.key].cm for m in modules},
        entry_module=entry_key,
        identity="",
        std_version=STD_VERSION,
        type_decls=decls.type_decls,
        fn_decls=decls.fn_decls,
    )
    st = program_state(decls, prog, problems)
    exhaust = Exhaust(decls)
    for m in modules:
        env = decls.envs[m.key]
        for fn in env.cm.fns.values():
            check_fn(st, env, fn)
            finish_fn(st, exhaust)
    _annotation_args(decls, prog, modules)
    _data_requirements(decls, st, problems)
    _unused(decls, modules, problems)
    _entry(decls, entry_key, problems)
    _explained_by_syntax_errors(mods, problems)
    habit_fixes.refine(modules, prog, problems)
    one_mistake.fold(problems)
    if problems:
        return CheckResult(None, problems.sorted(), mods.sources, partial=prog)
    unit = decls.unit()
    types = prog.types
    for k, t in types.items():
        if type(t) is TCon and not t.args:
            continue  # most nodes: nothing to solve in `Int` or `Text`
        z = zonk(t, unit)
        if z is not t:
            types[k] = z
    for k, ts in prog.type_args.items():
        prog.type_args[k] = tuple(zonk(t, unit) for t in ts)
    refine_checkpoint_sites(prog)  # needs every type solved
    prog.identity = program_identity(STD_VERSION, {m.key: m.ast for m in modules}, mods.commits)
    prog.commits = dict(mods.commits)
    return CheckResult(prog, [], mods.sources)


def _explained_by_syntax_errors(mods: Modules, problems: Problems) -> None:
    """Drop the checker's diagnostics that only a syntax error explains: anything inside a part
    the tree does not hold (a declaration that failed to parse, a broken statement or body, a
    hole for a habit); a name a broken declaration would have declared reported unknown (E101,
    E102, E110), or a name written in a broken statement earlier in the same function (E101:
    it may be what binds it); an import, private declaration or binding reported unused (E112,
    E405, E404) whose name a broken part writes, as that part may be what uses it; a match
    recovery left a broken arm out of reported non-exhaustive (E401)."""
    if not any(m.broken for m in mods.modules):
        return
    by_file = {m.display: m for m in mods.modules}
    by_key = {m.key: m for m in mods.modules}
    reading = set(mods.diagnostics)
    kept = []
    for d in problems.items:
        m = by_file.get(d.span.file)
        # a syntax diagnostic is never a cascade (the checker only refines one: a record read
        # as a dict, infer_names._record_index)
        if d in reading or d.code.startswith("E0") or m is None or not _explained(d, m, by_key):
            kept.append(d)
    problems.items[:] = kept


_PATH = re.compile(r"[\w.]*")


def _explained(d: Diagnostic, m: LoadedModule, by_key: dict[str, LoadedModule]) -> bool:
    sp = d.span
    if m.broken.covers(sp):
        return True
    text = (m.ast.source or "")[sp.start : sp.end]
    if d.code == "E401":
        return sp.start in m.broken.matches
    if d.code == "E202":
        # a broken argument may have been several
        return any(
            r.span.file == sp.file and sp.start <= r.span.start and r.span.end <= sp.end
            for r in m.broken.regions
        )
    if d.code in ("E101", "E102", "E110"):
        # the name as written at the place: `Circle` of `Circle(r)`, `shapes.Circle`
        alias, _, name = _PATH.match(text).group().rpartition(".")
        target = by_key.get(m.aliases.get(alias) or "") if alias else m
        if target is not None and name in target.broken.names:
            return True
        # a broken statement earlier in the same function may be what binds it
        return d.code == "E101" and not alias and m.broken.mentioned_before(name, _decl_around(m, sp), sp)
    if d.code == "E112":
        return any(u.span == sp and m.broken.mentioned(a) for a, u in m.alias_uses.items())
    if d.code == "E405":
        return m.broken.mentioned(text)
    if d.code == "E404":
        within = _decl_around(m, sp)
        return within is not None and m.broken.mentioned(text, within)
    return False


def _decl_around(m: LoadedModule, sp: ast.Span) -> ast.Span | None:
    """The span of the declaration of `m` that holds `sp`, or None."""
    return next((x.span for x in m.ast.decls if x.span.start <= sp.start and sp.end <= x.span.end), None)


def _data_requirements(decls: Declarations, st: BodyState, problems: Problems) -> None:
    """ "Is data" is the only constraint a type variable has: a type parameter of a generic function
    needs data when its body compares it, keys a Dict with it, or hands it to another function
    that needs data for it. Solve that to a fixpoint, then check every concrete use."""
    unit = decls.unit()
    reqs = decls.data_params
    direct = [DataReq(zonk(r.type, unit), r.span, r.why, r.owner) for r in st.data_reqs]
    insts = [
        Instantiation(i.callee, tuple(zonk(t, unit) for t in i.type_args), i.span, i.owner, i.name)
        for i in st.insts
    ]
    changed = True
    while changed:
        changed = False
        items = list(direct)
        for i in insts:
            need = reqs.get(i.callee)
            if not need:
                continue
            params = decls.fn_decls[i.callee].type_params
            for p, t in zip(params, i.type_args):
                if p in need:
                    items.append(DataReq(t, i.span, None, i.owner))
        for r in items:
            for tp in _params_in(r.type):
                if tp.owner in decls.fn_decls:
                    s = reqs.setdefault(tp.owner, set())
                    if tp.name not in s:
                        s.add(tp.name)
                        changed = True
    for r in direct:
        if not decls.is_data(r.type):
            problems.report(codes.NotData(r.span, decls.show(r.type), r.why))
    for i in insts:
        need = reqs.get(i.callee)
        if not need:
            continue
        callee = decls.fn_decls[i.callee]
        for p, t in zip(callee.type_params, i.type_args):
            if p in need and not decls.is_data(t):
                problems.report(
                    codes.NotData(i.span, decls.show(t), callee=i.name, param=p),
                    related=[Related(f"`{i.name}` is declared here", callee.node.span)],
                )


def _annotation_args(decls: Declarations, prog: CheckedProgram, modules) -> None:
    """Annotation arguments are expressions too: `@lang("int.add", "+")` holds Text literals and
    `@fake(web.search)` names a Tool; give them types (and the fake its reference)."""
    unit = decls.unit()
    for m in modules:
        env = decls.envs[m.key]
        for d in m.ast.decls:
            for a in d.annotations:
                for x in a.args:
                    for n in ast.walk(x):
                        if isinstance(n, ast.Literal):
                            info = decls.literal_types.get(n.kind)
                            prog.types[n.id] = TCon(info.decl) if info else unit
                        else:
                            prog.types.setdefault(n.id, unit)
                if a.name == "fake" and isinstance(d, ast.FnDecl):
                    fn = env.cm.fns.get(d.name)
                    if fn is not None and fn.node is d and fn.fake_of and a.args:
                        tool = decls.fn_decls[fn.fake_of]
                        x = a.args[0]
                        prog.refs[x.id] = FnRef(tool.decl)
                        prog.types[x.id] = TFun(tuple(t for _, t in tool.params), tool.result, TOOL)
                        if isinstance(x, ast.FieldAccess) and isinstance(x.target, ast.Name):
                            prog.refs[x.target.id] = ModuleRef(tool.module)


def _params_in(t):
    stack = [t]
    while stack:
        x = stack.pop()
        k = type(x)
        if k is TParam:
            yield x
        elif k is TCon:
            stack.extend(x.args)
        elif k is TTuple:
            stack.extend(x.items)


def _unused(decls: Declarations, modules, problems: Problems) -> None:
    for m in modules:
        if m.is_std:
            continue
        env = decls.envs[m.key]
        for alias, use in m.alias_uses.items():
            if alias not in env.used_aliases and m.aliases.get(alias):
                fixes = []
                src = m.ast.source or ""
                sp = use.span
                if sp.end > sp.start:
                    end = line_removed_end(src, sp.start, sp.end)
                    fixes.append(
                        Fix(
                            f'remove `use "{use.path}"`',
                            (
                                Edit(
                                    ast.Span(
                                        sp.file, sp.line, sp.column, sp.end_line, sp.end_column, sp.start, end
                                    ),
                                    "",
                                ),
                            ),
                            True,
                        )
                    )
                problems.report(codes.UnusedImport(use.span, alias), fixes=fixes)
        for fn in env.cm.fns.values():
            if (
                fn.pub
                or fn.is_test
                or fn.fake_of
                or fn.decl in decls.used
                or has_ann(fn.node.annotations, "fake")
            ):
                continue
            if fn.name == "main" and m is modules[-1]:
                continue
            node = fn.node
            problems.report(
                codes.UnusedDeclaration(
                    node.name_span if node.name_span.line else node.span, "function", fn.name
                )
            )
        for info in env.cm.types.values():
            if info.pub or info.decl in decls.used:
                continue
            node = info.node
            problems.report(
                codes.UnusedDeclaration(
                    node.name_span if node.name_span.line else node.span, "type", info.name
                )
            )


def line_removed_end(src: str, start: int, end: int) -> int:
    """Where removing the `use` at `start`..`end` ends: past its line's newline, and past the
    blank line after it too when a blank line (or the file's start) is before it, so a blank
    line between two groups stays one (the language server reads it in the real text too)."""
    if src[end : end + 1] != "\n":
        return end
    end += 1
    line_start = src.rfind("\n", 0, start) + 1
    blank_before = line_start == 0 or src[line_start - 2 : line_start] == "\n\n"
    if blank_before and not src[line_start:start].strip() and src[end : end + 1] == "\n":
        end += 1
    return end


def _entry(decls: Declarations, entry_key: str, problems: Problems) -> None:
    env = decls.envs.get(entry_key)
    if env is None:
        return
    fn = env.cm.fns.get("main")
    if fn is None or fn.node.body is None:
        return
    for (name, t), p in zip(fn.params, fn.node.params):
        # host tokens may be handed in (the host's primary and backup Model), only issued ones (tools.md)
        if not decls.is_data(t, tokens=True, params_ok=False):
            problems.report(codes.EntryNotData(p.span, name, decls.show(t)))
    if not decls.is_data(fn.result, params_ok=False):
        problems.report(codes.EntryNotData(fn.node.result.span, None, decls.show(fn.result)))
