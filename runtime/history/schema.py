"""The store's SQL schema, and the SQLite file that holds it (`StoreFile`).

`SCHEMA` is every table of the store, in one place: the facts and their chain (`runs`, `facts`,
`archived_facts`, `blobs`, `blob_refs`, `holes`, `sources`, `run_sources`), read and appended by
flowrt.history.history_store and the recorder (flowrt.history.recorder), and the host's records
beside history (`bindings`, `open_calls`, `parked_calls`, `nested_runs`, `host_tokens`,
`run_pauses`, `call_failures`), kept by
flowrt.history.host_records, and the worker's (`worker_*`: submissions, leases, delivered replies,
timers, cancel requests, attempts), kept by flowrt.history.worker_records; `call_times` (when
each call was sent and closed, and the Flow line that made it) is written by the recorder. A
table or index is added here (and to docs/spec/trace.md "Store"); a store made before it existed
gets it from its first writer, and a reader sees a missing table empty (`StoreFile`).

`StoreFile` is the connection: it opens the file (WAL mode), checks the store's data version,
creates the tables a writer finds missing, and is the one way in for every write
(`transaction`) and for reads that must see one state of the store (`snapshot`). Nothing outside
flowrt.history runs SQL against it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path

from flowrt.history import trace as T
from flowrt.history.store_errors import StoreError

# Binding a parameter that is not an int, float, str or bytearray (a fact's bytes, a NULL) makes
# the sqlite3 module look for an adapter: a miss looks up `__adapt__` on its protocol type, which
# formats an AttributeError each time (~1,200 instructions; ~6% of a fan-out's recorder, ~1 µs a
# Tool call). An adapter registered for the type is found first: `bytes` gives a bytes object
# back as it is, and `{}.get` gives None for None. What is bound is unchanged.
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(type(None), {}.get)

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS call_times (
    run TEXT NOT NULL, n INTEGER NOT NULL, part INTEGER NOT NULL,  -- written at fact n, its part-th row there
    times TEXT NOT NULL,               -- JSON [[call, dispatched, replied, module, line], ...]
    PRIMARY KEY (run, n, part)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_pauses (
    run TEXT PRIMARY KEY, since REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS call_failures (
    run TEXT NOT NULL, call TEXT NOT NULL, attempt INTEGER NOT NULL, exc_type TEXT NOT NULL,
    message TEXT NOT NULL, traceback TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (run, call, attempt)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS worker_submissions (
    run TEXT PRIMARY KEY, program TEXT NOT NULL, entry TEXT NOT NULL, submitted REAL NOT NULL,
    started REAL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS worker_leases (
    run TEXT PRIMARY KEY, owner TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL,
    heartbeat REAL NOT NULL, expires REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS worker_replies (
    run TEXT NOT NULL, call TEXT NOT NULL, reply BLOB NOT NULL, delivered REAL NOT NULL,
    PRIMARY KEY (run, call)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS worker_timers (
    run TEXT NOT NULL, call TEXT NOT NULL, due REAL NOT NULL, set_at REAL NOT NULL, fired REAL,
    PRIMARY KEY (run, call)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS worker_cancels (run TEXT PRIMARY KEY, requested REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS worker_attempts (
    run TEXT NOT NULL, call TEXT NOT NULL, attempt INTEGER NOT NULL, started REAL NOT NULL,
    outcome TEXT NOT NULL, PRIMARY KEY (run, call, attempt)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created, id);
"""

TABLES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))
#: the indexes of SCHEMA (the runs pages take their page in SQL, newest first: runs_by_created)
INDEXES = frozenset(re.findall(r"CREATE INDEX IF NOT EXISTS (\w+)", SCHEMA))

# The version of the store's schema (its tables and what they mean), kept in store_meta beside the
# data version. A store that records none is version 1 (today's tables, made before the key
# existed); its first writer records it. A store of a newer version than this flowrt knows is
# refused whole. MIGRATIONS[v](db) turns a version-v store into version v + 1 (none yet: tables
# added since version 1 are created by a writer and read as empty by a reader, see StoreFile).
SCHEMA_VERSION = 1
MIGRATIONS: dict = {}


class UnsupportedSchemaVersion(StoreError):
    """A store whose schema is of a version this flowrt does not know (a newer one)."""


def check_versions(meta: dict, where) -> None:
    """Refuse a store of another data version or of an unknown schema version, whole."""
    if meta.get("data_version") != str(T.DATA_VERSION):
        raise T.UnsupportedDataVersion(meta.get("data_version"), where=f"the store {where}")
    v = meta.get("schema_version", "1")
    if not (isinstance(v, str) and v.isdigit() and 1 <= int(v) <= SCHEMA_VERSION):
        raise UnsupportedSchemaVersion(
            f"the store {where} has schema version {v}; this flowrt knows versions 1 to "
            f"{SCHEMA_VERSION} (upgrade flow2py to use it); nothing was read or changed"
        )


def record_versions(db, meta: dict) -> None:
    """A writer's part, inside its transaction: record the data version of a new store, migrate an
    older schema to SCHEMA_VERSION, and record it."""
    if "data_version" not in meta:
        db.execute("INSERT INTO store_meta VALUES ('data_version', ?)", (str(T.DATA_VERSION),))
    v = int(meta.get("schema_version", "1"))
    for step in range(v, SCHEMA_VERSION):
        MIGRATIONS[step](db)
    if "schema_version" not in meta:
        db.execute("INSERT INTO store_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    elif v != SCHEMA_VERSION:
        db.execute("UPDATE store_meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


class StoreFile:
    """The store's SQLite file: one connection behind a lock (thread-safe; open one per process).

    `db` is the connection and `lock` guards it: a read holds the lock, a write goes through
    `transaction`. `path`, `durable` (commits may be fsynced) and `readonly` (never writes) are
    as the Store was opened.
    """

    def __init__(self, path: Path, *, durable: bool = True, readonly: bool = False):
        """Open the store at `path`. `readonly`: a reader's open (SQLite `mode=ro`): it never writes,
        so a store file the user can only read opens too. A store made before a table existed gets
        the table from its first writer; a reader (or an open of a file SQLite cannot write) sees
        it as empty: no host tokens issued, no nested runs, ..."""
        self.path = path
        self.durable = durable
        self.readonly = readonly
        self.lock = threading.RLock()
        if readonly:
            self.db = sqlite3.connect(
                f"{self.path.absolute().as_uri()}?mode=ro",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=30,
            )
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._sync_mode = None
        # A store that already has its schema is opened without taking the write lock, so reading
        # (runs, history, replay, verify) is never held up by another process's write transaction.
        names = {
            r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")
        }
        tables = names - INDEXES
        if (TABLES | INDEXES) <= names or (readonly and "store_meta" in tables):
            if self._open_existing(tables):
                return
        if readonly:
            raise StoreError(
                f"{self.path} is not a Flow store (it records no data version); nothing was read"
            )
        self._create(tables)

    def _open_existing(self, tables: set) -> bool:
        """Open a store that has its schema (or, for a reader, its data version): True when it
        records its data version, which must be this flowrt's."""
        mode = self.db.execute("PRAGMA journal_mode").fetchone()[0]
        if mode.lower() != "wal" and not self.readonly:
            self.db.execute("PRAGMA journal_mode=WAL")
        self.set_sync(True)
        meta = dict(self.db.execute("SELECT key, value FROM store_meta").fetchall())
        if "data_version" not in meta:
            return False
        check_versions(meta, self.path)
        if not TABLES <= tables:
            self._stand_in(TABLES - tables)
        elif "schema_version" not in meta and not self.readonly:
            try:  # a store made before the schema version was kept: version 1, recorded by its first writer
                with self.transaction(durable=False) as db:
                    record_versions(db, dict(db.execute("SELECT key, value FROM store_meta").fetchall()))
            except sqlite3.OperationalError as e:
                if "readonly" not in str(e).lower():
                    raise
                self.readonly = True
        return True

    def _create(self, tables: set) -> None:
        """A writer's open of a new store, or of one made before some table existed: every table
        of `SCHEMA` that is missing is created, and the data version recorded."""
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.set_sync(True)
            with self.transaction() as db:
                for stmt in SCHEMA.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                meta = dict(db.execute("SELECT key, value FROM store_meta").fetchall())
                if "data_version" in meta:
                    check_versions(meta, self.path)
                record_versions(db, meta)
        except sqlite3.OperationalError as e:
            # An older store in a file this process cannot write (chmod, a read-only mount): it
            # is read as it is. Writing to it is refused when it is tried, as for any such file.
            if "readonly" not in str(e).lower() or "store_meta" not in tables:
                raise
            self.readonly = True
            self._stand_in(TABLES - tables)

    def _stand_in(self, missing) -> None:
        """Empty TEMP tables of the same shape for the tables an older store lacks, for this
        connection only (they shadow nothing: the store has no such table): readers read them
        as every other table. The store is read-only here, so `transaction` refuses every write
        before one could reach them."""
        for stmt in SCHEMA.split(";"):
            m = re.search(r"CREATE TABLE IF NOT EXISTS (\w+)", stmt)
            if m and m.group(1) in missing:
                self.db.execute(stmt.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))

    def close(self) -> None:
        with self.lock:
            self.db.close()

    def set_sync(self, durable: bool) -> None:
        """Make the next commit fsynced (`durable`, on a durable store) or not."""
        mode = "FULL" if (durable and self.durable) else "NORMAL"
        if mode != self._sync_mode:
            self.db.execute(f"PRAGMA synchronous={mode}")
            self._sync_mode = mode

    def lock_run(self, db, run_id: str) -> None:
        """Lock the run's row until the transaction ends: BEGIN IMMEDIATE already holds the
        database's write lock here (flowrt.history.pg takes a row lock)."""

    @contextmanager
    def transaction(self, durable: bool = True, whole: bool = True):
        """BEGIN IMMEDIATE ... COMMIT (fsynced when `durable`), rolled back on any error. Every
        write goes through here; a store opened read-only refuses them all. `whole`: the write
        needs the whole store's write lock (on SQLite every write takes it; flowrt.history.pg
        takes only row locks for the recorder's guarded append, `whole=False`)."""
        if self.readonly:
            raise StoreError(
                f"the store {self.path} is read-only here (opened for reading); nothing was changed"
            )
        with self.lock:
            self.set_sync(durable)
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            try:
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    @contextmanager
    def snapshot(self):
        """Reads that see one state of the store (a deferred transaction: in WAL mode a snapshot,
        which holds up no writer), so a fact appended meanwhile cannot read as a break."""
        with self.lock:
            if self.db.in_transaction:
                yield
                return
            self.db.execute("BEGIN")
            try:
                yield
            finally:
                self.db.execute("COMMIT")
