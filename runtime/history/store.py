"""The embedded store: every run's history, module sources and host records in one SQLite file.

docs/spec/trace.md ("Store") is the description; the short version:

* One file (default `.flow/runs.db` under the current directory), WAL mode.
* `facts` holds the hot history (run, n, kind, stored bytes, chain hash); `archived_facts` the
  facts moved out by `archive`; `blobs` large values by content hash; `sources` module texts by
  content hash, `run_sources` which module key of a run maps to which text.
* Host records beside history: `bindings` (which implementation served which Tool in a run),
  `open_calls` (calls with no reply yet, kept up to date as facts are appended), `parked_calls`
  (open calls whose implementation answered `pending`: left open on purpose, not cut by a crash;
  "pending calls" in code, where "parked" means only a task a checkpoint carries on its only call)
  and `nested_runs` (outer run + call id -> the inner run a Tool started); `host_tokens` (every
  host token the host issued, by @tool type identity and token, with the run and call whose
  Reply issued it: flowrt.history.tokens). A store made before a table existed gets it when a writer opens
  it; a reader (`Store(readonly=True)`, or a file SQLite cannot write) writes nothing and sees the
  table empty.
* Reading decodes values with the class table of the run's program (`classes=`, from
  `Program.classes`): the store holds values by declaration id and constructor name, and two
  programs in one process may share a declaration id. Without a table only std's built-in enums
  decode (another record or enum raises `MissingClass`).
* A run is written by one process at a time: `SqliteRecorder` takes a lease (`runs.owner`) and
  checks on every commit that the lease and the chain head are still its own.

Durability (the claim trace.md makes): `sync()` commits, fsynced, when the buffer holds a Call or
an End, so that fact and every fact before it survive power loss before the call is sent or the
end reported. Reply/Choice/Stop/Checkpoint facts alone wait in the buffer: the next Call's (or
End's) commit carries them, and `close()` (pause, halt) and `parked()` commit them. A crash loses
only facts whose consequences never left the process. One commit and one fsync per dispatch.
"""
from __future__ import annotations

import gc
import json
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import blake3
import cbor2

from flowrt.history import integrity as I
from flowrt.history import trace as T
from flowrt.data.facts import Call, Checkpoint, End, Fact, Completed, Reply, Start, Stop
from flowrt.history.integrity import Archived
from flowrt.history.tokens import may_hold_token, tokens_in
from flowrt.data.values import ClassTable

__all__ = [
    "DEFAULT_STORE", "Store", "SqliteRecorder", "RunInfo", "StoredFact",
    "StoreError", "UnknownRun", "RunExists", "RunBusy", "HistoryConflict", "CallNotOpen", "BrokenHistory",
    "ChangedBlob", "Archived",
]

DEFAULT_STORE = Path(".flow") / "runs.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    state TEXT NOT NULL,               -- running | paused | halted | completed | faulted
    program TEXT NOT NULL,             -- program identity (blake3 hex)
    std TEXT NOT NULL,
    data_version INTEGER NOT NULL,
    entry TEXT NOT NULL,
    parent TEXT,
    from_checkpoint INTEGER,
    n INTEGER NOT NULL,                -- number of the last fact
    head BLOB NOT NULL,                -- chain hash of fact n
    latest_checkpoint INTEGER,         -- fact number of the latest Checkpoint
    archived_through INTEGER NOT NULL DEFAULT 0,  -- facts 2..archived_through left the hot table
    archived_hash BLOB,                -- chain hash of fact archived_through
    owner TEXT,                        -- lease: "host:pid:token" of the writing process
    meta TEXT NOT NULL DEFAULT '{}'    -- the host's JSON
);
CREATE TABLE IF NOT EXISTS facts (
    run TEXT NOT NULL, n INTEGER NOT NULL, kind INTEGER NOT NULL, data BLOB NOT NULL,
    hash BLOB NOT NULL, PRIMARY KEY (run, n)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS archived_facts (
    run TEXT NOT NULL, n INTEGER NOT NULL, kind INTEGER NOT NULL, data BLOB NOT NULL,
    hash BLOB NOT NULL, PRIMARY KEY (run, n)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (hash BLOB PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS blob_refs (
    hash BLOB NOT NULL, run TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (hash, run, n)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS holes (
    run TEXT NOT NULL, n INTEGER NOT NULL, hash BLOB NOT NULL, redacted REAL NOT NULL,
    PRIMARY KEY (run, n, hash)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sources (hash BLOB PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS run_sources (
    run TEXT NOT NULL, module TEXT NOT NULL, hash BLOB NOT NULL,
    PRIMARY KEY (run, module)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bindings (
    run TEXT NOT NULL, tool_id TEXT NOT NULL, implementation TEXT NOT NULL, bound REAL NOT NULL,
    PRIMARY KEY (run, tool_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS open_calls (
    run TEXT NOT NULL, call TEXT NOT NULL, tool_id TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (run, call)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS parked_calls (
    run TEXT NOT NULL, call TEXT NOT NULL, parked REAL NOT NULL,
    PRIMARY KEY (run, call)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS nested_runs (
    outer_run TEXT NOT NULL, call TEXT NOT NULL, inner_run TEXT NOT NULL,
    PRIMARY KEY (outer_run, call)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS host_tokens (
    type_id TEXT NOT NULL, token TEXT NOT NULL, run TEXT, call TEXT, issued REAL NOT NULL,
    PRIMARY KEY (type_id, token)) WITHOUT ROWID;
"""

_TABLES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA))


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


def _owner_token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _owner_alive(owner: str) -> bool:
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


def _describe_owner(owner: str) -> str:
    host, _, rest = owner.partition(":")
    return f"process {rest.partition(':')[0]} on {host}"


class Store:
    """One store file. Thread-safe (one connection behind a lock); open one per process."""

    def __init__(self, path: os.PathLike | str | None = None, *, durable: bool = True, readonly: bool = False):
        """Open the store at `path`. `readonly`: a reader's open (SQLite `mode=ro`): it never writes,
        so a store file the user can only read opens too. A store made before a table existed gets
        the table from its first writer; a reader (or an open of a file SQLite cannot write) sees
        it as empty: no host tokens issued, no nested runs, ..."""
        self.path = Path(path) if path is not None else Path.cwd() / DEFAULT_STORE
        self.durable = durable
        self.readonly = readonly
        self._lock = threading.RLock()
        if readonly:
            self._db = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True,
                                       isolation_level=None, check_same_thread=False, timeout=30)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._sync_mode = None
        # A store that already has its schema is opened without taking the write lock, so reading
        # (runs, history, replay, verify) is never held up by another process's write transaction.
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if _TABLES <= tables or (readonly and "store_meta" in tables):
            mode = self._db.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() != "wal" and not readonly:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._set_sync(True)
            row = self._db.execute("SELECT value FROM store_meta WHERE key='data_version'").fetchone()
            if row is not None:
                if row[0] != str(T.DATA_VERSION):
                    raise T.UnsupportedDataVersion(row[0], where=f"the store {self.path}")
                if not _TABLES <= tables:
                    self._stand_in(_TABLES - tables)
                return
        if readonly:
            raise StoreError(f"{self.path} is not a Flow store (it records no data version); nothing was read")
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._set_sync(True)
            with self.transaction():
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self._db.execute(stmt)
                row = self._db.execute("SELECT value FROM store_meta WHERE key='data_version'").fetchone()
                if row is None:
                    self._db.execute("INSERT INTO store_meta VALUES ('data_version', ?)", (str(T.DATA_VERSION),))
                elif row[0] != str(T.DATA_VERSION):
                    raise T.UnsupportedDataVersion(row[0], where=f"the store {self.path}")
        except sqlite3.OperationalError as e:
            # An older store in a file this process cannot write (chmod, a read-only mount): it
            # is read as it is. Writing to it is refused when it is tried, as for any such file.
            if "readonly" not in str(e).lower() or "store_meta" not in tables:
                raise
            self.readonly = True
            self._stand_in(_TABLES - tables)

    def _stand_in(self, missing) -> None:
        """Empty TEMP tables of the same shape for the tables an older store lacks, for this
        connection only (they shadow nothing: the store has no such table): readers read them
        as every other table. The store is read-only here, so `transaction` refuses every write
        before one could reach them."""
        for stmt in _SCHEMA.split(";"):
            m = re.search(r"CREATE TABLE IF NOT EXISTS (\w+)", stmt)
            if m and m.group(1) in missing:
                self._db.execute(stmt.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))

    # ---- plumbing ------------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _set_sync(self, durable: bool) -> None:
        mode = "FULL" if (durable and self.durable) else "NORMAL"
        if mode != self._sync_mode:
            self._db.execute(f"PRAGMA synchronous={mode}")
            self._sync_mode = mode

    @contextmanager
    def transaction(self, durable: bool = True):
        """BEGIN IMMEDIATE ... COMMIT (fsynced when `durable`), rolled back on any error. Every
        write goes through here; a store opened read-only refuses them all."""
        if self.readonly:
            raise StoreError(f"the store {self.path} is read-only here (opened for reading); nothing was changed")
        with self._lock:
            self._set_sync(durable)
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            try:
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _snapshot(self):
        """Reads that see one state of the store (a deferred transaction: in WAL mode a snapshot,
        which holds up no writer), so a fact appended meanwhile cannot read as a break."""
        with self._lock:
            if self._db.in_transaction:
                yield
                return
            self._db.execute("BEGIN")
            try:
                yield
            finally:
                self._db.execute("COMMIT")

    def _run_row(self, run_id: str, check_version: bool = True) -> dict:
        cur = self._db.execute("SELECT * FROM runs WHERE id=?", (run_id,))
        row = cur.fetchone()
        if row is None:
            known = [r[0] for r in self._db.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
            hint = f" (recent runs: {', '.join(map(str, known))})" if known else " (the store has no runs)"
            raise UnknownRun(f"unknown run {run_id!r} in {self.path}{hint}")
        r = dict(zip([d[0] for d in cur.description], row))
        if type(r["data_version"]) is not int:
            raise BrokenHistory(f"run {run_id!r}: its run record is corrupt (data_version holds "
                                f"{type(r['data_version']).__name__}); refusing to use it")
        if r["data_version"] == T.DATA_VERSION:
            _check_run_row(r)
        if not check_version:
            return r
        if r["data_version"] != T.DATA_VERSION:
            raise T.UnsupportedDataVersion(r["data_version"], where=f"run {run_id!r}")
        start = self._db.execute("SELECT data FROM facts WHERE run=? AND n=1", (run_id,)).fetchone()
        if start is not None:
            try:
                version = T.start_data_version(start[0])
            except T.TraceError as e:
                raise BrokenHistory(f"run {run_id!r}: fact 1 is corrupt: {e}; refusing to use its history") from None
            if version != T.DATA_VERSION:
                raise T.UnsupportedDataVersion(version, where=f"run {run_id!r}")
        return r

    def _info(self, r: dict) -> RunInfo:
        calls = tuple(self._db.execute(
            "SELECT call, tool_id FROM open_calls WHERE run=? ORDER BY n", (r["id"],)).fetchall())
        if any(type(c) is not str or type(t) is not str for c, t in calls):  # a host record is anyone's too
            raise BrokenHistory(f"run {r['id']!r}: its record of open calls is corrupt (a call or Tool "
                                f"id that is not text); refusing to use it")
        state = r["state"]
        if r["data_version"] != T.DATA_VERSION:
            state = f"unreadable (data version {r['data_version']})"
        elif state == "running" and (r["owner"] is None or not _owner_alive(r["owner"])):
            state = "halted"  # the process ended without releasing the run (a crash)
        return RunInfo(
            r["id"], r["created"], state, r["program"], r["std"], r["data_version"], r["entry"],
            r["parent"], r["from_checkpoint"], r["n"], r["head"].hex(), r["latest_checkpoint"],
            r["archived_through"], calls, r["owner"], json.loads(r["meta"]),
        )

    def _blob(self, digest: bytes) -> Optional[bytes]:
        """A blob's bytes, checked against the digest they are kept under (ChangedBlob), or None
        when the store does not hold it (the value reads as a hole)."""
        row = self._db.execute("SELECT data FROM blobs WHERE hash=?", (digest,)).fetchone()
        if row is None:
            return None
        data = row[0]
        if type(data) is not bytes or blake3.blake3(data).digest() != digest:
            raise ChangedBlob(digest)
        return data

    def _rows(self, run_id: str, from_n: int = 1, kind: Optional[int] = None):
        sql = ("SELECT n, kind, data, hash FROM archived_facts WHERE run=? AND n>=?{k} UNION ALL "
               "SELECT n, kind, data, hash FROM facts WHERE run=? AND n>=?{k} ORDER BY n")
        if kind is None:
            return self._db.execute(sql.format(k=""), (run_id, from_n, run_id, from_n)).fetchall()
        return self._db.execute(sql.format(k=" AND kind=?"), (run_id, from_n, kind, run_id, from_n, kind)).fetchall()

    def _hash_of(self, run_id: str, n: int, r: dict) -> Optional[bytes]:
        if n == 0:
            return T.ZERO_HASH
        for table in ("facts", "archived_facts"):
            row = self._db.execute(f"SELECT hash FROM {table} WHERE run=? AND n=?", (run_id, n)).fetchone()
            if row is not None:
                return row[0]
        return r["archived_hash"] if n == r["archived_through"] else None

    # ---- runs ----------------------------------------------------------------------------------

    def create_run(self, run_id: str, start: Start, sources: dict[str, str], meta: Optional[dict] = None,
                   then: tuple = ()) -> RunInfo:
        """Record a new run's Start (fact 1), the facts `then` that follow it (a fork's prelude:
        flowrt.host.forks) and its module sources, durably and in one commit: a crash leaves either
        no run or the run with all of them."""
        if type(start) is not Start:
            raise StoreError("a run begins with a Start fact")
        enc = T.encode_fact(start)
        head = T.chain(T.ZERO_HASH, enc.chained)
        pending = []
        for n, fact in enumerate(then, 2):
            e = T.encode_fact(fact)
            pending.append((n, e, T.chain(pending[-1][2] if pending else head, e.chained), fact))
        batch = _Batch(run_id, pending, set())
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone():
                raise RunExists(f"run {run_id!r} already exists in {self.path}; choose another --run-id")
            for module, text in sources.items():
                h = blake3.blake3(text.encode("utf-8")).digest()
                db.execute("INSERT OR IGNORE INTO sources VALUES (?, ?)", (h, text))
                db.execute("INSERT INTO run_sources VALUES (?, ?, ?)", (run_id, module, h))
            db.execute(
                "INSERT INTO runs (id, created, state, program, std, data_version, entry, parent, "
                "from_checkpoint, n, head, latest_checkpoint, meta) "
                "VALUES (?, ?, coalesce(?, 'halted'), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, time.time(), batch.state, start.program, start.std, start.data_version, start.entry,
                 start.parent, start.from_checkpoint, 1 + len(pending), pending[-1][2] if pending else head,
                 batch.latest_cp, json.dumps(meta or {})),
            )
            db.execute("INSERT INTO facts VALUES (?, 1, ?, ?, ?)", (run_id, enc.kind, enc.data, head))
            _put_blobs(db, run_id, 1, enc.blobs)
            batch.write(db)
            return self._info(self._run_row(run_id))

    def load_run(self, run_id: str) -> RunInfo:
        with self._lock:
            return self._info(self._run_row(run_id))

    def runs(self) -> list[RunInfo]:
        """Every run, oldest first, with its state (see RunInfo.state and trace.md)."""
        with self._lock:
            ids = [r[0] for r in self._db.execute("SELECT id FROM runs ORDER BY created, id")]
            # Listing does not read any history, so a run of another data version is listed
            # (as unreadable) rather than refusing the whole listing, and so is a run whose record
            # is corrupt (as corrupt: every other read of it is refused).
            out = []
            for i in ids:
                try:
                    out.append(self._info(self._run_row(i, check_version=False)))
                except BrokenHistory:
                    out.append(RunInfo(str(i), 0.0, "corrupt (its run record)", "", "", T.DATA_VERSION, "",
                                       None, None, 0, "", None, 0, (), None))
            return out

    def sources(self, run_id: str) -> dict[str, str]:
        """Module key -> source text, as stored when the run started. Each text is checked against
        the content hash it is kept under: a changed or missing one raises BrokenHistory."""
        with self._lock:
            self._run_row(run_id)
            rows = self._source_rows(run_id)
        out = {}
        for module, digest, text in rows:
            why = I.source_problem(module, digest, text)
            if why:
                raise BrokenHistory(f"run {run_id!r} fails its integrity check: {why}; refusing to "
                                    f"compile it (`flow2py verify {run_id}` checks the run whole)")
            out[module] = text
        return out

    def _source_rows(self, run_id: str) -> list:
        return self._db.execute(
            "SELECT rs.module, rs.hash, s.text FROM run_sources rs LEFT JOIN sources s ON s.hash = rs.hash "
            "WHERE rs.run=? ORDER BY rs.module", (run_id,)).fetchall()

    # ---- reading history -----------------------------------------------------------------------

    def records(self, run_id: str, from_n: int = 1, *, decode: bool = True,
                classes: Optional[ClassTable] = None) -> list[StoredFact]:
        """Stored facts from `from_n` on (archived ones included while kept), in order; values
        decoded with `classes`, the class table of the run's program."""
        with self._lock:
            r = self._run_row(run_id)
            rows = self._rows(run_id, from_n)
            prev = self._hash_of(run_id, rows[0][0] - 1, r) if rows else None
            out = []
            for n, kind, data, h in rows:
                if out and out[-1].n != n - 1:
                    prev = r["archived_hash"] if n - 1 == r["archived_through"] else None
                fact = _read_fact(self, run_id, n, data, classes, kind) if decode else None
                if kind not in T.KIND_NAMES or type(h) is not bytes:  # a row is anyone's bytes
                    raise _corrupt(run_id, n, f"its row holds kind {kind!r} and hash {h!r:.40}")
                out.append(StoredFact(n, T.KIND_NAMES[kind], fact, h.hex(), None if prev is None else prev.hex(), data))
                prev = h
            return out

    def facts(self, run_id: str, from_n: int = 1, *, verify: bool = False,
              whole: bool = False, classes: Optional[ClassTable] = None) -> list[Fact]:
        """The decoded facts from `from_n` on; a redacted or lost value reads as `Hole(hash)`.
        `classes`: the class table of the run's program (`Program.classes`), which rebuilds its
        record and enum values.

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
        with self._snapshot():
            r = self._run_row(run_id)
            rows = self._rows(run_id, from_n)
            # Decoding builds many small objects that all stay alive: the cyclic collector would
            # only rescan them (measured ~0.5 µs a fact); none of them can form a cycle.
            collecting = gc.isenabled()
            gc.disable()
            try:
                if not verify:
                    dec, blob = T.decode_fact, self._blob
                    try:
                        return [dec(data, blob, classes=classes) for _n, _k, data, _h in rows]
                    except ChangedBlob as e:
                        n = next(n for n, _k, data, _h in rows if e.digest in data)
                        raise _blob_broken(run_id, n, e) from None
                return self._verified(run_id, r, rows, from_n, whole, classes)
            finally:
                if collecting:
                    gc.enable()

    def _verified(self, run_id: str, r: dict, rows, from_n: int, whole: bool,
                  classes: Optional[ClassTable]) -> list[Fact]:
        def broken(why: str) -> BrokenHistory:
            return _chain_broken(run_id, why)

        prev = self._hash_of(run_id, from_n - 1, r) if from_n > 1 else T.ZERO_HASH
        if prev is None:
            raise broken(f"the hash of fact {from_n - 1}, before fact {from_n}, is not kept")
        why = I.marker_problem(r) or (self._start_problem(r) if from_n > 1 else None)
        if why:
            raise broken(why)
        expected = from_n
        out = []
        append, dec, blob, b3 = out.append, T.decode_chained, self._blob, blake3.blake3
        gap_to = r["archived_through"] + 1 if r["archived_hash"] is not None else None
        # Facts read just after the archive marker: each must be a Checkpoint (checked below).
        after_marker = [0] if from_n == gap_to else []
        for n, kind, data, h in rows:
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
                raise _blob_broken(run_id, n, e) from None
            except (T.MissingClass, T.UnsupportedDataVersion):
                raise
            except T.TraceError as e:
                raise _corrupt(run_id, n, e) from None
            prev = b3(prev + skel).digest()
            if prev != h:
                raise broken(f"fact {n} was changed, removed or moved: its content and position do "
                             f"not match its hash")
            append(fact)
            expected = n + 1
        for i in after_marker:
            if i < len(out) and type(out[i]) is not Checkpoint:
                raise broken(I.marker_not_at_checkpoint(r, type(out[i]).__name__))
        if from_n == 1 and rows:
            try:
                why = I.start_mismatch(r, T._raw(rows[0][2]))
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
        row = self._db.execute("SELECT data, hash FROM facts WHERE run=? AND n=1", (r["id"],)).fetchone()
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
        with self._lock:
            r = self._run_row(run_id)
            if r["latest_checkpoint"] is None:
                return None
            recs = self._one(run_id, r["latest_checkpoint"], classes)
            return recs[0] if recs else None

    def _one(self, run_id: str, n: int, classes: Optional[ClassTable]) -> list[StoredFact]:
        recs = self.records(run_id, n, decode=False)[:1]
        if not recs:
            return []
        return [replace(recs[0], fact=_read_fact(self, run_id, recs[0].n, recs[0].data, classes))]

    def checkpoint(self, run_id: str, number: int, *, classes: Optional[ClassTable] = None) -> StoredFact:
        """The run's `number`th Checkpoint (for `fork --checkpoint N`); its arguments decoded
        with `classes` (the run's program's class table). The chain is checked from it to the
        run's stored head (BrokenHistory naming the fact that breaks it), as resume checks what
        it reads."""
        with self._lock:
            r = self._run_row(run_id)
            for n, kind, data, h in self._rows(run_id, 1, T.CHECKPOINT):
                try:
                    found = T.checkpoint_number(data)
                except T.TraceError as e:
                    raise _corrupt(run_id, n, e) from None
                if found == number:
                    why = I.walk(self, run_id, r, n, r["n"])
                    if why is None and self._hash_of(run_id, r["n"], r) != r["head"]:
                        why = "the run's stored head does not match the chain"
                    if why:
                        raise _chain_broken(run_id, why)
                    return self._one(run_id, n, classes)[0]
            raise StoreError(f"run {run_id!r} has no checkpoint {number} (or it was archived away)")

    def call_tools(self, run_id: str, call_ids, before_n: int) -> dict[str, str]:
        """{call id: tool id} of the Calls to `call_ids` recorded before fact `before_n` (archived
        or hot; one deleted by `archive(delete=True)` is not found). Read without their values."""
        out: dict[str, str] = {}
        with self._lock:
            for cid in sorted(set(call_ids)):
                needle = cbor2.dumps(cid)  # the id as the fact's CBOR holds it: a cheap pre-filter
                for table in ("facts", "archived_facts"):
                    for n, data in self._db.execute(
                            f"SELECT n, data FROM {table} WHERE run=? AND n<? AND kind=? AND instr(data, ?) > 0",
                            (run_id, before_n, T.CALL, needle)).fetchall():
                        try:
                            item = T.parse_fact(data, T.CALL)
                        except T.TraceError as e:
                            raise _corrupt(run_id, n, e) from None
                        if item[1] == cid:
                            out[cid] = item[3]
        return out

    def open_calls(self, run_id: str) -> list[tuple[str, str]]:
        return list(self.load_run(run_id).open_calls)

    def open_call_facts(self, run_id: str, call_ids, *, classes: Optional[ClassTable] = None,
                        before_n: Optional[int] = None) -> dict:
        """{call id: Call fact} of those of `call_ids` that are open, hot or archived, read by the
        fact number the open_calls record keeps (one lookup each). For showing an open call (its
        Tool and arguments) whose Call precedes the checkpoint a resume starts at; nothing is
        served to the program from it. With `before_n` (that checkpoint's fact number) the chain is
        checked from the earliest Call found to fact `before_n - 1`, as for carried replies."""
        wanted = set(call_ids)
        out: dict = {}
        first = None
        with self._lock:
            for call_id, n in self._db.execute(
                    "SELECT call, n FROM open_calls WHERE run=? ORDER BY n", (run_id,)).fetchall():
                if call_id not in wanted:
                    continue
                for table in ("facts", "archived_facts"):
                    row = self._db.execute(f"SELECT data FROM {table} WHERE run=? AND n=? AND kind=?",
                                           (run_id, n, T.CALL)).fetchone()
                    if row is not None:
                        fact = _read_fact(self, run_id, n, row[0], classes)
                        if type(fact) is Call and fact.id == call_id:
                            out[call_id] = fact
                            first = n if first is None else min(first, n)
                        break
            if before_n is not None and first is not None and first < before_n:
                why = I.walk(self, run_id, self._run_row(run_id), first, before_n - 1)
                if why:
                    raise _chain_broken(run_id, why)
        return out

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
        with self._snapshot():
            try:
                a = I.audit(self, run_id, head)
            except BrokenHistory as e:  # a corrupt run record or Start (`_run_row`): broken
                return False, str(e), ""
        return a.ok, a.message, a.head

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
        with self._lock:
            self._run_row(run_id)
            self._db.execute("PRAGMA secure_delete=ON")
            try:
                with self.transaction() as db:
                    for table in ("facts", "archived_facts"):
                        for n, data in db.execute(f"SELECT n, data FROM {table} WHERE run=?", (run_id,)).fetchall():
                            new, count = T.redact_slots(data, digest)
                            if count:
                                db.execute(f"UPDATE {table} SET data=? WHERE run=? AND n=?", (new, run_id, n))
                                db.execute("INSERT OR IGNORE INTO holes VALUES (?, ?, ?, ?)", (run_id, n, digest, time.time()))
                                total += count
                    if not total:
                        raise StoreError(f"run {run_id!r} holds no value with hash {digest.hex()}")
                    db.execute("DELETE FROM blob_refs WHERE hash=? AND run=?", (digest, run_id))
                    if not db.execute("SELECT 1 FROM blob_refs WHERE hash=?", (digest,)).fetchone():
                        db.execute("DELETE FROM blobs WHERE hash=?", (digest,))
                # Old page images would otherwise linger in the WAL until the next checkpoint.
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._db.execute("PRAGMA secure_delete=OFF")
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
        with self._lock:
            with self._snapshot():
                a = I.audit(self, run_id)
                if not a.ok:
                    raise BrokenHistory(f"run {run_id!r} fails its integrity check: {a.message}; refusing "
                                        f"to archive it (that would remove facts of a history that does not verify)")
                cp, latest, held = I.archive_limit(self, run_id, a)
            r = a.run
            old = r["archived_through"]
            through = (cp - 1) if cp is not None and cp > 2 else 0
            if not delete and through <= old:
                return Archived(0, False, old, cp, latest, held)
            with self.transaction() as db:
                # Facts are only appended, so the audit holds for them; another archive may not have run.
                if db.execute("SELECT archived_through FROM runs WHERE id=?", (run_id,)).fetchone()[0] != old:
                    raise StoreError(f"run {run_id!r} was archived by another process meanwhile; nothing "
                                     f"changed here: run archive again")
                if through < 2:
                    return Archived(0, delete, old, cp, latest, held)
                kept = self._hash_of(run_id, through, r)
                if delete:
                    moved = sum(db.execute(f"DELETE FROM {t} WHERE run=? AND n>1 AND n<=?", (run_id, through)).rowcount
                                for t in ("archived_facts", "facts"))
                    db.execute("DELETE FROM blob_refs WHERE run=? AND n>1 AND n<=?", (run_id, through))
                    db.execute("DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM blob_refs)")
                    if not moved:
                        return Archived(0, True, old, cp, latest, held)
                else:
                    db.execute("INSERT INTO archived_facts SELECT * FROM facts WHERE run=? AND n>1 AND n<=?",
                               (run_id, through))
                    moved = db.execute("DELETE FROM facts WHERE run=? AND n>1 AND n<=?", (run_id, through)).rowcount
                # A deletion may lower the marker an older archive left past a reply still needed:
                # the facts after it stay in the archive table, and verify checks them from it.
                db.execute("UPDATE runs SET archived_through=?, archived_hash=? WHERE id=?", (through, kept, run_id))
            return Archived(moved, delete, through, cp, latest, held)

    def record_reply(self, run_id: str, call_id: str, reply: Any) -> StoredFact:
        """Append the Reply the host delivers to an open call (`resume --reply`), durably. This is
        the host's own hand, not admission: a host token in `reply` is recorded as issued
        (flowrt.host admits a delivered reply, refusing unissued tokens, before it records it)."""
        with SqliteRecorder(self, run_id) as rec:
            if call_id not in {c for c, _ in self.open_calls(run_id)}:
                open_ = ", ".join(c for c, _ in self.open_calls(run_id)) or "none"
                raise CallNotOpen(f"call {call_id} is not open in run {run_id!r} (open calls: {open_})")
            rec.record(Reply(call_id, reply))
            rec.sync(durable=True)
            n = rec.n
        return replace(self.records(run_id, n, decode=False)[0], fact=Reply(call_id, reply))

    def record_binding(self, run_id: str, tool_id: str, implementation: str) -> None:
        """The host's record of which implementation serves a Tool in a run (not history)."""
        with self.transaction(durable=False) as db:
            db.execute("INSERT OR REPLACE INTO bindings VALUES (?, ?, ?, ?)", (run_id, tool_id, implementation, time.time()))

    def bindings(self, run_id: str) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT tool_id, implementation FROM bindings WHERE run=?", (run_id,)).fetchall())

    def record_pending(self, run_id: str, call_id: str) -> None:
        """Host record: the implementation of open call `call_id` answered `pending` (a deliberate
        pause). Cleared when a Reply or Stop closes the call. A call open and not pending when no
        process holds the run was cut by a crash."""
        with self.transaction(durable=False) as db:
            if db.execute("SELECT 1 FROM open_calls WHERE run=? AND call=?", (run_id, call_id)).fetchone():
                db.execute("INSERT OR IGNORE INTO parked_calls VALUES (?, ?, ?)", (run_id, call_id, time.time()))

    def record_resent(self, run_id: str, call_id: str) -> None:
        """Host record: open call `call_id` is being sent again (`resume --resend`), so it is out,
        no longer pending: a crash while it is out cuts it like any call in flight."""
        with self.transaction(durable=True) as db:
            db.execute("DELETE FROM parked_calls WHERE run=? AND call=?", (run_id, call_id))

    def pending_calls(self, run_id: str) -> set[str]:
        """Ids of the run's open calls left open on purpose (`pending`)."""
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT call FROM parked_calls WHERE run=?", (run_id,))}

    def issue_token(self, type_id: str, token: str) -> None:
        """Host record: the host issues `token` of the @tool type `type_id` (its declaration
        identity, "browser::Page") in code, so a run may be handed it as input or in a reply.
        Issuing one already issued changes nothing (its first issuer is kept)."""
        if type(type_id) is not str or "::" not in type_id or type(token) is not str:
            raise StoreError(f"a host token is issued as (type identity like 'browser::Page', token text), "
                             f"not ({type_id!r}, {token!r})")
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO host_tokens VALUES (?, ?, NULL, NULL, ?)", (type_id, token, time.time()))

    def token_issuer(self, type_id: str, token: str) -> Optional[tuple[Optional[str], Optional[str]]]:
        """(run, call) whose Reply issued the token, (None, None) for one the host issued in code,
        or None: the host never issued it."""
        with self._lock:
            row = self._db.execute("SELECT run, call FROM host_tokens WHERE type_id=? AND token=?",
                                   (type_id, token)).fetchone()
        return None if row is None else (row[0], row[1])

    def token_issued(self, type_id: str, token: str) -> bool:
        return self.token_issuer(type_id, token) is not None

    def record_nested(self, outer_run: str, call_id: str, inner_run: str) -> None:
        """Host record linking a nested run to the outer call that started it (not history)."""
        with self.transaction(durable=False) as db:
            db.execute("INSERT OR REPLACE INTO nested_runs VALUES (?, ?, ?)", (outer_run, call_id, inner_run))

    def nested_runs(self, outer_run: str) -> dict[str, str]:
        """call id -> inner run id, for every nested run a call of `outer_run` started."""
        with self._lock:
            return dict(self._db.execute(
                "SELECT call, inner_run FROM nested_runs WHERE outer_run=? ORDER BY call", (outer_run,)).fetchall())

    def outer_of(self, inner_run: str) -> Optional[tuple[str, str]]:
        """(outer run id, call id) that started `inner_run`, or None for a top-level run."""
        with self._lock:
            row = self._db.execute("SELECT outer_run, call FROM nested_runs WHERE inner_run=?", (inner_run,)).fetchone()
            return None if row is None else (row[0], row[1])


# The `runs` columns every reader relies on, and what each must hold (a store file is anyone's to
# edit: a record that does not fit is refused naming the run, never half-read).
_RUN_COLUMNS = (
    ("state", (str,)), ("program", (str,)), ("std", (str,)), ("entry", (str,)), ("n", (int,)),
    ("head", (bytes,)), ("archived_through", (int,)), ("created", (int, float)),
    ("parent", (str, type(None))), ("from_checkpoint", (int, type(None))),
    ("latest_checkpoint", (int, type(None))), ("archived_hash", (bytes, type(None))),
    ("owner", (str, type(None))), ("meta", (str,)),
)
_STATES = frozenset({"running", "paused", "halted", "completed", "faulted"})
_META_KEYS = {"entry_module": str, "entry_decl": str, "parent": str, "commits": dict}


def _check_run_row(r: dict) -> None:
    """Refuse a run record (`runs` row) whose columns do not hold what the store writes there."""
    def corrupt(why: str) -> BrokenHistory:
        return BrokenHistory(f"run {r.get('id')!r}: its run record is corrupt ({why}); refusing to use it")

    for col, types in _RUN_COLUMNS:
        if type(r.get(col)) not in types:
            raise corrupt(f"{col} holds {type(r.get(col)).__name__}")
    if r["state"] not in _STATES:
        raise corrupt(f"state {r['state'][:20]!r}")
    if r["n"] < 1 or len(r["head"]) != 32 or (r["latest_checkpoint"] is not None and not 1 < r["latest_checkpoint"] <= r["n"]):
        raise corrupt("its fact count, head or latest checkpoint is out of range")
    try:
        meta = json.loads(r["meta"])
    except (ValueError, RecursionError):
        raise corrupt("meta is not JSON") from None
    if type(meta) is not dict or any(k in meta and type(meta[k]) is not t for k, t in _META_KEYS.items()):
        raise corrupt("meta is not the host's JSON object")
def _issued_rows(run_id: str, call_id: str, reply: Any) -> list[tuple]:
    now = time.time()
    return [(t.type_id, t.token, run_id, call_id, now) for t in tokens_in(reply)]


def _corrupt(run_id: str, n: int, e: Exception) -> BrokenHistory:
    return BrokenHistory(f"run {run_id!r}: fact {n} is corrupt: {e}; refusing to use its history")


def _read_fact(store: "Store", run_id: str, n: int, data, classes, kind=None) -> Fact:
    """One stored fact decoded; a row that is anyone's bytes and not a fact is refused naming it."""
    try:
        return T.decode_fact(data, store._blob, classes=classes, kind=kind)
    except ChangedBlob as e:
        raise _blob_broken(run_id, n, e) from None
    except (T.MissingClass, T.UnsupportedDataVersion):
        raise
    except T.TraceError as e:
        raise _corrupt(run_id, n, e) from None


def _chain_broken(run_id: str, why: str) -> BrokenHistory:
    return BrokenHistory(f"run {run_id!r} fails its hash chain: {why}; refusing to use its history "
                         f"(`flow2py verify {run_id}` checks it whole)")


def _blob_broken(run_id: str, n: int, e: ChangedBlob) -> BrokenHistory:
    return BrokenHistory(f"run {run_id!r} fails its integrity check: fact {n} refers to blob {e.digest.hex()}, "
                         f"whose stored bytes were changed (they do not hash to it); refusing to use its "
                         f"history (`flow2py verify {run_id}` checks it whole)")


def _close_call(db, run_id: str, call_id: str) -> None:
    db.execute("DELETE FROM open_calls WHERE run=? AND call=?", (run_id, call_id))
    db.execute("DELETE FROM parked_calls WHERE run=? AND call=?", (run_id, call_id))


def _put_blobs(db, run_id: str, n: int, blobs) -> None:
    for h, b in blobs:
        db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (h, b))
        db.execute("INSERT OR IGNORE INTO blob_refs VALUES (?, ?, ?)", (h, run_id, n))


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
                f"to rewrite recorded history") from None
        for n, enc, _h, _f in pending:
            if enc.blobs:
                _put_blobs(db, run, n, enc.blobs)
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
            db.executemany("INSERT OR REPLACE INTO open_calls VALUES (?, ?, ?, ?)",
                           [o for o in self.opened if o[1] not in done] if done else self.opened)


class SqliteRecorder:
    """The Recorder (flowrt.data.facts) of one run: appends facts to the store, one writer at a time.

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

    def __init__(self, store: Store, run_id: str):
        self.store, self.run_id = store, run_id
        self.owner = _owner_token()
        self._pending: list[tuple[int, T.EncodedFact, bytes, Fact]] = []
        self._urgent = False  # the buffer holds a Call or an End: the next sync() commits
        self._closed = False
        self._broken: Optional[BaseException] = None
        with store.transaction() as db:
            r = store._run_row(run_id)
            if r["state"] in ("completed", "faulted"):
                raise StoreError(f"run {run_id!r} has already ended ({r['state']}); fork it to continue")
            if r["owner"] is not None and _owner_alive(r["owner"]):
                raise RunBusy(f"run {run_id!r} is being run by {_describe_owner(r['owner'])}; "
                              f"only one process may run it at a time")
            db.execute("UPDATE runs SET owner=?, state='running' WHERE id=?", (self.owner, run_id))
            self.n, self.head = r["n"], r["head"]
            # Calls left pending by an earlier process: their parked_calls rows go when a Reply closes them.
            self._pending_calls = {row[0] for row in db.execute("SELECT call FROM parked_calls WHERE run=?", (run_id,))}
        self._synced = (self.n, self.head)

    @property
    def head_hex(self) -> str:
        return self.head.hex()

    def call_pending(self, call_id: str) -> None:
        """The driver's note that `call_id`'s implementation answered `pending` (host record).
        The run may now wait a long time: everything buffered is committed durably first."""
        self.sync(durable=True)
        self.store.record_pending(self.run_id, call_id)
        self._pending_calls.add(call_id)

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
        row = db.execute("SELECT owner, n, head FROM runs WHERE id=?", (run,)).fetchone()
        if row is None or row[0] != self.owner:
            holder = _describe_owner(row[0]) if row and row[0] else "nobody"
            return RunBusy(f"run {run!r} is no longer leased to this process (held by {holder}); "
                           f"refusing to append")
        return HistoryConflict(
            f"the history of run {run!r} changed under this process (fact {row[1]}, head "
            f"{row[2].hex()[:16]}, expected fact {self._synced[0]}); refusing to append")

    def _write(self, pending, durable: bool) -> None:
        run = self.run_id
        store = self.store
        batch = _Batch(run, pending, self._pending_calls)
        with store._lock:
            db = store._db
            store._set_sync(durable)
            db.execute("BEGIN IMMEDIATE")
            try:
                # The lease and head check is the UPDATE's own condition (one statement, no SELECT);
                # BEGIN IMMEDIATE holds the write lock from here to COMMIT.
                cur = db.execute(
                    "UPDATE runs SET n=?, head=?, latest_checkpoint=coalesce(?, latest_checkpoint), "
                    "state=coalesce(?, state) WHERE id=? AND owner=? AND n=? AND head=?",
                    (self.n, self.head, batch.latest_cp, batch.state, run, self.owner, self._synced[0],
                     self._synced[1]))
                if cur.rowcount != 1:
                    raise self._refusal(db)
                batch.write(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            try:
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

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
            with self.store.transaction() as db:
                db.execute(
                    "UPDATE runs SET owner=NULL, state=CASE WHEN state IN ('completed', 'faulted') THEN state "
                    "WHEN ? THEN 'halted' "
                    "WHEN EXISTS (SELECT 1 FROM open_calls WHERE run=?) THEN 'paused' ELSE 'halted' END "
                    "WHERE id=? AND owner=?", (halted, self.run_id, self.run_id, self.owner))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- replies carried by a checkpoint (added by the driver helper; see docs/spec/execution.md) ----

def carried_replies(store: "Store", run_id: str, call_ids, before_n: int, *,
                    classes: Optional[ClassTable] = None, require_all: bool = False) -> dict:
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
    with store._lock:
        r = store._run_row(run_id)
        for cid in sorted(wanted):
            rows = I.reply_rows(store, run_id, cid, before_n)
            if rows:
                n, data = rows[0]
                found[cid] = (n, _read_fact(store, run_id, n, data, classes).reply)
            elif require_all:
                raise BrokenHistory(
                    f"run {run_id!r} fails its integrity check: its checkpoint at fact {before_n} carries "
                    f"call {cid}, which is not open, yet no reply to it recorded before the checkpoint is "
                    f"in the store (deleted with archived facts?); refusing to use its history")
        if found:
            why = I.walk(store, run_id, r, min(n for n, _ in found.values()), before_n - 1)
            if why:
                raise _chain_broken(run_id, why)
    return {cid: reply for cid, (n, reply) in sorted(found.items(), key=lambda kv: kv[1][0])}


# ---- a call's facts, for a fork rebuilding a parked task (flowrt.host.forks) -------------------------

def facts_of_call(store: "Store", run_id: str, call_id: str, *,
                  classes: Optional[ClassTable] = None) -> list[tuple[int, Fact]]:
    """(n, fact), in order, of every fact of run `run_id` (hot or archived) that may concern call
    `call_id`: its Call, its Reply, and any Stop that names it (the caller reads which call a Stop
    closed). `classes`: the class table that rebuilds the values (the forking program's)."""

    needle = cbor2.dumps(call_id)  # the id as the fact's CBOR holds it: a cheap pre-filter
    out = []
    with store._lock:
        for table in ("facts", "archived_facts"):
            rows = store._db.execute(
                f"SELECT n, data FROM {table} WHERE run=? AND kind IN (?, ?, ?) AND instr(data, ?) > 0",
                (run_id, T.CALL, T.REPLY, T.STOP, needle)).fetchall()
            for n, data in rows:
                out.append((n, _read_fact(store, run_id, n, data, classes)))
    return sorted(out, key=lambda e: e[0])
