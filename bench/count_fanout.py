"""Instructions a call of a durable 100-way fan-out, whole process, flow2py beside LangGraph (not a
test): the fan-outs of bench/bench_fanout.py counted by callgrind instead of timed.

    .venv/bin/python bench/count_fanout.py [--n 100] [--python PY] [--no-langgraph]

Each contender runs in a process of its own under `valgrind --tool=callgrind`, once making K=1
fan-outs and once K=4 (each a new run, or a new LangGraph thread, in one store kept open); the
difference of the two totals over 3·n is the instructions a call, with every thread of the
process counted (the Tool's worker threads, the reply flusher, SQLite, LangGraph's executor) and
the start-up, the imports and the first run's warming cancelled out. Instructions are not
seconds (the kernel's share, fsync and wake-ups, is not counted, and an instruction of SQLite's C
costs less than one of Python's eval loop), but they repeat to a tenth of a percent whatever else
the machine is doing, where CPU time on two noisy cores moves by a fifth between runs: the ratio
beside bench_fanout.py's timed one. `--python`: the Python (and so the flowrt) to count flow2py
with, e.g. a venv at a base commit, for before/after. Each count takes a minute or two.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(who: str, k: int, n: int, folder: Path) -> None:
    """Make `k` fan-outs of `n` as `who` ("flow", "lg-async", "lg-sync")."""
    sys.path.insert(0, str(HERE))
    import bench_fanout as bf

    if who == "flow":
        flow = bf.Flow()
        try:
            for _ in range(k):
                bf.flow_run(flow.loaded, flow.fan, "fan", (n,), ("n",), folder / "fan.db", n * (n - 1) // 2)
        finally:
            bf.close_stores()
        return
    g = bf.LangGraphFan(folder / "langgraph.db", who[3:])
    for _ in range(k):
        g.run(n)
    g.conn.close()


def count(python: str, who: str, k: int, n: int) -> int:
    """The instructions callgrind counts for a child making `k` fan-outs."""
    folder = Path(tempfile.mkdtemp(prefix="count_fanout_", dir="."))
    try:
        out = folder / "callgrind.out"
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, __file__]
            + ["--child", who, "--k", str(k), "--n", str(n), "--dir", str(folder)],
            capture_output=True,
            text=True,
        )
        m = re.search(r"Collected : (\d+)", r.stderr)
        if r.returncode != 0 or m is None:
            raise SystemExit(f"count_fanout: the {who} child failed:\n{r.stderr[-2000:]}")
        return int(m.group(1))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def per_call(python: str, who: str, n: int) -> float:
    one, four = count(python, who, 1, n), count(python, who, 4, n)
    return (four - one) / (3 * n)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--python", default=sys.executable, help="the Python to count flow2py with")
    ap.add_argument("--no-langgraph", action="store_true")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--k", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.k, args.n, Path(args.dir))
        return {}
    if shutil.which("valgrind") is None:
        raise SystemExit("count_fanout: valgrind is not installed")
    sys.path.insert(0, str(HERE))
    import bench_fanout as bf

    res = {"flow": per_call(args.python, "flow", args.n)}
    print(f"Durable fan-out of {args.n}: instructions a call, whole process (K=4 minus K=1 fan-outs)")
    print(f"  flow2py ({args.python}): {res['flow']:12,.0f}")
    lg = None if args.no_langgraph else bf.langgraph_version()
    for d in ("async", "sync") if lg else ():
        res[d] = per_call(sys.executable, f"lg-{d}", args.n)
        print(
            f"  LangGraph {lg} Send, SqliteSaver, durability={d + ':':6} {res[d]:12,.0f}; "
            f"flow2py / LangGraph {res['flow'] / res[d]:.3f}x"
        )
    if not lg and not args.no_langgraph:
        print("  LangGraph: not installed (pip install langgraph langgraph-checkpoint-sqlite): skipped")
    return res


if __name__ == "__main__":
    main()
