"""Worker benchmark (not a test): runs per second under one worker, and the latency from a reply
accepted to the next Tool call dispatched.

    .venv/bin/python bench/bench_worker.py [--runs 200] [--replies 30] [--concurrency 8] [--dir DIR]

* throughput: `--runs` runs of three Tool calls each are submitted to the store, then one worker
  (flowrt.host.worker.Worker, in this process) is started; the time until every run is completed,
  as runs per second (every Call fsynced before it is sent, as always).
* reply-to-next-call: a run waits on `svc.ask` (left pending); `Worker.deliver` returns (the reply
  admitted and kept), and the time until `svc.step`, the call that follows it, is entered in its
  implementation. Median and 90th percentile of `--replies` runs, one at a time. Goal (issue 9):
  median under 10 ms on this machine.

The directory matters: a tmpfs makes fsync free; the default is a folder under the current one.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import flowrt as rt
from flow2py.host import compile_path
from flowrt.host.worker import Worker, status

SVC = "@tool pub flow step(n: Int) -> Result<Int, Text>\n@tool pub flow ask(q: Text) -> Result<Text, Text>\n"
THREE = """\
use "./svc"

pub flow main(n: Int) -> Int !tool = {
    let a = match svc.step(n) { Ok(v) => v, Err(_) => 0 }
    let b = match svc.step(a) { Ok(v) => v, Err(_) => 0 }
    match svc.step(b) { Ok(v) => v, Err(_) => 0 }
}
"""
ASK_THEN_STEP = """\
use "./svc"

pub flow main(q: Text) -> Int !tool = match svc.ask(q) {
    Ok(_) => match svc.step(1) { Ok(v) => v, Err(_) => 0 },
    Err(_) => 0,
}
"""


def _program(d: Path, name: str, text: str):
    (d / name).mkdir(parents=True)
    (d / name / "main.flow").write_text(text, encoding="utf-8")
    (d / name / "svc.flow").write_text(SVC, encoding="utf-8")
    return compile_path(str(d / name / "main.flow"))


def _wait(store, run_id: str, state: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while status(store, run_id).state != state:
        if time.monotonic() > deadline:
            raise SystemExit(f"run {run_id} did not reach {state}")
        time.sleep(0.005)


def throughput(d: Path, runs: int, concurrency: int) -> float:
    prog = _program(d, "three", THREE)
    b = rt.Bindings()
    b.bind("svc.step", lambda n: {"Ok": n + 1})
    with rt.Store(d / "three.db") as store:
        w = Worker(store, {"three": prog}, b, concurrency=concurrency, poll_seconds=0.05, log=lambda _: None)
        ids = [w.submit("three", input={"n": i}) for i in range(runs)]
        t0 = time.perf_counter()
        w.start()
        for r in ids:
            _wait(store, r, "completed")
        took = time.perf_counter() - t0
        w.stop()
    return runs / took


def reply_latency(d: Path, replies: int) -> list[float]:
    prog = _program(d, "ask", ASK_THEN_STEP)
    entered = threading.Event()
    at: list[float] = []

    def step(n):
        at.append(time.perf_counter())
        entered.set()
        return {"Ok": n}

    b = rt.Bindings()
    b.bind("svc.ask", lambda q: rt.pending)
    b.bind("svc.step", step)
    out = []
    with rt.Store(d / "ask.db") as store:
        w = Worker(store, {"ask": prog}, b, poll_seconds=0.5, log=lambda _: None).start()
        for i in range(replies + 3):  # the first three warm up
            run_id = w.submit("ask", input={"q": str(i)})
            _wait(store, run_id, "paused")
            entered.clear()
            w.deliver(run_id, "root#1", {"Ok": "yes"})
            t0 = time.perf_counter()
            entered.wait(30)
            if i >= 3:
                out.append(at[-1] - t0)
            _wait(store, run_id, "completed")
        w.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--replies", type=int, default=30)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="bench-worker-", dir=args.dir or "."))
    try:
        rps = throughput(d, args.runs, args.concurrency)
        lat = sorted(reply_latency(d, args.replies))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    p90 = lat[int(0.9 * (len(lat) - 1))]
    print(f"{'measure':<44} {'value':>12}")
    print(f"{f'{args.runs} runs x 3 Tool calls, one worker':<44} {rps:>8.1f} runs/s")
    print(f"{'reply accepted -> next Tool call, median':<44} {statistics.median(lat) * 1e3:>9.2f} ms")
    print(f"{'reply accepted -> next Tool call, p90':<44} {p90 * 1e3:>9.2f} ms")


if __name__ == "__main__":
    main()
