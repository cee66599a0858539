"""Appending a run's facts: `SqliteRecorder`, the Recorder (flowrt.data.facts) of one run.

A run is written by one process at a time: the recorder takes a lease (`runs.owner`) and checks
on every commit, in the commit's one `UPDATE runs`, that the lease and the chain head are still
its own. A commit writes the facts and, in the same transaction, what appending them changes in
the host's records (`_Batch`: open and pending calls, the host tokens replies issue, the latest
checkpoint, the end state).

Durability (the claim docs/spec/trace.md "Durability" makes): `sync()` commits, fsynced, when
the buffer holds a Call or an End, so that fact and every fact before it survive power loss
before the call is sent or the end reported. Reply/Choice/Stop/Checkpoint facts alone wait in
the buffer: the next Call's (or End's) commit carries them, and `close()` (pause, halt) and
`call_pending()` commit them. A crash loses only facts whose consequences never left the
process. One commit and one fsync per dispatch.

Cancel (flowrt.history.worker_records): once a run has a cancel request, no process's recorder
can take its lease, no commit succeeds (it is the guarded UPDATE's condition; the refusal is
`RunCancelled`, which halts the drive) and `close` leaves it halted. A cancel and a commit are two
SQLite transactions, so one of them comes first: the run ends halted, or it ended before the cancel.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, Optional

from flowrt.data.facts import Call, Checkpoint, Completed, End, Fact, Reply, Stop
from flowrt.history import trace as T
from flowrt.history.host_records import describe_owner, note_release, owner_alive, owner_token, run_row
from flowrt.history.store_errors import HistoryConflict, RunBusy, RunCancelled, StoreError
from flowrt.history.tokens import may_hold_token, tokens_in


def put_blobs(db, run_id: str, n: int, blobs) -> None:
    """Store fact `n`'s blobs by content hash, and that the fact refers to each."""
    for h, b in blobs:
        db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (h, b))
        db.execute("INSERT OR IGNORE INTO blob_refs VALUES (?, ?, ?)", (h, run_id, n))


def _issued_rows(run_id: str, call_id: str, reply: Any) -> list[tuple]:
    now = time.time()
    return [(t.type_id, t.token, run_id, call_id, now) for t in tokens_in(reply)]


class _Batch:
    """Facts to append to a run, (n, encoded, chain hash, fact) each, and what appending them
    changes in the host records beside the facts (open and pending calls, issued tokens, the
    latest checkpoint, the end state): one commit writes them all (`write`)."""

    def __init__(self, run: str, pending, pending_calls: set):
        self.run, self.pending, self.pending_calls = run, pending, pending_calls
        self.latest_cp, self.state = None, None
        self.opened, self.closed, self.answered, self.rows, self.issued = [], [], [], [], []
        for n, enc, h, fact in pending:
            self.rows.append((run, n, enc.kind, enc.data, h))
            t = type(fact)
            if t is Call:
                self.opened.append((run, fact.id, fact.tool_id, n))
            elif t is Reply:
                self._close(fact.id)
                if may_hold_token(enc):
                    self.issued += _issued_rows(run, fact.id, fact.reply)
            elif t is Stop:
                for c in fact.closed:
                    self._close(c.call)
                    if c.has_reply and may_hold_token(enc):
                        self.issued += _issued_rows(run, c.call, c.reply)
            elif t is Checkpoint:
                self.latest_cp = n
            elif t is End:
                self.state = "completed" if type(fact.end) is Completed else "faulted"

    def _close(self, call: str) -> None:
        self.closed.append((self.run, call))
        if call in self.pending_calls:
            self.answered.append((self.run, call))

    def write(self, db) -> None:
        """Insert the facts and update the host records, inside the caller's transaction."""
        run, pending = self.run, self.pending
        if not pending:
            return
        try:
            db.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?)", self.rows)
        except sqlite3.IntegrityError:
            raise HistoryConflict(
                f"run {run!r} already holds a fact numbered {pending[0][0]} or later; refusing "
                f"to rewrite recorded history"
            ) from None
        for n, enc, _h, _f in pending:
            if enc.blobs:
                put_blobs(db, run, n, enc.blobs)
        closed = self.closed
        if closed:
            # A Call and its Reply in one batch: the row is inserted below only if still open.
            db.executemany("DELETE FROM open_calls WHERE run=? AND call=?", closed)
        if self.answered:
            db.executemany("DELETE FROM parked_calls WHERE run=? AND call=?", self.answered)
            self.pending_calls.difference_update(c for _, c in self.answered)
        if self.issued:  # the host's record of the tokens these replies issued (flowrt.history.tokens)
            db.executemany("INSERT OR IGNORE INTO host_tokens VALUES (?, ?, ?, ?, ?)", self.issued)
        if self.opened:
            done = {c for _, c in closed}
            db.executemany(
                "INSERT OR REPLACE INTO open_calls VALUES (?, ?, ?, ?)",
                [o for o in self.opened if o[1] not in done] if done else self.opened,
            )


class StoreRecorder:
    """The Recorder (flowrt.data.facts) of one run of a `flowrt.history.store.Store` (SQLite or
    PostgreSQL): appends its facts, one writer at a time.

    Constructing it takes the run's lease (refused with RunBusy while another live process holds
    it; a dead process's lease on this host is taken over). `record` encodes and chains a fact in
    memory. `sync()` commits everything recorded since the last commit in one fsynced transaction
    when that holds a Call or an End; a batch of only Reply, Choice, Stop or Checkpoint facts stays
    in the buffer and the next such commit carries it (docs/spec/trace.md "Durability": one fsync
    per dispatch, covering the facts before it). `sync(durable=True/False)` commits whatever is
    buffered now, fsynced or not. Every commit checks, in its one `UPDATE runs`, that the lease
    and the chain head are still this recorder's. `close` commits durably and releases the lease,
    leaving the run paused (calls open), halted, completed or faulted.
    """

    def __init__(self, store, run_id: str):
        self.store, self.run_id = store, run_id
        self._file = store.file
        self.owner = owner_token()
        self._pending: list[tuple[int, T.EncodedFact, bytes, Fact]] = []
        self._urgent = False  # the buffer holds a Call or an End: the next sync() commits
        self._closed = False
        self._broken: Optional[BaseException] = None
        # Taking the lease needs no fsync: a lease lost with the machine names a process that is gone.
        with self._file.transaction(durable=False) as db:
            self._file.lock_run(db, run_id)
            r = run_row(self._file, run_id)
            if r["state"] in ("completed", "faulted"):
                raise StoreError(f"run {run_id!r} has already ended ({r['state']}); fork it to continue")
            if db.execute("SELECT 1 FROM worker_cancels WHERE run=?", (run_id,)).fetchone():
                raise StoreError(f"run {run_id!r} was cancelled (halted for good); fork it to continue")
            if r["owner"] is not None and owner_alive(r["owner"]):
                raise RunBusy(
                    f"run {run_id!r} is being run by {describe_owner(r['owner'])}; "
                    f"only one process may run it at a time"
                )
            db.execute("UPDATE runs SET owner=?, state='running' WHERE id=?", (self.owner, run_id))
            self.n, self.head = r["n"], r["head"]
            # Calls left pending by an earlier process: their parked_calls rows go when a Reply closes them.
            self._pending_calls = {
                row[0] for row in db.execute("SELECT call FROM parked_calls WHERE run=?", (run_id,))
            }
        self._synced = (self.n, self.head)

    @property
    def head_hex(self) -> str:
        return self.head.hex()

    def call_pending(self, call_id: str) -> None:
        """The driver's note that `call_id`'s implementation answered `pending` (host record).
        The run may now wait a long time: everything buffered is committed durably first."""
        self.sync(durable=True)
        self.store.host_records.record_pending(self.run_id, call_id)
        self._pending_calls.add(call_id)

    def call_failed(self, call_id: str, failure) -> None:
        """The driver's note that `call_id`'s reply (just recorded) is the `Unknown` or `NotRun`
        its implementation's exception became: its evidence (`CallFailure`) is kept as a host
        record (`call_failures`), never in history."""
        self.store.host_records.record_failure(self.run_id, call_id, failure)

    def record(self, fact: Fact) -> None:
        if self._closed or self._broken is not None:
            raise StoreError(f"the recorder of run {self.run_id!r} is closed or failed")
        enc = T.encode_fact(fact)
        h = T.chain(self.head, enc.chained)
        self.n += 1
        self.head = h
        self._pending.append((self.n, enc, h, fact))
        t = type(fact)
        if t is Call or t is End:
            self._urgent = True

    def sync(self, durable: Optional[bool] = None) -> None:
        """Commit the buffered facts if they hold a Call or an End (fsynced); with `durable` given,
        commit whatever is buffered now (fsynced when True). A Reply, Choice, Stop or Checkpoint
        alone waits for the commit that carries the next Call, End, pause or close."""
        if self._broken is not None:
            raise StoreError(f"the recorder of run {self.run_id!r} failed earlier: {self._broken}")
        pending = self._pending
        if not pending:
            return
        if durable is None:
            if not self._urgent:
                return
            durable = True
        try:
            self._write(pending, durable)
        except BaseException as e:
            # Whatever failed (lease lost, head moved, disk), the in-memory chain no longer
            # matches the store: this recorder appends nothing more.
            self._broken = e
            raise
        self._pending = []
        self._urgent = False
        self._synced = (self.n, self.head)

    def _refusal(self, db) -> StoreError:
        """Why the guarded UPDATE matched no row: the lease or the head is no longer ours."""
        run = self.run_id
        if db.execute("SELECT 1 FROM worker_cancels WHERE run=?", (run,)).fetchone():
            return RunCancelled(f"run {run!r} was cancelled; nothing more is recorded")
        row = db.execute("SELECT owner, n, head FROM runs WHERE id=?", (run,)).fetchone()
        if row is None or row[0] != self.owner:
            holder = describe_owner(row[0]) if row and row[0] else "nobody"
            return RunBusy(
                f"run {run!r} is no longer leased to this process (held by {holder}); refusing to append"
            )
        return HistoryConflict(
            f"the history of run {run!r} changed under this process (fact {row[1]}, head "
            f"{row[2].hex()[:16]}, expected fact {self._synced[0]}); refusing to append"
        )

    def _write(self, pending, durable: bool) -> None:
        run = self.run_id
        f = self._file
        batch = _Batch(run, pending, self._pending_calls)
        # The lease and head check is the UPDATE's own condition (one statement, no SELECT): on
        # SQLite, BEGIN IMMEDIATE holds the write lock from here to COMMIT; on PostgreSQL the
        # UPDATE holds the run's row lock, and a second writer's waits and re-checks it.
        with f.transaction(durable, whole=False) as db:
            f.lock_run(
                db, run
            )  # PostgreSQL: the UPDATE below then sees every cancel and lease taken before it
            cur = db.execute(
                "UPDATE runs SET n=?, head=?, latest_checkpoint=coalesce(?, latest_checkpoint), "
                "state=coalesce(?, state) WHERE id=? AND owner=? AND n=? AND head=? "
                "AND NOT EXISTS (SELECT 1 FROM worker_cancels WHERE run=?)",
                (
                    self.n,
                    self.head,
                    batch.latest_cp,
                    batch.state,
                    run,
                    self.owner,
                    self._synced[0],
                    self._synced[1],
                    run,
                ),
            )
            if cur.rowcount != 1:
                raise self._refusal(db)
            batch.write(db)

    def close(self, halted: bool = False) -> None:
        """Sync durably and release the lease (idempotent). `halted`: the run was interrupted
        (flowrt.engine.interrupts), so it is left halted even with calls open, not paused."""
        if self._closed:
            return
        try:
            if self._broken is None:
                self.sync(durable=True)
        finally:
            self._closed = True
            # The facts are fsynced above; releasing the lease needs none (lost with the machine,
            # it names a process that is gone, which reads as the same state or as halted).
            with self._file.transaction(durable=False) as db:
                released = db.execute(
                    "UPDATE runs SET owner=NULL, state=CASE WHEN state IN ('completed', 'faulted') THEN state "
                    "WHEN ? THEN 'halted' "
                    "WHEN EXISTS (SELECT 1 FROM worker_cancels WHERE run=?) THEN 'halted' "
                    "WHEN EXISTS (SELECT 1 FROM open_calls WHERE run=?) THEN 'paused' ELSE 'halted' END "
                    "WHERE id=? AND owner=?",
                    (halted, self.run_id, self.run_id, self.run_id, self.owner),
                )
                if released.rowcount == 1:
                    note_release(db, self.run_id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


SqliteRecorder = StoreRecorder  # its name from when the store was SQLite only
