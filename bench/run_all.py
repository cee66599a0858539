"""Every benchmark of bench/, one after the other, each printing its table (not a test).

    .venv/bin/python bench/run_all.py [--quick]

Runs bench_parse, bench_check, bench_collections, bench_store, bench_runtime, bench_pure,
bench_effectful, bench_fanout, bench_replay, bench_input, bench_startup, bench_progress,
bench_worker, bench_json, bench_runs_page, bench_pg (SQLite against PostgreSQL: needs a server),
bench_history_scale and bench_workers_pg (several worker processes on one PostgreSQL store; says
so and exits 0 without a server), each in its own process (so peak RSS figures are its own), and
prints how long each took. --quick passes smaller sizes to the benchmarks that take them.
docs/bench.md summarises the figures against the goals.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

BENCHES = [
    ("bench_parse.py", [], []),
    ("bench_check.py", [], []),
    ("bench_collections.py", [], []),
    ("bench_store.py", [], ["--calls", "300", "--repeat", "3"]),
    ("bench_runtime.py", [], []),
    ("bench_pure.py", [], ["--runs", "3"]),
    ("bench_effectful.py", [], ["--runs", "3", "--rounds", "200000"]),
    ("bench_fanout.py", [], ["--runs", "3"]),
    ("bench_replay.py", [], ["--runs", "3", "--calls", "5000"]),
    ("bench_input.py", [], ["--runs", "3"]),
    ("bench_startup.py", [], ["--runs", "3"]),
    ("bench_progress.py", [], ["--runs", "3", "--calls", "300"]),
    ("bench_worker.py", [], ["--runs", "200", "--replies", "30"]),
    ("bench_json.py", [], ["--runs", "3", "--items", "500"]),
    ("bench_runs_page.py", [], ["--runs", "20000", "--repeat", "5"]),
    ("bench_pg.py", [], ["--calls", "100", "--repeat", "3"]),  # needs a PostgreSQL server
    ("bench_history_scale.py", [], ["--runs", "1", "--facts", "20000", "100000"]),
    ("bench_workers_pg.py", [], ["--runs", "100", "--replies", "10", "--check", "30"]),  # needs a server
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="*", help="names of benchmarks to run (e.g. bench_pure)")
    args = ap.parse_args()
    failed = []
    total = time.perf_counter()
    for name, full, quick in BENCHES:
        if args.only and name.removesuffix(".py") not in args.only and name not in args.only:
            continue
        print(f"\n===== {name} " + "=" * (60 - len(name)), flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(BENCH / name), *(quick if args.quick else full)], cwd=ROOT)
        print(
            f"----- {name}: {time.perf_counter() - t0:.0f} s" + ("" if rc == 0 else f", exit {rc}"),
            flush=True,
        )
        if rc:
            failed.append(name)
    print(
        f"\nall benchmarks: {time.perf_counter() - total:.0f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
