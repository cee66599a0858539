"""flow2py and its peers side by side on one no-op step (not a test; never part of CI).

    pip install -e '.[bench]'
    .venv/bin/python bench/peers/run.py [--quick] [--rounds R] [--steps N] [--fan N] [--runs N]
        [--workers 1,2,4] [--only step,recovery,recovery_cp,replay,fanout,bytes,throughput] [--dir DIR]

Systems: flow2py (SQLite store, and PostgreSQL), DBOS on SQLite and on the
local PostgreSQL, LangGraph with its SQLite and PostgreSQL checkpointers, and Temporal's
`Replayer` (no Temporal server is reachable offline: bench/peers/peer_temporal.py says why). Each
system runs in its own process (bench/peers/serve.py), started once; the measurements alternate
between the systems round by round (A B C A B C ...), and each figure is the median over the
rounds, with its ratio to flow2py's (how many times flow2py's cost the peer's is).

* step: one run of N durable no-op steps in a row, per step (wall; CPU time of the peer's own
  process beside it: the database server's CPU is not in it).
* recovery: a run that stopped after N steps, continued to its end by the system's own recovery
  (flow2py: `Host.resume` with the open call's reply; DBOS: a process killed in its last step,
  its workflow recovered by another; LangGraph: a run whose last node failed, invoked again from
  its checkpoint), per recorded step. recovery_cp: flow2py's run checkpointing every 20 facts
  (`--checkpoint-every 20`), so its resume re-drives only the facts after the latest checkpoint.
* replay: re-running a finished run of N steps against its history to check it (flow2py
  `Host.replay`, Temporal's `Replayer`), per step; DBOS and LangGraph have no such check.
* fanout: one run of F steps at once (flow2py `task.all`, DBOS `asyncio.gather` of async steps in
  an async workflow, LangGraph `Send`; Temporal: replay of a fan-out history), per call.
* bytes: payload bytes the store holds more after one run of N steps, per step (every column of
  every row; Temporal: the history's protobuf bytes).
* throughput: R short runs (3 no-op steps) through 1, 2 and 4 worker processes over one store,
  from the first submission until every run has completed: flow2py `flow2py worker` over one
  SQLite file and over one PostgreSQL database; DBOS processes on a queue in PostgreSQL and in
  one SQLite file; LangGraph has no worker or queue in the
  library, so W processes each invoke R/W runs themselves over one PostgreSQL checkpointer.

Databases are created on the local PostgreSQL (127.0.0.1:5432, user postgres) and dropped at the
end; files go in a folder under --dir (default: the current one; never a tmpfs). docs/bench.md
keeps the latest table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import FLOW, PEERS, pg_available, pg_create, pg_drop  # noqa: E402

ROOT = PEERS.parent.parent
BASE = "flow2py/sqlite"
#: (label, peer module, backend, PostgreSQL database or None)
SYSTEMS = [
    ("flow2py/sqlite", "flow2py", "sqlite", None),
    ("flow2py/postgresql", "flow2py", "postgresql", "peers_flow2py"),
    ("dbos/sqlite", "dbos", "sqlite", None),
    ("dbos/postgresql", "dbos", "postgresql", "peers_dbos"),
    ("langgraph/sqlite", "langgraph", "sqlite", None),
    ("langgraph/postgresql", "langgraph", "postgresql", "peers_langgraph"),
    ("temporal/replayer", "temporal", "replayer", None),
]
#: measurement -> (the op each peer answers, or None where it has none; why not)
OPS = {
    "step": {"temporal": (None, "no server offline")},
    "recovery": {"temporal": (None, "see replay")},
    "recovery_cp": {
        "dbos": (None, "-"),
        "langgraph": (None, "see recovery: it always resumes from its latest checkpoint"),
        "temporal": (None, "-"),
    },
    "replay": {
        "dbos": (None, "no replay check"),
        "langgraph": (None, "no replay check"),
    },
    "fanout": {"temporal": ("replay_fanout", "replay of the fan-out history")},
    "bytes": {},
}
OP_NAME = {
    "step": "step",
    "recovery": "recovery",
    "recovery_cp": "recovery_checkpointed",
    "replay": "replay",
    "fanout": "fanout",
    "bytes": "bytes_per_step",
}
TITLE = {
    "step": "durable step, live (µs a step)",
    "recovery": "recovery (µs a recorded step)",
    "recovery_cp": "recovery, flow2py checkpointing every 20 facts (µs a recorded step)",
    "replay": "replay check (µs a step)",
    "fanout": "fan-out (µs a call)",
    "bytes": "history bytes a step",
}


class Server:
    def __init__(self, label, peer, backend, workdir: Path, pg):
        self.label, self.peer = label, peer
        self.log = open(workdir / f"{label.replace('/', '-')}.log", "w")
        args = [sys.executable, str(PEERS / "serve.py"), peer, backend, str(workdir)] + ([pg] if pg else [])
        self.p = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True
        )
        first = self._read()
        self.error = first.get("error")

    def _read(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            return {"error": f"the process ended (exit {self.p.wait()}); see {self.log.name}"}
        return json.loads(line)

    def ask(self, op: str, n: int) -> dict:
        self.p.stdin.write(json.dumps({"op": op, "n": n}) + "\n")
        self.p.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.p.poll() is None:
            try:
                self.p.stdin.write('{"op": "quit"}\n')
                self.p.stdin.flush()
                self.p.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
        self.log.close()


def _fmt(x: float, kind: str) -> str:
    if kind == "bytes":
        return f"{x:,.0f}"
    us = x * 1e6
    return f"{us:,.0f}" if us >= 100 else f"{us:,.1f}"


def measure(servers: dict, what: list, sizes: dict, rounds: int) -> dict:
    """{measure: {label: cell}}, a cell {"wall": median, "cpu": median} or {"why": text}."""
    table: dict = {}
    for kind in what:
        cells: dict = {label: {"wall": [], "cpu": []} for label in servers}
        for label, s in servers.items():
            if s.error:
                cells[label] = {"why": s.error}
                continue
            op, why = OPS[kind].get(s.peer, (OP_NAME[kind], None))
            if op is None:
                cells[label] = {"why": why}
            elif why:
                cells[label]["note"] = why
            cells[label]["op"] = op
        reps = 1 if kind == "bytes" else rounds
        for _ in range(reps):
            for label, s in servers.items():
                c = cells[label]
                if "why" in c:
                    continue
                r = s.ask(c["op"], sizes[kind])
                if "error" in r:
                    cells[label] = {"why": r["error"]}
                elif kind == "bytes":
                    c["wall"].append(r["result"])
                else:
                    c["wall"].append(r["result"]["wall"])
                    c["cpu"].append(r["result"]["cpu"])
        for label, c in cells.items():
            if "why" not in c:
                c["wall"] = statistics.median(c["wall"])
                c["cpu"] = statistics.median(c["cpu"]) if c["cpu"] else None
        table[kind] = cells
        _print_row(kind, cells)
    return table


def _print_row(kind: str, cells: dict) -> None:
    base = cells.get(BASE, {})
    print(f"\n{TITLE[kind]}:")
    for label, c in cells.items():
        if "why" in c:
            print(f"  {label:22} -  ({c['why']})")
            continue
        line = f"  {label:22} {_fmt(c['wall'], kind):>10}"
        if c.get("cpu") is not None:
            line += f"  (CPU {_fmt(c['cpu'], kind)})"
        if "wall" in base and label != BASE and "why" not in base:
            line += f"   {c['wall'] / base['wall']:.2f}x flow2py"
            if c.get("cpu") is not None and base.get("cpu"):
                line += f" (CPU {c['cpu'] / base['cpu']:.2f}x)"
        if c.get("note"):
            line += f"   [{c['note']}]"
        print(line, flush=True)


# ---- throughput ---------------------------------------------------------------------------------------


def _wait_lines(procs, text: str, timeout: float = 120) -> None:
    for p in procs:
        deadline = time.monotonic() + timeout
        while True:
            line = p.stdout.readline()
            if text in line:
                break
            if not line or time.monotonic() > deadline:
                raise RuntimeError(f"a worker did not start (exit {p.poll()})")


def _wait_file(path: Path, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"a worker did not start: {path.read_text(errors='replace')[-200:]}")
        time.sleep(0.02)


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _until(count, runs: int, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while count() < runs:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {count()} of {runs} runs completed in {timeout:.0f} s")
        time.sleep(0.02)


def tp_flow2py(workdir: Path, runs: int, workers: int, backend: str) -> dict:
    """`workers` `flow2py worker` processes over one store: a SQLite file, or a PostgreSQL
    database of its own (claims FOR UPDATE SKIP LOCKED, woken by LISTEN/NOTIFY)."""
    from flow2py import host
    from flowrt.history.store import Store
    from flowrt.host import worker as wk

    name = f"peers_flow2py_tp_{workers}"
    if backend == "postgresql":
        store_at = pg_create(name)
    else:
        store_at = str(workdir / f"tp-flow2py-{workers}-{time.monotonic_ns()}.db")
    prog = host.Loaded(host.check(str(FLOW / "peers.flow")).program)
    store = Store(store_at)
    cmd = [str(Path(sys.executable).parent / "flow2py"), "worker", f"peers={FLOW / 'peers.flow'}"]
    cmd += ["--tools", str(PEERS / "flow2py_tools.py"), "--store", store_at, "--concurrency", "8"]
    logs = [workdir / f"flow2py-{backend}-worker-{workers}-{k}.log" for k in range(workers)]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"), cwd=workdir) for log in logs
    ]
    try:
        for log in logs:  # "flow2py worker: serving ..." on its stderr
            _wait_file(log, "serving")

        def done() -> int:
            if backend == "postgresql":
                with store.file.lock:
                    return store.file.db.execute(
                        "SELECT count(*) FROM runs WHERE state='completed'"
                    ).fetchone()[0]
            con = sqlite3.connect(f"file:{store_at}?mode=ro", uri=True)
            try:
                return con.execute("SELECT count(*) FROM runs WHERE state='completed'").fetchone()[0]
            finally:
                con.close()

        t0 = time.perf_counter()
        for i in range(runs):
            wk.submit(store, prog, program="peers", entry="short", input={"n": i}, run_id=f"t{i}")
        submitted = time.perf_counter() - t0
        _until(done, runs)
        total = time.perf_counter() - t0
    finally:
        _stop(procs)
        store.close()
        if backend == "postgresql":
            pg_drop(name)
    return {"runs_s": runs / total, "submit_s": submitted}


def tp_dbos(workdir: Path, runs: int, workers: int, backend: str) -> dict:
    """`workers` DBOS processes dequeuing from one queue in its system database: PostgreSQL, or
    one SQLite file (DBOS's SQLite system database, shared by the processes)."""
    import psycopg
    from dbos import DBOSClient

    name = f"peers_dbos_tp_{workers}"
    if backend == "postgresql":
        url = pg_create(name)
    else:
        url = f"sqlite:///{workdir / f'tp-dbos-{workers}-{time.monotonic_ns()}.sqlite'}"
    procs = []
    try:
        for k in range(workers):  # one after the other: the first creates the schema
            p = subprocess.Popen(
                [sys.executable, str(PEERS / "peer_dbos.py"), "worker", url, f"worker-{k}", "8"],
                stdout=subprocess.PIPE,
                stderr=open(workdir / f"dbos-worker-{k}.log", "w"),
                text=True,
            )
            procs.append(p)
            _wait_lines([p], "ready")
        client = DBOSClient(system_database_url=url)
        if backend == "postgresql":
            con = psycopg.connect(url, autocommit=True)
            count_sql = "SELECT count(*) FROM dbos.workflow_status WHERE status='SUCCESS'"
        else:
            con = sqlite3.connect(f"file:{url.removeprefix('sqlite:///')}?mode=ro", uri=True)
            count_sql = "SELECT count(*) FROM workflow_status WHERE status='SUCCESS'"

        def done() -> int:
            return con.execute(count_sql).fetchone()[0]

        t0 = time.perf_counter()
        for i in range(runs):
            client.enqueue({"queue_name": "peers", "workflow_name": "short", "workflow_id": f"t{i}"}, i)
        submitted = time.perf_counter() - t0
        _until(done, runs)
        total = time.perf_counter() - t0
        con.close()
        client.destroy()
    finally:
        _stop(procs)
        if backend == "postgresql":
            pg_drop(name)
    return {"runs_s": runs / total, "submit_s": submitted}


def tp_langgraph(workdir: Path, runs: int, workers: int, _backend) -> dict:
    name = f"peers_langgraph_tp_{workers}"
    url = pg_create(name)
    procs = []
    try:
        share = [runs // workers + (1 if k < runs % workers else 0) for k in range(workers)]
        for k in range(workers):
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(PEERS / "peer_langgraph.py"), "split", url, str(share[k]), str(k)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=open(workdir / f"langgraph-split-{k}.log", "w"),
                    text=True,
                )
            )
            _wait_lines([procs[-1]], "ready")
        t0 = time.perf_counter()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        _wait_lines(procs, "done", timeout=900)
        total = time.perf_counter() - t0
    finally:
        _stop(procs)
        pg_drop(name)
    return {"runs_s": runs / total, "submit_s": None}


#: (label, function, peer, backend), measured in this order round by round
THROUGHPUT = [
    ("flow2py/sqlite", tp_flow2py, "flow2py", "sqlite"),
    ("flow2py/postgresql", tp_flow2py, "flow2py", "postgresql"),
    ("dbos/sqlite", tp_dbos, "dbos", "sqlite"),
    ("dbos/postgresql", tp_dbos, "dbos", "postgresql"),
    ("langgraph/postgresql (no worker)", tp_langgraph, "langgraph", "postgresql"),
]


def throughput(workdir: Path, runs: int, workers: list, rounds: int, usable: set) -> dict:
    print(f"\nthroughput: {runs:,} short runs (3 no-op steps) through W worker processes, runs/s:")
    out: dict = {}
    for w in workers:
        got: dict = {label: [] for label, *_ in THROUGHPUT}
        why: dict = {}
        for _ in range(rounds):
            for label, f, peer, backend in THROUGHPUT:
                if peer not in usable:
                    why[label] = "does not import"
                if label in why:
                    continue
                try:
                    got[label].append(f(workdir, runs, w, backend)["runs_s"])
                except Exception as e:  # noqa: BLE001  (the cell says why)
                    why[label] = f"{type(e).__name__}: {e}"[:160]
        base = statistics.median(got[BASE]) if got[BASE] and BASE not in why else None
        for label, *_ in THROUGHPUT:
            if label in why:
                out[(label, w)] = {"why": why[label]}
                print(f"  W={w} {label:34} -  ({why[label]})")
                continue
            rate = statistics.median(got[label])
            out[(label, w)] = {"runs_s": rate}
            ratio = f"   flow2py {base / rate:.2f}x its rate" if base and label != BASE else ""
            print(f"  W={w} {label:34} {rate:8.1f}{ratio}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a couple of minutes: fewer rounds, smaller sizes")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None, help="steps of the step/recovery/replay/bytes runs")
    ap.add_argument("--fan", type=int, default=100)
    ap.add_argument("--runs", type=int, default=None, help="short runs of the throughput measurement")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--tp-rounds", type=int, default=None)
    ap.add_argument("--only", default="step,recovery,recovery_cp,replay,fanout,bytes,throughput")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    steps = args.steps or (30 if args.quick else 100)
    runs = args.runs or (100 if args.quick else 1000)
    tp_rounds = args.tp_rounds or 1
    what = [w for w in args.only.split(",") if w]
    unknown = set(what) - set(OPS) - {"throughput"}
    if unknown:
        print(f"--only: unknown measurement(s) {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="bench-peers-", dir=args.dir or ".")).resolve()
    no_pg = pg_available()
    print(
        f"bench/peers: {rounds} rounds, steps {steps}, fan-out {args.fan}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    print(f"PostgreSQL at 127.0.0.1:5432: {'reachable' if no_pg is None else no_pg}")
    servers: dict = {}
    made = []
    try:
        for label, peer, backend, db in SYSTEMS if what != ["throughput"] else ():
            pg = None
            if db is not None:
                if no_pg is not None:
                    servers[label] = _Down(label, peer, f"no PostgreSQL ({no_pg})")
                    continue
                pg = pg_create(db)
                made.append(db)
            servers[label] = Server(label, peer, backend, workdir, pg)
            state = "started" if not servers[label].error else f"not started: {servers[label].error}"
            print(f"  {label}: {state}", flush=True)
        if "flow2py/postgresql" in servers and servers["flow2py/postgresql"].error:
            print("flow2py on PostgreSQL: not yet")
        table = measure(
            servers,
            [w for w in what if w != "throughput"],
            dict.fromkeys(OPS, steps) | {"fanout": args.fan},
            rounds,
        )
        usable = {p for p in ("flow2py", "dbos", "langgraph") if importlib.util.find_spec(p) is not None}
        for s in servers.values():
            s.close()
        if "throughput" in what:
            workers = [int(w) for w in args.workers.split(",")]
            table["throughput"] = throughput(workdir, runs, workers, tp_rounds, usable)
    finally:
        for s in servers.values():
            s.close()
        for db in made:
            pg_drop(db)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


class _Down:
    def __init__(self, label, peer, why):
        self.label, self.peer, self.error = label, peer, why

    def close(self) -> None:
        pass


if __name__ == "__main__":
    sys.exit(main())
