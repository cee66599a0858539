"""The store on SQLite against PostgreSQL, side by side (not a test).

    .venv/bin/python bench/bench_pg.py [--calls 300] [--repeat 5] [--server URL] [--dir DIR]

Alternating in one run, medians of `--repeat` runs of `--calls` durable Tool calls each:

* the recorder on SQLite (a file under --dir, WAL, synchronous=FULL for the Call's commit) and on
  PostgreSQL (a fresh database on --server, default $FLOW2PY_TEST_PG or postgres@127.0.0.1:5432,
  dropped after): record a Call, `sync()` (durable: before dispatch), record a Reply, `sync()`;
* the PostgreSQL floor: raw psycopg, one durable commit per Tool call inserting the same two rows
  (what the dialect layer, the lease check and the host records cost on top);
* reading back: `verify` of the run, facts/s, on each backend.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import psycopg

import flowrt as rt
from flowrt.data.facts import Call, Reply, Start
from flowrt.history import trace as T
from flowrt.history.store import Store, StoreRecorder


def _call(i: int) -> Call:
    return Call(f"c1:root#{i}", "web.search", "web::search", (f"safari login cookie {i}",))


def _reply(i: int) -> Reply:
    return Reply(f"c1:root#{i}", rt.Ok(f"SameSite=None requires Secure {i}"))


def recorder(url: str, run: str, calls: int) -> tuple[float, float]:
    """(seconds per durable Tool call, verify facts/s)."""
    with Store(url) as store:
        store.history.create_run(
            run, Start("ab" * 32, "std@v1", 1, "main", ("t",), ("ticket",)), {"main": "x"}
        )
        facts = [(_call(i), _reply(i)) for i in range(calls)]
        rec = StoreRecorder(store, run)
        t0 = time.perf_counter()
        for c, r in facts:
            rec.record(c)
            rec.sync()  # before dispatch: durable
            rec.record(r)
            rec.sync()  # carried by the next Call's commit
        dt = time.perf_counter() - t0
        rec.close()
        t0 = time.perf_counter()
        ok, _, _ = store.history.verify(run)
        assert ok
        return dt / calls, (2 * calls + 1) / (time.perf_counter() - t0)


def pg_floor(url: str, calls: int) -> float:
    rows = [(T.encode_fact(_call(i)).data, T.encode_fact(_reply(i)).data) for i in range(calls)]
    h = bytes(32)
    run = "floor" + secrets.token_hex(3)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_facts (run TEXT NOT NULL, n BIGINT NOT NULL, kind BIGINT NOT NULL, "
            "data BYTEA NOT NULL, hash BYTEA NOT NULL, PRIMARY KEY (run, n))"
        )
        t0 = time.perf_counter()
        for i, (c, r) in enumerate(rows):
            with conn.transaction():
                conn.execute("INSERT INTO floor_facts VALUES (%s, %s, 2, %s, %s)", (run, 2 * i + 2, c, h))
                conn.execute("INSERT INTO floor_facts VALUES (%s, %s, 3, %s, %s)", (run, 2 * i + 3, r, h))
        return (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--server",
        default=os.environ.get("FLOW2PY_TEST_PG") or "postgresql://postgres@127.0.0.1:5432/postgres",
    )
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    name = f"flow2py_bench_{secrets.token_hex(4)}"
    admin = psycopg.connect(args.server, autocommit=True)
    admin.execute(f"CREATE DATABASE {name}")
    head, _, _ = args.server.partition("?")[0].rpartition("/")
    url = f"{head}/{name}"
    base = Path(tempfile.mkdtemp(prefix="bench_pg_", dir=args.dir or "."))
    lite, pg, floor, vl, vp = [], [], [], [], []
    try:
        for k in range(args.repeat):  # alternating, so load on the machine falls on both alike
            t, v = recorder(str(base / f"rec{k}.db"), "r", args.calls)
            lite.append(t)
            vl.append(v)
            t, v = recorder(url, f"r{k}", args.calls)
            pg.append(t)
            vp.append(v)
            floor.append(pg_floor(url, args.calls))
    finally:
        shutil.rmtree(base, ignore_errors=True)
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()
    med = statistics.median
    print(f"{args.calls} durable Tool calls x {args.repeat} runs, alternating, medians")
    print(f"  recorder on SQLite:         {med(lite) * 1e6:8.1f} us / Tool call")
    print(
        f"  recorder on PostgreSQL:     {med(pg) * 1e6:8.1f} us / Tool call"
        f"   ratio {med(pg) / med(lite):.2f}x SQLite"
    )
    print(
        f"  PostgreSQL floor (psycopg): {med(floor) * 1e6:8.1f} us / Tool call"
        f"   recorder {med(pg) / med(floor):.2f}x the floor"
    )
    print(f"  verify: SQLite {med(vl):,.0f} facts/s, PostgreSQL {med(vp):,.0f} facts/s")


if __name__ == "__main__":
    main()
