"""A syntax error does not switch off checking (issue 13, point 1): every declaration that
parsed is checked, in every module, and only what the broken part explains goes unreported
(flow2py/syntax/broken.py, docs/spec/diagnostics.md E004 "Checking goes on")."""

from check_helpers import check, codes, write_program
from flow2py.check import check_program
from flow2py.syntax.parser import parse


def _where(result):
    return [(d.code, d.span.line) for d in result.diagnostics]


def test_an_elif_does_not_hide_a_missing_tool_mark_later_in_the_file_nor_a_clean_module(tmp_path):
    lines = ["@tool pub flow fetch(url: Text) -> Result<Text, Text>", ""]
    lines += ["flow grade(score: Int) -> Text = {", "    if score > 90 {", '        "a"', "    }"]
    lines += [""] * (11 - len(lines))
    lines += ['    elif score > 50 { "b" } else { "c" }', "}"]  # the `elif` on line 12
    lines += [""] * (29 - len(lines))
    lines += ['flow page(url: Text) -> Text = match fetch(url) { Ok(b) => b, Err(_) => "" }']  # line 30
    lines += ['use "./other"', 'pub flow main() -> Text !tool = grade(other.n()) ++ page("u")']
    main = write_program(
        tmp_path, {"main.flow": "\n".join(lines) + "\n", "other.flow": 'pub flow n() -> Int = "one"\n'}
    )
    r = check_program(main)
    assert r.program is None
    assert ("E012", 12) in _where(r) and ("E301", 30) in _where(r)
    assert [(d.code, d.span.file.endswith("other.flow")) for d in r.diagnostics if d.code == "E201"] == [
        ("E201", True)
    ]


def test_a_function_whose_body_does_not_parse_keeps_its_signature_for_its_callers():
    r = check("""
        pub flow total(xs: List<Int>) -> Int = {
            let = xs
            0
        }
        pub flow main() -> Int = total("not a list")
    """)
    assert codes(r) == ["E004", "E201"]
    assert r.diagnostics[1].span.line == 6


def test_a_broken_statement_costs_only_itself_and_the_rest_of_its_body_is_checked():
    r = check("""
        pub flow f(n: Int) -> Int = {
            let unused = missing_name + "x"
            let = n + missing_too
            n
        }
    """)
    assert _where(r) == [("E404", 3), ("E101", 3), ("E004", 4)]
    assert "missing_name" in r.diagnostics[1].message


def test_nothing_inside_a_broken_body_is_reported_when_no_statement_of_it_can_be_the_hole():
    r = check("""
        pub flow f(n: Int) -> Int = (missing_name + "x") + + n
    """)
    assert codes(r) == ["E004"]


def test_names_of_declarations_that_did_not_parse_are_not_unknown():
    r = check("""
        type Shape { Circle(Decimal), Square(Decimal, }
        flow helper( -> Int = 1
        pub flow area(s: Shape) -> Decimal = match s { Circle(r) => r, _ => 0.0 }
        pub flow main() -> Int = helper()
    """)
    assert codes(r) == ["E004", "E004"]


def test_a_member_of_another_module_that_did_not_parse_is_not_unknown(tmp_path):
    main = write_program(
        tmp_path,
        {
            "main.flow": 'use "./lib"\npub flow main() -> Int = lib.broken(1) + lib.missing()\n',
            "lib.flow": "pub flow broken(n: Int -> Int = n\npub flow fine() -> Int = 1\n",
        },
    )
    r = check_program(main)
    assert sorted(d.code for d in r.diagnostics) == ["E004", "E110"]
    assert "missing" in next(d.message for d in r.diagnostics if d.code == "E110")


def test_what_only_a_broken_part_uses_is_not_unused_but_the_rest_is():
    r = check("""
        use "std@v1/text"
        use "std@v1/int"
        flow helper(n: Int) -> Int = n
        flow lonely() -> Int = 2
        pub flow main(x: Int, y: Int) -> Int = {
            let = text.length(helper(y))
            x
        }
    """)
    # `text` and `helper` are written in the broken body, so may be used; `int` and `lonely` are not
    assert sorted((d.code, d.span.line) for d in r.diagnostics) == [("E004", 7), ("E112", 3), ("E405", 5)]


def test_a_binding_used_only_inside_a_for_loop_is_not_unused():
    r = check("""
        pub flow main(xs: List<Int>) -> Int = {
            let step = 2
            for x in xs {
                total = total + x * step
            }
            0
        }
    """)
    assert codes(r) == ["E012"]


def test_a_clean_declaration_beside_a_broken_one_is_checked_in_full():
    r = check("""
        pub flow broken() -> Int = (
        pub flow wrong() -> Text = 1
        pub flow main() -> Int = 1
    """)
    assert codes(r) == ["E005", "E201"]


def test_a_head_in_another_language_style_does_not_break_the_declaration_above_it():
    r = check("""
        pub flow main() -> Int = old(1)
        fn old(x: Int) -> Int {
            x
        }
    """)
    assert codes(r) == ["E012"]
    assert r.diagnostics[0].span.line == 3


def test_the_parse_record_names_what_a_broken_declaration_would_declare():
    p = parse(
        'use "./lib\ntype T { A(Int), B(Int, }\nflow f( -> Int = 1\nflow g() -> Int = (\n',
        "m.flow",
    )
    assert {"T", "A", "B", "f"} <= p.broken.names
    assert "g" not in p.broken.names  # its signature parsed: it is in the tree, with a hole for a body
    assert [d.name for d in p.module.decls] == ["g"]


def test_a_module_without_syntax_errors_records_nothing_broken():
    p = parse("pub flow f(n: Int) -> Int = n\n", "m.flow")
    assert not p.broken and p.diagnostics == []


def test_a_program_whose_only_error_is_a_habit_with_a_safe_fix_is_still_refused():
    r = check("""
        pub flow main(x: Int) -> Int = if x > 0 { 1 } elif x < 0 { 2 } else { 3 }
    """)
    assert codes(r) == ["E012"] and r.program is None


def test_a_broken_argument_costs_only_itself_and_the_call_is_not_miscounted():
    r = check("""
        pub flow f(xs: List<Int>) -> Int = xs.fold(0, flow(a, b) = a + + b) + "x"
        pub flow two(a: Int, b: Int) -> Int = a + b
        pub flow g(n: Int) -> Int = two(n n) + "y"
    """)
    assert _where(r) == [("E004", 2), ("E201", 2), ("E004", 4), ("E201", 4)]


def test_an_arm_whose_pattern_is_broken_is_left_out_without_a_missing_arm():
    r = check("""
        pub type T { A(Int), B, C }
        pub flow f(t: T) -> Int = match t {
            A(x x) => 1,
            B => "b",
            C => 3,
        }
    """)
    assert _where(r) == [("E004", 4), ("E201", 5)]


def test_a_name_written_in_a_broken_statement_is_not_unknown_after_it():
    r = check("""
        pub flow f(n: Int) -> Int = {
            let (a, b)) = (n, n)
            a + b + c
        }
    """)
    assert _where(r) == [("E004", 3), ("E101", 4)]
