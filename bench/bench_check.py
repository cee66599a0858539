"""Check a generated 10,000-line program and report lines per second (median of 5 runs); then
check the shapes that were once quadratic at two sizes and report the ratio.

    .venv/bin/python bench/bench_check.py [LINES] [--shapes N]

Goal: a 10,000-line program checks in under 1 s. Shapes (`--shapes N`, default 10,000; 0 skips
them): one function of N `let` bindings, one function of N parameters, one enum of N
constructors, each checked at N and 2N; a ratio near 2 is linear (it was 3.1-3.7 at 10,000 while
parsing copied the accumulated list at every reduce of an `x*` repetition). Times are CPU
seconds of this process (`time.process_time`), min of 3: the machine is shared and noisy.

The checker pauses the cyclic collector while it runs; the collection that the objects it made
make due then happens at the first allocation after it returns. Each timed check therefore ends
with `gc.collect()`, so that collection is counted where it belongs and not in whatever happens
to allocate next (without it, a change of where the first allocation falls — inside or outside
the timer — moved the figure by 10%)."""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time

from flow2py.check import check_program

HEADER = """use "std@v1/list"

pub type Shape { Circle(Int), Square(Int), Rect { w: Int, h: Int } }
pub type Item { pub name: Text, pub price: Int, pub tags: List<Text> }
@tool pub flow fetch(key: Text) -> Result<Item, Text>
"""

BLOCK = """
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
"""


def generate(lines: int) -> str:
    parts = [HEADER]
    block_lines = BLOCK.count("\n")
    i = 0
    while (len(parts) - 1) * block_lines + HEADER.count("\n") < lines:
        parts.append(BLOCK.format(i=i))
        i += 1
    return "".join(parts)


SHAPES = {
    "let bindings": lambda n: (
        "pub flow main() -> Int = {\n"
        + "".join(f"    let x{i} = {f'x{i - 1} + 1' if i else '1'}\n" for i in range(n))
        + f"    x{n - 1}\n}}\n"
    ),
    "parameters": lambda n: (
        "pub flow f("
        + ", ".join(f"_p{i}: Int" for i in range(n))
        + ") -> Int = 0\n\npub flow main() -> Int = f("
        + ", ".join("0" for _ in range(n))
        + ")\n"
    ),
    "constructors": lambda n: (
        "pub type Big { " + ", ".join(f"C{i}" for i in range(n)) + " }\n\npub flow main() -> Big = C0\n"
    ),
}


def check_seconds(d: str, name: str, text: str, runs: int = 3) -> float:
    path = os.path.join(d, name + ".flow")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    r = check_program(path)
    if r.diagnostics:
        raise SystemExit(f"{name}: {len(r.diagnostics)} diagnostics; first: {r.diagnostics[0].message}")
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        check_program(path)
        best = min(best, time.process_time() - t0)
    return best


def shapes(n: int) -> None:
    print(f"shape ({n:,} vs {2 * n:,}): CPU s at each size, ratio (2 is linear)")
    with tempfile.TemporaryDirectory() as d:
        for shape, make in SHAPES.items():
            a = check_seconds(d, "a", make(n))
            b = check_seconds(d, "b", make(2 * n))
            print(f"  {shape:<13} {a:6.2f} s  {b:6.2f} s  ratio {b / a:.2f}")


def main() -> None:
    args = sys.argv[1:]
    n_shapes = 10_000
    if "--shapes" in args:
        i = args.index("--shapes")
        n_shapes = int(args[i + 1])
        del args[i : i + 2]
    lines = int(args[0]) if args else 10_000
    text = generate(lines)
    n = text.count("\n")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "main.flow")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        r = check_program(path)
        if r.diagnostics:
            print(
                f"generated program has {len(r.diagnostics)} diagnostics; first: {r.diagnostics[0].message}"
            )
            sys.exit(1)
        del r  # kept alive, a checked program would be walked by every collection timed below
        times = []
        for _ in range(5):
            gc.collect()
            t0 = time.process_time()
            check_program(path)
            gc.collect()  # the collection the check leaves owed is its cost too (see the docstring)
            times.append(time.process_time() - t0)
    med = statistics.median(times)
    print(f"{n} lines: median {med:.3f} CPU s over 5 runs, {n / med:,.0f} lines/s (goal: under 1 s)")
    if n_shapes:
        shapes(n_shapes)


if __name__ == "__main__":
    main()
