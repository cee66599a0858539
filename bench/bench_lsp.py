"""A one-line edit in a 10,000-line module, re-checked and published by `flow2py lsp`: the time
from sending `textDocument/didChange` to receiving its `textDocument/publishDiagnostics`, over the
real protocol (stdio, flow2py/lsp/client.py), median of N edits.

    .venv/bin/python bench/bench_lsp.py [LINES] [--edits N]

Goal: under 100 ms (issue 13). The module is bench_check.py's generated program (realistic
functions: matches, lambdas, guards, Tool calls). Each edit changes one line in the middle of the
file and lengthens it, so every declaration below moves (alternately `+ 1` in and out of a body);
every third edit makes a type error there and the next removes it, so the published diagnostics
change. Wall-clock seconds on a shared machine: read the median. Beside it, the server's own CPU
time per edit (the process's user + system time from /proc, summed over the edits and divided by
their number: the clock ticks are 10 ms), which the machine's load does not inflate."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_check import generate  # noqa: E402

from flow2py.lsp.client import Client, uri  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    args = sys.argv[1:]
    edits = 30
    if "--edits" in args:
        i = args.index("--edits")
        edits = int(args[i + 1])
        del args[i : i + 2]
    lines = int(args[0]) if args else 10_000
    text = generate(lines)
    n = text.count("\n")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "main.flow")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        c = Client(cwd=d)
        try:
            c.initialize(d)
            t0 = time.perf_counter()
            c.open(path, text)
            first = c.diagnostics(uri(path), timeout=120)
            opened = time.perf_counter() - t0
            if first:
                raise SystemExit(f"the generated module has {len(first)} diagnostics: {first[0]['message']}")
            src = text.splitlines()
            row = next(i for i in range(len(src) // 2, len(src)) if "Circle(r) => 3 * r * r +" in src[i])
            col = src[row].index(",")  # before the arm's comma
            times, errors = [], 0
            cpu0 = cpu_seconds(c.proc.pid)
            inserted = ""
            for k in range(edits):
                version = k + 2
                if inserted:
                    start, end, new = (row, col), (row, col + len(inserted)), ""
                else:
                    new = ' + "x"' if k % 3 == 0 else " + 1"
                    start, end = (row, col), (row, col)
                t = time.perf_counter()
                c.change(path, version, start, end, new)
                diags = c.diagnostics(uri(path))
                times.append(time.perf_counter() - t)
                inserted = "" if inserted else new
                if inserted == ' + "x"':
                    errors += 1
                    assert [x["code"] for x in diags] == ["E201"], diags
                else:
                    assert diags == [], diags
            cpu = (cpu_seconds(c.proc.pid) - cpu0) / edits
        finally:
            c.close()
    med = statistics.median(times)
    p90 = sorted(times)[int(0.9 * (len(times) - 1))]
    print(f"{n} lines: open (first check) {opened:.2f} s")
    print(
        f"one-line edit -> publishDiagnostics: median {med * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms over {len(times)} edits ({errors} with a new error) (goal: under 100 ms)"
    )
    print(f"the server's CPU time per edit: {cpu * 1000:.0f} ms (mean)")


if __name__ == "__main__":
    main()
