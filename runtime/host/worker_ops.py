"""The operations on a worker's runs that need no worker running: submit, deliver, cancel, status,
runs, wait_for_change. The CLI (`flow2py submit/reply/cancel`), the HTTP API and the Python client
call them; `flowrt.host.worker` re-exports them beside the `Worker` that acts on what they record.

They write only the host's records (flowrt.history.worker_records) and, for `submit`, the run's
Start (its input admitted first). A worker records the rest under its lease. Every refusal is a
`Refused` (flowrt.host.operations) with one line: `NoSuchRun`, `Conflict` (a duplicate run id, a
call that is not open, a run that has ended) or `DoesNotFit` (input or a reply that does not fit
its type: the admission message, e.g. `$.Ok: expected Text, got 5`). docs/spec/execution.md
("The worker") describes them.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Optional

from flowrt.data.facts import Completed, End
from flowrt.data.typedesc import DecodeError, type_text
from flowrt.data.values import Err, Malformed, show
from flowrt.history.store import RunExists, Store, StoreError, UnknownRun
from flowrt.history.tokens import Noting, admitting
from flowrt.history.trace import TraceError
from flowrt.engine.tools import admit
from flowrt.host.runs_view import program_name
from flowrt.host.operations import (
    prepare_fork,
    start_fact,
    Refused,
    Runnable,
    _recorded_type_args,
    call_finder,
    decode_input,
    issued_in,
    sqlite_problem,
)

__all__ = [
    "NoSuchRun",
    "Conflict",
    "DoesNotFit",
    "OpenCall",
    "RunStatus",
    "STATES",
    "submit",
    "deliver",
    "cancel",
    "status",
    "runs",
    "wait_for_change",
]

#: the states a worker's run is in (RunStatus.state)
STATES = ("submitted", "running", "paused", "completed", "faulted", "halted")


class NoSuchRun(Refused):
    """The store has no run of that id."""


class Conflict(Refused):
    """The request does not fit the run's state: a duplicate run id, a call that is not open, a
    run that has ended."""


class DoesNotFit(Refused):
    """Input or a reply that does not fit its type; `message` is the admission message."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class OpenCall:
    """An open call of a run: its id, Tool (qualified name), arguments as values and as Flow text,
    since when it has been left open (`pending`; None while it is out), its reply's type."""

    id: str
    tool: str
    args: tuple
    args_text: tuple[str, ...]
    since: Optional[float]
    reply_type: str


@dataclass(frozen=True)
class RunStatus:
    """A run as a worker's client sees it (`state` is one of STATES; `result` and `fault` are
    Flow text: `Resolved("...")`, `main.flow:3: integer division by zero`)."""

    run_id: str
    state: str
    program: str
    entry: str
    started: Optional[float]
    paused_since: Optional[float]
    facts: int
    open_calls: tuple[OpenCall, ...]
    result: Optional[str]
    fault: Optional[str]


def _load(store: Store, run_id: str):
    try:
        return store.host_records.load_run(run_id)
    except UnknownRun:
        raise NoSuchRun(f"unknown run {run_id!r}") from None
    except sqlite3.Error as e:
        raise Refused(sqlite_problem(e, "the store") or str(e)) from None
    except StoreError as e:
        raise Refused(str(e)) from None


def _writing(op, *args):
    try:
        return op(*args)
    except sqlite3.Error as e:
        raise Refused(sqlite_problem(e, "the store") or str(e)) from None
    except StoreError as e:
        raise Refused(str(e)) from None


# ---- submit ---------------------------------------------------------------------------------------


def submit(
    store: Store,
    prog: Runnable,
    *,
    program: str,
    entry: str = "main",
    input: Any = None,
    run_id: Optional[str] = None,
    meta: Optional[dict] = None,
) -> str:
    """Record a new run of `prog` (served by workers as `program`) for a worker to start: its input
    (a JSON-form object keyed by the entry's parameters) is admitted first, then its Start is
    recorded with the program's sources; the run id. Nothing is driven here."""
    if run_id is not None and (type(run_id) is not str or not run_id or len(run_id) > 200):
        raise Refused(f"run id {run_id!r}: expected text of 1 to 200 characters")
    fn, params = prog.entry(entry)
    try:
        args = decode_input(input, params, what="input", issued=issued_in(store))
    except Refused as e:
        raise DoesNotFit(str(e)) from None
    run_id = run_id or "run-" + secrets.token_hex(6)
    start = start_fact(prog, entry, args, params)
    meta = dict(meta or prog.meta(), program=program)  # the name runs_view.program_name reads
    return _record_submitted(store, prog, run_id, start, meta, program)


def _record_submitted(
    store: Store, prog: Runnable, run_id: str, start, meta: dict, program: str, then=()
) -> str:
    """Record run `run_id` (its Start, the facts `then` after it, the program's sources) with its
    submission for a worker in the same commit, so a worker never sees the run without it."""

    def submission(db) -> None:
        store.worker_records.submission_row(db, run_id, program, start.entry)

    try:
        store.history.create_run(run_id, start, prog.program.sources, meta, then=then, host_rows=submission)
    except RunExists:
        raise Conflict(f"run {run_id!r} already exists; choose another run id") from None
    except sqlite3.Error as e:
        raise Refused(sqlite_problem(e, "the store") or str(e)) from None
    except StoreError as e:
        raise Refused(str(e)) from None
    return run_id


# ---- fork -----------------------------------------------------------------------------------------


def fork(
    store: Store,
    prog: Runnable,
    run_id: str,
    checkpoint: int,
    *,
    program: str,
    new_run_id: Optional[str] = None,
) -> str:
    """Record a fork of checkpoint N of run `run_id` (made by `prog`, served as `program`) as a new
    run for a worker to drive, as `flow2py fork` makes it (flowrt.host.operations.prepare_fork,
    flowrt.host.forks): its Start names the parent and the checkpoint, the parked tasks' replies
    follow it, and its submission is written in the same commit; the new run id. A checkpoint
    holding a task parked on a call the parent never had answered is refused: the fork would have
    to make that call again as it starts, which only `flow2py fork` does (it drives the fork
    itself); a worker would take that call as cut by a crash."""
    if type(checkpoint) is not int or type(checkpoint) is bool or checkpoint < 1:
        raise Refused(f"checkpoint {checkpoint!r}: expected a checkpoint number (1, 2, ...)")
    if new_run_id is not None and (type(new_run_id) is not str or not new_run_id or len(new_run_id) > 200):
        raise Refused(f"run id {new_run_id!r}: expected text of 1 to 200 characters")
    _load(store, run_id)  # NoSuchRun first
    start, prelude, remade, _fn, meta = prepare_fork(store, prog, prog, run_id, checkpoint)
    if remade:
        raise Conflict(
            f"checkpoint {checkpoint} of run {run_id} holds a task parked on a call with no reply: the "
            f"fork would make that call again as it starts ({', '.join(remade)}), which a worker does "
            f"not do; fork it with `flow2py fork {run_id} --checkpoint {checkpoint}`"
        )
    new_run_id = new_run_id or "run-" + secrets.token_hex(6)
    meta = dict(meta, program=program)
    return _record_submitted(store, prog, new_run_id, start, meta, program, then=tuple(prelude))


# ---- deliver --------------------------------------------------------------------------------------


def _ended(store: Store, info) -> Optional[str]:
    if info.state in ("completed", "faulted"):
        return info.state
    if store.worker_records.cancelled(info.id):
        return "halted: cancelled"
    return None


def admit_reply(store: Store, prog: Runnable, info, call_id: str, tool_id: str, reply: Any):
    """The reply admitted against the Tool's result type (the runtime value), or DoesNotFit."""
    spec = prog.tool_spec(tool_id)
    if spec is None:
        raise Refused(f"run {info.id}: its program has no Tool {tool_id} for call {call_id}")
    type_args = ()
    if spec.type_params:
        type_args = _recorded_type_args(spec, call_id, call_finder(store, info.id, info, prog.classes), prog)
    refusals: list = []
    try:
        with admitting(Noting(issued_in(store), refusals)):
            value = admit(spec, reply, type_args)
    except DecodeError as e:
        raise DoesNotFit(str(e)) from None
    if refusals:
        raise DoesNotFit(str(refusals[-1]))
    if type(value) is Err and type(value._0) is Malformed:
        raise DoesNotFit(value._0._0)
    return value


def deliver(store: Store, run_id: str, call_id: str, reply: Any, prog: Optional[Runnable] = None) -> None:
    """Deliver the reply (a JSON-form value, `{"Ok": "Safari 17.4"}`) to open call `call_id`: it
    is admitted against the Tool's result type (with `prog`, the run's program; without it a
    worker admits it when it takes it, and drops one that does not fit, saying so in its log),
    then kept for a worker, which records it as the call's Reply and continues the run."""
    info = _load(store, run_id)
    ended = _ended(store, info)
    if ended:
        raise Conflict(f"run {run_id} has ended ({ended}); call {call_id} is not open")
    tools = dict(info.open_calls)
    if call_id not in tools:
        raise Conflict(
            f"call {call_id} is not open in run {run_id} (open calls: {', '.join(tools) or 'none'})"
        )
    if prog is not None:
        if prog.program.identity != info.program:
            raise Refused(f"run {run_id} did not start on program {prog.program.identity[:12]}")
        admit_reply(store, prog, info, call_id, tools[call_id], reply)
    try:
        data = json.dumps(reply, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise DoesNotFit(f"$: the reply is not JSON-form data: {e}") from None
    why = _writing(store.worker_records.deliver, run_id, call_id, data)
    if why == "cancelled":
        raise Conflict(f"run {run_id} has ended (halted: cancelled); call {call_id} is not open")
    if why == "not open":
        raise Conflict(f"call {call_id} is not open in run {run_id}")
    if why == "waiting":
        raise Conflict(f"call {call_id} of run {run_id} already has a reply waiting to be recorded")


# ---- cancel ---------------------------------------------------------------------------------------


def cancel(store: Store, run_id: str) -> None:
    """Halt the run for good: no End. A run no process holds is halted at once; one a worker
    holds commits nothing more and halts at its next scheduling point; a submitted run never
    starts. Its open calls stay open in history, and no reply or timer reaches them."""
    try:
        outcome = store.worker_records.request_cancel(run_id)
    except UnknownRun:
        raise NoSuchRun(f"unknown run {run_id!r}") from None
    except sqlite3.Error as e:
        raise Refused(sqlite_problem(e, "the store") or str(e)) from None
    if outcome in ("completed", "faulted"):
        raise Conflict(f"run {run_id} has already ended ({outcome})")
    if outcome == "cancelled":
        raise Conflict(f"run {run_id} has already ended (halted: cancelled)")


# ---- status ---------------------------------------------------------------------------------------


def _state(store: Store, info, submission, cancelled: bool) -> str:
    st = info.state
    if st in ("completed", "faulted"):
        return st
    if cancelled:
        return "running" if st == "running" else "halted"
    if st in ("running", "paused"):
        return st
    # left halted (not cancelled): a worker takes it: never started, or to recover
    if submission is not None and submission[3] is None:
        return "submitted"
    return "paused" if info.open_calls else "submitted"


def _open_calls(store: Store, info, prog: Optional[Runnable]) -> tuple[OpenCall, ...]:
    if not info.open_calls:
        return ()
    ids = [c for c, _ in info.open_calls]
    classes = prog.classes if prog is not None and prog.program.identity == info.program else None
    try:
        made = store.history.calls.open_call_facts(info.id, ids, classes=classes)
    except Exception:  # noqa: BLE001  (values of a program not at hand: shown without them)
        made = {}
    since = store.worker_records.pending_since(info.id)
    out = []
    for call_id, tool_id in info.open_calls:
        f = made.get(call_id)
        spec = prog.tool_spec(tool_id) if classes is not None else None
        args = tuple(f.args) if f is not None else ()
        out.append(
            OpenCall(
                call_id,
                f.tool if f is not None else (spec.name if spec is not None else tool_id),
                args,
                tuple(show(a) for a in args),
                since.get(call_id),
                type_text(spec.result) if spec is not None and spec.result is not None else "",
            )
        )
    return tuple(out)


def _end(store: Store, info, prog: Optional[Runnable]) -> tuple[Optional[str], Optional[str]]:
    if info.state not in ("completed", "faulted"):
        return None, None
    classes = prog.classes if prog is not None and prog.program.identity == info.program else None
    try:
        facts = store.history.facts(info.id, info.facts, classes=classes)
    except Exception:  # noqa: BLE001
        return None, None
    end = facts[-1] if facts and type(facts[-1]) is End else None
    if end is None:
        return None, None
    if type(end.end) is Completed:
        return show(end.end.value), None
    f = end.end
    return None, f"{f.file}:{f.line}: {f.message}"


def status(store: Store, run_id: str, prog: Optional[Runnable] = None) -> RunStatus:
    """The run's state, open calls (arguments as values with `prog`, the run's program), result or
    fault."""
    info = _load(store, run_id)
    records = store.worker_records
    return _status(store, info, records.submission(run_id), records.cancelled(run_id), prog)


def _status(store: Store, info, submission, cancelled: bool, prog: Optional[Runnable]) -> RunStatus:
    calls = _open_calls(store, info, prog)
    state = _state(store, info, submission, cancelled)
    result, fault = _end(store, info, prog)
    sinces = [c.since for c in calls if c.since is not None]
    return RunStatus(
        info.id,
        state,
        submission[0] if submission else program_name(info),
        info.entry,
        submission[2] if submission else info.created,
        max(sinces) if state == "paused" and sinces else None,
        info.facts,
        calls,
        result,
        fault,
    )


def runs(
    store: Store,
    *,
    state: Optional[str] = None,
    program: Optional[str] = None,
    limit: Optional[int] = None,
    offset: int = 0,
    prog: Optional[Runnable] = None,
) -> list[RunStatus]:
    """Every run, newest first, as RunStatus; filtered by state and program name."""
    if state is not None and state not in STATES:
        raise Refused(f"state {state!r}: expected one of {', '.join(STATES)}")
    records = store.worker_records
    # The state and program filters and the page are taken in SQL (WorkerRecords.runs_page); only
    # the runs of the page are read further (their records, open calls, end), so a page of 50 out
    # of 100,000 runs reads the records of 50. A run whose record is corrupt is left out of it.
    ids = records.runs_page(state, program, limit, offset)
    if ids is None:  # a store whose SQL cannot decide the state (neither backend): from each record
        return _runs_read(store, state, program, limit, offset, prog)
    out = []
    for run_id in ids:
        try:
            info = store.host_records.load_run(run_id)
        except (StoreError, TraceError):
            continue
        out.append(_status(store, info, records.submission(run_id), records.cancelled(run_id), prog))
    return out


def _runs_read(store: Store, state, program, limit, offset, prog) -> list[RunStatus]:
    """`runs` deciding the filters from each run's record (every record read)."""
    records = store.worker_records
    subs, cancelled = records.submissions(), records.cancelled_runs()
    picked = []
    for info in reversed(store.host_records.runs()):
        if info.state.startswith(("unreadable", "corrupt")):
            continue
        sub, halted = subs.get(info.id), info.id in cancelled
        if state is not None and _state(store, info, sub, halted) != state:
            continue
        if program is not None and (sub[0] if sub else program_name(info)) != program:
            continue
        picked.append((info, sub, halted))
    picked = picked[offset:] if limit is None else picked[offset : offset + limit]
    return [_status(store, info, sub, halted, prog) for info, sub, halted in picked]


#: a wait woken by notices (PostgreSQL) still looks this often: a run whose process died changes
#: state with no write to tell of it
WATCH_LOOK = 1.0


def wait_for_change(store: Store, run_id: str, seen_facts: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the run to hold more facts than `seen_facts` or to change
    state out of running: True when it did (the caller reads `status` again). On PostgreSQL the
    wait LISTENs (each commit of the run, its release and its halt NOTIFY it: flowrt.history.pg
    `RunWatch`), looking again on each notice and every WATCH_LOOK seconds; on SQLite, or until
    the LISTEN connection is up, it polls the run, 5 ms doubling to 100 ms."""
    deadline = time.monotonic() + max(0.0, timeout)
    run_watch = getattr(store.file, "run_watch", None)
    if run_watch is None:
        return _poll_for_change(store, run_id, seen_facts, deadline)
    watch = run_watch()
    with watch.watching(run_id):
        watch.wait_ready(min(0.5, max(0.0, deadline - time.monotonic())))
        state = _load(store, run_id).state
        delay = 0.005
        while True:
            mark = watch.mark(run_id)  # before the look: a commit after it is not missed
            info = _load(store, run_id)
            if info.facts != seen_facts or info.state != state or info.state in ("completed", "faulted"):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if watch.ready:
                watch.wait(run_id, mark, min(WATCH_LOOK, left))
            else:  # no LISTEN connection (yet): poll meanwhile
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.1)


def _poll_for_change(store: Store, run_id: str, seen_facts: int, deadline: float) -> bool:
    state = _load(store, run_id).state
    delay = 0.005
    while True:
        info = _load(store, run_id)
        if info.facts != seen_facts or info.state != state or info.state in ("completed", "faulted"):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.1)
