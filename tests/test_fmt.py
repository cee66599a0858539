"""`flow2py fmt` (flow2py/format/): the canonical layout keeps what a program is and every
comment, is a fixed point, refuses a file with syntax errors, and `--check` writes nothing.
golden/fmt/<case>.flow is laid out as <case>.formatted.flow (FLOW2PY_UPDATE_GOLDEN=1 rewrites)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from flow2py.format import FormatError, format_source
from flow2py.format.comments import find_comments
from flow2py.format.layout import WIDTH
from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIRS = ("std", "examples", "golden", "tests", "bench")
FLOW_FILES = sorted(p for d in CORPUS_DIRS for p in (ROOT / d).rglob("*.flow"))
GOLDEN = ROOT / "golden" / "fmt"
UPDATE = os.environ.get("FLOW2PY_UPDATE_GOLDEN") == "1"


def _read(path: Path) -> str:
    with open(path, encoding="utf-8", errors="surrogatepass", newline="") as f:  # as the loader reads
        return f.read()


def _parses(text: str, path: str) -> ast.Module | None:
    module, diags = parse_module(text, path)
    return None if diags else module


def _comments(text: str) -> Counter:
    return Counter(c.text for c in find_comments(text))


def test_the_corpus_is_the_whole_repository():
    assert len(FLOW_FILES) > 150
    assert any(p.parts[-2] == "std" for p in FLOW_FILES)


@pytest.mark.parametrize("path", FLOW_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_formatting_keeps_the_tree_and_every_comment_and_is_a_fixed_point(path):
    text = _read(path)
    name = str(path.relative_to(ROOT))
    module = _parses(text, name)
    if module is None:
        with pytest.raises(FormatError) as refused:
            format_source(text, name)
        assert refused.value.diagnostics  # a file with syntax errors is refused, with them
        return
    out = format_source(text, name)
    again = _parses(out, name)
    assert again is not None, out
    assert ast.to_data(again) == ast.to_data(module)
    assert _comments(out) == _comments(text)
    assert format_source(out, name) == out
    assert out.endswith("\n") or out == ""
    assert "\t" not in "".join(line for line in out.splitlines() if not line.lstrip().startswith("//"))


def test_formatting_every_module_keeps_each_program_identity(tmp_path, monkeypatch):
    """Each file of the repository that checks is checked again from a copy of the repository in
    which every module (but std, which is covered by the tree test above) is formatted: the
    program identity `check` computes is the same."""
    from flow2py import host

    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.db", ".flow")
    for d in CORPUS_DIRS[1:]:
        shutil.copytree(ROOT / d, copy / d, ignore=ignore)
    changed = 0
    for p in sorted(copy.rglob("*.flow")):
        text = _read(p)
        if _parses(text, str(p)) is not None:
            out = format_source(text, str(p))
            changed += out != text
            p.write_text(out, encoding="utf-8")
    assert changed > 20
    compared = 0
    for path in FLOW_FILES:
        rel = str(path.relative_to(ROOT))
        if rel.startswith("std"):
            continue
        monkeypatch.chdir(ROOT)
        before = host.check(rel)
        if before.diagnostics:
            continue
        monkeypatch.chdir(copy)
        after = host.check(rel)
        assert not after.diagnostics, (rel, after.diagnostics[:1])
        assert after.program.identity == before.program.identity, rel
        compared += 1
    assert compared > 60


# ---- the layout -------------------------------------------------------------------------------


def fmt(text: str) -> str:
    return format_source(text, "t.flow")


def test_the_layout_does_not_depend_on_the_input_layout():
    a = "flow f(x: Int) -> Int = {\n    let y = x +\n        1\n    y * 2\n}\n"
    b = "flow   f( x:Int , ) ->Int {let y=x+1;y*2}"
    c = "flow f(\n    x: Int,\n) -> Int {\n    let y = (x + 1)\n\n    y * (2)\n}"
    assert fmt(a) == fmt(b) == "flow f(x: Int) -> Int {\n    let y = x + 1\n    y * 2\n}\n"
    assert fmt(c) == "flow f(x: Int) -> Int {\n    let y = x + 1\n\n    y * 2\n}\n"  # the blank line stays


def test_blank_lines_between_declarations_collapse_to_one():
    assert fmt('use "std@v1/list"\n\n\n\nflow f() -> Int = 1\nflow g() -> Int = 2\n') == (
        'use "std@v1/list"\n\nflow f() -> Int = 1\nflow g() -> Int = 2\n'
    )


def test_long_calls_break_one_argument_per_line_with_a_trailing_comma():
    long = "a_rather_long_argument_name"
    out = fmt(f"flow f() -> Int = g({long}, {long}, {long}, {long}, {long})")
    assert (
        out == f"flow f() -> Int = g(\n    {long},\n    {long},\n    {long},\n    {long},\n    {long},\n)\n"
    )
    assert all(len(line) <= WIDTH for line in out.splitlines())


def test_a_last_list_argument_is_hugged():
    item = "flow() = search_the_web_for_the_answer_to(ticket_text)"
    out = fmt(f"flow f() -> Int {{\n    task.race([{item}, {item}])\n}}")
    assert out == f"flow f() -> Int {{\n    task.race([\n        {item},\n        {item},\n    ])\n}}\n"


def test_a_long_binary_chain_breaks_after_each_operator():
    part = '"a piece of text that is long"'
    out = fmt(f"flow f(x: Text) -> Text = {part} ++ x ++ {part} ++ {part}")
    assert out == (f"flow f(x: Text) -> Text = {part} ++\n    x ++\n    {part} ++\n    {part}\n")


def test_matches_are_always_one_arm_per_line():
    assert fmt("flow f(a: Int) -> Int = match a { 0 => 1, _ => a }") == (
        "flow f(a: Int) -> Int = match a {\n    0 => 1,\n    _ => a,\n}\n"
    )


def test_parentheses_are_kept_exactly_where_the_reading_needs_them():
    out = fmt(
        "flow f(x: Int) -> Int {\n    let a = ((x + 1)) * (x - (2 - 3))\n    let m = match (Fast) { _ => 1 }\n"
        "    let c = (x?)(1)\n    let d = (flow(y) = y)(x)\n    - (-x)\n}\n"
    )
    assert "let a = (x + 1) * (x - (2 - 3))" in out
    assert "match (Fast) {" in out
    assert "let c = (x?)(1)" in out
    assert "let d = (flow(y) = y)(x)" in out
    assert "    - -x\n" in out


def test_an_if_as_a_condition_keeps_its_parentheses():
    # unparenthesised, a guard's `if` would take the guard's `else` (found by test_fmt_properties)
    out = fmt("flow f(x: Bool) -> Int {\n    guard (if (x) {\n}) else { return 1 }\n    2\n}\n")
    assert "guard (if x {}) else { return 1 }" in out


def test_comments_are_kept_in_place():
    src = (
        "// header\n\n"
        "type T {\n    A, // the first\n    // before B\n    B\n}\n"
        "flow f() -> Int {\n    let x = 1 + // in the middle\n        2\n    x // the value\n    // at the end\n}\n"
    )
    assert fmt(src) == (
        "// header\n\n"
        "type T {\n    A, // the first\n    // before B\n    B,\n}\n"
        "flow f() -> Int {\n    // in the middle\n    let x = 1 + 2\n    x // the value\n    // at the end\n}\n"
    )


def test_a_comment_in_an_argument_list_breaks_it():
    assert fmt("flow f() -> Int = g(1, // one\n 2)") == "flow f() -> Int = g(\n    1, // one\n    2,\n)\n"


def test_literals_keep_their_spelling():
    out = fmt('flow f() -> Int { let a = 0xff + 1_000\n let b = "a\\u{41}\\n"\n let c = 250ms\n a }')
    assert "0xff + 1_000" in out and '"a\\u{41}\\n"' in out and "250ms" in out


def test_a_file_with_a_syntax_error_is_refused_with_its_diagnostics():
    with pytest.raises(FormatError) as e:
        fmt("flow f( -> Int = 1\nflow g() -> Int =   2\n")
    assert [d.code for d in e.value.diagnostics] == ["E004"]


def test_an_empty_file_stays_empty_and_a_comment_only_file_keeps_its_comments():
    assert fmt("") == ""
    assert fmt("\n\n// only a comment   \n\n") == "// only a comment\n"


# ---- golden layouts ---------------------------------------------------------------------------


def golden_cases() -> list[str]:
    return sorted(
        p.name[: -len(".flow")] for p in GOLDEN.glob("*.flow") if not p.name.endswith(".formatted.flow")
    )


@pytest.mark.parametrize("case", golden_cases())
def test_golden_layout(case):
    got = format_source(_read(GOLDEN / f"{case}.flow"), f"{case}.flow")
    expected = GOLDEN / f"{case}.formatted.flow"
    if UPDATE:
        expected.write_text(got, encoding="utf-8")
    assert got == _read(expected)
    assert format_source(got, f"{case}.flow") == got


def test_every_formatted_golden_has_its_input():
    cases = set(golden_cases())
    assert len(cases) >= 3
    for p in GOLDEN.glob("*.formatted.flow"):
        assert p.name[: -len(".formatted.flow")] in cases, f"orphan golden file {p.name}"


# ---- the command ------------------------------------------------------------------------------


def flow2py(*args, stdin: str | None = None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "flow2py.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=cwd,
        env={**os.environ, "FLOW2PY_DEBUG": ""},
    )


MESSY = "flow   f()->Int=1\n"
NEAT = "flow f() -> Int = 1\n"


def test_fmt_check_lists_the_files_that_would_change_and_writes_nothing(tmp_path):
    (tmp_path / "a.flow").write_text(MESSY)
    (tmp_path / "b.flow").write_text(NEAT)
    r = flow2py("fmt", "--check", str(tmp_path))
    assert r.returncode == 1
    assert r.stdout == f"would reformat {tmp_path / 'a.flow'}\n"
    assert (tmp_path / "a.flow").read_text() == MESSY
    assert flow2py("fmt", "--check", str(tmp_path / "b.flow")).returncode == 0


def test_fmt_rewrites_only_the_files_that_change(tmp_path):
    a, b = tmp_path / "a.flow", tmp_path / "b.flow"
    a.write_text(MESSY)
    b.write_text(NEAT)
    os.chmod(a, 0o640)
    before = b.stat().st_mtime_ns
    r = flow2py("fmt", str(a), str(b))
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"reformatted {a}\n"
    assert a.read_text() == NEAT and a.stat().st_mode & 0o777 == 0o640
    assert b.stat().st_mtime_ns == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".fmt-")] == []


def test_fmt_refuses_a_file_with_syntax_errors_and_leaves_it_alone(tmp_path):
    bad, good = tmp_path / "bad.flow", tmp_path / "good.flow"
    bad.write_text("flow   f( -> Int = 1\n")
    good.write_text(MESSY)
    r = flow2py("fmt", str(bad), str(good))
    assert r.returncode == 1  # as `check` exits on diagnostics
    assert "error[E004]" in r.stderr and "not formatted" in r.stderr
    assert bad.read_text() == "flow   f( -> Int = 1\n"
    assert good.read_text() == NEAT  # the other files are still formatted


def test_fmt_of_standard_input_writes_standard_output():
    r = flow2py("fmt", "-", stdin=MESSY)
    assert (r.returncode, r.stdout) == (0, NEAT)


def test_fmt_of_a_missing_file_is_one_line(tmp_path):
    r = flow2py("fmt", str(tmp_path / "nope.flow"))
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr


def test_deep_nesting_past_the_width_still_formats_to_a_fixed_point():
    sources = [
        "flow f(x: Int) -> Int = " + "match x { _ => " * 30 + "{ return }" + " }" * 30,
        "flow f(x: Int) -> Int = " + "g(" * 40 + "a_long_name, another_long_name" + ")" * 40,
        "flow f(x: Int) -> Int = " + "-(" * 5 + "-x" + ")" * 5 + " + !(-y)",
    ]
    for src in sources:
        out = fmt(src)
        assert fmt(out) == out
    assert out == "flow f(x: Int) -> Int = - - - - - -x + !-y\n"
