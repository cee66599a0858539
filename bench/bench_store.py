"""Store benchmark (not a test): durable Tool calls, history size, reading speed.

    .venv/bin/python bench/bench_store.py [--calls 300] [--repeat 5] [--dir DIR]

Side by side in one run, medians of `--repeat` runs:

* floor: raw SQLite appends into a table of the same shape as `facts`, WAL, synchronous=FULL,
  one commit per simulated Tool call (a Call row and a Reply row of precomputed bytes);
* recorder: SqliteRecorder recording a Call, `sync()` (before dispatch: fsynced), then a Reply,
  `sync()` (before delivery: committed, not fsynced), per Tool call. Goal: within 1.5x of the floor.
* history bytes per Tool call (fact bytes + chain hash, and file growth); goal < 200 bytes.
* reading: decode (records) and verify (chain) in facts/s.

The directory matters: a tmpfs makes fsync free; the default is a folder under the current one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import flowrt as rt
from flowrt.history import trace as T
from flowrt.data.facts import Call, Reply, Start
from flowrt.history.store import SqliteRecorder, Store


def _call(i: int) -> Call:
    return Call(f"c1:root#{i}", "web.search", "web::search", (f"safari login cookie {i}",))


def _reply(i: int) -> Reply:
    return Reply(f"c1:root#{i}", rt.Ok(f"SameSite=None requires Secure {i}"))


def floor(path: Path, calls: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(
        "CREATE TABLE facts (run TEXT NOT NULL, n INTEGER NOT NULL, kind INTEGER NOT NULL, "
        "data BLOB NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (run, n)) WITHOUT ROWID"
    )
    rows = [(T.encode_fact(_call(i)).data, T.encode_fact(_reply(i)).data) for i in range(calls)]
    h = bytes(32)
    t0 = time.perf_counter()
    for i, (c, r) in enumerate(rows):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO facts VALUES ('r', ?, 2, ?, ?)", (2 * i + 2, c, h))
        db.execute("INSERT INTO facts VALUES ('r', ?, 3, ?, ?)", (2 * i + 3, r, h))
        db.execute("COMMIT")
    dt = time.perf_counter() - t0
    db.close()
    return dt / calls


def _file_size(store: Store) -> int:
    store.file.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(store.path)


def recorder(path: Path, calls: int) -> tuple[float, Store, int]:
    store = Store(path)
    store.history.create_run("r", Start("ab" * 32, "std@v1", 1, "main", ("t",), ("ticket",)), {"main": "x"})
    empty = _file_size(store)
    facts = [(_call(i), _reply(i)) for i in range(calls)]
    rec = SqliteRecorder(store, "r")
    t0 = time.perf_counter()
    for c, r in facts:
        rec.record(c)
        rec.sync()  # before dispatch
        rec.record(r)
        rec.sync()  # before the program sees the reply
    dt = time.perf_counter() - t0
    rec.close()
    return dt / calls, store, empty


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench_store_", dir=args.dir or "."))
    fl, rc, dec, ver, size_rows, size_file = [], [], [], [], [], []
    try:
        for k in range(args.repeat):
            fl.append(floor(base / f"floor{k}.db", args.calls))
            t, store, empty = recorder(base / f"rec{k}.db", args.calls)
            rc.append(t)
            n = args.calls * 2 + 1
            t0 = time.perf_counter()
            store.history.records("r")
            dec.append(n / (time.perf_counter() - t0))
            t0 = time.perf_counter()
            ok, _, _ = store.history.verify("r")
            assert ok
            ver.append(n / (time.perf_counter() - t0))
            rows = store.file.db.execute(
                "SELECT sum(length(data) + length(hash)) FROM facts WHERE n > 1"
            ).fetchone()[0]
            size_rows.append(rows / args.calls)
            size_file.append((_file_size(store) - empty) / args.calls)
            store.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    med = statistics.median
    print(f"{args.calls} Tool calls x {args.repeat} runs, medians")
    print(f"  floor (raw SQLite, 1 fsynced commit per call): {med(fl) * 1e6:8.1f} us / Tool call")
    print(
        f"  SqliteRecorder (Call+sync, Reply+sync):        {med(rc) * 1e6:8.1f} us / Tool call"
        f"   ratio {med(rc) / med(fl):.2f}x (goal <= 1.5x)"
    )
    print(
        f"  history: {med(size_rows):.0f} bytes / Tool call in fact rows (data + hash; goal < 200),"
        f" {med(size_file):.0f} bytes / Tool call of file growth (pages included)"
    )
    print(f"  read: decode {med(dec):,.0f} facts/s, verify {med(ver):,.0f} facts/s")


if __name__ == "__main__":
    main()
