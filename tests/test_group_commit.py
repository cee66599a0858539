"""Group commit: the calls one scheduling round makes (and the batches of several runs) are made
durable in one commit before any of them is sent; a Reply is committed as it is admitted, or, while more wait, with them or by the flusher."""

from __future__ import annotations

import asyncio
import threading
import time

import flowrt as rt
from flowrt.data.facts import Call, Reply, Start
from flowrt.history.recorder import commit_group
from flowrt.history.store import SqliteRecorder, Store
from flowrt.history.store_errors import RunBusy
from _driver_progs import ECHO, fan

N = 100


def _start(n):
    return Start("p" * 64, "std@v1", 1, "fan", (n,), ("n",))


class _Commits:
    """Counts the COMMITs run on a store's connection (its statement trace)."""

    def __init__(self, store):
        self.n = 0
        store.file.db.set_trace_callback(self._saw)

    def _saw(self, sql):
        if sql.strip().upper() == "COMMIT":
            self.n += 1


def _fan_bindings(path, run_id, commits, seen):
    """`t.echo` as an async implementation: each call notes the commits made so far and whether
    its own Call is in the store, read through a connection of its own; none answers before all
    N calls have been sent (so no Reply commit can come between them)."""
    all_sent = asyncio.Event()

    async def echo(x):
        call_id = rt.current_call().call_id
        reader = Store(path, readonly=True)
        try:
            stored = {f.fact.id for f in reader.history.records(run_id) if type(f.fact) is Call}
        finally:
            reader.close()
        seen.append((call_id, commits.n, call_id in stored))
        if len(seen) == N:
            all_sent.set()
        await all_sent.wait()
        return {"Ok": x}

    b = rt.Bindings()
    b.bind("t.echo", echo)
    return b


def test_a_100_way_fan_out_makes_at_most_3_commits_before_its_calls_are_sent(tmp_path):
    path = tmp_path / "runs.db"
    store = Store(path)
    store.history.create_run("f", _start(N), {})
    seen: list = []
    with SqliteRecorder(store, "f") as rec:
        commits = _Commits(store)
        out = rt.drive(
            fan,
            [_start(N)],
            rt.DriveOptions(recorder=rec, bindings=_fan_bindings(path, "f", commits, seen), reachable=[ECHO]),
        )
    assert out == rt.RunCompleted(N * (N - 1) // 2)
    assert len(seen) == N and len({c for c, _, _ in seen}) == N
    assert max(n for _, n, _ in seen) <= 3  # commits before the last of the 100 calls went out
    assert all(stored for _, _, stored in seen)  # no call sent before the commit that holds it
    facts = [f.fact for f in store.history.records("f")]
    assert sum(type(f) is Call for f in facts) == N and sum(type(f) is Reply for f in facts) == N
    assert store.history.verify("f")[0]
    store.close()


def test_each_reply_is_committed_as_it_is_admitted(tmp_path):
    # The sequential loop: one call at a time, each reply committed (not fsynced) before the
    # program goes on, so nothing answered waits in memory for the next call's commit.
    from _driver_progs import echo_bindings, echo_loop

    store = Store(tmp_path / "runs.db")
    start = Start("p" * 64, "std@v1", 1, "echo_loop", (5, 0), ("n", "acc"))
    store.history.create_run("l", start, {})
    with SqliteRecorder(store, "l") as rec:
        commits = _Commits(store)
        out = rt.drive(echo_loop, [start], rt.DriveOptions(recorder=rec, bindings=echo_bindings()))
        assert out == rt.RunCompleted(15)
        # five calls and five replies, one commit each, and the End's
        assert commits.n == 11
    store.close()


def test_a_reply_left_for_a_later_commit_is_committed_by_the_flusher_without_the_driver(tmp_path):
    # A reply admitted while more wait (record, sync_soon) is left for a later commit; with no
    # other commit coming, the flusher makes it while the program computes: another connection sees it.
    path = tmp_path / "runs.db"
    store = Store(path)
    store.history.create_run("r", _start(1), {})
    rec = SqliteRecorder(store, "r")
    rec.record(Call("root#1", "t.echo", ECHO.tool_id, (1,), ()))
    rec.sync()
    rec.record(Reply("root#1", rt.Ok(1)))
    rec.sync_soon()

    def replies():
        reader = Store(path, readonly=True)
        try:
            return [f.fact for f in reader.history.records("r") if type(f.fact) is Reply]
        finally:
            reader.close()

    deadline = time.monotonic() + 10
    while not replies() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert replies() == [Reply("root#1", rt.Ok(1))]
    assert rec._pending == []
    rec.close()
    assert store.history.verify("r")[0]
    store.close()


def _recorders(store, k):
    recs = []
    for i in range(k):
        store.history.create_run(f"r{i}", _start(1), {})
        recs.append(SqliteRecorder(store, f"r{i}"))
    return recs


def _sync_all_at_once(store, recs):
    """Each recorder records a Call and syncs on a thread of its own, all while a commit is under
    way (the test holds the store's connection): the next commit takes every batch waiting."""
    group = commit_group(store.file)
    errors: dict = {}

    def sync(rec):
        rec.record(Call("root#1", "t.echo", "t::echo", (1,)))
        try:
            rec.sync()
        except Exception as e:  # noqa: BLE001  (the test looks at it)
            errors[rec.run_id] = e

    before = group.commits
    with store.file.lock:
        threads = [threading.Thread(target=sync, args=(r,)) for r in recs]
        for t in threads:
            t.start()
        while True:  # every batch waiting (one of them leading, held up by the lock)
            with group._cond:
                if len(group._queue) == len(recs):
                    break
    for t in threads:
        t.join()
    return group.commits - before, errors


def test_the_commits_of_several_runs_waiting_together_are_one_transaction(tmp_path):
    store = Store(tmp_path / "runs.db")
    recs = _recorders(store, 4)
    commits, errors = _sync_all_at_once(store, recs)
    assert (commits, errors) == (1, {})
    for r in recs:
        r.close()
        assert [type(f.fact) for f in store.history.records(r.run_id)] == [Start, Call]
        assert store.history.verify(r.run_id)[0]
    store.close()


def test_one_runs_refusal_in_a_group_commit_leaves_the_others_committed(tmp_path):
    store = Store(tmp_path / "runs.db")
    recs = _recorders(store, 3)
    with store.file.transaction(durable=False) as db:  # another process took r1's lease
        db.execute("UPDATE runs SET owner='elsewhere:1:x' WHERE id='r1'")
    commits, errors = _sync_all_at_once(store, recs)
    assert commits == 1 and list(errors) == ["r1"] and isinstance(errors["r1"], RunBusy)
    for r in recs:
        r.close()
    assert [type(f.fact) for f in store.history.records("r1")] == [Start]
    for run in ("r0", "r2"):
        assert [type(f.fact) for f in store.history.records(run)] == [Start, Call]
        assert store.history.verify(run)[0]
    store.close()
