"""Habits from other languages get a Flow answer (E012, flow2py/syntax/habits.py): one diagnostic
per mistake, at its place, saying what Flow writes; a safe fix where Flow has one equivalent,
which makes the file parse clean; and the parse goes on after it."""

from __future__ import annotations

import glob
import os

import pytest

from check_helpers import ROOT
from flow2py.diagnostics import apply_fix
from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module

CASES = sorted(glob.glob(os.path.join(ROOT, "golden", "diagnostics", "E012_*.flow")))


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _apply(source: str, fixes) -> str:
    """Every fix applied at once (their edits never overlap), last edit first."""
    edits = sorted((e for f in fixes for e in f.edits), key=lambda e: e.span.start, reverse=True)
    for e in edits:
        source = source[: e.span.start] + e.text + source[e.span.end :]
    return source


def _habits(source: str, path: str = "m.flow"):
    _, diags = parse_module(source, path)
    return diags


def test_every_habit_has_a_golden_case():
    names = {os.path.basename(p)[len("E012_") : -len(".flow")] for p in CASES}
    assert {"elif", "and_or_not", "strict_equality", "const_let_mut", "reassignment", "loops"} <= names
    assert {
        "f_string",
        "template_literal",
        "arrow_lambda",
        "reference",
        "foreign_heads",
        "type_names",
    } <= names


@pytest.mark.parametrize("path", CASES, ids=os.path.basename)
def test_each_safe_fix_alone_removes_its_diagnostic_and_adds_no_syntax_error(path):
    source = _read(path)
    diags = _habits(source)
    assert diags and {d.code for d in diags} == {"E012"}
    before = {(d.code, d.message) for d in diags}
    for d in diags:
        for fix in d.fixes:
            if fix.safe:
                after = {(x.code, x.message) for x in _habits(apply_fix(source, fix))}
                assert (d.code, d.message) not in after
                assert after <= before


@pytest.mark.parametrize("path", CASES, ids=os.path.basename)
def test_applying_every_fix_makes_the_file_parse_clean(path):
    """Safe fixes alone where every habit has one; the fixes to review too elsewhere. Only a
    habit with no fix at all (a loop, a top-level value) is left."""
    source = _read(path)
    diags = _habits(source)
    fixes = [f for d in diags for f in d.fixes[:1]]
    left = [d for d in _habits(_apply(source, fixes))]
    unfixable = [(d.code, d.message) for d in diags if not d.fixes]
    assert [(d.code, d.message) for d in left] == unfixable


SAFE_ONLY = [
    p
    for p in CASES
    if all(f.safe for d in _habits(_read(p)) for f in d.fixes[:1]) and all(d.fixes for d in _habits(_read(p)))
]


@pytest.mark.parametrize("path", SAFE_ONLY, ids=os.path.basename)
def test_the_tree_after_a_habit_is_the_tree_of_the_fixed_source(path):
    """Where Flow has one equivalent the parser goes on as if the fix were applied, so checking
    sees the program as fixed."""
    source = _read(path)
    module, diags = parse_module(source, "m.flow")
    fixed, again = parse_module(_apply(source, [d.fixes[0] for d in diags]), "m.flow")
    assert again == []
    assert ast.to_data(module) == ast.to_data(fixed)


def test_safe_habits_are_the_ones_with_one_equivalent():
    assert {os.path.basename(p)[len("E012_") : -len(".flow")] for p in SAFE_ONLY} == {
        "elif",
        "and_or_not",
        "strict_equality",
        "const_let_mut",
        "arrow_lambda",
        "reference",
        "comments_and_quotes",
        "other_lambdas",
        "arm_arrow",
        "ternary",
        "type_arguments",
        "assignment_new_name",
        "tuple_unpacking",
        "python_def_body",
        "typed_function_head",
        "case_arm",
        "else_arm",
        "increment_and_spread",
        "let_else",
        "await_switch_short_declaration",
        "paths_and_await",
        "duration_unit_word",
        "slice_and_membership",
        "slice_before_a_list",
        "same_habit_twice_on_a_line",
        "optional_types",
        "qualified_constructor_pattern",
        "update_parenthesised",
        "list_comprehension",
        "python_conditional",
        "trailing_lambda",
        "constructors_of_other_languages",
        "membership",
        "async_function",
        "or_pattern",
        "rest_binding_with_at",
        "let_with_short_declaration",
        "switch_expression",
        "blank_assignment",
        "result_without_arrow",
        "dict_literal",
        "go_slice_type",
    }


def test_a_template_literal_is_one_diagnostic_not_one_per_character():
    diags = _habits("pub flow f(name: Text) -> Text = `Hi ${name}, ${name}!`\n")
    assert [d.code for d in diags] == ["E012"]
    assert diags[0].span.column == 34 and diags[0].span.end_column == 56


def test_parsing_goes_on_after_a_habit_and_finds_the_next_mistake():
    src = "pub flow f(a: Int) -> Int = {\n    if a === 1 { 1 } elif a > 2 { 2 } else { 3 }\n    let = 4\n}\n"
    diags = _habits(src)
    assert [(d.code, d.span.line) for d in diags] == [("E012", 2), ("E012", 2), ("E004", 3)]


def test_valid_programs_that_use_the_words_of_other_languages_are_not_habits():
    src = """pub flow not(x: Bool) -> Bool = !x
pub flow and(x: Int) -> Int = x
pub flow f(elif: Int, or: Int, mut: Int) -> Int = {
    let for = and(elif) + or + mut
    let b = not(true)
    match b { true => for, false => 0 }
}
"""
    assert _habits(src) == []


def test_a_habit_is_reported_at_its_place_with_what_flow_writes():
    cases = {
        "pub flow f(a: Bool, b: Bool) -> Bool = a or b\n": ("`||`", 42),
        "pub flow f(a: Int) -> Bool = a !== 1\n": ("`!=`", 32),
        "pub flow f(xs: List<Int>) -> List<Int> = xs.map(n => n)\n": ("`flow(n) = ...`", 51),
        "pub flow f() -> Int = {\n    const n = 1\n    n\n}\n": ("`let`", 5),
    }
    for src, (answer, column) in cases.items():
        [d] = _habits(src)
        assert d.code == "E012" and answer in d.message and d.span.column == column, (src, d)


def test_not_before_a_comparison_parenthesises_what_python_negates():
    src = "pub flow f(a: Int, b: Int) -> Bool = not a == b and a > 0\n"
    diags = _habits(src)
    fixed = _apply(src, [d.fixes[0] for d in diags])
    assert fixed == "pub flow f(a: Int, b: Int) -> Bool = !(a == b) && a > 0\n"


def test_a_loop_has_no_fix_and_reassignment_a_fix_to_review():
    [loop] = _habits("pub flow f(xs: List<Int>) -> Int = {\n    for x in xs { x }\n    0\n}\n")
    assert loop.fixes == ()
    [assign] = _habits("pub flow f(n: Int) -> Int = {\n    n = n + 1\n    n\n}\n")
    assert [f.safe for f in assign.fixes] == [False]


def test_a_habit_at_the_start_of_a_line_is_found_where_a_separator_went_before_it():
    src = (
        "pub flow f(x: Int, a: Bool, b: Bool) -> Int = if a\n    and b {\n    1\n}\n"
        "elif x < 0 {\n    2\n} else {\n    3\n}\n"
    )
    diags = _habits(src)
    assert [(d.span.line, d.message) for d in diags] == [
        (2, "Flow writes `&&`, not `and`"),
        (5, "Flow writes `else if`, not `elif`"),
    ]
    fixed, again = parse_module(_apply(src, [d.fixes[0] for d in diags]), "m.flow")
    assert again == [] and ast.to_data(fixed) == ast.to_data(parse_module(src, "m.flow")[0])


def test_an_elif_in_column_one_is_not_cut_off_as_a_declaration_of_its_own():
    src = "pub flow f(x: Int) -> Int = if x > 0 {\n    1\n}\nelif x < 0 {\n    2\n} else {\n    3\n}\n"
    [d] = _habits(src)
    assert d.span.line == 4 and d.fixes[0].safe


def test_a_bracket_never_closed_at_its_depth_is_a_syntax_error_not_an_internal_one():
    # `I[nt) -> Int`: the `[` has no `]` at its depth before the end, which the slice habit
    # (`xs[a:b]`) once read as a position
    src = '@lang("int.neg", "-") pub flow neg(a: I[nt) -> Int\n'
    _, diags = parse_module(src, "neg.flow")
    assert [d.code for d in diags] == ["E004"]
