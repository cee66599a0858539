"""The runs page for a store of 100,000 runs (not a test).

    .venv/bin/python bench/bench_runs_page.py [--runs 100000] [--repeat 15] [--dir DIR]
        [--store sqlite|postgresql] [--server URL]

A store of N runs of the support example (examples/support), made directly in SQL for speed: one
real run's Start and records copied N times, 70% completed, 15% paused (an open call), 10%
submitted, 5% faulted, programs "support" and "other" (one run in 10). Then, medians of --repeat:
a page of 50 of `worker_ops.runs` (what GET / and GET /runs answer), unfiltered, filtered by
state (paused; faulted: a rare one), by program, and a deep page (offset 50,000); and the whole
runs page (`GET /` with Accept: text/html) through the HTTP application, unfiltered and by state.
`--store postgresql` makes the store in a schema of its own on `--server` (default
postgresql://postgres@127.0.0.1:5432/postgres, or $FLOW2PY_TEST_PG), dropped after; the page is
taken in SQL on both backends (flowrt.history.worker_records.WorkerRecords.runs_page).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


def build(path, n: int):
    from worker_helpers import support, support_bindings

    from flowrt.host.worker import Worker

    w = Worker(str(path), {"support": support(), "other": support()}, support_bindings(), log=lambda _: None)
    w.submit("support", input={"ticket": "x"}, run_id="seed")
    f = w.store.file
    with f.transaction(durable=False) as db:
        run = db.execute("SELECT * FROM runs WHERE id='seed'").fetchone()
        cols = len(run)
        start = db.execute("SELECT kind, data, hash FROM facts WHERE run='seed' AND n=1").fetchone()
        sub = db.execute("SELECT * FROM worker_submissions WHERE run='seed'").fetchone()
        t0 = time.time() - n
        rows, facts, subs, calls = [], [], [], []
        for i in range(n):
            rid = f"run-{i:06d}"
            k = i % 20
            state = "completed" if k < 14 else "paused" if k < 17 else "halted" if k < 19 else "faulted"
            r = list(run)
            r[0], r[1], r[2] = rid, t0 + i, state
            rows.append(r)
            facts.append((rid, 1, *start))
            program = "other" if i % 10 == 3 else "support"
            subs.append((rid, program, sub[2], t0 + i, None if state == "halted" else t0 + i))
            if state == "paused":
                calls.append((rid, "c1:root#2", "human::ask", 2))
        db.executemany(f"INSERT INTO runs VALUES ({', '.join('?' * cols)})", rows)
        db.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?)", facts)
        db.executemany("INSERT INTO worker_submissions VALUES (?, ?, ?, ?, ?)", subs)
        db.executemany("INSERT INTO open_calls VALUES (?, ?, ?, ?)", calls)
    return w


def timed(fn, repeat: int) -> float:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return median(out) * 1e3


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--server", default=os.environ.get("FLOW2PY_TEST_PG") or DEFAULT_SERVER)
    args = ap.parse_args(argv)
    if args.store == "postgresql":
        from bench_workers_pg import pg_schema

        with pg_schema(args.server) as url:
            return _measure(args, url)
    return _measure(args, None)


def _measure(args, url) -> dict:
    from starlette.testclient import TestClient

    from flowrt.host import http_api, worker_ops

    base = Path(tempfile.mkdtemp(prefix="bench_runs_page_", dir=args.dir or "."))
    try:
        t0 = time.perf_counter()
        w = build(url or str(base / "runs.db"), args.runs)
        print(
            f"Runs page: a store of {args.runs:,} runs on {args.store} (made in {time.perf_counter() - t0:.1f} s); "
            f"medians of {args.repeat}"
        )
        s = w.store
        if url:  # as autovacuum's ANALYZE would after so many rows: the planner's statistics
            with s.file.lock:
                s.file.db.execute("ANALYZE")
        pages = {
            "page of 50, unfiltered": dict(),
            "page of 50, state=paused": dict(state="paused"),
            "page of 50, state=faulted (1 run in 20)": dict(state="faulted"),
            "page of 50, program=other (1 run in 10)": dict(program="other"),
            "page of 50 at offset 50,000, unfiltered": dict(offset=50_000),
            "page of 50 at offset 50,000, state=completed": dict(state="completed", offset=50_000),
        }
        res = {}
        for name, kw in pages.items():
            fn = lambda kw=kw: worker_ops.runs(s, limit=50, **kw)  # noqa: E731
            assert len(fn()) == 50, name
            res[name] = timed(fn, args.repeat)
            print(f"  worker_ops.runs, {name:45s} {res[name]:8.1f} ms")
        for name, kw in pages.items():  # the page's one SQL statement alone (the rest: 50 runs read)
            rec = s.worker_records
            fn = lambda kw=kw: rec.runs_page(kw.get("state"), kw.get("program"), 50, kw.get("offset", 0))  # noqa: E731
            res["SQL: " + name] = timed(fn, args.repeat)
            print(f"  its SQL (runs_page), {name:40s} {res['SQL: ' + name]:8.1f} ms")
        with TestClient(http_api.make_app(w)) as c:
            for name, url in (
                ("GET / (HTML), unfiltered", "/"),
                ("GET / (HTML), state=paused", "/?state=paused"),
            ):
                assert c.get(url, headers={"Accept": "text/html"}).status_code == 200
                res[name] = timed(lambda: c.get(url, headers={"Accept": "text/html"}), args.repeat)
                print(f"  {name:62s} {res[name]:8.1f} ms")
        s.close()
        return res
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
