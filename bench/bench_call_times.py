"""The cost of the host's call times (`call_times`) on a durable Tool call (not a test).

    .venv/bin/python bench/bench_call_times.py [--calls 3000] [--rounds 15] [--dir DIR] [--before PATH]

`echo_loop` (bench/flow/effectful.flow, one Tool call a round) driven as the host's live path drives
it (bench_effectful's `durable_run`), with this flowrt's recorder, which writes a `call_times` row
per Call and updates it per Reply inside the commit it makes anyway, and with the recorder of
`--before` (a recorder.py without call_times, e.g. the main checkout's
runtime/history/recorder.py), loaded beside it, alternating in one process. The figure is the
process's CPU time a call (medians); --dir on a tmpfs makes fsync free, so it is the CPU the
recorder and driver spend, not the disk's wait.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, median  # noqa: E402
from bench_effectful import bindings, start_fact  # noqa: E402

from flowrt.engine import drive as drv  # noqa: E402
from flowrt.history.recorder import SqliteRecorder  # noqa: E402
from flowrt.history.store import Store  # noqa: E402


def _before(path: str):
    spec = importlib.util.spec_from_file_location("recorder_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SqliteRecorder


def one(loaded, fn, recorder_class, path: Path, calls: int) -> float:
    store = Store(path)
    st = start_fact(loaded, "echo_loop", (calls, 0), ("n", "acc"))
    store.history.create_run("r", st, loaded.program.sources, {"entry_module": loaded.checked.entry_module})
    c0 = time.process_time()
    rec = recorder_class(store, "r")
    try:
        out = drv.drive(
            fn,
            [st],
            drv.DriveOptions(
                first=1,
                mode="live",
                recorder=rec,
                bindings=bindings(),
                reachable=loaded.reachable(),
                resolve=loaded.resolve,
            ),
        )
    finally:
        rec.close()
    cpu = time.process_time() - c0
    assert out == drv.RunCompleted(calls * (calls + 1) // 2), out
    store.close()
    return cpu / calls


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None)
    ap.add_argument("--before", required=True, help="a recorder.py without call_times")
    args = ap.parse_args(argv)
    loaded = load("effectful")
    fn = loaded.resolve("effectful::echo_loop")
    variants = {"before": _before(args.before), "call_times": SqliteRecorder}
    base = Path(tempfile.mkdtemp(prefix="bench_call_times_", dir=args.dir))
    t = {k: [] for k in variants}
    try:
        for i in range(args.rounds):
            for k, cls in variants.items():
                t[k].append(one(loaded, fn, cls, base / f"{k}{i}.db", args.calls))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    b, a = median(t["before"]), median(t["call_times"])
    print(
        f"durable Tool call, CPU time a call ({args.calls} calls a run, medians of {args.rounds} alternating runs, --dir {args.dir}):"
    )
    print(f"  recorder before call_times: {b * 1e6:7.1f} µs")
    print(f"  recorder with call_times:   {a * 1e6:7.1f} µs   ratio {a / b:.3f}x")
    return {"before_us": b * 1e6, "after_us": a * 1e6, "ratio": a / b}


if __name__ == "__main__":
    main()
