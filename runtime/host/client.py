"""The Python client of a worker, and run handles (docs/spec/execution.md, "The client").

    import flowrt

    client = flowrt.Client(".flow/runs.db", programs={"support": "examples/support/main.flow"})
    run = client.start("support", input={"ticket": "Login fails on Safari"})
    call = run.open_calls()[0]          # once the worker has paused it: c1:root#2 human.ask(...)
    run.reply(call.id, {"Ok": "Safari 17.4"})
    print(run.result(timeout=30))       # Resolved("...") as a value; raises on fault or halt

`Client(store)` hands work to a worker over the store (`flowrt.host.worker`): `start` records a
submitted run, `reply` delivers a reply (admitted against the Tool's type first), `cancel` halts
a run; the worker serving the store does the rest. Given the `Worker` itself instead of a store,
the client wakes its loop on each of them. A `RunHandle` reads the run's status, open calls,
result and history from the store; `result(timeout)` waits for the run to end (waking on each new
fact, `wait_for_change`), returns the value a completed run ended with, and raises
`RunFaultedError` (with the fault's location) or `RunHaltedError`; every method has an async
twin (`status_async`, `result_async`, ...).

A program is named as the worker serves it. To record a run the client needs the program too
(the Start holds its identity and the admitted input): `start` takes a name from `programs`, a
generated program (`Runnable`, a built package or its `PROGRAM`; its name is `name=` or its entry
module's), or a path `[NAME=]PATH` to a `.flow` entry file, compiled on first use by the
compiler that is installed. The runtime never imports the compiler: it finds it as the entry
point `flowrt_compilers` (flow2py registers `flow2py.host`, pyproject.toml), and without one a
path is refused.

`flowrt.host.Host` (this module's `Host`, the in-process host) has the same handles: its
`submit` drives the run in this process until it pauses or ends and returns a handle whose
`reply` continues it here.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from typing import Any, Optional

from flowrt.data.facts import Completed, End
from flowrt.history.store import Store, StoreError, UnknownRun
from flowrt.host import operations as ops
from flowrt.host import run_page
from flowrt.host import worker as wk
from flowrt.host.operations import Refused, Runnable, open_store, read, runnable_of
from flowrt.host.worker_ops import admit_reply

__all__ = ["Client", "Host", "RunHandle", "RunFaultedError", "RunHaltedError", "compiler"]

COMPILERS = "flowrt_compilers"  # the entry point group a compiler registers under


class RunFaultedError(Exception):
    """The run ended Faulted: `fault` is its End as text, with the source location."""

    def __init__(self, run_id: str, fault: str):
        super().__init__(f"run {run_id} faulted: {fault}")
        self.run_id, self.fault = run_id, fault


class RunHaltedError(Exception):
    """The run was halted (cancelled, or its process stopped it): it has no End."""

    def __init__(self, run_id: str, why: str = "halted"):
        super().__init__(f"run {run_id} was {why}; it has no End")
        self.run_id = run_id


def compiler():
    """The installed compiler (the `flowrt_compilers` entry point: a module with `compile_path`
    and `compile_stored`), or None."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=COMPILERS):
        return ep.load()
    return None


def _compiler():
    found = compiler()
    if found is None:
        raise Refused("no Flow compiler is installed to compile a program from its path (install flow2py)")
    return found


def _ended_value(store: Store, run_id: str, facts: int, prog: Runnable):
    """The value a completed run's End holds, decoded with its program's classes."""
    last = read(lambda: store.history.facts(run_id, facts, classes=prog.classes))
    if not last or type(last[-1]) is not End or type(last[-1].end) is not Completed:
        raise Refused(f"run {run_id}: its last fact is not End Completed")
    return last[-1].end.value


class RunHandle:
    """One run, as its client or host sees it. Sync methods block; each has an async twin."""

    def __init__(self, owner, run_id: str):
        self._owner, self.run_id = owner, run_id

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r})"

    def status(self) -> wk.RunStatus:
        return self._owner._status(self.run_id)

    def open_calls(self) -> tuple:
        """The run's open calls (`OpenCall`: id, tool, args as values and as text, since)."""
        return tuple(self.status().open_calls)

    def reply(self, call_id: str, value: Any) -> None:
        """Deliver the reply to an open call (JSON form or a runtime value), admitted first."""
        self._owner._deliver(self.run_id, call_id, value)

    def cancel(self) -> None:
        self._owner._cancel(self.run_id)

    def history(self, fmt: Optional[str] = None):
        """The facts: a list of the JSON export's objects, or (`fmt` "text", "json", "html") text."""
        text = self._owner._history(self.run_id, fmt or "json")
        return [json.loads(line) for line in text.splitlines()] if fmt is None else text

    def result(self, timeout: Optional[float] = None):
        """Wait for the run to end and return its value; `RunFaultedError`, `RunHaltedError`, or
        `TimeoutError` after `timeout` seconds (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.status()
            if st.state == "completed":
                return self._owner._result(self.run_id, st)
            if st.state == "faulted":
                raise RunFaultedError(self.run_id, st.fault or "Faulted")
            if st.state == "halted":
                raise RunHaltedError(self.run_id)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"run {self.run_id} did not end within {timeout} s (it is {st.state})")
            self._owner._wait(self.run_id, st.facts, 1.0 if left is None else min(left, 1.0), st)

    async def status_async(self) -> wk.RunStatus:
        return await asyncio.to_thread(self.status)

    async def open_calls_async(self) -> tuple:
        return await asyncio.to_thread(self.open_calls)

    async def reply_async(self, call_id: str, value: Any) -> None:
        await asyncio.to_thread(self.reply, call_id, value)

    async def cancel_async(self) -> None:
        await asyncio.to_thread(self.cancel)

    async def history_async(self, fmt: Optional[str] = None):
        return await asyncio.to_thread(self.history, fmt)

    async def result_async(self, timeout: Optional[float] = None):
        return await asyncio.to_thread(self.result, timeout)


class _Programs:
    """The programs a client or host knows, by the name the worker serves them by."""

    def __init__(self, programs: Optional[dict]):
        self.given = dict(programs or {})
        self.loaded: dict[str, Runnable] = {}
        self.paths: dict[str, Runnable] = {}  # compiled from a path, by its absolute path
        self.stored: dict[str, Runnable] = {}  # compiled from a run's stored sources, by identity

    def compiled(self, path) -> Runnable:
        key = os.path.abspath(os.fspath(path))
        if key not in self.paths:
            self.paths[key] = _compiler().compile_path(os.fspath(path))
        return self.paths[key]

    def named(self, name: str) -> Optional[Runnable]:
        if name not in self.loaded and name in self.given:
            p = self.given[name]
            self.loaded[name] = self.compiled(p) if isinstance(p, (str, os.PathLike)) else runnable_of(p)
        return self.loaded.get(name)

    def resolve(self, program, name: Optional[str]) -> tuple[str, Runnable]:
        """(name, program) for what `start` was given."""
        if isinstance(program, (str, os.PathLike)):
            text = os.fspath(program)
            if name is None and self.named(text) is not None:
                return text, self.loaded[text]
            label, eq, path = text.partition("=")
            if not eq or os.sep in label:
                label, path = os.path.splitext(os.path.basename(text))[0], text
            if not os.path.exists(path):
                raise Refused(f"no program named {text!r} is known to this client, and no file {path} exists")
            name = name or label
            self.loaded[name] = self.compiled(path)
            return name, self.loaded[name]
        prog = runnable_of(program)
        name = name or prog.program.entry_module
        self.loaded.setdefault(name, prog)
        return name, prog

    def known(self, store: Store, run_id: str) -> Optional[Runnable]:
        """The program of a stored run if it is one at hand (compiling nothing), else None."""
        try:
            identity = store.host_records.load_run(run_id).program
        except (UnknownRun, StoreError, sqlite3.Error):
            return None  # status says what is wrong
        for name in self.given:
            if name not in self.loaded and not isinstance(self.given[name], (str, os.PathLike)):
                self.named(name)
        return next((p for p in self.loaded.values() if p.program.identity == identity), None)

    def of_run(self, store: Store, run_id: str, name: Optional[str]) -> Runnable:
        """The program of a stored run: known by its name (if its identity matches), or compiled
        from the sources the run stored."""
        prog = self.named(name) if name else None
        info = read(store.host_records.load_run, run_id)
        if prog is not None and prog.program.identity == info.program:
            return prog
        for known in self.loaded.values():
            if known.program.identity == info.program:
                return known
        if info.program not in self.stored:
            self.stored[info.program] = _compiler().compile_stored(store, run_id)
        return self.stored[info.program]


class _Owner:
    """What a handle asks of its client or host: one store and the programs it knows."""

    store: Store
    programs: _Programs

    def _status(self, run_id: str) -> wk.RunStatus:
        return wk.status(self.store, run_id, self.programs.known(self.store, run_id))

    def _cancel(self, run_id: str) -> None:
        wk.cancel(self.store, run_id)

    def _history(self, run_id: str, fmt: str, *, served: bool = False, **page) -> str:
        """The run's history in `fmt`; for "html", `page` is the run page's own options (replay,
        message, token_needed: flowrt.host.run_page.run_page)."""
        return run_page.history(self.store, self._program(run_id), run_id, fmt, served=served, **page)

    def _result(self, run_id: str, st: wk.RunStatus):
        return _ended_value(self.store, run_id, st.facts, self._program(run_id, st))

    def _wait(self, run_id: str, seen_facts: int, timeout: float, st=None) -> bool:
        return wk.wait_for_change(self.store, run_id, seen_facts, timeout)

    def _program(self, run_id: str, st: Optional[wk.RunStatus] = None) -> Runnable:
        st = st or self._status(run_id)
        return self.programs.of_run(self.store, run_id, st.program)


class Client(_Owner):
    """Hands runs to a worker through its store (see the module docstring)."""

    def __init__(self, store: Any = None, *, programs: Optional[dict] = None):
        self.worker = store if isinstance(store, wk.Worker) else None
        if self.worker is not None:
            self.store = self.worker.store
            programs = {**self.worker.programs, **(programs or {})}
        else:
            self.store = store if isinstance(store, Store) else open_store(store)
        self.programs = _Programs(programs)

    def start(
        self,
        program=None,
        input: Optional[dict] = None,
        *,
        run_id: Optional[str] = None,
        entry: str = "main",
        name: Optional[str] = None,
        bundle: Optional[dict] = None,
    ) -> RunHandle:
        """Record a submitted run of `program` (a name, a path or a program; see the module
        docstring) for the worker to start; its input is admitted first (Refused otherwise).
        `bundle` instead of a program: a program as module texts (flowrt.host.bundles), checked
        first; one that does not check raises `BundleRefused` with its `diagnostics_json`."""
        if (program is None) == (bundle is None):
            raise Refused("start: give a program or a bundle, not both and not neither")
        if bundle is not None:
            from flowrt.host.bundles import submit_bundle

            if name is not None and isinstance(bundle, dict):
                bundle = {**bundle, "name": name}
            run_id = submit_bundle(
                self.store, bundle, entry=entry, input=input, run_id=run_id, worker=self.worker
            )
            return RunHandle(self, run_id)
        name, prog = self.programs.resolve(program, name)
        run_id = wk.submit(self.store, prog, program=name, entry=entry, input=input, run_id=run_id)
        if self.worker is not None:
            self.worker.wake()
        return RunHandle(self, run_id)

    def handle(self, run_id: str) -> RunHandle:
        """A handle on an existing run (refused when the store has no such run)."""
        self._status(run_id)
        return RunHandle(self, run_id)

    def runs(
        self, *, state: Optional[str] = None, program: Optional[str] = None, limit=None, offset=0
    ) -> list:
        """`RunStatus` of the store's runs, newest first, filtered by state and program name."""
        return wk.runs(self.store, state=state, program=program, limit=limit, offset=offset)

    def _deliver(self, run_id: str, call_id: str, value: Any) -> None:
        if self.worker is not None:
            self.worker.deliver(run_id, call_id, value)
        else:
            wk.deliver(self.store, run_id, call_id, value, self._program(run_id))

    def _cancel(self, run_id: str) -> None:
        if self.worker is not None:
            self.worker.cancel(run_id)
        else:
            wk.cancel(self.store, run_id)


class Host(ops.Host, _Owner):
    """The in-process host (flowrt.host.operations.Host) with run handles: `submit` starts a run
    and drives it here until it pauses or ends; the handle's `reply` resumes it here."""

    def __init__(self, store: Any = None, bindings=None, *, programs: Optional[dict] = None):
        super().__init__(store, bindings)
        self.programs = _Programs(programs)

    def submit(
        self,
        program,
        input: Optional[dict] = None,
        *,
        entry: str = "main",
        run_id: Optional[str] = None,
        checkpoint_every: Optional[int] = None,
    ) -> RunHandle:
        """Start a run here (driven until it pauses or ends, like `start`) and hand back its handle."""
        _, prog = self.programs.resolve(program, None)
        report = self.start(prog, entry=entry, input=input, run_id=run_id, checkpoint_every=checkpoint_every)
        return RunHandle(self, report.run_id)

    def handle(self, run_id: str) -> RunHandle:
        self._status(run_id)
        return RunHandle(self, run_id)

    def runs_status(self, *, state: Optional[str] = None, program: Optional[str] = None) -> list:
        """`RunStatus` of the store's runs (`runs()` keeps giving the CLI's lines)."""
        return wk.runs(self.store, state=state, program=program)

    def _deliver(self, run_id: str, call_id: str, value: Any) -> None:
        """Admit the reply as a worker's client would (`NoSuchRun`, `Conflict`, `DoesNotFit`), then
        record it and continue the run here until it pauses or ends."""
        st = self._status(run_id)
        if st.state in ("completed", "faulted", "halted"):
            raise wk.Conflict(f"run {run_id} has ended ({st.state}); call {call_id} is not open")
        info = read(self.store.host_records.load_run, run_id)
        tools = dict(info.open_calls)
        if call_id not in tools:
            listing = ", ".join(tools) or "none"
            raise wk.Conflict(f"call {call_id} is not open in run {run_id} (open calls: {listing})")
        prog = self._program(run_id, st)
        admit_reply(self.store, prog, info, call_id, tools[call_id], value)
        self.resume(prog, run_id, replies={call_id: value})
