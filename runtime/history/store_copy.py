"""`flow2py store copy SRC DST`: runs copied from one store to another, either backend to either,
byte for byte (docs/spec/trace.md "Copying runs between stores").

What a run is made of, and so what is copied: its `runs` row (its owner cleared: a copied run is
not running anywhere; a worker or `resume` on DST recovers it as a run whose process ended), its
facts hot and archived (the stored bytes and chain hashes as they are), `blob_refs` and the
`blobs` they name, `holes`, `run_sources` and the `sources` they name, and the host's records
that belong to it: `bindings`, `open_calls`, `parked_calls`, `call_times`, `run_pauses`,
`nested_runs` (as the outer run), `host_tokens` issued for it, and the worker's `worker_submissions`,
`worker_replies` (delivered, not yet admitted), `worker_timers`, `worker_cancels` and
`worker_attempts`. Not copied: `worker_leases` (an owner is a process of SRC's), `store_meta`,
host tokens that name no run.

Each run is read in one snapshot of SRC, audited there first (a broken run is not copied), and
written in one transaction on DST, table by table, `BATCH` rows a query (keyset pagination over
each table's primary key, as `history` reads: constant memory whatever the run's length). A run
id DST already holds is refused for that run, nothing of it written; the others go on. After the
commit DST's copy is audited and its head compared with SRC's.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from flowrt.history.history_store import BATCH
from flowrt.history.pg import _tables
from flowrt.history.schema import SCHEMA

#: (table, the column naming the run), in the order they are written.
RUN_TABLES = (
    ("facts", "run"),
    ("archived_facts", "run"),
    ("blob_refs", "run"),
    ("holes", "run"),
    ("run_sources", "run"),
    ("bindings", "run"),
    ("open_calls", "run"),
    ("parked_calls", "run"),
    ("call_times", "run"),
    ("run_pauses", "run"),
    ("nested_runs", "outer_run"),
    ("host_tokens", "run"),
    ("worker_submissions", "run"),
    ("worker_replies", "run"),
    ("worker_timers", "run"),
    ("worker_cancels", "run"),
    ("worker_attempts", "run"),
)
#: Tables that belong to a run and are deliberately not copied.
NOT_COPIED = ("worker_leases",)


@dataclass
class Copied:
    """One run's outcome: `ok` (copied and its copy intact with SRC's head), or why not."""

    run_id: str
    ok: bool
    line: str
    facts: int = 0
    broken: bool = False  # SRC's run broken, or DST's copy failed its audit


def _stream(db, table: str, run_col: str, run_id: str, batch: int) -> Iterator[list]:
    """The run's rows of `table` (every column), `batch` a query, by keyset over the primary key."""
    cols, pk = _tables(SCHEMA)[table]
    keys = [c for c in pk if c != run_col]
    select = f"SELECT {', '.join(cols)} FROM {table} WHERE {run_col}=?"
    if not keys:
        yield db.execute(select, (run_id,)).fetchall()
        return
    idx = [cols.index(k) for k in keys]
    order = ", ".join(keys)
    first = f"{select} ORDER BY {order} LIMIT ?"
    nxt = f"{select} AND ({order}) > ({', '.join('?' * len(keys))}) ORDER BY {order} LIMIT ?"
    got = db.execute(first, (run_id, batch)).fetchall()
    while got:
        yield got
        if len(got) < batch:
            return
        last = tuple(got[-1][i] for i in idx)
        got = db.execute(nxt, (run_id, *last, batch)).fetchall()


def _insert(table: str, ignore: bool = False) -> str:
    cols, _pk = _tables(SCHEMA)[table]
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    return f"{verb} INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"


def _by_hash(db, table: str, col: str, hashes: list) -> list:
    """(hash, col) of `table`'s rows with these hashes (a batch's worth)."""
    if not hashes:
        return []
    marks = ", ".join("?" * len(hashes))
    return db.execute(f"SELECT hash, {col} FROM {table} WHERE hash IN ({marks})", hashes).fetchall()


def run_ids(store) -> list[str]:
    """Every run of the store, oldest first."""
    with store.file.lock:
        return [r[0] for r in store.file.db.execute("SELECT id FROM runs ORDER BY created, id").fetchall()]


def copy_run(src, dst, run_id: str, *, batch: int = BATCH) -> Copied:
    """Copy one run from Store `src` to Store `dst` (see the module's docstring)."""
    sdb = src.file.db
    with src.file.snapshot():
        cols = _tables(SCHEMA)["runs"][0]
        row = sdb.execute(f"SELECT {', '.join(cols)} FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            return Copied(run_id, False, f"run {run_id}: no such run in SRC")
        a = src.history.audit(run_id, batch=batch)
        if not a.ok:
            return Copied(run_id, False, f"run {run_id}: broken in SRC, not copied: {a.message}", broken=True)
        row = list(row)
        row[cols.index("owner")] = None  # a copied run is not running anywhere
        facts = 0
        try:
            with dst.file.transaction() as ddb:
                if ddb.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone() is not None:
                    return Copied(
                        run_id,
                        False,
                        f"run {run_id}: DST already holds a run of this id; nothing of it written",
                    )
                ddb.execute(_insert("runs"), row)
                for table, run_col in RUN_TABLES:
                    sql = _insert(table)
                    for rows in _stream(sdb, table, run_col, run_id, batch):
                        if table in ("facts", "archived_facts"):
                            facts += len(rows)
                        elif table == "blob_refs":
                            hashes = sorted({r[0] for r in rows})
                            ddb.executemany(_insert("blobs", True), _by_hash(sdb, "blobs", "data", hashes))
                        elif table == "run_sources":
                            hashes = sorted({r[2] for r in rows})
                            ddb.executemany(
                                _insert("sources", True), _by_hash(sdb, "sources", "text", hashes)
                            )
                        ddb.executemany(sql, rows)
        except sqlite3.IntegrityError as e:  # a host token of the same key in DST, ...
            return Copied(run_id, False, f"run {run_id}: DST refused it ({e}); nothing of it written")
    b = dst.history.audit(run_id, batch=batch)
    if not b.ok or b.head != a.head:
        why = b.message if not b.ok else f"head {b.head} differs from SRC's {a.head}"
        return Copied(
            run_id, False, f"run {run_id}: copied, but the copy does not verify: {why}", facts, True
        )
    return Copied(
        run_id,
        True,
        f"run {run_id}: copied {facts} facts, head blake3:{a.head}, verify intact on both sides",
        facts,
    )


def copy_runs(
    src,
    dst,
    names: Optional[list[str]] = None,
    *,
    batch: int = BATCH,
    report: Callable[[Copied], None] = print,
) -> list[Copied]:
    """Copy the runs named (every run of `src` without names), one by one; `report` hears each."""
    out = []
    for run_id in names if names else run_ids(src):
        c = copy_run(src, dst, run_id, batch=batch)
        report(c)
        out.append(c)
    return out
