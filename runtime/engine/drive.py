"""The driver: one entry, `drive`, for live runs, resume and replay; `start_run` for a new run.

How it works: docs/spec/execution.md has the rules, docs/spec/concurrency.md the task semantics.
`drive` (here) checks its options, builds the run's state and begins it at Start or at a
Checkpoint; the run itself is split along its seams, each module opening with its own account:

* flowrt.engine.state       -- `RunState`, the one state of a drive, and the verdicts it stops with;
* flowrt.engine.record      -- facts recorded or checked (`emit`, the End), calls sent out;
* flowrt.engine.task_ops    -- spawn, await, first, stop, task ownership, faults;
* flowrt.engine.calls       -- Tool calls made and replies admitted, one event at a time;
* flowrt.engine.checkpoints -- when a checkpoint is taken, what it holds, restoring from one;
* flowrt.engine.run_loop    -- the scheduler and the trampoline;
* flowrt.engine.describe    -- fact comparison (holes match anything), fact text, fault positions;
* flowrt.engine.outcomes    -- what a drive returns (RunCompleted ... Diverged) and its refusals.

Admitting the same facts in the same order reproduces the run: everything between two
admissions is a deterministic function of the facts admitted so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

from flowrt.data.facts import Checkpoint, Start
from flowrt.data.requests import ToolSpec, module_resolver
from flowrt.data.values import STD_CLASSES, ClassTable, class_table
from flowrt.engine import debug
from flowrt.engine.checkpoints import begin_at_checkpoint, latest_checkpoint
from flowrt.engine.describe import describe  # noqa: F401  (divergence text; tests import it from here)
from flowrt.engine.outcomes import (  # noqa: F401  (re-exported: flowrt.engine.drive.<name> works as before)
    Diverged,
    Incomplete,
    Matched,
    OpenCall,
    Outcome,
    ResendRefused,
    ResumeRefused,
    RunCompleted,
    RunFaulted,
    RunHalted,
    RunPaused,
    _Finish,
)
from flowrt.engine.run_loop import begin_at_start, loop
from flowrt.engine.state import RunState
from flowrt.engine.tools import BINDINGS, Bindings, Dispatcher, MissingBindings

__all__ = [
    "drive",
    "start_run",
    "DriveOptions",
    "latest_checkpoint",
    "MemoryRecorder",
    "Outcome",
    "OpenCall",
    "RunCompleted",
    "RunFaulted",
    "RunPaused",
    "RunHalted",
    "Matched",
    "Incomplete",
    "Diverged",
    "ResumeRefused",
    "ResendRefused",
    "MissingBindings",
]


# ---- recorders ----------------------------------------------------------------------------------


class MemoryRecorder:
    """A Recorder keeping facts in a list (tests, benchmarks, embedding without a store)."""

    def __init__(self, keep: bool = True):
        self.facts: list = []
        self.syncs = 0
        self.count = 0
        self._keep = keep

    def record(self, fact) -> None:
        self.count += 1
        if self._keep:
            self.facts.append(fact)

    def sync(self) -> None:
        self.syncs += 1


# ---- options ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriveOptions:
    """How to drive a program over its history (docs/spec/execution.md, "The entry point").

    The defaults are a live run from the latest checkpoint (else Start) with the process-wide
    bindings; a live run needs a `recorder`. `DriveOptions(mode="replay")` replays.
    """

    #: the fact number of history[0]: 1 unless earlier facts were archived
    first: int = 1
    #: "latest" (the latest Checkpoint in the history, else Start), 1 (Start), or the fact
    #: number of a Checkpoint
    begin: Any = "latest"
    #: "live" (serve the history, then record every new fact and dispatch calls) or "replay"
    #: (serve the history and return a verdict; nothing is recorded or bound)
    mode: str = "live"
    #: live: every new fact goes through it (rt.Recorder: record, sync); required live
    recorder: Any = None
    #: live: the Tool implementations (default: the process-wide BINDINGS)
    bindings: Optional[Bindings] = None
    #: the ToolSpecs (or (tool_id, name) pairs) the program can reach: a live run with one of
    #: them unbound is refused (MissingBindings) before anything happens
    reachable: Optional[Iterable[ToolSpec]] = None
    #: take a checkpoint at the first eligible tail call once this many facts were recorded
    #: since the last one (None: never, live)
    checkpoint_every: Optional[int] = None
    #: decl id -> the program's function, for a checkpoint's function and a fork's calls
    #: (default: functions registered by `rt.fn` in the entry function's module)
    resolve: Optional[Callable[[str], Optional[Callable]]] = None
    #: the program's class table (Program.classes), which rebuilds the values of a checkpoint's
    #: parked tasks by constructor name (default: the entry function's module's,
    #: `rt.class_table(entry)`; std's built-in classes only without an entry)
    classes: Optional[ClassTable] = None
    #: False: always hand sync calls to worker threads (True: an idle driver runs one inline;
    #: "always": every sync implementation runs on the driver's thread as its call is made, so
    #: replies arrive in call order whatever the threads do: flow2py's tests)
    inline: Any = True
    #: live: called as `idle(open call ids)` when no task can move and no completion has arrived
    #: or is outstanding, before the run pauses; returns the completions `[(call id, outcome)]` it
    #: has for open calls (admitted in that order), or none to pause. A test's virtual clock
    #: fires its next timer here (flow2py.testing)
    idle: Optional[Callable] = None
    #: live: ids of calls open when the history ends to send again to their bindings under the
    #: same id (after a crash); ResendRefused if one is not open then
    resend: Iterable[str] = ()
    #: live: ids, in call order, of calls a crash cut (open, neither answered nor left pending):
    #: once the history is exhausted each one still open is answered
    #: `Err(Unknown("process ended while the call was out"))`, before any other reply
    cut: Iterable[str] = ()
    #: {call id: reply}, in the order recorded: beginning at a checkpoint, the replies recorded
    #: before it to calls its parked tasks carry (the earlier facts may be archived); such a task
    #: is restored finished. Replies in the facts before the checkpoint in the history are found
    #: there without it; other entries are ignored
    carried_replies: Optional[dict] = None
    #: {call id: Call fact}: beginning at a checkpoint whose Call facts are not in the history,
    #: the Calls of its parked tasks' open calls, so a pause, a halt or an Incomplete names their
    #: Tool and arguments (nothing is served from them)
    carried_calls: Optional[dict] = None
    #: {call id: ToolSpec}: the Tools of those parked calls, whose Call facts come before the
    #: checkpoint; a reply to one is checked against its Tool's result type (without it, only
    #: that it is a Tool outcome at all)
    parked_specs: Optional[dict] = None
    #: live: the queue the run's calls complete on (default: a new one). A host holding it may
    #: post `(call id or None, Interruption(exc))` to halt the drive while it waits (a worker's
    #: cancel or shutdown: flowrt.host.worker); it is taken like any completion
    completions: Any = None


# ---- entry points -----------------------------------------------------------------------------------


def drive(entry: Optional[Callable], history: Sequence, options: DriveOptions = DriveOptions()) -> Outcome:
    """Run a program over its history: live (a new run or a resume) or replay.

    `history`: the run's facts, `history[0]` being fact number `options.first`. A new live run
    passes just its Start fact (see `start_run`). `entry`: the entry function, called with
    Start's input when beginning at Start. `options`: see DriveOptions.

    Every value served from history is checked against the type the program expects (a Reply
    against its Call's Tool, a Checkpoint's arguments and Start's input against the function's
    parameters); one that does not fit raises `flowrt.history.stored.CorruptHistory` naming the fact,
    before the program sees it.

    Returns RunCompleted / RunFaulted / RunPaused / RunHalted (live) or Matched / Incomplete /
    Diverged (replay). RunHalted: KeyboardInterrupt, SystemExit or BdbQuit was raised in generated
    code or a Tool implementation (or Ctrl-C came): nothing was recorded for it, calls stay open.
    Raises ResumeRefused when a live run's history does not fit the program.
    """
    history = list(history)
    run = _new_run(entry, history, options)
    first = options.first
    begin = options.begin
    if begin == "latest":
        begin = latest_checkpoint(history, first) or first
    index = begin - first
    if not 0 <= index < len(history):
        raise ValueError(
            f"fact {begin} is not in the history given (facts {first}..{first + len(history) - 1})"
        )
    fact = history[index]
    run.hpos = index
    try:  # beginning may already decide a replay: Incomplete when the input or a checkpoint holds a hole
        if type(fact) is Start:
            if entry is None:
                raise ValueError("beginning at Start needs the entry function")
            begin_at_start(run, entry, fact)
        elif type(fact) is Checkpoint:
            run.hpos = index + 1
            begin_at_checkpoint(run, fact)
        else:
            raise ValueError(f"fact {begin} is a {type(fact).__name__}, not a Start or a Checkpoint")
    except _Finish as f:
        return f.outcome
    session = debug.session  # flow2py run --pdb/--trace/--break (docs/spec/debugging.md)
    if session is not None and not run.replay:
        session.begin()
        try:
            return loop(run)
        finally:
            session.end()
    return loop(run)


def _new_run(entry: Optional[Callable], history: list, o: DriveOptions) -> RunState:
    """The run's state from the options: refuses a live run without a recorder or with a
    reachable Tool unbound."""
    replay = o.mode == "replay"
    dispatcher = None
    if not replay:
        if o.recorder is None:
            raise ValueError("a live run needs a recorder")
        bindings = BINDINGS if o.bindings is None else o.bindings
        if o.reachable is not None:
            missing = bindings.missing(o.reachable)
            if missing:
                raise MissingBindings(missing)
        if o.mode != "live":
            raise ValueError(f"mode must be 'live' or 'replay', not {o.mode!r}")
        dispatcher = Dispatcher(
            bindings,
            run_id=getattr(o.recorder, "run_id", None),
            store=getattr(o.recorder, "store", None),
            completions=o.completions,
        )
    resend = set(() if replay else o.resend or ())
    cut = tuple(() if replay else o.cut or ())
    return RunState(
        replay=replay,
        history=history,
        first=o.first,
        recorder=None if replay else o.recorder,
        dispatcher=dispatcher,
        every=o.checkpoint_every,
        resolve=o.resolve or module_resolver(entry),
        classes=o.classes if o.classes is not None else lambda: _default_classes(entry),
        inline=o.inline,
        idle=None if replay else o.idle,
        resend=resend,
        cut=cut,
        carried=dict(o.carried_replies or {}),
        carried_calls=o.carried_calls or {},
        parked_specs=dict(o.parked_specs or {}),
        sites=None if replay else getattr(o.recorder, "call_site", None),
        hlen=len(history),
        at_end=bool(resend or cut),
        completions=dispatcher.completions if dispatcher else None,
    )


def _default_classes(entry: Optional[Callable]) -> ClassTable:
    if entry is not None and hasattr(entry, "__globals__"):
        return class_table(entry)
    return STD_CLASSES


def start_run(
    entry: Callable,
    args: tuple,
    options: DriveOptions,
    *,
    start: Optional[Start] = None,
    program: str = "",
    std: str = "std@v1",
) -> Outcome:
    """Record the Start of a new live run through `options.recorder` and drive it:
    `drive(entry, [start], options)`.

    `start` defaults to a Start naming `program` (identity) and `std`, the entry function's
    name and `args`, and the runtime's data version.
    """
    if start is None:
        from flowrt.history.trace import DATA_VERSION

        params = getattr(getattr(entry, "__flow__", None), "params", ())
        start = Start(program, std, DATA_VERSION, entry.__name__, tuple(args), tuple(params))
    elif tuple(start.input) != tuple(args):
        raise ValueError("start.input differs from args")
    recorder = options.recorder
    if recorder is None:
        raise ValueError("a live run needs a recorder")
    recorder.record(start)
    recorder.sync()
    return drive(entry, [start], options)
