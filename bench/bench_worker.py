"""Worker benchmark (not a test): runs a second through one worker, and reply-to-next-call latency.

    .venv/bin/python bench/bench_worker.py [--runs 1000] [--concurrency 8] [--replies 100] [--dir DIR]
        [--only throughput|latency]

The program is bench/flow/worker/main.flow: three Tool calls in a row (`steps.first`, `second`,
`third`), each answered at once by a Python implementation.

* throughput: `--runs` runs are submitted to the store (flowrt.host.worker.submit, as `flow2py
  submit` does), then one `Worker` with `--concurrency` threads is started and timed until every
  run has completed (each run: Start, 3 Calls fsynced before they are sent, 3 Replies, End). Runs
  a second = runs / that time. Submitting is timed on its own.
* latency: `steps.first` is left open (`pending`), so each run pauses on it. Over a real HTTP
  server (uvicorn on 127.0.0.1, `flowrt.host.http_api.serve`'s server) the bench POSTs the
  reply, and `steps.second`'s implementation notes when it is entered: the next Tool call
  dispatched. Two figures per run: from the moment the request was sent (HTTP, admission, the
  store's commit of the delivered reply, waking the worker, taking the lease, reading the run,
  recording the Reply and the next Call), and from the moment the server had accepted the reply
  (the worker's `deliver` returned: the reply is in the store). Goal (issue 9): median under 10 ms.

The store is a file under `--dir` (default: a folder under the current one, never a tmpfs: fsync
would be free). docs/bench.md holds the figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from _common import FLOW, verdict

import flowrt as rt
from flowrt.engine.tools import current_call
from flowrt.host import http_api
from flowrt.host import worker as wk

NAME = "worker3"


def _load():
    from flow2py import host
    from flow2py.diagnostics import render_text

    r = host.check(str(FLOW / "worker" / "main.flow"))
    if r.diagnostics:
        raise SystemExit(render_text(r.diagnostics, r.sources))
    return host.Loaded(r.program)


def _quiet(line: str) -> None:
    pass


def _completed(db: Path) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM runs WHERE state='completed'").fetchone()[0]
    finally:
        con.close()


def throughput(prog, folder: Path, runs: int, concurrency: int) -> dict:
    db = folder / "throughput.db"
    b = rt.Bindings()
    for step in ("first", "second", "third"):
        b.bind(f"steps.{step}", lambda n: {"Ok": n + 1})
    store = rt.Store(str(db))
    t0 = time.perf_counter()
    for i in range(runs):
        wk.submit(store, prog, program=NAME, input={"n": i}, run_id=f"t{i}")
    submitted = time.perf_counter() - t0
    w = wk.Worker(store, {NAME: prog}, b, concurrency=concurrency, poll_seconds=0.05, log=_quiet)
    t0 = time.perf_counter()
    w.start()
    deadline = time.monotonic() + 600
    while _completed(db) < runs:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {_completed(db)} of {runs} runs completed in 600 s")
        time.sleep(0.05)
    drained = time.perf_counter() - t0
    w.stop()
    states = {s.state for s in wk.runs(store)}
    assert states == {"completed"}, states
    store.close()
    return {"runs": runs, "submit_s": submitted, "drain_s": drained, "runs_per_s": runs / drained}


def _post(url: str, body: dict) -> int:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status


def latency(prog, folder: Path, count: int, concurrency: int) -> dict:
    db = folder / "latency.db"
    dispatched: dict[str, float] = {}
    entered = threading.Condition()

    def second(n):
        with entered:
            dispatched[current_call().run_id] = time.perf_counter()
            entered.notify_all()
        return {"Ok": n + 1}

    b = rt.Bindings()
    b.bind("steps.first", lambda n: rt.pending)
    b.bind("steps.second", second)
    b.bind("steps.third", lambda n: {"Ok": n + 1})
    w = wk.Worker(str(db), {NAME: prog}, b, concurrency=concurrency, poll_seconds=0.05, log=_quiet)
    accepted: dict[str, float] = {}
    deliver = w.deliver

    def timed_deliver(run_id, call_id, reply):
        deliver(run_id, call_id, reply)
        accepted[run_id] = time.perf_counter()

    w.deliver = timed_deliver
    w.start()
    server = http_api.make_server(w, port=0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    from_sent, from_accepted, floors = [], [], []
    probe = _FloorProbe(folder / "probe.db")
    try:
        for i in range(count):
            run_id = f"l{i}"
            assert _post(base + "/runs", {"program": NAME, "input": {"n": i}, "run_id": run_id}) == 201
            st = w.status(run_id)
            while st.state != "paused":
                wk.wait_for_change(w.store, run_id, st.facts, 5.0)
                st = w.status(run_id)
            floors.append(probe.commit())  # the disk right now, side by side with this reply
            sent = time.perf_counter()
            assert _post(base + f"/runs/{run_id}/replies", {"call": "root#1", "reply": {"Ok": i}}) == 202
            with entered:
                if not entered.wait_for(lambda: run_id in dispatched, timeout=30):
                    raise SystemExit(f"run {run_id}: the next call was not dispatched within 30 s")
            from_sent.append(dispatched[run_id] - sent)
            from_accepted.append(dispatched[run_id] - accepted[run_id])
    finally:
        probe.close()
        server.should_exit = True
        thread.join(10)
        w.stop()
    return {"from_sent": from_sent, "from_accepted": from_accepted, "floors": floors}


class _FloorProbe:
    """One fsynced SQLite commit (WAL, synchronous=FULL) in the bench's folder, timed: the disk's
    floor, which the reply-to-next-call path pays several times (the reply's commit, the leases,
    the next Call before it is sent). The disk is shared and its speed moves by 10x within
    seconds here, so the latency runs take one probe beside each reply."""

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")

    def commit(self) -> float:
        t0 = time.perf_counter()
        self.db.execute("BEGIN")
        self.db.execute("INSERT INTO t VALUES (1)")
        self.db.execute("COMMIT")
        return time.perf_counter() - t0

    def close(self) -> None:
        self.db.close()


def fsync_floor(folder: Path, commits: int = 100) -> float:
    """Median seconds of one fsynced commit, over `commits` in a row."""
    probe = _FloorProbe(folder / "floor.db")
    try:
        return statistics.median(probe.commit() for _ in range(commits))
    finally:
        probe.close()


def _ms(xs: list, q: float) -> float:
    return statistics.quantiles(xs, n=10)[8] * 1e3 if q == 0.9 else statistics.median(xs) * 1e3


def _report_throughput(t: dict, concurrency: int) -> None:
    print(f"throughput: {t['runs']} runs of 3 Tool calls through one worker (concurrency {concurrency})")
    print(f"  submit: {t['submit_s']:.2f} s ({t['runs'] / t['submit_s']:.0f} runs/s)")
    rate = t["runs_per_s"]
    print(f"  drain:  {t['drain_s']:.2f} s: {rate:.1f} runs/s, {3 * rate:.0f} Tool calls/s")


def _report_latency(lat: dict) -> None:
    floors = lat["floors"]
    print(
        f"the disk beside each reply, one fsynced commit: median {_ms(floors, 0.5):.2f} ms, "
        f"p90 {_ms(floors, 0.9):.2f} ms"
    )
    for key, what in (("from_sent", "HTTP request sent"), ("from_accepted", "reply accepted (in the store)")):
        xs = lat[key]
        ratio = statistics.median(x / f for x, f in zip(xs, floors))
        print(
            f"latency, {what} -> next Tool call dispatched ({len(xs)} runs): "
            f"median {_ms(xs, 0.5):.2f} ms, p90 {_ms(xs, 0.9):.2f} ms, max {max(xs) * 1e3:.2f} ms; "
            f"median {ratio:.1f}x the fsync beside it"
        )
    ok = _ms(lat["from_accepted"], 0.5) < 10  # the goal's own measure: from the reply accepted
    print(f"goal: reply accepted -> next call dispatched, median under 10 ms: {verdict(ok)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--replies", type=int, default=100, help="runs answered over HTTP, one at a time")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--only", choices=("throughput", "latency"), default=None)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-worker-", dir=args.dir or "."))
    try:
        prog = _load()
        if args.only != "latency":
            _report_throughput(throughput(prog, folder, args.runs, args.concurrency), args.concurrency)
        print(
            f"the disk's floor, one fsynced SQLite commit here: {fsync_floor(folder) * 1e3:.2f} ms (median)"
        )
        if args.only != "throughput":
            _report_latency(latency(prog, folder, args.replies, args.concurrency))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
