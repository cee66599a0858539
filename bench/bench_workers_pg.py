"""Several worker processes on one store (not a test): issue 11's check at full size, throughput
with 1, 2 and 4 `flow2py worker` processes, and a reply delivered through one worker's HTTP API
continuing a run another worker may own.

    .venv/bin/python bench/bench_workers_pg.py [--server URL] [--runs 1000] [--workers 1 2 4]
        [--replies 30] [--check 300] [--waits 200] [--only throughput|latency|wait|check] [--sqlite]

Every measurement runs in a schema of its own on the PostgreSQL server (`--server`, default
postgresql://postgres@127.0.0.1:5432/postgres, or $FLOW2PY_TEST_PG), dropped after; `--sqlite`
runs the throughput on a SQLite file too, side by side.

* throughput: `--runs` runs of bench/flow/worker/main.flow (three Tool calls answered at once)
  are submitted (flowrt.host.worker.submit, as `flow2py submit`), then N `flow2py worker`
  processes are started together; timed from the first run a worker took (worker_submissions'
  `started`) to the last run completed. Runs a second = runs / that time.
* latency: two worker processes, A serving the HTTP API (`--http`), B not. Each run pauses on
  `steps.first` (left open); the bench POSTs the reply to A (`/runs/{id}/replies`), and
  `steps.second`'s implementation (in whichever process took the run) appends the wall time and
  its pid to a file. Figure: POST sent to the next call dispatched (its Call committed first),
  split by which worker continued the run: B, woken by A's NOTIFY at commit, or A itself.
* wait: `wait_for_change` on a run (a thread, its own store and connections) while another store
  commits the run's next facts (a Reply and a Call, `sync()`), `--waits` times, the waiter given
  10-50 ms to settle first: from the writer's `sync()` called to the wait returned, on PostgreSQL
  (LISTEN: woken by the commit's NOTIFY) and on a SQLite file (polling 5-100 ms), side by side.
* check: tests/test_workers_pg.py's scenario with `--check` runs (three workers, one SIGKILLed
  half-way; every run completes, verify intact, replay Matched, no call sent twice outside
  `on_crash="resend"`), timed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from _common import FLOW

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
NAME = "worker3"
TOOLS = """\
import os, time
import flowrt

LOG = os.environ.get("SIDE_LOG")
PENDING = os.environ.get("FIRST_PENDING") == "1"


@flowrt.bind("steps.first")
def first(n):
    return flowrt.pending if PENDING else {"Ok": n + 1}


@flowrt.bind("steps.second")
def second(n):
    if LOG:
        run = flowrt.current_call().run_id
        fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{run} {os.getpid()} {time.time()!r}\\n".encode())
        os.close(fd)
    return {"Ok": n + 1}


@flowrt.bind("steps.third")
def third(n):
    return {"Ok": n + 1}
"""


def _with_schema(url: str, schema: str) -> str:
    from urllib.parse import quote

    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={schema}')}"


@contextmanager
def pg_schema(server: str):
    import psycopg

    schema = f"bench_{secrets.token_hex(5)}"
    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {schema}")
    try:
        yield _with_schema(server, schema)
    finally:
        with psycopg.connect(server, autocommit=True) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _load():
    from flow2py import host
    from flow2py.diagnostics import render_text

    r = host.check(str(FLOW / "worker" / "main.flow"))
    if r.diagnostics:
        raise SystemExit(render_text(r.diagnostics, r.sources))
    return host.Loaded(r.program)


def start_worker(folder: Path, store: str, name: str, *extra, **env) -> tuple[subprocess.Popen, Path]:
    err = folder / f"{name}.err"
    p = subprocess.Popen(
        [sys.executable, "-m", "flow2py.cli", "worker", f"{NAME}={FLOW / 'worker' / 'main.flow'}"]
        + ["--tools", str(folder / "tools.py"), "--store", store, "--grace", "0.5", *extra],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=open(err, "w"),
        env=dict(os.environ, **env),
    )
    return p, err


def _ready(err: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while "flow2py worker: serving" not in err.read_text(encoding="utf-8"):
        if time.monotonic() > deadline:
            raise SystemExit(f"{err.name}: the worker did not start: {err.read_text()[-500:]}")
        time.sleep(0.05)


def _stop(procs) -> None:
    for p, _ in procs:
        if p.poll() is None:
            p.kill()
            p.wait(30)


def throughput(prog, folder: Path, store_url: str, runs: int, workers: int) -> dict:
    import flowrt as rt
    from flowrt.host import worker as wk

    with rt.Store(store_url) as store:
        t0 = time.perf_counter()
        for i in range(runs):
            wk.submit(store, prog, program=NAME, input={"n": i})
        submitted = time.perf_counter() - t0
        procs = [start_worker(folder, store_url, f"t{workers}_{i}") for i in range(workers)]
        try:
            db = store.file.db
            deadline = time.monotonic() + 1200
            while True:
                done = db.execute("SELECT count(*) FROM runs WHERE state='completed'").fetchone()[0]
                if done == runs:
                    end = time.time()
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"only {done} of {runs} runs completed in 1200 s")
                time.sleep(0.02)
            first = db.execute("SELECT min(started) FROM worker_submissions").fetchone()[0]
        finally:
            _stop(procs)
    drain = end - first
    return {
        "runs": runs,
        "workers": workers,
        "submit_s": submitted,
        "drain_s": drain,
        "runs_per_s": runs / drain,
    }


def _post(url: str, body: dict) -> int:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status


def latency(prog, folder: Path, store_url: str, count: int) -> dict:
    import socket

    import flowrt as rt
    from flowrt.host import worker as wk

    log = folder / "second.log"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(SIDE_LOG=str(log), FIRST_PENDING="1")
    a = start_worker(folder, store_url, "http_a", "--http", f"127.0.0.1:{port}", **env)
    b = start_worker(folder, store_url, "other_b", **env)
    by: dict[str, list] = collections.defaultdict(list)
    try:
        _ready(a[1])
        _ready(b[1])
        pids = {a[0].pid: "A (the HTTP worker)", b[0].pid: "B (another worker)"}
        with rt.Store(store_url) as store:
            for i in range(count):
                run_id = wk.submit(store, prog, program=NAME, input={"n": i})
                st = wk.status(store, run_id)
                while st.state != "paused":
                    wk.wait_for_change(store, run_id, st.facts, 5.0)
                    st = wk.status(store, run_id)
                sent = time.time()
                url = f"http://127.0.0.1:{port}/runs/{run_id}/replies"
                assert _post(url, {"call": "root#1", "reply": {"Ok": i}}) == 202
                deadline = time.monotonic() + 30
                while True:
                    lines = log.read_text().splitlines() if log.exists() else []
                    hit = [ln.split() for ln in lines if ln.startswith(run_id + " ")]
                    if hit:
                        break
                    if time.monotonic() > deadline:
                        raise SystemExit(f"run {run_id}: the next call was not dispatched within 30 s")
                    time.sleep(0.0005)
                _, pid, at = hit[0]
                by[pids.get(int(pid), pid)].append(float(at) - sent)
    finally:
        _stop([a, b])
    return by


def wait_latency(store_url: str, count: int) -> dict:
    """(sync() called -> wait_for_change returned, sync()'s own time), seconds, `count` of each."""
    import threading

    import flowrt as rt
    from flowrt.data.facts import Call, Reply, Start
    from flowrt.history.store import Store, StoreRecorder
    from flowrt.host import worker_ops

    def call(i):
        return Call(f"c1:root#{i}", "web.search", "web::search", (f"q{i}",))

    woke, commits = [], []
    with Store(store_url) as writer, Store(store_url) as reader:
        writer.history.create_run("w1", Start("ab" * 32, "std@v1", 1, "main", ("t",), ("t",)), {"main": "x"})
        rec = StoreRecorder(writer, "w1")
        rec.record(call(0))
        rec.sync()
        for i in range(count):
            seen = worker_ops.status(reader, "w1").facts
            out = {}
            t = threading.Thread(
                target=lambda: out.update(
                    changed=worker_ops.wait_for_change(reader, "w1", seen, 10.0), at=time.perf_counter()
                )
            )
            t.start()
            time.sleep(0.01 + (i % 5) * 0.01)  # the waiter waiting (on SQLite: at some point of its backoff)
            rec.record(Reply(f"c1:root#{i}", rt.Ok(i)))
            rec.record(call(i + 1))
            t0 = time.perf_counter()
            rec.sync()
            commits.append(time.perf_counter() - t0)
            t.join(30)
            assert out.get("changed") is True, "the wait did not see the commit"
            woke.append(out["at"] - t0)
        rec.close()
    return {"woke": woke, "commit": commits}


def check(folder: Path, store_url: str, runs: int) -> float:
    env = dict(os.environ, FLOW2PY_TEST_WORKER_RUNS=str(runs), FLOW2PY_TEST_PG=store_url.partition("?")[0])
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", "tests/test_workers_pg.py"],
        cwd=ROOT,
        env=env,
    )
    if r.returncode != 0:
        raise SystemExit(f"the check with {runs} runs failed (exit {r.returncode})")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=os.environ.get("FLOW2PY_TEST_PG") or DEFAULT_SERVER)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--replies", type=int, default=30)
    ap.add_argument("--check", type=int, default=300)
    ap.add_argument("--waits", type=int, default=200)
    ap.add_argument("--only", choices=["throughput", "latency", "wait", "check"])
    ap.add_argument("--sqlite", action="store_true", help="the throughput on a SQLite file too")
    args = ap.parse_args()
    try:
        import psycopg

        psycopg.connect(args.server, connect_timeout=3).close()
    except Exception as e:  # noqa: BLE001  (no server: say so, one line)
        print(f"bench_workers_pg: no PostgreSQL server at {args.server}: {str(e).strip().splitlines()[0]}")
        return 0
    prog = _load()
    with tempfile.TemporaryDirectory(prefix="bench-workers-", dir=".") as tmp:
        folder = Path(tmp).resolve()
        (folder / "tools.py").write_text(TOOLS, encoding="utf-8")
        if args.only in (None, "latency"):
            with pg_schema(args.server) as url:
                by = latency(prog, folder, url, args.replies)
            print(
                f"reply through worker A's HTTP API -> next call dispatched, {args.replies} runs (PostgreSQL):"
            )
            for who, xs in sorted(by.items()):
                p90 = statistics.quantiles(xs, n=10)[8] * 1e3 if len(xs) >= 2 else xs[0] * 1e3
                print(
                    f"  continued by {who}: {len(xs)} runs, median {statistics.median(xs) * 1e3:.1f} ms, p90 {p90:.1f} ms"
                )
        if args.only in (None, "wait"):
            print(f"a wait on a run woken by another store's commit, {args.waits} commits (ms):")
            for label in ("PostgreSQL", "SQLite"):
                if label == "SQLite":
                    w = wait_latency(str(folder / "wait.db"), args.waits)
                else:
                    with pg_schema(args.server) as url:
                        w = wait_latency(url, args.waits)
                q = statistics.quantiles(w["woke"], n=10)
                after = [a - c for a, c in zip(w["woke"], w["commit"])]  # from the sync() returned
                print(
                    f"  {label:10} sync() called -> wait returned: median {statistics.median(w['woke']) * 1e3:.2f}, "
                    f"p10 {q[0] * 1e3:.2f}, p90 {q[8] * 1e3:.2f}; the sync() itself: median "
                    f"{statistics.median(w['commit']) * 1e3:.2f}; sync() returned -> wait returned: median "
                    f"{statistics.median(after) * 1e3:.2f}, p90 {statistics.quantiles(after, n=10)[8] * 1e3:.2f}"
                )
        if args.only in (None, "throughput"):
            print(f"throughput: {args.runs} runs of 3 Tool calls, N worker processes (concurrency 8 each)")
            backends = [("PostgreSQL", None)] + ([("SQLite", "sqlite")] if args.sqlite else [])
            for label, kind in backends:
                for n in args.workers:
                    if kind == "sqlite":
                        url = str(folder / f"t{n}.db")
                        t = throughput(prog, folder, url, args.runs, n)
                    else:
                        with pg_schema(args.server) as url:
                            t = throughput(prog, folder, url, args.runs, n)
                    print(
                        f"  {label:10} {n} worker(s): {t['runs_per_s']:.0f} runs/s "
                        f"(drained in {t['drain_s']:.2f} s; submitting took {t['submit_s']:.2f} s)"
                    )
        if args.only in (None, "check"):
            took = check(folder, args.server, args.check)
            print(f"check: {args.check} runs, three workers, one SIGKILLed half-way: passed in {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
