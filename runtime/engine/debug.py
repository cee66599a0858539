"""The driver's places for debugging (docs/spec/debugging.md): a debugger session, and the
evidence of failed Tool calls. The debugger itself is flowrt.engine.flowpdb, which the host
imports only when a command may debug.

`session`, when set (`flow2py run --pdb / --trace / --break`), is told by a live drive when it
begins (`session.begin()`: the program is loaded, breakpoints can be set and tracing started),
when it ends (`session.end()`), and when a task faults (`session.fault(task, message, where,
exc)`, before anything is stopped or recorded: a post-mortem on the task's Flow frames). Replays
never call it.

`call_failed`: when the driver admits a reply that an implementation's exception became
(`Unknown(...)`, `NotRun(...)`), the evidence the dispatcher kept (`flowrt.engine.tools.CallFailure`)
goes to the recorder's `call_failed(call_id, failure)`, when it has one (SqliteRecorder: the
store's `call_failures` host record), and, with FLOW2PY_DEBUG set, to stderr.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from flowrt.data.values import show

#: the debugging session of the live drives of this process, or None (the default: nothing is asked)
session: Any = None


def call_failed(recorder: Any, call_id: str, tool: str, outcome: Any, failure: Any) -> None:
    """The reply `outcome` to `call_id` (`tool`) was admitted; `failure` is its evidence."""
    note = getattr(recorder, "call_failed", None)
    if note is not None:
        note(call_id, failure)
    if os.environ.get("FLOW2PY_DEBUG"):
        run = getattr(recorder, "run_id", None)
        where = f"run {run}: " if run else ""
        sys.stderr.write(
            f"flow2py: {where}{tool} ({call_id}) answered {show(outcome)}, from:\n{failure.traceback}"
        )
        sys.stderr.flush()
