"""flowrt: the runtime that generated Flow code imports (docs/spec/abi.md).

Two lists, both explicit. `flowrt.abi` holds exactly what generated code may use
(`import flowrt as rt`; tests/test_abi.py holds it to docs/spec/abi.md); this package
re-exports it. Below it, the host API: what a host application, the CLI and the tests reach
as `flowrt.X` to run, store and show runs (docs/spec/execution.md, trace.md). Generated code
never uses these; anything else is imported from its own module (`from flowrt.store import ...`).
"""
from flowrt.abi import *  # noqa: F403  (the ABI: its __all__ is the list)
from flowrt.abi import __all__ as _ABI
from flowrt.decoding import compile_decoder
from flowrt.driver import MemoryRecorder, drive, start_run
from flowrt.facts import Call, Checkpoint, Choice, Closed, Completed, End, Fact, Faulted, ParkedTask, Recorder, Reply, Start, Stop
from flowrt.history_view import to_html, to_jsonl, to_text
from flowrt.integrity import Archived
from flowrt.lang_task import task_await, task_first, task_spawn, task_stop
from flowrt.loader import load_package
from flowrt.outcomes import (
    Diverged, Incomplete, Matched, OpenCall, ResumeRefused, RunCompleted, RunFaulted, RunHalted, RunPaused,
)
from flowrt.store import (
    DEFAULT_STORE, BrokenHistory, CallNotOpen, ChangedBlob, HistoryConflict, RunBusy, RunExists, RunInfo,
    SqliteRecorder, Store, StoreError, StoredFact, UnknownRun,
)
from flowrt.tools import Bindings, Dispatcher, MissingBindings, admit, admitter, current_call
from flowrt.trace import DATA_VERSION, MissingClass, TraceError

__all__ = [
    *_ABI,
    "compile_decoder", "MemoryRecorder", "drive", "start_run",
    "Call", "Checkpoint", "Choice", "Closed", "Completed", "End", "Fact", "Faulted", "ParkedTask",
    "Recorder", "Reply", "Start", "Stop", "to_html", "to_jsonl", "to_text", "Archived",
    "task_await", "task_first", "task_spawn", "task_stop", "load_package",
    "Diverged", "Incomplete", "Matched", "OpenCall", "ResumeRefused", "RunCompleted", "RunFaulted",
    "RunHalted", "RunPaused", "DEFAULT_STORE", "BrokenHistory", "CallNotOpen", "ChangedBlob",
    "HistoryConflict", "RunBusy", "RunExists", "RunInfo", "SqliteRecorder", "Store", "StoreError",
    "StoredFact", "UnknownRun", "Bindings", "Dispatcher", "MissingBindings", "admit", "admitter",
    "current_call", "DATA_VERSION", "MissingClass", "TraceError",
]
