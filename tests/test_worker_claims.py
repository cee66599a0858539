"""Claims and wake-ups of several workers on one store (flowrt.history.worker_records,
flowrt.history.pg): a lease naming a worker on another host is taken only once it expired; on
PostgreSQL a run another worker is claiming is passed over (SKIP LOCKED) rather than waited for,
two workers firing the same due timers fire each once, and a write that lets a run move NOTIFYs the
workers LISTENing on the store when it commits."""

from __future__ import annotations

import threading
import time

import pytest

import flowrt as rt
from flowrt.host.worker import submit

from tests.worker_helpers import program, wait_for


@pytest.fixture
def store(store_url):
    with rt.Store(store_url) as s:
        yield s


def _foreign_lease(store, run_id: str, expires: float) -> None:
    """A lease of a worker on another host (its process cannot be looked at from here)."""
    with store.file.transaction(durable=False) as db:
        db.execute(
            "INSERT OR REPLACE INTO worker_leases VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, "elsewhere:123:abc", 123, "elsewhere", time.time(), expires),
        )
        db.execute("UPDATE runs SET owner=? WHERE id=?", ("elsewhere:123:abc", run_id))


def test_a_lease_of_a_worker_on_another_host_is_taken_over_only_after_it_expires(store):
    run_id = submit(store, program("two_steps"), program="w", input={"n": 1})
    records = store.worker_records
    _foreign_lease(store, run_id, time.time() + 60)
    assert records.claim(run_id, "here:1:me", 5) is False
    assert store.host_records.load_run(run_id).owner == "elsewhere:123:abc"
    assert run_id not in records.expired_leases()
    _foreign_lease(store, run_id, time.time() - 1)
    assert run_id in records.expired_leases()
    assert records.claim(run_id, "here:1:me", 5) is True
    assert records.lease(run_id)[0] == "here:1:me"
    assert store.host_records.load_run(run_id).owner is None  # the old owner's next commit is refused


def test_two_workers_firing_the_same_due_timers_fire_each_once(store_url):
    with rt.Store(store_url) as a, rt.Store(store_url) as b:
        run_id = submit(a, program("two_steps"), program="w", input={"n": 1})
        for i in range(60):
            a.worker_records.add_timer(run_id, f"root#{i}", time.time() - 1)
        got: dict[str, list] = {"a": [], "b": []}

        def fire(name, s):
            while True:
                fired = s.worker_records.fire_due(time.time(), b'{"Ok": null}', limit=5)
                if not fired:
                    return
                got[name] += [c for _, c, _ in fired]

        threads = [threading.Thread(target=fire, args=(n, s)) for n, s in (("a", a), ("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        both = got["a"] + got["b"]
        assert sorted(both) == sorted(f"root#{i}" for i in range(60))  # each once, none twice
        assert all(fired is not None for _, _, _, fired in a.worker_records.timers(run_id))


@pytest.fixture
def pg_pair(pg_store_url):
    with rt.Store(pg_store_url) as a, rt.Store(pg_store_url) as b:
        yield a, b


def test_on_postgresql_a_run_another_worker_is_claiming_is_passed_over_not_waited_for(pg_pair):
    a, b = pg_pair
    run_id = submit(a, program("two_steps"), program="w", input={"n": 1})
    with a.file.transaction(durable=False, whole=False) as db:
        a.file.lock_run(db, run_id)  # another worker's claim transaction, still open
        assert b.worker_records.claim(run_id, "here:2:b", 5) is False
    assert b.worker_records.claim(run_id, "here:2:b", 5) is True  # once it ended
    assert a.worker_records.claim(run_id, "here:3:a", 5) is False  # b's, and b's process lives... here
    assert b.worker_records.lease(run_id)[0] == "here:2:b"


def test_on_postgresql_a_submission_timer_and_cancel_notify_the_listening_workers_at_commit(pg_pair):
    a, b = pg_pair
    heard: list = []
    listener = a.file.listen(heard.append)
    try:
        assert listener.ready.wait(10)
        run_id = submit(b, program("two_steps"), program="w", input={"n": 1})
        b.worker_records.add_timer(run_id, "root#1", time.time() + 60)
        b.worker_records.request_cancel(run_id)
        with pytest.raises(RuntimeError):
            with b.file.transaction() as db:  # a write rolled back notifies no one
                db.notify("probe rolled-back")
                raise RuntimeError("rolled back")
        with b.file.transaction() as db:
            db.notify("probe committed")
        wait_for(lambda: "probe committed" in heard, what="the committed notice")
    finally:
        listener.stop()
    said = [w for w in heard if w is not None]
    assert said == [f"submitted {run_id}", f"timer {run_id}", f"cancel {run_id}", "probe committed"]
