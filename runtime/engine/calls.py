"""Tool calls: going out (Call, then dispatch) and coming back (Reply, admitted one at a time).

Out. A task's `ToolCall` request gets the id `<task>#<n>`. While history remains the Call
must match the next recorded fact and nothing is sent: the reply will be served from history
too. Once history is exhausted a replay stops (Incomplete), and a live run records the Call and
syncs it *before* sending it, so a crash never loses a call that may have had effects. Sending
(`_dispatch`) goes through the Dispatcher: when the driver has nothing else to do (no ready
task, nothing outstanding or arrived) a synchronous implementation runs inline on the driver's
thread, sparing a hand-off to a worker and back; otherwise it is submitted to a worker and its
completion later comes through the completions queue. A host may ask to resend calls open when
history ends (after a crash): they go out again under their own ids, with no new Call fact;
the calls it names as cut by the crash are answered `Err(Unknown(CUT_REASON))` instead, as
completions that arrived before any other (`_history_ends`).

In. `_admit` admits exactly one event when no task can move: the next recorded fact while
history remains (it must be a Reply to an open call, and its value must fit the call's result
type, else the history is corrupt: flowrt.history.stored), else the next completion, which is
recorded and synced before its task sees it. A completion for a call a Stop closed meanwhile
is dropped, and a PENDING outcome leaves the call open (the host is told; history is not).
Because one event is admitted only when everything else is quiet, the order of admissions is the
only nondeterminism a run has, and the history records it. `_drain` moves completions already
posted into `arrived` without admitting them: a Stop consults it to record a reply that came
but was not yet admitted (Closed with its reply).
"""
from __future__ import annotations

from queue import Empty

from flowrt.data.facts import Call, Reply
from flowrt.engine.interrupts import INTERRUPTS, Interruption
from flowrt.engine.outcomes import Incomplete, ResendRefused, _Finish
from flowrt.engine.describe import _args_text, _locate_task, _same, describe
from flowrt.data.requests import ToolCall
from flowrt.history.stored import CorruptHistory, misfit, reply_checker
from flowrt.data.tasks import CALL, READY, Task, build_parked, has_hole
from flowrt.engine.tools import PENDING
from flowrt.data.typedesc import names_types, type_text
from flowrt.history.trace import TraceError, unrecordable
from flowrt.data.values import ClassTable, Err, Malformed, NotRun, Unknown

#: The reason an open call cut by a crash is closed with (`drive(cut=...)`; seed 000 "Unknown").
CUT_REASON = "process ended while the call was out"


class _Call:
    """An open Tool call."""

    __slots__ = ("id", "spec", "task", "park", "tool", "args", "type_args", "want")

    def __init__(self, id, spec, task, park, tool, args=None, type_args=(), want=None):
        self.id = id
        self.spec = spec  # None for a parked call restored from a checkpoint (not re-sendable)
        self.task = task
        self.park = park
        self.tool = tool
        self.args = args  # None when not known (a parked call restored without its Call fact)
        self.type_args = type_args
        # the check of a reply served from history (flowrt.history.stored); made on the first one
        self.want = want


class _Calls:
    """The run's Tool-call methods (a mixin of flowrt.engine.run_loop._Run, whose state they use)."""

    # -- replies in ----------------------------------------------------------------------------------

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
            check = call.want
            if check is None:
                check = call.want = reply_checker(call.spec, call.type_args)
            if not check(fact.reply):
                self._corrupt_reply(call, fact.reply, self._fact_no())
            self.hpos += 1
            self.since_cp += 1
            self.fresh = True
            self._deliver(call, fact.reply)
            return True
        if self.replay:
            return False
        if self.at_end:
            self._history_ends()
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
            if type(outcome) is Interruption:  # its implementation raised KeyboardInterrupt, ...
                self.halted_in = (self.open.get(cid), True)
                raise outcome.exc
            call = self.open.get(cid)
            if call is None:  # closed by a Stop meanwhile
                continue
            if outcome is PENDING:  # left open on purpose: tell the host (its record, not history)
                note = getattr(self.recorder, "call_pending", None)
                if note is not None:
                    note(cid)
                continue
            try:
                recorder.record(Reply(cid, outcome))
            except TraceError as e:  # admitted, but beyond what a history can hold (trace.md, "Limits")
                outcome = Err(Malformed(f"$: the reply cannot be recorded: {e}"))
                recorder.record(Reply(cid, outcome))
            recorder.sync()
            self.since_cp += 1
            self.fresh = True
            self._deliver(call, outcome)
            return True

    def _corrupt_reply(self, call: _Call, reply, n: int, how: str = "recorded"):
        """A reply from history that does not fit its call's type: the history is corrupt."""
        desc = getattr(call.want, "desc", None)
        why = misfit(desc, reply) if desc is not None else None
        raise CorruptHistory(n, f"the Reply {how} for {call.id} ({call.tool or 'a parked call'}) does not "
                                f"fit {type_text(desc) if desc is not None else 'its call'}: "
                                f"{why or 'a value of another type'}")

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

    # -- calls out -----------------------------------------------------------------------------------

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
                    or (rec.type_args != type_args and not self._recorded_types(rec.type_args, req.type_args))
                    or not _same(rec.args, args)):
                self._unrecordable_call(task, spec, args)  # as the live run found: a fault
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
        if self.at_end:
            self._history_ends()
        try:
            self.recorder.record(Call(cid, spec.name, spec.tool_id, args, type_args))
        except TraceError:
            self._unrecordable_call(task, spec, args)
            raise
        self.recorder.sync()  # a Call is written before the call is sent
        self.since_cp += 1
        self.fresh = True
        self.open[cid] = call
        task.call = call
        task.state = CALL
        self._dispatch(call)

    def _unrecordable_call(self, task: Task, spec, args):
        """An argument beyond what a history can hold (trace.md, "Limits") faults the caller: the
        call is not made. Checked where the live run records the Call, and where a replay finds
        another fact than that Call (so both see the same fault)."""
        why = unrecordable(args)
        if why:
            self._fault(task, f"the arguments of {spec.name} cannot be recorded: {why}", *_locate_task(task))

    def _recorded_types(self, texts: tuple, descs: tuple) -> bool:
        """Whether type argument texts the history records name `descs`, though written otherwise
        (a one-element tuple `(Int)` from an older flowrt: flowrt.data.typedesc.names_types)."""
        if not isinstance(self.classes, ClassTable):
            self.classes = self.classes()
        return names_types(texts, descs, self.classes)

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
            try:
                outcome = d.run_inline(impl, spec, call.args, call.type_args, call.id)
            except INTERRUPTS:  # Ctrl-C while it ran, or it called sys.exit / quit pdb: halts the run
                self.halted_in = (call, False)
                raise
            self.arrived.append((call.id, outcome))
        else:
            d.submit(call.id, impl, spec, call.args, call.type_args)
            self.outstanding += 1

    def _history_ends(self):
        """History is exhausted and the run goes on live: first the calls a crash cut get their
        outcome, `Err(Unknown(CUT_REASON))`, as completions that arrived before anything else (so
        they are admitted first, in call order, each when the program next waits; a Stop that
        comes first closes the call with that reply); then the calls the host asked to resend go
        out again."""
        self.at_end = False
        cut, self.cut = self.cut, ()
        unknown = Err(Unknown(CUT_REASON))
        self.arrived.extendleft(reversed([(cid, unknown) for cid in cut if cid in self.open]))
        if self.resend:
            self._resend_open()

    def _resend_open(self):
        """History is exhausted: send the calls the host asked to resend again, under their own
        ids (no new Call fact; the one Reply comes when they answer). Flow never does this itself."""
        ids, self.resend = self.resend, set()
        for cid in [c for c in self.open if c in ids] + sorted(ids - set(self.open)):
            call = self.open.get(cid)
            if call is None:
                raise ResendRefused(f"call {cid} is not open when the history ends; only an open call "
                                    f"can be sent again")
            if call.spec is None:
                raise ResendRefused(f"call {cid} was carried across a checkpoint by a parked task; "
                                    f"only a call made after the checkpoint can be sent again")
            self._dispatch(call)

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
            if type(item[1]) is Interruption:
                self.halted_in = (self.open.get(item[0]), True)
                raise item[1].exc
            self.arrived.append(item)
