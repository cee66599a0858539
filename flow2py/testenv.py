"""Driving Flow programs from Python tests: the `flow_env` fixture (docs/spec/testing.md, "From
Python").

    def test_support_pauses_for_the_customer(flow_env):
        run = flow_env.start("examples/support/main.flow", {"ticket": "Login fails"}, fakes={...})
        assert [c.id for c in run.open_calls] == ["c1:root#2"]
        run.deliver("c1:root#2", {"Ok": "Safari 17.4"})
        assert run.state == "completed"
        assert run.replay().line() == "Matched"

A `FlowEnv` is a store of its own (a temporary SQLite file), one `VirtualClock` and the Python
fakes each run is started with. Runs go through the host operations every host uses
(flowrt.host.operations: start, resume, replay), so what a test sees is what a host records.
Fakes answer on the driver's thread as each call is made (in call order); a fake returning
`flowrt.pending` leaves its call open for `deliver`. std's clock is the environment's virtual
clock: `clock.sleep(d)` sets a timer; time skips to the next timer by itself only when every open
call of the run waits on the clock, and `advance(d)` moves it on explicitly.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import flowrt as rt
from flowrt.data.facts import Call, Checkpoint, Choice, End, Reply, Start, Stop
from flowrt.engine import drive as drv
from flowrt.host import operations as ops

from flow2py.testing import EPOCH, VirtualClock

__all__ = ["FlowEnv", "FlowRun", "FactView"]


@dataclass(frozen=True)
class FactView:
    """One recorded fact as a test reads it: `n` (Start is 1), `kind` ("Start", "Call", "Reply",
    "Choice", "Stop", "Checkpoint", "End"), the call `id` and `tool` (a Reply's too), the call's
    `args`, a Reply's `reply`, an End's `value` (or its fault), and the fact itself (`fact`)."""

    n: int
    kind: str
    id: Optional[str] = None
    tool: Optional[str] = None
    args: Optional[tuple] = None
    reply: Any = None
    value: Any = None
    fact: Any = field(default=None, repr=False, compare=False)


def _nanos(d) -> int:
    """A duration given as seconds (int/float), a `datetime.timedelta` or a Flow `Duration`."""
    if isinstance(d, datetime.timedelta):
        return (d.days * 86_400 + d.seconds) * 1_000_000_000 + d.microseconds * 1_000
    if isinstance(d, rt.Duration):
        return d.nanos
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        return int(d * 1_000_000_000)
    raise TypeError(f"a duration is seconds, a timedelta or a Duration, not {type(d).__name__}")


_COMPILED: dict[str, tuple] = {}


def _compiled(path: str):
    """The program at `path`, compiled once per process (again when a `.flow` file in its folder
    or below changed since), through the program cache `flow2py test` uses (flow2py.cache)."""
    from flow2py.cache import cache_for
    from flow2py.host import compile_path

    stamp = []
    for root, _dirs, files in os.walk(os.path.dirname(path)):
        stamp += [
            (os.path.join(root, f), os.stat(os.path.join(root, f)).st_mtime_ns)
            for f in files
            if f.endswith(".flow")
        ]
    stamp = tuple(sorted(stamp))
    got = _COMPILED.get(path)
    if got is None or got[0] != stamp:
        got = _COMPILED[path] = (stamp, compile_path(path, cache_for(None)))
    return got[1]


class FlowRun:
    """One run in a FlowEnv: its state, open calls and facts, and the moves a test makes."""

    def __init__(self, env: "FlowEnv", prog, run_id: str, bindings: rt.Bindings, report: ops.Report):
        self.env, self.program, self.id, self.bindings = env, prog, run_id, bindings
        self.report = report

    def __repr__(self) -> str:
        return f"FlowRun({self.id!r}, {self.state})"

    # -- what it is --

    @property
    def outcome(self):
        """The driver's outcome of the last move (drv.RunPaused, RunCompleted, RunFaulted, ...)."""
        return self.report.outcome

    @property
    def state(self) -> str:
        """ "paused", "completed", "faulted" or "halted"."""
        o = self.outcome
        if isinstance(o, drv.RunCompleted):
            return "completed"
        if isinstance(o, drv.RunFaulted):
            return "faulted"
        if isinstance(o, drv.RunPaused):
            return "paused"
        return "halted"

    @property
    def result(self):
        """The run's value once completed (AssertionError otherwise, with what happened)."""
        o = self.outcome
        if not isinstance(o, drv.RunCompleted):
            raise AssertionError(f"run {self.id} has not completed: {o.line()}")
        return o.value

    @property
    def open_calls(self) -> tuple:
        """The calls open now (rt.OpenCall: id, tool, args), in the order they were made."""
        o = self.outcome
        return tuple(o.open) if isinstance(o, (drv.RunPaused, drv.RunHalted)) else ()

    @property
    def facts(self) -> list[FactView]:
        """Every recorded fact, in order, as FactView."""
        out, tools = [], {}
        stored = self.env.store.history.facts(self.id, 1, classes=self.program.classes)
        for n, f in enumerate(stored, 1):
            kind = type(f).__name__
            if type(f) is Call:
                tools[f.id] = f.tool
                out.append(FactView(n, kind, f.id, f.tool, tuple(f.args), fact=f))
            elif type(f) is Reply:
                out.append(FactView(n, kind, f.id, tools.get(f.id), reply=f.reply, fact=f))
            elif type(f) is End:
                out.append(FactView(n, kind, value=getattr(f.end, "value", f.end), fact=f))
            elif type(f) is Start:
                out.append(FactView(n, kind, args=tuple(f.input), fact=f))
            elif type(f) is Checkpoint:
                out.append(FactView(n, kind, args=tuple(f.args), fact=f))
            elif type(f) in (Choice, Stop):
                out.append(FactView(n, kind, f.task, fact=f))
            else:
                out.append(FactView(n, kind, fact=f))
        return out

    def calls(self, tool: Optional[str] = None) -> list[FactView]:
        """The Call facts (of `tool` only, when given)."""
        return [f for f in self.facts if f.kind == "Call" and (tool is None or f.tool == tool)]

    def history(self, fmt: str = "text") -> str:
        return ops.history(self.env.store, self.program, self.id, fmt)

    # -- moves --

    def deliver(self, call_id: str, reply: Any) -> "FlowRun":
        """Deliver the reply to an open call (JSON, `{"Ok": ...}`, or a runtime value) and go on
        until the run pauses again or ends."""
        return self._resume({call_id: reply})

    def advance(self, duration) -> "FlowRun":
        """Move virtual time on by `duration`: each of this run's timers due by then fires, in
        due order, its sleep answered `Ok(())`; virtual now is then the time reached."""
        clock = self.env.clock
        until = clock.now + _nanos(duration)
        while True:
            t = clock.next_timer(self.id)
            if t is None or t.due > until:
                break
            got = clock.fire(t)
            if got:
                self._resume(dict(got))
        clock.now = max(clock.now, until)
        return self

    def replay(self):
        """Replay the run over its stored history, nothing bound: Matched, Incomplete or Diverged."""
        return ops.replay(self.env.store, self.program, self.id).outcome

    def _resume(self, replies: dict) -> "FlowRun":
        self.report = ops.resume(
            self.env.store,
            self.program,
            self.id,
            replies=replies,
            bindings=self.bindings,
            drive=self.env.drive_options(self.id),
        )
        return self


class FlowEnv:
    """A store of its own, one virtual clock, and runs started with Python fakes."""

    def __init__(self, store_path: str, start: int = EPOCH):
        self.store = ops.open_store(store_path)
        self.clock = VirtualClock(start)
        self._n = 0

    @property
    def now(self) -> datetime.datetime:
        """Virtual now, as a UTC datetime."""
        return datetime.datetime.fromtimestamp(self.clock.now / 1e9, datetime.timezone.utc)

    def program(self, program):
        """A path to a `.flow` file (compiled once per process while the `.flow` files beside it
        are unchanged), a built package or its PROGRAM."""
        if isinstance(program, (str, os.PathLike)):
            return _compiled(os.path.abspath(os.fspath(program)))
        return ops.runnable_of(program)

    def bindings(self, fakes: Optional[dict[str, Callable]]) -> rt.Bindings:
        """The fakes by Tool (qualified name or declaration id), and std's clock on the virtual clock."""
        base = rt.Bindings()
        for tool, impl in (fakes or {}).items():
            base.bind(tool, impl)
        return self.clock.bindings(base)

    def drive_options(self, run_id: str) -> dict:
        return {"inline": "always", "idle": self.clock.idle_for(run_id)}

    def start(
        self,
        program,
        input: Any = None,
        *,
        fakes: Optional[dict[str, Callable]] = None,
        entry: str = "main",
        run_id: Optional[str] = None,
        checkpoint_every: Optional[int] = None,
    ) -> FlowRun:
        """Start a run of `program` with `input` (JSON, as `flow2py run --input`), its Tools
        bound to `fakes` (Python functions taking JSON arguments and returning a JSON reply,
        `{"Ok": v}` or `{"Err": e}`, or `flowrt.pending`), and drive it until it pauses or ends."""
        prog = self.program(program)
        self._n += 1
        run_id = run_id or f"run-{self._n}"
        bindings = self.bindings(fakes)
        report = ops.start(
            self.store,
            prog,
            entry=entry,
            input=input,
            bindings=bindings,
            run_id=run_id,
            checkpoint_every=checkpoint_every,
            drive=self.drive_options(run_id),
        )
        return FlowRun(self, prog, run_id, bindings, report)

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None:
            close()
