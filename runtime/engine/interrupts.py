"""Interruptions: how a live run stops when something outside the program stops the process.

Three Python exceptions are neither the program's doing nor a Tool's answer: `KeyboardInterrupt`
(Ctrl-C, SIGINT), `SystemExit` (a Tool implementation calling `sys.exit`) and `bdb.BdbQuit`
(quitting pdb while stepping through generated code or a Tool). Raised inside generated code or
a Tool implementation (inline, on a worker thread or on the event-loop thread), none of them is
recorded as a fault or as a Reply: the live driver stops where it is and returns `RunHalted`;
the host releases the run as `halted` (no End), its open calls still open, and says how to
resume it (docs/spec/execution.md "Interruptions").

A worker thread cannot raise into the driver's thread, so it posts an `Interruption` as the
call's completion; the driver raises its exception when it takes it, never records it.

`deferred()` keeps SIGINT out of the store's bookkeeping: while it is installed (main thread
only), Ctrl-C raises KeyboardInterrupt at once, except inside the shielded sections of a
`Shielded` recorder (record, sync, parked, close), where it is held and raised as the section
ends. So a fact is either recorded with its chain head, or not at all: an interruption never
leaves a half-appended fact behind.
"""

from __future__ import annotations

import signal
import threading
from bdb import BdbQuit
from contextlib import contextmanager
from typing import Optional

__all__ = ["INTERRUPTS", "Interruption", "reason", "deferred", "Shielded"]

#: What halts a live run instead of being recorded.
INTERRUPTS = (KeyboardInterrupt, SystemExit, BdbQuit)

_MAIN = threading.main_thread().ident


class Interruption:
    """A worker's completion for a call whose implementation raised one of INTERRUPTS."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


def reason(exc: BaseException, call: Optional[str] = None, worker: bool = False) -> str:
    """What stopped the run, in words. `call`: `svc.slow (root#1)` when it came from that call's
    implementation; `worker`: raised by the implementation itself on its own thread (a Ctrl-C is
    only ever delivered to the main thread)."""
    if isinstance(exc, KeyboardInterrupt) and not worker:
        return "interrupted (Ctrl-C)" + (f" while {call} was running" if call else "")
    if isinstance(exc, SystemExit):
        what = f"called sys.exit({exc.code!r})" if exc.code is not None else "called sys.exit()"
    elif isinstance(exc, BdbQuit):
        return "the debugger was quit (BdbQuit)" + (f" in {call}" if call else "")
    else:
        what = f"raised {type(exc).__name__}"
    return f"the implementation of {call} {what}" if call else f"{type(exc).__name__} was raised"


class _State:
    installed = False  # deferred() holds the SIGINT handler
    critical = 0  # nesting depth of the main thread's shielded sections
    held = False  # a SIGINT came inside a shielded section


_state = _State()


def _on_sigint(signum, frame):
    if _state.critical:
        _state.held = True
        return
    raise KeyboardInterrupt


@contextmanager
def deferred():
    """Install the handler above for the duration. Does nothing off the main thread, inside an
    enclosing `deferred`, or when the host has its own SIGINT handler (it keeps it)."""
    if (
        threading.get_ident() != _MAIN
        or _state.installed
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    signal.signal(signal.SIGINT, _on_sigint)
    _state.installed = True
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _state.installed = False
        if _state.held:  # came while the last shielded section was being left by an exception
            _state.held = False
            raise KeyboardInterrupt


def _shielded(fn, *args):
    if threading.get_ident() != _MAIN:  # signals reach only the main thread
        return fn(*args)
    _state.critical += 1
    try:
        return fn(*args)
    finally:
        _state.critical -= 1
        if not _state.critical and _state.held:
            _state.held = False
            raise KeyboardInterrupt


class Shielded:
    """A recorder whose record, sync, parked and close are shielded sections; everything else is
    the wrapped recorder's (run_id, store, n, ...)."""

    __slots__ = ("_recorder",)

    def __init__(self, recorder):
        self._recorder = recorder

    def record(self, fact) -> None:
        _shielded(self._recorder.record, fact)

    def sync(self, durable: Optional[bool] = None) -> None:
        if durable is None:
            _shielded(self._recorder.sync)
        else:
            _shielded(self._recorder.sync, durable)

    def call_pending(self, call_id: str) -> None:
        _shielded(self._recorder.call_pending, call_id)

    def call_failed(self, call_id: str, failure) -> None:
        note = getattr(self._recorder, "call_failed", None)
        if note is not None:
            _shielded(lambda: note(call_id, failure))

    def close(self, **kw) -> None:
        _shielded(lambda: self._recorder.close(**kw))

    def __getattr__(self, name):
        return getattr(self._recorder, name)
