"""The worker pool wakes threads only as needed (flowrt.engine.tools._Pool), yet every call of a
round still gets a thread of its own as soon as one can reach it: calls that only return once all
of them are running (a barrier) all complete, up to the pool's size, whoever hands them over."""

from __future__ import annotations

import threading
from queue import SimpleQueue

import flowrt as rt
from flowrt.data.requests import ToolSpec
from flowrt.engine.tools import _Pool

ECHO = ToolSpec("t::echo", "t.echo", ("x",), rt.T.ResultOf(rt.T.INT, rt.T.TEXT))


def _jobs(completions, impl, n, tag=""):
    return [(completions, f"{tag}c{i}", impl, ECHO, (i,), (), None) for i in range(n)]


def test_a_round_of_calls_that_wait_for_each_other_all_run_at_once():
    pool = _Pool(max_workers=16)
    barrier = threading.Barrier(16, timeout=10)

    def meet(x):
        barrier.wait()
        return {"Ok": x}

    done: SimpleQueue = SimpleQueue()
    pool.submit_many(_jobs(done, meet, 16))
    got = sorted(done.get(timeout=15) for _ in range(16))
    assert got == sorted((f"c{i}", rt.Ok(i)) for i in range(16))
    assert pool.threads == 16


def test_calls_handed_over_one_at_a_time_still_meet():
    pool = _Pool(max_workers=8)
    barrier = threading.Barrier(8, timeout=10)

    def meet(x):
        barrier.wait()
        return {"Ok": x}

    done: SimpleQueue = SimpleQueue()
    for job in _jobs(done, meet, 8):
        pool.submit(job)
    assert sorted(done.get(timeout=15)[0] for _ in range(8)) == sorted(f"c{i}" for i in range(8))


def test_quick_calls_from_several_threads_all_complete_and_the_pool_stays_bounded():
    pool = _Pool(max_workers=4)
    done: SimpleQueue = SimpleQueue()

    def echo(x):
        return {"Ok": x}

    def hand_over(tag):
        for k in range(20):
            pool.submit_many(_jobs(done, echo, 10, f"{tag}.{k}."))

    threads = [threading.Thread(target=hand_over, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [done.get(timeout=15) for _ in range(4 * 20 * 10)]
    assert len({cid for cid, _ in got}) == 800 and all(type(o) is rt.Ok for _, o in got)
    assert pool.threads <= 4


def test_more_blocked_calls_than_threads_wait_for_a_free_one():
    pool = _Pool(max_workers=2)
    gate = threading.Event()
    done: SimpleQueue = SimpleQueue()

    def held(x):
        gate.wait(10)
        return {"Ok": x}

    pool.submit_many(_jobs(done, held, 5))
    assert done.empty()
    gate.set()
    assert sorted(done.get(timeout=15)[0] for _ in range(5)) == [f"c{i}" for i in range(5)]
    assert pool.threads == 2
