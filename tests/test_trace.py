"""The trace format: value and fact encodings, the hash chain, holes and data versions."""

from __future__ import annotations

import decimal

import blake3
import cbor2
import pytest
from hypothesis import given, settings, strategies as st

import flowrt as rt
from flowrt.history import trace as T
from flowrt.data.facts import (
    Call,
    Checkpoint,
    Choice,
    Closed,
    Completed,
    End,
    Faulted,
    ParkedTask,
    Reply,
    Start,
    Stop,
)


class Shape(rt.Enum):
    __slots__ = ()


@rt.variant("tracetest::Shape", "Circle", tag=0, fields=("_0",))
class Circle(Shape):
    __slots__ = ("_0",)


@rt.variant("tracetest::Shape", "Rect", tag=1, fields=("w", "h"))
class Rect(Shape):
    __slots__ = ("w", "h")


@rt.variant("tracetest::Shape", "Empty", tag=2)
class Empty(Shape):
    __slots__ = ()


@rt.record("tracetest::Item", fields=("name", "price"))
class Item(rt.Record):
    __slots__ = ("name", "price")


#: this module's program: its classes decode its values
CLASSES = rt.class_table(Shape, Item)


scalars = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.text(),
    st.binary(),
    st.booleans(),
    st.none(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.integers().map(rt.Duration),
    st.integers().map(rt.Instant),
    st.builds(rt.HostToken, st.text(max_size=10), st.text(max_size=10)),
    st.just(rt.NONE),
    st.just(Empty.INSTANCE),
)
keys = st.one_of(st.integers(), st.text(max_size=8))


def _compound(inner):
    return st.one_of(
        st.lists(inner, max_size=4).map(rt.list_of),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=6), inner, max_size=4).map(rt.dict_of),
        st.dictionaries(st.integers(), inner, max_size=4).map(rt.dict_of),
        st.sets(st.integers(), max_size=5).map(rt.set_of),
        st.sets(st.text(max_size=5), max_size=5).map(rt.set_of),
        inner.map(rt.Ok),
        inner.map(rt.Err),
        inner.map(rt.Some),
        inner.map(rt.Failed),
        st.text(max_size=10).map(rt.Malformed),
        st.text(max_size=10).map(rt.NotRun),
        st.text(max_size=10).map(rt.Unknown),
        inner.map(Circle),
        st.builds(Rect, inner, inner),
        st.builds(Item, st.text(max_size=8), inner),
    )


values = st.recursive(scalars, _compound, max_leaves=20)


def _same(a, b):
    # Decimal equality ignores the exponent and the sign of zero; the encoding keeps both.
    if isinstance(a, decimal.Decimal):
        return isinstance(b, decimal.Decimal) and a.as_tuple() == b.as_tuple()
    return a == b and type(a) is type(b)


@settings(max_examples=300, deadline=None)
@given(values)
def test_every_value_round_trips_through_its_encoding(v):
    b = T.encode_value(v)
    back = T.decode_value(b, classes=CLASSES)
    assert _same(back, v)
    assert T.encode_value(back) == b


@settings(max_examples=200, deadline=None)
@given(values)
def test_value_encoding_is_already_canonical_cbor(v):
    b = T.encode_value(v)
    assert cbor2.dumps(cbor2.loads(b, max_depth=5000), canonical=True) == b


@given(st.dictionaries(st.text(max_size=6), st.integers(), max_size=8))
def test_dict_encoding_does_not_depend_on_insertion_order(d):
    pairs = list(d.items())
    assert T.encode_value(rt.dict_of(pairs)) == T.encode_value(rt.dict_of(list(reversed(pairs))))


def test_decimal_keeps_exponent_and_negative_zero():
    for text in ("1.50", "-0", "-0.00", "123456789012345678901234567890.5", "1E+5"):
        d = decimal.Decimal(text)
        assert T.decode_value(T.encode_value(d)).as_tuple() == d.as_tuple()


def test_values_that_are_not_flow_data_are_refused_clearly():
    with pytest.raises(T.TraceError, match="float"):
        T.encode_value(1.5)
    with pytest.raises(T.TraceError, match="list"):
        T.encode_value([1, 2])
    with pytest.raises(T.TraceError, match="finite"):
        T.encode_value(decimal.Decimal("NaN"))


def test_decoding_a_value_of_a_class_not_in_the_table_names_the_class():
    b = cbor2.dumps([T.DATA, "ghost::Kind", "Boo", 1])
    with pytest.raises(T.MissingClass, match=r"ghost::Kind \(constructor Boo\).*program's classes"):
        T.decode_value(b, classes=CLASSES)
    # without a table only std's built-in enums decode: a program's class is never guessed
    with pytest.raises(T.MissingClass, match="tracetest::Item"):
        T.decode_value(T.encode_value(Item("pen", 1)))


def test_the_class_table_given_decides_which_class_a_value_gets():
    @rt.record("tracetest::Item", fields=("title", "price", "stock"))
    class NewItem(rt.Record):  # the same declaration in a newer program, another shape
        __slots__ = ("title", "price", "stock")

    old = T.encode_value(rt.list_of([Item("pen", 1)]))
    new = T.encode_value(rt.list_of([NewItem("pen", 1, 7)]))
    assert type(T.decode_value(old, classes=CLASSES)[0]) is Item
    assert type(T.decode_value(new, classes=rt.class_table(NewItem))[0]) is NewItem
    fact = T.decode_fact(
        T.encode_fact(Reply("root#1", rt.Ok(NewItem("a", 2, 3)))).data, classes=rt.class_table(NewItem)
    )
    assert fact.reply == rt.Ok(NewItem("a", 2, 3))


def test_unit_variant_decodes_to_its_single_instance():
    assert T.decode_value(T.encode_value(Empty.INSTANCE), classes=CLASSES) is Empty.INSTANCE
    assert T.decode_value(T.encode_value(rt.NONE)) is rt.NONE


ALL_FACTS = [
    Start("ab" * 32, "std@v1", 1, "main", ("Login fails", rt.list_of([])), ("ticket", "notes")),
    Start("ab" * 32, "std@v1", 1, "main", (), (), parent="run-1", from_checkpoint=2),
    Call("root#1", "planner.next", "planner::next", ("q", rt.list_of(["a"])), ()),
    Call("root/1#2", "store.get", "store::get", (3,), ("Int",)),
    Reply("root#1", rt.Ok(Circle(2))),
    Reply("root#2", rt.Err(rt.Failed(Rect(1, 2)))),
    Choice("root", "root/2"),
    Stop("root/1", "running", None, (Closed("root/1#1"), Closed("root/1#2", rt.Ok("late"), True))),
    Stop("root/2", "finished", None, ()),
    Stop("root/3", "finished", Item("x", 3), ()),
    Checkpoint(
        1,
        "main::work",
        (),
        ("t", rt.list_of(["n"]), 2, ParkedTask("root/1", "root/1#1", "Received", (Item("a", 1),))),
    ),
    Checkpoint(2, "main::loop", ("Text",), (ParkedTask("root/1", "c1:root/1#1", None),)),
    End(Completed(Rect(1, Empty.INSTANCE))),
    End(Faulted("integer division by zero", "main.flow", 12, 5)),
]


@pytest.mark.parametrize("fact", ALL_FACTS, ids=lambda f: type(f).__name__)
def test_every_fact_kind_round_trips_and_its_skeleton_matches(fact):
    enc = T.encode_fact(fact)
    assert enc.kind == T.KINDS[type(fact)]
    assert T.decode_fact(enc.data, classes=CLASSES) == fact
    assert T.skeleton(enc.data) == enc.chained
    assert cbor2.loads(enc.data)[0] == enc.kind


def test_stop_distinguishes_a_finished_unit_value_from_running():
    finished = T.decode_fact(T.encode_fact(Stop("root/1", "finished", None)).data)
    running = T.decode_fact(T.encode_fact(Stop("root/1", "running")).data)
    assert finished.found == "finished" and running.found == "running"
    assert len(T.slot_digests(T.encode_fact(Stop("root/1", "finished", None)).data)) == 1
    assert T.slot_digests(T.encode_fact(Stop("root/1", "running")).data) == []


def test_chain_hash_is_blake3_of_previous_hash_and_skeleton():
    f = Reply("root#1", rt.Ok("x"))
    enc = T.encode_fact(f)
    prev = bytes(range(32))
    digest = blake3.blake3(T.encode_value(rt.Ok("x"))).digest()
    assert enc.chained == cbor2.dumps([3, "root#1", digest])
    assert T.chain(prev, enc.chained) == blake3.blake3(prev + enc.chained).digest()
    assert T.chain_hashes([f]) == [blake3.blake3(bytes(32) + enc.chained).digest()]


def test_large_values_become_blob_references_without_changing_the_chain():
    big = "x" * 5000
    f = Call("root#1", "a.b", "a::b", (big, "small"))
    inline = T.encode_fact(f, threshold=10**9)
    blobbed = T.encode_fact(f)
    assert len(blobbed.blobs) == 1 and blobbed.blobs[0][1] == T.encode_value(big)
    assert len(blobbed.data) < 200 < len(inline.data)
    assert blobbed.chained == inline.chained
    assert T.decode_fact(blobbed.data, dict(blobbed.blobs).get, classes=CLASSES) == f
    assert T.decode_fact(blobbed.data).args[0] == rt.Hole(blobbed.blobs[0][0].hex())  # blob lost


def test_redacting_a_slot_keeps_the_skeleton_and_decodes_as_a_hole():
    f = Call("root#1", "human.ask", "human::ask", ("my phone is 555", 2))
    enc = T.encode_fact(f)
    digest = bytes.fromhex(T.value_digest("my phone is 555"))
    redacted, count = T.redact_slots(enc.data, digest)
    assert count == 1 and b"555" not in redacted
    assert T.skeleton(redacted) == enc.chained
    back = T.decode_fact(redacted)
    assert back.args == (rt.Hole(digest.hex()), 2)
    assert T.encode_fact(back).chained == enc.chained  # re-encoding a hole keeps the chain too


def test_a_start_of_an_unknown_data_version_is_refused_whole():
    data = cbor2.dumps([T.START, 2, "ab", "std@v9", "main", [], [], None, None])
    with pytest.raises(T.UnsupportedDataVersion, match="data version 2.*reads data version 1 only"):
        T.decode_fact(data)
    assert T.start_data_version(data) == 2
    with pytest.raises(T.TraceError, match="writes data version 1"):
        T.encode_fact(Start("ab", "std@v1", 7, "main", ()))


def test_corrupt_bytes_are_reported_not_crashed_on():
    with pytest.raises(T.TraceError, match="corrupt"):
        T.decode_fact(b"\xff\x00")
    with pytest.raises(T.TraceError, match="corrupt"):
        T.decode_fact(cbor2.dumps([99, "x"]))
    with pytest.raises(T.TraceError, match="corrupt"):
        T.skeleton(cbor2.dumps([T.REPLY, "root#1", 5]))


def test_small_tool_call_history_is_compact():
    call = T.encode_fact(Call("c1:root#12", "web.search", "web::search", ("safari login cookie",)))
    reply = T.encode_fact(Reply("c1:root#12", rt.Ok("SameSite=None requires Secure")))
    assert len(call.data) + len(reply.data) + 2 * 32 < 200


def test_too_deeply_nested_values_are_refused_with_a_clear_error():
    v = 1
    for _ in range(2000):
        v = rt.Some(v)
    with pytest.raises(T.TraceError, match="nested this deeply"):
        T.encode_value(v)
    deep = b"\x82\x0a" * 2000 + b"\x01"  # [10, [10, ... 1]] built by hand
    with pytest.raises(T.TraceError, match="nested this deeply|corrupt"):
        T.decode_value(deep)
