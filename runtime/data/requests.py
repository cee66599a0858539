"""What generated code yields to the driver (docs/spec/abi.md, "Requests a generator yields").

An effectful Flow function is a Python generator. It talks to the driver by yielding one of the
request objects below (or a generator object: a call of another effectful function) and receives
the answer as the value of the `yield` expression. A tail call is *returned*, not yielded:
`return TailCall(f, args)`, so the driver replaces the frame and a loop never grows a stack.

Requests are plain slotted classes, not dataclasses: the driver dispatches on `type(req) is ...`
and a generated program creates one per Tool call, so construction must cost one small call.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

__all__ = [
    "ToolSpec",
    "ToolCall",
    "ParkCall",
    "Spawn",
    "Await",
    "StopTask",
    "First",
    "TailCall",
    "FlowFn",
    "fn",
    "lift",
    "with_type_args",
    "module_resolver",
    "MAX_DEPTH",
]

#: Frames one task's explicit stack may hold; one more is the fault "stack exhausted".
#: 100,000 generator frames take about 26 MB (docs/spec/abi.md "Requests a generator yields").
MAX_DEPTH = 100_000


class ToolSpec:
    """A Tool declaration as the runtime sees it; emitted once per Tool by its declaring module.

    `tool_id` is the declaration identity ("planner::next", the key history and bindings use),
    `name` the qualified name as programs write it ("planner.next"), `params` the parameter names,
    `result` the type descriptor of the declared `Result<T, E>` (flowrt.data.typedesc), `type_params` the
    number of type parameters of a generic Tool.
    """

    __slots__ = ("tool_id", "name", "params", "result", "type_params", "admitters", "checks")

    def __init__(self, tool_id: str, name: str, params: tuple = (), result: Any = None, type_params: int = 0):
        self.tool_id = tool_id
        self.name = name
        self.params = tuple(params)
        self.result = result
        self.type_params = type_params
        #: type args -> the compiled admission of a reply (flowrt.engine.tools.admitter); filled on use
        self.admitters: dict = {}
        #: type args -> the check of a stored reply against the result (flowrt.history.stored); on use
        self.checks: dict = {}

    def __repr__(self):
        return f"ToolSpec({self.tool_id!r}, {self.name!r})"


class ToolCall:
    """`x = yield ToolCall(SPEC, (a, b))`: a Tool call; the generator receives the admitted reply.

    `type_args` are type descriptors for a generic Tool's type parameters, in order.
    `park` is set only by `ParkCall` (see there).
    """

    __slots__ = ("spec", "args", "type_args", "park")

    def __init__(self, spec: ToolSpec, args: tuple = (), type_args: tuple = (), park=None):
        self.spec = spec
        self.args = args
        self.type_args = type_args
        self.park = park

    def __repr__(self):
        return f"ToolCall({self.spec.name}, {self.args!r})"


def ParkCall(
    spec: ToolSpec,
    args: tuple = (),
    ctor: Optional[type] = None,
    data: tuple = (),
    at: int = 0,
    type_args: tuple = (),
) -> ToolCall:
    """The whole body of a *parkable* task (abi.md, "Parkable tasks").

    `return (yield rt.ParkCall(SPEC, args, ctor, data, at))` makes the Tool call and returns
    `ctor(*data[:at], reply, *data[at:])` (or the reply itself when `ctor` is None). The driver
    builds that value, so a task parked on this call can be recorded in a checkpoint as its call
    id, `ctor` and `data`, and rebuilt from them on resume.
    """
    return ToolCall(spec, args, type_args, (ctor, tuple(data), at))


class Spawn:
    """`t = yield Spawn(f)`: `task.spawn(f)`; `f` a zero-argument function value. Receives the Task."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable):
        self.fn = fn


class Await:
    """`x = yield Await(t)`: `task.await(t)`; receives the task's value."""

    __slots__ = ("task",)

    def __init__(self, task):
        self.task = task


class StopTask:
    """`yield StopTask(t)`: `task.stop(t)`; receives None (Unit)."""

    __slots__ = ("task",)

    def __init__(self, task):
        self.task = task


class First:
    """`x = yield First(tasks)`: `task.first(tasks)`; receives `(index, value)`."""

    __slots__ = ("tasks",)

    def __init__(self, tasks):
        self.tasks = tasks


class TailCall:
    """`return TailCall(f, (a, b))`: a tail call of the effectful function `f`.

    The driver replaces the returning frame with `f(*args)`, keeping the frame's tasks.
    `type_args` (type descriptors) are recorded by a checkpoint taken at a generic function.
    """

    __slots__ = ("fn", "args", "type_args")

    def __init__(self, fn: Callable, args: tuple = (), type_args: tuple = ()):
        self.fn = fn
        self.args = args
        self.type_args = type_args

    def __repr__(self):
        return f"TailCall({getattr(self.fn, '__qualname__', self.fn)!r}, {self.args!r})"


class FlowFn:
    """`f.__flow__`: what the runtime knows about a generated top-level function.

    `typed`: the function takes its type arguments, a tuple of descriptors, as its first
    parameter (before `params`): a generic function whose body needs them (abi.md, "Type
    arguments at run time"). `types`: the parameters' type descriptors (None where a parameter
    is a task or a function), or a zero-argument function making them (called once, on first
    use); None when not given."""

    __slots__ = ("decl", "params", "top_level", "typed", "types")

    def __init__(self, decl: str, params: tuple, top_level: bool, typed: bool = False, types=None):
        self.decl = decl
        self.params = params
        self.top_level = top_level
        self.typed = typed
        self.types = types

    def __repr__(self):
        return f"FlowFn({self.decl!r})"


def fn(decl: str, params: tuple = (), top_level: bool = True, typed: bool = False, types=None):
    """`@rt.fn("main::work", params=("ticket", "notes", "round"))`: attach `__flow__` metadata.

    Does not wrap: the decorated function is returned unchanged, so calling it costs nothing
    extra. Only a top-level function (the default) can be the function of a checkpoint.
    `typed=True`: its first parameter is its type arguments (see FlowFn). `types`: the
    parameters' descriptors, or a zero-argument function making them; a stored Start input or
    checkpoint's arguments are checked against them before the function sees them
    (flowrt.history.stored).
    """

    def deco(f):
        f.__flow__ = FlowFn(decl, tuple(params), top_level, typed, types)
        return f

    return deco


def with_type_args(f: Callable, type_args: tuple) -> Callable:
    """A typed generic function used as a value, at one instantiation: `f` with its type
    arguments bound (called with the Flow arguments only). Not a top-level function any more:
    a tail call through it is not a checkpoint's place."""
    return functools.partial(f, type_args)


def module_resolver(entry: Callable) -> Callable[[str], Optional[Callable]]:
    """Find a checkpoint's function by declaration id among the top-level functions of the
    entry function's own module. There is deliberately no process-wide registry: two programs
    (say a run and its fork on a newer version) can share one process and a declaration id.
    Hosts whose programs span modules pass their own resolver to `drive`."""
    table = {}
    for v in list(getattr(entry, "__globals__", {}).values()):
        meta = getattr(v, "__flow__", None)
        if isinstance(meta, FlowFn) and meta.top_level:
            table.setdefault(meta.decl, v)
    return table.get


def lift(f: Callable) -> Callable:
    """A pure function value passed where an effectful one is expected: a generator function
    that returns `f(*args)` without yielding."""

    def lifted(*args):
        return f(*args)
        yield  # unreachable: makes `lifted` a generator function

    lifted.__wrapped__ = f
    lifted.__qualname__ = getattr(f, "__qualname__", "lifted")
    return lifted
