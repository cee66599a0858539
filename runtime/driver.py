"""The driver: one trampoline and scheduler for live runs, resume and replay.

How it works (docs/spec/execution.md has the rules, docs/spec/concurrency.md the task semantics):

* Each task has an explicit stack of generator frames. `_run` sends a value into the top frame
  and looks at what comes out: a generator object is a call (push), a `TailCall` return replaces
  the frame, any other return pops and sends the value to the frame below. The driver never
  recurses, so depth costs nothing per call and is limited only by `MAX_DEPTH`.
* Scheduling is a FIFO ready queue. A task runs until it blocks (on its Tool call, `await` or
  `first`). When no task is ready the driver admits exactly one event: while history remains,
  the next recorded fact (it must be a Reply to an open call); live, the next completion of a
  Tool implementation. Everything between two admissions is a deterministic function of the
  facts admitted so far, so admitting the same facts in the same order reproduces the run.
* Every fact goes through `_emit` (or the inlined Call/Reply paths): while history remains, the
  fact the program would record is compared with the next recorded one and the recorded outcome
  is used; once history is exhausted a live run records (and syncs) it, and replay stops with
  Incomplete. A divergence is the replay verdict, and refuses a resume.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from queue import Empty
from types import GeneratorType
from typing import Any, Callable, Iterable, Optional, Sequence

from flowrt.facts import (
    Call, Checkpoint, Choice, Closed, Completed, End, Faulted, ParkedTask, Reply, Start, Stop,
)
from flowrt.ops import Fault
from flowrt.requests import (
    MAX_DEPTH, Await, module_resolver, First, Spawn, StopTask, TailCall, ToolCall, ToolSpec,
)
from flowrt.tasks import (
    AWAIT, CALL, FAULTED, FINISHED, FIRST, READY, STOPPED, Task, build_parked, ctor_class,
    ctor_text, has_hole, rebuild, scan,
)
from flowrt.tools import BINDINGS, PENDING, Bindings, Dispatcher, MissingBindings
from flowrt.types import type_text
from flowrt.values import STD_CLASSES, ClassTable, Err, NotRun, class_table, show

__all__ = [
    "drive", "start_run", "latest_checkpoint", "MemoryRecorder", "Outcome", "OpenCall",
    "RunCompleted", "RunFaulted", "RunPaused", "Matched", "Incomplete", "Diverged",
    "ResumeRefused", "ResendRefused", "MissingBindings",
]

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


# ---- outcomes ---------------------------------------------------------------------------------

class Outcome:
    """What `drive` returns. `exit_code` is the CLI's (DESIGN.md), `line()` its first line."""

    exit_code = 0

    def line(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class OpenCall:
    id: str  # "c1:root#2"
    tool: str  # "human.ask" ("" when only the id is known: a parked call restored from a checkpoint
    #            whose Call fact was archived)


@dataclass(frozen=True)
class RunCompleted(Outcome):
    value: Any
    exit_code = 0

    def line(self):
        return show(self.value)


@dataclass(frozen=True)
class RunFaulted(Outcome):
    fault: Faulted
    exit_code = 4

    def line(self):
        f = self.fault
        return f"faulted at {f.file}:{f.line}: {f.message}"


@dataclass(frozen=True)
class RunPaused(Outcome):
    open: tuple  # OpenCall, in the order the calls were made
    exit_code = 3

    def line(self):
        return "paused, waiting on " + ", ".join(
            f"{c.id} ({c.tool})" if c.tool else c.id for c in self.open)


@dataclass(frozen=True)
class Matched(Outcome):
    end: Any = None  # the End fact reached
    exit_code = 0

    def line(self):
        return "Matched"


@dataclass(frozen=True)
class Incomplete(Outcome):
    reason: str
    exit_code = 3

    def line(self):
        return f"Incomplete: {self.reason}"


@dataclass(frozen=True)
class Diverged(Outcome):
    fact: int  # 1-based fact number (Start is fact 1)
    reason: str
    exit_code = 5

    def line(self):
        return f"Diverged at fact {self.fact}: {self.reason}"


class ResendRefused(Exception):
    """`drive(..., resend=...)` named a call that cannot be sent again (not open when the history
    ends, or restored from a checkpoint without its arguments); nothing new was recorded."""


class ResumeRefused(Exception):
    """A live run over a history (resume) found the history does not fit the program; nothing was
    recorded. `verdict` is the Diverged or Incomplete that replay would report."""

    def __init__(self, verdict: Outcome):
        super().__init__(verdict.line())
        self.verdict = verdict


class _Finish(Exception):
    """Unwinds the scheduler with the outcome."""

    def __init__(self, outcome: Outcome):
        self.outcome = outcome


# ---- recorders ----------------------------------------------------------------------------------

class MemoryRecorder:
    """A Recorder keeping facts in a list (tests, benchmarks, embedding without a store)."""

    def __init__(self, keep: bool = True):
        self.facts: list = []
        self.syncs = 0
        self.count = 0
        self._keep = keep

    def record(self, fact) -> None:
        self.count += 1
        if self._keep:
            self.facts.append(fact)

    def sync(self) -> None:
        self.syncs += 1


# ---- helpers -------------------------------------------------------------------------------------

def latest_checkpoint(history: Sequence, first: int = 1) -> Optional[int]:
    """The fact number of the last Checkpoint in `history` (numbered from `first`), or None."""
    for i in range(len(history) - 1, -1, -1):
        if type(history[i]) is Checkpoint:
            return first + i
    return None


def _args_text(args) -> str:
    return "(" + ", ".join(show(a) for a in args) + ")"


def describe(fact) -> str:
    """A fact in the seed's illustrative notation (used in divergence reasons)."""
    t = type(fact)
    if t is Call:
        return f"Call {fact.id} {fact.tool}{_args_text(fact.args)}"
    if t is Reply:
        return f"Reply {fact.id} {show(fact.reply)}"
    if t is Choice:
        return f"Choice {fact.task} picked {fact.picked}"
    if t is Stop:
        if fact.found == "finished":
            return f"Stop {fact.task} found finished with {show(fact.value)}"
        closed = ", ".join(c.call for c in fact.closed)
        return f"Stop {fact.task} found running" + (f" closed {closed}" if closed else "")
    if t is Checkpoint:
        return f"Checkpoint {fact.checkpoint} {fact.function}{_args_text(fact.args)}"
    if t is End:
        e = fact.end
        if type(e) is Completed:
            return f"End Completed({show(e.value)})"
        return f"End Faulted({e.message!r} at {e.file}:{e.line})"
    if t is Start:
        return f"Start {fact.entry}"
    return repr(fact)


def _same(recorded, actual) -> bool:
    """Equal, where a Hole in the record (a redacted value) matches whatever the program computed:
    a hash alone cannot be compared with a value here (the store's hashing is not the driver's)."""
    if recorded == actual:
        return True
    if not has_hole(recorded):
        return False
    return _same_with_holes(recorded, actual)


def _same_with_holes(r, a) -> bool:
    from flowrt.values import Dict, Enum, Hole, List, Record, Set

    if type(r) is Hole:
        return True
    if type(r) is not type(a):
        return False
    if type(r) in (tuple, List):
        return len(r) == len(a) and all(_same_with_holes(x, y) for x, y in zip(r, a))
    if isinstance(r, (Record, Enum)):
        return _same_with_holes(r._flow_values(), a._flow_values())
    if type(r) is Dict:
        return _same_with_holes(tuple(r.items()), tuple(a.items()))
    if type(r) is Set:
        return _same_with_holes(r.elements(), a.elements())
    if type(r) is ParkedTask:
        return r == a
    return r == a


def _locate_exception(exc: BaseException) -> tuple[str, int]:
    """The innermost traceback frame of generated Flow code (a `.flow` co_filename); else the
    innermost frame outside flowrt; else the innermost frame."""
    tb = exc.__traceback__
    flow = outside = last = None
    while tb is not None:
        code = tb.tb_frame.f_code
        here = (code.co_filename, tb.tb_lineno)
        last = here
        if code.co_filename.endswith(".flow"):
            flow = here
        elif not code.co_filename.startswith(_RUNTIME_DIR):
            outside = here
        tb = tb.tb_next
    return flow or outside or last or ("<unknown>", 0)


def _locate_task(task: Task) -> tuple[str, int]:
    """Where a task is suspended: its top frame (for faults the driver itself detects)."""
    for gen in reversed(task.stack):
        frame = gen.gi_frame
        if frame is not None:
            return frame.f_code.co_filename, frame.f_lineno
    return "<unknown>", 0


def _exception_message(e: BaseException) -> str:
    if isinstance(e, Fault):
        return e.message
    if isinstance(e, RecursionError):
        return "stack exhausted"
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


class _Call:
    """An open Tool call."""

    __slots__ = ("id", "spec", "task", "park", "tool", "args", "type_args")

    def __init__(self, id, spec, task, park, tool, args=None, type_args=()):
        self.id = id
        self.spec = spec
        self.task = task
        self.park = park
        self.tool = tool
        self.args = args  # None for a parked call restored from a checkpoint (not re-sendable)
        self.type_args = type_args


_RETURN = object()


def _returning(value):
    """A frame that returns `value` at once: lets a function that made no frame of its own (a pure
    function value, or an effectful one whose whole body is `return TailCall(...)`) go through
    the same return/tail-call path as every other frame."""
    return value
    yield  # unreachable: makes this a generator


# ---- the run ---------------------------------------------------------------------------------------

class _Run:
    def __init__(self, history, first, mode, recorder, bindings, checkpoint_every, resolve, inline,
                 resend=(), carried=None, classes=STD_CLASSES):
        if mode not in ("live", "replay"):
            raise ValueError(f"mode must be 'live' or 'replay', not {mode!r}")
        self.replay = mode == "replay"
        self.history = history
        self.first = first
        self.hpos = 0
        self.hlen = len(history)
        self.recorder = recorder
        self.dispatcher = None if self.replay else Dispatcher(
            bindings, run_id=getattr(recorder, "run_id", None), store=getattr(recorder, "store", None))
        self.resend = set(resend or ())  # open calls to send again once history is exhausted
        self.carried = dict(carried or {})  # replies of parked calls recorded before the checkpoint
        self.completions = self.dispatcher.completions if self.dispatcher else None
        self.every = checkpoint_every
        self.resolve = resolve
        self.classes = classes  # the program's ClassTable, or a function making it (when needed)
        self.inline = inline
        self.ready: deque = deque()
        self.open: dict[str, _Call] = {}
        self.outstanding = 0  # calls sent to an implementation whose completion is not taken yet
        self.arrived: deque = deque()  # completions taken from the queue, not admitted yet
        self.live: dict[Task, None] = {}  # tasks not stopped and not (finished and settled)
        self.finish_seq = 0
        self.fresh = False  # a fact was recorded/served since the last checkpoint candidate
        self.since_cp = 0  # facts since the last checkpoint (or Start)
        self.cp_count = 0
        self.root: Optional[Task] = None
        self.ended = None

    # -- facts -------------------------------------------------------------------------------

    def _fact_no(self) -> int:
        return self.first + self.hpos

    def _diverge(self, reason: str, n: Optional[int] = None):
        verdict = Diverged(self._fact_no() if n is None else n, reason)
        if self.replay:
            raise _Finish(verdict)
        raise ResumeRefused(verdict)

    def _incomplete(self, reason: str):
        verdict = Incomplete(reason)
        if self.replay:
            raise _Finish(verdict)
        raise ResumeRefused(verdict)

    def _next_recorded(self, doing: str):
        """The next recorded fact (consumed), or None when a live run records instead."""
        if self.hpos < self.hlen:
            fact = self.history[self.hpos]
            self.hpos += 1
            return fact
        if self.replay:
            raise _Finish(Incomplete(f"history ends before the program does (it {doing})"))
        return None

    def _emit(self, fact, matches: Callable[[Any], bool], doing: str):
        """Record `fact`, or check it against the next recorded fact and return that one."""
        rec = self._next_recorded(doing)
        if rec is None:
            if self.resend:
                self._resend_open()
            self.recorder.record(fact)
            self.recorder.sync()
            rec = fact
        elif not matches(rec):
            self.hpos -= 1
            self._diverge(f"the program {doing}, but the history records {describe(rec)}")
        if type(fact) is not Checkpoint:
            self.since_cp += 1
            self.fresh = True
        return rec

    # -- starting --------------------------------------------------------------------------------

    def begin_at_start(self, entry: Callable, start: Start):
        self.hpos += 1  # the Start fact
        self.fresh = True
        if has_hole(start.input):
            self._incomplete("the run's input holds a hole")
        args = tuple(start.input)
        self.root = Task("root", lambda: entry(*args))
        self.ready.append(self.root)

    def begin_at_checkpoint(self, cp: Checkpoint):
        n = cp.checkpoint
        fn = self.resolve(cp.function)
        if fn is None:
            raise LookupError(f"no function {cp.function!r} to resume the checkpoint with")
        if has_hole(cp.args):
            self._incomplete(f"checkpoint {n} holds a hole in its arguments")
        root = Task(f"c{n}:root")
        self.root = root
        self.cp_count = n
        restored: dict[str, Task] = {}
        order: list[Task] = []
        if not isinstance(self.classes, ClassTable):
            self.classes = self.classes()

        def restore(p: ParkedTask) -> Task:
            t = restored.get(p.task)
            if t is None:
                cls, at = ctor_class(p.ctor, self.classes)
                t = Task(p.task, owner=root, odepth=0)
                t.state = CALL
                t.ncalls = 1
                t.call = _Call(p.call, None, t, (cls, tuple(p.data), at), self._tool_of(p.call))
                self.open[p.call] = t.call
                restored[p.task] = t
                order.append(t)
            return t

        args = rebuild(tuple(cp.args), restore, (ParkedTask,))
        for t in order:
            root.owned.setdefault(0, {})[t] = None
            self.live[t] = None
        self._finish_answered(order)
        root.start = lambda: fn(*args)
        self.ready.append(root)

    def _finish_answered(self, restored: list):
        """Restored parked tasks whose reply is recorded before the checkpoint are finished, in
        the order their replies were recorded (seed 000: "or is finished if the reply is
        recorded"). The replies come from `carried_replies` (the host reads them wherever they
        are kept, archived or not), else from the facts before the checkpoint in `history`."""
        if not restored:
            return
        by_call = {t.call.id: t for t in restored}
        found: list = []
        for cid, reply in self.carried.items():
            if cid in by_call:
                found.append((cid, reply))
        have = {cid for cid, _ in found}
        earlier = []
        for f in self.history[:self.hpos - 1]:  # the facts given before the checkpoint
            if type(f) is Reply and f.id in by_call and f.id not in have:
                earlier.append((f.id, f.reply))
                have.add(f.id)
        for cid, reply in found + earlier:
            t = by_call[cid]
            if has_hole(reply):
                self._incomplete(f"needs the reply to {cid}, carried by checkpoint {self.cp_count}, "
                                 f"which is a hole")
            call = t.call
            del self.open[cid]
            t.call = None
            value = build_parked(call.park, reply)
            t.parked = (cid, call.park, value)
            self._finish(t, value)

    def _tool_of(self, call_id: str) -> str:
        for f in reversed(self.history):
            if type(f) is Call and f.id == call_id:
                return f.tool
        return ""

    # -- the scheduler ---------------------------------------------------------------------------

    def loop(self) -> Outcome:
        ready = self.ready
        try:
            while True:
                while ready:
                    task = ready.popleft()
                    if task.state == READY:
                        self._run(task)
                if not self._admit():
                    return self._idle()
        except _Finish as f:
            return f.outcome

    def _idle(self) -> Outcome:
        """No task can move and no event can be admitted."""
        if self.open:
            calls = tuple(OpenCall(c.id, c.tool) for c in self.open.values())
            if self.replay:
                if len(calls) == 1:
                    c = calls[0]
                    reason = f"needs the reply to {c.id} ({c.tool}), which is not recorded"
                else:
                    reason = ("needs a reply to one of " + ", ".join(f"{c.id} ({c.tool})" for c in calls)
                              + ", none of which is recorded")
                return Incomplete(reason)
            return RunPaused(calls)
        raise RuntimeError("flowrt: every task is blocked and no call is open (a driver bug)")

    def _admit(self) -> bool:
        """Admit one event (a Reply); False when there is none to admit."""
        if self.hpos < self.hlen:
            fact = self.history[self.hpos]
            if type(fact) is not Reply:
                waiting = ", ".join(self.open) or "nothing"
                self._diverge(f"the program waits (open calls: {waiting}), but the history records "
                              f"{describe(fact)}")
            call = self.open.get(fact.id)
            if call is None:
                self._diverge(f"the history records a Reply to {fact.id}, but the program has no open "
                              f"call {fact.id}")
            if has_hole(fact.reply):
                self._incomplete(f"needs the reply to {fact.id} ({call.tool}), which is a hole")
            self.hpos += 1
            self.since_cp += 1
            self.fresh = True
            self._deliver(call, fact.reply)
            return True
        if self.replay:
            return False
        if self.resend:
            self._resend_open()
        arrived = self.arrived
        recorder = self.recorder
        while True:
            if arrived:
                cid, outcome = arrived.popleft()
            elif self.outstanding:
                cid, outcome = self.completions.get()
                self.outstanding -= 1
            else:
                return False
            call = self.open.get(cid)
            if call is None:  # closed by a Stop meanwhile
                continue
            if outcome is PENDING:  # left open on purpose: tell the host (its record, not history)
                parked = getattr(self.recorder, "parked", None)
                if parked is not None:
                    parked(cid)
                continue
            recorder.record(Reply(cid, outcome))
            recorder.sync()
            self.since_cp += 1
            self.fresh = True
            self._deliver(call, outcome)
            return True

    def _deliver(self, call: _Call, outcome):
        del self.open[call.id]
        task = call.task
        task.call = None
        if call.park is None:
            value = outcome
        else:
            value = build_parked(call.park, outcome)
            task.parked = (call.id, call.park, value)
        if task.stack:
            task.resume = value
            task.state = READY
            self.ready.append(task)
        else:  # a parked task restored from a checkpoint: no frame, its value is built here
            self._finish(task, value)

    # -- running one task --------------------------------------------------------------------------

    def _run(self, task: Task):
        stack = task.stack
        if not stack:
            start, task.start = task.start, None
            try:
                gen = start()
            except Exception as e:
                self._fault_exception(task, e)
            if type(gen) is not GeneratorType:  # a pure function, or a body that is one tail call
                gen = _returning(gen)
            stack.append(gen)
            value = None
        else:
            gen = stack[-1]
            value, task.resume = task.resume, None
        send = gen.send
        while True:
            try:
                req = send(value)
            except StopIteration as ret:
                req = _RETURN
                value = ret.value
            except Exception as e:
                self._fault_exception(task, e)
            if req is _RETURN:
                depth = len(stack) - 1
                while type(value) is TailCall:
                    tc = value
                    if depth == 0 and self.fresh and task is self.root and (
                            self.every or self.hpos < self.hlen):
                        flow = getattr(tc.fn, "__flow__", None)
                        if flow is not None and flow.top_level:
                            self._candidate(tc, flow)
                    try:
                        value = tc.fn(*tc.args)
                    except Exception as e:
                        self._fault_exception(task, e)
                    if type(value) is GeneratorType:
                        stack[depth] = gen = value
                        send = gen.send
                        value = None
                        break
                else:
                    stack.pop()
                    owned = task.owned
                    if owned and depth in owned:
                        self._frame_returns(task, depth, value)
                    if depth == 0:
                        self._finish(task, value)
                        return
                    gen = stack[-1]
                    send = gen.send
                continue
            t = type(req)
            if t is GeneratorType:
                if len(stack) >= MAX_DEPTH:
                    self._fault(task, "stack exhausted", *_locate_task(task))
                stack.append(req)
                gen = req
                send = req.send
                value = None
            elif t is ToolCall:
                self._call(task, req)
                return
            elif t is Spawn:
                value = self._spawn(task, req.fn, len(stack) - 1)
            elif t is Await:
                value = self._await(task, req.task)
                if task.state != READY:
                    return
            elif t is First:
                value = self._first(task, req.tasks)
                if task.state != READY:
                    return
            elif t is TailCall:  # `yield f(a)` where f's body is just a tail call (no frame of its own)
                req = _returning(req)
                stack.append(req)
                gen = req
                send = req.send
                value = None
            elif t is StopTask:
                self._stop_request(task, req.task)
                value = None
            else:
                # `x = yield f(a)` where the effectful-typed value `f` is a pure function (a pure
                # value may reach any effectful slot: a list, a record, a result): `f(a)` already
                # is the call's result (no Flow value is a request or a generator)
                value = req

    # -- Tool calls ------------------------------------------------------------------------------------

    def _call(self, task: Task, req: ToolCall):
        spec = req.spec
        task.ncalls += 1
        cid = f"{task.id}#{task.ncalls}"
        args = req.args
        type_args = tuple(type_text(d) for d in req.type_args) if req.type_args else ()
        call = _Call(cid, spec, task, req.park, spec.name, args, req.type_args)
        if self.hpos < self.hlen:
            rec = self.history[self.hpos]
            if (type(rec) is not Call or rec.id != cid or rec.tool_id != spec.tool_id
                    or rec.type_args != type_args or not _same(rec.args, args)):
                self._diverge(f"the program calls {spec.name}{_args_text(args)} as {cid}, but the "
                              f"history records {describe(rec)}")
            self.hpos += 1
            self.since_cp += 1
            self.fresh = True
            self.open[cid] = call
            task.call = call
            task.state = CALL
            return
        if self.replay:
            raise _Finish(Incomplete(f"history ends before the program does (it calls "
                                     f"{spec.name} as {cid})"))
        if self.resend:
            self._resend_open()
        self.recorder.record(Call(cid, spec.name, spec.tool_id, args, type_args))
        self.recorder.sync()  # a Call is written before the call is sent
        self.since_cp += 1
        self.fresh = True
        self.open[cid] = call
        task.call = call
        task.state = CALL
        self._dispatch(call)

    def _dispatch(self, call: _Call):
        """Send a recorded call to its implementation (its Call fact is already durable)."""
        d = self.dispatcher
        spec = call.spec
        impl = d.bindings.lookup(spec)
        if impl is None:
            self.arrived.append((call.id, Err(NotRun(f"no implementation is bound for {spec.name}"))))
        elif (self.inline and not self.ready and not self.outstanding and not self.arrived
              and d.is_sync(impl)):
            # Nothing else can happen until this call completes: the idle driver runs it itself
            # instead of handing it to a worker and waiting (docs/spec/execution.md).
            self.arrived.append((call.id, d.run_inline(impl, spec, call.args, call.type_args, call.id)))
        else:
            d.submit(call.id, impl, spec, call.args, call.type_args)
            self.outstanding += 1

    def _resend_open(self):
        """History is exhausted: send the calls the host asked to resend again, under their own
        ids (no new Call fact; the one Reply comes when they answer). Flow never does this itself."""
        ids, self.resend = self.resend, set()
        for cid in [c for c in self.open if c in ids] + sorted(ids - set(self.open)):
            call = self.open.get(cid)
            if call is None:
                raise ResendRefused(f"call {cid} is not open when the history ends; only an open call "
                                    f"can be sent again")
            if call.args is None:
                raise ResendRefused(f"call {cid} was carried across a checkpoint by a parked task; "
                                    f"its arguments are not at hand to send it again")
            self._dispatch(call)

    # -- tasks -------------------------------------------------------------------------------------------

    def _spawn(self, task: Task, fn, depth: int) -> Task:
        task.nspawns += 1
        child = Task(f"{task.id}/{task.nspawns}", lambda: fn(), task, depth)
        owned = task.owned.get(depth)
        if owned is None:
            owned = task.owned[depth] = {}
        owned[child] = None
        self.live[child] = None
        self.ready.append(child)
        return child

    def _settle(self, t: Task):
        """`t` was observed (await, first) or stopped: its owner no longer stops it."""
        if t.settled:
            return
        t.settled = True
        owner = t.owner
        if owner is not None:
            owned = owner.owned.get(t.odepth)
            if owned is not None and t in owned:
                del owned[t]
                if not owned:
                    del owner.owned[t.odepth]
        if t.state == FINISHED or t.state == STOPPED:
            self.live.pop(t, None)

    def _finish(self, task: Task, value):
        task.state = FINISHED
        task.value = value
        task.stack = []
        self.finish_seq += 1
        task.finish_seq = self.finish_seq
        if task is self.root:
            self._end(Completed(value))
        if task.settled:
            self.live.pop(task, None)
        waiters = task.waiters
        task.waiters = {}
        for w, token in waiters.items():
            if w.waiting is None or w.waiting[0] is not token:
                continue
            if w.state == AWAIT:
                self._settle(task)
                self._wake(w, value)
            elif w.state == FIRST:
                tasks = w.waiting[1]
                self._choose(w, task, [task])
                self._settle(task)
                self._wake(w, (self._index(tasks, task), value))

    def _wake(self, w: Task, value):
        token, tasks = w.waiting
        w.waiting = None
        for t in tasks:  # drop this wait's other registrations
            if t.waiters.get(w) is token:
                del t.waiters[w]
        w.resume = value
        w.state = READY
        self.ready.append(w)

    @staticmethod
    def _index(tasks, t) -> int:
        for i, x in enumerate(tasks):
            if x is t:
                return i
        raise ValueError("task not in list")

    def _await(self, task: Task, t):
        if type(t) is not Task:
            self._fault(task, f"task.await of {show(t)}, which is not a task", *_locate_task(task))
        if t.state == FINISHED:
            self._settle(t)
            return t.value
        if t.state == STOPPED:
            self._fault(task, f"task.await: task {t.id} was stopped", *_locate_task(task))
        token = object()
        t.waiters[task] = token
        task.waiting = (token, (t,))
        task.state = AWAIT
        return None

    def _first(self, task: Task, tasks):
        ts = list(tasks)
        if not ts:
            self._fault(task, "task.first of an empty list", *_locate_task(task))
        for t in ts:
            if type(t) is not Task:
                self._fault(task, f"task.first of {show(t)}, which is not a task", *_locate_task(task))
        finished = [t for t in ts if t.state == FINISHED]
        if finished:
            earliest = min(finished, key=lambda t: t.finish_seq)
            picked = self._choose(task, earliest, finished)
            self._settle(picked)
            return (self._index(ts, picked), picked.value)
        waiting = [t for t in dict.fromkeys(ts) if t.state != STOPPED]
        if not waiting:
            self._fault(task, "task.first: every task was stopped", *_locate_task(task))
        token = object()
        for t in waiting:
            t.waiters[task] = token
        task.waiting = (token, tuple(waiting))
        task.state = FIRST
        return None

    def _choose(self, task: Task, pick: Task, pickable: list) -> Task:
        """Record the Choice of `task.first` (or follow the recorded one, if it can be picked)."""
        ids = {t.id: t for t in pickable}
        rec = self._emit(Choice(task.id, pick.id),
                         lambda r: type(r) is Choice and r.task == task.id and r.picked in ids,
                         f"picks {pick.id} in task.first of {task.id}")
        return ids[rec.picked]

    def _stop_request(self, task: Task, t):
        if type(t) is not Task:
            self._fault(task, f"task.stop of {show(t)}, which is not a task", *_locate_task(task))
        if t.state == STOPPED or (t.state == FINISHED and t.settled):
            return  # already stopped, or finished and observed: nothing is running
        self._stop_tree(t)

    def _drain(self):
        """Move every completion already posted to `arrived` (replies that arrived, not admitted)."""
        q = self.completions
        if q is None:
            return
        while self.outstanding:
            try:
                item = q.get_nowait()
            except Empty:
                return
            self.outstanding -= 1
            self.arrived.append(item)

    def _stop_tree(self, top: Task):
        """Stop `top` and, after it, every task it owns (pre-order), recording a Stop for each."""
        todo = [top]
        while todo:
            t = todo.pop()
            children = [u for d in sorted(t.owned, reverse=True) for u in t.owned[d]]
            t.owned = {}
            if t.state == FINISHED:
                if not t.settled:
                    self._emit(Stop(t.id, "finished", t.value),
                               lambda r, t=t: (type(r) is Stop and r.task == t.id and r.found == "finished"
                                               and _same(r.value, t.value)),
                               f"stops {t.id}, found finished with {show(t.value)}")
            elif t.state == FAULTED:
                pass  # the faulting task itself: it is not stopped, its tasks are
            elif t.state != STOPPED:
                closed = ()
                call = t.call
                if call is not None:
                    self._drain()
                    reply = None
                    for item in self.arrived:
                        if item[0] == call.id:
                            reply = item
                            break
                    if reply is not None and reply[1] is not PENDING:
                        self.arrived.remove(reply)
                        closed = (Closed(call.id, reply[1], True),)
                    else:
                        closed = (Closed(call.id),)
                    del self.open[call.id]
                    t.call = None
                ids = [c.call for c in closed]
                self._emit(Stop(t.id, "running", None, closed),
                           lambda r, t=t: (type(r) is Stop and r.task == t.id and r.found == "running"
                                           and [c.call for c in r.closed] == ids),
                           f"stops {t.id}, found running" + (f" with {ids[0]} open" if ids else ""))
                t.state = STOPPED
                t.stack = []
                if t.waiting is not None:  # it was waiting in await/first: drop its registrations
                    token, tasks = t.waiting
                    t.waiting = None
                    for x in tasks:
                        if x.waiters.get(t) is token:
                            del x.waiters[t]
                self._waiters_of_stopped(t)
            self._settle(t)
            self.live.pop(t, None)
            todo.extend(reversed(children))

    def _waiters_of_stopped(self, t: Task):
        waiters, t.waiters = t.waiters, {}
        for w, token in waiters.items():
            if w.waiting is None or w.waiting[0] is not token:
                continue
            if w.state == AWAIT:
                self._fault(w, f"task.await: task {t.id} was stopped", *_locate_task(w))
            elif w.state == FIRST and all(x.state == STOPPED for x in w.waiting[1]):
                self._fault(w, "task.first: every task was stopped", *_locate_task(w))

    def _frame_returns(self, task: Task, depth: int, value):
        """The frame at `depth` returned `value`: hand over the tasks the value holds, stop the rest."""
        mine = task.owned.pop(depth)
        found = scan(value)[0]
        if found:
            if depth > 0:
                to, to_depth = task, depth - 1
            else:
                to, to_depth = task.owner, task.odepth
            for u in found:
                if u in mine and to is not None:
                    del mine[u]
                    to.owned.setdefault(to_depth, {})[u] = None
                    u.owner, u.odepth = to, to_depth
        for u in list(mine):
            if not u.settled and u.state != STOPPED:
                self._stop_tree(u)

    # -- checkpoints ---------------------------------------------------------------------------------

    def _candidate(self, tc: TailCall, flow):
        """A tail call by the root's outermost frame to a top-level function, the first since a
        fact: the one place a checkpoint may be taken (docs/spec/execution.md)."""
        self.fresh = False
        serving = self.hpos < self.hlen
        if serving:
            if type(self.history[self.hpos]) is not Checkpoint:
                return
        elif self.replay or not self.every or self.since_cp < self.every:
            return
        args, why = self._checkpoint_args(tc.args)
        if args is None:
            if serving:
                self._diverge(f"the program cannot take a checkpoint at its tail call to "
                              f"{flow.decl} ({why}), but the history records "
                              f"{describe(self.history[self.hpos])}")
            return
        n = self.cp_count + 1
        type_args = tuple(type_text(d) for d in tc.type_args)
        fact = Checkpoint(n, flow.decl, type_args, args)
        self._emit(fact, lambda r: (type(r) is Checkpoint and r.checkpoint == n and r.function == flow.decl
                                    and r.type_args == type_args and _same(r.args, args)),
                   f"takes checkpoint {n} at {flow.decl}{_args_text(args)}")
        self.cp_count = n
        self.since_cp = 0
        root = self.root
        root.id = f"c{n}:root"
        root.ncalls = 0
        root.nspawns = 0

    def _checkpoint_args(self, args) -> tuple[Optional[tuple], str]:
        """The arguments with parked tasks as ParkedTask, or (None, why not)."""
        root = self.root
        others = [t for t in self.live if t is not root]
        for t in others:
            if t.state == FINISHED:
                # finished from its parked call (its reply arrived): still parked for a checkpoint
                p = t.parked
                if (p is not None and not t.settled and t.ncalls <= 1 and not t.nspawns
                        and t.value is p[2]):
                    continue
            else:
                call = t.call
                if (t.state == CALL and call is not None and call.park is not None
                        and len(t.stack) <= 1 and t.ncalls <= 1):
                    continue
            return None, f"task {t.id} is not parked on its only Tool call"
        found, fns, _ = scan(args)
        if fns:
            return None, "the arguments hold a function value"
        live = set(others)
        for t in found:
            if t not in live:
                return None, f"the arguments hold task {t.id}, which is not parked on its only call"
        if len(found) != len(others):
            lost = next(t for t in others if t not in set(found))
            return None, f"task {lost.id} is live but not in the arguments"
        if not found:
            return tuple(args), ""
        parked = {}
        for t in found:
            call_id, park = (t.call.id, t.call.park) if t.state == CALL else t.parked[:2]
            parked[t] = ParkedTask(t.id, call_id, ctor_text(park[0], park[2]), park[1])
        try:
            out = rebuild(tuple(args), parked.__getitem__, (Task,))
        except RecursionError:
            return None, "the arguments are nested too deeply to record"
        # Restoring makes the parked tasks owned by the root frame in this order; use it now too,
        # so a resumed run stops them in the same order as the run that continues.
        root.owned[0] = {t: None for t in found}
        return out, ""

    # -- faults and the end ---------------------------------------------------------------------------

    def _fault_exception(self, task: Task, e: Exception):
        file, line = _locate_exception(e)
        self._fault(task, _exception_message(e), file, line)

    def _fault(self, task: Task, message: str, file: str, line: int):
        """End the run faulted: the root's frames are abandoned, so every task they own (directly
        or through other tasks) is stopped first, innermost frame first; then End."""
        task.state = FAULTED
        root = self.root
        for d in sorted(root.owned, reverse=True):
            for u in list(root.owned.get(d, ())):
                if u.state != STOPPED:
                    self._stop_tree(u)
        self._end(Faulted(message, file, line))

    def _end(self, end):
        fact = End(end)
        if type(end) is Completed:
            matches = lambda r: type(r) is End and type(r.end) is Completed and _same(r.end.value, end.value)
            doing = f"completes with {show(end.value)}"
        else:
            matches = lambda r: (type(r) is End and type(r.end) is Faulted and r.end.message == end.message
                                 and r.end.line == end.line
                                 and os.path.basename(r.end.file) == os.path.basename(end.file))
            doing = f"faults with {end.message!r} at {end.file}:{end.line}"
        self._emit(fact, matches, doing)
        if self.hpos < self.hlen:
            self._diverge(f"the program has ended, and {describe(self.history[self.hpos])} is left unused")
        if self.replay:
            raise _Finish(Matched(self.history[self.hpos - 1]))
        if type(end) is Completed:
            raise _Finish(RunCompleted(end.value))
        raise _Finish(RunFaulted(end))


# ---- entry points -----------------------------------------------------------------------------------

def drive(
    entry: Optional[Callable],
    *,
    history: Sequence,
    first: int = 1,
    begin: Any = "latest",
    mode: str = "live",
    recorder=None,
    bindings: Optional[Bindings] = None,
    reachable: Optional[Iterable[ToolSpec]] = None,
    checkpoint_every: Optional[int] = None,
    resolve: Optional[Callable[[str], Optional[Callable]]] = None,
    classes: Optional[ClassTable] = None,
    inline: bool = True,
    resend: Iterable[str] = (),
    carried_replies: Optional[dict] = None,
) -> Outcome:
    """Run a program over its history: live (a new run or a resume) or replay.

    `history`: the run's facts, `history[0]` being fact number `first` (1 unless earlier facts
    were archived). A new live run passes just its Start fact (see `start_run`). `begin`:
    `"latest"` (the latest Checkpoint in `history`, else Start), `1` (Start), or the fact number
    of a Checkpoint. `entry`: the entry function, called with Start's input when beginning at
    Start. `mode="live"` serves the history, then records every new fact through `recorder` and
    dispatches calls to `bindings`; `mode="replay"` serves the history and returns a verdict,
    binding nothing. `reachable`: the ToolSpecs the program can reach; a live run with one of
    them unbound is refused (MissingBindings) before anything happens. `checkpoint_every=N`:
    take a checkpoint at the first eligible tail call once N facts were recorded since the last
    one. `resolve(decl_id)` finds a checkpoint's function (default: functions registered by
    `rt.fn` in the entry function's module). `classes`: the program's class table
    (`Program.classes`), which rebuilds the values of a checkpoint's parked tasks by constructor
    name (default: the classes of the entry function's module, `rt.class_table(entry)`; std's
    built-in classes only without an entry). `inline=False` always hands sync calls to worker threads. `resend` (live): ids of
    calls open when the history ends that the host wants sent again to their bindings under the
    same id (after a crash); ResendRefused if one is not open then. `carried_replies`
    ({call id: reply}, in the order they were recorded): beginning at a checkpoint, the replies
    recorded *before* it to calls its parked tasks carry (history may start at the checkpoint,
    the earlier facts archived); such a task is restored finished. Replies the facts before the
    checkpoint in `history` hold are found there without it; other entries are ignored.

    Returns RunCompleted / RunFaulted / RunPaused (live) or Matched / Incomplete / Diverged
    (replay). Raises ResumeRefused when a live run's history does not fit the program.
    """
    history = list(history)
    if mode == "replay":
        recorder = None
        bindings = None
    else:
        if recorder is None:
            raise ValueError("a live run needs a recorder")
        bindings = BINDINGS if bindings is None else bindings
        if reachable is not None:
            missing = bindings.missing(reachable)
            if missing:
                raise MissingBindings(missing)
    run = _Run(history, first, mode, recorder, bindings, checkpoint_every,
               resolve or module_resolver(entry), inline, () if mode == "replay" else resend,
               carried_replies, classes if classes is not None else lambda: _default_classes(entry))
    if begin == "latest":
        begin = latest_checkpoint(history, first) or first
    index = begin - first
    if not 0 <= index < len(history):
        raise ValueError(f"fact {begin} is not in the history given (facts {first}..{first + len(history) - 1})")
    fact = history[index]
    run.hpos = index
    if type(fact) is Start:
        if entry is None:
            raise ValueError("beginning at Start needs the entry function")
        run.begin_at_start(entry, fact)
    elif type(fact) is Checkpoint:
        run.hpos = index + 1
        try:
            run.begin_at_checkpoint(fact)
        except _Finish as f:
            return f.outcome
    else:
        raise ValueError(f"fact {begin} is a {type(fact).__name__}, not a Start or a Checkpoint")
    return run.loop()


def _default_classes(entry: Optional[Callable]) -> ClassTable:
    if entry is not None and hasattr(entry, "__globals__"):
        return class_table(entry)
    return STD_CLASSES


def start_run(entry: Callable, args: tuple, *, recorder, start: Optional[Start] = None,
              program: str = "", std: str = "std@v1", **kw) -> Outcome:
    """Record the Start of a new live run and drive it: `drive(entry, history=[start], ...)`.

    `start` defaults to a Start naming `program` (identity) and `std`, the entry function's
    name and `args`, and the runtime's data version.
    """
    if start is None:
        from flowrt.trace import DATA_VERSION

        params = getattr(getattr(entry, "__flow__", None), "params", ())
        start = Start(program, std, DATA_VERSION, entry.__name__, tuple(args), tuple(params))
    elif tuple(start.input) != tuple(args):
        raise ValueError("start.input differs from args")
    recorder.record(start)
    recorder.sync()
    return drive(entry, history=[start], recorder=recorder, **kw)
