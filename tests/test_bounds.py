"""The bounds of admitted data, unit by unit (flowrt.data.bounds; docs/spec/data.md "Bounds of admitted
data"): the JSON text measure, the paths it names, the walk of Python values, Decimal digits, and
a fuzz test that bounded parsing only ever returns what `json.loads` would, or refuses cleanly."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowrt as rt
from flowrt import T, DecodeError, decode
from flowrt.data import bounds
from flowrt.data.bounds import MAX_DEPTH, decimal_digits, loads_exact, preview, walk_depth


class Chain(rt.Enum):
    __slots__ = ()


@rt.variant("bounds::Chain", "End", tag=0, fields=())
class End(Chain):
    __slots__ = ()


@rt.variant("bounds::Chain", "Link", tag=1, fields=("_0",))
class Link(Chain):
    __slots__ = ("_0",)


rt.field_types(Link, lambda: (T.Named(Chain),))
CHAIN = T.Named(Chain)


def refused(text) -> str:
    with pytest.raises(DecodeError) as e:
        loads_exact(text)
    return str(e.value)


def test_the_bounds_are_the_ones_the_spec_states():
    assert (bounds.MAX_TEXT, bounds.MAX_DEPTH, bounds.MAX_DIGITS) == (64 * 2**20, 128, 4300)


def test_nesting_is_measured_outside_strings_only():
    inside = '"' + "[{" * 1000 + '\\"[[[' + '"'
    assert loads_exact("[" + inside + "]") == ["[{" * 1000 + '"[[[']
    assert loads_exact("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert refused("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).endswith(
        "...: nested deeper than 128 arrays/objects"
    )


def test_the_path_of_too_deep_nesting_names_keys_and_indices():
    text = '{"a b": [1, {"c": [' + "[" * 200 + "]" * 200 + "]}]}"
    assert refused(text) == '$["a b"][1].c[0][0][0][0][0]...: nested deeper than 128 arrays/objects'


def test_unterminated_and_escaped_strings_are_refused_as_not_json():
    for text in ['"abc', '"' + '\\"' * 50_000, "[" * 100 + '"\\', '["a", "b\\', '{"k": "' + "\\\\" * 1000]:
        with pytest.raises(ValueError):
            loads_exact(text)


def test_duplicate_keys_and_long_numbers_are_refused_with_their_path():
    assert refused('[{"a": 1}, {"a": 1, "b": {"x": 1, "x": 1}}]') == '$[1].b: duplicate key "x"'
    assert (
        refused('{"k": [0, -1' + "0" * 4300 + "]}")
        == "$.k[1]: a number of 4301 digits; at most 4300 are admitted"
    )
    assert refused('{"k": 1.' + "5" * 4300 + "}") == "$.k: a number of 4301 digits; at most 4300 are admitted"
    assert (
        refused('{"k": 1e99999999999999999999999}')
        == "$.k: the number 1e99999999999999999999999 is out of range"
    )
    assert loads_exact("-1" + "0" * 4299) == -(10**4299)


def test_a_text_over_the_size_bound_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_TEXT", 10)
    assert refused('["abcdefgh"]') == "$: a JSON text of 12 characters; at most 10 are admitted"


def test_bytes_are_read_as_utf8_and_nan_is_not_json():
    assert loads_exact('{"t": "é"}'.encode()) == {"t": "é"}
    with pytest.raises(ValueError):
        loads_exact(b'"\xff"')
    with pytest.raises(ValueError):
        loads_exact("[NaN]")


@pytest.mark.parametrize(
    "text, digits",
    [
        ("0", 1),
        ("-0.00", 3),
        ("0E+5", 1),
        ("1.50", 3),
        ("1E+3", 4),
        ("0.001", 4),
        ("123.456", 6),
        ("1e4299", 4300),
        ("1e-4299", 4300),
        ("1e999999999", 1_000_000_000),
        ("-12e-1", 2),
    ],
)
def test_decimal_digits_counts_the_written_out_form(text, digits):
    d = Decimal(text)
    assert decimal_digits(d) == digits
    if digits < 10_000:
        assert decimal_digits(d) == sum(c.isdigit() for c in format(d, "f"))


def test_a_recursive_runtime_value_is_walked_and_a_deep_one_refused():
    v = End.INSTANCE
    for _ in range(MAX_DEPTH):
        v = Link(v)
    assert decode(CHAIN, v) is v
    deeper = Link(v)
    with pytest.raises(DecodeError) as e:
        decode(CHAIN, deeper)
    assert str(e.value) == "$.Link.Link.Link.Link.Link.Link.Link.Link...: nested deeper than 128 levels"
    with pytest.raises(DecodeError):
        rt.compile_decoder(CHAIN)(deeper)


def test_walk_depth_refuses_a_value_that_contains_itself_and_names_the_path():
    d: dict = {"a": [1, 2]}
    d["a"].append(d)
    with pytest.raises(DecodeError) as e:
        walk_depth(d)
    assert str(e.value) == "$.a[2].a[2].a[2].a[2]...: nested deeper than 128 levels"


def test_a_type_that_does_not_refer_to_itself_bounds_decoding_whatever_the_value():
    v: list = []
    v.append(v)
    with pytest.raises(DecodeError) as e:
        decode(T.ListOf(T.ListOf(T.INT)), v)
    assert str(e.value) == "$[0][0]: expected Int, got " + "[" * 57 + "..."


def test_error_messages_show_a_bounded_preview_of_any_value():
    assert preview([1, "a", None, True, 1.5, {"k": [2]}]) == '[1, "a", null, true, 1.5, {"k": [2]}]'
    assert preview(list(range(10**6))).endswith("...") and len(preview(list(range(10**6)))) == 60
    assert preview(10**100_000) == "<an integer of about 100001 digits>"
    assert preview(Decimal("1e999999999")) == "<a Decimal of 1000000000 digits written out>"
    assert preview("x" * 10**6) == '"' + "x" * 56 + "..."


JSONISH = st.text(alphabet='[]{}",:\\ 0123456789.eE-+tfnulrsa\u00e9', max_size=120)


@settings(max_examples=400, deadline=None)
@given(JSONISH)
def test_bounded_parsing_agrees_with_json_loads_or_refuses_cleanly(text):
    try:
        expected = json.loads(text, parse_float=Decimal)
    except (ValueError, RecursionError):
        expected = ValueError
    try:
        got = loads_exact(text)
    except DecodeError as e:  # a bound: only a duplicate key can be broken in 120 characters
        assert e.message.startswith("duplicate key ")
        return
    except ValueError:
        assert expected is ValueError
        return
    assert got == expected
