"""A value's text is a Flow expression that reads back as the same value (docs/spec/data.md "Text"):
written into a program where its type is expected, with std's modules in use, it evaluates to an
equal value whose text is the same again."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowrt as rt
from flow_run import flow_program

USES = 'use "std@v1/set"\nuse "std@v1/instant"\nuse "std@v1/decimal"\nuse "std@v1/duration"\n'

TYPES = """\
pub type Shape { Circle { radius: Int }, Pair(Int, Text), Dot, Wrap { _0: Int }, Both { _1: Int, b: Text } }
pub type Item { name: Text, price: Decimal, tags: Set<Text> }
pub type Empty {}
// keeps every `use` used whatever the texts below need
pub flow uses(s: Set<Int>, i: Instant) -> (Int, Int, Int, Int) =
    (set.size(s), instant.to_unix_nanos(i), decimal.floor(0.5), duration.to_nanos(1s))
"""

# What each expression computes is shown, then that text is read back.
SOURCES = {
    "Shape": [
        "Circle { radius: -3 }",
        'Pair(1, "x")',
        "Dot",
        "Wrap { _0: 3 }",
        'Both { _1: 1, b: "\\u{7}" }',
    ],
    "Item": [
        'Item { name: "pen \\"x\\"", price: decimal.from_int(2) * 1.50, tags: set.from_list(["b", "a"]) }'
    ],
    "Empty": ["Empty {}"],
    "Set<Int>": ["set.from_list([3, 1, 3])", "set.empty()"],
    "Decimal": ["decimal.round(2.5, 0)", "decimal.from_int(-7)", "-0.25", "decimal.from_int(10) / 4.0"],
    "Instant": ["instant.from_unix_nanos(1700000000500000000)", "instant.from_unix_nanos(-1)"],
    "Duration": ["-(90s)", "1500ns", "duration.from_millis(60000)"],
    "Dict<Int, Text>": ['[2: "b", 1: "a"]', "[:]"],
    "(Option<Int>, Result<Text, Int>, Bytes, Bool, ())": ['(None, Err(-1), b"\\x00\\xff\\"", true, ())'],
    "List<(Int, Text)>": ['[(1, "a"), (-2, "")]'],
    "(Int,)": ["(1,)"],  # a one-element tuple keeps its comma: `(1)` is the Int 1
    "List<((Text,), Option<(Int,)>)>": ['[(("a",), Some((2,)))]'],
    "Int": ["-5", "7 * 0", "-" + "7" * 4999 + "3"],  # 5,000 digits: beyond Python's int/str limit
}


def _main(cases: dict) -> str:
    """One function per case: `pub flow v3() -> T = expr`."""
    out = []
    for i, (typ, expr) in enumerate(cases):
        out.append(f"pub flow v{i}() -> {typ} = {expr}\n")
    return USES + TYPES + "".join(out)


def _values(tmp_path, cases: list, sub: str) -> list:
    prog = flow_program(tmp_path / sub, {"main.flow": _main(cases)})
    values = []
    for i in range(len(cases)):
        out, _ = prog.run(f"v{i}")
        assert type(out) is rt.RunCompleted, out
        values.append(out.value)
    return values


def test_the_text_of_every_kind_of_value_reads_back_as_the_same_value(tmp_path):
    cases = [(typ, expr) for typ, exprs in SOURCES.items() for expr in exprs]
    texts = [rt.show(v) for v in _values(tmp_path, cases, "made")]
    assert texts[3] == "Wrap { _0: 3 }" and texts[6] == "Empty {}"  # named payloads stay named
    # one program computing both, so both are values of the same classes
    both = _values(tmp_path, cases + [(typ, text) for (typ, _), text in zip(cases, texts)], "read")
    values, back = both[: len(cases)], both[len(cases) :]
    assert back == values
    assert [rt.show(v) for v in back] == texts


# Ints of any size: more than 4,300 digits (Python's int/str limit) read back too
_ints = st.integers() | st.integers(10**4300, 10**5000) | st.integers(-(10**5000), -(10**4300))
_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_decimals = st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6)
_scalars = st.tuples(
    _ints,
    _decimals | st.integers(-999, 999).map(Decimal),
    _texts,
    st.binary(max_size=8),
    st.integers(-(10**15), 10**15).map(rt.Duration),
    st.integers(-(10**18), 10**18).map(rt.Instant),
    st.frozensets(st.integers(-50, 50), max_size=4).map(rt.set_of),
    st.dictionaries(_texts, st.integers(), max_size=3).map(rt.dict_of),
    st.lists(_texts, max_size=3).map(rt.list_of),
    st.tuples(_ints),
)
_SCALAR_TYPE = "(Int, Decimal, Text, Bytes, Duration, Instant, Set<Int>, Dict<Text, Int>, List<Text>, (Int,))"


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_scalars, min_size=1, max_size=8))
def test_generated_values_read_back_from_their_text(tmp_path_factory, values):
    tmp = tmp_path_factory.mktemp("v")
    texts = [rt.show(v) for v in values]
    back = _values(tmp, [(_SCALAR_TYPE, t) for t in texts], "read")
    assert back == values
    assert [rt.show(v) for v in back] == texts
