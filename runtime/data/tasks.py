"""Tasks as the driver keeps them, and the value walks that ownership and checkpoints need.

A `Task` is the scheduler's record of one task *and* the handle a program holds (`rt.Task`,
never data). Its work is an explicit stack of generator frames (`stack[0]` the outermost); the
driver (flowrt.engine.drive) runs it. Ownership: every task belongs to one frame of one task
(`owner`, `odepth`); `owned` maps a frame's depth to the tasks it owns, in the order it got them.

The walks here never recurse on the value's depth where a program value can be deep (a list
built from an enum can nest 100,000 levels): `scan` uses an explicit stack. `rebuild` (used
only to replace tasks inside checkpoint arguments, which are rare and shallow) recurses, and a
RecursionError there only declines the checkpoint.
"""

from __future__ import annotations

import decimal
import functools
import types
from typing import Any, Callable, Optional

from flowrt.data.facts import ParkedTask
from flowrt.data.values import (
    STD_CLASSES,
    ClassTable,
    Dict,
    Duration,
    Enum,
    HostToken,
    Hole,
    Instant,
    List,
    Record,
    Set,
    dict_of,
    list_of,
    set_of,
)

__all__ = ["Task"]

# Task states
READY = 0  # in the ready queue, or new (not started)
CALL = 1  # blocked on its open Tool call
AWAIT = 2  # blocked in task.await
FIRST = 3  # blocked in task.first
FINISHED = 4  # its outermost frame returned; `value` holds the result
STOPPED = 5  # stopped while running
FAULTED = 6  # raised a fault (the run is ending)


class Task:
    """A task: an id, an explicit stack of generator frames, and its place in the ownership tree."""

    __slots__ = (
        "id",
        "stack",
        "start",
        "resume",
        "state",
        "value",
        "call",
        "ncalls",
        "nspawns",
        "owned",
        "owner",
        "odepth",
        "waiters",
        "waiting",
        "finish_seq",
        "settled",
        "parked",
        "__weakref__",
    )

    def __init__(
        self, id: str, start: Optional[Callable] = None, owner: Optional["Task"] = None, odepth: int = 0
    ):
        self.id = id
        self.stack: list = []
        self.start = start  # zero-argument callable run when the task first runs
        self.resume = None  # value sent to the top frame when the task next runs
        self.state = READY
        self.value = None
        self.call = None  # the open call (flowrt.engine.state.OpenToolCall) while state == CALL
        self.ncalls = 0
        self.nspawns = 0
        self.owned: dict[int, dict["Task", None]] = {}
        self.owner = owner
        self.odepth = odepth
        self.waiters: dict["Task", Any] = {}  # task waiting on this one -> its wait token
        self.waiting = None  # while AWAIT/FIRST: (token, tasks) this task waits on
        self.finish_seq = 0
        self.settled = False  # observed by await / picked by first / stopped: needs no Stop
        # (call id, park, value) once a parkable task's only call was answered: a task finished
        # from that call still counts as parked for a checkpoint (flowrt.engine.checkpoints._checkpoint_args)
        self.parked = None

    def __repr__(self):
        return f"<task {self.id}>"

    def __flow_text__(self):
        return f"<task {self.id}>"


_ATOMS = frozenset(
    {
        str,
        int,
        bool,
        float,
        type(None),
        bytes,
        decimal.Decimal,
        Duration,
        Instant,
        HostToken,
    }
)
_FUNCS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial, type)


def scan(value: Any) -> tuple[list, bool, bool]:
    """(tasks in first-appearance order, whether a function value occurs, whether a Hole occurs).

    Walks tuples, Lists, Dicts, Sets, records, enum values, closures' captured cells and
    `functools.partial` arguments, left to right.
    """
    t = type(value)
    if t in _ATOMS:
        return [], False, False
    if t is Task:  # a frame returning the task it spawned (task.spawn, task.all's spawning map)
        return [value], False, False
    tasks: list = []
    fns = holes = False
    seen: set = set()
    todo = [value]
    pop, push = todo.pop, todo.append
    while todo:
        v = pop()
        t = type(v)
        if t in _ATOMS:
            continue
        if t is Hole:
            holes = True
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        if t is Task:
            tasks.append(v)
            continue
        if t is tuple or t is List:
            todo.extend(reversed(v))
        elif isinstance(v, (Record, Enum)):
            todo.extend(reversed(v._flow_values()))
        elif t is Dict:
            for k, x in reversed(v.items()):
                push(x)
                push(k)
        elif t is Set:
            todo.extend(reversed(v.elements()))
        elif t is ParkedTask:
            continue
        elif t is types.FunctionType:
            fns = True
            for c in reversed(v.__closure__ or ()):
                try:
                    push(c.cell_contents)
                except ValueError:  # an empty cell (a local function not yet defined)
                    pass
            if v.__defaults__:
                todo.extend(reversed(v.__defaults__))
        elif t is functools.partial:
            fns = True
            todo.extend(reversed(tuple(v.keywords.values())))
            todo.extend(reversed(v.args))
            push(v.func)
        elif t is types.MethodType:
            fns = True
            push(v.__self__)
        elif callable(v):
            fns = True
    return tasks, fns, holes


def has_hole(value: Any) -> bool:
    if type(value) in _ATOMS:
        return False
    return scan(value)[2]


def walk(value: Any):
    """Every value in `value`, itself first, depth first and left to right, through tuples,
    Lists, Dicts, Sets, records, enum values and a ParkedTask's data (an explicit stack: data can
    nest deeper than Python recursion goes)."""
    todo = [value]
    while todo:
        v = todo.pop()
        yield v
        t = type(v)
        if t in _ATOMS:
            continue
        if t is tuple or t is List:
            todo.extend(reversed(v))
        elif t is Dict:
            for k, x in reversed(v.items()):
                todo += (x, k)
        elif t is Set:
            todo.extend(reversed(v.elements()))
        elif t is ParkedTask:
            todo.extend(reversed(v.data))
        elif isinstance(v, (Record, Enum)):
            todo.extend(reversed(v._flow_values()))


def holds_parked(value: Any) -> bool:
    """Whether a ParkedTask occurs in `value` (a checkpoint's or a fork's Start's arguments)."""
    return any(type(v) is ParkedTask for v in walk(value))


def rebuild(value: Any, swap: Callable[[Any], Any], kinds: tuple) -> Any:
    """`value` with every object of a type in `kinds` replaced by `swap(obj)` (others shared)."""
    t = type(value)
    if t in kinds:
        return swap(value)
    if t in _ATOMS:
        return value
    if t is tuple:
        new = tuple(rebuild(x, swap, kinds) for x in value)
        return value if all(a is b for a, b in zip(new, value)) else new
    if t is List:
        new = [rebuild(x, swap, kinds) for x in value]
        return value if all(a is b for a, b in zip(new, value)) else list_of(new)
    if isinstance(value, (Record, Enum)):
        old = value._flow_values()
        new = tuple(rebuild(x, swap, kinds) for x in old)
        return value if all(a is b for a, b in zip(new, old)) else t(*new)
    if t is Dict:
        pairs = [(rebuild(k, swap, kinds), rebuild(x, swap, kinds)) for k, x in value.items()]
        same = all(a is k and b is x for (a, b), (k, x) in zip(pairs, value.items()))
        return value if same else dict_of(pairs)
    if t is Set:
        new = [rebuild(x, swap, kinds) for x in value]
        return value if all(a is b for a, b in zip(new, value.elements())) else set_of(new)
    return value


# ---- the constructor of a parked task, as a checkpoint names it ---------------------------------


def ctor_text(cls: Optional[type], at: int) -> Optional[str]:
    """`main::Msg.Received` (enum constructor) or `main::Arrived` (record), then `#at` when the
    reply is not the constructor's first argument; None for a bare reply."""
    if cls is None:
        return None
    if issubclass(cls, Record):
        text = cls.__flow_decl__
    else:
        text = f"{cls.__flow_decl__}.{cls.__flow_ctor__}"
    return f"{text}#{at}" if at else text


def ctor_class(text: Optional[str], classes: Optional[ClassTable] = None) -> tuple[Optional[type], int]:
    """The inverse of `ctor_text`: (class, reply position), the class taken from `classes`, the
    class table of the program restoring the checkpoint (default: std's built-in classes only)."""
    if text is None:
        return None, 0
    name, _, at = text.partition("#")
    module, _, last = name.rpartition("::")
    if "." in last:
        enum, ctor = last.split(".", 1)
        key = (f"{module}::{enum}", ctor)
    else:
        key = (name, last)
    cls = (STD_CLASSES if classes is None else classes).get(key)
    if cls is None:
        raise LookupError(f"no class for the constructor {text!r} in the program's class table")
    return cls, int(at) if at else 0


def build_parked(park: tuple, reply: Any) -> Any:
    """The value of a parked task from its reply: `ctor(*data[:at], reply, *data[at:])`."""
    ctor, data, at = park
    if ctor is None:
        return reply
    return ctor(*data[:at], reply, *data[at:])
