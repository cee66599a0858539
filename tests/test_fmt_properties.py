"""Hypothesis: for generated Flow programs that parse, `fmt` gives text that parses to the same
tree (`ast.to_data`: spans and ids aside), keeps every comment, is a fixed point, and does not
depend on the horizontal spacing of its input. Programs come from a small grammar-shaped
generator (random nesting, parentheses, comments and blank lines, names long enough to force
line breaks) and from token mutations of a real program, keeping those that still parse."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from flow2py.format import format_source
from flow2py.format.comments import find_comments
from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module
from repo_paths import SUPPORT_MAIN
from test_parser_fuzz import mutated

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)

NAMES = ["x", "y", "items", "a_fairly_long_name_that_forces_the_layout_to_break_lines"]
UPPERS = ["A", "Ok", "Some", "geo.Point"]
LITERALS = [
    "0",
    "42",
    "0xff",
    "1_000",
    "2.5",
    "250ms",
    '"text"',
    '"a\\n\\u{41}"',
    'b"\\x00"',
    "true",
    "false",
    "()",
]
OPS = ["||", "&&", "==", "!=", "<", "<=", "++", "+", "-", "*", "/", "%"]
PATTERNS = [
    "_",
    "v",
    "1",
    "-1",
    '"s"',
    "Some(v)",
    "Ok(A | B)",
    "P { a, b: _, .. }",
    "geo.Point { x }",
    "(a, b)",
    "(a,)",
    "[first, ..rest]",
    "[]",
    "[_, ..]",
    "A | B",
    "(A | B) | C",
    "()",
]
COMMENT = st.sampled_from(["", "", " // a comment", " //x", '  // why: {this} "quoted"'])


def _call(t):
    callee, args, trailing = t
    return f"{callee}({', '.join(args)}{',' if trailing and args else ''})"


def _record(t):
    ctor, fields = t
    return f"{ctor} {{ {', '.join(f'{k}: {v}' if v else k for k, v in fields)} }}"


def _block(stmts):
    lines = "".join(f"    {s}{c}\n{blank}" for s, c, blank in stmts)
    return "{\n" + lines + "}"


def _extend(e):
    stmt = st.one_of(
        e,
        st.tuples(st.sampled_from(PATTERNS + NAMES), e).map(lambda t: f"let {t[0]} = {t[1]}"),
        st.tuples(e, e).map(lambda t: f"guard ({t[0]}) else {{ return {t[1]} }}"),
    )
    block = st.lists(st.tuples(stmt, COMMENT, st.sampled_from(["", "", "\n", "\n\n"])), max_size=3).map(
        _block
    )
    return st.one_of(
        st.tuples(e, st.sampled_from(OPS), e).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        st.tuples(e, st.sampled_from(OPS), e).map(" ".join),
        st.tuples(st.sampled_from(["-", "!"]), e).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(
            st.sampled_from(NAMES + ["list.map", "task.race"]), st.lists(e, max_size=4), st.booleans()
        ).map(_call),
        st.tuples(e, st.lists(e, max_size=2)).map(lambda t: f"({t[0]})({', '.join(t[1])})"),
        e.map(lambda x: f"({x}).field"),
        e.map(lambda x: f"({x})?"),
        st.tuples(e, e).map(lambda t: f"({t[0]}) ? ({t[1]})"),
        st.tuples(e, st.sampled_from(NAMES)).map(lambda t: f"({t[0]}) ? {t[1]}"),
        e.map(lambda x: f"flow(v) = {x}"),
        e.map(lambda x: f"flow(v: Int, _) -> Int !tool = {x}"),
        st.lists(e, max_size=4).map(lambda xs: f"[{', '.join(xs)}]"),
        st.lists(st.tuples(e, e), max_size=3).map(
            lambda kv: f"[{', '.join(f'{k}: {v}' for k, v in kv)}]" if kv else "[:]"
        ),
        st.lists(e, min_size=1, max_size=3).map(lambda xs: f"({', '.join(xs)},)"),
        st.tuples(
            st.sampled_from(["P", "geo.Point"]),
            st.lists(st.tuples(st.sampled_from("abc"), st.one_of(st.just(""), e)), max_size=3),
        ).map(_record),
        st.tuples(e, block, block).map(lambda t: f"if ({t[0]}) {t[1]} else {t[2]}"),
        st.tuples(e, block).map(lambda t: f"if ({t[0]}) {t[1]}"),
        st.tuples(e, st.lists(st.tuples(st.sampled_from(PATTERNS), e, COMMENT), min_size=1, max_size=3)).map(
            lambda t: f"match ({t[0]}) {{\n" + "".join(f"    {p} => {b},{c}\n" for p, b, c in t[1]) + "}"
        ),
        block,
        e.map(lambda x: f"return {x}"),
    )


EXPRS = st.recursive(st.sampled_from(NAMES + UPPERS + LITERALS), _extend, max_leaves=25)


@st.composite
def programs(draw):
    decls = []
    for i in range(draw(st.integers(1, 3))):
        lead = draw(st.sampled_from(["", "// about the next declaration\n", "\n\n"]))
        body = draw(EXPRS)
        form = draw(st.sampled_from(["= ", "= {\n    ", "{ "]))
        close = {"= ": "", "= {\n    ": "\n}", "{ ": " }"}[form]
        decls.append(f"{lead}flow f{i}(x: Int, g: (Int) -> Int !tool) -> Int !tool {form}{body}{close}\n")
    types = draw(
        st.sampled_from(
            [
                "",
                "pub type P<T> { pub a: Int, b: List<T> } // a record\n",
                "type E { A, B(Int), C { x: Text } }\n",
            ]
        )
    )
    return types + "".join(decls)


def _check_fmt(text: str) -> None:
    module, diags = parse_module(text, "gen.flow")
    assume(not diags)
    out = format_source(text, "gen.flow")
    again, diags = parse_module(out, "gen.flow")
    assert not diags, (text, out, diags[:1])
    assert ast.to_data(again) == ast.to_data(module)
    assert Counter(c.text for c in find_comments(out)) == Counter(c.text for c in find_comments(text))
    assert format_source(out, "gen.flow") == out


@SETTINGS
@given(programs())
def test_generated_programs_keep_their_tree_and_comments_and_reach_a_fixed_point(text):
    _check_fmt(text)


@SETTINGS
@given(programs())
def test_the_layout_ignores_horizontal_spacing(text):
    assume(not parse_module(text, "gen.flow")[1])
    spaced = text.replace(", ", " ,  ").replace("(", "( ").replace(" = ", "   =   ")
    assume(not parse_module(spaced, "gen.flow")[1] and '"' not in text and "//" not in text)
    assert format_source(spaced, "gen.flow") == format_source(text, "gen.flow")


MAIN = SUPPORT_MAIN.read_text(encoding="utf-8")
PIECES = ["{", "}", "(", ")", ",", "\n", ";", "?", ".", "|", "!", "-", "x", "X", "1", "_", "// c\n", "\n\n"]


@SETTINGS
@given(st.data())
def test_token_mutations_of_a_real_program_that_still_parse(data):
    _check_fmt(mutated(data, MAIN, PIECES, 4))
