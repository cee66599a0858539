"""Fuzzing stored bytes: whatever a holder of the store writes into it, every command path either
works or refuses in one line with a known exit code; never an internal error, an uncaught
exception, or a value served to the program that does not fit its type.

Two sources of hostile bytes, over the real runs of tests/stored_helpers.py (records, a parked
task, a carried reply, a blob, checkpoints, an End): the bytes of real stored facts, blobs,
checkpoints, run records and open-call records mutated (bytes flipped, cut, inserted, fields
swapped, re-chained or not), and arbitrary CBOR, every semantic tag cbor2 knows included, put where a value, a fact field
or a whole fact is stored.

The suite runs a bounded budget; a longer run (docs/spec/trace.md, "Strict decoding"):

    FLOW2PY_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_stored_fuzz.py -q
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import tempfile
from pathlib import Path

import cbor2
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from flowrt.history import trace as T
from tests import stored_helpers as H
from tests.test_strict_decoding import CBOR2_TAGS

EXAMPLES = int(os.environ.get("FLOW2PY_FUZZ_EXAMPLES") or 20)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("FLOW2PY_FUZZ_EXAMPLES"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: What each command may answer (DESIGN.md's exit codes; trace.md "Exit codes" for a corrupt store;
#: verify refuses, 1, a history of another data version, as every reader does).
KNOWN = {
    "history": {0, 1},
    "history-json": {0, 1},
    "runs": {0, 1},
    "verify": {0, 1, 6},
    "replay": {0, 1, 3, 5},
    "resume": {0, 1, 3, 4},
    "fork": {0, 1, 3, 4},
}
RUN_IDS = [r[0] for r in H.RUNS]
_COUNTER = itertools.count()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return H.Base(tmp_path_factory.mktemp("fuzzbase"))


def _fresh(base) -> Path:
    d = Path(tempfile.mkdtemp(dir=base.d))
    return base.copy(d / f"runs{next(_COUNTER)}.db")


def _judge(base, path: Path, run_id: str) -> None:
    results = H.every_command(path, base.loaded, run_id)  # anything but a refusal propagates: a bug
    for name, (code, text) in results.items():
        assert code in KNOWN[name], (name, code, text)
        assert "internal error" not in text and "Traceback" not in text, (name, text)
        if code in (1, 6):
            assert text and "\n" not in text.strip(), (name, text)
    assert H.served_a_misfit(results) is None, results


# ---- mutating real stored bytes ---------------------------------------------------------------------

_edits = st.lists(
    st.tuples(
        st.sampled_from(["flip", "cut", "insert", "set"]),
        st.integers(0, 1 << 16),
        st.binary(min_size=1, max_size=8),
    ),
    min_size=1,
    max_size=4,
)


def _edit(data: bytes, edits) -> bytes:
    b = bytearray(data)
    for op, at, blob in edits:
        i = at % (len(b) + 1)
        if op == "flip" and b:
            b[i % len(b)] ^= blob[0] or 1
        elif op == "cut":
            del b[i : i + len(blob)]
        elif op == "insert":
            b[i:i] = blob
        else:
            b[i : i + len(blob)] = blob
    return bytes(b)


_COLUMN_VALUES = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=20),
    st.binary(max_size=40),
    st.none(),
    st.floats(allow_nan=False),
    st.just("{}"),
    st.just('{"entry_decl": 1}'),
)


@FUZZ
@given(
    run=st.sampled_from(RUN_IDS),
    target=st.sampled_from(["fact", "checkpoint", "blob", "run", "kind", "open"]),
    pick=st.integers(0, 1000),
    edits=_edits,
    column_value=_COLUMN_VALUES,
    column=st.sampled_from(
        [
            "state",
            "n",
            "head",
            "latest_checkpoint",
            "archived_through",
            "archived_hash",
            "meta",
            "entry",
            "program",
            "parent",
            "data_version",
        ]
    ),
    chain=st.booleans(),
)
def test_mutated_stored_bytes_are_refused_or_work_never_crash(
    base, run, target, pick, edits, column_value, column, chain
):
    path = _fresh(base)
    con = H.db(path)
    try:
        facts = H.rows(con, run)
        if target in ("fact", "checkpoint", "kind"):
            pool = [f for f in facts if f[1] == T.CHECKPOINT] if target == "checkpoint" else facts
            n, kind, data = pool[pick % len(pool)] if pool else facts[pick % len(facts)]
            if target == "kind":
                con.execute("UPDATE facts SET kind=? WHERE run=? AND n=?", (pick % 12, run, n))
            else:
                con.execute("UPDATE facts SET data=? WHERE run=? AND n=?", (_edit(data, edits), run, n))
        elif target == "blob":
            blobs = con.execute("SELECT hash, data FROM blobs ORDER BY hash").fetchall()
            h, data = blobs[pick % len(blobs)]
            con.execute("UPDATE blobs SET data=? WHERE hash=?", (_edit(data, edits), h))
        elif target == "open":  # the host's record of the run's open calls
            try:
                con.execute(
                    f"UPDATE open_calls SET {'call' if pick % 2 else 'tool_id'}=? WHERE run=?",
                    (column_value, run),
                )
            except sqlite3.IntegrityError:
                assume(False)
        else:
            try:
                con.execute(f"UPDATE runs SET {column}=? WHERE id=?", (column_value, run))
            except sqlite3.IntegrityError:  # NOT NULL: the schema itself refuses this one
                assume(False)
        if chain and target not in ("run", "open"):
            H.rechain(con, run)
    finally:
        con.close()
    _judge(base, path, run)


# ---- arbitrary CBOR, every semantic tag included ---------------------------------------------------

_TAG_NUMBERS = st.one_of(st.sampled_from(sorted(CBOR2_TAGS) + [2, 3]), st.integers(6, 2**32))
_SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**64, -(2**64) - 1, 10**40]),
    st.text(max_size=12),
    st.binary(max_size=40),
    st.booleans(),
    st.none(),
    st.floats(),
    st.just(cbor2.undefined),
    st.integers(0, 19).map(cbor2.CBORSimpleValue),
    st.integers(0, 19),  # small ints: value codes
)


def _compound(children):
    return st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=4).flatmap(lambda xs: st.integers(0, 19).map(lambda c: [c, *xs])),
        st.dictionaries(st.one_of(st.integers(), st.text(max_size=5)), children, max_size=3),
        st.tuples(_TAG_NUMBERS, children).map(lambda t: cbor2.CBORTag(*t)),
    )


CBOR_ITEMS = st.recursive(_SCALARS, _compound, max_leaves=12)


@FUZZ
@given(
    run=st.sampled_from(RUN_IDS),
    pick=st.integers(0, 1000),
    item=CBOR_ITEMS,
    where=st.sampled_from(["value", "field", "fact", "blob"]),
    chain=st.booleans(),
)
def test_arbitrary_cbor_where_history_is_stored_is_refused_or_works_never_crash(
    base, run, pick, item, where, chain
):
    path = _fresh(base)
    con = H.db(path)
    try:
        facts = H.rows(con, run)
        n, _kind, data = facts[pick % len(facts)]
        encoded = cbor2.dumps(item)
        if where == "blob":
            blobs = con.execute("SELECT hash FROM blobs ORDER BY hash").fetchall()
            con.execute("UPDATE blobs SET data=? WHERE hash=?", (encoded, blobs[pick % len(blobs)][0]))
        else:
            parsed = T.parse_fact(data)
            if where == "value":  # a value slot of the fact (or its first field) holds the item
                slots = [i for i, x in enumerate(parsed) if type(x) is bytes]
                i = slots[pick % len(slots)] if slots else 1 + pick % (len(parsed) - 1)
                parsed[i] = encoded
                new = cbor2.dumps(parsed)
            elif where == "field":  # one field of the fact array is the item
                parsed[1 + pick % (len(parsed) - 1)] = item
                new = cbor2.dumps(parsed)
            else:
                new = encoded
            con.execute("UPDATE facts SET data=? WHERE run=? AND n=?", (new, run, n))
        if chain:
            H.rechain(con, run)
    finally:
        con.close()
    _judge(base, path, run)


def test_the_fuzz_budget_is_bounded_unless_asked_for():
    # the suite's run is a few seconds; FLOW2PY_FUZZ_EXAMPLES asks for a longer one
    assert EXAMPLES == int(os.environ.get("FLOW2PY_FUZZ_EXAMPLES") or 20)
