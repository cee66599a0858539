"""What the progress line costs a live run (not a test).

    .venv/bin/python bench/bench_progress.py [--runs 5] [--calls 1000] [--dir DIR]

1. A durable `echo_loop` of `--calls` Tool calls (bench/flow/effectful.flow, driven as the host's
   live path drives it: bench_effectful.durable_run) with and without a progress line drawn
   (flow2py/cli_progress.py: shown at once, redrawn every 0.25 s, into a stream that says it is a
   terminal and throws the text away), alternating, medians: µs a call each and the ratio.
   Goal: the line costs the run nothing it can be told from noise (ratio within 1.05).
2. One progress read (flowrt.host.runs_view.ProgressReader.read) of a run holding `--calls`
   calls, the first (it counts every Call fact) and the next ones (only the facts since): µs.

The store goes under --dir (default: a temporary folder in the current directory).
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, median  # noqa: E402
from bench_effectful import durable_run  # noqa: E402

from flow2py.cli_progress import ProgressLine  # noqa: E402
from flowrt.history.store import Store  # noqa: E402
from flowrt.host.runs_view import ProgressReader  # noqa: E402


class _Terminal(io.TextIOBase):
    def isatty(self):
        return True

    def write(self, s):
        return len(s)


def _with_line(path: Path, run):
    reader = ProgressReader(str(path))
    line = ProgressLine(_Terminal(), reader.read, after=0, close=reader.close).start()
    try:
        return run()
    finally:
        line.stop()


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args(argv)
    loaded = load("effectful")
    fn = loaded.entry("echo_loop")[0]
    work = Path(tempfile.mkdtemp(prefix="bench-progress-", dir=args.dir or "."))
    try:
        plain, shown = [], []
        for i in range(args.runs):
            a, b = work / f"plain{i}.db", work / f"shown{i}.db"
            plain.append(durable_run(loaded, fn, a, args.calls)[0])
            shown.append(_with_line(b, lambda b=b: durable_run(loaded, fn, b, args.calls))[0])
        res = {"plain_us": median(plain) * 1e6, "shown_us": median(shown) * 1e6}
        res["ratio"] = res["shown_us"] / res["plain_us"]
        store = work / "plain0.db"
        first, later = [], []
        for _ in range(args.runs * 20):
            reader = ProgressReader(str(store))
            reader.store, reader.run_id = Store(store, readonly=True), "r"  # durable_run's run, ended
            t0 = time.perf_counter()
            reader.read()
            first.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            reader.read()
            later.append(time.perf_counter() - t0)
            reader.close()
        res["first_read_us"], res["later_read_us"] = median(first) * 1e6, median(later) * 1e6
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"durable Tool call, {args.calls} calls, medians of {args.runs}:")
    print(f"  without a progress line: {res['plain_us']:8.1f} µs a call")
    print(
        f"  with a progress line:    {res['shown_us']:8.1f} µs a call  ({res['ratio']:.3f}x; goal <= 1.05x)"
    )
    print(f"progress read of a run of {args.calls} calls:")
    print(f"  first (counts every Call): {res['first_read_us']:8.1f} µs (the store already open)")
    print(f"  next (facts since):        {res['later_read_us']:8.1f} µs")
    return res


if __name__ == "__main__":
    main()
