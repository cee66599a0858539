"""Where a durable 100-way fan-out's time goes (not a test): the fan-out of bench/bench_fanout.py
(`fan(n)` of bench/flow/effectful.flow into a new SQLite store, or into a MemoryRecorder with
--memory), driven `--rounds` times inside `functools.reduce`, so that a profiler can count those
drives alone:

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \\
        .venv/bin/python bench/profile_fanout.py --rounds 3
    .venv/bin/python bench/profile_fanout.py --cprofile       # the top functions by own time
    .venv/bin/python bench/profile_fanout.py --time 30        # CPU µs a call, median of 30 drives

Nothing else in flowrt calls functools.reduce. The reply flusher's and the call times' timers
are made long, so that the same commits happen on every drive and instruction counts repeat.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fanout as bf  # noqa: E402

import flowrt as rt  # noqa: E402
from flowrt.data.facts import Start  # noqa: E402
from flowrt.engine import drive as drv  # noqa: E402
from flowrt.history import recorder as R  # noqa: E402
from flowrt.history.store import Store  # noqa: E402


def start(flow: bf.Flow, n: int) -> Start:
    loaded = flow.loaded
    return Start(loaded.program.identity, loaded.program.std, rt.DATA_VERSION, "fan", (n,), ("n",))


def new_store(flow: bf.Flow, n: int, path: Path | None):
    """A new store at `path` holding run "r" (its Start), as the bench makes before timing; None
    for a MemoryRecorder."""
    if path is None:
        return None
    store = Store(path)
    store.history.create_run("r", start(flow, n), flow.loaded.program.sources, {})
    return store


def one_drive(flow: bf.Flow, n: int, store) -> None:
    """One fan-out into `store` (the part bench_fanout.py times: the recorder taking the lease,
    the drive, closing), or into a MemoryRecorder when `store` is None."""
    loaded, st = flow.loaded, start(flow, n)
    rec = drv.MemoryRecorder(keep=False) if store is None else rt.SqliteRecorder(store, "r")
    try:
        opts = drv.DriveOptions(
            recorder=rec, bindings=bf.bindings(), reachable=loaded.reachable(), resolve=loaded.resolve
        )
        out = drv.drive(flow.fan, [st], opts)
    finally:
        if store is not None:
            rec.close()
    assert out == drv.RunCompleted(n * (n - 1) // 2), out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="a MemoryRecorder instead of SQLite")
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--time", type=int, default=0, help="time this many drives (CPU µs a call)")
    args = ap.parse_args(argv)
    R._REPLY_WAIT = R._TIMES_WAIT = 3600.0  # the same commits every drive (the last Reply's sync)
    flow = bf.Flow()
    base = Path(tempfile.mkdtemp(prefix="profile_fanout_", dir="/tmp"))
    k = iter(range(10**9))

    def store():
        return new_store(flow, args.n, None if args.memory else base / f"f{next(k)}.db")

    try:
        one_drive(flow, args.n, store())  # warm: imports, the worker threads, reachable()
        if args.time:
            cpu = []
            for _ in range(args.time):
                s = store()
                c0 = time.process_time()
                one_drive(flow, args.n, s)
                cpu.append(time.process_time() - c0)
            print(
                f"CPU µs a call: median {statistics.median(cpu) / args.n * 1e6:.1f}, "
                f"min {min(cpu) / args.n * 1e6:.1f} ({args.time} drives)"
            )
            return
        stores = [store() for _ in range(args.rounds)]
        drives = lambda acc, s: one_drive(flow, args.n, s)  # noqa: E731
        if args.cprofile:
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            functools.reduce(drives, stores, None)
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(40)
        else:
            functools.reduce(drives, stores, None)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
