"""Property: for generated types and values of them, decode(desc, to_json(v)) == v, the JSON form
survives a JSON text round trip (loads_exact), and show/ordering never fail on data."""

import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

import flowrt as rt
from flowrt import T, decode, loads_exact, to_json


@rt.record("prop::Box", fields=("label", "items"))
class Box(rt.Record):
    __slots__ = ("label", "items")


class Shape(rt.Enum):
    __slots__ = ()


@rt.variant("prop::Shape", "Dot", tag=0, fields=())
class Dot(Shape):
    __slots__ = ()


@rt.variant("prop::Shape", "Wrap", tag=1, fields=("_0",))
class Wrap(Shape):
    __slots__ = ("_0",)


@rt.variant("prop::Shape", "Two", tag=2, fields=("_0", "_1"))
class Two(Shape):
    __slots__ = ("_0", "_1")


@rt.variant("prop::Shape", "Named", tag=3, fields=("x", "y"))
class NamedShape(Shape):
    __slots__ = ("x", "y")


# Generic over one parameter: Box<A> { label: Text, items: List<A> }; Shape<A> uses A everywhere.
rt.field_types(Box, (T.TEXT, T.ListOf(T.Var(0))))
rt.field_types(Wrap, (T.Var(0),))
rt.field_types(Two, (T.Var(0), T.OptionOf(T.Var(0))))
rt.field_types(NamedShape, (T.Var(0), T.INT))

decimals = st.decimals(allow_nan=False, allow_infinity=False, places=3).map(
    lambda d: d if d else Decimal("0.000")
)
leaf_types = st.sampled_from([T.INT, T.DECIMAL, T.TEXT, T.BYTES, T.BOOL, T.UNIT, T.DURATION, T.INSTANT])


def extend(children):
    return st.one_of(
        children.map(T.ListOf),
        children.map(T.SetOf),
        children.map(T.OptionOf),
        st.tuples(children, children).map(lambda p: T.DictOf(*p)),
        st.tuples(children, children).map(lambda p: T.TupleOf(*p)),
        st.tuples(children, children).map(lambda p: T.ResultOf(*p)),
        children.map(lambda c: T.Named(Box, c)),
        children.map(lambda c: T.Named(Shape, c)),
    )


types = st.recursive(leaf_types, extend, max_leaves=6)


def values_of(d):
    t = type(d).__name__
    if d == T.INT:
        return st.integers()
    if d == T.DECIMAL:
        return decimals
    if d == T.TEXT:
        return st.text()
    if d == T.BYTES:
        return st.binary(max_size=20)
    if d == T.BOOL:
        return st.booleans()
    if d == T.UNIT:
        return st.none()
    if d == T.DURATION:
        return st.integers(-(10**15), 10**15).map(rt.Duration)
    if d == T.INSTANT:
        return st.integers(0, 4 * 10**18).map(rt.Instant)
    if t == "ListOf":
        return st.lists(values_of(d.item), max_size=4).map(rt.list_of)
    if t == "SetOf":
        return st.lists(values_of(d.item), max_size=4).map(rt.set_of)
    if t == "DictOf":
        return st.lists(st.tuples(values_of(d.key), values_of(d.value)), max_size=4).map(rt.dict_of)
    if t == "TupleOf":
        return st.tuples(*(values_of(x) for x in d.items))
    cls, args = d.cls, d.args
    if cls is rt.Option:
        return st.one_of(st.just(rt.NONE), values_of(args[0]).map(rt.Some))
    if cls is rt.Result:
        return st.one_of(values_of(args[0]).map(rt.Ok), values_of(args[1]).map(rt.Err))
    if cls is Box:
        return st.builds(Box, st.text(max_size=5), st.lists(values_of(args[0]), max_size=3).map(rt.list_of))
    a = values_of(args[0])
    return st.one_of(
        st.just(Dot.INSTANCE),
        a.map(Wrap),
        st.builds(Two, a, st.one_of(st.just(rt.NONE), a.map(rt.Some))),
        st.builds(NamedShape, a, st.integers()),
    )


typed_values = types.flatmap(lambda d: st.tuples(st.just(d), values_of(d)))


@settings(max_examples=300, deadline=None)
@given(typed_values)
def test_decode_inverts_to_json(dv):
    d, v = dv
    j = to_json(v)
    assert decode(d, j) == v
    assert decode(d, loads_exact(json.dumps(j))) == v
    assert decode(d, v) == v
    assert isinstance(rt.show(v), str)


@settings(max_examples=200, deadline=None)
@given(types.flatmap(lambda d: st.tuples(values_of(d), values_of(d))))
def test_data_order_is_total_and_consistent_with_equality(ab):
    a, b = ab
    lt, gt = rt.lang.data_lt, rt.lang.data_gt  # Flow's `<` and `>` (Unit is None in Python)
    assert lt(a, b) + (a == b) + gt(a, b) == 1
    assert rt.lang.data_le(a, b) == (lt(a, b) or a == b)
    if a == b:
        assert hash(a) == hash(b)
    assert rt.lang.list_sort(rt.list_of([a, b])) == rt.lang.list_sort(rt.list_of([b, a]))
