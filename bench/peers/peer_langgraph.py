"""LangGraph, idiomatically: a `StateGraph` whose node `step` is one step (it loops on itself
until n steps are done), compiled with the SQLite or PostgreSQL checkpointer and invoked with
`durability="sync"` (each step's checkpoint is written before the next step starts; the default
"async" writes it while the next step runs). The fan-out is `Send` to a node n times; recovery
is LangGraph's resume: a run whose last node failed (as a crashed process leaves it) is invoked
again with `None` on its thread, continuing from the latest checkpoint."""

from __future__ import annotations

import operator
import sqlite3
import uuid
from pathlib import Path
from typing import Annotated, TypedDict

from common import Timer, pg_payload, sqlite_payload

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

HOLD = {"crash": False}


class Chain(TypedDict):
    i: int
    n: int
    acc: int


class Fan(TypedDict):
    n: int
    values: Annotated[list, operator.add]


def _step(s: Chain) -> dict:
    return {"i": s["i"] + 1, "acc": s["acc"] + s["i"]}


def _last(s: Chain) -> dict:
    if HOLD["crash"]:
        raise RuntimeError("the process dies in its last step")
    return {"acc": s["acc"] + 1}


def _chain_graph(crash: bool):
    g = StateGraph(Chain)
    g.add_node("step", _step)
    g.add_edge(START, "step")
    if crash:
        g.add_node("last", _last)
        g.add_conditional_edges("step", lambda s: "step" if s["i"] < s["n"] else "last")
        g.add_edge("last", END)
    else:
        g.add_conditional_edges("step", lambda s: "step" if s["i"] < s["n"] else END)
    return g


def _fan_graph():
    g = StateGraph(Fan)
    g.add_node("work", lambda s: {"values": [s["i"]]})
    g.add_conditional_edges(START, lambda s: [Send("work", {"i": i}) for i in range(s["n"])])
    g.add_edge("work", END)
    return g


class Peer:
    def __init__(self, backend: str, workdir: Path, pg: str | None):
        self.backend = backend
        if backend == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.path = str(workdir / "langgraph.sqlite")
            self.con = sqlite3.connect(self.path, check_same_thread=False)
            self.saver = SqliteSaver(self.con)
        else:
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg import Connection
            from psycopg.rows import dict_row

            self.url = pg
            self.con = Connection.connect(pg, autocommit=True, prepare_threshold=0, row_factory=dict_row)
            self.saver = PostgresSaver(self.con)
        self.saver.setup()
        self.chain = _chain_graph(False).compile(checkpointer=self.saver)
        self.crashed = _chain_graph(True).compile(checkpointer=self.saver)
        self.fan = _fan_graph().compile(checkpointer=self.saver)
        self._chain(3)

    def _config(self, n: int) -> dict:
        return {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": n + 10}

    def _chain(self, n: int, graph=None, config=None):
        out = (graph or self.chain).invoke(
            {"i": 0, "n": n, "acc": 0}, config or self._config(n), durability="sync"
        )
        return out

    def step(self, n: int) -> dict:
        with Timer() as t:
            out = self._chain(n)
        assert out["i"] == n, out
        return t.per(n)

    def fanout(self, n: int) -> dict:
        with Timer() as t:
            out = self.fan.invoke({"n": n, "values": []}, self._config(n), durability="sync")
        assert len(out["values"]) == n, out
        return t.per(n)

    def recovery(self, n: int) -> dict:
        config = self._config(n)
        HOLD["crash"] = True
        try:
            self._chain(n, self.crashed, config)
            raise RuntimeError("the run was meant to fail in its last step")
        except RuntimeError as e:
            if "dies" not in str(e):
                raise
        finally:
            HOLD["crash"] = False
        with Timer() as t:
            out = self.crashed.invoke(None, config, durability="sync")
        assert out["i"] == n, out
        return t.per(n)

    def bytes_per_step(self, n: int) -> float:
        size = (
            (lambda: sqlite_payload(self.path))
            if self.backend == "sqlite"
            else (lambda: pg_payload(self.url, "public"))
        )
        before = size()
        self._chain(n)
        return (size() - before) / n

    def close(self) -> None:
        self.con.close()


def _split(url: str, runs: int, k: int) -> None:
    """Throughput: this process invokes `runs` short runs (3 steps) itself, after "go" on stdin."""
    import sys

    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    con = Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    saver = PostgresSaver(con)
    if k == 0:
        saver.setup()
    graph = _chain_graph(False).compile(checkpointer=saver)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(runs):
        config = {"configurable": {"thread_id": f"{k}-{i}"}}
        graph.invoke({"i": 0, "n": 3, "acc": i}, config, durability="sync")
    print("done", flush=True)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if sys.argv[1] == "split":
        _split(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
