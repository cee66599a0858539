"""Property: `compile_decoder(desc)` behaves exactly as `decode(desc, ...)`: the same value (and
the very same object where decode returns its input), or the same exception type, message and
path, on generated values of generated types, on their JSON forms, on those forms with one part
replaced by junk, and on arbitrary junk. Also: a Tool's compiled admission is kept on its spec."""

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

import flowrt as rt
from flowrt import T, decode, to_json
from flowrt.data.requests import ToolSpec
from flowrt.engine.tools import admit, admitter
from flowrt.data.decoding import compile_decoder

import test_decode_properties as P

junk = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.text(max_size=6),
        st.binary(max_size=4),
        st.floats(),
        st.decimals(),
        st.sampled_from(
            ["Dot", "Wrap", "Two", "Named", "Ok", "Err", "Some", "None", "1.5", "250ms", "x", ""]
        ),
    ),
    lambda c: st.one_of(
        st.lists(c, max_size=3),
        st.dictionaries(
            st.sampled_from(
                ["Ok", "Err", "Some", "Wrap", "Two", "Named", "Dot", "label", "items", "x", "y", "z"]
            ),
            c,
            max_size=3,
        ),
        st.lists(c, max_size=3).map(tuple),
    ),
    max_leaves=6,
)


def outcome(f):
    try:
        return ("ok", f())
    except Exception as e:  # the exception's type and text (which holds the path) must agree
        return ("error", type(e).__name__, str(e), getattr(e, "path", None))


def same(d, value, path="$"):
    compiled = compile_decoder(d)
    want = outcome(lambda: decode(d, value, path))
    got = outcome(lambda: compiled(value, path))
    assert got == want
    if want[0] == "ok" and want[1] is value:
        assert got[1] is value  # decode handed its input back: so does the compiled decoder


def mutate(data, j):
    """`j` with one part (chosen by hypothesis) replaced by junk."""
    if type(j) is list and j and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(j) - 1))
        return j[:i] + [mutate(data, j[i])] + j[i + 1 :]
    if type(j) is dict and j and data.draw(st.booleans()):
        k = data.draw(st.sampled_from(sorted(j)))
        return {**j, k: mutate(data, j[k])}
    if type(j) is dict and data.draw(st.booleans()):
        return {**j, data.draw(st.sampled_from(["z", "label", "Ok"])): data.draw(junk)}
    return data.draw(junk)


@settings(max_examples=400, deadline=None)
@given(P.typed_values)
def test_compiled_decoder_equals_decode_on_values_and_their_json(dv):
    d, v = dv
    same(d, to_json(v))
    same(d, v)
    same(d, to_json(v), "$.reply")


@settings(max_examples=400, deadline=None)
@given(P.typed_values, st.data())
def test_compiled_decoder_equals_decode_on_json_with_a_bad_part(dv, data):
    d, v = dv
    same(d, mutate(data, to_json(v)))


@settings(max_examples=300, deadline=None)
@given(P.types, junk)
def test_compiled_decoder_equals_decode_on_junk(d, j):
    same(d, j)


def test_compiled_decoder_reports_decodes_path_and_message():
    d = T.ResultOf(T.Named(P.Box, T.INT), T.TEXT)
    f = compile_decoder(d)
    bad = {"Ok": {"label": "a", "items": [1, "two"]}}
    try:
        f(bad)
    except rt.DecodeError as e:
        assert (e.path, e.message) == ("$.Ok.items[1]", 'expected Int, got "two"')
    else:
        raise AssertionError("no DecodeError")
    assert f({"Ok": {"label": "a", "items": [1, 2]}}) == rt.Ok(P.Box("a", rt.list_of([1, 2])))
    assert f({"Err": "no"}) == rt.Err("no")


def test_compiled_decoder_follows_a_field_types_change():
    @rt.record("propc::Cell", fields=("v",))
    class Cell(rt.Record):
        __slots__ = ("v",)

    rt.field_types(Cell, (T.INT,))
    f = compile_decoder(T.Named(Cell))
    assert f({"v": 1}) == Cell(1)
    rt.field_types(Cell, (T.TEXT,))
    assert f({"v": "x"}) == Cell("x")


def test_tool_admission_is_compiled_once_per_spec_and_type_args():
    spec = ToolSpec("m::get", "m.get", ("k",), T.ResultOf(T.Var(0), T.TEXT), type_params=1)
    assert admit(spec, {"Ok": 3}, (T.INT,)) == rt.Ok(3)
    assert admit(spec, {"Ok": "3"}, (T.TEXT,)) == rt.Ok("3")
    assert admit(spec, {"Err": "gone"}, (T.INT,)) == rt.Err(rt.Failed("gone"))
    assert admit(spec, {"Ok": "3"}, (T.INT,)) == rt.Err(rt.Malformed('$.Ok: expected Int, got "3"'))
    assert admit(spec, {"Ok": Decimal("1.5")}, (T.DECIMAL,)) == rt.Ok(Decimal("1.5"))
    assert set(spec.admitters) == {(T.INT,), (T.TEXT,), (T.DECIMAL,)}
    assert admitter(spec, (T.INT,)) is spec.admitters[(T.INT,)]
