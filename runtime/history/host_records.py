"""The host's records beside history (`Store.host_records`): not facts, not chained.

* The runs' records as the host lists them: `load_run`, `runs` (RunInfo: state, head, open
  calls, meta; flowrt.history.run_records reads and checks a record).
* `open_calls`: calls with no reply yet, kept up to date by the recorder as facts are appended.
* `parked_calls` (the table's name): open calls whose implementation answered `pending`, left
  open on purpose, not cut by a crash ("pending calls" in code: `record_pending`, `pending_calls`,
  `record_resent`; "parked" means only a task a checkpoint carries on its only call).
* `bindings`: which implementation served which Tool in a run.
* `nested_runs`: outer run + call id -> the inner run a Tool started (flowrt.host.nested).
* `host_tokens`: every host token the host issued, by @tool type identity and token, with the run
  and call whose Reply issued it (flowrt.history.tokens; the recorder records those of replies).

A store made before one of these tables existed gets it from its first writer; a reader sees it
empty (flowrt.history.schema). None of them is chained, and no fact is changed through them.
"""
from __future__ import annotations

import time
from typing import Optional

from flowrt.history.run_records import RunInfo, corrupt_run_info, run_info, run_row
from flowrt.history.store_errors import BrokenHistory, StoreError


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

    def open_calls(self, run_id: str) -> list[tuple[str, str]]:
        """(call id, tool id) of the run's open calls, in call order."""
        return list(self.load_run(run_id).open_calls)

    # ---- bindings ------------------------------------------------------------------------------

    def record_binding(self, run_id: str, tool_id: str, implementation: str) -> None:
        """The host's record of which implementation serves a Tool in a run (not history)."""
        with self.file.transaction(durable=False) as db:
            db.execute("INSERT OR REPLACE INTO bindings VALUES (?, ?, ?, ?)", (run_id, tool_id, implementation, time.time()))

    def bindings(self, run_id: str) -> dict[str, str]:
        """tool id -> the implementation recorded as serving it in the run."""
        f = self.file
        with f.lock:
            return dict(f.db.execute("SELECT tool_id, implementation FROM bindings WHERE run=?", (run_id,)).fetchall())

    # ---- pending calls -------------------------------------------------------------------------

    def record_pending(self, run_id: str, call_id: str) -> None:
        """Host record: the implementation of open call `call_id` answered `pending` (a deliberate
        pause). Cleared when a Reply or Stop closes the call. A call open and not pending when no
        process holds the run was cut by a crash."""
        with self.file.transaction(durable=False) as db:
            if db.execute("SELECT 1 FROM open_calls WHERE run=? AND call=?", (run_id, call_id)).fetchone():
                db.execute("INSERT OR IGNORE INTO parked_calls VALUES (?, ?, ?)", (run_id, call_id, time.time()))

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

    # ---- host tokens ---------------------------------------------------------------------------

    def issue_token(self, type_id: str, token: str) -> None:
        """Host record: the host issues `token` of the @tool type `type_id` (its declaration
        identity, "browser::Page") in code, so a run may be handed it as input or in a reply.
        Issuing one already issued changes nothing (its first issuer is kept)."""
        if type(type_id) is not str or "::" not in type_id or type(token) is not str:
            raise StoreError(f"a host token is issued as (type identity like 'browser::Page', token text), "
                             f"not ({type_id!r}, {token!r})")
        with self.file.transaction() as db:
            db.execute("INSERT OR IGNORE INTO host_tokens VALUES (?, ?, NULL, NULL, ?)", (type_id, token, time.time()))

    def token_issuer(self, type_id: str, token: str) -> Optional[tuple[Optional[str], Optional[str]]]:
        """(run, call) whose Reply issued the token, (None, None) for one the host issued in code,
        or None: the host never issued it."""
        f = self.file
        with f.lock:
            row = f.db.execute("SELECT run, call FROM host_tokens WHERE type_id=? AND token=?",
                               (type_id, token)).fetchone()
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
            return dict(f.db.execute(
                "SELECT call, inner_run FROM nested_runs WHERE outer_run=? ORDER BY call", (outer_run,)).fetchall())

    def outer_of(self, inner_run: str) -> Optional[tuple[str, str]]:
        """(outer run id, call id) that started `inner_run`, or None for a top-level run."""
        f = self.file
        with f.lock:
            row = f.db.execute("SELECT outer_run, call FROM nested_runs WHERE inner_run=?", (inner_run,)).fetchone()
            return None if row is None else (row[0], row[1])
