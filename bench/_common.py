"""Shared helpers of the benchmarks (not a test): timing side by side, medians, tables, RSS."""

from __future__ import annotations

import gc
import resource
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
FLOW = BENCH / "flow"


def timed(f) -> float:
    gc.collect()
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def side_by_side(fns: dict, runs: int) -> dict:
    """Run each function once per round, alternating, `runs` rounds: noise hits all alike.
    Returns {name: [seconds, ...]}."""
    out = {k: [] for k in fns}
    for _ in range(runs):
        for k, f in fns.items():
            out[k].append(timed(f))
    return out


def median(xs):
    return statistics.median(xs)


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 if sys.platform != "darwin" else r / 2**20


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return float("nan")


def load(name: str):
    """Check and load bench/flow/<name>.flow through the real pipeline; returns host.Loaded."""
    from flow2py import host
    from flow2py.diagnostics import render_text

    r = host.check(str(FLOW / f"{name}.flow"))
    if r.diagnostics:
        raise SystemExit(render_text(r.diagnostics, r.sources))
    return host.Loaded(r.program)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"
