"""Streamed reading of a history (docs/spec/trace.md, "Reading a long history"): `history` (text,
JSON Lines) and `verify` read the facts in batches by keyset pagination and write or check them as
they come. The streamed output is the output of the whole-list renderers, for every batch size,
over runs holding blobs, holes, parked tasks, archived ranges and checkpoints; a chain break is
found at the fact where it is, whichever batch that fact falls in; and memory does not grow with
the history's length."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowrt.history import trace as T
from flowrt.history.history_view import to_jsonl, to_text
from flowrt.history.store import Store
from flowrt.host import operations as rh
from flowrt.host.history_stream import history_chunks
from tests import stored_helpers as H

#: The runs of the fixture store: the base store's, a long loop with checkpoints, the same loop
#: archived and deleted (a gap in its numbers) and one with a redacted value (a hole).
LONG = ("long", "archived", "redacted")


@pytest.fixture(scope="module")
def store_path(tmp_path_factory) -> Path:
    base = H.Base(tmp_path_factory.mktemp("stream"))
    path = base.copy(base.d / "stream.db")
    store = Store(path)
    try:
        for run_id in LONG:
            rh.start(
                store,
                base.loaded,
                entry="count",
                input={"n": 40},
                bindings=H.bindings(True),
                run_id=run_id,
                checkpoint_every=7,
            )
        done = store.history.archive("archived", delete=True)
        assert done.moved > 0
        digest = store.history.records("redacted")[5].values[0]
        assert store.history.redact("redacted", digest) >= 1
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def loaded(store_path):
    from flow2py import host

    store = Store(store_path, readonly=True)
    try:
        return host.compile_stored(store, "long")
    finally:
        store.close()


@pytest.fixture
def store(store_path):
    s = Store(store_path, readonly=True)
    yield s
    s.close()


def _runs(store) -> list[str]:
    return [r.id for r in store.host_records.runs()]


def _streamed(store, loaded, run_id: str, fmt: str, batch: int) -> str:
    return "".join(history_chunks(store, loaded, run_id, fmt, batch=batch))


def test_streamed_history_is_the_whole_list_rendering_for_every_run(store, loaded):
    runs = _runs(store)
    assert set(LONG) <= set(runs) and len(runs) == len(H.RUNS) + len(LONG)
    for run_id in runs:
        records = store.history.records(run_id, classes=loaded.classes)
        for batch in (1, 3, 1000):
            assert _streamed(store, loaded, run_id, "text", batch) == to_text(records), (run_id, batch)
            assert _streamed(store, loaded, run_id, "json", batch) == to_jsonl(records), (run_id, batch)


def test_streamed_history_shows_holes_blobs_and_archived_gaps(store, loaded):
    text = _streamed(store, loaded, "redacted", "text", 4)
    assert "<hole blake3:" in text
    assert "archived" in _streamed(store, loaded, "archived", "text", 4)
    plain = _streamed(store, loaded, "plain", "json", 2)
    assert "s" * 1500 in plain  # round 2's reply, stored as a blob, read back through it


def test_golden_histories_stream_as_the_whole_list_renders_them(tmp_path, monkeypatch):
    from tests import test_history_golden as G

    for name in G.CASES:
        case = G.GOLDEN / name
        path = str(tmp_path / f"{name}.db")
        G._run(case, path, G._bindings(case, monkeypatch))
        s = Store(path, readonly=True)
        try:
            from flow2py import host

            prog = host.compile_stored(s, name)
            records = s.history.records(name, classes=prog.classes)
            for batch in (1, 2, 5):
                assert _streamed(s, prog, name, "text", batch) == to_text(records)
                assert _streamed(s, prog, name, "json", batch) == to_jsonl(records)
        finally:
            s.close()


def test_cli_history_writes_what_host_history_returns(store_path):
    from click.testing import CliRunner

    from flow2py import host
    from flow2py.cli import main

    for fmt in ("text", "json"):
        r = CliRunner().invoke(main, ["history", "long", "--store", str(store_path), "--format", fmt])
        assert r.exit_code == 0, r.output
        assert r.output == host.history("long", store_path=str(store_path), fmt=fmt)


def _broken_copy(store_path: Path, to: Path, n: int) -> Path:
    """A copy of the store with fact `n` of run "long" changed (not re-chained)."""
    con = sqlite3.connect(store_path)
    dst = sqlite3.connect(to)
    con.backup(dst)
    con.close()
    (data,) = dst.execute("SELECT data FROM facts WHERE run='long' AND n=?", (n,)).fetchone()
    item = T.parse_fact(data)
    assert item[0] == T.REPLY
    item[2] = T.encode_value(999)  # another Int reply, well formed, not the one chained
    import cbor2

    dst.execute("UPDATE facts SET data=? WHERE run='long' AND n=?", (cbor2.dumps(item), n))
    dst.commit()
    dst.close()
    return to


def _reply_numbers(store_path: Path) -> list[int]:
    con = sqlite3.connect(store_path)
    try:
        return [
            n
            for (n,) in con.execute("SELECT n FROM facts WHERE run='long' AND kind=? ORDER BY n", (T.REPLY,))
        ]
    finally:
        con.close()


@pytest.mark.parametrize("which", [0, 6, -1])
def test_streamed_verify_names_the_changed_fact_whatever_the_batch(store_path, tmp_path, which):
    n = _reply_numbers(store_path)[which]
    path = _broken_copy(store_path, tmp_path / "broken.db", n)
    s = Store(path, readonly=True)
    try:
        why = f"fact {n} was changed, removed or moved"
        for batch in (1, 2, n - 1, n, n + 1, 1000):
            a = s.history.audit("long", batch=batch)
            assert not a.ok and a.message.startswith(why), (batch, a.message)
        ok, message, _ = s.history.verify("long")
        assert not ok and message.startswith(why)
    finally:
        s.close()


def test_streamed_history_of_a_broken_chain_is_refused_before_any_output(store_path, loaded, tmp_path):
    n = _reply_numbers(store_path)[-1]
    s = Store(_broken_copy(store_path, tmp_path / "broken.db", n), readonly=True)
    try:
        chunks = history_chunks(s, loaded, "long", "text", batch=2)
        with pytest.raises(rh.Refused, match=f"fails its hash chain: fact {n} was changed"):
            next(chunks)
    finally:
        s.close()


def test_streamed_verify_against_a_head_finds_the_fact_it_is_the_hash_of(store):
    records = store.history.records("long", decode=False)
    mid = records[len(records) // 2]
    for batch in (1, 5, 1000):
        a = store.history.audit("long", mid.hash, batch=batch)
        assert a.ok and a.message.startswith(f"intact up to the given head (fact {mid.n})"), a.message


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(min_value=1, max_value=120),
    run_id=st.sampled_from(["long", "archived", "redacted", "parked"]),
)
def test_batch_size_does_not_change_what_is_read(store, loaded, batch, run_id):
    whole = store.history.records(run_id, classes=loaded.classes)
    with store.history.reading():
        assert list(store.history.iter_records(run_id, classes=loaded.classes, batch=batch)) == whole
    assert _streamed(store, loaded, run_id, "text", batch) == to_text(whole)
    assert _streamed(store, loaded, run_id, "json", batch) == to_jsonl(whole)
    a, b = store.history.audit(run_id, batch=batch), store.history.audit(run_id)
    assert (a.ok, a.message, a.head, a.last, a.longest_id) == (b.ok, b.message, b.head, b.last, b.longest_id)
    assert store.history.facts(run_id, verify=True, classes=loaded.classes, batch=batch) == [
        r.fact for r in whole
    ]


def _peak_of_history(store, loaded, run_id: str) -> int:
    tracemalloc.start()
    try:
        for _chunk in history_chunks(store, loaded, run_id, "json", batch=50):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_of_a_streamed_history_does_not_grow_with_its_length(tmp_path):
    """Peak traced memory of `history --format json` over 200 and over 2,000 facts, batch 50:
    the longer history holds no more (well under twice as much) than the short one."""
    base = H.Base(tmp_path)
    path = base.copy(tmp_path / "len.db")
    s = Store(path)
    try:
        for run_id, n in (("short", 100), ("longer", 1000)):
            rh.start(s, base.loaded, entry="count", input={"n": n}, bindings=H.bindings(True), run_id=run_id)
        _peak_of_history(s, base.loaded, "short")  # warm: caches filled once
        short, longer = _peak_of_history(s, base.loaded, "short"), _peak_of_history(s, base.loaded, "longer")
    finally:
        s.close()
    assert longer < 2 * short, (short, longer)
