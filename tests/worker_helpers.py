"""Helpers of the worker's tests (tests/test_worker*.py): programs compiled once, bindings of their
Tools, waiting on a run's state in the store with a deadline (never a bare sleep)."""

from __future__ import annotations

import functools
import re
import time
from pathlib import Path

import flowrt as rt
from flowrt.host.worker import status

from tests.repo_paths import ROOT, SUPPORT_MAIN

GOLDEN_SUPPORT = ROOT / "golden" / "history" / "support" / "expected.txt"
ASK = "Which Safari version does the customer use?"

SVC = "@tool pub flow step(n: Int) -> Result<Int, Text>\n@tool pub flow ask(q: Text) -> Result<Text, Text>\n"

#: the programs of tests/worker_programs/, each a main.flow beside svc.flow (SVC):
#: sleepy: svc.step, clock.sleep(2s), svc.step; two_steps: svc.step twice (-100/-200 for Unknown);
#: asks: svc.ask (a person: left pending), "unknown: ..." for Unknown
PROGRAMS = Path(__file__).resolve().parent / "worker_programs"


@functools.lru_cache(maxsize=None)
def compiled(path: str):
    from flow2py.host import compile_path

    return compile_path(path)


def support():
    return compiled(str(SUPPORT_MAIN))


def program(name: str):
    """tests/worker_programs/<name>, compiled once."""
    return compiled(str(PROGRAMS / name / "main.flow"))


def support_bindings() -> rt.Bindings:
    """The support example's Tools (examples/support/tools.py), in a Bindings of their own."""
    b = rt.Bindings()

    def next_step(ticket, notes):
        if len(notes) == 0:
            return {"Ok": {"Search": "safari login cookie"}}
        if len(notes) == 1:
            return {"Ok": {"Ask": ASK}}
        return {"Ok": {"Done": "Enable Secure on the session cookie; ..."}}

    b.bind("planner.next", next_step)
    b.bind("web.search", lambda q: rt.pending)
    b.bind("docs.search", lambda q: {"Ok": "SameSite=None requires Secure ..."})
    b.bind("human.ask", lambda q: rt.pending)
    return b


def wait_state(store, run_id: str, *states: str, timeout: float = 30.0, prog=None):
    """The run's status (its values read with `prog`, the run's program) once its state is one of
    `states` (AssertionError after `timeout`)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = status(store, run_id, prog)
        except rt.UnknownRun:
            last = None
        except Exception as e:  # noqa: BLE001  (not recorded yet)
            last = e
        if last is not None and getattr(last, "state", None) in states:
            return last
        time.sleep(0.01)
    raise AssertionError(f"run {run_id} never reached {states}: last seen {last}")


def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def seed_text(history_text: str) -> str:
    """A history's text with the program identity written as the golden file writes it."""
    return re.sub(r"program=\S+", "program=<identity>", history_text)


def golden_support_facts() -> str:
    text = GOLDEN_SUPPORT.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if re.match(r"^\s*\d+\s", ln)]
    return "\n".join(lines) + "\n"


def kinds(history_text: str) -> list[tuple[str, str]]:
    """(call or task id, fact kind) of each fact of a history's text ("" for Start, End, ...)."""
    out = []
    for ln in history_text.splitlines():
        m = re.match(r"^\s*\d+\s+(\S+)?\s+(Start|Call|Reply|Choice|Stop|Checkpoint|End)\b", ln)
        if m:
            out.append((m.group(1) or "", m.group(2)))
    return out
