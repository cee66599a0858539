"""The refusals of host operations (`Refused`) and the store reads that turn a store's failures
into them: the bottom of flowrt.host, which flowrt.host.operations (re-exporting every name here)
and flowrt.host.history_stream build on."""

from __future__ import annotations

import sqlite3
from typing import Optional

from flowrt.data.exit_codes import EXIT_REFUSED
from flowrt.history.store import StoreError
from flowrt.history.trace import TraceError

__all__ = ["Refused", "sqlite_problem", "read", "refused", "same_program", "fails_chain"]


class Refused(Exception):
    """A host operation that cannot go ahead: a message that says what and where, and an exit code.
    `diagnostics`: the message is rendered diagnostics, printed as they are."""

    def __init__(self, message: str, exit_code: int = EXIT_REFUSED, diagnostics: bool = False):
        super().__init__(message)
        self.exit_code = exit_code
        self.diagnostics = diagnostics


def sqlite_problem(e: sqlite3.Error, where: str) -> Optional[str]:
    """A clear sentence for the SQLite errors an operator can meet (the file locked by another
    process, read-only, unopenable), or None."""
    text = str(e).lower()
    if "locked" in text or "busy" in text:
        return (
            f"{where} is locked by another process's write transaction (waited 30 s); "
            f"nothing was changed: try again when it is free"
        )
    if "readonly" in text or "read-only" in text:
        return f"{where} is read-only (SQLite says: {e}); nothing was changed"
    if "unable to open" in text:
        return f"{where} cannot be opened (SQLite says: {e})"
    return None


def read(op, *args):
    """A store read, its refusals turned into `Refused` (unknown run, unreadable history)."""
    try:
        return op(*args)
    except (StoreError, TraceError, sqlite3.Error) as e:
        raise refused(e) from None


def refused(e: Exception) -> Refused:
    """The refusal of a store read that failed with `e` (unknown run, unreadable history)."""
    if isinstance(e, sqlite3.Error):
        return Refused(sqlite_problem(e, "the store") or str(e))
    return Refused(str(e))


def same_program(prog, info) -> None:
    """Refuse to continue run `info` on another program than the one it started with (`prog`: a Runnable)."""
    if prog.program.identity != info.program:
        raise Refused(
            f"run {info.id} started on program {info.program[:12]}, not {prog.program.identity[:12]}; "
            f"a run always continues on the program it started with"
        )


def fails_chain(run_id: str, why: str) -> Refused:
    return Refused(
        f"run {run_id!r} fails its hash chain: {why}; refusing to show it as its history "
        f"(`flow2py verify {run_id}` reports the same)"
    )
