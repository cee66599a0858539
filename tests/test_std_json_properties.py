"""Properties of std@v1/json's render and parse (flowrt.data.jsonvalue): parse undoes render for
every Value, and render writes what Python's json writes (compact, sorted keys) for every text
both accept, up to how a number is written."""

from __future__ import annotations

import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

import flowrt as rt
from flowrt.data.jsonvalue import from_plain, json_parse, json_render

_numbers = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30),
)
_scalars = st.one_of(st.none(), st.booleans(), _numbers, st.text(max_size=12))
_plain = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)
_no_fractions = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_plain)
def test_parse_undoes_render_for_every_value(plain):
    v = from_plain(plain)
    text = json_render(v)
    back = json_parse(text)
    assert back == rt.Ok(v)
    assert json_render(back._0) == text  # the same digits, not only an equal number


@settings(max_examples=300, deadline=None)
@given(_no_fractions, st.sampled_from([None, 0, 2]), st.booleans())
def test_render_writes_what_python_json_writes(plain, indent, ascii_only):
    text = json.dumps(plain, indent=indent, ensure_ascii=ascii_only)  # any layout Python writes
    parsed = json_parse(text)
    assert type(parsed) is rt.Ok, parsed
    expected = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert json_render(parsed._0) == expected


@settings(max_examples=200, deadline=None)
@given(_plain)
def test_render_agrees_with_python_json_up_to_the_number_form(plain):
    text = json_render(from_plain(plain))
    python = json.loads(text, parse_float=Decimal)  # Python's json reads what render writes
    assert from_plain(python) == from_plain(plain)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_parse_accepts_exactly_what_python_json_accepts_within_the_bounds(text):
    try:  # Python's json, held to the bounds parse keeps: no duplicate key, no lone surrogate
        python_ok = _unicode(json.loads(text, parse_constant=_refuse, object_pairs_hook=_distinct))
    except ValueError:
        python_ok = False
    got = json_parse(text)
    assert (type(got) is rt.Ok) == python_ok, (text, got)
    if type(got) is rt.Err:
        at, line, column, message = got._0
        assert 0 <= at <= len(text) and line >= 1 and column >= 1 and message


def _refuse(name):
    raise ValueError(name)


def _distinct(pairs):
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key")
    return dict(pairs)


def _unicode(x) -> bool:
    if type(x) is str:
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in x)
    if type(x) is list:
        return all(map(_unicode, x))
    if type(x) is dict:
        return all(_unicode(k) and _unicode(v) for k, v in x.items())
    return True
