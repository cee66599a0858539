"""Property: a syntax error costs only the statement it is in (flow2py/syntax/recover.py,
docs/spec/diagnostics.md E004 "Checking goes on"). Breaking one statement of a valid program with
a stray token reports syntax errors and nothing else: no checker diagnostic is a cascade of the
hole the broken statement leaves; breaking a program that has mistakes adds none to the checker's
(it may report fewer: those the hole hides)."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from check_helpers import ROOT, SEEDS, SUPPORT
from flow2py.check import check_source

INLINE = """\
@tool
pub flow fetch(url: Text) -> Result<Text, Text>

pub type Shape { Circle(Decimal), Square(Decimal), Dot }

pub type Point { pub x: Int, pub y: Int }

pub flow area(s: Shape) -> Decimal = match s {
    Circle(r) => r * r * 3.14,
    Square(side) => side * side,
    Dot => 0.0,
}

pub flow sizes(shapes: List<Shape>, limit: Int) -> List<Int> = {
    let areas = shapes.map(flow(s) = area(s))
    let big = areas.filter(flow(a) = a > 1.0)
    let p = Point { x: big.length(), y: limit }
    guard p.x < limit else { return [p.x] }
    let (first, second) = (p.x + 1, p.y * 2)
    let label = if first > second { "first" } else { "second" }
    let n = match label {
        "first" => first,
        _ => second,
    }
    [n, p.y]
}

pub flow main(url: Text) -> Text !tool = {
    let page = fetch(url)
    let text = match page {
        Ok(body) => body,
        Err(_) => "failed",
    }
    let counts = sizes([Circle(1.5), Dot], 3)
    text ++ counts.length().to_text()
}
"""


def _programs():
    out = [("inline_main.flow", INLINE)]
    for path in (SEEDS, SUPPORT):
        with open(path, encoding="utf-8") as f:
            out.append((path, f.read()))
    return out


PROGRAMS = _programs()
STRAY = [")", "]", "$", "=> =>", ", ,", "let", "`"]


def _body_lines(text: str) -> list[int]:
    """Indices of the lines inside a function body that hold code (not a comment)."""
    lines = text.split("\n")
    return [
        k
        for k, line in enumerate(lines)
        if line.startswith("    ") and line.strip() and not line.strip().startswith("//")
    ]


def test_the_programs_are_valid():
    for path, text in PROGRAMS:
        assert check_source(text, path).diagnostics == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PROGRAMS), st.data())
def test_a_stray_token_in_one_statement_reports_only_syntax_errors(program, data):
    path, text = program
    broken, line = _break_one_statement(data, text)
    r = check_source(broken, path)
    assert r.program is None
    cascades = [d for d in r.diagnostics if not d.code.startswith("E0")]
    assert cascades == [], (line, [(d.code, d.span.line, d.message) for d in cascades])


def _break_one_statement(data, text: str) -> tuple[str, str]:
    """`text` with a stray token between two tokens of one line of a function body (not inside
    a text literal), and that line."""
    lines = text.split("\n")
    k = data.draw(st.sampled_from(_body_lines(text)))
    line = lines[k]
    indent = len(line) - len(line.lstrip())
    cuts = [
        c
        for c in range(indent + 1, len(line) + 1)
        if (c == len(line) or line[c] == " ") and line[:c].count('"') % 2 == 0
    ]
    c = data.draw(st.sampled_from(cuts))
    tok = data.draw(st.sampled_from(STRAY))
    lines[k] = line[:c] + " " + tok + line[c:]
    return "\n".join(lines), lines[k]


#: golden cases with checker mistakes (and no syntax error) to break further
WITH_MISTAKES = [
    os.path.join(ROOT, "golden", "diagnostics", name + ".flow")
    for name in (
        "E101_unknown_scrutinee",
        "E201_expected_by_the_signature",
        "E403_non_unit_statement",
        "E206_pattern_field_used",
        "E301_undeclared_effect",
        "E404_unused_binding",
        "E407_value_used",
    )
]


def _mistakes():
    out = []
    for path in WITH_MISTAKES:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found = {(d.code, d.span.line) for d in check_source(text, path).diagnostics}
        out.append((path, text, frozenset(found)))
    return out


MISTAKES = _mistakes()


def test_the_programs_with_mistakes_have_checker_mistakes_only():
    for path, _text, found in MISTAKES:
        assert found and not any(code.startswith("E0") for code, _ in found), path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MISTAKES), st.data())
def test_a_stray_token_adds_no_checker_diagnostic_to_a_program_with_mistakes(program, data):
    # the stray token goes inside one line, so every other line keeps its number: each checker
    # diagnostic of the broken program is one of the program's own, at the same line
    path, text, found = program
    broken, line = _break_one_statement(data, text)
    r = check_source(broken, path)
    added = [d for d in r.diagnostics if not d.code.startswith("E0") and (d.code, d.span.line) not in found]
    assert added == [], (line, [(d.code, d.span.line, d.message) for d in added])


def test_the_property_is_not_vacuous_a_broken_statement_leaves_the_rest_checked():
    broken = INLINE.replace("let big = areas", "let big = ) areas").replace(
        "text ++ counts.length().to_text()", "text ++ counts.length()"
    )
    r = check_source(broken, os.path.join("x", "inline_main.flow"))
    assert [d.code for d in r.diagnostics] == ["E004", "E201"]
