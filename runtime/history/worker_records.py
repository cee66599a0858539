"""The worker's records (`Store.worker_records`): what a worker (flowrt.host.worker) keeps beside
history to keep runs going. None of them is a fact or chained, and nothing recorded in a run's
history is ever changed through them.

* `worker_submissions`: a run handed to a worker (`submit`): its program's name, entry, when, and
  when a worker first took it (`started`; NULL: it is still `submitted`). The run's Start is
  recorded at submission, so its input was admitted then.
* `worker_leases`: which worker owns a run (owner id, pid, host, last heartbeat, expiry). A lease
  is taken in one transaction and only when there is none, it is the taker's own, it expired, or
  it names a process on this host that no longer exists. Taking over an expired lease also clears
  the run's recorder lease (`runs.owner`), so the old owner's next commit is refused.
* `worker_replies`: replies delivered for open calls and not yet recorded (the JSON text, as
  delivered): a worker records them as Replies when it continues the run.
* `worker_timers`: `clock.sleep` calls left open with a due time; `fired` is when the worker
  delivered `Ok(())` (so `fired - due` is how late it fired).
* `worker_cancels`: runs a host asked to halt. Once a run has one, no commit of its recorder
  succeeds (flowrt.history.recorder), so a run is halted whatever it was doing when asked.
* `worker_attempts`: the attempts a binding's `retry` made inside one call (invisible to history).

`runs_page` picks a page of runs by the state a worker's client sees and the program's name in
one SQL statement (the state and name expressions below; the runs page and `GET /runs`), so a page
of 50 of 100,000 runs reads only as much of the `runs` index as it takes to find 50.

Several workers on one PostgreSQL store (docs/spec/execution.md "Several workers"): a claim
(`claim`, `fire_due`) selects its rows `FOR UPDATE SKIP LOCKED` (the file's `SKIP_LOCKED`), so two
workers never take one run or fire one timer, and a row another worker is claiming is passed
over rather than waited for; on SQLite (no such clause) BEGIN IMMEDIATE serialises the claims and
each re-checks its row. A write that may let a run move (a submission, a delivered reply, a fired
or set timer, a cancel, a released lease) NOTIFYs the store's channel in its own transaction
(`_notify`; nothing on SQLite), so the workers LISTENing wake when it commits.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Optional

from flowrt.history import trace as T
from flowrt.history.host_records import notify_run, owner_alive
from flowrt.history.store_errors import StoreError, UnknownRun


def _notify(db, what: str, run_id: str) -> None:
    """NOTIFY the store's listeners at commit (PostgreSQL's `db.notify`; SQLite has none)."""
    notify = getattr(db, "notify", None)
    if notify is not None:
        notify(f"{what} {run_id}")


class WorkerRecords:
    """The worker's records of one store file (a `flowrt.history.schema.StoreFile`)."""

    def __init__(self, file):
        self.file = file

    def _read(self, sql: str, args=()) -> list:
        f = self.file
        with f.lock:
            return f.db.execute(sql, args).fetchall()

    # ---- submissions ---------------------------------------------------------------------------

    @staticmethod
    def submission_row(db, run_id: str, program: str, entry: str) -> None:
        """Write a submission inside a transaction the caller holds (`create_run`'s `host_rows`)."""
        db.execute(
            "INSERT OR IGNORE INTO worker_submissions VALUES (?, ?, ?, ?, NULL)",
            (run_id, program, entry, time.time()),
        )
        _notify(db, "submitted", run_id)

    def submission(self, run_id: str) -> Optional[tuple[str, str, float, Optional[float]]]:
        """(program name, entry, submitted, started) of a submitted run, or None."""
        rows = self._read(
            "SELECT program, entry, submitted, started FROM worker_submissions WHERE run=?", (run_id,)
        )
        return tuple(rows[0]) if rows else None

    def submissions(self) -> dict[str, tuple[str, str, float, Optional[float]]]:
        rows = self._read("SELECT run, program, entry, submitted, started FROM worker_submissions")
        return {r[0]: tuple(r[1:]) for r in rows}

    def mark_started(self, run_id: str) -> None:
        with self.file.transaction(durable=False, whole=False) as db:
            db.execute(
                "UPDATE worker_submissions SET started=? WHERE run=? AND started IS NULL",
                (time.time(), run_id),
            )

    # ---- leases --------------------------------------------------------------------------------

    def claim(self, run_id: str, owner: str, seconds: float) -> bool:
        """Take the run's lease for `owner` in one transaction: True when it is now `owner`'s.
        On PostgreSQL the run's row is locked first, `FOR UPDATE SKIP LOCKED`: a run another
        worker is claiming (or whose recorder is committing) is not ours now, and no two claims of
        one run overlap; only the run's rows are locked, not the store."""
        now = time.time()
        host, pid = socket.gethostname(), os.getpid()
        skip = getattr(self.file, "SKIP_LOCKED", "")
        # a lease lost with the machine names a gone process
        with self.file.transaction(durable=False, whole=not skip) as db:
            if skip and db.execute("SELECT id FROM runs WHERE id=?" + skip, (run_id,)).fetchone() is None:
                return False
            row = db.execute(
                "SELECT owner, pid, host, expires FROM worker_leases WHERE run=?", (run_id,)
            ).fetchone()
            if row is not None and row[0] != owner:
                dead = row[2] == host and not owner_alive(f"{row[2]}:{row[1]}:x")
                if row[3] > now and not dead:
                    return False
                # expired (or its process is gone): the old owner's recorder may append no more
                if db.execute(
                    "UPDATE runs SET owner=NULL WHERE id=? AND owner IS NOT NULL", (run_id,)
                ).rowcount:
                    notify_run(db, run_id)
            db.execute(
                "INSERT OR REPLACE INTO worker_leases VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, owner, pid, host, now, now + seconds),
            )
            return True

    def heartbeat(self, owner: str, seconds: float) -> int:
        """Renew every lease `owner` holds; how many."""
        now = time.time()
        with self.file.transaction(durable=False, whole=False) as db:
            return db.execute(
                "UPDATE worker_leases SET heartbeat=?, expires=? WHERE owner=?", (now, now + seconds, owner)
            ).rowcount

    def release(self, run_id: str, owner: str) -> None:
        with self.file.transaction(durable=False, whole=False) as db:
            if db.execute("DELETE FROM worker_leases WHERE run=? AND owner=?", (run_id, owner)).rowcount:
                _notify(db, "released", run_id)

    def expired_leases(self, now: Optional[float] = None) -> set[str]:
        """The runs whose lease expired (its worker stopped heartbeating): any worker may take them."""
        now = time.time() if now is None else now
        return {r[0] for r in self._read("SELECT run FROM worker_leases WHERE expires<=?", (now,))}

    def lease(self, run_id: str) -> Optional[tuple[str, int, str, float, float]]:
        """(owner, pid, host, heartbeat, expires) of the run's lease, or None."""
        rows = self._read(
            "SELECT owner, pid, host, heartbeat, expires FROM worker_leases WHERE run=?", (run_id,)
        )
        return tuple(rows[0]) if rows else None

    # ---- delivered replies ---------------------------------------------------------------------

    def deliver(self, run_id: str, call_id: str, reply: bytes) -> Optional[str]:
        """Keep a reply for open call `call_id` until a worker records it. In one transaction with
        the checks: None when kept, else why not ("not open", "cancelled", "waiting")."""
        with self.file.transaction() as db:
            if db.execute("SELECT 1 FROM worker_cancels WHERE run=?", (run_id,)).fetchone():
                return "cancelled"
            if not db.execute(
                "SELECT 1 FROM open_calls WHERE run=? AND call=?", (run_id, call_id)
            ).fetchone():
                return "not open"
            if db.execute(
                "SELECT 1 FROM worker_replies WHERE run=? AND call=?", (run_id, call_id)
            ).fetchone():
                return "waiting"
            db.execute(
                "INSERT INTO worker_replies VALUES (?, ?, ?, ?)", (run_id, call_id, reply, time.time())
            )
            _notify(db, "reply", run_id)
            return None

    def replies(self, run_id: str) -> dict[str, bytes]:
        """call id -> the reply delivered for it and not yet taken, in delivery order."""
        rows = self._read(
            "SELECT call, reply FROM worker_replies WHERE run=? ORDER BY delivered, call", (run_id,)
        )
        return {c: bytes(r) for c, r in rows}

    def drop_replies(self, run_id: str, calls) -> None:
        with self.file.transaction(durable=False, whole=False) as db:
            db.executemany("DELETE FROM worker_replies WHERE run=? AND call=?", [(run_id, c) for c in calls])

    def runs_with_replies(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT run FROM worker_replies ORDER BY run")]

    # ---- timers --------------------------------------------------------------------------------

    def add_timer(self, run_id: str, call_id: str, due: float) -> float:
        """Record a timer for `call_id` (a call sent again keeps its first due time): the due time."""
        with self.file.transaction(whole=False) as db:
            db.execute(
                "INSERT OR IGNORE INTO worker_timers VALUES (?, ?, ?, ?, NULL)",
                (run_id, call_id, due, time.time()),
            )
            _notify(db, "timer", run_id)
            return db.execute(
                "SELECT due FROM worker_timers WHERE run=? AND call=?", (run_id, call_id)
            ).fetchone()[0]

    def due_timers(self, now: float) -> list[tuple[str, str, float]]:
        return [
            tuple(r)
            for r in self._read(
                "SELECT run, call, due FROM worker_timers WHERE fired IS NULL AND due<=? ORDER BY due", (now,)
            )
        ]

    def next_due(self) -> Optional[float]:
        rows = self._read("SELECT min(due) FROM worker_timers WHERE fired IS NULL")
        return rows[0][0] if rows else None

    def fire(self, run_id: str, call_id: str, reply: bytes) -> Optional[float]:
        """Fire a due timer: mark it fired and, if its call is still open and the run not
        cancelled, deliver `reply` for it, in one transaction. The lateness (fired - due), or None
        when another worker fired it first."""
        now = time.time()
        with self.file.transaction() as db:
            row = db.execute(
                "SELECT due FROM worker_timers WHERE run=? AND call=? AND fired IS NULL", (run_id, call_id)
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE worker_timers SET fired=? WHERE run=? AND call=?", (now, run_id, call_id))
            live = db.execute("SELECT 1 FROM open_calls WHERE run=? AND call=?", (run_id, call_id)).fetchone()
            gone = db.execute("SELECT 1 FROM worker_cancels WHERE run=?", (run_id,)).fetchone()
            if live and not gone:
                db.execute(
                    "INSERT OR IGNORE INTO worker_replies VALUES (?, ?, ?, ?)", (run_id, call_id, reply, now)
                )
                _notify(db, "reply", run_id)
            return now - row[0]

    def fire_due(self, now: float, reply: bytes, limit: int = 100) -> list[tuple[str, str, float]]:
        """Claim and fire up to `limit` due timers in one transaction, as `fire` fires one: (run,
        call, lateness) of each fired here. On PostgreSQL they are selected `FOR UPDATE SKIP
        LOCKED` (a timer another worker is firing is passed over) and no store-wide lock is taken;
        on SQLite BEGIN IMMEDIATE serialises the firing workers. No timer is fired twice."""
        skip = getattr(self.file, "SKIP_LOCKED", "")
        out = []
        with self.file.transaction(whole=not skip) as db:
            rows = db.execute(
                "SELECT run, call, due FROM worker_timers WHERE fired IS NULL AND due<=? "
                "ORDER BY due, run, call LIMIT ?" + skip,
                (now, limit),
            ).fetchall()
            fired = time.time()
            for run_id, call_id, due in rows:
                db.execute(
                    "UPDATE worker_timers SET fired=? WHERE run=? AND call=? AND fired IS NULL",
                    (fired, run_id, call_id),
                )
                live = db.execute(
                    "SELECT 1 FROM open_calls WHERE run=? AND call=?", (run_id, call_id)
                ).fetchone()
                gone = db.execute("SELECT 1 FROM worker_cancels WHERE run=?", (run_id,)).fetchone()
                if live and not gone:
                    db.execute(
                        "INSERT OR IGNORE INTO worker_replies VALUES (?, ?, ?, ?)",
                        (run_id, call_id, reply, fired),
                    )
                    _notify(db, "reply", run_id)
                out.append((run_id, call_id, fired - due))
        return out

    def timers(self, run_id: str) -> list[tuple[str, float, float, Optional[float]]]:
        """(call id, due, set at, fired) of the run's timers."""
        return [
            tuple(r)
            for r in self._read(
                "SELECT call, due, set_at, fired FROM worker_timers WHERE run=? ORDER BY due", (run_id,)
            )
        ]

    # ---- cancel --------------------------------------------------------------------------------

    def request_cancel(self, run_id: str) -> str:
        """Ask to halt a run, in one transaction: "halted" (no process held it: it is halted now),
        "requested" (a process holds it: its next commit is refused and it halts), or the state it
        already ended in ("completed", "faulted", "cancelled")."""
        with self.file.transaction() as db:
            self.file.lock_run(db, run_id)  # PostgreSQL: a commit of the run's recorder comes before or after
            row = db.execute("SELECT state, owner FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                raise UnknownRun(f"unknown run {run_id!r} in {self.file.path}")
            if db.execute("SELECT 1 FROM worker_cancels WHERE run=?", (run_id,)).fetchone():
                return "cancelled"
            state, owner = row
            if state in ("completed", "faulted"):
                return state
            db.execute("INSERT INTO worker_cancels VALUES (?, ?)", (run_id, time.time()))
            _notify(db, "cancel", run_id)
            if owner is None or not owner_alive(owner):
                db.execute("UPDATE runs SET state='halted', owner=NULL WHERE id=?", (run_id,))
                notify_run(db, run_id)
                db.execute("DELETE FROM worker_replies WHERE run=?", (run_id,))
                return "halted"
            db.execute("DELETE FROM worker_replies WHERE run=?", (run_id,))
            return "requested"

    def cancelled(self, run_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM worker_cancels WHERE run=?", (run_id,)))

    def cancelled_runs(self) -> set[str]:
        return {r[0] for r in self._read("SELECT run FROM worker_cancels")}

    # ---- a page of runs, by state and program -------------------------------------------------------

    def runs_page(
        self, state: Optional[str], program: Optional[str], limit: Optional[int], offset: int = 0
    ) -> Optional[list[str]]:
        """The ids of the runs (of this data version) in `state` (as flowrt.host.worker_ops gives
        it: submitted, running, paused, completed, faulted, halted; None: any) whose program is
        known by the name `program` (the submission's name, else the name the host gave it, its
        entry file's stem, its entry module, its identity's first 12 digits; None: any), newest
        first, `limit` of them (None: all) from `offset`: filtered and paged in one SQL statement,
        on SQLite and on PostgreSQL alike (the file's `page_terms`). None on a store whose SQL
        cannot do it (neither): the caller filters."""
        f = self.file
        page_terms = getattr(f, "page_terms", None)
        if page_terms is None and not hasattr(f.db, "create_function"):
            return None
        with f.lock:
            if page_terms is not None:  # PostgreSQL: its own spelling of the page's terms
                terms = page_terms()
                dead = self._dead_owners() if _needs_alive(state) else []
                return self._page(f, dict(terms, args=(dead,)), state, program, limit, offset)
            if getattr(self, "_functions_on", None) is not f.db:
                _functions(f.db)
                self._functions_on = f.db
            return self._page(f, _SQLITE_TERMS, state, program, limit, offset)

    def _dead_owners(self) -> list[str]:
        """The recorder leases (`runs.owner`) of running runs on this host whose process is gone
        (`owner_alive`, as SQLite's `flow_owner_alive` decides it row by row): on PostgreSQL the
        page's SQL reads a lease as dead when it is one of these."""
        here = socket.gethostname() + ":"
        rows = self.file.db.execute(
            "SELECT DISTINCT owner FROM runs WHERE state = 'running' AND substr(owner, 1, ?) = ?",
            (len(here), here),
        ).fetchall()
        return sorted(o for (o,) in rows if type(o) is str and not owner_alive(o))

    @staticmethod
    def _page(f, terms: dict, state, program, limit, offset) -> list[str]:
        where, args = ["r.data_version = ?"], list(terms["args"]) + [T.DATA_VERSION]
        if state in ("completed", "faulted"):  # what the run's record says (the CASE's first arm)
            where.append("r.state = ?")
            args.append(state)
        elif state is not None:
            where.append(f"({_state_sql(terms)}) = ?")
            args.append(state)
        if program is not None:
            where.append(f"({_name_sql(terms)}) = ?")
            args.append(program)
        sql = (
            f"{terms['with']}SELECT r.id FROM runs r {terms['join']}"
            f"WHERE {' AND '.join(where)} ORDER BY r.created DESC, {terms['id']} DESC LIMIT ? OFFSET ?"
        )
        args += [terms["all"] if limit is None else limit, offset]
        return [row[0] for row in f.db.execute(sql, args)]

    # ---- attempts inside one call --------------------------------------------------------------

    def record_attempt(self, run_id: str, call_id: str, attempt: int, started: float, outcome: str) -> None:
        if type(attempt) is not int or attempt < 1:
            raise StoreError(f"attempt numbers start at 1, not {attempt!r}")
        with self.file.transaction(durable=False) as db:
            db.execute(
                "INSERT OR REPLACE INTO worker_attempts VALUES (?, ?, ?, ?, ?)",
                (run_id, call_id, attempt, started, outcome),
            )

    def attempts(self, run_id: str, call_id: str) -> list[tuple[int, float, str]]:
        """(attempt, started, outcome) of each attempt made inside the call, in order."""
        return [
            tuple(r)
            for r in self._read(
                "SELECT attempt, started, outcome FROM worker_attempts WHERE run=? AND call=? ORDER BY attempt",
                (run_id, call_id),
            )
        ]

    def pending_since(self, run_id: str) -> dict[str, float]:
        """call id -> when its implementation answered `pending` (host_records' `parked_calls`)."""
        return dict(self._read("SELECT call, parked FROM parked_calls WHERE run=?", (run_id,)))

    # ---- what a worker looks for ---------------------------------------------------------------

    def runs_to_continue(self) -> list[tuple[str, str, Optional[str], str]]:
        """(run id, state, owner, program identity) of every run that has not ended and was not
        cancelled: a worker decides which of them it can and should take."""
        return [
            tuple(r)
            for r in self._read(
                "SELECT id, state, owner, program FROM runs WHERE state NOT IN ('completed', 'faulted') "
                "AND id NOT IN (SELECT run FROM worker_cancels) ORDER BY created, id"
            )
        ]


# The state a worker's client sees (flowrt.host.worker_ops._state over run_info's state), in SQL:
# a run left running by a process that is gone is halted; a cancelled run not running is halted;
# a halted run never started (its submission not taken) or with no open call is submitted, one
# with open calls paused (a worker takes it to recover). The backend's terms (`t`): `dead`, that
# the lease `r.owner` names a process that is gone; `cancelled`, that the run has a cancel
# request; `unstarted`, a submission not yet taken; `open`, that the run has an open call.
def _state_sql(t: dict) -> str:
    live = (
        f"CASE WHEN r.state = 'running' AND (r.owner IS NULL OR {t['dead']}) THEN 'halted' ELSE r.state END"
    )
    return (
        f"CASE WHEN r.state IN ('completed', 'faulted') THEN r.state "
        f"WHEN {t['cancelled']} THEN CASE WHEN ({live}) = 'running' THEN 'running' ELSE 'halted' END "
        f"WHEN r.state = 'paused' THEN 'paused' "
        f"WHEN ({live}) = 'running' THEN 'running' "
        f"WHEN {t['unstarted']} THEN 'submitted' "
        f"WHEN {t['open']} THEN 'paused' ELSE 'submitted' END"
    )


def _needs_alive(state: Optional[str]) -> bool:
    """Whether filtering by `state` depends on a lease's liveness (never for an ended run)."""
    return state is not None and state not in ("completed", "faulted")


# The name a run's program is known by (flowrt.host.runs_view.program_name, the submission first):
# `t['submitted']` the submission's name, `t['meta']` the backend's text of the host's JSON at a
# key ('' and not text: NULL), `t['stem']` a path's stem.
def _name_sql(t: dict) -> str:
    meta = t["meta"]
    return (
        f"coalesce({t['submitted']}, {meta.format('program')}, {t['stem'].format(meta.format('path'))}, "
        f"{meta.format('entry_module')}, substr(r.program, 1, 12))"
    )


# SQLite's terms: the run's submission and cancel joined, its JSON functions, and Python
# functions made once per connection (`_functions`).
_SQLITE_TERMS = {
    "with": "",
    "join": "LEFT JOIN worker_submissions s ON s.run = r.id LEFT JOIN worker_cancels c ON c.run = r.id ",
    "args": (),
    "dead": "NOT flow_owner_alive(r.owner)",
    "cancelled": "c.run IS NOT NULL",
    "unstarted": "s.run IS NOT NULL AND s.started IS NULL",
    "open": "EXISTS (SELECT 1 FROM open_calls o WHERE o.run = r.id)",
    "submitted": "s.program",
    "meta": "CASE WHEN json_valid(r.meta) AND json_type(r.meta, '$.{0}') = 'text' "
    "THEN nullif(json_extract(r.meta, '$.{0}'), '') END",
    "stem": "flow_stem({0})",
    "id": "r.id",
    "all": -1,
}


def _stem(path: Optional[str]) -> Optional[str]:
    if path is None:
        return None
    return os.path.splitext(os.path.basename(path))[0] or None


def _functions(db) -> None:
    """The Python functions the page's SQL calls (made once per connection): whether a lease's
    process may still run, and a file path's stem."""
    db.create_function("flow_owner_alive", 1, lambda o: 1 if type(o) is str and owner_alive(o) else 0)
    db.create_function("flow_stem", 1, lambda p: _stem(p) if type(p) is str else None, deterministic=True)
