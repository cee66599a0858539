"""A Call's and a Reply's stored form and skeleton, written by hand around their value slots
(flowrt.history.trace.encode_fact's fast path), are the bytes cbor2 writes for the fact arrays
trace.md defines: the same chain, the same blobs, for every shape of value, id and type argument."""

from __future__ import annotations

import random
import string

import blake3
import cbor2

from flowrt.data import values as V
from flowrt.data.facts import Call, Reply
from flowrt.history import trace as T


def _reference(fact, threshold: int):
    """The fact's arrays built as for every other kind (`_Slots`), encoded by cbor2."""
    s = T._Slots(threshold)
    if type(fact) is Call:
        a, ad = s.many(fact.args)
        head, tail = [T.CALL, fact.id, fact.tool, fact.tool_id], [list(fact.type_args)]
        stored, skel = head + [a] + tail, head + [ad] + tail
    else:
        r, rd = s(fact.reply)
        stored, skel = [T.REPLY, fact.id, r], [T.REPLY, fact.id, rd]
    return cbor2.dumps(stored), cbor2.dumps(skel), tuple(s.blobs), tuple(s.digests)


def _encoded(fact, threshold: int):
    e = T.encode_fact(fact, threshold)
    return e.data, e.chained, e.blobs, e.slots


_rnd = random.Random(11)
_CHARS = string.ascii_letters + "é😀ü\u0000"
_INTS = [
    0,
    1,
    -1,
    23,
    24,
    255,
    256,
    -24,
    -25,
    65535,
    65536,
    2**32 - 1,
    2**32,
    2**63 - 1,
    -(2**63),
    -(2**63) - 1,
    -(2**64),
    -(2**64) - 1,
    2**64,
    10**30,
]


def _text(n: int) -> str:
    return "".join(_rnd.choice(_CHARS) for _ in range(n))


def _value(depth: int = 0):
    k = _rnd.randrange(8 if depth < 2 else 4)
    if k == 0:
        return _rnd.choice(_INTS)
    if k == 1:
        return _text(_rnd.choice([0, 1, 23, 24, 255, 256, 1100]))
    if k == 2:
        return _rnd.choice([True, False, ()])
    if k == 3:  # an Ok or Err of an Int or a Str (a fast path of its own) or of anything else
        wrap = _rnd.choice([V.Ok, V.Err])
        return wrap(
            _rnd.choice([_rnd.randrange(-100, 100), _rnd.choice(_INTS), _text(24), _value(depth + 1)])
        )
    if k == 4:
        return V.list_of([_value(depth + 1) for _ in range(_rnd.choice([0, 1, 5, 40]))])
    if k == 5:
        return V.Err(V.Failed(_text(5)))
    if k == 6:
        return tuple(_value(depth + 1) for _ in range(3))
    return V.Some(_value(depth + 1))


def test_random_calls_and_replies_encode_to_the_bytes_of_their_fact_arrays():
    for _ in range(300):
        type_args = tuple(_text(_rnd.choice([1, 30])) for _ in range(_rnd.choice([0, 0, 1, 2, 25])))
        call = Call(
            _text(_rnd.choice([3, 30, 300])),
            _text(_rnd.choice([3, 300])),
            _text(10),
            tuple(_value() for _ in range(_rnd.choice([0, 1, 2, 5, 30]))),
            type_args,
        )
        reply = Reply(_text(_rnd.choice([3, 30])), _value())
        for fact in (call, reply):
            for threshold in (T.BLOB_THRESHOLD, 0, 10):
                assert _encoded(fact, threshold) == _reference(fact, threshold), (fact, threshold)


def test_holes_and_blobs_in_a_call_or_reply_keep_their_slot_forms():
    hole = V.Hole("ab" * 32)
    big = "x" * 5000
    for fact in (Reply("root#1", hole), Call("root#2", "t.t", "m::t", (hole, 1, big), ("Int",))):
        assert _encoded(fact, T.BLOB_THRESHOLD) == _reference(fact, T.BLOB_THRESHOLD)
    assert T.encode_fact(Reply("root#1", big)).blobs  # the big value went to a blob


def test_an_unencodable_value_in_a_call_is_a_trace_error():
    try:
        T.encode_fact(Call("root#1", "t.t", "m::t", (2**70000,), ()))
    except T.TraceError as e:
        assert "Int of" in str(e)
    else:
        raise AssertionError("an Int beyond the stored bound was encoded")


def test_a_reused_hasher_gives_the_same_encodings_and_chain_as_a_new_one_each_hash():
    # the recorder reuses one blake3 object for every fact it records (StoreRecorder.record)
    hasher = blake3.blake3()
    prev = prev_reused = T.ZERO_HASH
    for _ in range(200):
        call = Call(_text(5), "t.t", "m::t", tuple(_value() for _ in range(_rnd.choice([1, 2, 5]))), ())
        reply = Reply(call.id, _value())
        for fact in (call, reply):
            for threshold in (T.BLOB_THRESHOLD, 10):
                e, r = T.encode_fact(fact, threshold), T.encode_fact(fact, threshold, hasher)
                assert (e.data, e.chained, e.blobs, e.slots) == (r.data, r.chained, r.blobs, r.slots)
            prev = T.chain(prev, e.chained)
            prev_reused = T.chain(prev_reused, r.chained, hasher)
            assert prev == prev_reused
