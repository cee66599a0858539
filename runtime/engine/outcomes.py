"""What a drive ends with: the outcomes, and the exceptions that refuse a run.

A drive ends in exactly one way. A live run (new or resumed) completes, faults or pauses with
calls open: RunCompleted / RunFaulted / RunPaused; or it is halted from outside the program
(Ctrl-C, a Tool calling sys.exit, quitting pdb: flowrt.engine.interrupts), RunHalted, with no End. A replay gives a verdict on its history:
Matched (every fact was reproduced and End reached), Incomplete (the program needs a fact the
history does not hold: it ends early, or a value is a redacted hole) or Diverged (the program
would record something other than the recorded fact; numbered from Start = 1). Each outcome
carries the CLI's exit code and the first line it prints (docs/spec/execution.md), so every host reports a
run the same way.

Two ways of refusing are exceptions rather than outcomes, because nothing was recorded and the
host asked for something impossible: ResumeRefused wraps the Diverged/Incomplete verdict a
replay would give when a live run's history does not fit the program, and ResendRefused names a
call that cannot be sent again. `_Finish` is internal: the run loop raises it from any depth to
unwind the scheduler with its outcome (flowrt.engine.run_loop).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from flowrt.data.exit_codes import EXIT_DIVERGED, EXIT_FAULTED, EXIT_HALTED, EXIT_OK, EXIT_PAUSED
from flowrt.data.facts import Faulted
from flowrt.data.values import show

__all__ = [
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
]


class Outcome:
    """What `drive` returns. `exit_code` is the CLI's (flowrt.data.exit_codes), `line()` its first line."""

    exit_code = EXIT_OK

    def line(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class OpenCall:
    id: str  # "c1:root#2"
    tool: str  # "human.ask" ("" when only the id is known: a parked call restored from a checkpoint
    #            whose Call fact is not at hand)
    args: Optional[tuple] = field(default=None, compare=False)  # the call's arguments, when known

    def text(self) -> str:
        """`human.ask("Which browser?")`: the call as history shows it (the Tool alone when its
        arguments are not known)."""
        if self.args is None:
            return self.tool or "?"
        return f"{self.tool}({', '.join(show(a) for a in self.args)})"


@dataclass(frozen=True)
class RunCompleted(Outcome):
    value: Any
    exit_code = EXIT_OK

    def line(self):
        return show(self.value)


@dataclass(frozen=True)
class RunFaulted(Outcome):
    fault: Faulted
    #: the faulting task's Flow call chain, outermost first: (function, file, line) each (not
    #: history: the End records the fault's message and location only)
    chain: tuple = field(default=(), compare=False)
    exit_code = EXIT_FAULTED

    def line(self):
        f = self.fault
        return f"faulted at {f.file}:{f.line}: {f.message}"


@dataclass(frozen=True)
class RunPaused(Outcome):
    open: tuple  # OpenCall, in the order the calls were made
    exit_code = EXIT_PAUSED

    def line(self):
        return "paused, waiting on " + ", ".join(f"{c.id} ({c.tool})" if c.tool else c.id for c in self.open)


@dataclass(frozen=True)
class RunHalted(Outcome):
    """A live run stopped by something outside the program (flowrt.engine.interrupts): nothing is
    recorded for it (no Reply, no End); its open calls stay open for a resume."""

    reason: str  # "interrupted (Ctrl-C) while svc.slow (root#1) was running"
    open: tuple  # OpenCall, in the order the calls were made
    cause: Optional[BaseException] = field(default=None, compare=False, repr=False)
    exit_code = EXIT_HALTED

    def line(self):
        return f"halted: {self.reason}; no End is recorded"


@dataclass(frozen=True)
class Matched(Outcome):
    end: Any = None  # the End fact reached
    exit_code = EXIT_OK

    def line(self):
        return "Matched"


@dataclass(frozen=True)
class Incomplete(Outcome):
    reason: str
    exit_code = EXIT_PAUSED

    def line(self):
        return f"Incomplete: {self.reason}"


@dataclass(frozen=True)
class Diverged(Outcome):
    fact: int  # 1-based fact number (Start is fact 1)
    reason: str
    exit_code = EXIT_DIVERGED

    def line(self):
        return f"Diverged at fact {self.fact}: {self.reason}"


class ResendRefused(Exception):
    """`DriveOptions.resend` named a call that cannot be sent again (not open when the history
    ends, or restored from a checkpoint without its arguments); nothing new was recorded."""


class ResumeRefused(Exception):
    """A live run over a history (resume) found the history does not fit the program; nothing was
    recorded. `verdict` is the Diverged or Incomplete that replay would report."""

    def __init__(self, verdict: Outcome):
        super().__init__(verdict.line())
        self.verdict = verdict


class _Finish(Exception):
    """Unwinds the scheduler with the outcome."""

    def __init__(self, outcome: Outcome):
        self.outcome = outcome
