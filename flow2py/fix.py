"""Applying the fixes diagnostics carry: `flow2py fix`, and the functions an editor's code
actions call.

A fix is a list of exact text edits (flow2py/diagnostics.py), safe when applying it needs no
choice. One pass picks at most one fix per diagnostic (`chosen_fix`: the safe one; with
`unsafe`, also the only fix of a diagnostic that has one), drops any fix whose edits overlap a
fix already picked or fall outside the program's own files (std and repository modules are
never edited), and applies the rest to the texts the checker read, so every offset means what
it meant. `fix_program` repeats check -> pass until a pass changes nothing (at most
`MAX_PASSES`, and never back to texts seen before): a fix can make a further mistake visible,
as marking a function `!tool` makes its unmarked callers reach a Tool, and the next pass fixes
that one in turn. Files are written only at the end, each atomically, and only if nobody
changed them meanwhile.

The arms E401's fix inserts have the body `todo` (check/post.py), which is not a Flow name: the
program does not check until each is written, and the unknown name is never "fixed" here.
"""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from dataclasses import dataclass, field

from flow2py.check.codes import UnknownName
from flow2py.check.post import PLACEHOLDER
from flow2py.diagnostics import Diagnostic, Edit, Fix

#: how many check -> apply passes `fix_program` makes at most
MAX_PASSES = 10


@dataclass(frozen=True)
class Applied:
    """One fix applied: the diagnostic it removed, as it was reported."""

    diagnostic: Diagnostic
    fix: Fix


@dataclass
class FixReport:
    """What `fix_program` did: `texts` holds every file it changed (path -> new text), `before`
    their texts as read, `applied` the fixes in the order applied, `result` the last check (the
    diagnostics left), `sources` the texts that check rendered from."""

    texts: dict[str, str] = field(default_factory=dict)
    before: dict[str, str] = field(default_factory=dict)
    applied: list[Applied] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    passes: int = 0


# -- choosing and applying --------------------------------------------------------------------


def chosen_fix(d: Diagnostic, unsafe: bool = False) -> Fix | None:
    """The fix to apply for `d`, if any: its one safe fix; with `unsafe`, also the only fix of a
    diagnostic that has exactly one. Several fixes and not exactly one of them safe: a choice,
    so none."""
    safe = [f for f in d.fixes if f.safe]
    if len(safe) == 1:
        return safe[0]
    if unsafe and len(d.fixes) == 1:
        return d.fixes[0]
    return None


def _overlaps(a: Edit, b: Edit) -> bool:
    """Whether two edits of one file touch the same text, or insert at the same place (their
    order would then be a choice)."""
    if a.span.file != b.span.file:
        return False
    s1, e1, s2, e2 = a.span.start, a.span.end, b.span.start, b.span.end
    if s1 == s2:
        return True
    if s1 == e1:
        return s2 < s1 < e2
    if s2 == e2:
        return s1 < s2 < e1
    return s1 < e2 and s2 < e1


def _is_placeholder(d: Diagnostic) -> bool:
    """The `todo` an arm inserted by E401's fix holds (reported unknown until it is written)."""
    return isinstance(d.data, UnknownName) and d.data.name == PLACEHOLDER


def plan_fixes(
    diags: list[Diagnostic], sources: dict[str, str], unsafe: bool = False, editable=None
) -> list[Applied]:
    """The fixes one pass applies, in diagnostic order: one per diagnostic (`chosen_fix`), none
    that overlaps one picked before it, none that edits a file outside `editable` (default:
    every file of `sources`) or past the end of its text."""
    files = set(sources) if editable is None else set(editable)
    picked: list[Applied] = []
    taken: list[Edit] = []
    for d in diags:
        fix = chosen_fix(d, unsafe)
        if fix is None or not fix.edits or _is_placeholder(d):
            continue
        edits = fix.edits
        if any(
            e.span.file not in files or not (0 <= e.span.start <= e.span.end <= len(sources[e.span.file]))
            for e in edits
        ):
            continue
        if any(_overlaps(e, t) for e in edits for t in taken) or any(
            _overlaps(e, f) for i, e in enumerate(edits) for f in edits[i + 1 :]
        ):
            continue
        picked.append(Applied(d, fix))
        taken.extend(edits)
    return picked


def apply_fixes(
    sources: dict[str, str], diags: list[Diagnostic], unsafe: bool = False, editable=None
) -> dict[str, str]:
    """The new text of every file the fixes of `diags` change (one pass, as `plan_fixes` picks
    them), from `sources` (path -> the text the diagnostics were computed on)."""
    return apply_planned(sources, plan_fixes(diags, sources, unsafe, editable))


def apply_planned(sources: dict[str, str], planned: list[Applied]) -> dict[str, str]:
    by_file: dict[str, list[Edit]] = {}
    for a in planned:
        for e in a.fix.edits:
            by_file.setdefault(e.span.file, []).append(e)
    out = {}
    for file, edits in by_file.items():
        text = sources[file]
        for e in sorted(edits, key=lambda e: (e.span.start, e.span.end), reverse=True):
            text = text[: e.span.start] + e.text + text[e.span.end :]
        if text != sources[file]:
            out[file] = text
    return out


# -- the program ------------------------------------------------------------------------------


class _Texts(dict):
    """A bundle (check/modgraph.py) whose modules are the texts fixed so far, and otherwise the
    files on disk: module key -> text, for checking the program as the fixes left it."""

    def __init__(self, entry_path: str, texts: dict[str, str]) -> None:
        super().__init__()
        self.entry_dir = os.path.dirname(entry_path)
        self.texts = texts

    def __iter__(self):
        """The keys of the program's modules on disk and of the texts: where E103 looks for the
        path a `use` meant (the files beside the importing module)."""
        keys, top = set(), self.entry_dir or "."
        for dirpath, dirs, files in os.walk(top):
            deep = os.path.relpath(dirpath, top).count(os.sep) >= 3  # E103 looks 2 below a module
            dirs[:] = [] if deep else [d for d in dirs if not d.startswith(".") and d != "cache"]
            for n in files:
                if n.endswith(".flow"):
                    keys.add(os.path.relpath(os.path.join(dirpath, n[:-5]), top))
        for display in self.texts:
            if display.endswith(".flow"):
                keys.add(os.path.relpath(display[:-5], top))
        return iter(sorted(k.replace(os.sep, "/") for k in keys if not k.startswith("..")))

    def get(self, key, default=None):
        display = os.path.normpath(os.path.join(self.entry_dir, key + ".flow"))
        if display in self.texts:
            return self.texts[display]
        try:
            with open(display, encoding="utf-8", errors="surrogatepass") as f:
                return f.read()
        except (OSError, UnicodeDecodeError):
            return default


def _pins(entry_path: str) -> dict:
    from flow2py.check.modgraph import LOCK_FILE

    try:
        with open(
            os.path.join(os.path.dirname(os.path.abspath(entry_path)), LOCK_FILE), encoding="utf-8"
        ) as f:
            repos = json.load(f).get("repos", {})
        return repos if isinstance(repos, dict) else {}
    except (OSError, ValueError, AttributeError):
        return {}


def check_with(entry_path: str, texts: dict[str, str], cache_dir: str | None = None):
    """Check the program at `entry_path` with `texts` (path -> text) standing in for those
    files: (CheckResult, the paths of its own modules, which a fix may edit)."""
    from flow2py.check import check_modules, read_modules

    if texts:
        mods = read_modules(
            entry_path, cache_dir=cache_dir, bundle=_Texts(entry_path, texts), pins=_pins(entry_path)
        )
    else:
        mods = read_modules(entry_path, cache_dir=cache_dir)
    own = {m.display for m in mods.modules if not m.is_std and m.repo is None}
    return check_modules(mods), own


def fix_program(
    paths, unsafe: bool = False, max_passes: int = MAX_PASSES, cache_dir: str | None = None
) -> FixReport:
    """Check the programs at `paths`, apply their fixes, check again, and repeat until a pass
    changes nothing. Writes nothing (`write_files` does)."""
    report = FixReport()
    texts: dict[str, str] = {}
    seen: set = set()
    while True:
        diags: list[Diagnostic] = []
        sources: dict[str, str] = {}
        own: set = set()
        keys = set()
        for path in paths:
            result, mine = check_with(os.path.normpath(path), texts, cache_dir)
            own |= mine
            sources.update(result.sources)
            for d in result.diagnostics:
                k = (d.code, d.message, d.span)
                if k not in keys:
                    keys.add(k)
                    diags.append(d)
        report.diagnostics, report.sources = diags, sources
        if report.passes >= max_passes:
            break
        planned = plan_fixes(diags, sources, unsafe, editable=own)
        changed = apply_planned(sources, planned)
        state = tuple(sorted({**texts, **changed}.items()))
        if not changed or state in seen:
            break
        seen.add(state)
        report.passes += 1
        for file in changed:
            report.before.setdefault(file, sources[file])
        texts.update(changed)
        report.applied += planned
    report.texts = {f: t for f, t in texts.items() if t != report.before.get(f)}
    return report


def unified_diff(report: FixReport) -> str:
    out = []
    for file in sorted(report.texts):
        out += difflib.unified_diff(
            report.before[file].splitlines(keepends=True),
            report.texts[file].splitlines(keepends=True),
            fromfile=file if os.path.isabs(file) else f"a/{file}",
            tofile=file if os.path.isabs(file) else f"b/{file}",
        )
    return "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in out)


class Changed(Exception):
    """A file changed on disk while it was being fixed: it is left as it is."""


def write_files(report: FixReport) -> None:
    """Write every changed file, each atomically (a temporary file beside it, then a rename),
    keeping its line endings and mode; a file whose text on disk is no longer the text that was
    fixed is not written (`Changed`, after the others were)."""
    stale = []
    for file in sorted(report.texts):
        with open(file, encoding="utf-8", errors="surrogatepass", newline="") as f:
            raw = f.read()
        crlf = "\r\n" in raw
        if raw.replace("\r\n", "\n") != report.before[file]:
            stale.append(file)
            continue
        text = report.texts[file]
        folder = os.path.dirname(os.path.abspath(file))
        fd, tmp = tempfile.mkstemp(prefix=".flow2py-fix-", dir=folder)
        try:
            with os.fdopen(
                fd, "w", encoding="utf-8", errors="surrogatepass", newline="\r\n" if crlf else "\n"
            ) as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, os.stat(file).st_mode & 0o7777)
            os.replace(tmp, file)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    if stale:
        raise Changed(", ".join(stale) + " changed while being fixed: not written")


def fixes_for(path: str, unsafe: bool = False) -> dict[str, str]:
    """One pass over the program at `path` as it is on disk: the new text of each file its
    fixes change."""
    result, own = check_with(path, {})
    return apply_fixes(result.sources, result.diagnostics, unsafe, editable=own)
