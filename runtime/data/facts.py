"""The seven facts of a Flow run's semantic history (seed 000), as the runtime produces them.

Values inside facts are runtime Flow values (flowrt.data.values): the store encodes them (trace format,
docs/spec/trace.md) and `flowrt.data.values.show` renders them as Flow text. A Reply holds the outcome
as the program receives it: `Ok(v)` or `Err(problem)` of the call's Result<T, ToolProblem<E>>.

Every fact produced by a run passes through one Recorder (see `Recorder`), live or resumed; replay
reads facts and never records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol, Union


@dataclass(frozen=True, slots=True)
class Start:
    program: str  # program identity (blake3 hex)
    std: str  # "std@v1"
    data_version: int
    entry: str  # entry function name in the entry module, e.g. "main"
    input: tuple[Any, ...]  # the entry arguments, in parameter order (runtime values)
    param_names: tuple[str, ...] = ()
    parent: Optional[str] = None  # fork: the parent run id
    from_checkpoint: Optional[int] = None  # fork: the parent's checkpoint number


# Call and Reply, the two facts a Tool call makes, are not frozen: a frozen dataclass's __init__
# sets each field through object.__setattr__ (~8,500 instructions a Call against ~2,100), on a
# live run's path. They hash and compare as the frozen ones did (unsafe_hash: by their fields);
# nothing assigns a fact's field once made.
@dataclass(slots=True, unsafe_hash=True)
class Call:
    id: str  # "root#1", "c1:root/2#3"
    tool: str  # qualified name as the program wrote it: "web.search"
    tool_id: str  # declaration identity: "web::search"
    args: tuple[Any, ...]
    type_args: tuple[str, ...] = ()  # concrete type texts for a generic Tool


@dataclass(slots=True, unsafe_hash=True)
class Reply:
    id: str
    reply: Any  # Ok(v) | Err(ToolProblem)


@dataclass(frozen=True, slots=True)
class Choice:
    task: str  # the task that called first
    picked: str  # the task id picked


@dataclass(frozen=True, slots=True)
class Closed:
    call: str
    reply: Any = None  # the reply that had arrived (Ok/Err) or None: closed with no reply
    has_reply: bool = False


@dataclass(frozen=True, slots=True)
class Stop:
    task: str
    found: str  # "running" | "finished"
    value: Any = None  # the task's value when found finished
    closed: tuple[Closed, ...] = ()


@dataclass(frozen=True, slots=True)
class ParkedTask:
    """A task parked on its only Tool call, as carried by a checkpoint's arguments."""

    task: str  # the task id it had
    call: str  # the open call id
    ctor: Optional[str]  # constructor wrapping the reply ("Received"), or None
    data: tuple[Any, ...] = ()  # data the constructor carries besides the reply


@dataclass(frozen=True, slots=True)
class Checkpoint:
    checkpoint: int  # n: the run's nth checkpoint
    function: str  # declaration id of the called top-level function
    type_args: tuple[str, ...]
    args: tuple[Any, ...]  # may contain ParkedTask values in place of Task values


@dataclass(frozen=True, slots=True)
class Completed:
    value: Any


@dataclass(frozen=True, slots=True)
class Faulted:
    message: str  # what happened, e.g. "integer division by zero"
    file: str
    line: int
    column: int = 0


@dataclass(frozen=True, slots=True)
class End:
    end: Union[Completed, Faulted]


Fact = Union[Start, Call, Reply, Choice, Stop, Checkpoint, End]


class Recorder(Protocol):
    """Where every fact of a live run goes, in order.

    `record` appends a fact (the store hashes and chains it). `sync` makes everything recorded so
    far durable: the runtime calls it before a Call is dispatched and before the program sees a
    Reply, a Choice or a Stop outcome ("recorded before its consequence"), so one fsync covers
    every fact before it.
    """

    def record(self, fact: Fact) -> None: ...

    def sync(self) -> None: ...
