"""The language server's incremental re-check (flow2py/lsp/incremental.py) gives exactly the
diagnostics a fresh check of the same text gives, after every kind of edit."""

from __future__ import annotations

import glob
import os
import sys

import pytest

from flow2py.check.driver import check_program
from flow2py.lsp.incremental import Document, split
from repo_paths import ROOT

REPO_ROOT = str(ROOT)

sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
from bench_check import generate  # noqa: E402


def _same(doc: Document, text: str):
    got = doc.check(text)
    fresh = check_program(doc.path, source=text)
    assert got.result.diagnostics == fresh.diagnostics
    # the typed objects too (not part of a Diagnostic's equality), with their places moved back
    assert [d.data for d in got.result.diagnostics] == [d.data for d in fresh.diagnostics]
    return got


def _edit_once(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_split_cuts_before_each_declaration_keeping_annotations_with_theirs():
    text = 'use "std@v1/list"\n\n@tool\npub flow f() -> Int\n// a note\ntype A { x: Int }\nflow g() -> Int =\n    1\n'
    pieces = split(text)
    assert "".join(p for _, p in pieces) == text
    assert [p.splitlines()[0] for _, p in pieces] == [
        'use "std@v1/list"',
        "@tool",
        "type A { x: Int }",
        "flow g() -> Int =",
    ]


def test_a_body_edit_in_a_large_module_walks_one_function_and_matches_a_fresh_check(tmp_path):
    path = str(tmp_path / "main.flow")
    text = generate(1500)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    doc = Document(path)
    first = _same(doc, text)
    assert first.result.diagnostics == [] and not first.whole
    # a one-line edit in the middle: the line grows, so every piece below it moves
    text = _edit_once(text, "3 * r * r + 40,", "3 * r * r + 40 + 0,")
    r = _same(doc, text)
    assert r.walked == 1 and r.reused > 100
    # a mistake in that body: reported where it is, with its note
    text = _edit_once(text, "3 * r * r + 40 + 0", '3 * r * r + 40 + "x"')
    r = _same(doc, text)
    assert [d.code for d in r.result.diagnostics] == ["E201"] and r.walked == 1
    # a line added in a body above it: that body is walked again, the mistake's is kept and moved
    text = _edit_once(text, "Square(a) => a * a,", "Square(a) =>\n        a * a,")
    r = _same(doc, text)
    assert r.walked == 1
    assert r.result.diagnostics[0].span.line == text[: text.index('"x"')].count("\n") + 1
    text = _edit_once(text, '3 * r * r + 40 + "x"', "3 * r * r + 40")
    assert _same(doc, text).result.diagnostics == []
    # a function's header changes: it and its one caller are walked again, nothing else
    text = _edit_once(text, "pub flow area_7(s: Shape) -> Int", "pub flow area_7(s: Shape, k: Int) -> Int")
    r = _same(doc, text)
    assert sorted(d.code for d in r.result.diagnostics) == ["E202", "E404"]  # the call; `k` unused
    assert r.walked == 2
    text = _edit_once(text, "pub flow area_7(s: Shape, k: Int) -> Int", "pub flow area_7(s: Shape) -> Int")
    r = _same(doc, text)
    assert r.result.diagnostics == [] and r.walked == 2


EDITS = [
    # (what, old, new): applied in turn to the text as it is then
    (
        "a signature changes: every caller is re-walked",
        "pub flow total_3(items: List<Item>) -> Int",
        "pub flow total_3(items: List<Item>, k: Int) -> Int",
    ),
    (
        "and back",
        "pub flow total_3(items: List<Item>, k: Int) -> Int",
        "pub flow total_3(items: List<Item>) -> Int",
    ),
    (
        "a private function nobody calls",
        "pub flow label_2(",
        "flow helper_() -> Int = 1\n\npub flow label_2(",
    ),
    (
        "a syntax error",
        "let kept = prices.filter(flow(p) = p > 10)\n",
        "let kept = prices.filter(flow(p) = p > )\n",
    ),
    ("fixed", "let kept = prices.filter(flow(p) = p > )\n", "let kept = prices.filter(flow(p) = p > 10)\n"),
    (
        "a call to the private one: no longer unused",
        "kept.fold(0, flow(acc, p) = acc + p)",
        "kept.fold(helper_(), flow(acc, p) = acc + p)",
    ),
    ("a declaration twice", "pub flow area_1(", "flow helper_() -> Int = 2\n\npub flow area_1("),
    (
        "a type changes",
        "pub type Item { pub name: Text, pub price: Int,",
        "pub type Item { pub name: Text, pub price: Text,",
    ),
    (
        "back",
        "pub type Item { pub name: Text, pub price: Text,",
        "pub type Item { pub name: Text, pub price: Int,",
    ),
    ("an import removed", 'use "std@v1/list"\n', ""),
    ("and put back", "pub type Shape", 'use "std@v1/list"\n\npub type Shape'),
    (
        "a body deleted to nothing",
        "pub flow load_2(key: Text, round: Int) -> Result<Int, Text> !tool = {",
        "pub flow load_2(key: Text, round: Int) -> Result<Int, Text> = {",
    ),
]


@pytest.mark.parametrize("end", ["\n", ""], ids=["final newline", "none"])
def test_diagnostics_after_each_kind_of_edit_equal_a_fresh_checks(tmp_path, end):
    path = str(tmp_path / "main.flow")
    text = generate(250).rstrip("\n") + end
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    doc = Document(path)
    _same(doc, text)
    seen = set()
    for what, old, new in EDITS:
        text = _edit_once(text, old, new)
        r = _same(doc, text)
        seen.update(d.code for d in r.result.diagnostics)
    assert {"E004", "E101", "E107", "E202", "E301", "E405"} <= seen, seen


CASES = sorted(glob.glob(os.path.join(REPO_ROOT, "golden", "diagnostics", "*.flow"))) + sorted(
    glob.glob(os.path.join(REPO_ROOT, "examples", "*", "main.flow"))
)


@pytest.mark.parametrize("path", CASES, ids=[os.path.relpath(p, REPO_ROOT) for p in CASES])
def test_every_golden_case_and_example_checks_as_fresh_before_and_after_moving(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    doc = Document(path)
    _same(doc, text)
    _same(doc, "// moved down\n\n" + text)  # every piece reused at a new place
    _same(doc, text.replace("\n", "\n\n", 3))  # some moved, some not
    _same(doc, text + "\nflow tail_() -> Int = 1\n")
    _same(doc, text.rstrip("\n"))  # no final newline
    _same(doc, text.rstrip("\n") + "\n\nflow tail_() -> Int = 1")
    _same(doc, text.rstrip("\n") + "\n\nflow tail_() -> Int = 2")


def test_an_imported_module_changed_on_disk_is_read_again(tmp_path):
    (tmp_path / "planner.flow").write_text("pub flow next(n: Int) -> Int = n + 1\n")
    path = str(tmp_path / "main.flow")
    text = 'use "./planner"\n\npub flow main(n: Int) -> Int = planner.next(n)\n'
    (tmp_path / "main.flow").write_text(text)
    doc = Document(path)
    assert _same(doc, text).result.diagnostics == []
    (tmp_path / "planner.flow").write_text("pub flow next(n: Int, k: Int) -> Int = n + k\n")
    r = _same(doc, text)
    assert [d.code for d in r.result.diagnostics] == ["E202"]
    (tmp_path / "planner.flow").write_text("pub flow next(n: Int) -> Int = n + 1\n")
    assert _same(doc, text).result.diagnostics == []


def test_mistakes_in_signatures_and_bodies_together_stay_exact_over_edits(tmp_path):
    path = str(tmp_path / "main.flow")
    text = generate(120)
    text = _edit_once(
        text, "pub flow total_1(items: List<Item>)", "pub flow total_1(items: List<Itme>)"
    )  # E102
    text = _edit_once(text, "Square(a) => a * a,", 'Square(a) => a * "a",')  # E201 in area_0
    doc = Document(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    codes = {d.code for d in _same(doc, text).result.diagnostics}
    assert {"E102", "E201"} <= codes
    for old, new in [
        ("3 * r * r + 2,", "3 * r * r + 2 + 1,"),  # a body elsewhere
        ('Square(a) => a * "a",', "Square(a) => a * a,"),  # the body mistake fixed
        ("List<Itme>", "List<Item>"),  # the signature fixed
        ("3 * r * r + 2 + 1,", "3 * r * r + 2,"),
    ]:
        text = _edit_once(text, old, new)
        _same(doc, text)
    assert _same(doc, text).result.diagnostics == []


def test_a_program_with_errors_keeps_its_partial_side_tables_for_the_editor():
    from flow2py.check.driver import check_source
    from flow2py.check.typed import FnRef
    from flow2py.syntax import ast

    text = 'pub flow f(n: Int) -> Int = n + 1\n\npub flow main() -> Int = f("one")\n'
    r = check_source(text)
    assert [d.code for d in r.diagnostics] == ["E201"] and r.program is None
    calls = [n for d in r.partial.modules["main"].ast.decls for n in ast.walk(d) if isinstance(n, ast.Call)]
    (call,) = calls
    assert r.partial.refs[call.callee.id] == FnRef("main::f")
    assert r.partial.types[call.id].decl.endswith("::Int")
    assert check_source(text.replace('"one"', "1")).partial is None  # a clean program has `program`


def test_a_text_without_a_final_newline_is_still_checked_in_pieces(tmp_path):
    path = str(tmp_path / "main.flow")
    text = generate(600).rstrip("\n")
    doc = Document(path)
    assert not _same(doc, text).whole
    text = _edit_once(text, "3 * r * r + 5,", "3 * r * r + 5 + 1,")
    r = _same(doc, text)
    assert not r.whole and r.walked == 2  # the edited function, and the last one (parsed every time)
    text = text + "\n"
    assert not _same(doc, text).whole


def test_a_missing_use_is_inserted_at_the_top_and_reported_once_after_declarations_move(tmp_path):
    path = str(tmp_path / "main.flow")
    body = "pub flow main() -> Int !tool = task.await(task.spawn(flow() = 1))\n"
    other = "pub flow other() -> Int !tool = task.await(task.spawn(flow() = 2))\n"
    doc = Document(path)
    for text in (
        body + "\n" + other,
        "pub flow first_() -> Int = 1\n\n" + body + "\n" + other,  # the first piece moves down
        "pub flow first_() -> Int = 2\n\n" + body + "\n" + other,
        body + "\n" + other,
        body + "\n" + other.replace("= 2", "= 3"),  # the second walked again, the first replayed
        body.replace("= 1", "= 4") + "\n" + other,  # the first walked again, the second replayed
    ):
        r = _same(doc, text)
        e101 = [d for d in r.result.diagnostics if d.code == "E101"]
        assert len(e101) == 1
        top = [e for f in e101[0].fixes for e in f.edits if e.text.startswith("use ")]
        assert [(e.span.start, e.span.line, e.span.column) for e in top] == [(0, 1, 1)]
