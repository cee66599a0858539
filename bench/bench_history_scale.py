"""Reading a long history: peak RSS and seconds of `history` and `verify` (not a test).

    .venv/bin/python bench/bench_history_scale.py [--facts 200000 1000000] [--runs 3]
        [--base /work/wt-scalebase] [--dir DIR] [--store postgresql://postgres@127.0.0.1:5432/postgres]

A run of `echo_loop(N)` of bench/flow/effectful.flow (one Tool call a round: a Call and a Reply
fact each, the Tool answered in process; built live into a SQLite store with
Store(durable=False), which only speeds up building) is recorded once per size, so it holds
real, chained facts that verify and replay Matched. Then each command is run end to end as a
user runs it, `flow2py history RUN --format text|json` (stdout to /dev/null) and `flow2py
verify RUN`, each in its own process (os.wait4 gives that process's peak RSS and its seconds),
alternating between the trees compared, `--runs` times; medians are shown.

With `--base TREE` (a checkout with its own .venv, e.g. `git worktree add --detach
/work/wt-scalebase main` and `python3 -m venv .venv && .venv/bin/pip install -e .` there) the
same commands run through that tree's flow2py too, side by side. Goal: constant memory, peak RSS
about the same for 200,000 and 1,000,000 facts, far below the 312-445 MB the whole-list reading
took for 200,000 facts.

With `--store URL` (a PostgreSQL database the user may create schemas in) each size's run is
also copied into a schema of its own there (`bench_scale_<facts>`, dropped and made again) by
`flow2py store copy` (its seconds, peak RSS and facts/s printed), and every command is measured
on that store too, beside the SQLite file: the columns are then "sqlite" and "postgresql" (of
this tree).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load  # noqa: E402

import flowrt as rt  # noqa: E402
from flowrt.data.facts import Start  # noqa: E402
from flowrt.engine import drive as drv  # noqa: E402
from flowrt.history.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "history text": ["history", "{run}", "--format", "text"],
    "history json": ["history", "{run}", "--format", "json"],
    "verify": ["verify", "{run}"],
    "replay": ["replay", "{run}"],
}


def build(path: Path, facts: int) -> str:
    """A store at `path` holding one finished run of about `facts` facts; returns its id."""
    run_id = f"echo-{facts}"
    if path.exists():
        return run_id
    loaded = load("effectful")
    part = path.with_suffix(".part")
    for p in (part, Path(f"{part}-wal"), Path(f"{part}-shm")):
        p.unlink(missing_ok=True)
    store = Store(part, durable=False)
    calls = max((facts - 2) // 2, 1)
    st = Start(
        loaded.program.identity, loaded.program.std, rt.DATA_VERSION, "echo_loop", (calls, 0), ("n", "acc")
    )
    store.history.create_run(
        run_id, st, loaded.program.sources, {"entry_module": loaded.checked.entry_module}
    )
    b = rt.Bindings()
    b.bind("echo.echo", lambda x: {"Ok": x})
    rec = rt.SqliteRecorder(store, run_id)
    try:
        out = drv.drive(
            loaded.resolve("effectful::echo_loop"),
            [st],
            drv.DriveOptions(recorder=rec, bindings=b, reachable=loaded.reachable(), resolve=loaded.resolve),
        )
    finally:
        rec.close()
    assert type(out).__name__ == "RunCompleted", out
    store.close()
    part.rename(path)
    return run_id


def pg_schema_url(url: str, facts: int) -> str:
    """A fresh schema for this size in the database of `url`: its URL (search_path)."""
    from urllib.parse import quote

    import psycopg

    schema = f"bench_scale_{facts}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={schema}')}"


def measure(flow2py: str, args: list[str], store, with_store: bool = True) -> tuple[float, float, float]:
    """(seconds, CPU seconds, peak RSS in MB) of one `flow2py ARGS --store STORE`, output to
    /dev/null (replay exits 0 on Matched)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [flow2py, *args, *(["--store", str(store)] if with_store else [])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{flow2py} {' '.join(args)}: exit {proc.returncode}: {err.strip()}")
    return dt, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, nargs="+", default=[200_000, 1_000_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base", help="another checkout (with its own .venv) to compare with")
    ap.add_argument("--dir", help="where to keep the stores (kept between invocations)")
    ap.add_argument("--store", help="a postgresql:// database: copy each run there and measure it too")
    ap.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    args = ap.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="flow2py-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    trees = {"this tree": str(Path(sys.executable).parent / "flow2py")}
    if args.base:
        trees = {"base": str(Path(args.base) / ".venv" / "bin" / "flow2py"), **trees}
    if args.store:
        trees = {"sqlite": trees["this tree"], "postgresql": trees["this tree"]}
    print(f"history and verify of one long run, each command its own process, median of {args.runs}")
    print("(s: wall seconds; cpu: CPU seconds of the process, steadier on a loaded machine; MB: peak RSS)")
    print(
        f"{'command':<14} {'facts':>9}  " + "  ".join(f"{t + ' s':>12} {'cpu':>7} {'MB':>6}" for t in trees)
    )
    try:
        for facts in args.facts:
            path = work / f"echo-{facts}.db"
            t0 = time.perf_counter()
            fresh = not path.exists()
            run_id = build(path, facts)
            if fresh:
                print(f"(built {facts:,} facts in {time.perf_counter() - t0:.0f} s)", flush=True)
            stores = {t: path for t in trees}
            if args.store:
                stores["postgresql"] = pg_schema_url(args.store, facts)
                copy = ["store", "copy", str(path), stores["postgresql"], "--run", run_id]
                s, cpu, mb = measure(trees["postgresql"], copy, None, with_store=False)
                print(
                    f"{'store copy':<14} {facts:>9,}  sqlite -> postgresql {s:.2f} s, cpu {cpu:.2f}, "
                    f"{mb:.0f} MB, {facts / s:,.0f} facts/s (copy + audit of both sides)",
                    flush=True,
                )
            for name in args.commands:
                cmd = [a.format(run=run_id) for a in COMMANDS[name]]
                got: dict[str, list] = {t: [] for t in trees}
                for _ in range(args.runs):
                    for t, exe in trees.items():
                        got[t].append(measure(exe, cmd, stores[t]))
                cells = []
                for t in trees:
                    s, cpu, mb = (statistics.median(x[i] for x in got[t]) for i in range(3))
                    cells.append(f"{s:>12.2f} {cpu:>7.2f} {mb:>6.0f}")
                print(f"{name:<14} {facts:>9,}  " + "  ".join(cells), flush=True)
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
