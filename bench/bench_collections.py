"""Persistent collections for Flow's List, Dict and Set, measured side by side (not a test).

    .venv/bin/python bench/bench_collections.py

Each row is the median of several runs; the last column is the ratio to the chosen
implementation. Quadratic candidates (tuple, copying) run at smaller sizes and are reported per
operation, so the cost per operation shows the growth.
"""

from __future__ import annotations

import statistics
import time

import immutables
from pyrsistent import pmap, pset, pvector

from flowrt import EMPTY_DICT, EMPTY_SET, EMPTY_LIST, list_of

RUNS = 5


def median_time(fn, runs=RUNS):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def table(title, rows, unit_ops):
    """rows: (name, seconds, ops); the first row is the reference."""
    print(f"\n{title}")
    ref = rows[0][1] / rows[0][2]
    for name, secs, ops in rows:
        per = secs / ops
        print(f"  {name:42s} {per * 1e9:10.0f} ns/{unit_ops:7s} x{per / ref:8.2f}")


def appends(n, empty, add):
    def run():
        xs = empty
        for i in range(n):
            xs = add(xs, i)

    return run


def main():
    n = 100_000
    small = 10_000
    single = list_of((0,))
    table(
        "List: `notes ++ [x]` in a loop",
        [
            ("rt.List (pvector) .append", median_time(appends(n, EMPTY_LIST, lambda xs, i: xs.append(i))), n),
            (
                "rt.List (pvector) .extend([x]) (++)",
                median_time(appends(n, EMPTY_LIST, lambda xs, i: xs.extend(single))),
                n,
            ),
            (
                f"tuple + (x,)  (n={small}; quadratic)",
                median_time(appends(small, (), lambda xs, i: xs + (i,)), 3),
                small,
            ),
            (
                f"list copy + [x] (n={small}; quadratic)",
                median_time(appends(small, [], lambda xs, i: xs + [i]), 3),
                small,
            ),
        ],
        "append",
    )

    pv = pvector(range(n))
    tp = tuple(range(n))

    def index(xs):
        def run():
            for i in range(n):
                xs[i]

        return run

    def iterate(xs):
        def run():
            for _ in xs:
                pass

        return run

    table(
        "List: index xs[i]",
        [("pvector", median_time(index(pv)), n), ("tuple", median_time(index(tp)), n)],
        "op",
    )
    table(
        "List: iterate",
        [("pvector", median_time(iterate(pv)), n), ("tuple", median_time(iterate(tp)), n)],
        "elem",
    )
    half = pvector(range(n // 2))
    halft = tuple(range(n // 2))
    table(
        "List: concat two halves of 50,000",
        [
            ("pvector.extend", median_time(lambda: half.extend(half)), 1),
            ("tuple +", median_time(lambda: halft + halft), 1),
        ],
        "concat",
    )

    table(
        "Dict: insert into a growing map",
        [
            (
                "rt.Dict (immutables.Map wrapper) .set",
                median_time(appends(n, EMPTY_DICT, lambda d, i: d.set(i, i))),
                n,
            ),
            (
                "immutables.Map .set (bare)",
                median_time(appends(n, immutables.Map(), lambda d, i: d.set(i, i))),
                n,
            ),
            ("pyrsistent pmap .set", median_time(appends(n, pmap(), lambda d, i: d.set(i, i))), n),
            (
                f"dict copy (n={small}; quadratic)",
                median_time(appends(small, {}, lambda d, i: {**d, i: i}), 3),
                small,
            ),
        ],
        "insert",
    )
    m = immutables.Map({i: i for i in range(n)})
    pm = pmap({i: i for i in range(n)})

    def lookups(d):
        def run():
            for i in range(n):
                d[i]

        return run

    table(
        "Dict: lookup",
        [("immutables.Map", median_time(lookups(m)), n), ("pmap", median_time(lookups(pm)), n)],
        "get",
    )

    table(
        "Set: insert into a growing set",
        [
            (
                "rt.Set (immutables.Map keys) .add",
                median_time(appends(n, EMPTY_SET, lambda s, i: s.add(i))),
                n,
            ),
            ("pyrsistent pset .add", median_time(appends(n, pset(), lambda s, i: s.add(i))), n),
            (
                f"frozenset | {{x}} (n={small}; quadratic)",
                median_time(appends(small, frozenset(), lambda s, i: s | {i}), 3),
                small,
            ),
        ],
        "insert",
    )


if __name__ == "__main__":
    main()
