"""The driver: one trampoline and scheduler for live runs, resume and replay.

How it works: docs/spec/execution.md has the rules, docs/spec/concurrency.md the task semantics.
`drive` (here) checks its arguments, builds a run and begins it at Start or at a Checkpoint; the
run itself is split along its seams, each module opening with its own account:

* flowrt.engine.run_loop    -- `_Run`: facts recorded or checked, the scheduler, the trampoline, the end;
* flowrt.engine.calls       -- Tool calls sent and replies admitted, one event at a time;
* flowrt.engine.task_ops    -- spawn, await, first, stop, and task ownership;
* flowrt.engine.checkpoints -- when a checkpoint is taken, what it holds, restoring from one;
* flowrt.engine.describe    -- fact comparison (holes match anything), fact text, fault positions;
* flowrt.engine.outcomes    -- what a drive returns (RunCompleted ... Diverged) and its refusals.

Admitting the same facts in the same order reproduces the run: everything between two
admissions is a deterministic function of the facts admitted so far.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

from flowrt.data.facts import Checkpoint, Start
from flowrt.engine.checkpoints import latest_checkpoint
from flowrt.engine.describe import describe  # noqa: F401  (divergence text; tests import it from here)
from flowrt.engine.outcomes import (  # noqa: F401  (re-exported: flowrt.engine.drive.<name> works as before)
    Diverged, Incomplete, Matched, OpenCall, Outcome, ResendRefused, ResumeRefused, RunCompleted,
    RunFaulted, RunHalted, RunPaused, _Finish,
)
from flowrt.data.requests import ToolSpec, module_resolver
from flowrt.engine.run_loop import _Run
from flowrt.engine.tools import BINDINGS, Bindings, MissingBindings
from flowrt.data.values import STD_CLASSES, ClassTable, class_table

__all__ = [
    "drive", "start_run", "latest_checkpoint", "MemoryRecorder", "Outcome", "OpenCall",
    "RunCompleted", "RunFaulted", "RunPaused", "RunHalted", "Matched", "Incomplete", "Diverged",
    "ResumeRefused", "ResendRefused", "MissingBindings",
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


# ---- entry points -----------------------------------------------------------------------------------

def drive(
    entry: Optional[Callable],
    *,
    history: Sequence,
    first: int = 1,
    begin: Any = "latest",
    mode: str = "live",
    recorder=None,
    bindings: Optional[Bindings] = None,
    reachable: Optional[Iterable[ToolSpec]] = None,
    checkpoint_every: Optional[int] = None,
    resolve: Optional[Callable[[str], Optional[Callable]]] = None,
    classes: Optional[ClassTable] = None,
    inline: bool = True,
    resend: Iterable[str] = (),
    carried_replies: Optional[dict] = None,
    cut: Iterable[str] = (),
    carried_calls: Optional[dict] = None,
    parked_specs: Optional[dict] = None,
) -> Outcome:
    """Run a program over its history: live (a new run or a resume) or replay.

    `history`: the run's facts, `history[0]` being fact number `first` (1 unless earlier facts
    were archived). A new live run passes just its Start fact (see `start_run`). `begin`:
    `"latest"` (the latest Checkpoint in `history`, else Start), `1` (Start), or the fact number
    of a Checkpoint. `entry`: the entry function, called with Start's input when beginning at
    Start. `mode="live"` serves the history, then records every new fact through `recorder` and
    dispatches calls to `bindings`; `mode="replay"` serves the history and returns a verdict,
    binding nothing. `reachable`: the ToolSpecs the program can reach; a live run with one of
    them unbound is refused (MissingBindings) before anything happens. `checkpoint_every=N`:
    take a checkpoint at the first eligible tail call once N facts were recorded since the last
    one. `resolve(decl_id)` finds a checkpoint's function (default: functions registered by
    `rt.fn` in the entry function's module). `classes`: the program's class table
    (`Program.classes`), which rebuilds the values of a checkpoint's parked tasks by constructor
    name (default: the classes of the entry function's module, `rt.class_table(entry)`; std's
    built-in classes only without an entry). `inline=False` always hands sync calls to worker threads. `resend` (live): ids of
    calls open when the history ends that the host wants sent again to their bindings under the
    same id (after a crash); ResendRefused if one is not open then. `carried_replies`
    ({call id: reply}, in the order they were recorded): beginning at a checkpoint, the replies
    recorded *before* it to calls its parked tasks carry (history may start at the checkpoint,
    the earlier facts archived); such a task is restored finished. Replies the facts before the
    checkpoint in `history` hold are found there without it; other entries are ignored.
    `carried_calls` ({call id: Call fact}): beginning at a checkpoint whose Call facts are not in
    `history`, the Calls of its parked tasks' open calls, so a pause, a halt or an Incomplete names
    their Tool and arguments like any other call's (nothing is served from them).
    `cut` (live): ids, in call order, of calls a crash cut (open, neither answered nor left
    pending): once the history is exhausted each one still open is answered
    `Err(Unknown("process ended while the call was out"))`, admitted before any other reply.
    `parked_specs` ({call id: ToolSpec}): the Tools of those parked calls, whose Call facts come
    before the checkpoint; a reply to one is checked against its Tool's result type (without it,
    only that it is a Tool outcome at all).

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
    if mode == "replay":
        recorder = None
        bindings = None
    else:
        if recorder is None:
            raise ValueError("a live run needs a recorder")
        bindings = BINDINGS if bindings is None else bindings
        if reachable is not None:
            missing = bindings.missing(reachable)
            if missing:
                raise MissingBindings(missing)
    run = _Run(history, first, mode, recorder, bindings, checkpoint_every,
               resolve or module_resolver(entry), inline, () if mode == "replay" else resend,
               carried_replies, classes if classes is not None else lambda: _default_classes(entry),
               () if mode == "replay" else cut, carried_calls, parked_specs)
    if begin == "latest":
        begin = latest_checkpoint(history, first) or first
    index = begin - first
    if not 0 <= index < len(history):
        raise ValueError(f"fact {begin} is not in the history given (facts {first}..{first + len(history) - 1})")
    fact = history[index]
    run.hpos = index
    try:  # beginning may already decide a replay: Incomplete when the input or a checkpoint holds a hole
        if type(fact) is Start:
            if entry is None:
                raise ValueError("beginning at Start needs the entry function")
            run.begin_at_start(entry, fact)
        elif type(fact) is Checkpoint:
            run.hpos = index + 1
            run.begin_at_checkpoint(fact)
        else:
            raise ValueError(f"fact {begin} is a {type(fact).__name__}, not a Start or a Checkpoint")
    except _Finish as f:
        return f.outcome
    return run.loop()


def _default_classes(entry: Optional[Callable]) -> ClassTable:
    if entry is not None and hasattr(entry, "__globals__"):
        return class_table(entry)
    return STD_CLASSES


def start_run(entry: Callable, args: tuple, *, recorder, start: Optional[Start] = None,
              program: str = "", std: str = "std@v1", **kw) -> Outcome:
    """Record the Start of a new live run and drive it: `drive(entry, history=[start], ...)`.

    `start` defaults to a Start naming `program` (identity) and `std`, the entry function's
    name and `args`, and the runtime's data version.
    """
    if start is None:
        from flowrt.history.trace import DATA_VERSION

        params = getattr(getattr(entry, "__flow__", None), "params", ())
        start = Start(program, std, DATA_VERSION, entry.__name__, tuple(args), tuple(params))
    elif tuple(start.input) != tuple(args):
        raise ValueError("start.input differs from args")
    recorder.record(start)
    recorder.sync()
    return drive(entry, history=[start], recorder=recorder, **kw)
