"""A durable 100-way fan-out, side by side with LangGraph's `Send` fan-out (not a test).

    .venv/bin/python bench/bench_fanout.py [--n 100] [--runs 7] [--loop 200] [--dir DIR]
        [--base-python /work/wt-gcbase/.venv/bin/python]

1. Fan-out: `fan(n)` of bench/flow/effectful.flow (task.all of n tasks, one Tool call each, the
   Tool a sync Python function answering at once) driven live into a SQLite store (the host's
   path: Store.create_run, SqliteRecorder, drive; a new run each round in one store kept open,
   as a worker keeps its store and LangGraph's saver its connection), µs a call, and the commits a fan-out makes
   (write transactions of the store's file; the fsynced ones those made durable; the median of
   the rounds': replies commit together as they arrive together), and how many of them were made
   before its first call was sent (the goal: at most 3). Wall time and CPU time
   (time.process_time: every thread of the contender's process), each a median per call, after
   one untimed round of each contender. Each contender runs in a process of its own (flow2py,
   LangGraph, the base), as each would be deployed: sharing one, each paid for the other's heap.
   Beside it, in the same rounds, alternating: LangGraph's fan-out (a conditional edge from START
   returning one `Send("one", ...)` per item, the node calling the same function, results joined
   by an `operator.add` reducer) with its SqliteSaver checkpointer on a file in the same folder,
   with its default durability ("async") and with durability="sync". Ratio flow2py / LangGraph.
2. Several runs at once: `--many` fan-outs on threads of their own over one store, as a worker
   drives them: their commits share transactions (flowrt.history.recorder.CommitGroup).
3. Reply durability: a sequential durable `echo_loop(--loop)` (one call at a time), the recorder
   as it is (each Reply committed as it is admitted, without an fsync) against the same recorder
   with that commit left out (a Reply waits for the next Call's commit, as before): the
   difference is the cost of a Reply's own commit, µs a Reply.
With `--base-python` (a Python whose flowrt is an older checkout, e.g. a venv in a worktree at the
branch point), the same flow2py runs are timed by that flowrt in a child process, alternating
with this one's rounds: before/after.

Without LangGraph installed (`pip install langgraph langgraph-checkpoint-sqlite`; never a
dependency of the project) its columns are skipped, and said so. The stores go under --dir
(default: a temporary folder in the current directory; a tmpfs would make fsync free).
"""

from __future__ import annotations

import argparse
import json
import operator
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, median  # noqa: E402

import flowrt as rt  # noqa: E402
from flowrt.data.facts import Start  # noqa: E402
from flowrt.engine import drive as drv  # noqa: E402
from flowrt.history.store import Store  # noqa: E402

TOOL = "echo.echo"


#: the Commits of the fan-out being timed, and the commits it had made when its first call came
_watch: dict = {}


def echo(x):
    c = _watch.get("commits")
    if c is not None and "first" not in _watch:
        _watch["first"] = c.all  # what it had committed before any call was sent
    return {"Ok": x}


def bindings() -> rt.Bindings:
    b = rt.Bindings()
    b.bind(TOOL, echo)
    return b


class Commits:
    """Write transactions committed on a store's file, and those of them fsynced (durable on a
    durable store). Counted around `StoreFile.transaction`, not with a statement trace: SQLite's
    trace callback expands every statement's SQL into a Python string, one a fact row, which
    cost the fan-out ~9 µs a call of the bench's own time."""

    def __init__(self, store):
        self.all = self.fsynced = 0
        f = store.file
        inner = f.transaction

        @contextmanager
        def counted(durable=True, whole=True):
            with inner(durable, whole) as db:
                yield db
            self.all += 1
            self.fsynced += bool(durable and f.durable)

        f.transaction = counted


class RepliesWait(rt.SqliteRecorder):
    """The recorder with a Reply's own commit left out: a Reply waits in the buffer for the next
    Call's (or End's) commit, as before replies were committed at once."""

    def record(self, fact):
        super().record(fact)
        self._reply = False


class TimedReplies(rt.SqliteRecorder):
    """The recorder as it is, timing each commit of a Reply alone (the commit a Reply now costs)."""

    spent: list = []

    def sync(self, durable=None):
        if durable is None and getattr(self, "_reply", False) and not self._urgent:
            t0 = time.perf_counter()
            super().sync()
            TimedReplies.spent.append(time.perf_counter() - t0)
        else:
            super().sync(durable)


#: the stores of this process's runs, by path: kept open across rounds, as a worker keeps its
#: store open across the runs it drives (and as LangGraph's saver keeps its connection); each
#: round is a new run in it. (A new store file a round made every first write grow a fresh WAL.)
_kept: dict[str, tuple] = {}
_run_ids = iter(range(10**9))


def kept_store(path: Path) -> tuple:
    """(the Store at `path`, its Commits), opened on first use."""
    got = _kept.get(str(path))
    if got is None:
        store = Store(path)
        got = _kept[str(path)] = (store, Commits(store))
    return got


def close_stores() -> None:
    for store, _ in _kept.values():
        store.close()
    _kept.clear()


def flow_run(loaded, fn, entry, args, names, path: Path, expect, recorder=rt.SqliteRecorder):
    """One live run, a new run in the store at `path`: (seconds, CPU seconds, commits, fsynced
    commits, the commits made before its first call was sent, the seconds of each Reply's own
    commit when timed: TimedReplies)."""
    store, commits = kept_store(path)
    run_id = f"r{next(_run_ids)}"
    st = Start(loaded.program.identity, loaded.program.std, rt.DATA_VERSION, entry, tuple(args), names)
    store.history.create_run(run_id, st, loaded.program.sources, {})
    commits.all = commits.fsynced = 0  # the run's own commits, from its recorder on
    _watch.clear()
    _watch["commits"] = commits
    TimedReplies.spent.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    rec = recorder(store, run_id)
    try:
        out = drv.drive(
            fn,
            [st],
            drv.DriveOptions(
                recorder=rec, bindings=bindings(), reachable=loaded.reachable(), resolve=loaded.resolve
            ),
        )
    finally:
        rec.close()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert out == drv.RunCompleted(expect), out
    first = _watch.pop("first", None)
    _watch.clear()
    return dt, cpu, commits.all, commits.fsynced, first, list(TimedReplies.spent)


class Flow:
    """The flow2py runs of this bench, in this process."""

    def __init__(self):
        self.loaded = load("effectful")
        self.fan = self.loaded.resolve("effectful::fan")
        self.loop = self.loaded.resolve("effectful::echo_loop")

    def run(self, what: str, n: int, path: Path):
        if what == "fan":
            return flow_run(self.loaded, self.fan, "fan", (n,), ("n",), path, n * (n - 1) // 2)
        rec = RepliesWait if what == "loop-waiting" else TimedReplies
        return flow_run(
            self.loaded, self.loop, "echo_loop", (n, 0), ("n", "acc"), path, n * (n + 1) // 2, rec
        )

    def run_many(self, n: int, runs: int, path: Path):
        """`runs` fan-outs of `n` at once on threads of their own over one store (as a worker
        drives them): (seconds, CPU seconds, commits, fsynced commits) for all of them."""
        import threading

        loaded, (store, commits) = self.loaded, kept_store(path)
        st = Start(loaded.program.identity, loaded.program.std, rt.DATA_VERSION, "fan", (n,), ("n",))
        ids = [f"r{next(_run_ids)}" for _ in range(runs)]
        for run_id in ids:
            store.history.create_run(run_id, st, loaded.program.sources, {})
        commits.all = commits.fsynced = 0
        outs = {}

        def one(i):
            with rt.SqliteRecorder(store, ids[i]) as rec:
                opts = drv.DriveOptions(
                    recorder=rec, bindings=bindings(), reachable=loaded.reachable(), resolve=loaded.resolve
                )
                outs[i] = drv.drive(self.fan, [st], opts)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(runs)]
        t0, c0 = time.perf_counter(), time.process_time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert all(o == drv.RunCompleted(n * (n - 1) // 2) for o in outs.values()) and len(outs) == runs, outs
        return dt, cpu, commits.all, commits.fsynced, None, []


class Child:
    """A contender in a process of its own (`--serve`), timing the runs asked of it, one request a
    line: this flowrt's runs, an older flowrt's (`--base-python`), or LangGraph's. Each in its own
    process, as each would be deployed: in one process, each pays for the other's heap (the
    collector's passes; flow2py's fan-out cost ~1.4x more CPU beside LangGraph's objects)."""

    def __init__(self, python: str):
        self.p = subprocess.Popen(
            [python, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run_many(self, n: int, runs: int, path: Path):
        return self.run(f"many{runs}", n, path)

    def run(self, what: str, n: int, path: Path):
        self.p.stdin.write(json.dumps([what, n, str(path)]) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit("a bench_fanout child ended")
        return tuple(json.loads(line))

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def serve() -> None:
    flow, graphs = None, {}
    for line in sys.stdin:
        what, n, path = json.loads(line)
        if what.startswith("lg-"):  # LangGraph's fan-out, its saver on the file at `path`
            g = graphs.get(what)
            if g is None:
                g = graphs[what] = LangGraphFan(Path(path), what[3:])
            got = g.run(n)
        else:
            flow = flow or Flow()
            if what == "loop-waiting" and not hasattr(rt.SqliteRecorder, "_flush"):
                what = "loop"  # an older recorder lets a Reply wait already
            if what.startswith("many"):
                got = flow.run_many(n, int(what[4:]), Path(path))
            else:
                got = flow.run(what, n, Path(path))
        print(json.dumps(got), flush=True)
    close_stores()
    for g in graphs.values():
        g.conn.close()


# ---- LangGraph ------------------------------------------------------------------------------------


class LangGraphFan:
    """LangGraph's map-reduce: START -> one `Send("one", {"i": i})` per item -> END, checkpointed
    by SqliteSaver in a file; one new thread a run."""

    def __init__(self, path: Path, durability: str):
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Send

        class State(TypedDict):
            n: int
            values: Annotated[list, operator.add]

        def route(state):
            return [Send("one", {"i": i}) for i in range(state["n"])]

        def one(item):
            return {"values": [echo(item["i"])["Ok"]]}

        g = StateGraph(State)
        g.add_node("one", one)
        g.add_conditional_edges(START, route, ["one"])
        g.add_edge("one", END)
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.app = g.compile(checkpointer=SqliteSaver(self.conn))
        self.durability = durability
        self.k = 0

    def run(self, n: int) -> tuple:
        """(seconds, CPU seconds) of one fan-out."""
        self.k += 1
        cfg = {"configurable": {"thread_id": f"t{self.k}"}}
        t0, c0 = time.perf_counter(), time.process_time()
        out = self.app.invoke({"n": n, "values": []}, cfg, durability=self.durability)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert sum(out["values"]) == n * (n - 1) // 2 and len(out["values"]) == n, out
        return dt, cpu


def langgraph_version():
    try:
        from importlib.metadata import version

        import langgraph.checkpoint.sqlite  # noqa: F401

        return version("langgraph")
    except Exception:  # noqa: BLE001  (absent or broken: the column is skipped)
        return None


# ---- main -----------------------------------------------------------------------------------------


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100, help="tasks a fan-out")
    ap.add_argument("--runs", type=int, default=7, help="alternating rounds")
    ap.add_argument("--loop", type=int, default=200, help="calls of the sequential loop (reply cost)")
    ap.add_argument("--many", type=int, default=4, help="fan-outs at once on one store (as a worker)")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--base-python", default=None, help="a Python whose flowrt is the code to compare with")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve()
        return {}
    n, k = args.n, args.loop
    lg = langgraph_version()
    base = Path(tempfile.mkdtemp(prefix="bench_fanout_", dir=args.dir or "."))
    # every contender in a process of its own (Child), the rounds alternating between them
    flow, child = Child(sys.executable), Child(args.base_python) if args.base_python else None
    lgc = Child(sys.executable) if lg else None
    res: dict = {}
    try:
        graphs = ("async", "sync") if lg else ()
        t: dict = {}
        cpu: dict = {}
        commits: dict = {}
        before_fan: list = []  # commits (the lease's among them) each fan-out made before its first call
        spent: list = []  # the seconds of each Reply's own commit in the loop

        def note(key, got):
            dt, c_s, c, fs, first, times = got
            t.setdefault(key, []).append(dt)
            cpu.setdefault(key, []).append(c_s)
            commits.setdefault(key, []).append((c, fs))
            if key == "fan" and first is not None:
                before_fan.append(first)
            if key == "loop":
                spent.extend(times)

        # one untimed round of each first: imports, the worker threads, LangGraph's first invoke
        flow.run("fan", n, base / "fan.db")
        if child:
            child.run("fan", n, base / "fanb.db")
        for d in graphs:
            lgc.run(f"lg-{d}", n, base / f"langgraph-{d}.db")
        for i in range(args.runs):
            note("fan", flow.run("fan", n, base / "fan.db"))
            if child:
                note("fan-base", child.run("fan", n, base / "fanb.db"))
            for d in graphs:
                dt, c_s = lgc.run(f"lg-{d}", n, base / f"langgraph-{d}.db")
                t.setdefault(f"lg-{d}", []).append(dt)
                cpu.setdefault(f"lg-{d}", []).append(c_s)
            note("loop", flow.run("loop", k, base / "loop.db"))
            note("loop-waiting", flow.run("loop-waiting", k, base / "loopw.db"))
            if child:
                note("loop-base", child.run("loop", k, base / "loopb.db"))
            note("many", flow.run_many(n, args.many, base / "many.db"))
            if child:
                note("many-base", child.run_many(n, args.many, base / "manyb.db"))
        calls = {"fan": n, "lg": n, "man": n * args.many}
        per = {key: median(v) / calls.get(key[:3], k) * 1e6 for key, v in t.items()}
        pcpu = {key: median(v) / calls.get(key[:3], k) * 1e6 for key, v in cpu.items()}
        # commits a run: the median of the rounds' counts (a fan-out's replies group as they arrive)
        commits = {key: tuple(median([x[j] for x in v]) for j in (0, 1)) for key, v in commits.items()}
        res.update(per_call_us=per, cpu_per_call_us=pcpu, commits=commits)
        print(
            f"Durable fan-out of {n} Tool calls: medians of {args.runs} alternating rounds (--dir {base.parent});"
            f" wall µs a call, CPU µs a call (all the process's threads)"
        )
        c, fs = commits["fan"]
        fan_before = max(before_fan) if before_fan else None
        res["commits_before_calls"] = fan_before
        print(
            f"  flow2py:                  {per['fan']:8.1f} wall {pcpu['fan']:8.1f} CPU; "
            f"{c:g} commits a fan-out ({fs:g} fsynced), at most {fan_before} of them before its first "
            f"call was sent (the lease's and the Calls'; goal: at most 3)"
        )
        if child:
            c, fs = commits["fan-base"]
            print(
                f"  flow2py before (base):    {per['fan-base']:8.1f} wall {pcpu['fan-base']:8.1f} CPU; "
                f"{c:g} commits a fan-out ({fs:g} fsynced); after/before {per['fan'] / per['fan-base']:.2f}x wall, "
                f"{pcpu['fan'] / pcpu['fan-base']:.2f}x CPU"
            )
        if lg:
            for d in graphs:
                r, rc = per["fan"] / per[f"lg-{d}"], pcpu["fan"] / pcpu[f"lg-{d}"]
                print(
                    f"  LangGraph {lg} Send, SqliteSaver, durability={d + ':':6} {per[f'lg-{d}']:8.1f} wall "
                    f"{pcpu[f'lg-{d}']:8.1f} CPU; flow2py / LangGraph {r:.2f}x wall, {rc:.2f}x CPU"
                )
                res[f"ratio_{d}"] = r
                res[f"cpu_ratio_{d}"] = rc
                print(
                    f"    goal under 0.2x LangGraph's fan-out per call: wall {'met' if r < 0.2 else 'NOT met'}, "
                    f"CPU {'met' if rc < 0.2 else 'NOT met'}"
                )
                if child:
                    print(
                        f"    (flow2py before / LangGraph: {per['fan-base'] / per[f'lg-{d}']:.2f}x wall, "
                        f"{pcpu['fan-base'] / pcpu[f'lg-{d}']:.2f}x CPU)"
                    )
        else:
            print("  LangGraph: not installed (pip install langgraph langgraph-checkpoint-sqlite): skipped")
        print(f"Durable sequential loop of {k} Tool calls (one Reply a call)")
        (c1, f1), (c0, f0) = commits["loop"], commits["loop-waiting"]
        print(
            f"  Reply committed as admitted:    {per['loop']:8.1f} wall {pcpu['loop']:7.1f} CPU; "
            f"{c1:g} commits ({f1:g} fsynced)"
        )
        print(
            f"  Reply waiting for the next Call: {per['loop-waiting']:7.1f} wall {pcpu['loop-waiting']:7.1f} CPU; "
            f"{c0:g} commits ({f0:g} fsynced)"
        )
        res["reply_us"] = median(spent) * 1e6
        print(
            f"  a Reply's own commit (timed around it, {len(spent)} of them): median "
            f"{res['reply_us']:.1f} µs a Reply; difference of the two loops: "
            f"{per['loop'] - per['loop-waiting']:.1f} µs a call (fsync noise is larger than it)"
        )
        if child:
            c, fs = commits["loop-base"]
            print(
                f"  flow2py before (base):          {per['loop-base']:8.1f} wall {pcpu['loop-base']:7.1f} CPU; "
                f"{c:g} commits ({fs:g} fsynced)"
            )
        m = args.many
        print(f"{m} fan-outs of {n} at once, one thread each, over one store (as a worker drives them)")
        for key, who in (("many", "flow2py"), ("many-base", "flow2py before (base)")):
            if key in per:
                c, fs = commits[key]
                print(
                    f"  {who + ':':24} {per[key]:8.1f} wall {pcpu[key]:8.1f} CPU; "
                    f"{c:g} commits for the {m} runs ({fs:g} fsynced)"
                )
    finally:
        for c in (flow, child, lgc):
            if c:
                c.close()
        shutil.rmtree(base, ignore_errors=True)
    return res


if __name__ == "__main__":
    main()
