"""What the store refuses with: `StoreError` and its kinds, and the messages naming a broken run.

Every refusal is meant for the person at the terminal: it names the run, the fact or the record,
and what was (not) changed. docs/spec/trace.md ("API") lists the hierarchy:
StoreError > UnknownRun, RunExists, RunBusy, HistoryConflict, CallNotOpen, BrokenHistory >
ChangedBlob.
"""

from __future__ import annotations


class StoreError(Exception):
    """A store operation refused with a message meant for the person at the terminal."""


class UnknownRun(StoreError):
    pass


class RunExists(StoreError):
    pass


class RunBusy(StoreError):
    """Another live process holds the run's lease."""


class HistoryConflict(StoreError):
    """The stored chain head moved under a writer: it refuses to append rather than fork history."""


class CallNotOpen(StoreError):
    pass


class BrokenHistory(StoreError):
    """A stored history that fails its hash chain, or a blob or module source that fails its
    content hash: refused whole, nothing changed."""


class ChangedBlob(BrokenHistory):
    """A blob whose stored bytes do not hash to the digest it is kept under (raised by every read
    of a blob; the reader names the fact that refers to it)."""

    def __init__(self, digest: bytes):
        self.digest = digest
        super().__init__(f"blob {digest.hex()} was changed: its stored bytes do not hash to it")


def chain_broken(run_id: str, why: str) -> BrokenHistory:
    """The run's facts fail their hash chain (`why`, from flowrt.history.integrity)."""
    return BrokenHistory(
        f"run {run_id!r} fails its hash chain: {why}; refusing to use its history "
        f"(`flow2py verify {run_id}` checks it whole)"
    )


def blob_broken(run_id: str, n: int, e: ChangedBlob) -> BrokenHistory:
    """Fact `n` refers to a blob whose stored bytes were changed."""
    return BrokenHistory(
        f"run {run_id!r} fails its integrity check: fact {n} refers to blob {e.digest.hex()}, "
        f"whose stored bytes were changed (they do not hash to it); refusing to use its "
        f"history (`flow2py verify {run_id}` checks it whole)"
    )


def corrupt_fact(run_id: str, n: int, e: object) -> BrokenHistory:
    """Fact `n`'s row is not a fact the store writes (its bytes, kind or hash)."""
    return BrokenHistory(f"run {run_id!r}: fact {n} is corrupt: {e}; refusing to use its history")


class RunCancelled(SystemExit):
    """A host asked to halt the run (flowrt.history.worker_records, `worker_cancels`): its
    recorder commits nothing more. A SystemExit, so a live drive that meets it halts (no End;
    flowrt.engine.interrupts) rather than faulting."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
