"""Pure Flow code vs the same algorithm hand-written in Python (not a test).

    .venv/bin/python bench/bench_pure.py [--runs 5]

The Flow side is bench/flow/pure.flow compiled by the real pipeline (host.check -> host.Loaded,
functions found with `loaded.resolve`). Each round runs the Flow function and its Python twin one
after the other; rows show medians of the rounds and the ratio Flow / Python (goal: <= 1.5x).
Every pair is checked to give the same answer before it is timed.

Last, a ten-million-round pure tail loop (`sum_to`) in this process: time and peak RSS before and
after (ru_maxrss); constant memory means the peak does not move.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import current_rss_mb, load, median, peak_rss_mb, side_by_side, verdict  # noqa: E402

GOAL = 1.5


# ---- the same algorithms, hand-written in Python ------------------------------------------------


def py_sum_to(n, acc):
    while n != 0:
        acc += n
        n -= 1
    return acc


def py_fib(n):
    return n if n < 2 else py_fib(n - 1) + py_fib(n - 2)


def py_fold_sum(n):
    return functools.reduce(lambda a, x: a + x * 2, list(range(n)), 0)


def py_build(n, acc):
    while n != 0:
        acc += str(n % 10)
        n -= 1
    return acc


def py_join_numbers(n):
    return ",".join([str(i) for i in range(n)])


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


class Circle:
    __slots__ = ("p", "r")

    def __init__(self, p, r):
        self.p, self.r = p, r


class Rect:
    __slots__ = ("corner", "w", "h")

    def __init__(self, corner, w, h):
        self.corner, self.w, self.h = corner, w, h


class Empty:
    __slots__ = ()


EMPTY = Empty()


def py_shape_of(i):
    k = i % 3
    if k == 0:
        return Circle(Point(i, 1), i % 7)
    if k == 1:
        return Rect(Point(0, i), i % 5, 2)
    return EMPTY


def py_area(s):
    if type(s) is Circle:
        return 3 * s.r * s.r + s.p.y
    if type(s) is Rect:
        return s.w * s.h + s.corner.x
    return 0


def py_shapes(n, acc):
    while n != 0:
        acc += py_area(py_shape_of(n))
        n -= 1
    return acc


def py_is_even(n):
    even = True
    while n != 0:
        even = not even
        n -= 1
    return even


# -------------------------------------------------------------------------------------------------


def cases(flow):
    """(label, flow thunk, python thunk, operations per thunk, unit)."""
    f = flow
    return [
        (
            "tail loop sum 1..N (N=1,000,000)",
            lambda: f("sum_to")(1_000_000, 0),
            lambda: py_sum_to(1_000_000, 0),
            1_000_000,
            "round",
        ),
        ("fib(25), naive recursion", lambda: f("fib")(25), lambda: py_fib(25), 242_785, "call"),
        (
            "fold with a lambda over range(0, 1,000,000)",
            lambda: f("fold_sum")(1_000_000),
            lambda: py_fold_sum(1_000_000),
            1_000_000,
            "elem",
        ),
        (
            "Text ++ in a tail loop (N=200,000)",
            lambda: f("build")(200_000, ""),
            lambda: py_build(200_000, ""),
            200_000,
            "round",
        ),
        (
            "map int.to_text + text.join (N=500,000)",
            lambda: f("join_numbers")(500_000),
            lambda: py_join_numbers(500_000),
            500_000,
            "elem",
        ),
        (
            "records/enums built + matched (N=300,000)",
            lambda: f("shapes")(300_000, 0),
            lambda: py_shapes(300_000, 0),
            300_000,
            "round",
        ),
        (
            "mutual tail recursion is_even (N=1,000,000)",
            lambda: f("is_even")(1_000_000),
            lambda: py_is_even(1_000_000),
            1_000_000,
            "round",
        ),
    ]


def ten_million(fn, n=10_000_000):
    peak0, cur0 = peak_rss_mb(), current_rss_mb()
    t0 = time.perf_counter()
    out = fn(n, 0)
    dt = time.perf_counter() - t0
    peak1, cur1 = peak_rss_mb(), current_rss_mb()
    assert out == n * (n + 1) // 2
    return dt, peak0, peak1, cur0, cur1


def main(argv=None) -> list:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    loaded = load("pure")

    def flow(name):
        fn = loaded.resolve(f"pure::{name}")
        assert fn is not None, name
        return fn

    rows = []
    print(f"Pure Flow vs hand-written Python: medians of {args.runs} alternating rounds (goal <= {GOAL}x)")
    print(f"  {'case':46s} {'Flow':>10s} {'Python':>10s} {'ratio':>7s}  goal")
    for label, fl, py, ops, unit in cases(flow):
        assert fl() == py(), label
        t = side_by_side({"flow": fl, "py": py}, args.runs)
        tf, tp = median(t["flow"]), median(t["py"])
        ratio = tf / tp
        rows.append((label, tf / ops, tp / ops, ratio, ratio <= GOAL))
        print(
            f"  {label:46s} {tf / ops * 1e9:7.0f} ns {tp / ops * 1e9:7.0f} ns {ratio:6.2f}x  "
            f"{verdict(ratio <= GOAL)}  (per {unit})"
        )
    dt, p0, p1, c0, c1 = ten_million(flow("sum_to"))
    print(
        f"  10,000,000-round pure tail loop (sum_to): {dt:.2f} s ({dt / 1e7 * 1e9:.0f} ns a round); "
        f"peak RSS {p0:.1f} -> {p1:.1f} MB (grew {p1 - p0:.1f} MB), current {c0:.1f} -> {c1:.1f} MB  "
        f"{verdict(p1 - p0 < 1.0)} (constant memory)"
    )
    return rows


if __name__ == "__main__":
    main()
