"""What a run sends out: facts to its recorder, calls to their implementations.

Facts. Every fact but Call and Reply goes through `emit` (those two have inlined paths in
flowrt.engine.calls): while history remains, the fact the program would record is compared
with the next recorded one and the recorded one is used (a Choice may differ in which task it
picked); once history is exhausted a live run records and syncs it, and a replay stops with
Incomplete. A mismatch is a Diverged verdict in replay and refuses a resume (ResumeRefused)
live. `end` records the End and carries the outcome out of the loop (`_Finish`); in replay,
history left unused after End is a divergence.

Calls. A call recorded live waits in `run.unsent` until the scheduling round ends (no task is
ready: flowrt.engine.run_loop), or until anything else is recorded or a Stop looks for replies:
then `send` syncs once, so one commit makes every call of the round durable (group commit: a
fan-out of 100 calls costs one commit, not 100), and sends them in the order they were made.
`dispatch` sends one call through the Dispatcher: when the driver has nothing else
to do (no ready task, nothing outstanding or arrived or unsent) a synchronous implementation runs inline
on the driver's thread, sparing a hand-off to a worker and back; otherwise it is submitted to a
worker and its completion later comes through the completions queue. `drain` moves completions
already posted into `arrived` without admitting them (a Stop consults it to record a reply that
came but was not yet admitted).

When history ends (`history_ends`, the first time a live run goes past it): the calls the host
names as cut by a crash are answered `Err(Unknown(CUT_REASON))`, as completions that arrived
before any other; then the calls it asked to resend go out again under their own ids, with no
new Call fact.
"""

from __future__ import annotations

import os
from queue import Empty
from typing import Any, Callable, Optional

from flowrt.data.facts import Checkpoint, Completed, End, Faulted
from flowrt.data.values import Err, NotRun, Unknown, show
from flowrt.engine.describe import _same, describe
from flowrt.engine.interrupts import INTERRUPTS, Interruption
from flowrt.engine.outcomes import Incomplete, Matched, ResendRefused, RunCompleted, RunFaulted, _Finish
from flowrt.engine.state import OpenToolCall, RunState, diverge
from flowrt.history.trace import unrecordable

#: The reason an open call cut by a crash is closed with (`DriveOptions.cut`; seed 000 "Unknown").
CUT_REASON = "process ended while the call was out"


# ---- facts ----------------------------------------------------------------------------------------


def emit(run: RunState, fact, matches: Callable[[Any], bool], doing: str):
    """Record `fact`, or check it against the next recorded fact and return that one."""
    if run.hpos < run.hlen:
        rec = run.history[run.hpos]
        run.hpos += 1
        if not matches(rec):
            run.hpos -= 1
            diverge(run, f"the program {doing}, but the history records {describe(rec)}")
    elif run.replay:
        raise _Finish(Incomplete(f"history ends before the program does (it {doing})"))
    else:
        if run.at_end:
            history_ends(run)
        if run.unsent:  # the calls made before this fact go out first, as they were made
            send(run)
        run.recorder.record(fact)
        run.recorder.sync()
        rec = fact
    if type(fact) is not Checkpoint:
        run.since_cp += 1
        run.fresh = True
    return rec


def end(run: RunState, outcome):
    """Record End `outcome` (Completed or Faulted) and finish the drive with its outcome."""
    fact = End(outcome)
    if type(outcome) is Completed:

        def matches(r):
            return type(r) is End and type(r.end) is Completed and _same(r.end.value, outcome.value)

        doing = f"completes with {show(outcome.value)}"
    else:

        def matches(r):
            return (
                type(r) is End
                and type(r.end) is Faulted
                and r.end.message == outcome.message
                and r.end.line == outcome.line
                and os.path.basename(r.end.file) == os.path.basename(outcome.file)
            )

        doing = f"faults with {show(outcome.message)} at {outcome.file}:{outcome.line}"
    if type(outcome) is Completed and (run.hpos >= run.hlen or not matches(run.history[run.hpos])):
        why = unrecordable((outcome.value,))
        if why:  # a result beyond what a history can hold (trace.md, "Limits"): a fault
            end(run, Faulted(f"the result cannot be recorded: {why}", "<result>", 0))
    emit(run, fact, matches, doing)
    if run.hpos < run.hlen:
        diverge(run, f"the program has ended, and {describe(run.history[run.hpos])} is left unused")
    if run.replay:
        raise _Finish(Matched(run.history[run.hpos - 1]))
    if type(outcome) is Completed:
        raise _Finish(RunCompleted(outcome.value))
    raise _Finish(RunFaulted(outcome, run.fault_chain))


# ---- calls ----------------------------------------------------------------------------------------


def send(run: RunState):
    """Make the calls recorded since the last send durable in one commit, then send each (a call
    a Stop closed meanwhile is not sent; none is, today, since a Stop sends first)."""
    unsent = run.unsent
    run.recorder.sync()  # a Call is written before the call is sent
    opened = run.open
    batch: list = []
    while unsent:
        call = unsent.popleft()
        if opened.get(call.id) is call:
            dispatch(run, call, batch)
    if batch:  # the round's calls for workers, handed over at once, in the order they were made
        run.dispatcher.submit_many(batch)


def dispatch(run: RunState, call: OpenToolCall, batch: Optional[list] = None):
    """Send a recorded call to its implementation (its Call fact is already durable); with
    `batch`, a call for a worker is added to it instead, for `send` to hand over with the rest."""
    d = run.dispatcher
    spec = call.spec
    impl = d.bindings.lookup(spec)
    if impl is None:
        run.arrived.append((call.id, Err(NotRun(f"no implementation is bound for {spec.name}"))))
    elif (
        run.inline
        and (run.inline == "always" or not (run.ready or run.outstanding or run.arrived or run.unsent))
        and d.is_sync(impl)
    ):
        # Nothing else can happen until this call completes: the idle driver runs it itself
        # instead of handing it to a worker and waiting (docs/spec/execution.md).
        try:
            outcome = d.run_inline(impl, spec, call.args, call.type_args, call.id)
        except INTERRUPTS:  # Ctrl-C while it ran, or it called sys.exit / quit pdb: halts the run
            run.halted_in = (call, False)
            raise
        run.arrived.append((call.id, outcome))
    else:
        if batch is None or not hasattr(d, "submit_many"):
            d.submit(call.id, impl, spec, call.args, call.type_args)
        else:
            batch.append((call.id, impl, spec, call.args, call.type_args))
        run.outstanding += 1


def drain(run: RunState):
    """Move every completion already posted to `arrived` (replies that arrived, not admitted)."""
    if run.unsent:
        send(run)
    q = run.completions
    if q is None:
        return
    while run.outstanding:
        try:
            item = q.get_nowait()
        except Empty:
            return
        run.outstanding -= 1
        if type(item[1]) is Interruption:
            run.halted_in = (run.open.get(item[0]), True)
            raise item[1].exc
        run.arrived.append(item)


def history_ends(run: RunState):
    """History is exhausted and the run goes on live: first the calls a crash cut get their
    outcome, `Err(Unknown(CUT_REASON))`, as completions that arrived before anything else (so
    they are admitted first, in call order, each when the program next waits; a Stop that
    comes first closes the call with that reply); then the calls the host asked to resend go
    out again."""
    run.at_end = False
    cut, run.cut = run.cut, ()
    unknown = Err(Unknown(CUT_REASON))
    run.arrived.extendleft(reversed([(cid, unknown) for cid in cut if cid in run.open]))
    if run.resend:
        _resend_open(run)


def _resend_open(run: RunState):
    """History is exhausted: send the calls the host asked to resend again, under their own
    ids (no new Call fact; the one Reply comes when they answer). Flow never does this itself."""
    ids, run.resend = run.resend, set()
    for cid in [c for c in run.open if c in ids] + sorted(ids - set(run.open)):
        call = run.open.get(cid)
        if call is None:
            raise ResendRefused(
                f"call {cid} is not open when the history ends; only an open call can be sent again"
            )
        if call.spec is None:
            raise ResendRefused(
                f"call {cid} was carried across a checkpoint by a parked task; "
                f"only a call made after the checkpoint can be sent again"
            )
        dispatch(run, call)
