"""The facts of every run and their chain (`Store.history`): appended, read, checked, archived.

docs/spec/trace.md ("Store", "Integrity") is the description. A run's facts are kept in `facts`
(the hot history: run, n, kind, stored bytes, chain hash) and `archived_facts` (the facts moved
out by `archive`); values too large to keep inline in `blobs` by content hash (`blob_refs`: which
fact refers to which), module texts in `sources` by content hash (`run_sources`: which module key
of a run maps to which text). Facts are appended by the run's recorder (flowrt.history.recorder),
or, for fact 1 and a fork's prelude, by `create_run`; nothing rewrites one but `redact`, which
replaces a value by a hole (the chain covers hashes, not values).

Reading decodes values with the class table of the run's program (`classes=`, from
`Program.classes`): the store holds values by declaration id and constructor name, and two
programs in one process may share a declaration id. Without a table only std's built-in enums
decode (another record or enum raises `MissingClass`). Every read that serves facts checks what
it serves against the chain (flowrt.history.integrity holds the walks and `verify`'s audit).

`run_row`, `rows`, `hash_of`, `blob` and `source_rows` are the reads flowrt.history.integrity
walks over (the caller holds the file's lock).
"""

from __future__ import annotations

import gc
import itertools
import json
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Optional

import blake3

from flowrt.data.facts import Checkpoint, Fact, Reply, Start
from flowrt.data.values import ClassTable
from flowrt.history import integrity as I
from flowrt.history.call_facts import CallFacts
from flowrt.history import trace as T
from flowrt.history.integrity import Archived
from flowrt.history.recorder import SqliteRecorder, _Batch, put_blobs
from flowrt.history.host_records import RunInfo, run_info, run_row
from flowrt.history.store_errors import (
    BrokenHistory,
    CallNotOpen,
    ChangedBlob,
    RunExists,
    StoreError,
    blob_broken,
    chain_broken,
    corrupt_fact,
)


#: How many rows a streaming read fetches a query (`HistoryStore.iter_rows`).
BATCH = 2000


def _keyset(
    db, table: str, run_id: str, from_n: int, to_n: Optional[int], kind, batch: int
) -> Iterator[tuple]:
    """(n, kind, data, hash) of `table`'s rows of the run, in order, one query a batch."""
    sql = f"SELECT n, kind, data, hash FROM {table} WHERE run=? AND n>?"
    extra: tuple = ()
    if to_n is not None:
        sql += " AND n<=?"
        extra += (to_n,)
    if kind is not None:
        sql += " AND kind=?"
        extra += (kind,)
    sql += " ORDER BY n LIMIT ?"

    def batches() -> Iterator[list]:
        last: Any = from_n - 1
        while True:
            got = db.execute(sql, (run_id, last, *extra, batch)).fetchall()
            yield got
            if len(got) < batch:
                return
            last = got[-1][0]

    return itertools.chain.from_iterable(batches())  # rows one by one, batch by batch


def _merged(a: Iterator[tuple], b: Iterator[tuple]) -> Iterator[tuple]:
    """Two row streams ordered by number merged into one (`a`'s row first of two of one number,
    as both are yielded: the readers report such a fact as appearing twice). A number that is
    not an int (a row is anyone's bytes) is yielded as it comes, for the reader to refuse."""
    x, y = next(a, None), next(b, None)
    while x is not None and y is not None:
        if type(y[0]) is int and (type(x[0]) is not int or x[0] <= y[0]):
            yield x
            x = next(a, None)
        else:
            yield y
            y = next(b, None)
    if x is not None:
        yield x
        yield from a
    if y is not None:
        yield y
        yield from b


def _decoded(blob, run_id: str, rows, classes: Optional[ClassTable]) -> list[Fact]:
    """The facts of stored rows, decoded (`HistoryStore.facts` without `verify`)."""
    dec = T.decode_fact
    out: list[Fact] = []
    append = out.append
    n = None
    try:
        for n, _k, data, _h in rows:
            append(dec(data, blob, classes=classes))
    except ChangedBlob as e:
        raise blob_broken(run_id, n, e) from None
    return out


@dataclass(frozen=True, slots=True)
class StoredFact:
    n: int
    kind: str
    fact: Optional[Fact]  # None when read with decode=False
    hash: str  # hex
    prev: Optional[str]  # hex; None when the fact before is archived away and unknown
    data: bytes  # the stored form

    @property
    def values(self) -> tuple[str, ...]:
        """Digests (hex) of the fact's value slots, in slot order: what `redact` takes."""
        return tuple(d.hex() for d in T.slot_digests(self.data))


class HistoryStore:
    """The facts and the chain of every run in one store (`store.history` of a
    `flowrt.history.store.Store`)."""

    def __init__(self, store):
        self.store = store  # record_reply appends through a SqliteRecorder, which takes the Store
        self.file = store.file
        self.calls = CallFacts(self)

    # ---- what integrity walks over ---------------------------------------------------------------

    def run_row(self, run_id: str, check_version: bool = True) -> dict:
        """The run's record, checked (flowrt.history.host_records)."""
        return run_row(self.file, run_id, check_version)

    def read_fact(self, run_id: str, n: int, data, classes: Optional[ClassTable], kind=None) -> Fact:
        """One stored fact decoded; a row that is anyone's bytes and not a fact is refused naming it."""
        try:
            return T.decode_fact(data, self.blob, classes=classes, kind=kind)
        except ChangedBlob as e:
            raise blob_broken(run_id, n, e) from None
        except (T.MissingClass, T.UnsupportedDataVersion):
            raise
        except T.TraceError as e:
            raise corrupt_fact(run_id, n, e) from None

    def blob(self, digest: bytes) -> Optional[bytes]:
        """A blob's bytes, checked against the digest they are kept under (ChangedBlob), or None
        when the store does not hold it (the value reads as a hole)."""
        row = self.file.db.execute("SELECT data FROM blobs WHERE hash=?", (digest,)).fetchone()
        if row is None:
            return None
        data = row[0]
        if type(data) is not bytes or blake3.blake3(data).digest() != digest:
            raise ChangedBlob(digest)
        return data

    def rows(self, run_id: str, from_n: int = 1, kind: Optional[int] = None) -> list:
        """(n, kind, data, hash) of the run's facts from `from_n` on (of one kind), archived and hot, in order."""
        return list(self.iter_rows(run_id, from_n, kind=kind))

    def iter_rows(
        self,
        run_id: str,
        from_n: int = 1,
        to_n: Optional[int] = None,
        *,
        kind: Optional[int] = None,
        batch: int = BATCH,
    ) -> Iterator[tuple]:
        """The rows of `rows` (facts `from_n`..`to_n`), read `batch` at a time: each table by
        keyset pagination (`n > last ORDER BY n LIMIT batch`, portable SQL with `?` parameters)
        and the two merged by number, so a read of any length holds one batch of each table. The
        caller holds a snapshot (`file.snapshot()`) for the reads to see one state."""
        archived = _keyset(self.file.db, "archived_facts", run_id, from_n, to_n, kind, batch)
        hot = _keyset(self.file.db, "facts", run_id, from_n, to_n, kind, batch)
        first = next(archived, None)
        if first is None:  # nothing archived (the common case): the hot rows alone
            return hot
        return _merged(itertools.chain((first,), archived), hot)

    def hash_of(self, run_id: str, n: int, r: dict) -> Optional[bytes]:
        """The stored chain hash of fact `n` (the zero hash before fact 1; the kept hash at the
        archive marker), or None when it is not kept."""
        if n == 0:
            return T.ZERO_HASH
        for table in ("facts", "archived_facts"):
            row = self.file.db.execute(
                f"SELECT hash FROM {table} WHERE run=? AND n=?", (run_id, n)
            ).fetchone()
            if row is not None:
                return row[0]
        return r["archived_hash"] if n == r["archived_through"] else None

    def source_rows(self, run_id: str) -> list:
        """(module, hash, text or None) of the run's module sources, unchecked."""
        return self.file.db.execute(
            "SELECT rs.module, rs.hash, s.text FROM run_sources rs LEFT JOIN sources s ON s.hash = rs.hash "
            "WHERE rs.run=? ORDER BY rs.module",
            (run_id,),
        ).fetchall()

    # ---- a new run -----------------------------------------------------------------------------

    def create_run(
        self,
        run_id: str,
        start: Start,
        sources: dict[str, str],
        meta: Optional[dict] = None,
        then: tuple = (),
        host_rows: Optional[Callable[[Any], None]] = None,
    ) -> RunInfo:
        """Record a new run's Start (fact 1), the facts `then` that follow it (a fork's prelude:
        flowrt.host.forks) and its module sources, durably and in one commit: a crash leaves either
        no run or the run with all of them. `host_rows(db)` writes host records that belong with
        the new run in the same commit (a worker's submission: no worker sees the run without it)."""
        if type(start) is not Start:
            raise StoreError("a run begins with a Start fact")
        enc = T.encode_fact(start)
        head = T.chain(T.ZERO_HASH, enc.chained)
        pending = []
        for n, fact in enumerate(then, 2):
            e = T.encode_fact(fact)
            pending.append((n, e, T.chain(pending[-1][2] if pending else head, e.chained), fact))
        batch = _Batch(run_id, pending, set())
        with self.file.transaction() as db:
            if db.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone():
                raise RunExists(f"run {run_id!r} already exists in {self.file.path}; choose another --run-id")
            for module, text in sources.items():
                h = blake3.blake3(text.encode("utf-8")).digest()
                db.execute("INSERT OR IGNORE INTO sources VALUES (?, ?)", (h, text))
                db.execute("INSERT INTO run_sources VALUES (?, ?, ?)", (run_id, module, h))
            db.execute(
                "INSERT INTO runs (id, created, state, program, std, data_version, entry, parent, "
                "from_checkpoint, n, head, latest_checkpoint, meta) "
                "VALUES (?, ?, coalesce(?, 'halted'), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    time.time(),
                    batch.state,
                    start.program,
                    start.std,
                    start.data_version,
                    start.entry,
                    start.parent,
                    start.from_checkpoint,
                    1 + len(pending),
                    pending[-1][2] if pending else head,
                    batch.latest_cp,
                    json.dumps(meta or {}),
                ),
            )
            db.execute("INSERT INTO facts VALUES (?, 1, ?, ?, ?)", (run_id, enc.kind, enc.data, head))
            put_blobs(db, run_id, 1, enc.blobs)
            batch.write(db)
            if host_rows is not None:
                host_rows(db)
            return run_info(db, self.run_row(run_id))

    def sources(self, run_id: str) -> dict[str, str]:
        """Module key -> source text, as stored when the run started. Each text is checked against
        the content hash it is kept under: a changed or missing one raises BrokenHistory."""
        with self.file.lock:
            self.run_row(run_id)
            rows = self.source_rows(run_id)
        out = {}
        for module, digest, text in rows:
            why = I.source_problem(module, digest, text)
            if why:
                raise BrokenHistory(
                    f"run {run_id!r} fails its integrity check: {why}; refusing to "
                    f"compile it (`flow2py verify {run_id}` checks the run whole)"
                )
            out[module] = text
        return out

    # ---- reading history -----------------------------------------------------------------------

    def records(
        self, run_id: str, from_n: int = 1, *, decode: bool = True, classes: Optional[ClassTable] = None
    ) -> list[StoredFact]:
        """Stored facts from `from_n` on (archived ones included while kept), in order; values
        decoded with `classes`, the class table of the run's program."""
        with self.file.snapshot():
            return list(self.iter_records(run_id, from_n, decode=decode, classes=classes))

    def iter_records(
        self,
        run_id: str,
        from_n: int = 1,
        *,
        decode: bool = True,
        classes: Optional[ClassTable] = None,
        batch: int = BATCH,
    ) -> Iterator[StoredFact]:
        """`records`, one at a time, read `batch` rows a query (`iter_rows`): a history of any
        length in the memory of one batch. Call it inside `file.snapshot()` for one state of
        the store across the batches (as `records` does)."""
        r = self.run_row(run_id)
        prev: Optional[bytes] = None
        last = None
        for n, kind, data, h in self.iter_rows(run_id, from_n, batch=batch):
            if last is None:
                prev = self.hash_of(run_id, n - 1, r) if type(n) is int else None
            elif last != n - 1:
                prev = r["archived_hash"] if n - 1 == r["archived_through"] else None
            fact = self.read_fact(run_id, n, data, classes, kind) if decode else None
            if kind not in T.KIND_NAMES or type(h) is not bytes:  # a row is anyone's bytes
                raise corrupt_fact(run_id, n, f"its row holds kind {kind!r} and hash {h!r:.40}")
            yield StoredFact(n, T.KIND_NAMES[kind], fact, h.hex(), None if prev is None else prev.hex(), data)
            prev, last = h, n

    def facts(
        self,
        run_id: str,
        from_n: int = 1,
        *,
        verify: bool = False,
        whole: bool = False,
        classes: Optional[ClassTable] = None,
        batch: int = BATCH,
    ) -> list[Fact]:
        """The decoded facts from `from_n` on; a redacted or lost value reads as `Hole(hash)`.
        `classes`: the class table of the run's program (`Program.classes`), which rebuilds its
        record and enum values. The rows are read `batch` at a time (`iter_rows`): what is held
        is the decoded facts, not their stored rows as well.

        With `verify`, each fact is checked against the chain as it is decoded (one parse a fact):
        its stored hash must be blake3(hash of the fact before || its skeleton), numbers must run
        on with no gap (archived facts are skipped over through the kept hash, and the fact after
        the archive marker must be a Checkpoint), starting from the stored hash of fact
        `from_n - 1`; fact 1 is checked too (on its own when `from_n > 1`) and must name what the
        run's record names. Any break raises `BrokenHistory` naming the fact (a changed blob:
        naming the fact and the blob). With
        `whole` as well, the facts must also reach the run's stored head (a missing tail is a
        break too: what resume appends to); without it a history cut short at its end reads as
        the facts that are there (replay then reports it Incomplete).
        """
        with self.file.snapshot():
            r = self.run_row(run_id)
            rows = self.iter_rows(run_id, from_n, batch=batch)
            # Decoding builds many small objects that all stay alive: the cyclic collector would
            # only rescan them (measured ~0.5 µs a fact); none of them can form a cycle.
            collecting = gc.isenabled()
            gc.disable()
            try:
                if not verify:
                    return _decoded(self.blob, run_id, rows, classes)
                return self._verified(run_id, r, rows, from_n, whole, classes)
            finally:
                if collecting:
                    gc.enable()

    def _verified(
        self, run_id: str, r: dict, rows, from_n: int, whole: bool, classes: Optional[ClassTable]
    ) -> list[Fact]:
        def broken(why: str) -> BrokenHistory:
            return chain_broken(run_id, why)

        prev = self.hash_of(run_id, from_n - 1, r) if from_n > 1 else T.ZERO_HASH
        if prev is None:
            raise broken(f"the hash of fact {from_n - 1}, before fact {from_n}, is not kept")
        why = I.marker_problem(r) or (self._start_problem(r) if from_n > 1 else None)
        if why:
            raise broken(why)
        expected = from_n
        out: list[Fact] = []
        first_data = None
        append, dec, blob, b3 = out.append, T.decode_chained, self.blob, blake3.blake3
        gap_to = r["archived_through"] + 1 if r["archived_hash"] is not None else None
        # Facts read just after the archive marker: each must be a Checkpoint (checked below).
        after_marker = [0] if from_n == gap_to else []
        for n, kind, data, h in rows:
            if first_data is None:
                first_data = data
            if n != expected:
                if n < expected:
                    raise broken(f"fact {n} appears twice")
                if expected >= 2 and n == gap_to:
                    prev = r["archived_hash"]
                    after_marker.append(len(out))
                else:
                    raise broken(f"fact {expected} is missing")
            try:
                fact, skel = dec(data, blob, classes=classes, kind=kind)
            except ChangedBlob as e:
                raise blob_broken(run_id, n, e) from None
            except (T.MissingClass, T.UnsupportedDataVersion):
                raise
            except T.TraceError as e:
                raise corrupt_fact(run_id, n, e) from None
            prev = b3(prev + skel).digest()
            if prev != h:
                raise broken(
                    f"fact {n} was changed, removed or moved: its content and position do not match its hash"
                )
            append(fact)
            expected = n + 1
        for i in after_marker:
            if i < len(out) and type(out[i]) is not Checkpoint:
                raise broken(I.marker_not_at_checkpoint(r, type(out[i]).__name__))
        if from_n == 1 and first_data is not None:
            try:
                why = I.start_mismatch(r, T._raw(first_data))
            except T.TraceError as e:
                why = f"fact 1 is corrupt: {e}"
            if why:
                raise broken(why)
        if whole and (expected - 1 != r["n"] or prev != r["head"]):
            if expected - 1 < r["n"]:
                raise broken(f"facts {expected}-{r['n']} are missing (the run records {r['n']} facts)")
            raise broken("the run's stored head does not match the chain")
        return out

    def _start_problem(self, r: dict) -> Optional[str]:
        """Fact 1 checked on its own, for a read that begins after it: its hash from the zero hash,
        and the run's record naming what it names. None when it holds."""
        row = self.file.db.execute("SELECT data, hash FROM facts WHERE run=? AND n=1", (r["id"],)).fetchone()
        if row is None:
            return "fact 1 (Start) is missing"
        if type(row[0]) is not bytes:
            return "fact 1 is corrupt: its stored row does not hold bytes"
        try:
            if T.fact_hash(T.ZERO_HASH, row[0]) != row[1]:
                return "fact 1 was changed, removed or moved: its content and position do not match its hash"
            return I.start_mismatch(r, T._raw(row[0]))
        except T.TraceError as e:
            return f"fact 1 is corrupt: {e}"

    def latest_checkpoint(self, run_id: str, *, classes: Optional[ClassTable] = None) -> Optional[StoredFact]:
        """The run's latest Checkpoint (where resume and replay start), or None; its arguments
        decoded with `classes` (the run's program's class table)."""
        with self.file.lock:
            r = self.run_row(run_id)
            if r["latest_checkpoint"] is None:
                return None
            recs = self._one(run_id, r["latest_checkpoint"], classes)
            return recs[0] if recs else None

    def _one(self, run_id: str, n: int, classes: Optional[ClassTable]) -> list[StoredFact]:
        with self.file.snapshot():
            recs = list(itertools.islice(self.iter_records(run_id, n, decode=False, batch=1), 1))
        if not recs:
            return []
        return [replace(recs[0], fact=self.read_fact(run_id, recs[0].n, recs[0].data, classes))]

    def checkpoint(self, run_id: str, number: int, *, classes: Optional[ClassTable] = None) -> StoredFact:
        """The run's `number`th Checkpoint (for `fork --checkpoint N`); its arguments decoded
        with `classes` (the run's program's class table). The chain is checked from it to the
        run's stored head (BrokenHistory naming the fact that breaks it), as resume checks what
        it reads."""
        with self.file.snapshot():
            r = self.run_row(run_id)
            for n, kind, data, h in self.iter_rows(run_id, 1, kind=T.CHECKPOINT):
                try:
                    found = T.checkpoint_number(data)
                except T.TraceError as e:
                    raise corrupt_fact(run_id, n, e) from None
                if found == number:
                    why = I.walk(self, run_id, r, n, r["n"])
                    if why is None and self.hash_of(run_id, r["n"], r) != r["head"]:
                        why = "the run's stored head does not match the chain"
                    if why:
                        raise chain_broken(run_id, why)
                    return self._one(run_id, n, classes)[0]
            raise StoreError(f"run {run_id!r} has no checkpoint {number} (or it was archived away)")

    # ---- integrity -----------------------------------------------------------------------------

    def verify(self, run_id: str, head: Optional[str] = None) -> tuple[bool, str, str]:
        """Check everything the store holds of a run: (ok, message, head hash hex).

        Every fact held, hot or archived, against the chain from the zero hash (across a range
        deleted from the archive, from the kept hash, which must end just before a Checkpoint);
        the run's record against its facts (head, latest checkpoint, what Start names); every
        blob a fact refers to and every module source against its content hash. The message says
        which facts were checked and which were taken on trust (docs/spec/trace.md). Against
        `head` (a hash held elsewhere) it also detects a history rewritten consistently.
        """
        a = self.audit(run_id, head)
        return a.ok, a.message, a.head

    def audit(self, run_id: str, head: Optional[str] = None, *, batch: int = BATCH) -> I.Audit:
        """`verify`'s audit whole (flowrt.history.integrity.Audit): besides the verdict, the
        number of the last fact and the longest call or task id, which the streamed text of
        `history` needs before its first line. The facts are read `batch` rows a query."""
        with self.file.snapshot():
            try:
                return I.audit(self, run_id, head, batch=batch)
            except BrokenHistory as e:  # a corrupt run record or Start (`run_row`): broken
                return I.Audit(False, str(e), "")

    def reading(self):
        """One state of the store across several reads (an audit, then `iter_records`): a
        context manager (`file.snapshot()`); a streamed read holds it until it is done."""
        return self.file.snapshot()

    # ---- host operations on history ------------------------------------------------------------

    def redact(self, run_id: str, value_hash: str) -> int:
        """Replace every stored value of the run whose content hash is `value_hash` by a hole.

        The chain is unchanged (it covers hashes, not values). Returns how many value slots were
        replaced; raises StoreError when the run holds no such value.
        """
        try:
            digest = bytes.fromhex(value_hash.removeprefix("blake3:"))
        except ValueError:
            raise StoreError(f"not a blake3 hash: {value_hash!r}") from None
        total = 0
        with self.file.lock:
            self.run_row(run_id)
            self.file.db.execute("PRAGMA secure_delete=ON")
            try:
                with self.file.transaction() as db:
                    for table in ("facts", "archived_facts"):
                        for n, data in db.execute(
                            f"SELECT n, data FROM {table} WHERE run=?", (run_id,)
                        ).fetchall():
                            new, count = T.redact_slots(data, digest)
                            if count:
                                db.execute(f"UPDATE {table} SET data=? WHERE run=? AND n=?", (new, run_id, n))
                                db.execute(
                                    "INSERT OR IGNORE INTO holes VALUES (?, ?, ?, ?)",
                                    (run_id, n, digest, time.time()),
                                )
                                total += count
                    if not total:
                        raise StoreError(f"run {run_id!r} holds no value with hash {digest.hex()}")
                    db.execute("DELETE FROM blob_refs WHERE hash=? AND run=?", (digest, run_id))
                    if not db.execute("SELECT 1 FROM blob_refs WHERE hash=?", (digest,)).fetchone():
                        db.execute("DELETE FROM blobs WHERE hash=?", (digest,))
                # Old page images would otherwise linger in the WAL until the next checkpoint.
                self.file.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self.file.db.execute("PRAGMA secure_delete=OFF")
        return total

    def archive(self, run_id: str, *, delete: bool = False) -> Archived:
        """Move facts 2 .. C-1 out of the hot table, C being the latest Checkpoint fact that
        nothing a resume from the latest checkpoint reads lies before: the latest checkpoint
        itself, or an earlier one when it carries a reply recorded before it (seed 000: a parked
        task finished from its call). They go to `archived_facts`, or are deleted with
        `delete=True` (retention is the host's); the chain hash of fact C-1 is kept, so the rest
        still verifies, and resume and replay never need an archived fact. The whole history is
        verified first: a broken one is refused (BrokenHistory) and nothing moves.
        """
        with self.file.lock:
            with self.file.snapshot():
                a = I.audit(self, run_id)
                if not a.ok:
                    raise BrokenHistory(
                        f"run {run_id!r} fails its integrity check: {a.message}; refusing "
                        f"to archive it (that would remove facts of a history that does not verify)"
                    )
                cp, latest, held = I.archive_limit(self, run_id, a)
            r = a.run
            old = r["archived_through"]
            through = (cp - 1) if cp is not None and cp > 2 else 0
            if not delete and through <= old:
                return Archived(0, False, old, cp, latest, held)
            with self.file.transaction() as db:
                # Facts are only appended, so the audit holds for them; another archive may not have run.
                if db.execute("SELECT archived_through FROM runs WHERE id=?", (run_id,)).fetchone()[0] != old:
                    raise StoreError(
                        f"run {run_id!r} was archived by another process meanwhile; nothing "
                        f"changed here: run archive again"
                    )
                if through < 2:
                    return Archived(0, delete, old, cp, latest, held)
                kept = self.hash_of(run_id, through, r)
                if delete:
                    moved = sum(
                        db.execute(
                            f"DELETE FROM {t} WHERE run=? AND n>1 AND n<=?", (run_id, through)
                        ).rowcount
                        for t in ("archived_facts", "facts")
                    )
                    db.execute("DELETE FROM blob_refs WHERE run=? AND n>1 AND n<=?", (run_id, through))
                    db.execute("DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM blob_refs)")
                    if not moved:
                        return Archived(0, True, old, cp, latest, held)
                else:
                    db.execute(
                        "INSERT INTO archived_facts SELECT * FROM facts WHERE run=? AND n>1 AND n<=?",
                        (run_id, through),
                    )
                    moved = db.execute(
                        "DELETE FROM facts WHERE run=? AND n>1 AND n<=?", (run_id, through)
                    ).rowcount
                # A deletion may lower the marker an older archive left past a reply still needed:
                # the facts after it stay in the archive table, and verify checks them from it.
                db.execute(
                    "UPDATE runs SET archived_through=?, archived_hash=? WHERE id=?", (through, kept, run_id)
                )
            return Archived(moved, delete, through, cp, latest, held)

    def record_reply(self, run_id: str, call_id: str, reply: Any) -> StoredFact:
        """Append the Reply the host delivers to an open call (`resume --reply`), durably. This is
        the host's own hand, not admission: a host token in `reply` is recorded as issued
        (flowrt.host admits a delivered reply, refusing unissued tokens, before it records it)."""
        open_calls = self.store.host_records.open_calls
        with SqliteRecorder(self.store, run_id) as rec:
            if call_id not in {c for c, _ in open_calls(run_id)}:
                open_ = ", ".join(c for c, _ in open_calls(run_id)) or "none"
                raise CallNotOpen(f"call {call_id} is not open in run {run_id!r} (open calls: {open_})")
            rec.record(Reply(call_id, reply))
            rec.sync(durable=True)
            n = rec.n
        return replace(self.records(run_id, n, decode=False)[0], fact=Reply(call_id, reply))
