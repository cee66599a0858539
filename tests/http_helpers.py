"""Helpers of the tests of the HTTP API and the client (tests/test_http_api.py, test_client.py):
a worker over a temporary store serving the support example (tests/worker_helpers.py compiles it
and binds its Tools) and waiting on a condition with a deadline (never a bare sleep)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import flowrt as rt
from flowrt.host.worker import Worker
from worker_helpers import ASK, compiled, support, support_bindings

from tests.repo_paths import ROOT, SUPPORT_MAIN

__all__ = ["ASK", "DONE", "FAULT", "ROOT", "SUPPORT_MAIN", "compiled", "running_worker", "support"]
__all__ += ["support_bindings", "until"]

DONE = "Enable Secure on the session cookie; ..."
#: a program whose run faults at main.flow:5 (integer division by zero) once calc.divisor answers 0
FAULT = ROOT / "golden" / "history" / "fault" / "main.flow"


@contextlib.contextmanager
def running_worker(db: Path, programs: dict, bindings: rt.Bindings, **kw):
    """A Worker over `db`, its loop running, stopped on the way out."""
    w = Worker(str(db), programs, bindings, log=lambda line: None, **kw)
    w.start()
    try:
        yield w
    finally:
        w.stop()


def until(predicate, timeout: float = 10.0, what: str = "the condition"):
    """Wait for `predicate()` to give a true value (returned), checking every few milliseconds,
    for at most `timeout` seconds: a deadline, not a guess at how long something takes."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)
