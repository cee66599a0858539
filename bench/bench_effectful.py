"""Effectful Flow code on the driver (not a test).

    .venv/bin/python bench/bench_effectful.py [--runs 5] [--rounds 1000000] [--durable-calls 300] [--dir DIR] [--only durable]

The program is bench/flow/effectful.flow compiled by the real pipeline; its Tool `echo.echo` is
bound to a sync Python function that answers at once (`{"Ok": x}`).

1. Tool call overhead: `echo_loop` (one Tool call a round, effectful self tail call) driven with a
   MemoryRecorder, vs a plain Python loop calling the same implementation; alternating rounds,
   medians. Overhead = (Flow - plain) / calls; goal < 10 µs a call.
2. Fan-out: `fan(1000)` (task.all of 1,000 tasks, one Tool call each): ms a run, µs a task.
3. A million-round `echo_loop` (MemoryRecorder(keep=False), tracemalloc off): time, and current and
   peak RSS before/after; constant memory means neither grows.
4. Durable Tool call: `echo_loop` driven as the host's live path drives it (store.history.create_run, then
   flowrt.SqliteRecorder + drive with the program's reachable Tools and resolver), vs the raw
   SQLite floor (bench_store.floor: one fsynced WAL commit of a Call row and a Reply row per call)
   in the same run, alternating; goals: within 1.5x of the floor, and under 200 µs (DESIGN). Also
   the process's CPU time a call on that path (fsync waits excluded: the figure to compare two
   versions of the recorder by).
   Also `host.start` end to end (check + compile + store + drive) for the same program.
5. History bytes per Tool call in that store (fact data + chain hash; and file growth).

The store goes under --dir (default: a temporary folder in the current directory; a tmpfs would
make fsync free and the figures meaningless).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import FLOW, current_rss_mb, load, median, peak_rss_mb, side_by_side, verdict  # noqa: E402

import flowrt as rt  # noqa: E402
from flowrt.engine import drive as drv  # noqa: E402
from flowrt.data.facts import Start  # noqa: E402
from flowrt.history.store import Store  # noqa: E402

TOOL = "echo.echo"


def impl(x):
    return {"Ok": x}


def bindings() -> rt.Bindings:
    b = rt.Bindings()
    b.bind(TOOL, impl)
    return b


def plain_loop(n, acc=0):
    while n:
        acc += impl(n)["Ok"]
        n -= 1
    return acc


def start_fact(loaded, entry, args, names):
    return Start(loaded.program.identity, loaded.program.std, rt.DATA_VERSION, entry, tuple(args), names)


def drive_memory(loaded, fn, entry, args, names, keep=False):
    st = start_fact(loaded, entry, args, names)
    rec = drv.MemoryRecorder(keep=keep)
    rec.record(st)
    out = drv.drive(fn, [st], drv.DriveOptions(recorder=rec, bindings=bindings(), resolve=loaded.resolve))
    return out, rec


# ---- 4, 5: durable ------------------------------------------------------------------------------


def durable_run(loaded, fn, path: Path, calls: int):
    """The live path of flow2py.host (start -> _drive_live), timed around the drive."""
    store = Store(path)
    st = start_fact(loaded, "echo_loop", (calls, 0), ("n", "acc"))
    store.history.create_run("r", st, loaded.program.sources, {"entry_module": loaded.checked.entry_module})
    store.file.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    empty = os.path.getsize(path)
    t0, c0 = time.perf_counter(), time.process_time()
    rec = rt.SqliteRecorder(store, "r")
    try:
        out = drv.drive(
            fn,
            [st],
            drv.DriveOptions(
                first=1,
                mode="live",
                recorder=rec,
                bindings=bindings(),
                reachable=loaded.reachable(),
                resolve=loaded.resolve,
            ),
        )
    finally:
        rec.close()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert out == drv.RunCompleted(calls * (calls + 1) // 2), out
    rows = store.file.db.execute(
        "SELECT sum(length(data) + length(hash)), count(*) FROM facts WHERE run='r' AND n > 1"
    ).fetchone()
    store.file.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    grown = os.path.getsize(path) - empty
    store.close()
    return dt / calls, rows[0] / calls, grown / calls, rows[1], cpu / calls


def host_start(tools_file: Path, path: Path, calls: int) -> float:
    from flow2py import host

    t0 = time.perf_counter()
    rep = host.start(
        str(FLOW / "effectful.flow"),
        entry="echo_loop",
        input_json=f'{{"n": {calls}, "acc": 0}}',
        tools=[str(tools_file)],
        store_path=str(path),
        run_id="h",
    )
    dt = time.perf_counter() - t0
    assert rep.exit_code == 0, rep.text
    return dt


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1_000_000)
    ap.add_argument("--calls", type=int, default=100_000, help="Tool calls a run for the overhead figure")
    ap.add_argument("--durable-calls", type=int, default=300)
    ap.add_argument(
        "--durable-runs", type=int, default=7, help="alternating floor/host rounds (fsync is noisy)"
    )
    ap.add_argument("--fan", type=int, default=1000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--only", choices=("durable",), default=None, help="run only the durable part")
    args = ap.parse_args(argv)
    tracemalloc.stop()
    loaded = load("effectful")
    loop = loaded.resolve("effectful::echo_loop")
    fan = loaded.resolve("effectful::fan")
    res = {}

    if args.only != "durable":
        _in_memory(args, loaded, loop, fan, res)
    _durable(args, loaded, loop, res)
    return res


def _in_memory(args, loaded, loop, fan, res) -> None:
    # 1. overhead a Tool call
    n = args.calls
    out, _ = drive_memory(loaded, loop, "echo_loop", (n, 0), ("n", "acc"))
    assert out == drv.RunCompleted(plain_loop(n)), out
    t = side_by_side(
        {
            "flow": lambda: drive_memory(loaded, loop, "echo_loop", (n, 0), ("n", "acc")),
            "plain": lambda: plain_loop(n),
        },
        args.runs,
    )
    tf, tp = median(t["flow"]) / n, median(t["plain"]) / n
    res["overhead_us"] = (tf - tp) * 1e6
    print(f"Effectful Flow on the driver: medians of {args.runs} alternating rounds")
    print(
        f"  Tool call via the driver (MemoryRecorder, {n:,} calls): {tf * 1e6:6.2f} µs a call; plain Python "
        f"call {tp * 1e6:.3f} µs; overhead {res['overhead_us']:.2f} µs a call  "
        f"{verdict(res['overhead_us'] < 10)} (goal < 10 µs)"
    )

    # 2. fan-out
    m = args.fan
    out, rec = drive_memory(loaded, fan, "fan", (m,), ("n",), keep=True)
    assert out == drv.RunCompleted(m * (m - 1) // 2), out
    t = side_by_side({"fan": lambda: drive_memory(loaded, fan, "fan", (m,), ("n",))}, args.runs)["fan"]
    res["fan_ms"] = median(t) * 1e3
    print(
        f"  fan-out of {m:,} tasks (spawn + task.all, one Tool call each): {res['fan_ms']:.1f} ms a run, "
        f"{median(t) / m * 1e6:.1f} µs a task ({len(rec.facts):,} facts)"
    )

    # 3. million rounds
    r = args.rounds
    c0, p0 = current_rss_mb(), peak_rss_mb()
    t0 = time.perf_counter()
    out, rec = drive_memory(loaded, loop, "echo_loop", (r, 0), ("n", "acc"))
    dt = time.perf_counter() - t0
    c1, p1 = current_rss_mb(), peak_rss_mb()
    assert out == drv.RunCompleted(r * (r + 1) // 2), out
    res["million_s"], res["million_rss_grew_mb"] = dt, max(c1 - c0, p1 - p0)
    print(
        f"  {r:,}-round effectful tail loop ({rec.count:,} facts recorded): {dt:.1f} s "
        f"({dt / r * 1e6:.2f} µs a round); RSS {c0:.1f} -> {c1:.1f} MB, peak {p0:.1f} -> {p1:.1f} MB  "
        f"{verdict(res['million_rss_grew_mb'] < 5)} (constant memory)"
    )


def _durable(args, loaded, loop, res) -> None:
    # 4, 5. durable
    from flow2py import host  # noqa: F401  (imported before timing)

    base = Path(tempfile.mkdtemp(prefix="bench_effectful_", dir=args.dir or "."))
    try:
        from bench_store import floor

        tools_file = base / "echo_tools.py"
        tools_file.write_text(
            "from flowrt import bind\n\n\n@bind('echo.echo')\ndef echo(x):\n    return {'Ok': x}\n"
        )
        k = args.durable_calls
        fl, dur, size_rows, size_file, hs, cpus = [], [], [], [], [], []
        for i in range(args.durable_runs):
            fl.append(floor(base / f"floor{i}.db", k))
            per, rows, grown, nfacts, cpu = durable_run(loaded, loop, base / f"dur{i}.db", k)
            dur.append(per)
            cpus.append(cpu)
            size_rows.append(rows)
            size_file.append(grown)
            hs.append(host_start(tools_file, base / f"host{i}.db", k))
        f_, d_ = median(fl), median(dur)
        res.update(
            durable_us=d_ * 1e6,
            floor_us=f_ * 1e6,
            durable_ratio=d_ / f_,
            durable_cpu_us=median(cpus) * 1e6,
            bytes_per_call=median(size_rows),
            file_bytes_per_call=median(size_file),
        )
        print(
            f"  durable Tool call, SQLite ({k} calls a run, medians of {args.durable_runs} alternating runs, "
            f"--dir {base.parent}):"
        )
        print(f"    raw SQLite floor (1 fsynced WAL commit, Call+Reply rows): {f_ * 1e6:8.1f} µs a call")
        print(
            f"    host live path (SqliteRecorder + drive):                  {d_ * 1e6:8.1f} µs a call   "
            f"ratio {d_ / f_:.2f}x  {verdict(d_ / f_ <= 1.5)} (goal <= 1.5x); "
            f"{verdict(d_ < 200e-6)} (DESIGN goal < 200 µs)"
        )
        print(
            f"    host live path, CPU time of this process:                 {median(cpus) * 1e6:8.1f} µs a call"
        )
        print(
            f"    host.start end to end (check, compile, store, drive {k} calls): {median(hs) * 1e3:.0f} ms "
            f"({median(hs) / k * 1e6:.0f} µs a call, compile included)"
        )
        print(
            f"  history: {median(size_rows):.0f} bytes a Tool call in fact rows (data + hash)  "
            f"{verdict(median(size_rows) < 200)} (goal < 200); {median(size_file):.0f} bytes a call of file "
            f"growth (pages, index, open_calls included)"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
