"""Parse speed: generate a ~10,000-line Flow program and report lines per second
(median of 5 runs). Not a test: run `python bench/bench_parse.py [lines]`."""

from __future__ import annotations

import statistics
import sys
import time

from flow2py.syntax.parser import parse_module

UNIT = """
pub type Shape{n} {{ Circle(Decimal), Rect {{ w: Int, h: Int }}, Empty }}

type Point{n} {{ pub x: Int, pub y: Int }}

// Area of a shape, number {n}.
flow area{n}(s: Shape{n}, scale: Int) -> Int = {{
    let factor = scale * 2 + 1
    guard factor > 0 else {{ return 0 }}
    match s {{
        Circle(r) => factor,
        Rect {{ w, h }} if w > 0 => w * h * factor,
        Rect {{ .. }} | Empty => 0,
    }}
}}

flow step{n}(ticket: Text, notes: List<Text>, round: Int) -> Result<Text, Text> !tool = {{
    let p = Point{n} {{ x: round, y: 2 }}
    let hits = notes
        .map(flow(t) = t ++ "!")
        .filter(flow(t: Text) -> Bool = t != "")
    let found = web.search(ticket) ? flow(e) = "failed: " ++ e
    if round >= 10 && p.x < 3 {{ Ok(found) }} else {{ step{n}(ticket, notes ++ [found], round + 1) }}
}}
"""


def program(lines: int) -> str:
    per = UNIT.count("\n")
    return 'use "std@v1/task"\nuse "./web"\n' + "".join(UNIT.format(n=i) for i in range(lines // per + 1))


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    src = program(lines)
    n = src.count("\n")
    parse_module(src, "bench.flow")  # warm up: build the parser
    times = []
    for _ in range(5):
        t = time.perf_counter()
        module, diags = parse_module(src, "bench.flow")
        times.append(time.perf_counter() - t)
        assert not diags, diags[:3]
    med = statistics.median(times)
    print(f"{n} lines, {len(module.decls)} declarations: median {med * 1000:.0f} ms, {n / med:,.0f} lines/s")


if __name__ == "__main__":
    main()
