"""Checkpoints: when one is taken, what it holds, and how a run begins again from it.

Taking (docs/spec/execution.md, "Checkpoints"). A checkpoint may be taken only at a tail call
made by the root task's outermost frame to a top-level function, and only at the first such
call since a fact (`fresh`): there the root has no other frame, so the call's function and
arguments are the whole of its state. The other live tasks must each be *parked*: blocked on
(or just finished from) their only Tool call, with no frame of their own left to lose. Each
becomes a ParkedTask in the arguments (its id, the call it waits on, and how to build its value
from the reply); a task the arguments do not hold, or a function value in them, makes the tail
call ineligible. A live run takes one when `checkpoint_every` facts were recorded since the last;
while history remains it takes one exactly where the history records one (and diverges if it
cannot). Taking one renames the root `c<n>:root` and restarts its call numbering, so the ids
after a checkpoint do not depend on what came before it.

Restoring. Beginning at a Checkpoint fact resolves its function by decl id, checks the
arguments against its parameter types and each parked task against its constructor (a misfit is
a corrupt history, flowrt.history.stored), rebuilds the arguments with a fresh Task for each
ParkedTask (its call reopened, owned by the root frame in argument order, the order a
continuing run also uses), and starts the root with the call. A
parked task whose reply was recorded before the checkpoint is finished at once, in reply order,
from `carried_replies` or the earlier facts given, since the archive may hold them elsewhere.

Forks. A fork's Start may hold parked tasks too (renamed `f:<id>` by the host, flowrt.host.forks):
beginning at it, the facts right after Start settle each one, a Reply (the parent's reply:
carried, so the task is finished before the root runs) or a Call (its call made again in the
fork, left open for the host to send); then the tasks are restored as from a checkpoint, under a
root named `root`, so a fork's history never needs its parent's.
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence

from flowrt.data.facts import Call, Checkpoint, ParkedTask, Reply, Start
from flowrt.data.requests import TailCall
from flowrt.data.tasks import (
    CALL,
    FINISHED,
    Task,
    build_parked,
    ctor_class,
    ctor_text,
    has_hole,
    rebuild,
    scan,
    walk,
)
from flowrt.data.typedesc import TypeTextError, parse_type_text, type_text
from flowrt.engine.calls import corrupt_reply, recorded_types
from flowrt.engine.describe import _args_text, _same, describe
from flowrt.engine.record import emit
from flowrt.engine.state import OpenToolCall, RunState, classes_of, diverge, fact_no, incomplete
from flowrt.engine.task_ops import finish
from flowrt.history.stored import CorruptHistory, args_misfit, checker, fields_or_any, misfit, reply_checker
from flowrt.history.trace import TraceError


def latest_checkpoint(history: Sequence, first: int = 1) -> Optional[int]:
    """The fact number of the last Checkpoint in `history` (numbered from `first`), or None."""
    for i in range(len(history) - 1, -1, -1):
        if type(history[i]) is Checkpoint:
            return first + i
    return None


# ---- taking one ----------------------------------------------------------------------------------


def candidate(run: RunState, tc: TailCall, flow):
    """A tail call by the root's outermost frame to a top-level function, the first since a
    fact: the one place a checkpoint may be taken (docs/spec/execution.md)."""
    run.fresh = False
    serving = run.hpos < run.hlen
    if serving:
        if type(run.history[run.hpos]) is not Checkpoint:
            return
    elif run.replay or not run.every or run.since_cp < run.every:
        return
    # a typed function's first argument is its type arguments (abi.md), not a Flow argument
    descs, call_args = (tc.args[0], tc.args[1:]) if flow.typed else (tc.type_args, tc.args)
    type_args, why = _type_arg_texts(run, descs, flow.typed)
    args = None
    if type_args is not None:
        args, why = _checkpoint_args(run, call_args)
    if args is None:
        if serving:
            diverge(
                run,
                f"the program cannot take a checkpoint at its tail call to "
                f"{flow.decl} ({why}), but the history records "
                f"{describe(run.history[run.hpos])}",
            )
        return
    n = run.cp_count + 1
    fact = Checkpoint(n, flow.decl, type_args, args)
    try:
        emit(
            run,
            fact,
            lambda r: (
                type(r) is Checkpoint
                and r.checkpoint == n
                and r.function == flow.decl
                and (r.type_args == type_args or recorded_types(run, r.type_args, descs))
                and _same(r.args, args)
            ),
            f"takes checkpoint {n} at {flow.decl}{_args_text(args)}",
        )
    except TraceError:  # arguments beyond what a history can hold: no checkpoint here (live)
        return
    run.cp_count = n
    run.since_cp = 0
    root = run.root
    root.id = f"c{n}:root"
    root.ncalls = 0
    root.nspawns = 0


def _type_arg_texts(run: RunState, descs: tuple, typed: bool) -> tuple[Optional[tuple], str]:
    """The type arguments as texts, or (None, why not). A function or task type has no
    descriptor, hence no text; a typed function's must also read back as the same
    descriptors when the checkpoint is restored (a name two modules declare would not)."""
    classes = classes_of(run)
    texts = []
    for d in descs:
        try:
            text = type_text(d)
        except TypeError:  # a function or task type (or one inside it) has no descriptor
            return None, "a type argument is a function or task type, which a checkpoint cannot record"
        if typed:
            try:
                back = parse_type_text(text, classes)
            except TypeTextError as e:
                return None, f"its type argument {e}"
            if back != d:
                return None, f"its type argument `{text}` does not name one type of the program"
        texts.append(text)
    return tuple(texts), ""


def _checkpoint_args(run: RunState, args) -> tuple[Optional[tuple], str]:
    """The arguments with parked tasks as ParkedTask, or (None, why not)."""
    root = run.root
    others = [t for t in run.live if t is not root]
    for t in others:
        if t.state == FINISHED:
            # finished from its parked call (its reply arrived): still parked for a checkpoint
            p = t.parked
            if p is not None and not t.settled and t.ncalls <= 1 and not t.nspawns and t.value is p[2]:
                continue
        else:
            call = t.call
            if (
                t.state == CALL
                and call is not None
                and call.park is not None
                and len(t.stack) <= 1
                and t.ncalls <= 1
            ):
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


# ---- beginning at one ----------------------------------------------------------------------------


def begin_at_checkpoint(run: RunState, cp: Checkpoint, fn=None, root_id: Optional[str] = None):
    """Begin at `cp`; `fn` and `root_id` only for a fork's Start holding parked tasks (begin_fork)."""
    n = cp.checkpoint
    fn = fn or run.resolve(cp.function)
    if fn is None:  # the program has none: this history is not the program's
        raise CorruptHistory(
            fact_no(run) - 1,
            f"checkpoint {n} names function {cp.function!r}, which the program does not have",
        )
    if has_hole(cp.args):
        incomplete(run, f"checkpoint {n} holds a hole in its arguments")
    # the fact the arguments are stored in: this Checkpoint, or a fork's Start (fact 1)
    at = fact_no(run) - 1 if root_id is None else 1
    what = f"checkpoint {n}" if root_id is None else "the fork's Start"
    why = args_misfit(fn, cp.args, allow_parked=True)
    if why:
        raise CorruptHistory(at, f"{what}: its arguments do not fit {cp.function}: {why}")
    root = Task(root_id or f"c{n}:root")
    run.root = root
    run.cp_count = n
    restored: dict[str, Task] = {}
    order: list[Task] = []
    classes = classes_of(run)
    flow = getattr(fn, "__flow__", None)
    if flow is not None and flow.typed:
        # its type arguments, read back from their texts: taking the checkpoint made sure
        # they name the same descriptors (`_type_arg_texts`)
        try:
            targs = tuple(parse_type_text(t, classes) for t in cp.type_args)
        except TypeTextError as e:
            raise CorruptHistory(at, f"{what}'s type argument {e}") from None
        fn = functools.partial(fn, targs)

    def restore(p: ParkedTask) -> Task:
        t = restored.get(p.task)
        if t is None:
            if p.call in run.open:
                raise CorruptHistory(at, f"{what} parks two tasks on call {p.call}")
            cls, pos, want = _parked_shape(run, p, at, what)
            spec = run.parked_specs.get(p.call)
            t = Task(p.task, owner=root, odepth=0)
            t.state = CALL
            t.ncalls = 1
            made = _call_fact(run, p.call)
            tool = made.tool if made else (spec.name if spec is not None else "")
            t.call = OpenToolCall(
                p.call, None, t, (cls, tuple(p.data), pos), tool, made.args if made else None, want=want
            )
            run.open[p.call] = t.call
            restored[p.task] = t
            order.append(t)
        elif t.call is None or t.call.id != p.call:
            raise CorruptHistory(at, f"{what} parks task {p.task} on two calls")
        return t

    args = rebuild(tuple(cp.args), restore, (ParkedTask,))
    for t in order:
        root.owned.setdefault(0, {})[t] = None
        run.live[t] = None
    _finish_answered(run, order)
    root.start = lambda: fn(*args)
    run.ready.append(root)


def _parked_shape(run: RunState, p: ParkedTask, at: int, what: str):
    """(constructor class, reply position, check of its reply) of a parked task from a
    checkpoint, refusing one its program cannot rebuild: the constructor unknown, or its
    data not fitting the constructor's other fields (flowrt.history.stored)."""
    try:
        cls, pos = ctor_class(p.ctor, classes_of(run))
    except (LookupError, ValueError):
        raise CorruptHistory(
            at,
            f"{what}: task {p.task} is parked with constructor {p.ctor!r}, which the program does not have",
        ) from None
    if cls is None:
        if p.data:
            raise CorruptHistory(at, f"{what}: task {p.task} is parked with data but no constructor")
        return None, 0, reply_checker(run.parked_specs.get(p.call))
    fields = fields_or_any(cls)
    if not 0 <= pos <= len(p.data) or len(fields) != len(p.data) + 1:
        raise CorruptHistory(
            at,
            f"{what}: task {p.task}'s constructor {p.ctor} takes "
            f"{len(fields)} value(s), not {len(p.data) + 1}",
        )
    for i, (desc, x) in enumerate(zip(fields[:pos] + fields[pos + 1 :], p.data)):
        why = misfit(desc, x, f"$.{p.task}[{i}]")
        if why:
            raise CorruptHistory(at, f"{what}: task {p.task}'s data does not fit {p.ctor}: {why}")
    return cls, pos, checker(fields[pos])


def _finish_answered(run: RunState, restored: list):
    """Restored parked tasks whose reply is recorded before the checkpoint are finished, in
    the order their replies were recorded (seed 000: "or is finished if the reply is
    recorded"). The replies come from `carried_replies` (the host reads them wherever they
    are kept, archived or not), else from the facts before the checkpoint in `history`."""
    if not restored:
        return
    by_call = {t.call.id: t for t in restored}
    found: list = []
    for cid, reply in run.carried.items():
        if cid in by_call:
            found.append((cid, reply))
    have = {cid for cid, _ in found}
    earlier = []
    for f in run.history[: run.hpos - 1]:  # the facts given before the checkpoint
        if type(f) is Reply and f.id in by_call and f.id not in have:
            earlier.append((f.id, f.reply))
            have.add(f.id)
    for cid, reply in found + earlier:
        t = by_call[cid]
        if has_hole(reply):
            incomplete(
                run, f"needs the reply to {cid}, carried by checkpoint {run.cp_count}, which is a hole"
            )
        call = t.call
        if not call.want(reply):
            corrupt_reply(call, reply, fact_no(run) - 1, f"before checkpoint {run.cp_count}")
        del run.open[cid]
        t.call = None
        value = build_parked(call.park, reply)
        t.parked = (cid, call.park, value)
        finish(run, t, value)


# ---- beginning a fork ----------------------------------------------------------------------------


def begin_fork(run: RunState, entry, start: Start) -> bool:
    """Begin at a fork's Start that holds parked tasks (flowrt.host.forks; docs/spec/execution.md,
    "Fork"); False when it holds none. The facts right after Start settle each task, in any
    order: a Reply (the parent's reply) finishes it at once, before the root runs, as a reply
    carried by a checkpoint does; a Call is its call made again in the fork, which stays open
    (the host sends it, as a resend). Then the tasks are restored as from a checkpoint."""
    calls = list(dict.fromkeys(v.call for v in walk(start.input) if type(v) is ParkedTask))
    if not calls:
        return False
    waiting, remade = set(calls), {}
    while waiting and run.hpos < run.hlen:
        f = run.history[run.hpos]
        if type(f) not in (Reply, Call) or f.id not in waiting:
            break
        waiting.discard(f.id)
        run.hpos += 1
        run.since_cp += 1
        if type(f) is Reply:
            run.carried[f.id] = f.reply
        else:
            remade[f.id] = f
    if waiting:
        cid = next(c for c in calls if c in waiting)
        diverge(
            run,
            f"the fork's Start holds a task parked on {cid}, but the history records "
            f"neither that call made again nor its reply right after the Start",
        )
    begin_at_checkpoint(run, Checkpoint(0, start.entry, (), tuple(start.input)), fn=entry, root_id="root")
    for cid, f in remade.items():
        call = run.open[cid]
        call.tool, call.args = f.tool, tuple(f.args)
        if not run.replay:
            try:
                req = _request_of(run, f)
            except LookupError as e:  # the fork's own Call names what its program lacks
                raise CorruptHistory(run.first + run.history.index(f), str(e)) from None
            call.spec, call.type_args = req.spec, req.type_args
    return True


def _request_of(run: RunState, call: Call):
    """The ToolCall of a call made again in a fork: the program's Tool function (its whole body
    is the call, abi.md "Parkable tasks") yields it; a generic Tool's is given the type
    arguments the Call fact records (read back by name)."""
    fn = run.resolve(call.tool_id)
    if fn is None:
        raise LookupError(f"no Tool {call.tool_id!r} to make the fork's call {call.id} with")
    if getattr(getattr(fn, "__flow__", None), "typed", False):
        classes = classes_of(run)
        try:
            fn = functools.partial(fn, tuple(parse_type_text(t, classes) for t in call.type_args))
        except TypeTextError as e:
            raise LookupError(f"the fork's call {call.id}: its type argument {e}") from None
    gen = fn(*call.args)
    try:
        req = gen.send(None)
    finally:
        gen.close()
    return req


def _call_fact(run: RunState, call_id: str):
    """The Call fact of a parked task's call: in the facts given before the checkpoint, else
    among `carried_calls` (the host reads it from the store), else None."""
    for f in reversed(run.history[: run.hpos]):
        if type(f) is Call and f.id == call_id:
            return f
    return run.carried_calls.get(call_id)
