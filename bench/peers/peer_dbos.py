"""DBOS Transact, idiomatically: `@DBOS.workflow()` functions calling `@DBOS.step()` functions,
the system database on SQLite or on the local PostgreSQL. Recovery is DBOS's own: a process that
ran a workflow is killed (os._exit) in its last step, and another recovers the workflow
(`DBOS._recover_pending_workflows`, what DBOS does at launch and what Conductor asks for): the
recorded step outputs are read back instead of the steps being run again, the last step runs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from common import PEERS, Timer, pg_payload, sqlite_payload

from dbos import DBOS, SetWorkflowID

HOLD = {"crash": False}


CALLS = {"noop": 0}


@DBOS.step()
def noop(i: int) -> int:
    CALLS["noop"] += 1
    return i


@DBOS.step()
def last(i: int) -> int:
    if HOLD["crash"]:
        os._exit(0)  # the process dies in its last step, its earlier steps recorded
    return i


@DBOS.workflow()
def chain(n: int) -> int:
    s = 0
    for i in range(n):
        s += noop(i)
    return s


@DBOS.workflow()
def crashed(n: int) -> int:
    return last(chain_steps(n))


def chain_steps(n: int) -> int:
    s = 0
    for i in range(n):
        s += noop(i)
    return s


@DBOS.step()
async def anoop(i: int) -> int:
    return i


@DBOS.workflow()
async def fan(n: int) -> int:
    values = await asyncio.gather(*(anoop(i) for i in range(n)))
    return sum(values)


@DBOS.workflow()
def short(n: int) -> int:
    return noop(noop(noop(n)))


def config(url: str, executor: str = "local") -> dict:
    return {
        "name": "peers",
        "system_database_url": url,
        "run_admin_server": False,
        "executor_id": executor,
        "log_level": "WARNING",
    }


def url_of(backend: str, workdir: Path, pg: str | None) -> str:
    if backend == "sqlite":
        return f"sqlite:///{workdir / 'dbos.sqlite'}"
    if pg is None:
        raise RuntimeError("no PostgreSQL database")
    return pg


class Peer:
    def __init__(self, backend: str, workdir: Path, pg: str | None):
        self.backend, self.workdir = backend, workdir
        self.url = url_of(backend, workdir, pg)
        self.path = str(workdir / "dbos.sqlite")
        dbos = DBOS(config=config(self.url))
        # recovery goes through DBOS's internal queue, polled every 1 s by default: poll it every
        # 2 ms here (set before launch starts its thread), so the figure is DBOS's work, not its wait
        dbos._registry.get_internal_queue()._polling_interval_sec = 0.002
        DBOS.launch()
        self._wf(chain, 3)

    def _wf(self, f, n: int):
        with SetWorkflowID(uuid.uuid4().hex):
            return f(n)

    def step(self, n: int) -> dict:
        with Timer() as t:
            self._wf(chain, n)
        return t.per(n)

    def fanout(self, n: int) -> dict:
        with Timer() as t:
            with SetWorkflowID(uuid.uuid4().hex):
                asyncio.run(fan(n))
        return t.per(n)

    def recovery(self, n: int) -> dict:
        executor = f"crashed-{uuid.uuid4().hex[:8]}"
        r = subprocess.run(
            [sys.executable, str(PEERS / "peer_dbos.py"), "crash", self.url, executor, str(n)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if r.returncode != 0:
            raise RuntimeError(f"the crashing process: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        with Timer() as t:
            (handle,) = DBOS._recover_pending_workflows([executor])  # noqa: SLF001
            handle.get_result(polling_interval_sec=0.002)
        return t.per(n)

    def bytes_per_step(self, n: int) -> float:
        size = (
            (lambda: sqlite_payload(self.path))
            if self.backend == "sqlite"
            else (lambda: pg_payload(self.url, "dbos"))
        )
        before = size()
        self._wf(chain, n)
        return (size() - before) / n

    def close(self) -> None:
        DBOS.destroy()


def _crash(url: str, executor: str, n: int) -> None:
    """Run `crashed(n)` and die in its last step (the DBOS of another process recovers it)."""
    DBOS(config=config(url, executor))
    DBOS.launch()
    HOLD["crash"] = True
    with SetWorkflowID(uuid.uuid4().hex):
        crashed(n)
    raise SystemExit("the workflow was meant to crash")


# ---- throughput: a worker process over PostgreSQL --------------------------------------------


def _worker(url: str, executor: str, concurrency: int) -> None:
    """A DBOS process dequeuing `short` workflows from the queue `peers` until killed: at most
    `concurrency` at once, polled every 10 ms (DBOS's default is 1 s)."""
    DBOS(config=config(url, executor))
    DBOS.launch()
    DBOS.register_queue("peers", worker_concurrency=concurrency, polling_interval_sec=0.01)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.path.insert(0, str(PEERS))
    if sys.argv[1] == "crash":
        _crash(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "worker":
        _worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
