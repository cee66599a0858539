#!/usr/bin/env python3
"""Score flow2py's diagnostics against a corpus of authoring mistakes (issue 13's table), a
corpus whose mistakes are listed beside each case (bench/bench_diagnostics.py reads the older
form, a `// @m` comment on each mistake's line). Not a test; the corpus is kept outside the
repository, so that it measures rather than trains. Usage:

    .venv/bin/python bench/bench_mistakes.py CORPUS [--flow2py PATH] [--json] [--all-files]
    .venv/bin/python bench/bench_mistakes.py --validate CORPUS [--flow2py PATH]

A corpus is a folder of cases `caseNN/`: the program as its author wrote it, with its mistakes
(one or more `.flow` files laid out as a project would be), `caseNN/mistakes.json` (a list of
`{"file", "line", "what", "other": {"file", "line"} | null, "safe": bool}`: where the mistake
is, what it is, the other place that matters, whether one fix needs no choice), and
`caseNN-clean/`, the same files with every mistake corrected, which must check clean
(`--validate`). The seven measures, each `k/n (pct%)`:

1. right line: mistakes with a diagnostic whose primary location is the mistake's (file, line);
2. not cascades: diagnostics at a mistake's line, over all diagnostics;
3. whole: cases with several mistakes, each reported at its line in one `check`;
4. other: mistakes with an `other`, whose diagnostic has a note at it;
5. safe offered: `safe` mistakes whose diagnostic carries a fix marked safe;
6. safe correct: each safe fix at a mistake's line applied alone to a copy removes its
   diagnostic (one fewer of its code at that line) and adds none elsewhere nor of another code
   there;
7. clean: cases whose every mistake is `safe`, clean after `flow2py fix` (safe fixes only).

flow2py is only run as a program (`check --format json`, `fix`); this file uses the standard
library alone. Diagnostics are matched to mistakes by their primary location (file, line).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

MEASURES = [
    "right line",
    "not cascades",
    "whole",
    "other",
    "safe offered",
    "safe correct",
    "clean",
]
DEFAULT_FLOW2PY = os.path.join(os.path.dirname(sys.executable), "flow2py")
CASE_NAME = re.compile(r"^case\d+$")
LOCAL_USE = re.compile(r'^use\s+"(\.\.?/[^"]+)"', re.MULTILINE)
TIMEOUT = 300


# ---- the corpus --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mistake:
    file: str
    line: int
    what: str
    other: tuple[str, int] | None
    safe: bool

    @property
    def place(self) -> tuple[str, int]:
        return (self.file, self.line)


@dataclass
class Case:
    name: str
    folder: str
    mistakes: list[Mistake]
    entries: list[str]  # the paths given to flow2py, relative to `folder`


def case_names(corpus: str) -> list[str]:
    return sorted(
        n for n in os.listdir(corpus) if CASE_NAME.match(n) and os.path.isdir(os.path.join(corpus, n))
    )


def flow_files(folder: str) -> list[str]:
    """Every .flow file under `folder`, relative to it (hidden folders left out)."""
    out = []
    for dirpath, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out += [os.path.relpath(os.path.join(dirpath, f), folder) for f in files if f.endswith(".flow")]
    return sorted(p.replace(os.sep, "/") for p in out)


def local_uses(folder: str, path: str) -> set[str]:
    """The case files `path` imports by a relative `use` (column 1, as the grammar wants it)."""
    with open(os.path.join(folder, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    here = os.path.dirname(path)
    return {
        os.path.normpath(os.path.join(here, u + ".flow")).replace(os.sep, "/")
        for u in LOCAL_USE.findall(text)
    }


def entry_files(folder: str, files: list[str]) -> list[str]:
    """The programs to check: the files no other case file imports, then (for a cycle no entry
    reaches) the first file left, `main.flow` first, until every file is reached."""
    uses = {f: local_uses(folder, f) & set(files) for f in files}
    imported = set().union(*uses.values()) if uses else set()
    order = sorted(files, key=lambda f: (f != "main.flow", f))
    entries = [f for f in order if f not in imported]
    reached = reach(entries, uses)
    for f in order:
        if f not in reached:
            entries.append(f)
            reached |= reach([f], uses)
    return entries


def reach(starts: list[str], uses: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), list(starts)
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo += uses.get(f, ())
    return seen


def parse_mistake(obj, i: int) -> Mistake:
    def need(cond, what):
        if not cond:
            raise ValueError(f"mistake {i + 1}: {what}")

    need(isinstance(obj, dict), "not an object")
    need(isinstance(obj.get("file"), str), "`file` must be a text")
    need(isinstance(obj.get("line"), int) and obj["line"] >= 1, "`line` must be a whole number >= 1")
    need(isinstance(obj.get("what"), str), "`what` must be a text")
    need(isinstance(obj.get("safe"), bool), "`safe` must be true or false")
    other = obj.get("other")
    need(
        other is None
        or (
            isinstance(other, dict)
            and isinstance(other.get("file"), str)
            and isinstance(other.get("line"), int)
        ),
        "`other` must be null or {file, line}",
    )
    place = None if other is None else (other["file"], other["line"])
    return Mistake(obj["file"], obj["line"], obj["what"], place, obj["safe"])


def load_mistakes(folder: str) -> list[Mistake]:
    """The case's mistakes.json; ValueError saying what is wrong with it."""
    try:
        with open(os.path.join(folder, "mistakes.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"mistakes.json: {e}") from None
    if not isinstance(data, list) or not data:
        raise ValueError("mistakes.json: not a non-empty list")
    return [parse_mistake(obj, i) for i, obj in enumerate(data)]


def check_places(folder: str, mistakes: list[Mistake]) -> list[str]:
    """Mistakes (and others) naming a file the case lacks or a line past its end."""
    problems = []
    for m in mistakes:
        for place, label in [(m.place, "line"), (m.other, "other")]:
            if place and not line_exists(folder, *place):
                problems.append(f"{label} {place[0]}:{place[1]} of {m.what!r}: no such line in the case")
    return problems


def line_exists(folder: str, file: str, line: int) -> bool:
    try:
        return line <= len(read_text(os.path.join(folder, file))[0].split("\n"))
    except OSError:
        return False


def load_case(corpus: str, name: str, all_files: bool) -> Case:
    folder = os.path.join(corpus, name)
    files = flow_files(folder)
    entries = files if all_files else entry_files(folder, files)
    return Case(name, folder, load_mistakes(folder), entries)


# ---- running flow2py ---------------------------------------------------------------------------


class FlowError(Exception):
    """flow2py did not answer with diagnostics (a refusal, a crash, output that is not JSON)."""


def run(flow2py: str, args: list[str], cwd: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([flow2py, *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FlowError(f"flow2py {args[0]}: {e}") from None


def check(flow2py: str, folder: str, entries: list[str]) -> tuple[int, list[dict]]:
    """One `check --format json` of the entries: (exit code, diagnostics without repeats)."""
    p = run(flow2py, ["check", "--format", "json", *entries], folder)
    try:
        diags = json.loads(p.stdout)
    except ValueError:
        raise FlowError(f"check exited {p.returncode}: {(p.stderr or p.stdout).strip()[:300]}") from None
    if p.returncode not in (0, 1) or not isinstance(diags, list):
        raise FlowError(f"check exited {p.returncode}: {p.stderr.strip()[:300]}")
    return p.returncode, dedupe(diags)


def dedupe(diags: list[dict]) -> list[dict]:
    """`check` of several entries lists a module's diagnostic once per entry reaching it."""
    seen, out = set(), []
    for d in diags:
        key = json.dumps(d, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def fix(flow2py: str, folder: str, entries: list[str]) -> None:
    p = run(flow2py, ["fix", *entries], folder)
    if p.returncode not in (0, 1):
        raise FlowError(f"fix exited {p.returncode}: {p.stderr.strip()[:300]}")


# ---- reading diagnostics -----------------------------------------------------------------------


def place(d: dict) -> tuple[str, int]:
    return (d.get("file"), d.get("line"))


def is_error(d: dict) -> bool:
    """Every Flow diagnostic is an error (the JSON has no severity); honour one if it appears."""
    return d.get("severity", "error") == "error"


def at_place(diags: list[dict], where: tuple[str, int]) -> list[dict]:
    return [d for d in diags if place(d) == where]


def has_note_at(d: dict, where: tuple[str, int]) -> bool:
    return any(place(r) == where for r in d.get("related", []))


def safe_fixes(d: dict) -> list[dict]:
    return [f for f in d.get("fixes", []) if f.get("safe")]


def describe(d: dict) -> str:
    return f"{d.get('file')}:{d.get('line')}:{d.get('column')} [{d.get('code')}] {d.get('message')}"


# ---- applying one fix to a copy ----------------------------------------------------------------


def read_text(path: str) -> tuple[str, bool]:
    """The text as flow2py reads it (line ends made \\n), and whether the file used \\r\\n."""
    with open(path, encoding="utf-8", errors="surrogatepass", newline="") as f:
        raw = f.read()
    return raw.replace("\r\n", "\n"), "\r\n" in raw


def write_text(path: str, text: str, crlf: bool) -> None:
    with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="\r\n" if crlf else "\n") as f:
        f.write(text)


def offset_of(text: str, line: int, column: int) -> int:
    """Code-point offset of a 1-based line and column (flow2py counts columns in code points)."""
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + column - 1


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def edits_by_file(fix_: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in fix_.get("edits", []):
        out.setdefault(e["file"], []).append(e)
    return {f: sorted(es, key=lambda e: (e["start"], e["end"])) for f, es in out.items()}


def apply_fix(folder: str, fix_: dict) -> dict[str, tuple[str, list[dict]]]:
    """Apply a fix's edits (character offsets `start`..`end`, replaced by `text`) to the files of
    `folder`; per file edited, its old text and its edits. ValueError when the fix cannot be
    applied as given (an edit outside the case, offsets that disagree with its line/column)."""
    changed = {}
    for file, edits in edits_by_file(fix_).items():
        path = os.path.normpath(os.path.join(folder, file))
        if (
            os.path.isabs(file)
            or not path.startswith(os.path.normpath(folder) + os.sep)
            or not os.path.isfile(path)
        ):
            raise ValueError(f"edit outside the case's files: {file}")
        old, crlf = read_text(path)
        for e in edits:
            check_edit(old, e)
        new = old
        for e in reversed(edits):
            new = new[: e["start"]] + e["text"] + new[e["end"] :]
        write_text(path, new, crlf)
        changed[file] = (old, edits)
    return changed


def check_edit(text: str, e: dict) -> None:
    if not 0 <= e["start"] <= e["end"] <= len(text):
        raise ValueError(f"edit {e['file']}:{e['start']}-{e['end']} past the end of the text")
    if offset_of(text, e["line"], e["column"]) != e["start"]:
        raise ValueError(
            f"edit at {e['file']}:{e['line']}:{e['column']} disagrees with its offset {e['start']}"
        )


def old_offset(offset: int, edits: list[dict]) -> int:
    """Where an offset of the edited text was before the edits (text an edit inserted maps to
    where the edit was)."""
    shift = 0
    for e in edits:
        new_start = e["start"] + shift
        if offset < new_start:
            return offset - shift
        if offset < new_start + len(e["text"]):
            return e["start"]
        shift += len(e["text"]) - (e["end"] - e["start"])
    return offset - shift


def old_place(d: dict, folder: str, changed: dict) -> tuple[str, int]:
    """The (file, line) before the fix of a diagnostic reported after it."""
    file, line = place(d)
    if file not in changed or not line:
        return (file, line)
    old, edits = changed[file]
    new, _ = read_text(os.path.join(folder, file))
    return (file, line_of(old, old_offset(offset_of(new, line, d.get("column") or 1), edits)))


# ---- scoring -----------------------------------------------------------------------------------


@dataclass
class Result:
    """One case's counts per measure ([k, n]) and what it missed."""

    name: str
    counts: dict[str, list[int]] = field(default_factory=lambda: {m: [0, 0] for m in MEASURES})
    missed: list[str] = field(default_factory=list)

    def count(self, measure: str, ok: bool, miss: str | None = None) -> None:
        self.counts[measure][0] += int(ok)
        self.counts[measure][1] += 1
        if not ok and miss:
            self.missed.append(f"{measure}: {miss}")


def loc(where: tuple[str, int] | None) -> str:
    return f"{where[0]}:{where[1]}"


def score_lines(case: Case, diags: list[dict], r: Result) -> None:
    """Measures 1 (right line) and 3 (whole)."""
    found = [any(is_error(d) for d in at_place(diags, m.place)) for m in case.mistakes]
    for m, ok in zip(case.mistakes, found):
        r.count("right line", ok, f"mistake not found at {loc(m.place)} ({m.what})")
    if len(case.mistakes) >= 2:
        r.count(
            "whole", all(found), f"{found.count(False)} of {len(found)} mistakes not reported at their line"
        )


def score_cascades(case: Case, diags: list[dict], r: Result) -> None:
    """Measure 2: each diagnostic counts, at a mistake's line or not (a cascade)."""
    lines = {m.place for m in case.mistakes}
    for d in diags:
        r.count("not cascades", place(d) in lines, f"cascade {describe(d)}")


def score_notes(case: Case, diags: list[dict], r: Result) -> None:
    """Measures 4 (other) and 5 (safe offered), and safe fixes where the author must choose."""
    for m in case.mistakes:
        here = at_place(diags, m.place)
        if m.other:
            ok = any(has_note_at(d, m.other) for d in here)
            r.count(
                "other",
                ok,
                f"no note at {loc(m.other)} on the diagnostic at {loc(m.place)} ({m.what})"
                + ("" if here else " - nothing reported there"),
            )
        if m.safe:
            ok = any(safe_fixes(d) for d in here)
            unsafe = any(d.get("fixes") for d in here)
            r.count(
                "safe offered",
                ok,
                f"safe fix not offered at {loc(m.place)} ({m.what})"
                + (" - only a fix to review" if unsafe else ""),
            )
        elif any(safe_fixes(d) for d in here):
            r.missed.append(
                f"note: a fix marked safe at {loc(m.place)}, where the author must choose ({m.what})"
            )


def score_safe_fixes(flow2py: str, case: Case, diags: list[dict], r: Result) -> None:
    """Measure 6: every safe fix of a diagnostic at a mistake line, applied alone to a copy."""
    lines = {m.place for m in case.mistakes}
    for d in diags:
        if place(d) in lines:
            for f in safe_fixes(d):
                verdict = try_fix(flow2py, case, diags, d, f)
                r.count(
                    "safe correct",
                    verdict is None,
                    f"incorrect safe fix [{d.get('code')}] at {loc(place(d))} ({f.get('message')}): {verdict}",
                )


def try_fix(flow2py: str, case: Case, before: list[dict], d: dict, f: dict) -> str | None:
    """None when the fix alone removes the diagnostics at its line and adds none at a line that
    had none; otherwise what went wrong."""
    with tempfile.TemporaryDirectory(prefix="score-") as tmp:
        copy = shutil.copytree(case.folder, os.path.join(tmp, case.name))
        try:
            changed = apply_fix(copy, f)
        except ValueError as e:
            return str(e)
        _, after = check(flow2py, copy, case.entries)
        moved = [(old_place(a, copy, changed), a) for a in after]
    had = {place(b) for b in before}
    # at the fix's own line another mistake's diagnostic may stay: the fixed one must be gone
    # (one fewer of its code there) and no other code be new there
    was = Counter(b.get("code") for b in before if place(b) == place(d))
    here = [a for p, a in moved if p == place(d)]
    now = Counter(a.get("code") for a in here)
    left = (
        [a for a in here if a.get("code") == d.get("code")]
        if now[d.get("code")] >= was[d.get("code")]
        else []
    )
    added = [a for p, a in moved if p not in had]
    added += [a for a in here if a.get("code") != d.get("code") and now[a.get("code")] > was[a.get("code")]]
    return verdict_of(left, added)


def verdict_of(left: list[dict], added: list[dict]) -> str | None:
    parts = [f"left at its line: {describe(a)}" for a in left]
    parts += [f"added: {describe(a)}" + (" (itself with a safe fix)" if safe_fixes(a) else "") for a in added]
    return "; ".join(parts) or None


def score_clean(flow2py: str, case: Case, r: Result) -> None:
    """Measure 7: a case of safe mistakes only is clean after `flow2py fix` on a copy."""
    if not all(m.safe for m in case.mistakes):
        return
    with tempfile.TemporaryDirectory(prefix="score-") as tmp:
        copy = shutil.copytree(case.folder, os.path.join(tmp, case.name))
        fix(flow2py, copy, case.entries)
        rc, left = check(flow2py, copy, case.entries)
    shown = "; ".join(describe(d) for d in left[:3]) + (
        f"; ... ({len(left)} in all)" if len(left) > 3 else ""
    )
    r.count("clean", rc == 0, f"case not clean after fix: {shown or f'check exited {rc}'}")


def score_case(flow2py: str, case: Case) -> Result:
    r = Result(case.name)
    _, diags = check(flow2py, case.folder, case.entries)
    score_lines(case, diags, r)
    score_cascades(case, diags, r)
    score_notes(case, diags, r)
    score_safe_fixes(flow2py, case, diags, r)
    score_clean(flow2py, case, r)
    return r


def score_corpus(flow2py: str, corpus: str, all_files: bool) -> tuple[list[Result], list[str]]:
    """Each case's result, and the cases that could not be scored (with why)."""
    results, skipped = [], []
    for name in case_names(corpus):
        try:
            results.append(score_case(flow2py, load_case(corpus, name, all_files)))
        except (ValueError, FlowError) as e:
            skipped.append(f"{name}: {e}")
    return results, skipped


# ---- output ------------------------------------------------------------------------------------


def totals(results: list[Result]) -> dict[str, list[int]]:
    return {m: [sum(r.counts[m][0] for r in results), sum(r.counts[m][1] for r in results)] for m in MEASURES}


def pct(k: int, n: int) -> float | None:
    return round(100 * k / n, 1) if n else None


def fraction(k: int, n: int) -> str:
    p = pct(k, n)
    return f"{k}/{n} ({'n/a' if p is None else f'{p:g}%'})"


def print_text(results: list[Result], skipped: list[str]) -> None:
    width = max(map(len, MEASURES))
    for i, (m, (k, n)) in enumerate(totals(results).items(), 1):
        print(f"{i}. {m:<{width}}  {fraction(k, n)}")
    for r in results:
        print(f"\n{r.name}:" + ("" if r.missed else " nothing missed"))
        for line in in_measure_order(r.missed):
            print(f"  - {line}")
    for s in skipped:
        print(f"\nnot scored: {s}")


def in_measure_order(missed: list[str]) -> list[str]:
    """Misses grouped by measure, in the measures' order (notes last), each group as found."""
    rank = {m: i for i, m in enumerate(MEASURES)}
    return sorted(missed, key=lambda x: rank.get(x.split(":")[0], len(MEASURES)))


def as_json(results: list[Result], skipped: list[str]) -> str:
    def numbers(counts):
        return {m: {"k": k, "n": n, "pct": pct(k, n)} for m, (k, n) in counts.items()}

    return json.dumps(
        {
            "measures": numbers(totals(results)),
            "cases": {
                r.name: {"measures": numbers(r.counts), "missed": in_measure_order(r.missed)} for r in results
            },
            "not_scored": skipped,
        },
        indent=2,
        ensure_ascii=False,
    )


# ---- validation --------------------------------------------------------------------------------


def validate_case(flow2py: str, corpus: str, name: str) -> list[str]:
    """What is wrong with one case: its mistakes.json, its places, its clean twin."""
    folder = os.path.join(corpus, name)
    try:
        problems = check_places(folder, load_mistakes(folder))
    except ValueError as e:
        problems = [str(e)]
    return problems + validate_twin(flow2py, folder, name)


def validate_twin(flow2py: str, folder: str, name: str) -> list[str]:
    twin = folder + "-clean"
    if not os.path.isdir(twin):
        return [f"{name}-clean: missing"]
    problems = []
    if flow_files(twin) != flow_files(folder):
        problems.append(f"{name}-clean: other .flow files than {name} ({', '.join(flow_files(twin))})")
    try:
        rc, diags = check(flow2py, twin, entry_files(twin, flow_files(twin)))
    except FlowError as e:
        return problems + [f"{name}-clean: {e}"]
    if rc != 0:
        problems.append(f"{name}-clean: does not check clean (exit {rc})")
        problems += [f"  {describe(d)}" for d in diags]
    return problems


def validate(flow2py: str, corpus: str) -> int:
    bad = 0
    names = case_names(corpus)
    for name in names:
        problems = validate_case(flow2py, corpus, name)
        bad += bool(problems)
        print(f"{name}: " + ("ok" if not problems else "PROBLEMS"))
        for p in problems:
            print(f"  {p}")
    print(f"\n{len(names) - bad}/{len(names)} cases valid")
    return 1 if bad or not names else 0


# ---- command line ------------------------------------------------------------------------------


def default_flow2py() -> str:
    return DEFAULT_FLOW2PY if os.path.exists(DEFAULT_FLOW2PY) else (shutil.which("flow2py") or "flow2py")


def arguments(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Score flow2py's diagnostics against a mistake corpus.")
    p.add_argument("corpus", help="the corpus folder (holding caseNN/ and caseNN-clean/)")
    p.add_argument("--flow2py", default=default_flow2py(), help="the flow2py program to run")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    p.add_argument("--validate", action="store_true", help="check the corpus itself, score nothing")
    p.add_argument(
        "--all-files",
        action="store_true",
        help="give check every .flow file of a case as an entry (default: the files no other imports)",
    )
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = arguments(argv)
    if not os.path.isdir(args.corpus):
        print(f"score.py: {args.corpus}: not a folder", file=sys.stderr)
        return 2
    if args.validate:
        return validate(args.flow2py, args.corpus)
    results, skipped = score_corpus(args.flow2py, args.corpus, args.all_files)
    if args.json:
        print(as_json(results, skipped))
    else:
        print_text(results, skipped)
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
