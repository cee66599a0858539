"""A drive's state: one `RunState`, passed explicitly to every function of the run.

`RunState` holds everything a drive knows; the modules above this one (record, task_ops, calls,
checkpoints, run_loop) are plain functions over it, each taking it as their first argument
(`run`). Its fields are set once by `flowrt.engine.drive.drive` and then changed only by those
functions. `OpenToolCall` is one open Tool call. The helpers here are what every part needs:
the program's class table (made on first use), the number of the next fact, and stopping
Diverged or Incomplete (a verdict in replay, a refused resume live).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from flowrt.data.tasks import Task
from flowrt.data.values import ClassTable
from flowrt.engine.outcomes import Diverged, Incomplete, ResumeRefused, _Finish
from flowrt.engine.tools import Dispatcher


class OpenToolCall:
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


@dataclass(slots=True, eq=False)
class RunState:
    """Everything one drive knows. Set up by `drive`; read and changed by the run's functions."""

    # -- what the drive was given (DriveOptions, resolved) --
    replay: bool  # mode == "replay": serve the history and give a verdict, record and send nothing
    history: list  # the facts given; history[0] is fact number `first`
    first: int  # the fact number of history[0]
    recorder: Any  # live: every new fact goes through it (record, sync); None in replay
    dispatcher: Optional[Dispatcher]  # live: sends calls to their implementations; None in replay
    every: Optional[int]  # checkpoint_every: facts since the last checkpoint before taking one
    resolve: Callable[[str], Optional[Callable]]  # decl id -> the program's function (checkpoints)
    classes: Any  # the program's ClassTable, or a function making it (classes_of makes it once)
    inline: Any  # an idle driver may run a sync implementation itself; "always": every one (calls.dispatch)
    resend: set  # ids of open calls to send again once history is exhausted
    cut: tuple  # ids of open calls a crash cut: answered Unknown once history is exhausted
    carried: dict  # call id -> reply recorded before the checkpoint to a call a parked task carries
    carried_calls: dict  # call id -> Call fact of a parked call, when not in history (to show it)
    parked_specs: dict  # call id -> ToolSpec of a checkpoint's parked call (to check its reply)
    #: live: the recorder's `call_site(call id, Flow file, line)`, told where each Call was made
    #: (a host record beside history, flowrt.history.recorder), or None: it keeps none
    sites: Optional[Callable] = None
    # live: completions to admit when nothing else can move (DriveOptions.idle)
    idle: Optional[Callable] = None
    # -- where the run is in its history --
    hpos: int = 0  # index in history of the next fact to serve (or, at its end, to record)
    hlen: int = 0  # len(history)
    at_end: bool = False  # something to do once history is exhausted (resend or cut non-empty)
    # -- the scheduler --
    ready: deque = field(default_factory=deque)  # tasks ready to run, FIFO
    open: dict = field(default_factory=dict)  # call id -> OpenToolCall, in the order made
    outstanding: int = 0  # calls sent to an implementation whose completion is not taken yet
    arrived: deque = field(default_factory=deque)  # (call id, outcome) taken, not admitted yet
    unsent: deque = field(default_factory=deque)  # OpenToolCalls recorded this round, not sent yet
    completions: Any = None  # the dispatcher's completion queue (live), else None
    live: dict = field(default_factory=dict)  # Task -> None: not stopped, not (finished and settled)
    root: Optional[Task] = None  # the root task (renamed c<n>:root at each checkpoint)
    finish_seq: int = 0  # tasks finished so far (orders `task.first` over finished tasks)
    # -- checkpoints --
    fresh: bool = False  # a fact was recorded or served since the last checkpoint candidate
    since_cp: int = 0  # facts since the last checkpoint (or Start)
    cp_count: int = 0  # the number of the last checkpoint taken or begun at
    # -- interruptions --
    fault_chain: tuple = ()  # the faulting task's Flow call chain (describe.flow_chain), for RunFaulted
    halted_in: Optional[tuple] = None  # (OpenToolCall, from a worker) whose implementation halted


def classes_of(run: RunState) -> ClassTable:
    """The program's class table, made on first use."""
    classes = run.classes
    if not isinstance(classes, ClassTable):
        classes = run.classes = classes()
    return classes


def fact_no(run: RunState) -> int:
    """The number of the next fact (the one at `hpos`)."""
    return run.first + run.hpos


def diverge(run: RunState, reason: str, n: Optional[int] = None):
    """The program and the history part: Diverged in replay, a refused resume live."""
    verdict = Diverged(run.first + run.hpos if n is None else n, reason)
    if run.replay:
        raise _Finish(verdict)
    raise ResumeRefused(verdict)


def incomplete(run: RunState, reason: str):
    """The program needs what the history does not hold: Incomplete in replay, refused live."""
    verdict = Incomplete(reason)
    if run.replay:
        raise _Finish(verdict)
    raise ResumeRefused(verdict)
