"""The store: every run's history, module sources and host records, in one SQLite file or one
PostgreSQL database.

docs/spec/trace.md ("Store") is the description; the short version:

* One file (default `.flow/runs.db` under the current directory), WAL mode, or a PostgreSQL
  database (`postgresql://…`: flowrt.history.pg, the same tables and SQL). `Store(path_or_url)`
  opens it and is made of three parts, each over the one connection (`store.file`):
* `store.history` (flowrt.history.history_store): the facts of every run and their chain:
  `create_run`, `records`, `facts`, `latest_checkpoint`, `checkpoint`, `sources`, `verify`,
  `redact`, `archive`, `record_reply`; `store.history.calls` (flowrt.history.call_facts) reads
  facts by call id for resume and fork. Facts are appended by a run's `SqliteRecorder`
  (flowrt.history.recorder), which holds the run's lease; its docstring states the durability
  claim (one fsynced commit per dispatch).
* `store.host_records` (flowrt.history.host_records): the host's records beside history: the
  runs' records as listed (`load_run`, `runs`), open and pending calls, bindings, nested runs and
  issued host tokens.
* `store.worker_records` (flowrt.history.worker_records): what a worker keeps to keep runs going:
  submissions, leases, delivered replies, timers, cancel requests, attempts inside one call.
* `store.file` (flowrt.history.schema): the SQL schema, the connection, transactions, and how a
  store made before a table existed is opened (a writer adds the table; a reader,
  `Store(readonly=True)` or a file SQLite cannot write, writes nothing and sees it empty).

The host, the engine and the CLI call these methods; SQL stays in flowrt.history (only tests
and benchmarks reach `store.file.db`, to tamper with a file or measure it). This module gathers
the names a host imports (`from flowrt.history.store import Store, SqliteRecorder, ...`).
"""

from __future__ import annotations

import os
from pathlib import Path

from flowrt.history.history_store import HistoryStore, StoredFact
from flowrt.history.host_records import HostRecords, RunInfo
from flowrt.history.worker_records import WorkerRecords
from flowrt.history.integrity import Archived
from flowrt.history.pg import PgStoreFile, is_url
from flowrt.history.recorder import SqliteRecorder, StoreRecorder
from flowrt.history.schema import StoreFile, UnsupportedSchemaVersion
from flowrt.history.store_errors import (
    BrokenHistory,
    CallNotOpen,
    ChangedBlob,
    HistoryConflict,
    RunBusy,
    RunExists,
    StoreError,
    UnknownRun,
)

__all__ = [
    "DEFAULT_STORE",
    "Store",
    "SqliteRecorder",
    "StoreRecorder",
    "UnsupportedSchemaVersion",
    "is_url",
    "RunInfo",
    "StoredFact",
    "StoreError",
    "UnknownRun",
    "RunExists",
    "RunBusy",
    "HistoryConflict",
    "CallNotOpen",
    "BrokenHistory",
    "ChangedBlob",
    "Archived",
]

DEFAULT_STORE = Path(".flow") / "runs.db"


class Store:
    """One store file: its history (`history`) and the host's records (`host_records`) over one
    connection (`file`). Thread-safe (one connection behind a lock); open one per process."""

    def __init__(
        self, path: os.PathLike | str | None = None, *, durable: bool = True, readonly: bool = False
    ):
        """Open the store at `path` (default `Path.cwd() / DEFAULT_STORE`), or the PostgreSQL database
        of a `postgresql://` (or `postgres://`) URL (flowrt.history.pg). `durable`: commits that
        must survive power loss are fsynced. `readonly`: a reader's open (SQLite `mode=ro`): it
        never writes, so a store file the user can only read opens too."""
        if is_url(path):
            self.file = PgStoreFile(path, durable=durable, readonly=readonly)
        else:
            self.file = StoreFile(
                Path(path) if path is not None else Path.cwd() / DEFAULT_STORE,
                durable=durable,
                readonly=readonly,
            )
        self.history = HistoryStore(self)
        self.host_records = HostRecords(self.file)
        self.worker_records = WorkerRecords(self.file)  # a worker's records (flowrt.host.worker)

    @property
    def path(self):
        """The SQLite file's Path, or the PostgreSQL URL as shown (password hidden)."""
        return self.file.path

    @property
    def readonly(self) -> bool:
        """Opened for reading (or a file SQLite cannot write): every write is refused."""
        return self.file.readonly

    def close(self) -> None:
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
