"""Check a generated 10,000-line program and report lines per second (median of 5 runs).

    .venv/bin/python bench/bench_check.py [LINES]

Goal: a 10,000-line program checks in under 1 s."""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from flow2py.check import check_program

HEADER = '''use "std@v1/list"

pub type Shape { Circle(Int), Square(Int), Rect { w: Int, h: Int } }
pub type Item { pub name: Text, pub price: Int, pub tags: List<Text> }
@tool pub flow fetch(key: Text) -> Result<Item, Text>
'''

BLOCK = '''
pub flow area_{i}(s: Shape) -> Int = match s {{
    Circle(r) => 3 * r * r + {i},
    Square(a) => a * a,
    Rect {{ w, h }} => w * h,
}}

pub flow total_{i}(items: List<Item>) -> Int = {{
    let prices = items.map(flow(it) = it.price + {i})
    let kept = prices.filter(flow(p) = p > 10)
    kept.fold(0, flow(acc, p) = acc + p)
}}

pub flow label_{i}(item: Item, n: Int) -> Text = {{
    guard n >= 0 else {{ return "negative" }}
    let tags = item.tags ++ ["t{i}"]
    if list.contains(tags, "sale") {{ item.name ++ " (sale)" }} else {{ item.name }}
}}

pub flow load_{i}(key: Text, round: Int) -> Result<Int, Text> !tool = {{
    guard round < 3 else {{ return Err("gave up") }}
    match fetch(key) {{
        Ok(item) => Ok(total_{i}([item]) + area_{i}(Rect {{ w: round, h: 2 }})),
        Err(Failed(why)) => Err(why),
        Err(_) => load_{i}(key, round + 1),
    }}
}}
'''


def generate(lines: int) -> str:
    parts = [HEADER]
    block_lines = BLOCK.count("\n")
    i = 0
    while (len(parts) - 1) * block_lines + HEADER.count("\n") < lines:
        parts.append(BLOCK.format(i=i))
        i += 1
    return "".join(parts)


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    text = generate(lines)
    n = text.count("\n")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "main.flow")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        r = check_program(path)
        if r.diagnostics:
            print(f"generated program has {len(r.diagnostics)} diagnostics; first: {r.diagnostics[0].message}")
            sys.exit(1)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            check_program(path)
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"{n} lines: median {med:.3f} s over 5 runs, {n / med:,.0f} lines/s (goal: under 1 s)")


if __name__ == "__main__":
    main()
