"""Property tests: the checker never raises, whatever it is given."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from check_helpers import SEEDS, SUPPORT
from flow2py.check import check_source

VALID = []
for path in (SUPPORT, SEEDS):
    with open(path, encoding="utf-8") as f:
        VALID.append((path, f.read()))
STD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "std")
for name in sorted(os.listdir(STD)):
    if name.endswith(".flow"):
        with open(os.path.join(STD, name), encoding="utf-8") as f:
            VALID.append((os.path.join(STD, "copy_" + name), f.read()))

TOKENS = [
    "flow",
    "pub",
    "type",
    "let",
    "match",
    "if",
    "else",
    "guard",
    "return",
    "use",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "=>",
    "->",
    "?",
    "!tool",
    "+",
    "++",
    "==",
    "x",
    "Ok",
    "Err",
    "_",
    "1",
    '"a"',
    "Int",
    "Text",
    "List<Int>",
    "\n",
    " ",
    ".",
    "|",
    "..",
    "@tool",
    '@lang("x")',
    "task.race",
]


def _check(text, path):
    r = check_source(text, path)
    assert isinstance(r.diagnostics, list)
    assert (r.program is None) == bool(r.diagnostics)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(text):
    _check(text, "fuzz_main.flow")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VALID), st.data())
def test_mutated_valid_programs_never_raise(program, data):
    path, text = program
    n = len(text)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, max(n - 1, 0)))
        j = data.draw(st.integers(i, min(n, i + 12)))
        kind = data.draw(st.sampled_from(["delete", "insert", "replace"]))
        tok = data.draw(st.sampled_from(TOKENS))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + tok + text[i:]
        else:
            text = text[:i] + tok + text[j:]
        n = len(text)
    _check(text, path)
