"""Task operations: spawn, await, first and stop, the ownership that bounds task lifetimes, and
how a task (and the run, at its root) finishes or faults.

A spawned task belongs to the frame that spawned it (`owned[depth]` of its owner). When that
frame returns, the tasks its value holds are handed to the frame below (or to the owner's own
owner, for a task's outermost frame); every other task it owns is stopped (`frame_returns`).
So no task outlives the code that can still reach it, and a run's end stops everything.

A task is *settled* once observed (awaited, or picked by `first`) or stopped: its owner no longer
stops it. Stopping (`stop_tree`) walks a task and then everything it owns, pre-order, and
records one Stop per task: "found finished" with its value for a finished, unobserved task;
"found running" for a running one, closing its open call (with its reply if that arrived but was
not admitted, so the effect is not lost from the record). Waiters of a stopped task fault.

`await` and `first` register the waiting task with a fresh token on each task it waits for; a
registration whose token no longer matches is stale and ignored, so waking never has to search.
`first` over tasks already finished picks the earliest by finish order; the pick is recorded as
a Choice (and follows the recorded Choice while history remains, if that task can be picked).
`finish` ends a task: the root's finishing ends the run; anyone waiting is woken.

The request handlers (`spawn`, `await_`, `first`, `stop`) take the run, the requesting task and
its request, as the trampoline's table calls them (flowrt.engine.run_loop); each returns the
value sent back to the task, or BLOCKED when the task now waits.

The end. A fault (`fault`) stops every task the root's frames own, innermost frame first, then
records End Faulted (flowrt.engine.record.end); the root finishing records End Completed.
"""

from __future__ import annotations

from bdb import BdbQuit

from flowrt.data.facts import Choice, Closed, Completed, Faulted, Stop
from flowrt.data.requests import Await, First, Spawn, StopTask
from flowrt.data.tasks import AWAIT, FAULTED, FINISHED, FIRST, READY, STOPPED, Task, scan
from flowrt.data.values import show
from flowrt.engine import debug
from flowrt.engine.describe import _exception_message, _locate_exception, _locate_task, _same, flow_chain
from flowrt.engine.record import drain, emit, end
from flowrt.engine.state import RunState
from flowrt.engine.tools import PENDING

#: What a request handler returns when its task now waits (it leaves the trampoline).
BLOCKED = object()


# ---- the requests ---------------------------------------------------------------------------------


def spawn(run: RunState, task: Task, req: Spawn) -> Task:
    """`task.spawn`: a new task owned by the requesting frame, ready to run."""
    fn = req.fn
    depth = len(task.stack) - 1
    task.nspawns += 1
    child = Task(f"{task.id}/{task.nspawns}", fn, task, depth)  # fn: the task's start, no arguments
    owned = task.owned.get(depth)
    if owned is None:
        owned = task.owned[depth] = {}
    owned[child] = None
    run.live[child] = None
    run.ready.append(child)
    return child


def await_(run: RunState, task: Task, req: Await):
    """`task.await`: the task's value if it finished, else BLOCKED until it does."""
    t = req.task
    if type(t) is not Task:
        fault(run, task, f"task.await of {show(t)}, which is not a task", *_locate_task(task))
    if t.state == FINISHED:
        settle(run, t)
        return t.value
    if t.state == STOPPED:
        fault(run, task, f"task.await: task {t.id} was stopped", *_locate_task(task))
    token = object()
    t.waiters[task] = token
    task.waiting = (token, (t,))
    task.state = AWAIT
    return BLOCKED


def first(run: RunState, task: Task, req: First):
    """`task.first`: (index, value) of the first task to finish (a Choice), else BLOCKED."""
    ts = list(req.tasks)
    if not ts:
        fault(run, task, "task.first of an empty list", *_locate_task(task))
    for t in ts:
        if type(t) is not Task:
            fault(run, task, f"task.first of {show(t)}, which is not a task", *_locate_task(task))
    finished = [t for t in ts if t.state == FINISHED]
    if finished:
        earliest = min(finished, key=lambda t: t.finish_seq)
        picked = _choose(run, task, earliest, finished)
        settle(run, picked)
        return (_index(ts, picked), picked.value)
    waiting = [t for t in dict.fromkeys(ts) if t.state != STOPPED]
    if not waiting:
        fault(run, task, "task.first: every task was stopped", *_locate_task(task))
    token = object()
    for t in waiting:
        t.waiters[task] = token
    task.waiting = (token, tuple(waiting))
    task.state = FIRST
    return BLOCKED


def stop(run: RunState, task: Task, req: StopTask) -> None:
    """`task.stop`: stop the task and everything it owns, unless nothing of it is running."""
    t = req.task
    if type(t) is not Task:
        fault(run, task, f"task.stop of {show(t)}, which is not a task", *_locate_task(task))
    if t.state == STOPPED or (t.state == FINISHED and t.settled):
        return None  # already stopped, or finished and observed: nothing is running
    stop_tree(run, t)
    return None


# ---- finishing and waking -------------------------------------------------------------------------


def settle(run: RunState, t: Task):
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
        run.live.pop(t, None)


def finish(run: RunState, task: Task, value):
    """`task` finished with `value`: the root's finishing ends the run; its waiters wake."""
    task.state = FINISHED
    task.value = value
    if task.stack:  # the trampoline popped its last frame: it is already empty
        task.stack = []
    run.finish_seq += 1
    task.finish_seq = run.finish_seq
    if task is run.root:
        end(run, Completed(value))
    if task.settled:
        run.live.pop(task, None)
    waiters = task.waiters
    if not waiters:
        return
    task.waiters = {}
    for w, token in waiters.items():
        if w.waiting is None or w.waiting[0] is not token:
            continue
        if w.state == AWAIT:
            settle(run, task)
            _wake(run, w, value)
        elif w.state == FIRST:
            tasks = w.waiting[1]
            _choose(run, w, task, [task])
            settle(run, task)
            _wake(run, w, (_index(tasks, task), value))


def _wake(run: RunState, w: Task, value):
    token, tasks = w.waiting
    w.waiting = None
    for t in tasks:  # drop this wait's other registrations
        if t.waiters.get(w) is token:
            del t.waiters[w]
    w.resume = value
    w.state = READY
    run.ready.append(w)


def _index(tasks, t) -> int:
    for i, x in enumerate(tasks):
        if x is t:
            return i
    raise ValueError("task not in list")


def _choose(run: RunState, task: Task, pick: Task, pickable: list) -> Task:
    """Record the Choice of `task.first` (or follow the recorded one, if it can be picked)."""
    ids = {t.id: t for t in pickable}
    rec = emit(
        run,
        Choice(task.id, pick.id),
        lambda r: type(r) is Choice and r.task == task.id and r.picked in ids,
        f"picks {pick.id} in task.first of {task.id}",
    )
    return ids[rec.picked]


# ---- stopping -------------------------------------------------------------------------------------


def stop_tree(run: RunState, top: Task):
    """Stop `top` and, after it, every task it owns (pre-order), recording a Stop for each."""
    todo = [top]
    while todo:
        t = todo.pop()
        children = [u for d in sorted(t.owned, reverse=True) for u in t.owned[d]]
        t.owned = {}
        if t.state == FINISHED:
            if not t.settled:
                emit(
                    run,
                    Stop(t.id, "finished", t.value),
                    lambda r, t=t: (
                        type(r) is Stop
                        and r.task == t.id
                        and r.found == "finished"
                        and _same(r.value, t.value)
                    ),
                    f"stops {t.id}, found finished with {show(t.value)}",
                )
        elif t.state == FAULTED:
            pass  # the faulting task itself: it is not stopped, its tasks are
        elif t.state != STOPPED:
            _stop_running(run, t)
        settle(run, t)
        run.live.pop(t, None)
        todo.extend(reversed(children))


def _stop_running(run: RunState, t: Task):
    """Record the Stop of running task `t`, closing its open call, and fault its waiters."""
    closed = ()
    call = t.call
    if call is not None:
        drain(run)
        reply = None
        for item in run.arrived:
            if item[0] == call.id:
                reply = item
                break
        if reply is not None and reply[1] is not PENDING:
            run.arrived.remove(reply)
            closed = (Closed(call.id, reply[1], True),)
            failures = run.dispatcher.failures if run.dispatcher is not None else None
            if failures and call.id in failures:  # its evidence, as for an admitted reply (calls.admit)
                debug.call_failed(run.recorder, call.id, call.tool, reply[1], failures.pop(call.id))
        else:
            closed = (Closed(call.id),)
        del run.open[call.id]
        t.call = None
    ids = [c.call for c in closed]
    emit(
        run,
        Stop(t.id, "running", None, closed),
        lambda r: (
            type(r) is Stop and r.task == t.id and r.found == "running" and [c.call for c in r.closed] == ids
        ),
        f"stops {t.id}, found running" + (f" with {ids[0]} open" if ids else ""),
    )
    t.state = STOPPED
    t.stack = []
    if t.waiting is not None:  # it was waiting in await/first: drop its registrations
        token, tasks = t.waiting
        t.waiting = None
        for x in tasks:
            if x.waiters.get(t) is token:
                del x.waiters[t]
    waiters, t.waiters = t.waiters, {}
    for w, token in waiters.items():
        if w.waiting is None or w.waiting[0] is not token:
            continue
        if w.state == AWAIT:
            fault(run, w, f"task.await: task {t.id} was stopped", *_locate_task(w))
        elif w.state == FIRST and all(x.state == STOPPED for x in w.waiting[1]):
            fault(run, w, "task.first: every task was stopped", *_locate_task(w))


def frame_returns(run: RunState, task: Task, depth: int, value):
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
                into = to.owned.get(to_depth)
                if into is None:
                    into = to.owned[to_depth] = {}
                into[u] = None
                u.owner, u.odepth = to, to_depth
    if mine:
        for u in list(mine):
            if not u.settled and u.state != STOPPED:
                stop_tree(run, u)


# ---- faults ---------------------------------------------------------------------------------------


def fault_exception(run: RunState, task: Task, e: Exception):
    """Generated code raised `e` in `task`: the run faults where it was raised."""
    if type(e) is BdbQuit:  # quitting pdb inside generated code halts the run: not a fault
        raise e
    file, line = _locate_exception(e)
    run.fault_chain = flow_chain(task, e)
    fault(run, task, _exception_message(e), file, line, e)


def fault(run: RunState, task: Task, message: str, file: str, line: int, exc=None):
    """End the run faulted: the root's frames are abandoned, so every task they own (directly
    or through other tasks) is stopped first, innermost frame first; then End. (`flow2py run
    --pdb` first opens a post-mortem on the task's Flow frames: flowrt.engine.debug.)"""
    if not run.fault_chain:
        run.fault_chain = flow_chain(task)
    if debug.session is not None and not run.replay:
        debug.session.fault(task, message, f"{file}:{line}", exc)
    task.state = FAULTED
    root = run.root
    for d in sorted(root.owned, reverse=True):
        for u in list(root.owned.get(d, ())):
            if u.state != STOPPED:
                stop_tree(run, u)
    end(run, Faulted(message, file, line))
