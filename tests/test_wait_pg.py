"""Waiting on a run on PostgreSQL (worker_ops.wait_for_change, docs/spec/execution.md "Several
workers"): a run's commit NOTIFYs `flow2py_run` once, naming the run, when it commits (not when
it is rolled back), and a wait LISTENs: it is woken by that notice, not by looking again."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

import flowrt as rt
from flowrt.data.facts import Call, Reply, Start
from flowrt.history import pg as P
from flowrt.history.store import Store, StoreRecorder
from flowrt.host import worker_ops

START = Start("ab" * 32, "std@v1", 1, "main", ("t",), ("ticket",))


def _call(i: int) -> Call:
    return Call(f"c1:root#{i}", "web.search", "web::search", (f"q{i}",))


def _reply(i: int) -> Reply:
    return Reply(f"c1:root#{i}", rt.Ok(f"a{i}"))


def _notices(conn, n: int, timeout: float = 10.0) -> list[str]:
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += [x.payload for x in conn.notifies(timeout=0.2, stop_after=n - len(got))]
    return got


def test_each_commit_of_a_run_waited_on_notifies_its_channel_once_naming_the_run(pg_store_url):
    """A run some process waits on (its key held: `RunWatch.watching`, from another store here)
    is named by a notice at each commit; a run no one waits on sends none."""
    with (
        Store(pg_store_url) as store,
        Store(pg_store_url) as waiter,
        psycopg.connect(pg_store_url, autocommit=True) as listen,
    ):
        schema = listen.execute("SELECT current_schema()").fetchone()[0]
        watch = waiter.file.run_watch()
        store.history.create_run("r1", START, {"main": "x"})
        store.history.create_run("r2", START, {"main": "x"})
        listen.execute(f"LISTEN {P.RUN_CHANNEL}")
        rec = StoreRecorder(store, "r1")
        rec.record(_call(0))
        rec.sync()
        assert _notices(listen, 1, timeout=1.0) == []  # no one waits on r1 yet
        with watch.watching("r1"):
            for i in range(1, 4):
                rec.record(_call(i))
                rec.sync()
            assert _notices(listen, 3) == [f"{schema} r1"] * 3
            rec.close()  # the release: the run's state changed (paused)
            assert _notices(listen, 1) == [f"{schema} r1"]
        with watch.watching("r2"):
            # a commit refused (another process took the lease) is rolled back: no notice
            other = StoreRecorder(store, "r2")
            with store.file.transaction() as db:
                db.execute("UPDATE runs SET owner='elsewhere:1:x' WHERE id='r2'")
            assert _notices(listen, 1, timeout=1.0) == []  # that write is no commit of the run's facts
            other.record(_call(0))
            with pytest.raises(Exception, match="no longer leased"):
                other.sync()
            assert _notices(listen, 1, timeout=1.0) == []
        # a run id with quotes, backslashes and percent signs is named as it is
        odd = "o'd\\d %s \\' ü"
        store.history.create_run(odd, START, {"main": "x"})
        with watch.watching(odd):
            rec = StoreRecorder(store, odd)
            rec.record(_call(0))
            rec.sync()
            assert _notices(listen, 1) == [f"{schema} {odd}"]
        rec.record(_call(1))
        rec.sync()  # waited on no more: no notice
        assert _notices(listen, 1, timeout=1.0) == []
        rec.close()


def test_a_wait_on_postgresql_is_woken_by_the_commit_of_another_connection(pg_store_url, monkeypatch):
    """The waiter looks again only every 60 s here: it returns at once after the writer's
    commit, so the notice woke it (and it saw the commit's fact)."""
    monkeypatch.setattr(worker_ops, "WATCH_LOOK", 60.0)
    with Store(pg_store_url) as writer, Store(pg_store_url) as reader:
        writer.history.create_run("r1", START, {"main": "x"})
        rec = StoreRecorder(writer, "r1")
        rec.record(_call(0))
        rec.sync()
        seen = worker_ops.status(reader, "r1").facts
        watch = reader.file.run_watch()
        entered = threading.Event()
        real_wait = watch.wait
        monkeypatch.setattr(watch, "wait", lambda *a: entered.set() or real_wait(*a))
        out = {}

        def wait():
            out["changed"] = worker_ops.wait_for_change(reader, "r1", seen, 60.0)
            out["woke"] = time.perf_counter()

        t = threading.Thread(target=wait)
        t.start()
        assert entered.wait(10.0) and watch.ready  # waiting on the notice, its LISTEN in place
        rec.record(_reply(0))
        rec.record(_call(1))
        committing = time.perf_counter()
        rec.sync()  # the notice is sent as it commits (the waiter may wake before sync returns)
        t.join(30.0)
        assert not t.is_alive() and out["changed"] is True
        assert watch.notices == 1 and out["woke"] > committing
        assert worker_ops.status(reader, "r1").facts == seen + 2
        rec.close()


def test_a_wait_on_postgresql_with_no_change_times_out_false(pg_store_url):
    with Store(pg_store_url) as store:
        store.history.create_run("r1", START, {"main": "x"})
        seen = worker_ops.status(store, "r1").facts
        t0 = time.monotonic()
        assert worker_ops.wait_for_change(store, "r1", seen, 0.3) is False
        assert time.monotonic() - t0 >= 0.3
