"""Tool calls: going out (Call, then dispatch) and coming back (Reply, admitted one at a time).

Out (`call`). A task's `ToolCall` request gets the id `<task>#<n>`. While history remains the
Call must match the next recorded fact and nothing is sent: the reply will be served from
history too. Once history is exhausted a replay stops (Incomplete), and a live run records the
Call and sends it only once a commit holds it (flowrt.engine.record.send: the calls made in one
scheduling round share that commit), so a crash never loses a call that may have had effects. An
argument beyond what a history can hold faults the caller.

In (`admit`). The scheduler admits exactly one event when no task can move: the next recorded
fact while history remains (it must be a Reply to an open call, and its value must fit the
call's result type, else the history is corrupt: flowrt.history.stored), else the next
completion, which is recorded and synced before its task sees it (a store's recorder commits a
Reply at once, without waiting for the disk: it survives the process, docs/spec/trace.md
"Durability"). While more completions already wait to be admitted, a Reply is left for the
commit the last of them makes (`sync_soon`): the replies that arrive together share one commit,
and one whose task computes meanwhile is committed by the recorder's flusher within
milliseconds. A completion for a call a
Stop closed meanwhile is dropped, and a PENDING outcome leaves the call open (the host is told;
history is not). Because one event is admitted only when everything else is quiet, the order of
admissions is the only nondeterminism a run has, and the history records it.
"""

from __future__ import annotations

from flowrt.data.facts import Call, Reply
from flowrt.data.requests import ToolCall
from flowrt.data.tasks import CALL, READY, Task, build_parked, has_hole
from flowrt.data.typedesc import names_types, type_text
from flowrt.data.values import Err, Malformed
from flowrt.engine import debug
from flowrt.engine.describe import _args_text, _locate_task, _same, describe
from flowrt.engine.interrupts import Interruption
from flowrt.engine.outcomes import Incomplete, _Finish
from flowrt.engine.record import history_ends
from flowrt.engine.state import OpenToolCall, RunState, classes_of, diverge, incomplete
from flowrt.engine.task_ops import fault, finish
from flowrt.engine.tools import PENDING
from flowrt.history.stored import CorruptHistory, misfit, reply_checker
from flowrt.history.trace import TraceError, unrecordable


# ---- calls out ------------------------------------------------------------------------------------


def call(run: RunState, task: Task, req: ToolCall):
    """`task`'s Tool call: check it against history, or record it and send it; the task waits."""
    spec = req.spec
    task.ncalls += 1
    cid = f"{task.id}#{task.ncalls}"
    args = req.args
    type_args = tuple(type_text(d) for d in req.type_args) if req.type_args else ()
    made = OpenToolCall(cid, spec, task, req.park, spec.name, args, req.type_args)
    if run.hpos < run.hlen:
        rec = run.history[run.hpos]
        if (
            type(rec) is not Call
            or rec.id != cid
            or rec.tool_id != spec.tool_id
            or (rec.type_args != type_args and not recorded_types(run, rec.type_args, req.type_args))
            or not _same(rec.args, args)
        ):
            _unrecordable_call(run, task, spec, args)  # as the live run found: a fault
            diverge(
                run,
                f"the program calls {spec.name}{_args_text(args)} as {cid}, but the "
                f"history records {describe(rec)}",
            )
        run.hpos += 1
        run.since_cp += 1
        run.fresh = True
        run.open[cid] = made
        task.call = made
        task.state = CALL
        return
    if run.replay:
        raise _Finish(Incomplete(f"history ends before the program does (it calls {spec.name} as {cid})"))
    if run.at_end:
        history_ends(run)
    try:
        run.recorder.record(Call(cid, spec.name, spec.tool_id, args, type_args))
    except TraceError:
        _unrecordable_call(run, task, spec, args)
        raise
    if run.sites is not None:  # where the program made it, for the host's record (call_times)
        run.sites(cid, *call_site(task))
    run.since_cp += 1
    run.fresh = True
    run.open[cid] = made
    task.call = made
    task.state = CALL
    # Sent with the calls the other ready tasks make in this round, after one commit holds them
    # all (flowrt.engine.record.send): a Call is durable before its call is sent.
    run.unsent.append(made)


#: (id(code), f_lasti) -> (code, (file, line) or None): where a frame's instruction is, kept (a
#: line table lookup a Call otherwise, ~3.6k instructions of a fan-out's call); the code object is
#: kept with it so that an id reused by another code object is not taken for it.
_SITES: dict = {}


def call_site(task: Task) -> tuple[str, int]:
    """The Flow file and line of the call `task` just made: its innermost frame of generated Flow
    code (a `.flow` code object: flowrt.data.generated maps generated lines to Flow lines)."""
    for gen in reversed(task.stack):
        frame = gen.gi_frame
        if frame is None:
            continue
        code = frame.f_code
        key = (id(code), frame.f_lasti)
        hit = _SITES.get(key)
        if hit is None or hit[0] is not code:
            name = code.co_filename
            hit = (code, (name, frame.f_lineno) if name.endswith(".flow") else None)
            if len(_SITES) >= 65536:
                _SITES.clear()
            _SITES[key] = hit
        if hit[1] is not None:
            return hit[1]
    return _locate_task(task)


def _unrecordable_call(run: RunState, task: Task, spec, args):
    """An argument beyond what a history can hold (trace.md, "Limits") faults the caller: the
    call is not made. Checked where the live run records the Call, and where a replay finds
    another fact than that Call (so both see the same fault)."""
    why = unrecordable(args)
    if why:
        fault(run, task, f"the arguments of {spec.name} cannot be recorded: {why}", *_locate_task(task))


def recorded_types(run: RunState, texts: tuple, descs: tuple) -> bool:
    """Whether type argument texts the history records name `descs`, though written otherwise
    (a one-element tuple `(Int)` from an older flowrt: flowrt.data.typedesc.names_types)."""
    return names_types(texts, descs, classes_of(run))


# ---- replies in -----------------------------------------------------------------------------------


def admit(run: RunState) -> bool:
    """Admit one event (a Reply); False when there is none to admit."""
    if run.hpos < run.hlen:
        fact = run.history[run.hpos]
        if type(fact) is not Reply:
            waiting = ", ".join(run.open) or "nothing"
            diverge(
                run, f"the program waits (open calls: {waiting}), but the history records {describe(fact)}"
            )
        made = run.open.get(fact.id)
        if made is None:
            diverge(
                run, f"the history records a Reply to {fact.id}, but the program has no open call {fact.id}"
            )
        if has_hole(fact.reply):
            incomplete(run, f"needs the reply to {fact.id} ({made.tool}), which is a hole")
        check = made.want
        if check is None:
            check = made.want = reply_checker(made.spec, made.type_args)
        if not check(fact.reply):
            corrupt_reply(made, fact.reply, run.first + run.hpos)
        run.hpos += 1
        run.since_cp += 1
        run.fresh = True
        deliver(run, made, fact.reply)
        return True
    if run.replay:
        return False
    if run.at_end:
        history_ends(run)
    arrived = run.arrived
    recorder = run.recorder
    while True:
        if arrived:
            cid, outcome = arrived.popleft()
        elif run.outstanding:
            cid, outcome = run.completions.get()
            run.outstanding -= 1
        else:
            due = run.idle(tuple(run.open)) if run.idle is not None else None
            if not due:
                return False
            arrived.extend(due)  # a test's virtual clock: its next timer fired (DriveOptions.idle)
            continue
        if type(outcome) is Interruption:  # its implementation raised KeyboardInterrupt, ...
            run.halted_in = (run.open.get(cid), True)
            raise outcome.exc
        made = run.open.get(cid)
        if made is None:  # closed by a Stop meanwhile
            continue
        if outcome is PENDING:  # left open on purpose: tell the host (its record, not history)
            note = getattr(recorder, "call_pending", None)
            if note is not None:
                note(cid)
            continue
        try:
            recorder.record(Reply(cid, outcome))
        except TraceError as e:  # admitted, but beyond what a history can hold (trace.md, "Limits")
            outcome = Err(Malformed(f"$: the reply cannot be recorded: {e}"))
            recorder.record(Reply(cid, outcome))
        if arrived or (run.outstanding and not run.completions.empty()):
            # more replies wait to be admitted: this one shares the commit the last of them makes
            # (before its task resumes), or the flusher's should this task compute meanwhile
            soon = getattr(recorder, "sync_soon", None)
            (soon or recorder.sync)()
        else:
            recorder.sync()
        failures = run.dispatcher.failures
        if failures and cid in failures:  # the exception behind Unknown/NotRun: the host's record
            debug.call_failed(recorder, cid, made.tool, outcome, failures.pop(cid))
        run.since_cp += 1
        run.fresh = True
        deliver(run, made, outcome)
        return True


def corrupt_reply(made: OpenToolCall, reply, n: int, how: str = "recorded"):
    """A reply from history that does not fit its call's type: the history is corrupt."""
    desc = getattr(made.want, "desc", None)
    why = misfit(desc, reply) if desc is not None else None
    raise CorruptHistory(
        n,
        f"the Reply {how} for {made.id} ({made.tool or 'a parked call'}) does not "
        f"fit {type_text(desc) if desc is not None else 'its call'}: "
        f"{why or 'a value of another type'}",
    )


def deliver(run: RunState, made: OpenToolCall, outcome):
    """The call's outcome reaches its task: it is ready again (or, with no frame, finished)."""
    del run.open[made.id]
    task = made.task
    task.call = None
    if made.park is None:
        value = outcome
    else:
        value = build_parked(made.park, outcome)
        task.parked = (made.id, made.park, value)
    if task.stack:
        task.resume = value
        task.state = READY
        run.ready.append(task)
    else:  # a parked task restored from a checkpoint: no frame, its value is built here
        finish(run, task, value)
