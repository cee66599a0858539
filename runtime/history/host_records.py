"""The host's records (`Store.host_records`): the runs' records, and what the host keeps beside
history. None of them is a fact or chained.

* A run's record (its `runs` row): it names what the run's Start names (program, std, entry, fork
  parent), how far its chain reaches (`n`, `head`), its latest checkpoint and archive marker, its
  state, the host's JSON (`meta`) and the lease (`owner`) of the one process that may append to
  it. `load_run` and `runs` show records as `RunInfo`; `run_row` reads one strictly for the
  history and the recorder: a store file is anyone's to edit, so a record is refused whole
  (`BrokenHistory`) when a column does not hold what the store writes there, and a run whose
  record or Start names another data version is refused (`UnsupportedDataVersion`) by every
  read but the listing. Leases: `owner_token()` names this process ("host:pid:token");
  `owner_alive` tells whether the process a lease names may still run (another host: assumed so).
* `open_calls`: calls with no reply yet, kept up to date by the recorder as facts are appended.
* `parked_calls` (the table's name): open calls whose implementation answered `pending`, left
  open on purpose, not cut by a crash ("pending calls" in code: `record_pending`, `pending_calls`,
  `record_resent`; "parked" means only a task a checkpoint carries on its only call).
* `bindings`: which implementation served which Tool in a run.
* `nested_runs`: outer run + call id -> the inner run a Tool started (flowrt.host.nested).
* `call_failures`: the exception and traceback behind a call's `Unknown(...)` or `NotRun(...)`
  (`record_failure`, `failures`): history keeps only the reason the program sees.
* `run_pauses`: since when a paused run is paused (the time its lease was released with calls
  open; `note_release`, in the release's transaction).
* `call_times`: when the host recorded each Call (just before committing and sending it) and the
  Reply or Stop that closed it, and the call site (module key, Flow line) the driver named; the
  recorder writes the times of several calls as one row inside a commit it makes anyway
  (flowrt.history.recorder), `call_times` merges them.
* `host_tokens`: every host token the host issued, by @tool type identity and token, with the run
  and call whose Reply issued it (flowrt.history.tokens; the recorder records those of replies).

A store made before one of these tables existed gets it from its first writer; a reader sees it
empty (flowrt.history.schema).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

from flowrt.history import trace as T
from flowrt.history.store_errors import BrokenHistory, StoreError, UnknownRun


@dataclass(frozen=True, slots=True)
class RunInfo:
    id: str
    created: float
    state: str  # running | paused | halted | completed | faulted | "unreadable (data version N)" | "corrupt (its run record)"
    program: str
    std: str
    data_version: int
    entry: str
    parent: Optional[str]
    from_checkpoint: Optional[int]
    facts: int  # number of the last fact
    head: str  # chain hash of the last fact (hex)
    latest_checkpoint: Optional[int]  # fact number
    archived_through: int
    open_calls: tuple[tuple[str, str], ...]  # (call id, tool id), in call order
    owner: Optional[str]
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CallFailureRecord:
    """The evidence kept for one failed call (`call_failures`): what the implementation raised."""

    call: str
    attempt: int  # 1, then 2 for a call resent that failed again
    exc_type: str  # qualified: "ValueError", "requests.exceptions.Timeout"
    message: str
    traceback: str  # as Python formats it
    at: float  # epoch seconds


def corrupt_run_info(run_id) -> RunInfo:
    """How the listing shows a run whose record is corrupt (every other read of it is refused)."""
    return RunInfo(
        str(run_id),
        0.0,
        "corrupt (its run record)",
        "",
        "",
        T.DATA_VERSION,
        "",
        None,
        None,
        0,
        "",
        None,
        0,
        (),
        None,
    )


def run_row(file, run_id: str, check_version: bool = True) -> dict:
    """The run's record as a dict of its columns, checked (`file`: the StoreFile; the caller holds
    its lock). UnknownRun when there is none; with `check_version`, a run of another data version
    (its record or its Start) is refused."""
    db = file.db
    cur = db.execute("SELECT * FROM runs WHERE id=?", (run_id,))
    row = cur.fetchone()
    if row is None:
        known = [r[0] for r in db.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
        hint = f" (recent runs: {', '.join(map(str, known))})" if known else " (the store has no runs)"
        raise UnknownRun(f"unknown run {run_id!r} in {file.path}{hint}")
    r = dict(zip([d[0] for d in cur.description], row))
    if type(r["data_version"]) is not int:
        raise BrokenHistory(
            f"run {run_id!r}: its run record is corrupt (data_version holds "
            f"{type(r['data_version']).__name__}); refusing to use it"
        )
    if r["data_version"] == T.DATA_VERSION:
        check_run_row(r)
    if not check_version:
        return r
    if r["data_version"] != T.DATA_VERSION:
        raise T.UnsupportedDataVersion(r["data_version"], where=f"run {run_id!r}")
    start = db.execute("SELECT data FROM facts WHERE run=? AND n=1", (run_id,)).fetchone()
    if start is not None:
        try:
            version = T.start_data_version(start[0])
        except T.TraceError as e:
            raise BrokenHistory(
                f"run {run_id!r}: fact 1 is corrupt: {e}; refusing to use its history"
            ) from None
        if version != T.DATA_VERSION:
            raise T.UnsupportedDataVersion(version, where=f"run {run_id!r}")
    return r


def run_info(db, r: dict) -> RunInfo:
    """The RunInfo of a run record `r` (from `run_row`), with its open calls (a host record)."""
    calls = tuple(
        db.execute("SELECT call, tool_id FROM open_calls WHERE run=? ORDER BY n", (r["id"],)).fetchall()
    )
    if any(type(c) is not str or type(t) is not str for c, t in calls):  # a host record is anyone's too
        raise BrokenHistory(
            f"run {r['id']!r}: its record of open calls is corrupt (a call or Tool "
            f"id that is not text); refusing to use it"
        )
    state = r["state"]
    if r["data_version"] != T.DATA_VERSION:
        state = f"unreadable (data version {r['data_version']})"
    elif state == "running" and (r["owner"] is None or not owner_alive(r["owner"])):
        state = "halted"  # the process ended without releasing the run (a crash)
    return RunInfo(
        r["id"],
        r["created"],
        state,
        r["program"],
        r["std"],
        r["data_version"],
        r["entry"],
        r["parent"],
        r["from_checkpoint"],
        r["n"],
        r["head"].hex(),
        r["latest_checkpoint"],
        r["archived_through"],
        calls,
        r["owner"],
        json.loads(r["meta"]),
    )


# The `runs` columns every reader relies on, and what each must hold (a store file is anyone's to
# edit: a record that does not fit is refused naming the run, never half-read).
_RUN_COLUMNS = (
    ("state", (str,)),
    ("program", (str,)),
    ("std", (str,)),
    ("entry", (str,)),
    ("n", (int,)),
    ("head", (bytes,)),
    ("archived_through", (int,)),
    ("created", (int, float)),
    ("parent", (str, type(None))),
    ("from_checkpoint", (int, type(None))),
    ("latest_checkpoint", (int, type(None))),
    ("archived_hash", (bytes, type(None))),
    ("owner", (str, type(None))),
    ("meta", (str,)),
)
_STATES = frozenset({"running", "paused", "halted", "completed", "faulted"})
_META_KEYS = {"entry_module": str, "entry_decl": str, "parent": str, "commits": dict}


def check_run_row(r: dict) -> None:
    """Refuse a run record (`runs` row) whose columns do not hold what the store writes there."""

    def corrupt(why: str) -> BrokenHistory:
        return BrokenHistory(f"run {r.get('id')!r}: its run record is corrupt ({why}); refusing to use it")

    for col, types in _RUN_COLUMNS:
        if type(r.get(col)) not in types:
            raise corrupt(f"{col} holds {type(r.get(col)).__name__}")
    if r["state"] not in _STATES:
        raise corrupt(f"state {r['state'][:20]!r}")
    if (
        r["n"] < 1
        or len(r["head"]) != 32
        or (r["latest_checkpoint"] is not None and not 1 < r["latest_checkpoint"] <= r["n"])
    ):
        raise corrupt("its fact count, head or latest checkpoint is out of range")
    try:
        meta = json.loads(r["meta"])
    except (ValueError, RecursionError):
        raise corrupt("meta is not JSON") from None
    if type(meta) is not dict or any(k in meta and type(meta[k]) is not t for k, t in _META_KEYS.items()):
        raise corrupt("meta is not the host's JSON object")


def _time_entry(e) -> bool:
    """Whether `e` is [call, dispatched, replied, module, line] as the recorder writes it."""
    num = (int, float, type(None))
    return (
        type(e) is list
        and len(e) == 5
        and type(e[0]) is str
        and type(e[1]) in num
        and type(e[2]) in num
        and type(e[3]) in (str, type(None))
        and type(e[4]) in (int, type(None))
    )


def notify_run(db, run_id: str) -> None:
    """In a transaction that changes the run (a commit of its facts, a release, a halt): on
    PostgreSQL its waiters are told when it commits (flowrt.history.pg, `RunWatch`); SQLite's
    waiters look (flowrt.host.worker_ops.wait_for_change)."""
    notify = getattr(db, "notify_run", None)
    if notify is not None:
        notify(run_id)


def note_release(db, run_id: str) -> None:
    """In the transaction that releases a run's lease: a run left paused is paused since now
    (`run_pauses`, read by `HostRecords.paused_times`); any other is not paused. Its waiters are
    told (`notify_run`): its state changed."""
    notify_run(db, run_id)
    db.execute("DELETE FROM run_pauses WHERE run=?", (run_id,))
    db.execute(
        "INSERT INTO run_pauses SELECT id, ? FROM runs WHERE id=? AND state='paused'", (time.time(), run_id)
    )


# ---- leases ---------------------------------------------------------------------------------------


def owner_token() -> str:
    """The lease token of this process: "host:pid:token"."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def owner_alive(owner: str) -> bool:
    """Whether the process named by a lease may still be running (other hosts: assume so)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_owner(owner: str) -> str:
    """A lease as a person reads it: "process 123 on host"."""
    host, _, rest = owner.partition(":")
    return f"process {rest.partition(':')[0]} on {host}"


class HostRecords:
    """The host's records of one store file (a `flowrt.history.schema.StoreFile`)."""

    def __init__(self, file):
        self.file = file

    # ---- runs ----------------------------------------------------------------------------------

    def load_run(self, run_id: str) -> RunInfo:
        """The run's record (UnknownRun; a run of another data version is refused)."""
        f = self.file
        with f.lock:
            return run_info(f.db, run_row(f, run_id))

    def runs(self) -> list[RunInfo]:
        """Every run, oldest first, with its state (see RunInfo.state and trace.md)."""
        f = self.file
        with f.lock:
            ids = [r[0] for r in f.db.execute("SELECT id FROM runs ORDER BY created, id")]
            # Listing does not read any history, so a run of another data version is listed
            # (as unreadable) rather than refusing the whole listing, and so is a run whose record
            # is corrupt (as corrupt: every other read of it is refused).
            out = []
            for i in ids:
                try:
                    out.append(run_info(f.db, run_row(f, i, check_version=False)))
                except BrokenHistory:
                    out.append(corrupt_run_info(i))
            return out

    def newest_runs(self, limit: int, offset: int = 0) -> list[RunInfo]:
        """The readable runs (of this data version), newest first, `limit` of them from `offset`:
        the page is taken in SQL, so only its records are read. A run whose record is corrupt is
        left out of the page (it still counts toward `offset`)."""
        f = self.file
        with f.lock:
            ids = [
                r[0]
                for r in f.db.execute(
                    "SELECT id FROM runs WHERE data_version=? ORDER BY created DESC, id DESC LIMIT ? OFFSET ?",
                    (T.DATA_VERSION, limit, offset),
                )
            ]
            out = []
            for i in ids:
                try:
                    out.append(run_info(f.db, run_row(f, i, check_version=False)))
                except BrokenHistory:
                    continue
            return out

    def paused_times(self) -> dict[str, float]:
        """run id -> since when it is paused: the time its lease was last released with calls
        open. A run released paused before the store kept that (`run_pauses`) is paused since
        its latest open call was left pending, if one was."""
        f = self.file
        with f.lock:
            out = dict(
                f.db.execute(
                    "SELECT run, max(parked) FROM parked_calls WHERE run IN "
                    "(SELECT id FROM runs WHERE state='paused') GROUP BY run"
                ).fetchall()
            )
            out.update(f.db.execute("SELECT run, since FROM run_pauses").fetchall())
        return {r: t for r, t in out.items() if type(r) is str and type(t) in (int, float)}

    def open_calls(self, run_id: str) -> list[tuple[str, str]]:
        """(call id, tool id) of the run's open calls, in call order."""
        return list(self.load_run(run_id).open_calls)

    def call_times(self, run_id: str) -> dict[str, tuple]:
        """call id -> (dispatched, replied, module key, Flow line), each None when not kept: the
        host's times and call site of each call it recorded (`call_times`: rows of several calls,
        merged in the order written). An entry that does not hold what the recorder writes there
        (a store is anyone's to edit) is left out."""
        f = self.file
        with f.lock:
            rows = f.db.execute(
                "SELECT times FROM call_times WHERE run=? ORDER BY n, part", (run_id,)
            ).fetchall()
        out: dict[str, list] = {}
        for (text,) in rows:
            try:
                entries = json.loads(text) if type(text) is str else None
            except (ValueError, RecursionError):
                continue
            for e in entries if type(entries) is list else ():
                if not _time_entry(e):
                    continue
                have = out.setdefault(e[0], [None, None, None, None])
                for i, v in enumerate(e[1:]):
                    if v is not None:
                        have[i] = v
        return {c: tuple(v) for c, v in out.items()}

    # ---- bindings ------------------------------------------------------------------------------

    def record_binding(self, run_id: str, tool_id: str, implementation: str) -> None:
        """The host's record of which implementation serves a Tool in a run (not history)."""
        with self.file.transaction(durable=False) as db:
            db.execute(
                "INSERT OR REPLACE INTO bindings VALUES (?, ?, ?, ?)",
                (run_id, tool_id, implementation, time.time()),
            )

    def bindings(self, run_id: str) -> dict[str, str]:
        """tool id -> the implementation recorded as serving it in the run."""
        f = self.file
        with f.lock:
            return dict(
                f.db.execute("SELECT tool_id, implementation FROM bindings WHERE run=?", (run_id,)).fetchall()
            )

    # ---- pending calls -------------------------------------------------------------------------

    def record_pending(self, run_id: str, call_id: str) -> None:
        """Host record: the implementation of open call `call_id` answered `pending` (a deliberate
        pause). Cleared when a Reply or Stop closes the call. A call open and not pending when no
        process holds the run was cut by a crash."""
        with self.file.transaction(durable=False) as db:
            if db.execute("SELECT 1 FROM open_calls WHERE run=? AND call=?", (run_id, call_id)).fetchone():
                db.execute(
                    "INSERT OR IGNORE INTO parked_calls VALUES (?, ?, ?)", (run_id, call_id, time.time())
                )

    def record_resent(self, run_id: str, call_id: str) -> None:
        """Host record: open call `call_id` is being sent again (`resume --resend`), so it is out,
        no longer pending: a crash while it is out cuts it like any call in flight."""
        with self.file.transaction(durable=True) as db:
            db.execute("DELETE FROM parked_calls WHERE run=? AND call=?", (run_id, call_id))

    def pending_calls(self, run_id: str) -> set[str]:
        """Ids of the run's open calls left open on purpose (`pending`)."""
        f = self.file
        with f.lock:
            return {r[0] for r in f.db.execute("SELECT call FROM parked_calls WHERE run=?", (run_id,))}

    # ---- call failures -------------------------------------------------------------------------

    def record_failure(self, run_id: str, call_id: str, failure) -> None:
        """Host record: the reply to `call_id` is the `Unknown` or `NotRun` the exception in
        `failure` (a `flowrt.engine.tools.CallFailure`) became. A call that fails again (resent)
        gets the next attempt number; nothing earlier is replaced."""
        with self.file.transaction(durable=False) as db:
            (attempt,) = db.execute(
                "SELECT coalesce(max(attempt), 0) + 1 FROM call_failures WHERE run=? AND call=?",
                (run_id, call_id),
            ).fetchone()
            db.execute(
                "INSERT INTO call_failures VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, call_id, attempt, failure.exc_type, failure.message, failure.traceback, failure.at),
            )

    def failures(self, run_id: str) -> dict[str, list[CallFailureRecord]]:
        """call id -> its failures' evidence, in attempt order (a record that is not what the store
        writes there is left out: a host record is anyone's to edit)."""
        f = self.file
        with f.lock:
            rows = f.db.execute(
                "SELECT call, attempt, exc_type, message, traceback, at FROM call_failures "
                "WHERE run=? ORDER BY call, attempt",
                (run_id,),
            ).fetchall()
        out: dict[str, list[CallFailureRecord]] = {}
        for call, attempt, exc_type, message, tb, at in rows:
            if all(type(v) is str for v in (call, exc_type, message, tb)) and type(at) in (int, float):
                out.setdefault(call, []).append(CallFailureRecord(call, attempt, exc_type, message, tb, at))
        return out

    # ---- host tokens ---------------------------------------------------------------------------

    def issue_token(self, type_id: str, token: str) -> None:
        """Host record: the host issues `token` of the @tool type `type_id` (its declaration
        identity, "browser::Page") in code, so a run may be handed it as input or in a reply.
        Issuing one already issued changes nothing (its first issuer is kept)."""
        if type(type_id) is not str or "::" not in type_id or type(token) is not str:
            raise StoreError(
                f"a host token is issued as (type identity like 'browser::Page', token text), "
                f"not ({type_id!r}, {token!r})"
            )
        with self.file.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO host_tokens VALUES (?, ?, NULL, NULL, ?)",
                (type_id, token, time.time()),
            )

    def token_issuer(self, type_id: str, token: str) -> Optional[tuple[Optional[str], Optional[str]]]:
        """(run, call) whose Reply issued the token, (None, None) for one the host issued in code,
        or None: the host never issued it."""
        f = self.file
        with f.lock:
            row = f.db.execute(
                "SELECT run, call FROM host_tokens WHERE type_id=? AND token=?", (type_id, token)
            ).fetchone()
        return None if row is None else (row[0], row[1])

    def token_issued(self, type_id: str, token: str) -> bool:
        return self.token_issuer(type_id, token) is not None

    # ---- nested runs ---------------------------------------------------------------------------

    def record_nested(self, outer_run: str, call_id: str, inner_run: str) -> None:
        """Host record linking a nested run to the outer call that started it (not history)."""
        with self.file.transaction(durable=False) as db:
            db.execute("INSERT OR REPLACE INTO nested_runs VALUES (?, ?, ?)", (outer_run, call_id, inner_run))

    def nested_runs(self, outer_run: str) -> dict[str, str]:
        """call id -> inner run id, for every nested run a call of `outer_run` started."""
        f = self.file
        with f.lock:
            return dict(
                f.db.execute(
                    "SELECT call, inner_run FROM nested_runs WHERE outer_run=? ORDER BY call", (outer_run,)
                ).fetchall()
            )

    def outer_of(self, inner_run: str) -> Optional[tuple[str, str]]:
        """(outer run id, call id) that started `inner_run`, or None for a top-level run."""
        f = self.file
        with f.lock:
            row = f.db.execute(
                "SELECT outer_run, call FROM nested_runs WHERE inner_run=?", (inner_run,)
            ).fetchone()
            return None if row is None else (row[0], row[1])
