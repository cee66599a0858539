"""The run: one trampoline and scheduler for live runs, resume and replay.

A drive's whole state is one RunState (flowrt.engine.state), passed to every function: the Tool
calls (flowrt.engine.calls), the task operations (flowrt.engine.task_ops), the checkpoints
(flowrt.engine.checkpoints), facts and calls going out (flowrt.engine.record). This module keeps
the scheduler, the trampoline running one task, and beginning at Start.

The scheduler (`loop`) is a FIFO ready queue. A task runs until it blocks (on its Tool call,
`await` or `first`); when no task is ready exactly one event is admitted (flowrt.engine.calls)
and the loop goes on; when none can be, the run pauses with its open calls (replay: Incomplete).
A round (running the ready tasks until none is) ends by sending the calls it made, after one
commit that holds them all (flowrt.engine.record.send).

The trampoline (`run_task`). Each task has an explicit stack of generator frames. A value is
sent into the top frame and what comes out decides: a generator object is a call (push), a
`TailCall` return replaces the frame (and is where a checkpoint may be taken), any other return
pops and sends the value to the frame below; a ToolCall goes to calls.call, the task operations
(Spawn, Await, First, StopTask) through one table, `REQUESTS`. The driver never recurses, so
depth costs nothing per call and is limited only by `MAX_DEPTH`, a deterministic fault.

The end. A fault stops every task the root's frames own, innermost frame first, then records End
Faulted; the root finishing records End Completed (flowrt.engine.task_ops, record). `_Finish`
carries the outcome out of the loop from whatever depth decided it.

Interruptions (KeyboardInterrupt, SystemExit, BdbQuit; flowrt.engine.interrupts) are not ends:
wherever they are raised (generated code, an inline implementation, a worker's completion taken
from the queue) they unwind to `loop`, which returns RunHalted with the calls open then,
recording nothing.
"""

from __future__ import annotations

from types import GeneratorType
from typing import Callable

from flowrt.data.facts import Start
from flowrt.data.requests import MAX_DEPTH, Await, First, Spawn, StopTask, TailCall, ToolCall
from flowrt.data.tasks import READY, Task, has_hole
from flowrt.engine.calls import admit, call
from flowrt.engine.checkpoints import begin_fork, candidate
from flowrt.engine.describe import _locate_task
from flowrt.engine.interrupts import INTERRUPTS, reason
from flowrt.engine.record import send
from flowrt.engine.outcomes import Incomplete, OpenCall, Outcome, RunHalted, RunPaused, _Finish
from flowrt.engine.state import RunState, fact_no, incomplete
from flowrt.engine.task_ops import (
    BLOCKED,
    await_,
    fault,
    fault_exception,
    finish,
    first,
    frame_returns,
    spawn,
    stop,
)
from flowrt.history.stored import CorruptHistory, args_misfit

#: The task operations by request type: handler(run, task, req) -> the value sent back, or BLOCKED.
REQUESTS: dict[type, Callable] = {Spawn: spawn, Await: await_, First: first, StopTask: stop}

_RETURN = object()


def _requesting(req):
    """A frame that makes one request (a task operation) and returns its answer: lets a function
    value that returns its request instead of yielding it (an effectful lambda whose whole body is
    one task operation, abi.md "Requests") run as a task's body or a tail call's target."""
    return (yield req)


def _frame(value):
    """The frame of a function that made no frame of its own (returned `value`: a request, a
    TailCall or a plain value)."""
    return _requesting(value) if type(value) in REQUESTS else _returning(value)


def _returning(value):
    """A frame that returns `value` at once: lets a function that made no frame of its own (a pure
    function value, or an effectful one whose whole body is `return TailCall(...)`) go through
    the same return/tail-call path as every other frame."""
    return value
    yield  # unreachable: makes this a generator


# ---- starting -------------------------------------------------------------------------------------


def begin_at_start(run: RunState, entry: Callable, start: Start):
    """Begin at Start (history[hpos]): the root task is `entry(*start.input)`."""
    run.hpos += 1  # the Start fact
    run.fresh = True
    if has_hole(start.input):
        incomplete(run, "the run's input holds a hole")
    # a fork's Start may hold parked tasks (flowrt.host.forks), begun as a checkpoint would be
    why = args_misfit(entry, tuple(start.input), allow_parked=start.parent is not None)
    if why:
        raise CorruptHistory(fact_no(run) - 1, f"the run's input does not fit {start.entry}: {why}")
    if start.parent is not None and begin_fork(run, entry, start):
        return  # a fork's Start holding parked tasks (flowrt.engine.checkpoints)
    args = tuple(start.input)
    run.root = Task("root", lambda: entry(*args))
    run.ready.append(run.root)


# ---- the scheduler --------------------------------------------------------------------------------


def loop(run: RunState) -> Outcome:
    """Run tasks until the drive ends: its outcome."""
    ready = run.ready
    try:
        while True:
            while ready:
                task = ready.popleft()
                if task.state == READY:
                    run_task(run, task)
            if run.unsent:  # the round's calls: one commit, then each is sent
                send(run)
            if not admit(run):
                return _idle(run)
    except _Finish as f:
        return f.outcome
    except INTERRUPTS as e:  # Ctrl-C, sys.exit in a Tool, pdb quit: not the program's end
        if run.replay:
            raise
        return _halted(run, e)


def _halted(run: RunState, e: BaseException) -> RunHalted:
    """Stop where the run is: nothing more is recorded (no End); the calls open stay open."""
    made, worker = run.halted_in or (None, False)
    where = f"{made.tool} ({made.id})" if made is not None else None
    return RunHalted(reason(e, where, worker), _open_calls(run), e)


def _open_calls(run: RunState) -> tuple:
    return tuple(OpenCall(c.id, c.tool, c.args) for c in run.open.values())


def _idle(run: RunState) -> Outcome:
    """No task can move and no event can be admitted."""
    if run.open:
        calls = _open_calls(run)
        if run.replay:
            if len(calls) == 1:
                c = calls[0]
                why = f"needs the reply to {c.id} ({c.tool}), which is not recorded"
            else:
                why = (
                    "needs a reply to one of "
                    + ", ".join(f"{c.id} ({c.tool})" for c in calls)
                    + ", none of which is recorded"
                )
            return Incomplete(why)
        return RunPaused(calls)
    raise RuntimeError("flowrt: every task is blocked and no call is open (a driver bug)")


# ---- running one task -----------------------------------------------------------------------------


def _first_frame(run: RunState, task: Task):
    """A task's first run: its start function called, its outermost frame pushed."""
    start, task.start = task.start, None
    try:
        gen = start()
        # a body that is one tail call (a lambda `flow() = work(i)`: a plain function returning
        # rt.TailCall) starts in its callee's frame; the root's goes through run_task's tail-call
        # path, where a checkpoint may be taken
        while type(gen) is TailCall and task is not run.root:
            gen = gen.fn(*gen.args)
    except Exception as e:
        fault_exception(run, task, e)
    if type(gen) is not GeneratorType:  # a pure function, a body that is one tail call or request
        gen = _frame(gen)
    task.stack.append(gen)
    return gen


def run_task(run: RunState, task: Task):
    """Run `task` until it blocks, finishes or the drive ends."""
    stack = task.stack
    if stack:
        gen = stack[-1]
        value, task.resume = task.resume, None
    else:
        gen = _first_frame(run, task)
        value = None
    send = gen.send
    while True:
        try:
            req = send(value)
        except StopIteration as ret:
            req = _RETURN
            value = ret.value
        except Exception as e:
            fault_exception(run, task, e)
        if req is _RETURN:
            depth = len(stack) - 1
            while type(value) is TailCall:
                tc = value
                if depth == 0 and run.fresh and task is run.root and (run.every or run.hpos < run.hlen):
                    flow = getattr(tc.fn, "__flow__", None)
                    if flow is not None and flow.top_level:
                        candidate(run, tc, flow)
                try:
                    value = tc.fn(*tc.args)
                except Exception as e:
                    fault_exception(run, task, e)
                if type(value) is GeneratorType or type(value) in REQUESTS:
                    stack[depth] = gen = value if type(value) is GeneratorType else _requesting(value)
                    send = gen.send
                    value = None
                    break
            else:
                stack.pop()
                owned = task.owned
                if owned and depth in owned:
                    frame_returns(run, task, depth, value)
                if depth == 0:
                    finish(run, task, value)
                    return
                gen = stack[-1]
                send = gen.send
            continue
        t = type(req)
        if t is GeneratorType:
            if len(stack) >= MAX_DEPTH:
                fault(run, task, "stack exhausted", *_locate_task(task))
            stack.append(req)
            gen = req
            send = req.send
            value = None
        elif t is ToolCall:
            call(run, task, req)
            return
        elif t is TailCall:  # `yield f(a)` where f's body is just a tail call (no frame of its own)
            gen = _returning(req)
            stack.append(gen)
            send = gen.send
            value = None
        else:
            op = REQUESTS.get(t)
            if op is None:
                # `x = yield f(a)` where the effectful-typed value `f` is a pure function (a pure
                # value may reach any effectful slot: a list, a record, a result): `f(a)` already
                # is the call's result (no Flow value is a request or a generator)
                value = req
            else:
                value = op(run, task, req)
                if value is BLOCKED:
                    return
