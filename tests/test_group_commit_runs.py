"""Several runs over one store (as one worker drives them) share commits: a fsynced commit waits
(briefly, and only for them) for the other runs holding a Call not yet committed, so one commit
makes all their Calls durable; the flusher commits the Replies waiting in several runs' recorders
in one transaction. Each run's batch is guarded on its own: one run's refusal leaves the others
committed and is raised to that run's driver."""

from __future__ import annotations

import threading
import time

import pytest

import flowrt as rt
from flowrt.data.facts import Call, Completed, End, Reply, Start
from flowrt.history import recorder as R
from flowrt.history.recorder import commit_group
from flowrt.history.store import SqliteRecorder, Store
from flowrt.history.store_errors import RunBusy


def _start():
    return Start("p" * 64, "std@v1", 1, "fan", (1,), ("n",))


def _replies_waiting(store, k):
    """k runs, each with a Call committed and its Reply left to the flusher (sync_soon)."""
    recs = []
    for i in range(k):
        store.history.create_run(f"r{i}", _start(), {})
        rec = SqliteRecorder(store, f"r{i}")
        rec.record(Call("root#1", "t.echo", "t::echo", (i,), ()))
        rec.sync()
        recs.append(rec)
    return recs


def _arm_together(recs):
    deadline = time.monotonic() + 10
    while R._flusher._due and time.monotonic() < deadline:  # no flush of an earlier test under way
        time.sleep(0.001)
    for i, rec in enumerate(recs):
        rec.record(Reply("root#1", rt.Ok(i)))
        rec.sync_soon()
    while any(r._reply and r._broken is None for r in recs) and time.monotonic() < deadline:  # committed
        time.sleep(0.001)


def _facts(path, run):
    reader = Store(path, readonly=True)
    try:
        return [type(f.fact) for f in reader.history.records(run)]
    finally:
        reader.close()


def test_the_flusher_commits_several_runs_waiting_replies_in_one_transaction(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "_REPLY_WAIT", 0.2)  # every Reply below is armed within one wait
    path = tmp_path / "runs.db"
    store = Store(path)
    recs = _replies_waiting(store, 4)
    group = commit_group(store.file)
    before = group.commits
    _arm_together(recs)
    assert group.commits - before == 1
    for r in recs:
        assert r._pending == [] and _facts(path, r.run_id) == [Start, Call, Reply]
        r.close()
        assert store.history.verify(r.run_id)[0]
    store.close()


def test_one_runs_refusal_in_the_flushers_commit_leaves_the_others_committed(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "_REPLY_WAIT", 0.2)
    path = tmp_path / "runs.db"
    store = Store(path)
    recs = _replies_waiting(store, 3)
    with store.file.transaction(durable=False) as db:  # another process took r1's lease
        db.execute("UPDATE runs SET owner='elsewhere:1:x' WHERE id='r1'")
    group = commit_group(store.file)
    before = group.commits
    _arm_together(recs)
    assert group.commits - before == 1
    assert _facts(path, "r1") == [Start, Call]
    with pytest.raises(RunBusy):  # raised to r1's driver at its next record
        recs[1].record(Call("root#2", "t.echo", "t::echo", (9,), ()))
    for r in (recs[0], recs[2]):
        assert _facts(path, r.run_id) == [Start, Call, Reply]
        r.close()
        assert store.history.verify(r.run_id)[0]
    recs[1].close()
    store.close()


def _two_runs(store):
    recs = []
    for i in range(2):
        store.history.create_run(f"r{i}", _start(), {})
        recs.append(SqliteRecorder(store, f"r{i}"))
    return recs


def test_a_fsynced_commit_waits_for_another_runs_call_and_one_transaction_holds_both(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "_GATHER_WAIT", 30.0)  # far longer than the test takes: it ends by r1's sync
    store = Store(tmp_path / "runs.db")
    r0, r1 = _two_runs(store)
    group = commit_group(store.file)
    before = group.commits
    r1.record(Call("root#1", "t.echo", "t::echo", (1,), ()))  # r1's driver is in a round
    r0.record(Call("root#1", "t.echo", "t::echo", (0,), ()))
    t = threading.Thread(target=r0.sync)
    t.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # r0's commit is waiting for r1's
        with group._cond:
            if group._writing and group._queue and group.commits == before:
                break
        time.sleep(0.001)
    time.sleep(0.05)
    assert group.commits == before and t.is_alive()
    r1.sync()
    t.join()
    assert group.commits - before == 1
    for r in (r0, r1):
        assert [type(f.fact) for f in store.history.records(r.run_id)] == [Start, Call]
        r.close()
    store.close()


def test_the_wait_for_another_runs_call_is_bounded_and_a_lone_run_does_not_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "_GATHER_WAIT", 0.2)
    store = Store(tmp_path / "runs.db")
    r0, r1 = _two_runs(store)
    group = commit_group(store.file)
    r0.record(Call("root#1", "t.echo", "t::echo", (0,), ()))
    t0 = time.monotonic()
    r0.sync()  # no other run holds a Call: at once
    assert time.monotonic() - t0 < 0.15
    r1.record(Call("root#1", "t.echo", "t::echo", (1,), ()))  # and never syncs it meanwhile
    r0.record(Call("root#2", "t.echo", "t::echo", (2,), ()))
    before = group.commits
    t0 = time.monotonic()
    r0.sync()
    assert 0.15 <= time.monotonic() - t0 < 10 and group.commits - before == 1
    assert [type(f.fact) for f in store.history.records("r1")] == [Start]
    r1.sync()
    assert [type(f.fact) for f in store.history.records("r1")] == [Start, Call]
    for r in (r0, r1):
        r.close()
    store.close()


def test_the_ends_commit_releases_the_lease_and_close_writes_nothing(tmp_path):
    store = Store(tmp_path / "runs.db")
    store.history.create_run("r", _start(), {})
    rec = SqliteRecorder(store, "r")
    rec.record(Call("root#1", "t.echo", "t::echo", (1,), ()))
    rec.sync()
    rec.record(Reply("root#1", rt.Ok(1)))
    rec.record(End(Completed(1)))
    group = commit_group(store.file)
    before = group.commits
    rec.sync()
    assert group.commits - before == 1
    assert store.file.db.execute("SELECT state, owner FROM runs WHERE id='r'").fetchone() == (
        "completed",
        None,
    )
    writes = []
    store.file.db.set_trace_callback(lambda sql: writes.append(sql) if sql.split()[0] != "SELECT" else None)
    rec.close()
    store.file.db.set_trace_callback(None)
    assert writes == []
    assert [type(f.fact) for f in store.history.records("r")] == [Start, Call, Reply, End]
    assert store.history.verify("r")[0] and store.host_records.load_run("r").state == "completed"
    store.close()
