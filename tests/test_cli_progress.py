"""The progress line of a long `run` (flow2py/cli_progress.py): drawn on a terminal only, redrawn
in place and cleared before the report; `FLOW2PY_PROGRESS_AFTER=0` shows it at once, so these
tests see it without waiting. The process test puts stderr on a pseudo-terminal and holds the
run's one Tool call open until the line shows that call."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from flow2py import cli_progress
from flow2py.cli_progress import ProgressLine, progress_after, progress_text
from flowrt.host.runs_view import Progress

MAIN = """\
use "./svc"

pub flow main() -> Text !tool = match svc.wait() {
    Ok(x) => x,
    Err(_) => "no",
}
"""
SVC = "@tool pub flow wait() -> Result<Text, Text>\n"
# The call waits for the test to create `go` (a generous timeout: never a guess at timing).
TOOLS = """\
import os
import time

from flowrt import bind


@bind("svc.wait")
def wait():
    deadline = time.monotonic() + 60
    while not os.path.exists("go") and time.monotonic() < deadline:
        time.sleep(0.01)
    return {"Ok": "went"}
"""


def _project(d: Path, go: bool = False) -> Path:
    (d / "main.flow").write_text(MAIN)
    (d / "svc.flow").write_text(SVC)
    (d / "tools.py").write_text(TOOLS)
    if go:
        (d / "go").touch()
    return d


def _flow2py(d: Path, stderr, after: str = "0") -> subprocess.Popen:
    env = dict(os.environ, FLOW2PY_PROGRESS_AFTER=after)
    args = ["run", "main.flow", "--tools", "tools.py", "--store", "r.db", "--run-id", "p1"]
    return subprocess.Popen(
        [sys.executable, "-m", "flow2py.cli", *args],
        cwd=d,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
    )


def _read_until(fd: int, want: bytes, timeout: float = 60.0) -> bytes:
    """Bytes from the pty until `want` appears (or the other side closes)."""
    got = b""
    end = time.monotonic() + timeout
    while want not in got and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: every writer closed
            break
        if not chunk:
            break
        got += chunk
    return got


def test_a_run_on_a_terminal_shows_calls_and_elapsed_then_clears_the_line(tmp_path):
    d = _project(tmp_path)
    master, slave = pty.openpty()
    try:
        p = _flow2py(d, slave)
        os.close(slave)
        seen = _read_until(master, b"run p1: 1 call made, 1 open, ")
        assert b"run p1: 1 call made, 1 open, " in seen, seen
        (d / "go").touch()
        seen += _read_until(master, b"completed: run p1")
        out, _ = p.communicate(timeout=60)
    finally:
        os.close(master)
    assert p.returncode == 0 and out == b'"went"\n'
    drawn, _, after = seen.partition(b"completed: run p1")
    assert b"\n" not in drawn  # redrawn in place: no line of its own
    assert drawn.startswith(b"\r") and drawn.endswith(b"\r\x1b[K")  # cleared before the report
    assert b" s elapsed\x1b[K" in drawn
    assert after.strip() == b""


def test_a_run_whose_stderr_is_not_a_terminal_shows_no_progress(tmp_path):
    d = _project(tmp_path, go=True)
    p = _flow2py(d, subprocess.PIPE)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and out == b'"went"\n'
    assert err == b"completed: run p1\n"


def test_shown_draws_nothing_on_a_stream_that_is_not_a_terminal():
    stream = io.StringIO()
    with cli_progress.shown(None, stream) as line:
        assert line is None
    assert stream.getvalue() == ""


class _Terminal(io.StringIO):
    """A stream that tells when something was written to it."""

    def __init__(self):
        super().__init__()
        self.written = threading.Event()

    def isatty(self):
        return True

    def write(self, s):
        n = super().write(s)
        self.written.set()
        return n


def test_the_line_is_redrawn_from_the_reader_and_cleared_on_stop():
    stream = _Terminal()
    ticks = iter([0.0, 2.5, 2.5, 2.5])
    closed = []
    line = ProgressLine(
        stream,
        lambda: Progress("r1", 3, 1),
        after=0,
        interval=60,
        clock=lambda: next(ticks),
        close=lambda: closed.append(True),
    ).start()
    assert stream.written.wait(30)
    line.stop()
    assert stream.getvalue() == "\rrun r1: 3 calls made, 1 open, 2.5 s elapsed\x1b[K\r\x1b[K"
    assert closed == [True]


def test_a_command_that_ends_before_the_threshold_draws_nothing():
    stream = _Terminal()
    line = ProgressLine(stream, lambda: Progress("r1", 0, 0), after=60).start()
    line.stop()
    assert stream.getvalue() == "" and not line.drawn


def test_progress_text_before_the_run_is_recorded_shows_the_time_only():
    assert progress_text(None, 1.25) == "starting: 1.2 s elapsed"
    assert progress_text(Progress("a", 1, 0), 0.0) == "run a: 1 call made, 0 open, 0.0 s elapsed"


def test_the_threshold_comes_from_the_environment_and_falls_back_on_nonsense():
    assert progress_after({}) == cli_progress.DEFAULT_AFTER
    assert progress_after({"FLOW2PY_PROGRESS_AFTER": "0"}) == 0
    assert progress_after({"FLOW2PY_PROGRESS_AFTER": "1.5"}) == 1.5
    for bad in ("soon", "-1", "nan", "inf"):
        assert progress_after({"FLOW2PY_PROGRESS_AFTER": bad}) == cli_progress.DEFAULT_AFTER


def test_a_thread_in_the_debugger_is_seen_and_the_line_gives_way_to_its_prompt():
    release, entered = threading.Event(), threading.Event()
    # a frame of a file named pdb.py: what a thread waiting at pdb's prompt has on its stack
    code = compile("entered.set()\nrelease.wait(60)\n", os.path.join("somewhere", "pdb.py"), "exec")
    t = threading.Thread(target=exec, args=(code, {"entered": entered, "release": release}))
    assert not cli_progress.debugging()
    t.start()
    try:
        assert entered.wait(30) and cli_progress.debugging()
    finally:
        release.set()
        t.join(30)
    assert not cli_progress.debugging()


def test_while_debugging_the_line_is_cleared_and_not_redrawn():
    stream = _Terminal()
    asked = threading.Semaphore(0)
    debugging = iter([False, True, True])

    def in_debugger():
        asked.release()
        return next(debugging, True)

    line = ProgressLine(stream, lambda: Progress("r", 1, 1), after=0, interval=0, debugging=in_debugger)
    line.start()
    for _ in range(3):  # drawn once, then cleared, then left alone
        assert asked.acquire(timeout=30)
    line.stop()
    text = stream.getvalue()
    assert text.startswith("\rrun r: 1 call made, 1 open, ") and text.endswith("\x1b[K\r\x1b[K")
    assert text.count("\r\x1b[K") == 1 and not line.drawn
