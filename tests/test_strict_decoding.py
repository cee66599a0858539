"""Stored bytes are read as the trace format writes them and nothing else (flowrt.history.strict,
docs/spec/trace.md "Strict decoding"): no CBOR semantic tag builds a host object, sizes and depth
are bounded, and every value and fact has its exact shape."""

from __future__ import annotations

import decimal

import cbor2
import pytest

import flowrt as rt
from flowrt.history import strict as S
from flowrt.history import trace as T
from flowrt.data.facts import Checkpoint, ParkedTask, Reply

# Every tag cbor2 decodes into a host object (its built-in table), with content it would accept.
CBOR2_TAGS = {
    0: "2024-05-01T12:00:00Z",
    1: 1714564800,
    4: [-2, 12345],
    5: [-1, 3],
    25: 0,
    28: [1],
    29: 0,
    30: [1, 3],
    35: "a+",
    36: "Subject: x\n\nbody",
    37: b"0123456789abcdef",
    52: b"\x7f\x00\x00\x01",
    54: b"\x00" * 16,
    100: 19000,
    256: ["x"],
    258: [1, 2],
    260: b"\x7f\x00\x00\x01",
    261: {b"\x7f\x00\x00\x01": 8},
    1004: "2024-05-01",
    43000: [1.0, 2.0],
    55799: 1,
}


@pytest.mark.parametrize("tag", sorted(CBOR2_TAGS))
def test_every_cbor2_semantic_tag_is_refused_in_a_stored_value(tag):
    with pytest.raises(T.TraceError, match=f"CBOR tag {tag}:"):
        T.decode_value(cbor2.dumps([rt.history.trace.OK, cbor2.CBORTag(tag, CBOR2_TAGS[tag])]))


@pytest.mark.parametrize("tag", [35, 36, 258, 28, 99999])
def test_a_tag_is_refused_at_its_head_before_its_content_is_read(tag):
    # The content is cut short: had cbor2 decoded it first, the error would be a premature end.
    data = cbor2.dumps(cbor2.CBORTag(tag, "x" * 40))[:-10]
    with pytest.raises(T.TraceError, match=f"CBOR tag {tag}:"):
        T.decode_value(data)


def test_a_cyclic_shared_reference_is_refused_not_an_encode_error():
    cyclic = bytes.fromhex("d81c81d81d00")  # shareable([sharedref(0)]): a list holding itself
    with pytest.raises(T.TraceError, match="CBOR tag 28"):
        T.decode_value(cyclic)
    fact = cbor2.dumps([T.REPLY, "root#1", cyclic])
    with pytest.raises(T.TraceError, match="CBOR tag 28"):
        T.decode_fact(fact)


def test_tags_are_refused_in_fact_arrays_too():
    with pytest.raises(T.TraceError, match="CBOR tag 37"):
        T.decode_fact(cbor2.dumps([T.REPLY, cbor2.CBORTag(37, b"0" * 16), T.encode_value(rt.Ok(1))]))
    with pytest.raises(T.TraceError, match="CBOR tag 0"):
        T.skeleton(cbor2.dumps([T.CHOICE, "root", cbor2.CBORTag(0, "2024-05-01T12:00:00Z")]))


def test_ints_beyond_64_bits_round_trip_up_to_the_bound():
    for v in (2**64, -(2**64) - 1, 2**S.MAX_INT_BITS - 1, -(2**S.MAX_INT_BITS) + 1, 10**5000):
        assert T.decode_value(T.encode_value(v)) == v


def test_an_int_beyond_the_bound_is_refused_both_ways():
    with pytest.raises(T.TraceError, match="65536"):
        T.encode_value(2**S.MAX_INT_BITS)
    with pytest.raises(T.TraceError, match="more than 65536 bits"):
        T.decode_value(cbor2.dumps(cbor2.CBORTag(2, b"\x01" * (S.MAX_INT_BITS // 8 + 1))))


@pytest.mark.parametrize(
    "content, why",
    [
        (b"\x01", "plain integer"),  # fits 64 bits: the encoder writes a plain int
        (b"\x00" + b"\x01" * 9, "plain integer"),  # a leading zero byte: not how it is written
        ("12345678901234567890", "byte string"),  # a bignum of text
    ],
)
def test_a_bignum_is_read_only_as_the_encoder_writes_it(content, why):
    with pytest.raises(T.TraceError, match=why):
        T.decode_value(cbor2.dumps(cbor2.CBORTag(2, content)))


def test_decimals_with_many_digits_round_trip_and_exponents_are_bounded_both_ways():
    long = decimal.Decimal("9" * 5000 + ".25")  # more digits than Python's int <-> str limit
    assert T.decode_value(T.encode_value(long)) == long
    with pytest.raises(T.TraceError, match="exponent"):
        T.encode_value(decimal.Decimal("1E+100001"))
    with pytest.raises(T.TraceError, match="exponent is within"):
        T.decode_value(cbor2.dumps([T.DECIMAL, 10**30, 1]))
    with pytest.raises(T.TraceError, match="sign marker"):
        T.decode_value(cbor2.dumps([T.DECIMAL, -2, 5, 1]))
    assert str(T.decode_value(cbor2.dumps([T.DECIMAL, -2, 0, 1]))) == "-0.00"


@pytest.mark.parametrize(
    "item",
    [
        1.5,
        {"a": 1},
        cbor2.undefined,
        cbor2.CBORSimpleValue(5),
        [],
        [99],
        [True, 1],
        [False, 1],
        [T.OK],
        [T.OK, 1, 2],
        [T.NONE, 1],
        [T.DURATION],
        [T.DURATION, "5s"],
        [T.INSTANT, 1.0],
        [T.TOKEN, "m::Page"],
        [T.TOKEN, "m::Page", 5],
        [T.DECIMAL, 1],
        [T.DECIMAL, "1", 2],
        [T.DICT, 1],
        [T.DICT, 1, "a", 1, "b"],
        [T.SET, 1, 1],
        [T.SET, 1, "a"],
        [T.DICT, 1, 2, "k", 3],
        [T.HOLE, b"short"],
        [T.HOLE, "x" * 32],
        [T.BLOB, b"\x00" * 32],
        [T.DATA, "std::X"],
        [T.DATA, 1, 2],
        [T.PARKED, "t", "c", None],
    ],
)
def test_a_value_array_of_another_shape_is_refused(item):
    with pytest.raises(T.TraceError, match="corrupt value encoding"):
        T.decode_value(cbor2.dumps(item))


def test_a_record_with_the_wrong_number_of_fields_is_refused():
    assert T.decode_value(cbor2.dumps([T.DATA, "std@v1/tool::ToolProblem", "Failed", 1])) == rt.Failed(1)
    with pytest.raises(T.TraceError, match="has 1 field"):
        T.decode_value(cbor2.dumps([T.DATA, "std@v1/tool::ToolProblem", "Failed", 1, 2]))


def test_indefinite_lengths_are_refused():
    indefinite = b"\x9f\x08\x01\xff"  # [_ 8, 1]: Ok(1) with an indefinite-length array
    assert cbor2.loads(indefinite) == [8, 1]
    with pytest.raises(T.TraceError, match="indefinite"):
        T.decode_value(indefinite)


def test_nesting_is_bounded_with_a_clear_refusal():
    deep = b"\x82\x0a" * (S.MAX_DEPTH + 5) + b"\x01"  # Some(Some(... 1))
    with pytest.raises(T.TraceError, match="corrupt value encoding|nested this deeply"):
        T.decode_value(deep)


def test_text_that_is_not_utf8_or_holds_a_surrogate_is_refused():
    for raw in (b"\xff", b"\xed\xa0\x80"):  # not UTF-8; an encoded lone surrogate
        data = bytes([0x60 + len(raw)]) + raw
        with pytest.raises(T.TraceError, match="corrupt value encoding"):
            T.decode_value(data)


def test_a_parked_task_is_a_value_only_in_a_checkpoints_arguments():
    p = ParkedTask("root/1", "root/1#1", None, ())
    cp = T.encode_fact(Checkpoint(1, "main::work", (), (p,)))
    assert T.decode_fact(cp.data).args == (p,)
    with pytest.raises(T.TraceError, match="parked task outside"):
        T.decode_fact(T.encode_fact(Reply("root#1", rt.Ok(p))).data)
    with pytest.raises(T.TraceError, match="parked task outside"):
        T.decode_value(T.encode_value(p))


_OK = T.encode_value(rt.Ok(1))


@pytest.mark.parametrize(
    "item",
    [
        [T.REPLY],
        [T.REPLY, "root#1"],
        [T.REPLY, 7, _OK],
        [T.REPLY, "root#1", _OK, 1],
        [T.REPLY, "root#1", [T.BLOB, b"\x00" * 31]],
        [T.REPLY, "root#1", [T.HOLE, "x"]],
        [T.CALL, "root#1", "svc.step", "svc::step", [_OK], ["Int", 1]],
        [T.CALL, "root#1", "svc.step", "svc::step", _OK, []],
        [T.CHOICE, "root", 1],
        [T.STOP, "root/1", "finished", None, []],
        [T.STOP, "root/1", "running", _OK, []],
        [T.STOP, "root/1", "gone", None, []],
        [T.STOP, "root/1", "running", None, [["c", _OK, 1]]],
        [T.CHECKPOINT, 0, "main::f", [], []],
        [T.CHECKPOINT, "1", "main::f", [], []],
        [T.END, 0],
        [T.END, 2, "x", "f", 1, 0],
        [T.END, 1, "x", "f", "1", 0],
        [T.START, 1, "p", "std@v1", "main", [], [], None],
        [99, "x"],
        ["3", "root#1", _OK],
        [True, "root", "root/1"],
    ],
)
def test_a_fact_array_of_another_shape_is_refused_by_every_reader(item):
    data = cbor2.dumps(item)
    for read in (
        T.decode_fact,
        T.skeleton,
        T.slot_digests,
        lambda d: T.decode_chained(d),
        lambda d: T.redact_slots(d, b"\x00" * 32),
    ):
        with pytest.raises(T.TraceError, match="corrupt fact"):
            read(data)


def test_a_row_whose_kind_is_not_its_facts_kind_is_refused():
    data = T.encode_fact(Reply("root#1", rt.Ok(1))).data
    assert T.decode_fact(data, kind=T.REPLY) == Reply("root#1", rt.Ok(1))
    for kind in (99, T.CALL, "3"):
        with pytest.raises(T.TraceError, match="its row says kind"):
            T.decode_chained(data, kind=kind)
        with pytest.raises(T.TraceError, match="its row says kind"):
            T.fact_hash(T.ZERO_HASH, data, kind)


def test_a_stored_form_that_is_not_bytes_is_refused():
    for data in ("a text", 12, None):
        with pytest.raises(T.TraceError, match="not bytes"):
            T.decode_fact(data)


# ---- the bounds in a live run: refused where they arise, never an internal error ------------------

LIMITS = """\
use "std@v1/int"
use "./svc"

pub flow main(n: Int) -> Int !tool = match svc.size(int.to_text(n)) {
    Ok(k) => k + 1,
    Err(Malformed(_)) => -1,
    Err(_) => -2,
}

pub flow result(n: Int) -> Int = twice(n, 1)

pub flow argument(n: Int) -> Int !tool = match svc.echo(twice(n, 1)) {
    Ok(k) => k,
    Err(_) => 0,
}

flow twice(n: Int, acc: Int) -> Int = if n == 0 { acc } else { twice(n - 1, acc * 2) }
"""
LIMITS_SVC = (
    "@tool pub flow size(t: Text) -> Result<Int, Text>\n@tool pub flow echo(n: Int) -> Result<Int, Text>\n"
)


@pytest.fixture(scope="module")
def limits(tmp_path_factory):
    from flow2py import host as fhost

    d = tmp_path_factory.mktemp("limits")
    (d / "main.flow").write_text(LIMITS)
    (d / "svc.flow").write_text(LIMITS_SVC)
    return d, fhost.compile_path(str(d / "main.flow"))


def _limits_run(limits, entry, n, size=None):
    from flowrt.host import operations as rh
    from flowrt.history.store import Store

    d, loaded = limits
    b = rt.Bindings()
    b.bind("svc.size", lambda t: {"Ok": size})
    b.bind("svc.echo", lambda k: {"Ok": 1})
    store = Store(d / f"{entry}.db")
    try:
        report = rh.start(store, loaded, entry=entry, input={"n": n}, bindings=b, run_id="r")
        return report, rh.replay(store, loaded, "r")
    finally:
        store.close()


def test_a_tool_reply_beyond_the_bounds_is_recorded_malformed(limits):
    report, replay = _limits_run(limits, "main", 3, size=2**S.MAX_INT_BITS)
    assert report.exit_code == 0 and report.text == "-1"
    assert replay.text == "Matched"


def test_a_result_beyond_the_bounds_ends_the_run_faulted_and_replays(limits):
    report, replay = _limits_run(limits, "result", S.MAX_INT_BITS + 1)
    assert report.exit_code == 4 and "the result cannot be recorded" in report.text
    assert replay.text == "Matched"


def test_a_call_argument_beyond_the_bounds_faults_the_caller_and_replays(limits):
    report, replay = _limits_run(limits, "argument", S.MAX_INT_BITS + 1)
    assert report.exit_code == 4 and "the arguments of svc.echo cannot be recorded" in report.text
    assert replay.text == "Matched"
