"""The progress line of a `run`, `resume` or `fork` that takes a while: on a terminal only (stderr
a tty), once the command has run `FLOW2PY_PROGRESS_AFTER` seconds (3 by default; `0` shows it at
once), redrawn in place about four times a second and cleared when the command ends:

    run s1: 3 calls made, 1 open, 4.2 s elapsed

The figures are the store's, as committed (flowrt.host.runs_view.ProgressReader reads them on a
connection of its own, in the drawing thread), so the line never holds up the run and shows what
a resume would see. Nothing is drawn when stderr is not a terminal, nor while a thread of the
process is in the debugger (pdb's prompt shares the terminal).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from typing import Callable, Optional, TextIO

from flowrt.host.runs_view import Progress, ProgressReader

__all__ = ["DEFAULT_AFTER", "ProgressLine", "debugging", "progress_after", "progress_text", "shown"]

DEFAULT_AFTER = 3.0  # seconds: a command shorter than this never shows a line
INTERVAL = 0.25  # seconds between redraws


def progress_after(environ=os.environ) -> float:
    """FLOW2PY_PROGRESS_AFTER in seconds (a number >= 0); anything else is the default."""
    text = environ.get("FLOW2PY_PROGRESS_AFTER")
    try:
        after = float(text) if text is not None else DEFAULT_AFTER
    except ValueError:
        return DEFAULT_AFTER
    return after if after >= 0 and after == after and after != float("inf") else DEFAULT_AFTER


def progress_text(p: Optional[Progress], elapsed: float) -> str:
    """`run s1: 3 calls made, 1 open, 4.2 s elapsed` (before the run is recorded: the time only)."""
    if p is None:
        return f"starting: {elapsed:.1f} s elapsed"
    calls = "1 call" if p.calls == 1 else f"{p.calls} calls"
    return f"run {p.run_id}: {calls} made, {p.open} open, {elapsed:.1f} s elapsed"


_DEBUGGERS = frozenset({"bdb.py", "pdb.py"})


def debugging() -> bool:
    """Whether a thread of this process is inside the debugger (pdb stepping through generated
    code or a Tool, docs/spec/execution.md "Interruptions"): its prompt owns the terminal then."""
    for frame in sys._current_frames().values():
        while frame is not None:
            if os.path.basename(frame.f_code.co_filename) in _DEBUGGERS:
                return True
            frame = frame.f_back
    return False


class ProgressLine:
    """Draws `progress_text` on `stream` from a thread of its own until `stop()`, which clears it."""

    def __init__(
        self,
        stream: TextIO,
        read: Callable[[], Optional[Progress]],
        after: float,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        close: Callable[[], None] = lambda: None,
        debugging: Callable[[], bool] = debugging,
    ):
        self.stream, self.read, self.after, self.interval = stream, read, after, interval
        self.clock, self.close, self.debugging = clock, close, debugging
        self.began = clock()
        self.drawn = False
        self._stop = threading.Event()
        self._lock = threading.Lock()  # drawing and clearing never interleave
        self._thread = threading.Thread(target=self._loop, name="flow2py-progress", daemon=True)

    def start(self) -> "ProgressLine":
        self._thread.start()
        return self

    def _loop(self) -> None:
        try:
            if self._stop.wait(self.after):
                return
            while not self._stop.is_set():
                if self.debugging():  # the terminal is pdb's: clear the line, draw nothing
                    self._clear()
                else:
                    try:
                        p = self.read()
                    except Exception:  # noqa: BLE001  (a store being created, locked: draw the time)
                        p = None
                    self._draw(progress_text(p, self.clock() - self.began))
                if self._stop.wait(self.interval):
                    return
        finally:
            self.close()

    def _draw(self, text: str) -> None:
        width = shutil.get_terminal_size((80, 24)).columns
        with self._lock:
            if self._stop.is_set():
                return
            self.stream.write("\r" + text[: max(width - 1, 1)] + "\x1b[K")
            self.stream.flush()
            self.drawn = True

    def _clear(self) -> None:
        with self._lock:
            if self.drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.drawn = False

    def stop(self) -> None:
        """Stop drawing and clear the line (if one was drawn), before the command prints its report."""
        with self._lock:
            self._stop.set()
        self._clear()
        self._thread.join(timeout=5)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def shown(store_path: Optional[str], stream: Optional[TextIO] = None):
    """Show the progress of the run this process drives on the store at `store_path` while the
    block runs, if `stream` (stderr by default) is a terminal."""
    stream = sys.stderr if stream is None else stream
    if not _is_terminal(stream):
        yield None
        return
    reader = ProgressReader(store_path)
    line = ProgressLine(stream, reader.read, progress_after(), close=reader.close).start()
    try:
        yield line
    finally:
        line.stop()
