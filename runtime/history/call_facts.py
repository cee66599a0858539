"""A call's facts, read by call id (`Store.history.calls`): what resume and fork need of calls
recorded before the checkpoint they start from.

* `carried_replies`: the Replies to calls a checkpoint carries (parked tasks), recorded before it;
  such a task is restored finished from its reply (docs/spec/execution.md).
* `open_call_facts`: the Call facts of open calls, to show them (their Tool and arguments).
* `call_tools`: the Tools of calls recorded before a checkpoint (the check of a reply served to
  a parked task, flowrt.history.stored).
* `facts_of_call`: every fact that may concern one call, for a fork rebuilding a parked task
  (flowrt.host.forks).

A fact is found by the call id its CBOR holds (an `instr` pre-filter, then parsed), hot or
archived. Each read that serves something to a resume checks the chain over what it read up to
the fact before the checkpoint, where the check of the facts served from it begins, so what it
serves is covered by the same chain (flowrt.history.integrity.walk).
"""

from __future__ import annotations

from typing import Optional

import cbor2

from flowrt.data.facts import Call, Fact
from flowrt.data.values import ClassTable
from flowrt.history import integrity as I
from flowrt.history import trace as T
from flowrt.history.store_errors import BrokenHistory, chain_broken, corrupt_fact


class CallFacts:
    """Reads of one store's history by call id, over its `flowrt.history.history_store.HistoryStore`."""

    def __init__(self, history):
        self.history = history

    def call_tools(self, run_id: str, call_ids, before_n: int) -> dict[str, str]:
        """{call id: tool id} of the Calls to `call_ids` recorded before fact `before_n` (archived
        or hot; one deleted by `archive(delete=True)` is not found). Read without their values."""
        out: dict[str, str] = {}
        f = self.history.file
        with f.lock:
            for cid in sorted(set(call_ids)):
                needle = cbor2.dumps(cid)  # the id as the fact's CBOR holds it: a cheap pre-filter
                for table in ("facts", "archived_facts"):
                    for n, data in f.db.execute(
                        f"SELECT n, data FROM {table} WHERE run=? AND n<? AND kind=? AND instr(data, ?) > 0",
                        (run_id, before_n, T.CALL, needle),
                    ).fetchall():
                        try:
                            item = T.parse_fact(data, T.CALL)
                        except T.TraceError as e:
                            raise corrupt_fact(run_id, n, e) from None
                        if item[1] == cid:
                            out[cid] = item[3]
        return out

    def open_call_facts(
        self, run_id: str, call_ids, *, classes: Optional[ClassTable] = None, before_n: Optional[int] = None
    ) -> dict:
        """{call id: Call fact} of those of `call_ids` that are open, hot or archived, read by the
        fact number the open_calls record keeps (one lookup each). For showing an open call (its
        Tool and arguments) whose Call precedes the checkpoint a resume starts at; nothing is
        served to the program from it. With `before_n` (that checkpoint's fact number) the chain is
        checked from the earliest Call found to fact `before_n - 1`, as for carried replies."""
        wanted = set(call_ids)
        out: dict = {}
        first = None
        h = self.history
        db = h.file.db
        with h.file.lock:
            for call_id, n in db.execute(
                "SELECT call, n FROM open_calls WHERE run=? ORDER BY n", (run_id,)
            ).fetchall():
                if call_id not in wanted:
                    continue
                for table in ("facts", "archived_facts"):
                    row = db.execute(
                        f"SELECT data FROM {table} WHERE run=? AND n=? AND kind=?", (run_id, n, T.CALL)
                    ).fetchone()
                    if row is not None:
                        fact = h.read_fact(run_id, n, row[0], classes)
                        if type(fact) is Call and fact.id == call_id:
                            out[call_id] = fact
                            first = n if first is None else min(first, n)
                        break
            if before_n is not None and first is not None and first < before_n:
                why = I.walk(h, run_id, h.run_row(run_id), first, before_n - 1)
                if why:
                    raise chain_broken(run_id, why)
        return out

    def carried_replies(
        self,
        run_id: str,
        call_ids,
        before_n: int,
        *,
        classes: Optional[ClassTable] = None,
        require_all: bool = False,
    ) -> dict:
        """{call id: reply}, in recorded order, of the Replies to `call_ids` recorded before fact
        `before_n` (the latest checkpoint), archived or hot. A task of the checkpoint parked on one of
        these calls is restored finished from its reply (driver `drive(carried_replies=...)`).
        `classes`: the class table of the run's program, which decodes the replies.

        The chain is checked from the earliest reply found up to fact `before_n - 1`, whose stored
        hash is where the check of the facts served from the checkpoint begins, so a carried reply is
        covered by the same chain (BrokenHistory naming the fact otherwise). A reply not found is left
        out; with `require_all` (the caller knows each call was answered before the checkpoint) it is
        a broken history."""
        wanted = set(call_ids)
        found: dict = {}
        if not wanted:
            return found
        h = self.history
        with h.file.lock:
            r = h.run_row(run_id)
            for cid in sorted(wanted):
                rows = I.reply_rows(h, run_id, cid, before_n)
                if rows:
                    n, data = rows[0]
                    found[cid] = (n, h.read_fact(run_id, n, data, classes).reply)
                elif require_all:
                    raise BrokenHistory(
                        f"run {run_id!r} fails its integrity check: its checkpoint at fact {before_n} carries "
                        f"call {cid}, which is not open, yet no reply to it recorded before the checkpoint is "
                        f"in the store (deleted with archived facts?); refusing to use its history"
                    )
            if found:
                why = I.walk(h, run_id, r, min(n for n, _ in found.values()), before_n - 1)
                if why:
                    raise chain_broken(run_id, why)
        return {cid: reply for cid, (n, reply) in sorted(found.items(), key=lambda kv: kv[1][0])}

    def facts_of_call(
        self, run_id: str, call_id: str, *, classes: Optional[ClassTable] = None
    ) -> list[tuple[int, Fact]]:
        """(n, fact), in order, of every fact of run `run_id` (hot or archived) that may concern call
        `call_id`: its Call, its Reply, and any Stop that names it (the caller reads which call a Stop
        closed). `classes`: the class table that rebuilds the values (the forking program's)."""
        needle = cbor2.dumps(call_id)  # the id as the fact's CBOR holds it: a cheap pre-filter
        out = []
        h = self.history
        with h.file.lock:
            for table in ("facts", "archived_facts"):
                rows = h.file.db.execute(
                    f"SELECT n, data FROM {table} WHERE run=? AND kind IN (?, ?, ?) AND instr(data, ?) > 0",
                    (run_id, T.CALL, T.REPLY, T.STOP, needle),
                ).fetchall()
                for n, data in rows:
                    out.append((n, h.read_fact(run_id, n, data, classes)))
        return sorted(out, key=lambda e: e[0])
