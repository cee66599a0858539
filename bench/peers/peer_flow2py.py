"""flow2py, the way a host application runs it: bench/peers/flow/peers.flow checked and loaded
through the real pipeline, driven by `flowrt.host.Host` over the durable SQLite store (every
Call fsynced before it is sent, as always)."""

from __future__ import annotations

import uuid
from pathlib import Path

from common import FLOW, Timer, pg_payload, sqlite_payload

NAME = "flow2py"


def _load():
    from flow2py import host
    from flow2py.diagnostics import render_text

    r = host.check(str(FLOW / "peers.flow"))
    if r.diagnostics:
        raise SystemExit(render_text(r.diagnostics, r.sources))
    return host.Loaded(r.program)


def has_postgresql() -> bool:
    """Whether this checkout's store has its PostgreSQL backend (flowrt.history.pg, issue 11)."""
    import importlib.util

    return importlib.util.find_spec("flowrt.history.pg") is not None


class Peer:
    def __init__(self, backend: str, workdir: Path, pg: str | None):
        import flowrt as rt
        from flowrt.host.client import Host

        self.backend = backend
        if backend == "sqlite":
            self.path = str(workdir / "flow2py.db")
        elif has_postgresql():
            self.path = pg
        else:
            raise RuntimeError("flow2py on PostgreSQL: not yet (no PostgreSQL store in this checkout)")
        self.rt = rt
        self.prog = _load()
        self.hold_last = False
        b = rt.Bindings()
        b.bind("noop.step", lambda i: {"Ok": i})
        b.bind("noop.last", lambda i: rt.pending if self.hold_last else {"Ok": i})
        self.host = Host(self.path, b)
        self._run("chain", 3)  # the store created, the sources stored

    def _run(self, entry: str, n: int, checkpoint_every=None) -> str:
        rep = self.host.start(
            self.prog,
            entry=entry,
            input={"n": n, "acc": 0} if entry == "crashed" else {"n": n},
            run_id=f"{entry}-{uuid.uuid4().hex[:12]}",
            checkpoint_every=checkpoint_every,
        )
        if rep.exit_code != 0 and not (entry == "crashed" and self.hold_last):
            raise RuntimeError(f"flow2py {entry}({n}): exit {rep.exit_code}: {rep.text}")
        return rep.run_id

    def step(self, n: int) -> dict:
        with Timer() as t:
            self._run("chain", n)
        return t.per(n)

    def fanout(self, n: int) -> dict:
        with Timer() as t:
            self._run("fan", n)
        return t.per(n)

    def recovery_checkpointed(self, n: int) -> dict:
        """The same, the run checkpointing every 20 facts (`--checkpoint-every 20`): resume reads
        the latest checkpoint and re-drives only the facts after it, as LangGraph's resume reads
        its latest checkpoint."""
        return self.recovery(n, checkpoint_every=20)

    def recovery(self, n: int, checkpoint_every=None) -> dict:
        """A run that stopped after n durable steps, its next call open (recorded, unanswered): its
        reply delivered and the run continued (`Host.resume`): the facts read and verified, the n
        steps re-driven from the history without calling the Tool, the last step live."""
        self.hold_last = True
        try:
            run_id = self._run("crashed", n, checkpoint_every)
        finally:
            self.hold_last = False
        (call_id, _tool), *_ = self.host.store.host_records.load_run(run_id).open_calls
        with Timer() as t:
            rep = self.host.resume(
                self.prog, run_id, replies={call_id: {"Ok": 1}}, checkpoint_every=checkpoint_every
            )
        if rep.exit_code != 0:
            raise RuntimeError(f"flow2py resume: exit {rep.exit_code}: {rep.text}")
        return t.per(n)

    def replay(self, n: int) -> dict:
        """`flow2py replay` of a completed run of n steps: read, verify the chain, re-run."""
        run_id = self._run("chain", n)
        with Timer() as t:
            rep = self.host.replay(self.prog, run_id)
        if rep.exit_code != 0:
            raise RuntimeError(f"flow2py replay: exit {rep.exit_code}: {rep.text}")
        return t.per(n)

    def bytes_per_step(self, n: int) -> float:
        size = (
            (lambda: sqlite_payload(self.path))
            if self.backend == "sqlite"
            else (lambda: pg_payload(self.path, "public"))
        )
        before = size()
        self._run("chain", n)
        return (size() - before) / n

    def close(self) -> None:
        self.host.store.close()
