"""Task operations: spawn, await, first and stop, and the ownership that bounds task lifetimes.

A spawned task belongs to the frame that spawned it (`owned[depth]` of its owner). When that
frame returns, the tasks its value holds are handed to the frame below (or to the owner's own
owner, for a task's outermost frame); every other task it owns is stopped (`_frame_returns`).
So no task outlives the code that can still reach it, and a run's end stops everything.

A task is *settled* once observed (awaited, or picked by `first`) or stopped: its owner no longer
stops it. Stopping (`_stop_tree`) walks a task and then everything it owns, pre-order, and
records one Stop per task: "found finished" with its value for a finished, unobserved task;
"found running" for a running one, closing its open call (with its reply if that arrived but was
not admitted, so the effect is not lost from the record). Waiters of a stopped task fault.

`await` and `first` register the waiting task with a fresh token on each task it waits for; a
registration whose token no longer matches is stale and ignored, so waking never has to search.
`first` over tasks already finished picks the earliest by finish order; the pick is recorded as
a Choice (and follows the recorded Choice while history remains, if that task can be picked).
`_finish` ends a task: the root's finishing ends the run; anyone waiting is woken.
"""
from __future__ import annotations

from flowrt.data.facts import Choice, Closed, Completed, Stop
from flowrt.engine.describe import _locate_task, _same
from flowrt.data.tasks import AWAIT, FAULTED, FINISHED, FIRST, READY, STOPPED, Task, scan
from flowrt.engine.tools import PENDING
from flowrt.data.values import show


class _TaskOps:
    """The run's task methods (a mixin of flowrt.engine.run_loop._Run, whose state they use)."""

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
