"""Replay speed and resume cost over stored histories (not a test).

    .venv/bin/python bench/bench_replay.py [--calls 20000] [--runs 5] [--dir DIR]

1. Replay: `echo_loop(20000)` of bench/flow/effectful.flow is run live into a SQLite store (one
   Tool call a round; built with Store(durable=False), which only speeds up building). Then the
   path of `flow2py replay`, timed in parts: read (store.history.facts(verify=True): read, decode and
   check every fact against the chain in one pass), re-run (drive with DriveOptions(mode="replay") over the facts).
   Goal: above 100,000 facts/s for read + verify + re-run; DESIGN's goal of under 20 µs a call
   too. `store.history.verify` alone and `host.replay` end to end (compiles the stored sources, verifies)
   are shown alongside.
2. Resume cost vs archived facts: two runs of the same program in one store, each checkpointing
   every 50 facts and pausing on a Tool call that never answers; one has ~1,000 facts before its
   latest checkpoint, the other ~100,000; both are archived (store.history.archive). The resume path of
   `flow2py resume` is timed (load run, verified facts from the latest checkpoint, SqliteRecorder lease,
   drive live to the pause), alternating between the two runs. Goal: the ratio stays ~1x.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, median, side_by_side, verdict  # noqa: E402

import flowrt as rt  # noqa: E402
from flowrt.engine import drive as drv  # noqa: E402
from flowrt.data.facts import Start  # noqa: E402
from flowrt.history.store import Store  # noqa: E402
from flow2py import host  # noqa: E402

GOAL_FACTS_S = 100_000
CP_EVERY = 50


class Echo:
    """Answers `answer` calls at once, then leaves every call open (the run pauses)."""

    def __init__(self, answer: int):
        self.left = answer

    def __call__(self, x):
        if self.left <= 0:
            return rt.pending
        self.left -= 1
        return {"Ok": x}


def bindings(answer: int = 1 << 62) -> rt.Bindings:
    b = rt.Bindings()
    b.bind("echo.echo", Echo(answer))
    return b


def record_run(store: Store, loaded, run_id: str, calls: int, answer: int, every=None):
    fn = loaded.resolve("effectful::echo_loop")
    st = Start(
        loaded.program.identity, loaded.program.std, rt.DATA_VERSION, "echo_loop", (calls, 0), ("n", "acc")
    )
    store.history.create_run(
        run_id, st, loaded.program.sources, {"entry_module": loaded.checked.entry_module}
    )
    rec = rt.SqliteRecorder(store, run_id)
    try:
        out = drv.drive(
            fn,
            [st],
            drv.DriveOptions(
                recorder=rec,
                bindings=bindings(answer),
                reachable=loaded.reachable(),
                checkpoint_every=every,
                resolve=loaded.resolve,
            ),
        )
    finally:
        rec.close()
    return out


# ---- 1. replay ----------------------------------------------------------------------------------


def replay_parts(store: Store, loaded, run_id: str):
    """The path of `flow2py replay` after compiling: read the facts, each decoded and checked
    against the chain in one pass (store.history.facts verify=True), then re-run over them."""
    fn = loaded.resolve("effectful::echo_loop")
    t0 = time.perf_counter()
    facts = store.history.facts(run_id, verify=True, whole=True, classes=loaded.classes)
    t1 = time.perf_counter()
    out = drv.drive(
        fn,
        facts,
        drv.DriveOptions(first=1, begin=1, mode="replay", resolve=loaded.resolve, classes=loaded.classes),
    )
    t2 = time.perf_counter()
    assert type(out).__name__ == "Matched", out
    return len(facts), t1 - t0, t2 - t1


def verify_alone(store: Store, run_id: str) -> float:
    """`flow2py verify` (store.history.verify): the chain alone, no value decoded."""
    t0 = time.perf_counter()
    ok, msg, _ = store.history.verify(run_id)
    dt = time.perf_counter() - t0
    assert ok, msg
    return dt


def floor(store: Store, run_id: str) -> float:
    """The floor of reading + verifying: fetch the rows, one cbor2.loads and one blake3 of
    (prev hash + stored bytes) a fact; no Python objects built, no skeleton re-encoded."""
    import blake3
    import cbor2

    t0 = time.perf_counter()
    rows = store.file.db.execute(
        "SELECT n, data, hash FROM facts WHERE run=? ORDER BY n", (run_id,)
    ).fetchall()
    prev = bytes(32)
    loads, b3 = cbor2.loads, blake3.blake3
    for _n, data, _h in rows:
        loads(data)
        prev = b3(prev + data).digest()
    return time.perf_counter() - t0


def replay(base: Path, loaded, calls: int, runs: int) -> dict:
    path = base / "replay.db"
    store = Store(path, durable=False)
    out = record_run(store, loaded, "long", calls, calls + 1)
    assert out == drv.RunCompleted(calls * (calls + 1) // 2), out
    rd, ver, rer, hr, fl = [], [], [], [], []
    n = 0
    for _ in range(runs):
        fl.append(floor(store, "long"))
        n, d, r = replay_parts(store, loaded, "long")
        rd.append(d)
        rer.append(r)
        ver.append(verify_alone(store, "long"))
        t0 = time.perf_counter()
        rep = host.replay("long", store_path=str(path))
        hr.append(time.perf_counter() - t0)
        assert rep.exit_code == 0, rep.text
    store.close()
    d, v, r = median(rd), median(ver), median(rer)
    total = d + r
    res = dict(
        facts=n,
        facts_per_s=n / total,
        us_per_call=total / calls * 1e6,
        read_verified=n / d,
        verify=n / v,
        rerun=n / r,
        host_replay=n / median(hr),
    )
    print(f"Replay of a stored run: {calls:,} Tool calls, {n:,} facts, medians of {runs} runs")
    print(
        f"  read (Store.facts verify=True: read + decode + chain, one pass)  {d * 1e3:8.1f} ms  "
        f"{n / d:>10,.0f} facts/s  {d / n * 1e6:5.2f} µs a fact"
    )
    print(
        f"  re-run (drive, mode='replay')                                    {r * 1e3:8.1f} ms  "
        f"{n / r:>10,.0f} facts/s  {r / n * 1e6:5.2f} µs a fact"
    )
    print(
        f"  total read + verify + re-run           {total * 1e3:8.1f} ms  {n / total:>10,.0f} facts/s  "
        f"{verdict(n / total > GOAL_FACTS_S)} (goal > {GOAL_FACTS_S:,}); {total / calls * 1e6:.1f} µs a Tool call "
        f"{verdict(total / calls < 20e-6)} (DESIGN goal < 20 µs)"
    )
    print(
        f"  (verify alone, Store.verify as `flow2py verify` runs it: {v * 1e3:.1f} ms, {n / v:,.0f} facts/s)"
    )
    f = median(fl)
    res["floor"] = n / f
    print(
        f"  floor (rows + cbor2.loads + blake3 a fact, nothing built)  {f * 1e3:8.1f} ms  {n / f:>10,.0f} facts/s  "
        f"{f / n * 1e6:5.2f} µs a fact; read + verify + re-run is {total / f:.1f}x the floor"
    )
    print(
        f"  host.replay end to end (compile stored sources + read + verify + re-run): "
        f"{median(hr) * 1e3:.0f} ms, {n / median(hr):,.0f} facts/s"
    )
    return res


# ---- 2. resume ----------------------------------------------------------------------------------


def resume_path(store: Store, loaded, run_id: str):
    """What `host.resume` does after compiling (done once outside), with no replies to record:
    load the run, read the facts from its latest checkpoint on, take the lease, drive live."""
    info = store.host_records.load_run(run_id)
    first = info.latest_checkpoint or 1
    history = store.history.facts(run_id, first, verify=True, whole=True, classes=loaded.classes)
    fn = loaded.resolve("effectful::echo_loop")
    rec = rt.SqliteRecorder(store, run_id)
    try:
        out = drv.drive(
            fn,
            history,
            drv.DriveOptions(
                first=first,
                mode="live",
                recorder=rec,
                bindings=bindings(0),
                reachable=loaded.reachable(),
                checkpoint_every=CP_EVERY,
                resolve=loaded.resolve,
                classes=loaded.classes,
            ),
        )
    finally:
        rec.close()
    assert isinstance(out, drv.RunPaused), out
    return len(history)


def resume(base: Path, loaded, runs: int) -> dict:
    path = base / "resume.db"
    store = Store(path, durable=False)
    sizes = {}
    for run_id, answered in (("small", 500), ("large", 50_000)):
        out = record_run(store, loaded, run_id, 10**9, answered, every=CP_EVERY)
        assert isinstance(out, drv.RunPaused), out
        moved = store.history.archive(run_id).moved
        info = store.host_records.load_run(run_id)
        sizes[run_id] = (moved, info.facts - info.latest_checkpoint + 1)
    store.close()
    store = Store(path)  # durable, as a resume runs
    for r in ("small", "large"):
        resume_path(store, loaded, r)  # warm up
    t = side_by_side({r: (lambda r=r: resume_path(store, loaded, r)) for r in ("small", "large")}, runs)
    s, lg = median(t["small"]), median(t["large"])
    t0 = time.perf_counter()
    tools = base / "pending_tools.py"
    tools.write_text(
        "from flowrt import bind, pending\n\n\n@bind('echo.echo')\ndef echo(x):\n    return pending\n"
    )
    rep = host.resume("large", store_path=str(path), tools=[str(tools)])  # end to end, compile included
    he = time.perf_counter() - t0
    store.close()
    print(
        f"Resume cost vs facts archived before the latest checkpoint (checkpoint every {CP_EVERY} facts; "
        f"medians of {runs} alternating runs)"
    )
    for r, v in (("small", s), ("large", lg)):
        print(
            f"  {sizes[r][0]:>7,} archived facts, {sizes[r][1]:>3} facts from the latest checkpoint: "
            f"{v * 1e3:7.2f} ms a resume"
        )
    print(
        f"  ratio large / small: {lg / s:.2f}x  {verdict(lg / s < 1.5)} (must not grow with archived facts)"
    )
    print(
        f"  host.resume end to end on the large run (compile stored sources, exit {rep.exit_code}): {he * 1e3:.0f} ms"
    )
    return dict(
        small_ms=s * 1e3, large_ms=lg * 1e3, ratio=lg / s, archived=(sizes["small"][0], sizes["large"][0])
    )


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args(argv)
    loaded = load("effectful")
    base = Path(tempfile.mkdtemp(prefix="bench_replay_", dir=args.dir or "."))
    try:
        res = replay(base, loaded, args.calls, args.runs)
        res["resume"] = resume(base, loaded, args.runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return res


if __name__ == "__main__":
    main()
