"""How the driver judges and names what it sees: facts compared, facts described, faults located.

Replay and resume hinge on one comparison: the fact the program would record now against the
next recorded one. Plain equality decides it, with one exception: a store may redact a value,
leaving a Hole, and a Hole in the record matches whatever the program computed (`_same`). The
hole-aware walk (`_same_with_holes`) runs only when the recorded value holds a hole, so the
common case stays a single `==`. A hash alone cannot stand in for a value here: the store's
hashing is not the driver's.

When the comparison fails, the reason names both sides in the seed's illustrative notation
(`describe`: "Call root#2 human.ask(...)"), so a Diverged verdict reads like the history it
contradicts.

A fault is reported at a source position. For an exception raised while running Flow code
the innermost frame of generated code (a `.flow` filename) is the answer, else the innermost
frame outside flowrt (a host's Tool, say), else the innermost at all (`_locate_exception`). For
a fault the driver itself detects (await of a stopped task, stack exhausted) the task's top
suspended frame is the position (`_locate_task`).
"""

from __future__ import annotations

import os

from flowrt.data.facts import Call, Checkpoint, Choice, Completed, End, ParkedTask, Reply, Start, Stop
from flowrt.data.ops import Fault
from flowrt.data.tasks import Task, has_hole
from flowrt.data.values import show

_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # runtime/, above engine/


def _args_text(args) -> str:
    return "(" + ", ".join(show(a) for a in args) + ")"


def describe(fact) -> str:
    """A fact in the seed's illustrative notation (used in divergence reasons)."""
    t = type(fact)
    if t is Call:
        return f"Call {fact.id} {fact.tool}{_args_text(fact.args)}"
    if t is Reply:
        return f"Reply {fact.id} {show(fact.reply)}"
    if t is Choice:
        return f"Choice {fact.task} picked {fact.picked}"
    if t is Stop:
        if fact.found == "finished":
            return f"Stop {fact.task} found finished with {show(fact.value)}"
        closed = ", ".join(c.call for c in fact.closed)
        return f"Stop {fact.task} found running" + (f" closed {closed}" if closed else "")
    if t is Checkpoint:
        return f"Checkpoint {fact.checkpoint} {fact.function}{_args_text(fact.args)}"
    if t is End:
        e = fact.end
        if type(e) is Completed:
            return f"End Completed({show(e.value)})"
        return f"End Faulted({show(e.message)} at {e.file}:{e.line})"
    if t is Start:
        return f"Start {fact.entry}"
    return repr(fact)


def _same(recorded, actual) -> bool:
    """Equal, where a Hole in the record (a redacted value) matches whatever the program computed:
    a hash alone cannot be compared with a value here (the store's hashing is not the driver's)."""
    if recorded == actual:
        return True
    if not has_hole(recorded):
        return False
    return _same_with_holes(recorded, actual)


def _same_with_holes(r, a) -> bool:
    from flowrt.data.values import Dict, Enum, Hole, List, Record, Set

    if type(r) is Hole:
        return True
    if type(r) is not type(a):
        return False
    if type(r) in (tuple, List):
        return len(r) == len(a) and all(_same_with_holes(x, y) for x, y in zip(r, a))
    if isinstance(r, (Record, Enum)):
        return _same_with_holes(r._flow_values(), a._flow_values())
    if type(r) is Dict:
        return _same_with_holes(tuple(r.items()), tuple(a.items()))
    if type(r) is Set:
        return _same_with_holes(r.elements(), a.elements())
    if type(r) is ParkedTask:
        return r == a
    return r == a


def _locate_exception(exc: BaseException) -> tuple[str, int]:
    """The innermost traceback frame of generated Flow code (a `.flow` co_filename); else the
    innermost frame outside flowrt; else the innermost frame."""
    tb = exc.__traceback__
    flow = outside = last = None
    while tb is not None:
        code = tb.tb_frame.f_code
        here = (code.co_filename, tb.tb_lineno)
        last = here
        if code.co_filename.endswith(".flow"):
            flow = here
        elif not code.co_filename.startswith(_RUNTIME_DIR):
            outside = here
        tb = tb.tb_next
    return flow or outside or last or ("<unknown>", 0)


def _locate_task(task: Task) -> tuple[str, int]:
    """Where a task is suspended: its top frame (for faults the driver itself detects)."""
    for gen in reversed(task.stack):
        frame = gen.gi_frame
        if frame is not None:
            return frame.f_code.co_filename, frame.f_lineno
    return "<unknown>", 0


def flow_chain(task: Task, exc: BaseException | None = None) -> tuple:
    """The Flow call chain of a faulting task, outermost first: `(function, file, line)` for
    each frame of generated Flow code (a `.flow` co_filename): the task's suspended frames (the
    trampoline's stack, each at the line of its call), then the frames `exc` was raised through
    (the frame that raised, and pure calls below it, which are plain Python calls)."""
    out = []
    for gen in task.stack:
        frame = gen.gi_frame
        if frame is not None and frame.f_code.co_filename.endswith(".flow"):
            out.append((frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno))
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.endswith(".flow"):
            out.append((code.co_name, code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return tuple(out)


def _exception_message(e: BaseException) -> str:
    if isinstance(e, Fault):
        return e.message
    if isinstance(e, RecursionError):
        return "stack exhausted"
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__
