"""std's task operations as effectful functions (std@v1/task: spawn, await, stop, first).

Generated code yields the requests directly where it calls them (`t = yield rt.Spawn(f)`); these
generator functions are the same operations as function values, for code that passes
`task.spawn` around (`fs.map(task.spawn)`). A task spawned here belongs to this small frame and,
being its return value, is handed straight to the caller (docs/spec/concurrency.md).
"""

from __future__ import annotations

from flowrt.data.requests import Await, First, Spawn, StopTask, fn

__all__ = ["task_spawn", "task_await", "task_stop", "task_first"]


@fn("std@v1/task::spawn", params=("f",))
def task_spawn(f):
    return (yield Spawn(f))


@fn("std@v1/task::await", params=("t",))
def task_await(t):
    return (yield Await(t))


@fn("std@v1/task::stop", params=("t",))
def task_stop(t):
    return (yield StopTask(t))


@fn("std@v1/task::first", params=("tasks",))
def task_first(tasks):
    return (yield First(tasks))
