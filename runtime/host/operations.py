"""flowrt.host: the host operations on runs, for a program the host already has in Python.

A host application that imports a package built by `flow2py build` starts, resumes and replays
runs in code with this module, on the same store the CLI uses, without the compiler:

    import support_pkg
    from flowrt.host import Host

    host = Host(".flow/runs.db")                      # bindings: flowrt.BINDINGS by default
    report = host.start(support_pkg.PROGRAM, input={"ticket": "Login fails on Safari"})
    report = host.resume(support_pkg.PROGRAM, report.run_id, replies={"c1:root#2": {"Ok": "17.4"}})
    print(host.replay(support_pkg.PROGRAM, report.run_id).text)      # Matched

A run always continues on the exact program it started with: resume, replay and history refuse a
program whose identity differs from the run's Start (flow2py compiles the run's stored sources
instead; flow2py/host.py). Every refusal is a `Refused` with a one-line message and the CLI's exit
code; a refusal records nothing, and nothing recorded is ever rewritten.
docs/spec/execution.md ("Host operations") describes each operation.
"""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from flowrt.engine import drive as drv
from flowrt.engine.record import CUT_REASON
from flowrt.data.facts import Call, Checkpoint, ParkedTask, Reply, Start, Stop
from flowrt.history.history_view import to_html, to_text
from flowrt.engine.interrupts import INTERRUPTS, Shielded, deferred, reason
from flowrt.data.generated import Program
from flowrt.data.requests import ToolSpec
from flowrt.host.forks import ForkRefused, fork_checkpoint, parked_in_fork, rebuilt_args
from flowrt.history.store import RunBusy, SqliteRecorder, Store, StoreError
from flowrt.history.stored import CorruptHistory
from flowrt.data.tasks import rebuild
from flowrt.history.tokens import NONE_ISSUED, Issued, Noting, admitting
from flowrt.engine.tools import BINDINGS, Bindings, admit, signature_misfit
from flowrt.history.trace import DATA_VERSION, TraceError
from flowrt.data.decoding import decode, loads_exact
from flowrt.data.exit_codes import EXIT_FAULTED, EXIT_OK, EXIT_PAUSED
from flowrt.host.refusal import (
    Refused,
    fails_chain as _fails_chain,
    read,
    same_program,
    sqlite_problem,
)  # noqa: F401  (re-exported)
from flowrt.data.typedesc import DecodeError, TypeTextError, parse_type_text
from flowrt.data.values import Err, HostToken, Malformed, show

__all__ = ["Host", "Refused", "Report", "Runnable", "CRASH_REASON"]

CRASH_REASON = CUT_REASON  # what a call a crash cut is closed with: Err(Unknown(CRASH_REASON))


@dataclass
class Report:
    """What a run operation prints (`text`), its exit code, the driver's outcome and the run id;
    `calls`, for flow2py's paused report, is filled by `flowrt.host.runs_view.call_views`."""

    text: str
    exit_code: int
    outcome: object = None
    run_id: Optional[str] = None
    calls: tuple = ()  # a paused run's open calls (flowrt.host.runs_view.CallView each), when asked for


class Runnable:
    """A generated program ready to run: its functions by declaration id, Tool specs, entries.

    `reachable(entry)` is every Tool a run starting at `entry` can reach; here the program's own
    list (`Program.tools`), which flow2py narrows to the entry with the checker."""

    def __init__(self, program: Program):
        self.program = program
        self.classes = program.classes  # decodes its runs' values by name
        self.functions: dict[str, Callable] = {}
        self.specs: dict[str, ToolSpec] = {}
        for key in program.modules:
            for value in vars(program.module(key)).values():
                meta = getattr(value, "__flow__", None)
                if meta is not None and getattr(meta, "decl", None):
                    self.functions.setdefault(meta.decl, value)
                elif isinstance(value, ToolSpec):
                    self.specs.setdefault(value.tool_id, value)

    def resolve(self, decl: str) -> Optional[Callable]:
        return self.functions.get(decl)

    def entry(self, name: str):
        """(function, ((param, descriptor), ...)) of the entry function `name`."""
        try:
            return self.program.entry(name)
        except (KeyError, LookupError, AttributeError):
            raise Refused(f"{self.program.entry_module}.flow has no entry function `{name}`") from None

    def reachable(self, entry: Optional[str] = None):
        return self.program.tools

    def tool_spec(self, tool_id: str) -> Optional[ToolSpec]:
        return self.specs.get(tool_id)

    def meta(self, **extra) -> dict:
        """The host's JSON kept with a run: what compiling its stored sources needs."""
        return {"entry_module": self.program.entry_module, **extra}


# ---- store access ----------------------------------------------------------------------------------


def open_store(path: Optional[str], *, create: bool = True, readonly: bool = False) -> Store:
    """Open the store, or refuse with what is wrong with it (not SQLite, another data version,
    locked, read-only). `create=False` (every command but `run`): a store that does not exist is
    refused rather than created empty. `readonly` (the commands that only read: runs, history,
    replay, verify): opened without write access, so a store the user can only read serves them."""
    from flowrt.history.pg import display, is_url

    where = f"store {display(path) if is_url(path) else path or '.flow/runs.db'}"
    if not (create and not readonly) and not store_exists(path):
        raise Refused(f"{where}: no such store (a store is created by `flow2py run`)")
    try:
        return Store(path, readonly=readonly)
    except sqlite3.Error as e:
        known = sqlite_problem(e, where)
        if known:
            raise Refused(known) from None
        if isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError):
            raise Refused(f"{where}: not a Flow store (SQLite says: {e})") from None
        raise Refused(f"{where}: {e}") from None
    except (StoreError, TraceError, OSError) as e:
        if is_url(path) and str(e).startswith(f"the {where}"):  # it names the store already
            raise Refused(str(e)) from None
        raise Refused(f"{where}: {e}") from None


def store_exists(path: Optional[str]) -> bool:
    """Whether the store is there to open: a SQLite file that exists; a PostgreSQL URL always
    (opening it says what is wrong with it)."""
    import os

    from flowrt.history.pg import is_url

    if is_url(path):
        return True
    return os.path.exists(path if path is not None else os.path.join(os.getcwd(), ".flow", "runs.db"))


def issued_in(store: Optional[Store]) -> Issued:
    """The admission policy for what a host is handed: only tokens this store's host issued
    (flowrt.history.tokens); a host with no store yet has issued none."""
    return NONE_ISSUED if store is None else Issued(store.host_records.token_issued)


def _recorder(store: Store, run_id: str) -> SqliteRecorder:
    """Take the run's lease: one process runs a run at a time. The recorder is shielded: a Ctrl-C
    never lands half-way through appending a fact (flowrt.engine.interrupts)."""
    try:
        return Shielded(SqliteRecorder(store, run_id))
    except RunBusy as e:
        raise Refused(f"{e}; refusing a second resume") from None
    except StoreError as e:
        raise Refused(str(e)) from None
    except sqlite3.Error as e:
        raise Refused(sqlite_problem(e, "the store") or str(e)) from None


# ---- input and replies -------------------------------------------------------------------------------


def parse_json(text: str, what: str):
    """JSON text within the bounds of admission (flowrt.data.bounds), or a one-line refusal."""
    try:
        return loads_exact(text)
    except DecodeError as e:  # valid JSON beyond a bound: the message names the path
        raise Refused(f"{what}: {e}") from None
    except ValueError as e:
        raise Refused(f"{what}: not valid JSON: {e}") from None


def decode_input(obj: Any, params, what: str = "--input", issued: Issued = NONE_ISSUED) -> tuple:
    """Decode a run's input (a JSON object keyed by parameter names) against the parameter types.
    A host token in it must be one the host issued (`issued`: by default none was)."""
    obj = {} if obj is None else obj
    if not isinstance(obj, dict):
        raise Refused(f"{what}: expected a JSON object keyed by parameter names, got {type(obj).__name__}")
    names = [n for n, _ in params]
    unknown = [k for k in obj if k not in names]
    if unknown:
        raise Refused(
            f"{what}: unknown parameter {unknown[0]!r}; the entry takes {', '.join(names) or 'nothing'}"
        )
    args = []
    with admitting(issued):
        for name, desc in params:
            if name not in obj:
                raise Refused(f"{what}: missing parameter {name!r}")
            try:
                args.append(decode(desc, obj[name], f"$.{name}"))
            except DecodeError as e:
                raise Refused(f"{what}: {e}") from None
    return tuple(args)


def admit_replies(
    replies: dict,
    open_calls: dict,
    prog: Runnable,
    run_id: str,
    issued: Issued = NONE_ISSUED,
    find_call: Callable[[str], Optional[Call]] = lambda _: None,
) -> dict:
    """Replies a host delivers (call id -> JSON value), each admitted against its Tool's result
    type; one that does not fit is refused rather than recorded Malformed (the host can fix it).
    A host token in one must be one the host issued (`issued`): a host delivering a reply does not
    issue tokens, a Tool implementation does. A generic Tool's reply is admitted at the concrete
    type its Call fact records (`find_call(call_id)`)."""
    delivered = {}
    for call_id, raw in replies.items():
        if call_id not in open_calls:
            listing = ", ".join(open_calls) or "none"
            raise Refused(
                f"--reply {call_id}: run {run_id} has no open call {call_id} (open calls: {listing})"
            )
        spec = prog.tool_spec(open_calls[call_id])
        type_args = _recorded_type_args(spec, call_id, find_call, prog) if spec.type_params else ()
        refusals: list = []
        with admitting(Noting(issued, refusals)):
            reply = admit(spec, raw, type_args)
        if refusals:
            raise Refused(f"--reply {call_id}: {refusals[-1]}; nothing was recorded")
        if isinstance(reply, Err) and isinstance(reply._0, Malformed):
            raise Refused(f"--reply {call_id}: the reply does not fit {spec.name}'s result: {reply._0._0}")
        delivered[call_id] = reply
    return delivered


def _recorded_type_args(spec: ToolSpec, call_id: str, find_call, prog: Runnable) -> tuple:
    """The type arguments (descriptors) the Call fact `call_id` of a generic Tool records."""
    call = find_call(call_id)
    if call is None:
        raise Refused(
            f"--reply {call_id}: the call's fact is not kept (archived), so the concrete "
            f"type of {spec.name}'s reply is not known"
        )
    try:
        return tuple(parse_type_text(t, prog.classes) for t in call.type_args)
    except TypeTextError as e:
        raise Refused(f"--reply {call_id}: {spec.name}'s recorded type argument {e}") from None


def call_finder(store: Store, run_id: str, info, classes) -> Callable[[str], Optional[Call]]:
    """`find_call` for `admit_replies`: the Call fact of an open call, looked for from the latest
    checkpoint on, then (a call a parked task carried across it) from the start."""

    def find(call_id: str) -> Optional[Call]:
        for first in dict.fromkeys((info.latest_checkpoint or 1, 1)):
            for f in read(lambda: store.history.facts(run_id, first, classes=classes)):
                if type(f) is Call and f.id == call_id:
                    return f
        return None

    return find


def bindings_for(prog: Runnable, bindings: Optional[Bindings], entry: Optional[str], what: str) -> Bindings:
    """Refuse (before anything is recorded) when a reachable Tool is unbound, or bound to a
    Python function whose signature cannot take the Tool's arguments."""
    bindings = BINDINGS if bindings is None else bindings
    reachable = prog.reachable(entry)
    missing = bindings.missing(reachable)
    if missing:
        raise Refused(
            "no implementation bound for "
            + ", ".join(missing)
            + f" (bind each with @flowrt.bind in a --tools file); {what}"
        )
    for tool_id, _name in reachable:
        spec = prog.tool_spec(tool_id)
        why = signature_misfit(spec, bindings.lookup(spec)) if spec is not None else None
        if why:
            raise Refused(f"{why}; {what}")
    return bindings


# ---- driving ------------------------------------------------------------------------------------------


def report(outcome, run_id: str) -> Report:
    if isinstance(outcome, drv.RunCompleted):
        return Report(show(outcome.value), EXIT_OK, outcome, run_id)
    if isinstance(outcome, drv.RunPaused):
        lines = [f"paused: run {run_id} waits on {len(outcome.open)} open call(s)"]
        lines += [f"  {c.id}  {c.text()}" for c in outcome.open]
        return Report("\n".join(lines), EXIT_PAUSED, outcome, run_id)
    if isinstance(outcome, drv.RunFaulted):
        return Report(outcome.line(), EXIT_FAULTED, outcome, run_id)
    return Report(outcome.line(), outcome.exit_code, outcome, run_id)


def halted_report(store: Store, prog: Runnable, outcome: drv.RunHalted, run_id: str) -> Report:
    """`halted: run r: interrupted (Ctrl-C) ...` and the run's open calls as the store now holds
    them (what a resume will see), each marked pending or cut."""
    info, pending = store.host_records.load_run(run_id), store.host_records.pending_calls(run_id)
    known = {c.id: c for c in outcome.open if c.args is not None}
    # a call the driver had not taken in yet (Ctrl-C right after its Call was recorded), or
    # carried without its Call fact: the stored Call says what it is
    made = store.history.calls.open_call_facts(
        run_id, [c for c, _ in info.open_calls if c not in known], classes=prog.classes
    )
    lines = [f"halted: run {run_id}: {outcome.reason}; no End is recorded"]
    for call_id, tool_id in info.open_calls:
        spec, f = prog.tool_spec(tool_id), made.get(call_id)
        c = known.get(call_id) or (
            drv.OpenCall(call_id, f.tool, f.args)
            if f is not None
            else drv.OpenCall(call_id, spec.name if spec is not None else tool_id)
        )
        mark = (
            "pending: its reply can be given with --reply"
            if call_id in pending
            else "cut: a resume records Err(Unknown(...)) for it unless --reply or --resend names it"
        )
        lines.append(f"  {call_id}  {c.text()}  ({mark})")
    return Report("\n".join(lines), outcome.exit_code, outcome, run_id)


def _drive_live(
    store: Store,
    rec: SqliteRecorder,
    prog: Runnable,
    fn,
    history,
    first: int,
    bindings,
    checkpoint_every: Optional[int],
    resend=(),
    cut=(),
    drive: Optional[dict] = None,
) -> Report:
    """Drive a run live under the lease `rec` holds, release it, and report. Ctrl-C meanwhile,
    or a Tool calling sys.exit, halts the run (flowrt.engine.interrupts): released `halted`, reported."""
    run_id = rec.run_id
    outcome = None
    with deferred():
        try:
            opts = drv.DriveOptions(
                first=first,
                mode="live",
                recorder=rec,
                bindings=bindings,
                checkpoint_every=checkpoint_every,
                resolve=prog.resolve,
                classes=prog.classes,
                resend=resend,
                cut=cut,
                **_carried(store, run_id, history, first, prog),
                **(drive or {}),
            )
            outcome = drv.drive(fn, history, opts)
        except drv.ResumeRefused as e:
            raise Refused(
                f"run {run_id}: the stored history does not fit the program: {e.verdict.line()}"
            ) from None
        except drv.ResendRefused as e:
            raise Refused(f"--resend: {e}") from None
        except CorruptHistory as e:
            raise corrupt(run_id, e) from None
        except INTERRUPTS as e:  # outside the driver's loop (restoring a checkpoint, say)
            outcome = drv.RunHalted(reason(e), (), e)
        finally:
            try:
                rec.close(halted=isinstance(outcome, drv.RunHalted))
            except KeyboardInterrupt:  # Ctrl-C while the run was being released: it was, whole
                pass
    for tool_id, _name in prog.reachable():
        spec = prog.tool_spec(tool_id)
        impl = bindings.lookup(spec) if spec is not None else None
        if impl is not None:  # which implementation served: the host's record, not history
            store.host_records.record_binding(
                run_id,
                tool_id,
                f"{getattr(impl, '__module__', '?')}.{getattr(impl, '__qualname__', repr(impl))}",
            )
    if isinstance(outcome, drv.RunHalted):
        return halted_report(store, prog, outcome, run_id)
    return report(outcome, run_id)


def _new_run(store: Store, run_id: Optional[str], start: Start, prog: Runnable, meta: dict, then: tuple = ()):
    """Record a new run's Start and the facts `then` after it, in one commit, and take its lease:
    (run id, recorder)."""
    run_id = run_id or "run-" + secrets.token_hex(6)
    try:
        store.history.create_run(run_id, start, prog.program.sources, meta, then=then)
    except StoreError as e:
        raise Refused(str(e)) from None
    except sqlite3.Error as e:
        raise Refused(sqlite_problem(e, "the store") or str(e)) from None
    return run_id, _recorder(store, run_id)


def history_from(store: Store, run_id: str, info, classes, whole: bool = True) -> tuple[list, int]:
    """The facts resume and replay serve: from the latest checkpoint on (else all), and the
    number of the first. Facts before the latest checkpoint are never read (they may be archived).
    Each fact is checked against the hash chain as it is read (from the kept hash of the fact
    before); a break refuses the command naming the fact. `whole`: the facts must also reach the
    run's stored head (resume appends there); replay takes a history cut short at its end as it is
    (its verdict is then Incomplete)."""
    first = info.latest_checkpoint or 1
    history = read(lambda: store.history.facts(run_id, first, verify=True, whole=whole, classes=classes))
    if first > 1 and (
        not history or type(history[0]) is not Checkpoint or any(type(f) is Checkpoint for f in history[1:])
    ):
        what = f"a {type(history[0]).__name__}" if history else "missing"
        raise Refused(
            f"run {run_id}: its record of the latest checkpoint (fact {first}) is corrupt: "
            f"fact {first} is {what}{'' if what == 'missing' else ', not the last Checkpoint'}; "
            f"refusing to use its history"
        )
    return history, first


def corrupt(run_id: str, e: CorruptHistory) -> Refused:
    """A stored value that does not fit the program (flowrt.history.stored): refused like a broken chain."""
    return Refused(f"run {run_id}: {e}; refusing to use its history, nothing was recorded")


def _parked_calls(history: list) -> list:
    """The calls the parked tasks of the checkpoint `history` begins at carry (else none)."""
    calls: list = []
    if history and type(history[0]) is Checkpoint:
        rebuild(tuple(history[0].args), lambda p: calls.append(p.call) or p, (ParkedTask,))
    return calls


def _carried(store: Store, run_id: str, history: list, first: int, prog: Runnable) -> dict:
    """What `drive` is given about the calls a checkpoint's parked tasks carry: the replies
    recorded before it (`carried_replies`), for those still open their Call facts
    (`carried_calls`: their Tool and arguments, shown like any open call's), and the Tools of all
    of them (`parked_specs`: a reply served to one is checked against its Tool, flowrt.history.stored)."""
    calls = _parked_calls(history)
    if not calls:
        return {}
    classes = prog.classes
    return {
        "carried_replies": _carried_replies(store, run_id, history, first, classes),
        "carried_calls": read(
            lambda: store.history.calls.open_call_facts(run_id, calls, classes=classes, before_n=first)
        ),
        "parked_specs": _parked_specs(store, prog, run_id, history, first),
    }


def _carried_replies(store: Store, run_id: str, history: list, first: int, classes) -> dict:
    """The replies, recorded before the checkpoint `history` begins at, to calls its parked tasks
    carry (a task finished from its parked call counts as parked: seed 000, "Checkpoints");
    they may be archived, so they are read from the store rather than from `history`."""
    calls = _parked_calls(history)
    if not calls:
        return {}
    # Answered or closed from the checkpoint on, or still open: nothing recorded before it is needed.
    later = {f.id for f in history if type(f) is Reply}
    later.update(c.call for f in history if type(f) is Stop for c in f.closed)
    still_open = {c for c, _ in store.host_records.open_calls(run_id)}
    wanted = [c for c in calls if c not in later and c not in still_open]
    # Each wanted call was answered before the checkpoint: a reply not found is a broken history.
    return (
        read(
            lambda: store.history.calls.carried_replies(
                run_id, wanted, first, classes=classes, require_all=True
            )
        )
        if wanted
        else {}
    )


def _parked_specs(store: Store, prog: Runnable, run_id: str, history: list, first: int) -> dict:
    """{call id: ToolSpec} of the calls the parked tasks of the checkpoint `history` begins at
    wait on: their Call facts come before it, so the driver, which checks a reply to one against
    its Tool's result type, cannot see them (flowrt.history.stored)."""
    calls = _parked_calls(history)
    if not calls:
        return {}
    tools = read(lambda: store.history.calls.call_tools(run_id, calls, first))
    return {c: spec for c, t in tools.items() if (spec := prog.tool_spec(t)) is not None}


def entry_of(prog: Runnable, info) -> Callable:
    """The function a run's Start applies to its input: the entry, or a fork's checkpoint function."""
    decl = (info.meta or {}).get("entry_decl")
    if decl:
        fn = prog.resolve(decl)
        if fn is None:
            raise Refused(f"run {info.id}: its program has no function {decl}")
        return fn
    return prog.entry(info.entry)[0]


def _check_resend(resend, open_calls: dict, history: list, run_id: str) -> None:
    served = {f.id for f in history if type(f) is Call}
    for call_id in resend:
        if call_id not in open_calls:
            raise Refused(f"--resend {call_id}: run {run_id} has no open call {call_id}")
        if call_id not in served:
            raise Refused(
                f"--resend {call_id}: the call was made before the run's latest checkpoint; "
                f"only a call made after it can be sent again"
            )


def crash_closes(open_calls: Iterable[str], pending: set, delivered, resend) -> list[str]:
    """Open calls a crash cut: not left open on purpose (`pending`), not answered, not resent."""
    return [c for c in open_calls if c not in pending and c not in delivered and c not in resend]


def runnable_of(program) -> Runnable:
    """A generated program as a `Runnable`, made once a program: a built package, its `PROGRAM`,
    or a `Runnable`."""
    if isinstance(program, Runnable):
        return program
    program = getattr(program, "PROGRAM", program)
    if not isinstance(program, Program):
        raise Refused(f"not a Flow program: {program!r} (give a name, a path, or a built package)")
    cached = getattr(program, "_flow_runnable", None)
    if cached is None:
        cached = program._flow_runnable = Runnable(program)
    return cached


def start_fact(prog: Runnable, entry: str, args: tuple, params) -> Start:
    """The Start of a new run of `prog` at `entry` with the admitted `args`."""
    return Start(
        prog.program.identity, prog.program.std, DATA_VERSION, entry, args, tuple(n for n, _ in params)
    )


# ---- the operations ----------------------------------------------------------------------------------


def start(
    store: Store,
    prog: Runnable,
    *,
    entry: str = "main",
    input: Any = None,
    bindings: Optional[Bindings] = None,
    run_id: Optional[str] = None,
    checkpoint_every: Optional[int] = None,
    meta: Optional[dict] = None,
    drive: Optional[dict] = None,
) -> Report:
    """Decode the input, refuse a missing binding, record Start, drive live. `drive`: more
    DriveOptions fields (a worker's completion queue and `inline`: flowrt.host.worker)."""
    fn, params = prog.entry(entry)
    args = decode_input(input, params, issued=issued_in(store))
    bindings = bindings_for(prog, bindings, entry, "the run was not started")
    first = start_fact(prog, entry, args, params)
    run_id, rec = _new_run(store, run_id, first, prog, meta or prog.meta())
    return _drive_live(store, rec, prog, fn, [first], 1, bindings, checkpoint_every, drive=drive)


def resume(
    store: Store,
    prog: Runnable,
    run_id: str,
    *,
    replies: Optional[dict] = None,
    resend=(),
    bindings: Optional[Bindings] = None,
    checkpoint_every: Optional[int] = None,
    drive: Optional[dict] = None,
    durable_replies: bool = True,
) -> Report:
    """Take the run's lease, record delivered replies and close the calls a crash cut (Unknown,
    unless resent), then continue live from the latest checkpoint. `drive`: as for `start`.
    `durable_replies=False`: the replies are committed without an fsync (a worker, which keeps
    them durably in its own records until the run has moved on)."""
    info = read(store.host_records.load_run, run_id)
    if info.state in ("completed", "faulted"):
        raise Refused(f"run {run_id} has ended ({info.state}); nothing to resume (fork it to continue)")
    if info.state == "running":
        raise Refused(f"run {run_id} is {run_state(info)} in another process; refusing a second resume")
    same_program(prog, info)
    open_calls = dict(info.open_calls)
    delivered = admit_replies(
        replies or {},
        open_calls,
        prog,
        run_id,
        issued_in(store),
        call_finder(store, run_id, info, prog.classes),
    )
    served, first = history_from(store, run_id, info, prog.classes)
    _check_resend(resend, open_calls, served, run_id)
    bindings = bindings_for(prog, bindings, None, "the run was not resumed")
    cut = crash_closes(open_calls, read(store.host_records.pending_calls, run_id), delivered, set(resend))
    appended = [Reply(call_id, reply) for call_id, reply in delivered.items()]
    fn = entry_of(prog, info)
    # The history, with the replies this resume would append, must fit the program before any of
    # them is recorded: a hole the program needs or a divergence refuses the resume, recording nothing.
    # The calls the crash cut are not appended here: the driver answers each Unknown once the
    # history is exhausted, before any other reply (DriveOptions.cut), so a call cut while the
    # program still had work to do (another call to make first) is closed on this resume too.
    _check_fits(store, prog, fn, run_id, served + appended, first)
    with deferred():  # a Ctrl-C from here on never lands inside an append
        rec = _recorder(store, run_id)
        try:
            if rec.n != info.facts:
                raise Refused(
                    f"run {run_id} changed while this resume was preparing (another process "
                    f"resumed it); nothing was recorded"
                )
            for fact in appended:
                rec.record(fact)
            rec.sync(durable=durable_replies)
            for call_id in resend:  # out again: a crash from now on cuts it, it is no longer pending
                store.host_records.record_resent(run_id, call_id)
            history, first = history_from(store, run_id, store.host_records.load_run(run_id), prog.classes)
        except BaseException:
            rec.close()
            raise
        return _drive_live(
            store, rec, prog, fn, history, first, bindings, checkpoint_every, resend, cut, drive
        )


class _Fits(BaseException):
    """The probe reached a fact to record: everything recorded so far fits the program."""


class _ProbeRecorder:
    """A recorder that records nothing: its first `record` ends the probe (before any dispatch,
    since a Call is recorded before it is sent)."""

    def __init__(self, store: Store, run_id: str):
        self.store, self.run_id = store, run_id

    def record(self, fact) -> None:
        raise _Fits()

    def sync(self, durable=None) -> None:
        pass


def _check_fits(store: Store, prog: Runnable, fn, run_id: str, history: list, first: int) -> None:
    """Serve `history` (the stored facts from the latest checkpoint plus the replies a resume is
    about to append) to the program live, stopping at the first thing it would record or at a
    pause; a history that does not fit (ResumeRefused: a divergence, or a hole it needs) refuses
    the resume with nothing recorded and nothing sent."""
    try:
        drv.drive(
            fn,
            history,
            drv.DriveOptions(
                first=first,
                mode="live",
                recorder=_ProbeRecorder(store, run_id),
                bindings=Bindings(),
                resolve=prog.resolve,
                classes=prog.classes,
                **_carried(store, run_id, history, first, prog),
            ),
        )
    except _Fits:  # it would record something: everything before fits
        pass
    except drv.ResumeRefused as e:
        raise Refused(
            f"run {run_id}: the stored history does not fit the program: {e.verdict.line()}; "
            f"refusing to resume, nothing was recorded"
        ) from None
    except CorruptHistory as e:
        raise corrupt(run_id, e) from None


def replay(store: Store, prog: Runnable, run_id: str) -> Report:
    """Re-run over the stored history with nothing bound; one verdict. It starts at the latest
    checkpoint (Start if none), like resume."""
    info = read(store.host_records.load_run, run_id)
    same_program(prog, info)
    history, first = history_from(store, run_id, info, prog.classes, whole=False)
    if not history:
        return Report("Incomplete: the history holds no facts from its latest checkpoint on", EXIT_PAUSED)
    fn = entry_of(prog, info) if first == 1 else None
    try:
        outcome = drv.drive(
            fn,
            history,
            drv.DriveOptions(
                first=first,
                begin=first,
                mode="replay",
                resolve=prog.resolve,
                classes=prog.classes,
                **_carried(store, run_id, history, first, prog),
            ),
        )
    except CorruptHistory as e:
        raise corrupt(run_id, e) from None
    return Report(outcome.line(), outcome.exit_code, outcome, run_id)


def history(store: Store, prog: Runnable, run_id: str, fmt: str = "text", details: bool = False) -> str:
    """The facts as text (the seed's notation), JSON Lines or a plain HTML table; refused when the
    chain is broken. (`flow2py history --format html` is the run page: flowrt.host.run_page.)
    `details` (text): each failed call's exception and traceback, the host's record, under the
    fact that closed it (flowrt.host.call_failures)."""
    if fmt == "html":
        return to_html(verified_records(store, prog, run_id), title=f"Flow run {run_id}")
    if details and fmt == "text":
        from flowrt.host.call_failures import details_text

        records = verified_records(store, prog, run_id)
        text = to_text(records)
        text = text if text.endswith("\n") else text + "\n"
        return details_text(text, records, read(store.host_records.failures, run_id))
    from flowrt.host.history_stream import history_chunks

    return "".join(history_chunks(store, prog, run_id, fmt))


def verified_records(store: Store, prog: Runnable, run_id: str) -> list:
    """The run's stored facts, its values decoded with `prog`'s classes; refused when the chain is broken."""
    info = read(store.host_records.load_run, run_id)
    same_program(prog, info)
    ok, why, _ = read(store.history.verify, run_id)
    if not ok:
        raise _fails_chain(run_id, why)
    return read(lambda: store.history.records(run_id, classes=prog.classes))


def fork(
    store: Store,
    parent: Runnable,
    prog: Runnable,
    run_id: str,
    checkpoint: int,
    *,
    input: Any = None,
    bindings: Optional[Bindings] = None,
    new_run_id: Optional[str] = None,
    checkpoint_every: Optional[int] = None,
    meta: Optional[dict] = None,
) -> Report:
    """A new run of `prog` from checkpoint N of run `run_id` (made by `parent`); the parent stays.
    The checkpoint's arguments are rebuilt, never decoded, and each parked task in them is either
    finished from the parent's reply or makes its call again (flowrt.host.forks)."""
    start_fact, prelude, remade, fn, meta = prepare_fork(store, parent, prog, run_id, checkpoint, input, meta)
    bindings = bindings_for(prog, bindings, None, "the fork was not started")
    # The parked tasks' replies, or their calls made again (flowrt.host.forks), are committed with the
    # Start: a fork whose Start holds parked tasks is never left without the facts that settle them.
    new_run_id, rec = _new_run(store, new_run_id, start_fact, prog, meta, then=tuple(prelude))
    return _drive_live(store, rec, prog, fn, [start_fact, *prelude], 1, bindings, checkpoint_every, remade)


def prepare_fork(
    store: Store,
    parent: Runnable,
    prog: Runnable,
    run_id: str,
    checkpoint: int,
    input: Any = None,
    meta: Optional[dict] = None,
) -> tuple:
    """What a fork of checkpoint N of `run_id` begins with, nothing recorded yet: (its Start, the
    facts that follow it (the parked tasks' replies, or their calls made again), the ids of the
    calls to make again, the checkpoint's function, the run's meta). Refused as `fork` is."""
    same_program(parent, read(store.host_records.load_run, run_id))
    ok, why, _ = read(store.history.verify, run_id)
    if not ok:
        raise Refused(f"run {run_id!r} fails its hash chain: {why}; refusing to fork it")
    # With --input only the checkpoint's function is used: its values are read as the parent made them.
    reader = parent if input is not None else prog
    try:
        cp = fork_checkpoint(store, run_id, checkpoint, reader.classes, parent.classes)
    except ForkRefused as e:
        raise Refused(str(e)) from None
    fn = prog.resolve(cp.function)
    if fn is None:
        raise Refused(
            f"the fork's program has no top-level function {cp.function} to continue checkpoint {checkpoint}"
        )
    params = _params_of(prog, cp.function)
    prelude, remade = [], []
    if input is not None:
        args = decode_input(input, params, issued=issued_in(store))
    else:
        try:
            args = rebuilt_args(cp, params)
            args, prelude, remade = parked_in_fork(store, run_id, cp, args, prog)
        except ForkRefused as e:
            raise Refused(str(e)) from None
        except sqlite3.Error as e:
            raise Refused(sqlite_problem(e, "the store") or str(e)) from None
    start_fact = Start(
        prog.program.identity,
        prog.program.std,
        DATA_VERSION,
        cp.function.split("::")[-1],
        args,
        tuple(n for n, _ in params),
        parent=run_id,
        from_checkpoint=checkpoint,
    )
    meta = dict(meta or prog.meta(), parent=run_id, entry_decl=cp.function)
    return start_fact, prelude, remade, fn, meta


def _params_of(prog: Runnable, decl: str):
    """((name, descriptor), ...) of a checkpoint's function: every non-generic function of the
    entry module is among the program's entries."""
    for fn, params in prog.program.entries.values():
        if getattr(getattr(fn, "__flow__", None), "decl", None) == decl:
            return list(params)
    raise Refused(
        f"cannot fork at {decl}: the fork's program gives no parameter types for it "
        f"(only functions of its entry module, not generic, can be forked at)"
    )


def run_state(info) -> str:
    """`paused on c1:root#2`, `halted with root#1 open`, `running (process 123 on host)`, ..."""
    calls = ", ".join(c for c, _ in info.open_calls)
    if info.state == "paused" and calls:
        return f"paused on {calls}"
    if info.state == "halted" and calls:  # released by an interrupted process, or never released
        why = "interrupted" if info.owner is None else "the process ended"
        return f"halted with {calls} open ({why})"
    if info.state == "running" and info.owner:
        host_name, _, rest = info.owner.partition(":")
        return f"running (process {rest.partition(':')[0]} on {host_name})"
    return info.state


def list_runs(store: Store) -> list[str]:
    lines = []
    for r in read(store.host_records.runs):
        extra = f"  fork of {r.parent} at checkpoint {r.from_checkpoint}" if r.parent else ""
        outer = store.host_records.outer_of(r.id)
        if outer:
            extra += f"  nested in {outer[0]} at {outer[1]}"
        lines.append(f"{r.id}  {run_state(r)}  {r.entry}  {r.facts} facts{extra}")
    return lines


# ---- the host application's handle -------------------------------------------------------------------


class Host:
    """Runs of compiled programs on one store, for a host application (see the module docstring).

    `program` arguments take a generated package's `PROGRAM` (or the package itself). Inputs and
    replies are JSON values (or runtime values), decoded like the CLI's `--input` and `--reply`."""

    def __init__(self, store: Any = None, bindings: Optional[Bindings] = None):
        self.store = store if isinstance(store, Store) else open_store(store)
        self.bindings = bindings

    def _runnable(self, program) -> Runnable:
        return runnable_of(program)

    def start(
        self,
        program,
        *,
        entry: str = "main",
        input: Optional[dict] = None,
        run_id: Optional[str] = None,
        checkpoint_every: Optional[int] = None,
    ) -> Report:
        return start(
            self.store,
            self._runnable(program),
            entry=entry,
            input=input,
            bindings=self.bindings,
            run_id=run_id,
            checkpoint_every=checkpoint_every,
        )

    def resume(
        self,
        program,
        run_id: str,
        *,
        replies: Optional[dict] = None,
        resend=(),
        checkpoint_every: Optional[int] = None,
    ) -> Report:
        return resume(
            self.store,
            self._runnable(program),
            run_id,
            replies=replies,
            resend=resend,
            bindings=self.bindings,
            checkpoint_every=checkpoint_every,
        )

    def replay(self, program, run_id: str) -> Report:
        return replay(self.store, self._runnable(program), run_id)

    def history(self, program, run_id: str, fmt: str = "text") -> str:
        return history(self.store, self._runnable(program), run_id, fmt)

    def fork(
        self,
        program,
        run_id: str,
        checkpoint: int,
        *,
        parent=None,
        input: Optional[dict] = None,
        new_run_id: Optional[str] = None,
        checkpoint_every: Optional[int] = None,
    ) -> Report:
        prog = self._runnable(program)
        return fork(
            self.store,
            self._runnable(parent) if parent is not None else prog,
            prog,
            run_id,
            checkpoint,
            input=input,
            bindings=self.bindings,
            new_run_id=new_run_id,
            checkpoint_every=checkpoint_every,
        )

    def issue_token(self, type_id: str, token: str) -> HostToken:
        """Issue a host token of the @tool type `type_id` (its declaration identity, e.g.
        "browser::Page") in code and return it: the host may then hand it to runs of this store,
        as input or in a reply (`{"$token": token}` or the returned value). A token a Tool
        implementation returns is issued by recording its reply; any other is refused."""
        try:
            self.store.host_records.issue_token(type_id, token)
        except StoreError as e:
            raise Refused(str(e)) from None
        except sqlite3.Error as e:  # a store file this process can only read, or one locked
            raise Refused(sqlite_problem(e, f"store {self.store.path}") or str(e)) from None
        return HostToken(type_id, token)

    def verify(self, run_id: str, head: Optional[str] = None) -> tuple[bool, str, str]:
        return read(self.store.history.verify, run_id, head)

    def runs(self) -> list[str]:
        return list_runs(self.store)
