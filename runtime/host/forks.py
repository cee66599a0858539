"""Forks: a new run from another run's checkpoint, its arguments rebuilt, never decoded.

Seed 000, "Forks": a new run may start from any checkpoint of another run, on the same program
or a newer version; the checkpoint's arguments "are rebuilt as the program made them" and must
fit the fork's parameter types. Restoring "rebuilds the values the program made, opaque values
and host tokens included; it is not decoding". docs/spec/execution.md ("Fork") states the rules;
here is how the host (flowrt.host.operations.fork) applies them.

* Rebuilding. The checkpoint's stored canonical values are read with the *fork's* program's class
  table, so every record and enum, opaque ones included, is an instance of the fork's own class;
  a type the fork's program no longer declares, or declares with another shape, refuses the fork.
  Each argument is then checked against its parameter's descriptor under the RESTORE policy
  (flowrt.history.tokens): the check walks the value like admission does, but an opaque value and a host
  token the program made pass as they are (a token in a checkpoint is not issued again, and is
  not refused: its host answers a call using a token it no longer knows with NotRun).
* Parked tasks. A checkpoint may hold tasks parked on their only Tool call. In the fork each
  becomes a task of its own, named `f:<its id in the parent>` (the fork's root is `root` again,
  so the parent's ids would collide with the fork's), parked on call `f:<id>#1`:
  - if the parent recorded a reply to the parked call (before or after the checkpoint, or in a
    Stop that closed it), the fork records that reply as its own Reply, right after Start, and
    the task is finished from it before the root runs: the world answered that call once, and a
    fork does not ask again;
  - otherwise the fork makes the call again under its own id: the host records a Call with the
    parent's Tool and arguments right after Start and the driver sends it (as a resend of the
    recorded call: one Call, one Reply).
  The fork's Start holds the renamed ParkedTasks; the facts after it make its history whole, so
  resuming or replaying the fork never reads the parent. The store commits the Start and them in
  one transaction (`store.history.create_run`'s `then`): a crash never leaves a Start without them.
"""

from __future__ import annotations

from typing import Optional

from flowrt.data.decoding import DecodeError, decode
from flowrt.data.facts import Call, Checkpoint, ParkedTask, Reply, Stop
from flowrt.history.store import Store, StoreError
from flowrt.data.tasks import ctor_class, has_hole, holds_parked, rebuild, walk
from flowrt.history.tokens import RESTORE, admitting
from flowrt.history.trace import MissingClass, TraceError
from flowrt.data.typedesc import T, TypeTextError, fields_of, parse_type_text, subst
from flowrt.data.values import ClassTable, Enum, Record, Result

__all__ = ["ForkRefused", "FORK_PREFIX", "fork_checkpoint", "rebuilt_args", "parked_in_fork", "reshaped"]

#: A parked task restored in a fork is named with this prefix before its id in the parent.
FORK_PREFIX = "f:"


class ForkRefused(Exception):
    """The fork cannot begin from this checkpoint (a one-line reason; nothing was recorded)."""


def fork_checkpoint(
    store: Store, run_id: str, n: int, classes: ClassTable, parent_classes: ClassTable
) -> Checkpoint:
    """Checkpoint `n` of run `run_id`, its stored values rebuilt with `classes` (the fork's program's
    table): the program's own values, as it made them."""
    try:
        return store.history.checkpoint(run_id, n, classes=classes).fact
    except MissingClass as e:
        raise ForkRefused(
            f"checkpoint {n} holds a value of {e.decl} (constructor {e.ctor}), which "
            f"the fork's program does not declare; give the fork --input instead"
        ) from None
    except (StoreError, TraceError, TypeError) as e:
        if classes is parent_classes:
            raise ForkRefused(str(e)) from None
        failed = e
    # Readable with the parent's own classes: a type the fork's program declares with another shape.
    try:
        theirs = store.history.checkpoint(run_id, n, classes=parent_classes).fact
    except (StoreError, TraceError, TypeError):
        raise ForkRefused(str(failed)) from None
    what = reshaped(theirs.args, classes) or "a type the fork's program declares differently"
    raise ForkRefused(f"checkpoint {n} holds a value of {what}; give the fork --input instead")


def rebuilt_args(cp: Checkpoint, params) -> tuple:
    """The checkpoint's arguments (already rebuilt with the fork's classes), checked against the
    fork's parameter types: the program's own values, opaque ones, tokens and parked tasks
    included, are taken as they are; a value that does not fit refuses the fork with its path."""
    n = cp.checkpoint
    if len(params) != len(cp.args):
        raise ForkRefused(
            f"checkpoint {n} holds {len(cp.args)} arguments but {cp.function} takes {len(params)}"
        )
    args = []
    with admitting(RESTORE):
        for (name, desc), value in zip(params, cp.args):
            if has_hole(value):
                raise ForkRefused(
                    f"checkpoint {n}: argument {name} holds a hole; give the fork --input instead"
                )
            try:
                args.append(decode(desc, value, f"$.{name}"))
            except DecodeError as e:
                raise ForkRefused(f"checkpoint {n} does not fit the fork's parameters: {e}") from None
            except TypeError as e:  # a generic type left unresolved in the fork's descriptors
                raise ForkRefused(
                    f"checkpoint {n} does not fit the fork's parameters: $.{name}: {e}"
                ) from None
            except RecursionError:
                raise ForkRefused(
                    f"checkpoint {n}: argument {name} is nested too deeply to check against "
                    f"the fork's parameter type; give the fork --input instead"
                ) from None
    return tuple(args)


def parked_in_fork(store: Store, run_id: str, cp: Checkpoint, args: tuple, prog) -> tuple[tuple, list, list]:
    """(arguments with each parked task renamed into the fork, the facts the fork records right
    after its Start, the ids of the calls among them the fork makes again)."""
    if not holds_parked(args):
        return args, [], []
    parked: dict[str, ParkedTask] = {}
    rebuild(args, lambda p: parked.setdefault(p.task, p), (ParkedTask,))
    renamed: dict[str, ParkedTask] = {}
    prelude: list = []
    remade: list[str] = []
    for p in parked.values():
        task = FORK_PREFIX + p.task
        call_id = f"{task}#1"
        call, reply = _parent_call(store, run_id, p.call, prog)
        what = f"checkpoint {cp.checkpoint}: task {p.task}, parked on {p.call}"
        _check_ctor(p, prog, what)
        spec = prog.tool_spec(call.tool_id) if call is not None else None
        if call is not None and spec is None:
            raise ForkRefused(f"{what}, calls {call.tool}, which the fork's program does not declare")
        # a generic Tool's call at the type its Call fact records, read back in the fork's program
        targs = _type_args(spec, call, prog, what) if spec is not None and spec.type_params else ()
        if reply is not None:
            if spec is not None and (targs or not spec.type_params):
                _check_reply(spec, reply, what, targs)
            prelude.append(Reply(call_id, reply))
        else:
            if call is None:
                raise ForkRefused(
                    f"{what}: the parent recorded neither a reply to the call nor the call "
                    f"itself (archived and deleted), so the fork cannot rebuild the task"
                )
            prelude.append(Call(call_id, spec.name, spec.tool_id, tuple(call.args), tuple(call.type_args)))
            remade.append(call_id)
        renamed[p.task] = ParkedTask(task, call_id, p.ctor, p.data)
    return rebuild(args, lambda p: renamed[p.task], (ParkedTask,)), prelude, remade


def reshaped(value, classes) -> Optional[str]:
    """The first record or enum constructor in `value` (read with its own program's classes) that
    `classes`, another program's table, declares with another number of fields, as text; or None."""
    for v in walk(value):
        if isinstance(v, (Record, Enum)):
            t = type(v)
            mine = classes.get((t.__flow_decl__, t.__flow_ctor__))
            if mine is not None and len(mine.__flow_fields__) != len(t.__flow_fields__):
                return (
                    f"{t.__flow_decl__} (constructor {t.__flow_ctor__}: {len(mine.__flow_fields__)} "
                    f"fields in the fork's program, {len(t.__flow_fields__)} in the checkpoint)"
                )
    return None


def _parent_call(store: Store, run_id: str, call_id: str, prog) -> tuple[Optional[Call], object]:
    """The parent's Call fact for `call_id` and the reply it recorded to it (None if none)."""
    call, reply = None, None
    try:
        facts = store.history.calls.facts_of_call(run_id, call_id, classes=prog.classes)
    except MissingClass as e:
        raise ForkRefused(
            f"run {run_id} holds a value of {e.decl} (constructor {e.ctor}) for call "
            f"{call_id}, which the fork's program does not declare"
        ) from None
    except (StoreError, TraceError, TypeError) as e:
        raise ForkRefused(
            f"run {run_id}: the facts of call {call_id} cannot be read with the fork's program: {e}"
        ) from None
    for _n, f in facts:
        t = type(f)
        if t is Call and f.id == call_id:
            call = f
        elif t is Reply and f.id == call_id and reply is None:
            reply = f.reply
        elif t is Stop and reply is None:
            for c in f.closed:
                if c.call == call_id and c.has_reply:
                    reply = c.reply
    if reply is not None and has_hole(reply):
        raise ForkRefused(f"the parent's reply to {call_id} is a hole: the fork cannot be finished from it")
    return call, reply


def _check_ctor(p: ParkedTask, prog, what: str) -> None:
    """The parked task's constructor exists in the fork's program and its data fits it."""
    try:
        cls, at = ctor_class(p.ctor, prog.classes)
    except LookupError:
        raise ForkRefused(
            f"{what}, wraps its reply in {p.ctor}, which the fork's program does not declare"
        ) from None
    if cls is None:
        return  # the bare reply
    fields = list(fields_of(cls))
    if len(fields) != len(p.data) + 1:
        raise ForkRefused(
            f"{what}, wraps its reply in {p.ctor}, which the fork's program declares with "
            f"{len(fields)} fields, not {len(p.data) + 1}"
        )
    del fields[at]
    with admitting(RESTORE):
        for i, (desc, value) in enumerate(zip(fields, p.data)):
            try:
                decode(desc, value, f"$.{p.ctor}[{i}]")
            except TypeError:  # a generic constructor's field: its type needs the task's type arguments
                continue
            except DecodeError as e:
                raise ForkRefused(f"{what}: its data does not fit the fork's program: {e}") from None


def _type_args(spec, call, prog, what: str) -> tuple:
    """The descriptors of a generic Tool call's recorded type arguments, in the fork's program
    (None when the parent's Call fact is not kept: the reply is then taken as recorded)."""
    if call is None:
        return ()
    try:
        return tuple(parse_type_text(t, prog.classes) for t in call.type_args)
    except TypeTextError as e:
        raise ForkRefused(
            f"{what}: {call.tool}'s recorded type argument {e} (in the fork's program)"
        ) from None


def _check_reply(spec, reply, what: str, type_args: tuple = ()) -> None:
    """The parent's reply fits the fork's Tool: Result<T, ToolProblem<E>> of its `Result<T, E>`
    (a generic Tool's at the call's type arguments)."""
    res = subst(spec.result, type_args) if type_args else spec.result
    desc = (
        T.ResultOf(res.args[0], T.ToolProblemOf(res.args[1]))
        if res is not None and res.cls is Result
        else None
    )
    if desc is None:
        return
    with admitting(RESTORE):
        try:
            decode(desc, reply, "$")
        except (DecodeError, TypeError) as e:
            raise ForkRefused(
                f"{what}: the parent's reply does not fit {spec.name} in the fork's program: {e}"
            ) from None
