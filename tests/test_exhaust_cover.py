"""E401 names every missing case at once (a cover: each value no arm matches is matched by
exactly one named pattern), and E402 points at the arms that make an arm unreachable."""

import textwrap

import pytest

from flow2py.check import check_source
from flow2py.fix import apply_fixes


def check(src):
    return check_source(textwrap.dedent(src), "main.flow")


def only(r, code):
    ds = [d for d in r.diagnostics if d.code == code]
    assert len(ds) == 1, r.diagnostics
    return ds[0]


def test_a_nested_missing_case_is_named_with_the_constructors_no_arm_names():
    r = check("""
        type E { A, B }
        type T { X(E), Y, Z }
        pub flow main(t: T) -> Int = match t {
            X(A) => 1,
        }
    """)
    d = only(r, "E401")
    assert d.message == "this match does not cover every value: missing `X(B)`, `Y`, `Z`"


def test_an_arm_with_a_guard_covers_nothing_and_a_whole_missing_part_is_a_wildcard():
    r = check("""
        pub flow main(r: Result<Option<Bool>, Int>) -> Int = match r {
            Ok(Some(true)) => 1,
            Err(_) if true => 2,
        }
    """)
    d = only(r, "E401")
    assert d.message.endswith("missing `Ok(None)`, `Ok(Some(false))`, `Err(_)`")


def test_missing_cases_that_make_up_a_whole_column_fold_into_one_wildcard():
    r = check("""
        type E { A, B }
        pub flow main(p: (E, Bool)) -> Int = match p {
            (A, true) => 1,
            (B, true) => 2,
        }
        pub flow list(xs: List<Bool>) -> Int = match xs {
            [] => 0,
            [true, ..] => 1,
        }
    """)
    assert [d.message.split("missing ")[1] for d in r.diagnostics] == ["`(_, false)`", "`[false, ..]`"]


def test_too_many_missing_cases_are_counted_and_the_fix_ends_with_a_wildcard():
    ctors = ", ".join(f"C{i}(Bool)" for i in range(40))
    src = f"type E {{ {ctors} }}\npub flow main(v: (E, E)) -> Int = match v {{\n    (C1(true), C2(_)) => 1,\n}}\n"
    (d,) = check_source(src).diagnostics
    assert "and more than 56 more" in d.message
    (fix,) = d.fixes
    assert not fix.safe
    assert fix.edits[0].text.endswith("    _ => todo,\n")
    fixed = apply_fixes({"main.flow": src}, [d], unsafe=True)["main.flow"]
    assert check_source(fixed.replace("todo", "0")).diagnostics == []


def test_an_unreachable_arm_notes_the_catch_all_above_it():
    r = check("""
        pub flow main(x: Option<Int>) -> Int = match x {
            Some(n) => n,
            _ => 0,
            None => 1,
        }
    """)
    d = only(r, "E402")
    assert [(n.message, n.span.line) for n in d.related] == [
        ("this arm above matches every value it matches", 4)
    ]


def test_an_arm_made_unreachable_by_several_notes_each_of_them_and_no_other():
    r = check("""
        pub flow main(x: Option<Bool>) -> Int = match x {
            Some(true) => 1,
            None => 0,
            Some(false) => 2,
            Some(_) => 3,
        }
    """)
    d = only(r, "E402")
    assert [n.span.line for n in d.related] == [3, 5]  # not `None`, which matches none of it


def test_the_arms_fix_follows_a_single_line_match():
    src = "type E { A, B, C }\npub flow main(e: E) -> Int = match e { A => 1, }\n"
    (d,) = check_source(src).diagnostics
    fixed = apply_fixes({"main.flow": src}, [d], unsafe=True)["main.flow"]
    assert fixed.endswith("match e { A => 1, B => todo, C => todo }\n")


def _unreachable_lines(decls, ty, arms):
    """The 1-based positions in `arms` of the arms E402 reports, in a match of one per line."""
    src = (
        decls
        + f"pub flow main(v: {ty}) -> Int = match v {{\n"
        + "".join(f"    {a} => 0,\n" for a in arms)
        + "}\n"
    )
    first = src.count("\n", 0, src.index("match v {")) + 2
    return {d.span.line - first + 1 for d in check_source(src).diagnostics if d.code == "E402"}


def _inserted(decls, ty, arms):
    src = (
        decls
        + f"pub flow main(v: {ty}) -> Int = match v {{\n"
        + "".join(f"    {a} => 0,\n" for a in arms)
        + "}\n"
    )
    (d,) = [d for d in check_source(src).diagnostics if d.code == "E401"]
    return [x.strip(" ,\n") for x in d.fixes[0].edits[0].text.split("=> todo")[:-1]]


@pytest.mark.parametrize(
    "decls, ty, arms, values",
    [
        (
            "",
            "(Bool, Bool, Bool)",
            ["(true, true, _)", "(false, _, false)"],
            [
                f"({a}, {b}, {c})"
                for a in ("true", "false")
                for b in ("true", "false")
                for c in ("true", "false")
            ],
        ),
        (
            "",
            "Option<Option<Bool>>",
            ["Some(Some(true))"],
            ["None", "Some(None)", "Some(Some(true))", "Some(Some(false))"],
        ),
        (
            "type E { A, B, C }\n",
            "(E, Option<Bool>)",
            ["(A, Some(_))", "(_, None)", "(B, Some(true))"],
            [f"({e}, {o})" for e in "ABC" for o in ("None", "Some(true)", "Some(false)")],
        ),
    ],
)
def test_every_value_no_arm_matches_is_matched_by_exactly_one_inserted_arm(decls, ty, arms, values):
    inserted = _inserted(decls, ty, arms)
    for v in values:
        # an arm for the one value `v`, after others, is unreachable when one of them matches it
        matched_before = len(arms) + 1 in _unreachable_lines(decls, ty, arms + [v])
        by = [p for p in inserted if _unreachable_lines(decls, ty, [p, v]) == {2}]
        assert len(by) == (0 if matched_before else 1), (v, by)


def test_exactly_as_many_missing_cases_as_the_limit_is_not_a_truncation():
    ctors = ", ".join(f"C{i}" for i in range(65))
    src = f"type E {{ {ctors} }}\npub flow main(e: E) -> Int = match e {{\n    C0 => 1,\n}}\n"
    (d,) = check_source(src).diagnostics
    assert d.message.endswith("`C8` and 56 more")
    text = d.fixes[0].edits[0].text
    assert text.count("=> todo") == 64 and "_ =>" not in text
