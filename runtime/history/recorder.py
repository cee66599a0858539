"""Appending a run's facts: `StoreRecorder`, the Recorder (flowrt.data.facts) of one run.

A run is written by one process at a time: the recorder takes a lease (`runs.owner`) and checks
on every commit, in the commit's one `UPDATE runs`, that the lease and the chain head are still
its own. A commit writes the facts and, in the same transaction, what appending them changes in
the host's records (`_Batch`: open and pending calls, the host tokens replies issue, the latest
checkpoint, the end state). The host's times of the calls (when each Call and the Reply or Stop
closing it was recorded, and the Flow line that made the call, which the driver tells it through
`call_site`) are kept in memory and written as one `call_times` row inside a commit made anyway:
every 256 calls, the first commit a second after the oldest, the End, a pause, a pending call
(docs/spec/trace.md "Store"; never a commit of their own for a call).

Durability (the claim docs/spec/trace.md "Durability" makes): `sync()` commits, fsynced, when
the buffer holds a Call or an End, so that fact and every fact before it survive power loss
before the call is sent or the end reported; the driver syncs once for all the calls one
scheduling round makes (flowrt.engine.record.send), so a fan-out of 100 calls is one commit.
A buffer holding a Reply is committed at once without an fsync (SQLite's WAL with
synchronous=NORMAL) by `sync()`: the Reply survives the process being killed (not power loss)
though the program then computes for a long time; the next fsynced commit covers it on disk too.
When more replies are already waiting to be admitted (a fan-out's, answering together), the
driver calls `sync_soon()` instead: the Reply waits for the commit that the last of them makes
(`sync()`, before its task resumes), or the next Call's or End's, or the flusher's (`_Flusher`,
a thread that commits it `_REPLY_WAIT` seconds after, should the program compute meanwhile):
the replies that arrive together share one commit. Choice/Stop/Checkpoint facts alone
wait in the buffer: the next commit carries them, and `close()` (pause, halt) and
`call_pending()` commit them. A recorder's lock keeps the driver and the flusher apart. The
End's commit releases the lease too (nothing is appended after it), so `close` has nothing left.

Group commit across runs (`CommitGroup`): the recorders of one store file in one process (the
runs a worker drives on its threads) commit through one group. A recorder whose commit finds
another one being written waits for it, and the next writer takes every batch waiting then into
one transaction: each run's batch in its own savepoint, with its own guarded `UPDATE runs`, so
one run's refusal (lease lost, head moved) rolls back that run's batch only. One fsync then
covers the facts of all of them; no batch is acknowledged before the transaction commits. A
fsynced commit first waits, `_GATHER_WAIT` at most, for the group's other open recorders that
hold a Call not yet committed (their driver is in a round that ends in a sync): the Calls the
runs make at about the same time become durable in one commit. A lone run never waits. The
flusher commits the Replies of all the recorders waiting for it in one transaction too.

Cancel (flowrt.history.worker_records): once a run has a cancel request, no process's recorder
can take its lease, no commit succeeds (it is the guarded UPDATE's condition; the refusal is
`RunCancelled`, which halts the drive) and `close` leaves it halted. A cancel and a commit are two
SQLite transactions, so one of them comes first: the run ends halted, or it ended before the cancel.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import weakref
from typing import Any, Optional

import blake3

from flowrt.data.facts import Call, Checkpoint, Completed, End, Fact, Reply, Stop
from flowrt.history import trace as T
from flowrt.history.host_records import (
    describe_owner,
    note_release,
    notify_run,
    owner_alive,
    owner_token,
    run_row,
)
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


#: a Flow file name as its module key (`call_site`), by the names met (a program has few)
_MODULE_KEYS: dict[str, str] = {}
#: the calls' times are written (one call_times row) with the commit that holds this many, or ...
#: (more than a fan-out of 100: its Calls' times and its Replies' go in one row of 100 entries, not
#: two of 100 each; the floats' text is most of a row's cost)
_TIMES_EVERY = 256
#: ... the first commit once the oldest of them has waited this many seconds
_TIMES_WAIT = 1.0
#: a Reply waiting in the buffer is committed (not fsynced) by the flusher this long after it
#: was recorded, unless a commit the driver makes carries it first
_REPLY_WAIT = 0.002
#: a fsynced commit waits at most this long for the other runs of its store file (in this
#: process) that hold a Call not yet committed, so that one commit makes all those Calls durable
_GATHER_WAIT = 0.002


#: A fact row's BLOBs are bound as bytearrays: the sqlite3 module binds a bytearray as it is, and
#: looks up an adapter for every bytes object first (flowrt.history.schema), which cost more than
#: the copy (~0.25 µs a row). The stored BLOB, and what reads it back (bytes), are the same.
_blob = bytearray

#: rows a commit inserts with one statement (`_insert_rows`)
_CHUNK = 32


def _inserts(head: str, width: int) -> tuple[str, str, int]:
    """The INSERT of one row and of `_CHUNK` rows (`head` "INSERT INTO t VALUES", `width` values
    a row)."""
    row = "(" + ", ".join(["?"] * width) + ")"
    return f"{head} {row}", f"{head} " + ", ".join([row] * _CHUNK), width


_FACTS_INSERT = _inserts("INSERT INTO facts VALUES", 5)
_OPEN_INSERT = _inserts("INSERT OR REPLACE INTO open_calls VALUES", 4)


def _insert_rows(db, inserts: tuple[str, str, int], rows: list) -> None:
    """Insert `rows`: whole chunks of `_CHUNK` one statement each, the rest through executemany
    (a row bound and stepped alone costs ~15% more; a fan-out's 100 Calls: 3 statements, then 4
    rows one at a time)."""
    one, chunk, width = inserts
    k = len(rows) - len(rows) % _CHUNK
    if k:
        flat = [x for r in rows[:k] for x in r]
        step = width * _CHUNK
        for i in range(0, width * k, step):
            db.execute(chunk, flat[i : i + step])
    if k < len(rows):
        db.executemany(one, rows[k:] if k else rows)


_jstr = json.encoder.encode_basestring_ascii  # a JSON string, as json.dumps writes it


def _times_json(times: dict) -> str:
    """The `times` column of a call_times row: [[call, dispatched, replied, module, line], ...],
    what `json.dumps(..., separators=(",", ":"))` writes, except that a time (kept as
    `time.time_ns()`) is written as its nanoseconds with an exponent, `1764644000123456789e-9`:
    a JSON number, the same POSIX seconds to every reader (json.loads gives the float), without
    a float's shortest repr (~7,000 instructions a time, two an entry: most of a row's cost)."""
    q = _jstr
    entries = [
        f"[{q(c)},{'null' if s is None else f'{s}e-9'},{'null' if r is None else f'{r}e-9'},"
        f"{'null' if m is None else q(m)},{'null' if ln is None else int(ln)}]"
        for c, s, r, m, ln in times.values()
    ]
    return "[" + ",".join(entries) + "]"


class _Batch:
    """Facts to append to a run, (n, encoded, chain hash, fact) each, and what appending them
    changes in the host records beside the facts (open and pending calls, issued tokens, the
    latest checkpoint, the end state): one commit writes them all (`write`)."""

    def __init__(self, run: str, pending, pending_calls: set, open_rows: frozenset = frozenset()):
        self.run, self.pending, self.pending_calls = run, pending, pending_calls
        self.open_rows = open_rows  # the run's open_calls rows before this batch (then after it)
        self.latest_cp, self.state = None, None
        self.opened, self.closed, self.answered, self.issued = [], [], [], []
        rows = self.rows = []
        opened, closed = self.opened, self.closed
        for n, enc, h, fact in pending:
            rows.append((run, n, enc.kind, _blob(enc.data), _blob(h)))
            t = type(fact)
            if t is Call:
                opened.append((run, fact.id, fact.tool_id, n))
            elif t is Reply:
                if pending_calls:
                    self._close(fact.id)
                else:
                    closed.append((run, fact.id))
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
            _insert_rows(db, _FACTS_INSERT, self.rows)
        except sqlite3.IntegrityError:
            raise HistoryConflict(
                f"run {run!r} already holds a fact numbered {pending[0][0]} or later; refusing "
                f"to rewrite recorded history"
            ) from None
        for n, enc, _h, _f in pending:
            if enc.blobs:
                put_blobs(db, run, n, enc.blobs)
        closed, before = self.closed, self.open_rows
        done = {c for _, c in closed}
        if before and done.issuperset(before):
            # Every call that had a row is closed (a fan-out's replies): one range delete.
            db.execute("DELETE FROM open_calls WHERE run=?", (run,))
        elif closed and before:
            # A Call and its Reply in one batch: the row is inserted below only if still open.
            db.executemany(
                "DELETE FROM open_calls WHERE run=? AND call=?", [c for c in closed if c[1] in before]
            )
        if self.answered:
            db.executemany("DELETE FROM parked_calls WHERE run=? AND call=?", self.answered)
            self.pending_calls.difference_update(c for _, c in self.answered)
        if self.issued:  # the host's record of the tokens these replies issued (flowrt.history.tokens)
            db.executemany("INSERT OR IGNORE INTO host_tokens VALUES (?, ?, ?, ?, ?)", self.issued)
        opened = [o for o in self.opened if o[1] not in done] if done else self.opened
        if opened:  # (a call id is in one Call fact: no row twice in one statement)
            _insert_rows(db, _OPEN_INSERT, opened)
        if closed or opened:
            self.open_rows = frozenset(before - done).union(o[1] for o in opened)


class _Job:
    """One recorder's batch waiting in a CommitGroup: `done` once its transaction ended, `error`
    when its batch was not committed."""

    __slots__ = ("rec", "pending", "durable", "done", "error")

    def __init__(self, rec, pending, durable: bool):
        self.rec, self.pending, self.durable = rec, pending, durable
        self.done = False
        self.error: Optional[BaseException] = None


class CommitGroup:
    """The commits of the recorders of one store file, grouped (see the module docstring).

    `commit(job)` returns once `job`'s batch is committed (or raises why it is not). The caller
    whose batch finds no commit under way writes it, with every batch that came meanwhile; a
    caller that finds one under way waits, and its batch goes in the next transaction, written
    by whichever waiting caller leads it. There is no timer: a lone run commits at once, and
    batches group only while a commit (an fsync) is in progress."""

    def __init__(self, file):
        self._file = weakref.ref(file)  # the group is kept by the file's key in `_groups`: no cycle
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[_Job] = []
        self._writing = False
        self.commits = 0  # transactions committed (tests, benchmarks)
        # The recorders of this file that are open (the runs this process drives over it): a
        # fsynced commit waits (`_GATHER_WAIT` at most) for those that hold a Call not yet queued.
        self.members: "weakref.WeakSet[StoreRecorder]" = weakref.WeakSet()

    def commit(self, job: _Job) -> None:
        self.commit_many((job,))
        if job.error is not None:
            raise job.error

    def commit_many(self, jobs) -> None:
        """Commit several recorders' batches in one transaction (queued together, so whichever
        caller leads takes them all); each job's `error` says whether its batch was committed."""
        cond = self._cond
        first = jobs[0]
        with cond:
            self._queue.extend(jobs)
            cond.notify_all()  # a leader gathering the runs' Calls (`_gather`) sees these
            while self._writing and not first.done:
                cond.wait()
            lead = not first.done
            if lead:
                self._writing = True
        if lead:
            self._lead(first, jobs)

    def _lead(self, job: _Job, mine=()) -> None:
        """Write every batch queued now in one transaction (`job`'s among them, and `mine`, the
        leader's other jobs, queued with it)."""
        group: list[_Job] = []
        try:
            file = self._file()
            if file is None:
                raise StoreError(f"the store of run {job.rec.run_id!r} was closed")
            self._gather()
            with file.lock:
                with self._cond:
                    group, self._queue = self._queue, []
                try:
                    self._write(file, group)
                except BaseException as e:
                    for j in group:
                        if j.error is None:
                            j.error = (
                                e
                                if j is job
                                else StoreError(
                                    f"the commit that held run {j.rec.run_id!r}'s facts failed: {e}"
                                )
                            )
        finally:
            with self._cond:
                if not group:  # interrupted before taking the queue: these batches are not written
                    for j in mine or (job,):
                        if j in self._queue:
                            self._queue.remove(j)
                        if j.error is None:
                            j.error = StoreError(f"the commit of run {j.rec.run_id!r} was interrupted")
                        j.done = True
                for j in group:
                    j.done = True
                job.done = True
                self._writing = False
                self._cond.notify_all()

    def join(self, rec) -> None:
        with self._cond:
            self.members.add(rec)

    def leave(self, rec) -> None:
        with self._cond:
            self.members.discard(rec)
            self._cond.notify_all()

    def _gather(self) -> None:
        """Before a fsynced commit: wait for the other runs' recorders of this file that hold an
        unsynced Call (their driver is in a scheduling round that will end in a sync), so that
        their Calls share this commit; at most `_GATHER_WAIT`. Never when no other run holds one,
        so a lone run commits at once."""
        cond = self._cond
        with cond:
            if not any(j.durable for j in self._queue):
                return
            deadline = None
            while True:
                queued = {j.rec for j in self._queue}
                waiting = [
                    r
                    for r in list(self.members)
                    if r._urgent and not r._closed and r._broken is None and r not in queued
                ]
                if not waiting:
                    return
                now = time.monotonic()
                if deadline is None:
                    deadline = now + _GATHER_WAIT
                elif now >= deadline:
                    return
                cond.wait(deadline - now)

    def _write(self, f, group: list[_Job]) -> None:
        """One transaction of the store file (`transaction(whole=False)`: on PostgreSQL each run's
        batch locks its own row), fsynced when any batch asks for it."""
        with f.transaction(any(j.durable for j in group), whole=False) as db:
            if len(group) == 1:
                group[0].rec._apply(db, group[0].pending, group[0].durable)
            else:
                for j in group:  # each run's batch stands or falls alone
                    db.execute("SAVEPOINT flowrt_batch")
                    try:
                        j.rec._apply(db, j.pending, j.durable)
                    except Exception as e:  # noqa: BLE001  (that run's refusal, kept for its recorder)
                        db.execute("ROLLBACK TO SAVEPOINT flowrt_batch")
                        j.error = e
                    db.execute("RELEASE SAVEPOINT flowrt_batch")
        self.commits += 1


_groups: "weakref.WeakKeyDictionary[Any, CommitGroup]" = weakref.WeakKeyDictionary()
_groups_lock = threading.Lock()


def commit_group(file) -> CommitGroup:
    """The CommitGroup of a store file (one per open file in the process)."""
    with _groups_lock:
        g = _groups.get(file)
        if g is None:
            g = _groups[file] = CommitGroup(file)
        return g


class _Flusher:
    """The thread that commits the Replies waiting in recorders' buffers (one per process,
    started on first use): woken by the first recorder that has one waiting, it waits
    `_REPLY_WAIT`, then commits every recorder waiting then (`StoreRecorder._flush`)."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._due: list = []
        self._pid = None  # the process the thread runs in (a fork has none until it arms one)

    def arm(self, rec) -> None:
        with self._cond:
            self._due.append(rec)
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="flowrt-reply-flusher", daemon=True).start()
            elif len(self._due) == 1:
                self._cond.notify()

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._due:
                    cond.wait()
            time.sleep(_REPLY_WAIT)  # the replies that come meanwhile share the commit
            with cond:
                due, self._due = self._due, []
            by_group: dict = {}
            for rec in due:
                by_group.setdefault(rec._group, []).append(rec)
            for group, recs in by_group.items():
                if len(recs) == 1:
                    recs[0]._flush()
                else:
                    _flush_together(group, recs)


def _flush_together(group: CommitGroup, recs: list) -> None:
    """The flusher's commit of several runs' waiting Replies (recorders of one store file): one
    transaction for all of them, each run's batch in its own savepoint (CommitGroup). A recorder
    whose driver holds its lock now (recording or committing) is flushed on its own after."""
    held = [r for r in recs if r._lock.acquire(blocking=False)]
    try:
        jobs = [j for j in (r._flush_job() for r in held) if j is not None]
        if jobs:
            _commit_flushed(group, jobs)
    finally:
        for r in held:
            r._lock.release()
    for r in recs:
        if r not in held:
            r._flush()


def _commit_flushed(group: CommitGroup, jobs: list) -> None:
    """Commit the flusher's jobs (one transaction) and tell each recorder how its batch fared;
    nothing is raised on the flusher's thread (a recorder's failure is raised to its driver)."""
    try:
        group.commit_many(jobs)
    except BaseException as e:  # noqa: BLE001  (each job already holds its error; kept if not)
        for j in jobs:
            if j.error is None and not j.done:
                j.error = e
    for j in jobs:
        if not j.done and j.error is None:
            j.error = StoreError(f"the commit of run {j.rec.run_id!r} was interrupted")
        j.rec._committed(j)


_flusher = _Flusher()


#: a commit's guarded head update (the lease and the head still this recorder's, no cancel) ...
_UPDATE = (
    "UPDATE runs SET n=?, head=?, latest_checkpoint=coalesce(?, latest_checkpoint), "
    "state=coalesce(?, state) WHERE id=? AND owner=? AND n=? AND head=? "
    "AND NOT EXISTS (SELECT 1 FROM worker_cancels WHERE run=?)"
)
#: ... and the End's, which releases the lease in the same statement
_END_UPDATE = _UPDATE.replace("state=coalesce(?, state)", "state=coalesce(?, state), owner=NULL", 1)


class StoreRecorder:
    """The Recorder (flowrt.data.facts) of one run of a `flowrt.history.store.Store` (SQLite or
    PostgreSQL): appends its facts, one writer at a time.

    Constructing it takes the run's lease (refused with RunBusy while another live process holds
    it; a dead process's lease on this host is taken over). `record` encodes and chains a fact in
    memory. `sync()` commits everything recorded since the last commit in one fsynced transaction
    when that holds a Call or an End, and without an fsync when it holds a Reply (`sync_soon`,
    which the driver uses while more replies wait to be admitted, leaves a Reply for the next
    commit or the flusher, which makes it `_REPLY_WAIT` later); a batch of only
    Choice, Stop or Checkpoint facts stays in the buffer and the next commit carries it
    (docs/spec/trace.md "Durability": one fsync per round of dispatches, covering the facts before
    it). `sync(durable=True/False)` commits whatever is buffered now, fsynced or not. Commits go
    through the store file's CommitGroup. Every commit checks, in its one `UPDATE runs`, that the
    lease and the chain head are still this recorder's. `close` commits durably and releases the lease,
    leaving the run paused (calls open), halted, completed or faulted.
    """

    def __init__(self, store, run_id: str):
        self.store, self.run_id = store, run_id
        self._file = store.file
        self.owner = owner_token()
        self._pending: list[tuple[int, T.EncodedFact, bytes, Fact]] = []
        self._urgent = False  # the buffer holds a Call or an End: the next sync() commits, fsynced
        self._reply = False  # the buffer holds a Reply: the next sync() commits, not fsynced
        self._group = commit_group(self._file)
        self._closed = False
        self._broken: Optional[BaseException] = None
        self._flush_broke = False  # `_broken` came from the flusher's commit: raised as it is
        self._armed = False  # the flusher will commit this buffer's Reply
        self._releasing = False  # the commit being made holds the End: it releases the lease
        self._released = False  # the End is committed and the lease released with it
        self._lock = threading.RLock()  # the driver's thread and the flusher's, one at a time
        self._hasher = blake3.blake3()  # reused for every fact's digests, under the lock (`record`)
        self._explicit = False  # the commit being made was asked for (close, call_pending)
        # The host's times of the calls recorded since they were last written (`call_times`), call
        # id -> [call, dispatched, replied, module, line] (None: not known here; the times as
        # time.time_ns(), written as seconds by `_times_json`). They are written
        # as one row inside a commit made anyway, not in every one (`_TIMES_EVERY`): see `_write`.
        self._times: dict[str, list] = {}
        self._times_since = time.monotonic()
        self._times_due = False
        self._times_part = 0  # rows written at one fact number are told apart by their part
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
            # The run's open_calls rows (only the lease holder changes them): a commit that closes
            # every one of them deletes them in one statement (`_Batch.write`).
            self._open_rows = self._open_next = frozenset(
                row[0] for row in db.execute("SELECT call FROM open_calls WHERE run=?", (run_id,))
            )
        self._synced = (self.n, self.head)
        self._group.join(self)

    @property
    def head_hex(self) -> str:
        return self.head.hex()

    def call_pending(self, call_id: str) -> None:
        """The driver's note that `call_id`'s implementation answered `pending` (host record).
        The run may now wait a long time: everything buffered is committed durably first."""
        with self._lock:
            self._call_pending(call_id)

    def _call_pending(self, call_id: str) -> None:
        self.sync(durable=True)
        self.store.host_records.record_pending(self.run_id, call_id)
        self._pending_calls.add(call_id)
        if self._times:  # the run may wait long: its calls' times are written now (no fsync)
            with self._file.transaction(durable=False) as db:
                self._write_times(db)

    def call_failed(self, call_id: str, failure) -> None:
        """The driver's note that `call_id`'s reply (just recorded) is the `Unknown` or `NotRun`
        its implementation's exception became: its evidence (`CallFailure`) is kept as a host
        record (`call_failures`), never in history."""
        self.store.host_records.record_failure(self.run_id, call_id, failure)

    def _failed(self) -> BaseException:
        """Why nothing more is appended: the flusher's refusal as it was (RunCancelled halts the
        drive), else that this recorder failed or closed."""
        if self._flush_broke:
            return self._broken
        if self._broken is not None:
            return StoreError(f"the recorder of run {self.run_id!r} failed earlier: {self._broken}")
        return StoreError(f"the recorder of run {self.run_id!r} is closed or failed")

    def record(self, fact: Fact) -> None:
        with self._lock:
            if self._closed or self._broken is not None:
                raise self._failed()
            hasher = self._hasher
            enc = _encode(fact, T.BLOB_THRESHOLD, hasher)
            self.head = h = _chain(self.head, enc.chained, hasher)
            self.n = n = self.n + 1
            self._pending.append((n, enc, h, fact))
            t = type(fact)
            if t is Call:
                self._urgent = True
                self._times[fact.id] = [fact.id, time.time_ns(), None, None, None]
            elif t is Reply:
                self._reply = True  # an implementation's answer: kept across a process crash at once
                row = self._times.get(fact.id)
                if row is not None:
                    row[2] = time.time_ns()
                else:
                    self._closed_at(fact.id, time.time_ns())
            else:
                self._others(fact, t)

    def _others(self, fact: Fact, t: type) -> None:
        if t is End:
            self._urgent = True
            self._times_due = True
        elif t is Stop and fact.closed:
            if any(c.has_reply for c in fact.closed):
                self._reply = True
            now = time.time_ns()
            for c in fact.closed:
                self._closed_at(c.call, now)

    def _closed_at(self, call_id: str, now: int) -> None:
        row = self._times.get(call_id)
        if row is None:  # its Call's time is already written (or was never kept): merged on reading
            self._times[call_id] = [call_id, None, now, None, None]
        else:
            row[2] = now

    def call_site(self, call_id: str, file: str, line: int) -> None:
        """The driver's note of where the Call just recorded was made: the Flow file its code
        names (a module's `<key>.flow`) and the Flow line; kept as the module key and the line
        (a host record, not history). Without the lock: a dict's `get` is atomic, and a row
        written before its site came is written without it, with the lock or not."""
        row = self._times.get(call_id)
        if row is not None:
            key = _MODULE_KEYS.get(file)
            if key is None:
                key = file[:-5] if file.endswith(".flow") else file
                if len(_MODULE_KEYS) < 4096:
                    _MODULE_KEYS[file] = key
            row[3] = key
            row[4] = line

    def sync(self, durable: Optional[bool] = None) -> None:
        """Commit the buffered facts if they hold a Call or an End (fsynced) or a Reply (not
        fsynced: it survives the process, and the next fsynced commit puts it on disk); with
        `durable` given, commit whatever is buffered now (fsynced when True). A Choice, Stop or
        Checkpoint alone waits for the commit that carries the next Call, Reply, End, pause or close.
        (`sync_soon`: the same, but a Reply may wait a little for others to share its commit.)"""
        with self._lock:
            if self._broken is not None:
                raise self._failed()
            if not self._pending:
                return
            if durable is None:
                if self._urgent:
                    durable = True
                elif self._reply:
                    durable = False
                else:
                    return
                self._explicit = False
            else:
                self._explicit = True
            self._commit(durable)

    def sync_soon(self) -> None:
        """As `sync()`, except that a Reply (with no Call or End) is left for the next commit,
        which the flusher makes `_REPLY_WAIT` from now if the driver has made none by then. The
        driver's way when more replies are waiting to be admitted: they share one commit."""
        with self._lock:
            if self._urgent or self._broken is not None:
                self.sync()
            elif self._reply and not self._armed:
                self._armed = True
                _flusher.arm(self)

    def _flush(self) -> None:
        """The flusher's commit of the Reply waiting (fsynced if a Call or End came since)."""
        with self._lock:
            job = self._flush_job()
            if job is not None:
                _commit_flushed(self._group, [job])

    def _flush_job(self):
        """(The recorder's lock held.) The flusher's batch: the buffer, when it holds a Reply
        (fsynced if a Call or End came since), as a CommitGroup job; None when nothing waits."""
        self._armed = False
        if self._closed or self._broken is not None or not self._reply:
            return None
        self._explicit = False
        self._times_row = None
        return _Job(self, self._pending, self._urgent)

    def _committed(self, job: _Job) -> None:
        """(The recorder's lock held.) The flusher's job has ended: the buffer is committed, or
        the recorder is broken (kept: the driver's next record or sync raises it)."""
        if job.error is not None:
            self._broken = job.error
            self._flush_broke = True
            return
        self._times_written()
        self._pending = []
        self._urgent = self._reply = False
        self._synced = (self.n, self.head)
        self._released = self._releasing
        self._open_rows = self._open_next

    def _commit(self, durable: bool) -> None:
        pending = self._pending
        try:
            self._write(pending, durable)
        except BaseException as e:
            # Whatever failed (lease lost, head moved, disk), the in-memory chain no longer
            # matches the store: this recorder appends nothing more.
            self._broken = e
            raise
        self._pending = []
        self._urgent = self._reply = False
        self._synced = (self.n, self.head)
        self._released = self._releasing
        self._open_rows = self._open_next

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
        self._times_row = None
        self._group.commit(_Job(self, pending, durable))
        self._times_written()

    def _times_written(self) -> None:
        if self._times_row is not None:  # the calls' times went with the facts: start the next row
            self._times = {}
            self._times_since = time.monotonic()
            self._times_due = False
            self._times_part += 1
            self._times_row = None

    def _apply(self, db, pending, durable: bool) -> None:
        """Write `pending` inside the group's transaction: the guarded head update, the facts, and
        (when due) the host's times of the calls (call_times)."""
        run = self.run_id
        batch = _Batch(run, pending, self._pending_calls, self._open_rows)
        # The lease and head check is the UPDATE's own condition (one statement, no SELECT): on
        # SQLite, BEGIN IMMEDIATE holds the write lock from here to COMMIT; on PostgreSQL the
        # run's row lock (taken first, so the UPDATE sees every cancel and lease taken before it)
        # holds off a second writer, which then re-checks the condition.
        self._file.lock_run(db, run)
        # The End's commit releases the lease too (nothing is appended after an End; `close`
        # then has nothing left to write): one transaction fewer a run.
        self._releasing = batch.state is not None
        cur = db.execute(
            _END_UPDATE if self._releasing else _UPDATE,
            (
                pending[-1][0],
                pending[-1][2],
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
        notify_run(db, run)  # PostgreSQL: one notice at commit wakes the run's waiters
        batch.write(db)
        self._open_next = batch.open_rows
        if self._releasing:
            note_release(db, run)
        times = self._times_to_write(durable)
        if times:  # the host's times (and call sites) of the calls: call_times
            db.execute(
                "INSERT INTO call_times VALUES (?, ?, ?, ?)", (run, pending[-1][0], self._times_part, times)
            )
            self._times_row = times

    def _write_times(self, db) -> None:
        """Write the calls' times kept (one call_times row), inside the caller's transaction."""
        db.execute(
            "INSERT INTO call_times VALUES (?, ?, ?, ?)",
            (self.run_id, self.n, self._times_part, _times_json(self._times)),
        )
        self._times_part += 1
        self._times = {}
        self._times_since = time.monotonic()
        self._times_due = False

    def _times_to_write(self, durable: bool) -> Optional[str]:
        """The call_times row this commit carries (every time kept, as JSON), when it ends the run,
        pauses it or leaves a call pending (an explicit `sync(durable=...)`: close, call_pending),
        when `_TIMES_EVERY` calls wait or the oldest has waited `_TIMES_WAIT` seconds; else None
        (a row in every commit would cost a Tool call ~15%: docs/bench.md)."""
        times = self._times
        if not times:
            return None
        if (
            self._times_due
            or self._explicit
            or len(times) >= _TIMES_EVERY
            or time.monotonic() - self._times_since >= _TIMES_WAIT
        ):
            return _times_json(times)
        return None

    def close(self, halted: bool = False) -> None:
        """Sync durably and release the lease (idempotent). `halted`: the run was interrupted
        (flowrt.engine.interrupts), so it is left halted even with calls open, not paused."""
        with self._lock:
            self._close(halted)

    def _close(self, halted: bool) -> None:
        if self._closed:
            return
        try:
            if self._broken is None:
                self.sync(durable=True)
        finally:
            self._closed = True
            self._group.leave(self)
            if not (self._released and self._broken is None and not self._times):
                self._release(halted)
            # else the End's commit wrote everything and released the lease

    def _release(self, halted: bool) -> None:
        # The facts are fsynced; releasing the lease needs no fsync (lost with the machine, it
        # names a process that is gone, which reads as the same state or as halted).
        with self._file.transaction(durable=False) as db:
            if self._broken is None and self._times:  # the calls' times not yet written
                self._write_times(db)
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


_encode, _chain = T.encode_fact, T.chain

SqliteRecorder = StoreRecorder  # its name from when the store was SQLite only
