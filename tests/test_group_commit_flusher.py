"""The flusher commits the Replies waiting in several runs' recorders (the runs one worker drives
over one store) in one transaction, each run's batch guarded on its own: one run's refusal leaves
the others committed and is raised to that run's driver."""

from __future__ import annotations

import time

import pytest

import flowrt as rt
from flowrt.data.facts import Call, Reply, Start
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
    while any(r._armed for r in recs) and time.monotonic() < deadline:
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
