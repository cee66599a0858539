"""flowrt: the runtime that generated Flow code imports (docs/spec/abi.md).

Two lists, both explicit. `flowrt.abi` holds exactly what generated code may use
(`import flowrt as rt`; tests/test_abi.py holds it to docs/spec/abi.md); this package
re-exports it. Below it, the host API: what a host application, the CLI and the tests reach
as `flowrt.<name>` to run, store and show runs (docs/spec/execution.md, trace.md). Generated code
never uses these; anything else is imported from its own module (`from flowrt.history.store import ...`).

One name of the host floor is reached through the package: `flowrt.Client` (the client of a
worker, flowrt.host.client), imported when it is first asked for, so `import flowrt` (which every
generated module does) never loads the host (tests/test_layering.py names this one exception).
"""

from flowrt.abi import *  # noqa: F403  (the ABI: its __all__ is the list)
from flowrt.abi import __all__ as _ABI
from flowrt.data.decoding import compile_decoder
from flowrt.engine.drive import DriveOptions, MemoryRecorder, drive, start_run
from flowrt.data.facts import (
    Call,
    Checkpoint,
    Choice,
    Closed,
    Completed,
    End,
    Fact,
    Faulted,
    ParkedTask,
    Recorder,
    Reply,
    Start,
    Stop,
)
from flowrt.history.history_view import to_html, to_jsonl, to_text
from flowrt.history.integrity import Archived
from flowrt.data.lang_task import task_await, task_first, task_spawn, task_stop
from flowrt.data.generated import load_package
from flowrt.engine.outcomes import (
    Diverged,
    Incomplete,
    Matched,
    OpenCall,
    ResumeRefused,
    RunCompleted,
    RunFaulted,
    RunHalted,
    RunPaused,
)
from flowrt.history.store import (
    DEFAULT_STORE,
    BrokenHistory,
    CallNotOpen,
    ChangedBlob,
    HistoryConflict,
    RunBusy,
    RunExists,
    RunInfo,
    SqliteRecorder,
    Store,
    StoreError,
    StoredFact,
    UnknownRun,
)
from flowrt.engine.tools import Bindings, Dispatcher, MissingBindings, admit, admitter, current_call
from flowrt.history.trace import DATA_VERSION, MissingClass, TraceError

__all__ = [
    *_ABI,
    "compile_decoder",
    "DriveOptions",
    "MemoryRecorder",
    "drive",
    "start_run",
    "Call",
    "Checkpoint",
    "Choice",
    "Closed",
    "Completed",
    "End",
    "Fact",
    "Faulted",
    "ParkedTask",
    "Recorder",
    "Reply",
    "Start",
    "Stop",
    "to_html",
    "to_jsonl",
    "to_text",
    "Archived",
    "task_await",
    "task_first",
    "task_spawn",
    "task_stop",
    "load_package",
    "Diverged",
    "Incomplete",
    "Matched",
    "OpenCall",
    "ResumeRefused",
    "RunCompleted",
    "RunFaulted",
    "RunHalted",
    "RunPaused",
    "DEFAULT_STORE",
    "BrokenHistory",
    "CallNotOpen",
    "ChangedBlob",
    "HistoryConflict",
    "RunBusy",
    "RunExists",
    "RunInfo",
    "SqliteRecorder",
    "Store",
    "StoreError",
    "StoredFact",
    "UnknownRun",
    "Bindings",
    "Dispatcher",
    "MissingBindings",
    "admit",
    "admitter",
    "current_call",
    "DATA_VERSION",
    "MissingClass",
    "TraceError",
    "Client",  # noqa: F405  (given by __getattr__ below, on first use)
]


def __getattr__(name: str):
    if name == "Client":  # the one name of the host floor, loaded on first use (see the docstring)
        from flowrt.host.client import Client

        return Client
    raise AttributeError(f"module 'flowrt' has no attribute {name!r}")
