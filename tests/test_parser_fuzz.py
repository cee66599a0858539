"""The parser never raises: arbitrary text and mutations of valid programs give (Module, list)."""

from __future__ import annotations


from hypothesis import HealthCheck, given, settings, strategies as st

from flow2py.diagnostics import Diagnostic
from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module
from repo_paths import SUPPORT_MAIN

MAIN = SUPPORT_MAIN.read_text(encoding="utf-8")
EXTRA = (
    "type P<T> { pub a: Int, b: List<T> }\ntype E { A, B(Int), C { x: Text } }\n"
    'flow g(x: Int) -> Int = {\n    let [a, ..rest] = xs\n    let d = ["k": 1.5, "j": 250ms]\n'
    '    xs\n        .map(flow(v) = v ? f)\n    P { ..p, a: -1 }\n    b"\\x00" == "\\u{41}"\n}\n'
)
SAMPLE = MAIN + EXTRA
PIECES = [
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "\n",
    ";",
    "=",
    "=>",
    "->",
    "?",
    ".",
    "..",
    "|",
    "!tool",
    "flow",
    "let",
    "match",
    "if",
    "else",
    "guard",
    "return",
    "@tool",
    "type",
    "pub",
    '"',
    'b"',
    "x",
    "X",
    "1",
    "_",
    "//",
    "\\",
]

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(src: str) -> None:
    module, diags = parse_module(src, "fuzz.flow")
    assert isinstance(module, ast.Module)
    assert isinstance(diags, list) and all(isinstance(d, Diagnostic) for d in diags)
    for d in diags:
        assert 0 <= d.span.start <= d.span.end <= len(src) + 1


@SETTINGS
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(src):
    check(src)


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=80).map(" ".join))
def test_token_soup_never_raises(src):
    check(src)


@SETTINGS
@given(st.data())
def test_character_mutations_of_a_valid_program_never_raise(data):
    src = SAMPLE
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(src)))
        op = data.draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if op == "delete":
            src = src[:i] + src[i + 1 :]
        elif op == "insert":
            src = src[:i] + data.draw(st.sampled_from(PIECES + [chr(0), "\ud800", "€"])) + src[i:]
        else:
            j = data.draw(st.integers(i, min(len(src), i + 20)))
            src = src[:j] + src[i:j] + src[j:]
    check(src)


def mutated(data, text: str, pieces: list[str], most: int) -> str:
    """`text` with 1 to `most` of its words deleted, duplicated, or preceded by one of `pieces`."""
    words = text.replace("\n", " \n ").split(" ")
    for _ in range(data.draw(st.integers(1, most))):
        i = data.draw(st.integers(0, len(words) - 1))
        op = data.draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if op == "delete":
            del words[i]
        elif op == "insert":
            words.insert(i, data.draw(st.sampled_from(pieces)))
        else:
            words.insert(i, words[i])
    return " ".join(words)


@SETTINGS
@given(st.data())
def test_token_mutations_of_a_valid_program_never_raise(data):
    check(mutated(data, SAMPLE, PIECES, 5))


def test_deep_nesting_is_a_diagnostic_not_a_crash():
    for opener, closer in (("(", ")"), ("[", "]"), ("{", "}"), ("f(", ")")):
        src = "flow f() -> Int = " + opener * 20000 + "1" + closer * 20000
        check(src)
    check("flow f() -> Int = " + "-" * 20000 + "1")
    check("flow f() -> Int = " + "[" * 5000)


def test_binary_garbage_never_raises():
    check(bytes(range(256)).decode("latin-1") * 3)
    check("\x00\ufeff\r\n\t" * 50)
