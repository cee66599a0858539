"""The run: one trampoline and scheduler for live runs, resume and replay.

`_Run` holds a drive's whole state; the methods for Tool calls (flowrt.engine.calls), task operations
(flowrt.engine.task_ops) and checkpoints (flowrt.engine.checkpoints) are mixins sharing that state, and this
module keeps the core they all go through: recording or checking facts, the scheduler, the
trampoline running one task, and the end.

Facts. Every fact goes through `_emit` (Call and Reply have inlined paths in flowrt.engine.calls):
while history remains, the fact the program would record is compared with the next recorded one
and the recorded one is used (a Choice may differ in which task it picked); once history is
exhausted a live run records and syncs it, and a replay stops with Incomplete. A mismatch is a
Diverged verdict in replay and refuses a resume (ResumeRefused) live.

The scheduler is a FIFO ready queue. A task runs until it blocks (on its Tool call, `await` or
`first`); when no task is ready exactly one event is admitted (flowrt.engine.calls) and the loop goes
on; when none can be, the run pauses with its open calls (replay: Incomplete).

The trampoline (`_run`). Each task has an explicit stack of generator frames. A value is sent
into the top frame and what comes out decides: a generator object is a call (push), a `TailCall`
return replaces the frame (and is where a checkpoint may be taken), any other return pops and
sends the value to the frame below; the other requests (ToolCall, Spawn, Await, First, StopTask)
go to their operations. The driver never recurses, so depth costs nothing per call and is
limited only by `MAX_DEPTH`, a deterministic fault.

The end. A fault stops every task the root's frames own, innermost frame first, then records End
Faulted; the root finishing records End Completed. In replay, history left unused after End is a
divergence. `_Finish` carries the outcome out of the loop from whatever depth decided it.

Interruptions (KeyboardInterrupt, SystemExit, BdbQuit; flowrt.engine.interrupts) are not ends: wherever
they are raised (generated code, an inline implementation, a worker's completion taken from the
queue) they unwind to `loop`, which returns RunHalted with the calls open then, recording nothing.
"""
from __future__ import annotations

import os
from bdb import BdbQuit
from collections import deque
from types import GeneratorType
from typing import Any, Callable, Optional

from flowrt.data.facts import Checkpoint, Completed, End, Faulted, Start
from flowrt.engine.calls import _Call, _Calls
from flowrt.engine.checkpoints import _Checkpoints
from flowrt.engine.describe import _exception_message, _locate_exception, _locate_task, _same, describe
from flowrt.engine.interrupts import INTERRUPTS, reason
from flowrt.engine.outcomes import (
    Diverged, Incomplete, Matched, OpenCall, Outcome, ResumeRefused, RunCompleted, RunFaulted,
    RunHalted, RunPaused, _Finish,
)
from flowrt.data.requests import MAX_DEPTH, Await, First, Spawn, StopTask, TailCall, ToolCall
from flowrt.history.stored import CorruptHistory, args_misfit
from flowrt.engine.task_ops import _TaskOps
from flowrt.data.tasks import FAULTED, READY, STOPPED, Task, has_hole
from flowrt.engine.tools import Dispatcher
from flowrt.history.trace import unrecordable
from flowrt.data.values import STD_CLASSES, show


_RETURN = object()


def _returning(value):
    """A frame that returns `value` at once: lets a function that made no frame of its own (a pure
    function value, or an effectful one whose whole body is `return TailCall(...)`) go through
    the same return/tail-call path as every other frame."""
    return value
    yield  # unreachable: makes this a generator


class _Run(_Calls, _TaskOps, _Checkpoints):
    """One drive's state, and the core its mixins (calls, task operations, checkpoints) share."""

    def __init__(self, history, first, mode, recorder, bindings, checkpoint_every, resolve, inline,
                 resend=(), carried=None, classes=STD_CLASSES, cut=(), carried_calls=None, parked_specs=None):
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
        self.cut = tuple(cut or ())  # open calls a crash cut: admitted Unknown once history is exhausted
        self.at_end = bool(self.resend or self.cut)  # something to do when history is exhausted
        self.carried = dict(carried or {})  # replies of parked calls recorded before the checkpoint
        self.carried_calls = carried_calls or {}  # their Call facts, when not in history (to show them)
        self.parked_specs = dict(parked_specs or {})  # call id -> ToolSpec of a checkpoint's parked call
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
        self.halted_in = None  # (_Call, from a worker) whose implementation raised an interruption

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
            if self.at_end:
                self._history_ends()
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
        # a fork's Start may hold parked tasks (flowrt.host.forks), begun as a checkpoint would be
        why = args_misfit(entry, tuple(start.input), allow_parked=start.parent is not None)
        if why:
            raise CorruptHistory(self._fact_no() - 1, f"the run's input does not fit {start.entry}: {why}")
        if start.parent is not None and self.begin_fork(entry, start):
            return  # a fork's Start holding parked tasks (flowrt.engine.checkpoints)
        args = tuple(start.input)
        self.root = Task("root", lambda: entry(*args))
        self.ready.append(self.root)

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
        except INTERRUPTS as e:  # Ctrl-C, sys.exit in a Tool, pdb quit: not the program's end
            if self.replay:
                raise
            return self._halted(e)

    def _halted(self, e: BaseException) -> RunHalted:
        """Stop where the run is: nothing more is recorded (no End); the calls open stay open."""
        call, worker = self.halted_in or (None, False)
        where = f"{call.tool} ({call.id})" if call is not None else None
        return RunHalted(reason(e, where, worker), self._open_calls(), e)

    def _open_calls(self) -> tuple:
        return tuple(OpenCall(c.id, c.tool, c.args) for c in self.open.values())

    def _idle(self) -> Outcome:
        """No task can move and no event can be admitted."""
        if self.open:
            calls = self._open_calls()
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

    # -- faults and the end ---------------------------------------------------------------------------

    def _fault_exception(self, task: Task, e: Exception):
        if type(e) is BdbQuit:  # quitting pdb inside generated code halts the run: not a fault
            raise e
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
            def matches(r):
                return type(r) is End and type(r.end) is Completed and _same(r.end.value, end.value)
            doing = f"completes with {show(end.value)}"
        else:
            def matches(r):
                return (type(r) is End and type(r.end) is Faulted and r.end.message == end.message
                        and r.end.line == end.line and os.path.basename(r.end.file) == os.path.basename(end.file))
            doing = f"faults with {show(end.message)} at {end.file}:{end.line}"
        if type(end) is Completed and (self.hpos >= self.hlen or not matches(self.history[self.hpos])):
            why = unrecordable((end.value,))
            if why:  # a result beyond what a history can hold (trace.md, "Limits"): a fault
                self._end(Faulted(f"the result cannot be recorded: {why}", "<result>", 0))
        self._emit(fact, matches, doing)
        if self.hpos < self.hlen:
            self._diverge(f"the program has ended, and {describe(self.history[self.hpos])} is left unused")
        if self.replay:
            raise _Finish(Matched(self.history[self.hpos - 1]))
        if type(end) is Completed:
            raise _Finish(RunCompleted(end.value))
        raise _Finish(RunFaulted(end))
