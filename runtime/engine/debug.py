"""The driver's two places for a debugger (docs/spec/debugging.md; the debugger itself is
flowrt.engine.flowpdb, which the host imports only when asked to debug).

`session`, when set (`flow2py run --pdb / --trace / --break`), is told by a live drive when it
begins (`session.begin()`: the program is loaded, breakpoints can be set and tracing started) and
when a task faults (`session.fault(task, message, where, exc)`, before anything is stopped or
recorded: a post-mortem on the task's Flow frames). Replays never call it.
"""

from __future__ import annotations

from typing import Any

#: the debugging session of the live drives of this process, or None (the default: nothing is asked)
session: Any = None
