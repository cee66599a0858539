"""The store on PostgreSQL (`PgStoreFile`): the same tables, the same SQL, over psycopg 3 and its pool.

docs/spec/trace.md ("Store", "PostgreSQL") is the description. `Store("postgresql://…")` (also
`postgres://`) opens this instead of the SQLite file (flowrt.history.schema.StoreFile); both have
one interface: `db` (execute, executemany), `lock`, `transaction(durable, whole=True)`,
`snapshot()`, `lock_run(db, run_id)`, `path`, `durable`, `readonly`, `close()`. Every SQL text of
flowrt.history is written once, in SQLite's spelling, and translated here (`pg_sql`, cached):
`?` placeholders become psycopg's `%s`, `instr(data, ?)` becomes `position(? in data)`,
`INSERT OR IGNORE` becomes `INSERT … ON CONFLICT DO
NOTHING`, `INSERT OR REPLACE` an upsert on the table's primary key (read from `SCHEMA`), and a
PRAGMA (SQLite's durability and secure-delete switches) is no statement at all. The schema is
`SCHEMA` with PostgreSQL's types (`pg_schema`: BLOB -> BYTEA, REAL -> DOUBLE PRECISION, INTEGER
-> BIGINT, no WITHOUT ROWID).

Transactions: `transaction()` is BEGIN … COMMIT (READ COMMITTED) holding a transaction-scoped
advisory lock of the store's schema, so the store's writers are serialised as SQLite's BEGIN
IMMEDIATE serialises them, and every read-check-write the host records do keeps its meaning.
`transaction(whole=False)` (the recorder's append) takes no store-wide lock: its one guarded
`UPDATE runs … WHERE id=? AND owner=? AND n=? AND head=?` takes the run's row lock, and a second
writer's UPDATE waits for it and then re-checks its condition against the committed row, so two
writers never both append to one run. `lock_run` takes that row lock up front (`SELECT … FOR
UPDATE`) where a lease is read and then taken. `durable=False` commits with
`synchronous_commit=off` (not waiting for the WAL flush: what SQLite's synchronous=NORMAL is to
FULL). `snapshot()` is a REPEATABLE READ READ ONLY transaction: one state of the store.

Connections: a psycopg_pool.ConnectionPool; the file uses one connection at a time behind `lock`
(as the SQLite file does), and a connection the server dropped is given back broken and the next
statement takes a fresh one. psycopg's errors are raised as the sqlite3 module's classes
(`PgIntegrityError` is a `sqlite3.IntegrityError`, ...), each with a one-line message, so the
host's handling of a store error is one set for both backends.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import weakref
from contextlib import contextmanager
from functools import lru_cache
from typing import Optional

from flowrt.history.store_errors import StoreError

URL_PREFIXES = ("postgresql://", "postgres://")
#: the channel a write that may let a run move NOTIFYs on (payload: "<schema> <what> <run id>")
CHANNEL = "flow2py_wake"
#: the channel a run's commit NOTIFYs on, and any write that changes its state (payload: "<schema>
#: <run id>"; "<schema> " alone for a run id too long for a notice: every waiter looks)
RUN_CHANNEL = "flow2py_run"
#: PostgreSQL's limit on a notice's payload is 8000 bytes
_PAYLOAD_MAX = 7900
EXTRA_HINT = "pip install 'flow2py[pg]' (psycopg 3 and psycopg-pool)"


def is_url(path) -> bool:
    """A `--store` that names a PostgreSQL database rather than a SQLite file."""
    return isinstance(path, str) and path.startswith(URL_PREFIXES)


def display(url: str) -> str:
    """The URL as shown in messages: any password replaced by ***."""
    return re.sub(r"(://[^:/@?#]+):[^@/?#]*@", r"\1:***@", url)


# ---- errors ----------------------------------------------------------------------------------------


class PgError(sqlite3.DatabaseError):
    """A PostgreSQL error (any but the two below), as the host handles a store error."""


class PgIntegrityError(sqlite3.IntegrityError):
    """A constraint PostgreSQL enforced (a duplicate key: a fact numbered twice)."""


class PgOperationalError(sqlite3.OperationalError):
    """The server unreachable, the connection lost, a lock timeout, ..."""


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def translate(e, where: str) -> sqlite3.Error:
    """psycopg's exception as the sqlite3 class the host catches, its message one line."""
    import psycopg

    msg = f"{where}: PostgreSQL says: {_one_line(e)}"
    if isinstance(e, psycopg.IntegrityError):
        return PgIntegrityError(msg)
    if isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError)):
        return PgOperationalError(msg)
    return PgError(msg)


# ---- the dialect -----------------------------------------------------------------------------------


def _tables(schema: str) -> dict[str, tuple[list[str], list[str]]]:
    """table -> (columns, primary key columns), read from `SCHEMA`."""
    out = {}
    for stmt in schema.split(";"):
        m = re.search(r"CREATE TABLE IF NOT EXISTS (\w+)\s*\((.*)\)", re.sub(r"--[^\n]*", "", stmt), re.S)
        if not m:
            continue
        items, depth, cur = [], 0, ""
        for ch in m.group(2):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                items.append(cur.strip())
                cur = ""
            else:
                cur += ch
        items.append(cur.strip())
        cols, pk = [], []
        for item in items:
            if item.upper().startswith("PRIMARY KEY"):
                pk = [c.strip() for c in item[item.index("(") + 1 : item.rindex(")")].split(",")]
            elif item:
                cols.append(item.split()[0])
                if "PRIMARY KEY" in item.upper():
                    pk = [cols[-1]]
        out[m.group(1)] = (cols, pk)
    return out


def pg_schema(schema: str) -> list[str]:
    """`SCHEMA`'s statements in PostgreSQL's types."""
    out = []
    for stmt in schema.split(";"):
        if not stmt.strip():
            continue
        s = re.sub(r"\)\s*WITHOUT ROWID", ")", stmt)
        s = re.sub(r"\bBLOB\b", "BYTEA", s)
        s = re.sub(r"\bREAL\b", "DOUBLE PRECISION", s)
        s = re.sub(r"\bINTEGER\b", "BIGINT", s)
        out.append(s.strip())
    return out


@lru_cache(maxsize=1024)
def pg_sql(sql: str) -> Optional[str]:
    """One SQL text of flowrt.history in PostgreSQL's spelling; None for a PRAGMA (no statement)."""
    from flowrt.history.schema import SCHEMA

    s = sql.strip()
    if s.upper().startswith("PRAGMA"):
        return None
    # placeholders, outside quoted literals; a literal % is doubled for psycopg
    s = re.sub(
        r"'[^']*'|\?|%", lambda m: "%s" if m.group() == "?" else ("%%" if m.group() == "%" else m.group()), s
    )
    # SQLite's instr(haystack, needle) over bytes: PostgreSQL's position(needle in haystack)
    s = re.sub(r"\binstr\((\w+), %s\)", r"position(%s in \1)", s)
    m = re.match(r"INSERT OR (IGNORE|REPLACE) INTO (\w+)", s, re.I)
    if m:
        table = m.group(2)
        s = f"INSERT INTO {table}" + s[m.end() :]
        cols, pk = _tables(SCHEMA)[table]
        rest = [c for c in cols if c not in pk]
        if m.group(1).upper() == "IGNORE" or not rest:
            s += " ON CONFLICT DO NOTHING"
        else:
            sets = ", ".join(f"{c}=EXCLUDED.{c}" for c in rest)
            s += f" ON CONFLICT ({', '.join(pk)}) DO UPDATE SET {sets}"
    return s


class _Empty:
    """What a PRAGMA returns on PostgreSQL: no rows."""

    rowcount = -1
    description = None

    def fetchone(self):
        return None

    def fetchall(self):
        return []

    def __iter__(self):
        return iter(())


class _Db:
    """The file's `db`: execute/executemany in SQLite's spelling, run on the current connection."""

    def __init__(self, file: "PgStoreFile"):
        self._file = file

    def execute(self, sql: str, params=()):
        q = pg_sql(sql)
        if q is None:
            return _Empty()
        return self._file._run(lambda conn: conn.execute(q, tuple(params)))

    def executemany(self, sql: str, seq):
        q = pg_sql(sql)
        if q is None:
            return _Empty()
        rows = [tuple(r) for r in seq]

        def many(conn):
            cur = conn.cursor()
            if rows:
                cur.executemany(q, rows)
            return cur

        return self._file._run(many)

    @property
    def in_transaction(self) -> bool:
        return self._file._in_tx

    def notify_run(self, run_id: str) -> None:
        """Tell the run's waiters (`RunWatch`) that it changed, when the current transaction
        commits: one notice a run a transaction, sent with its COMMIT (no statement of its own)."""
        if self._file._in_tx:
            self._file._run_notices.add(run_id)

    def notify(self, payload: str) -> None:
        """Send `payload` to the store's listeners (`Listener`) when the current transaction
        commits (NOTIFY is transactional: a rolled-back write wakes no one)."""
        self.execute(f"SELECT pg_notify('{CHANNEL}', current_schema() || ' ' || ?)", (payload,))


def _commit_sql(runs) -> str:
    """COMMIT, after a notice on RUN_CHANNEL for each run the transaction changed that a process
    waits on (`RunWatch`), in one round trip (a query without parameters may be several)."""
    if not runs:
        return "COMMIT"
    return "; ".join([_run_notice(r) for r in sorted(runs)] + ["COMMIT"])


#: the advisory locks (two int4 keys: a space apart from the store's one-key write lock) a
#: waiter holds shared on its run's key while it waits; "<schema> <run id>" keys the run
_WAIT_KEY = "hashtext('flow2py run'), hashtext(current_schema() || {0})"


@lru_cache(maxsize=4096)
def _run_notice(run_id: str) -> str:
    """The run's notice, sent only when a waiter holds the run's key (the commit's exclusive try
    of it fails; while it holds it, until its commit ends, a waiter registering waits, then
    looks): a commit no one waits on sends none, and takes no part in PostgreSQL's serialising of
    notifying commits. The id is an escape string literal (E'…': backslashes and quotes escaped,
    whatever standard_conforming_strings says)."""
    text = (" " + run_id).replace("\\", "\\\\").replace("'", "\\'")
    payload = text if len(run_id.encode("utf-8", "replace")) <= _PAYLOAD_MAX else " "
    key = _WAIT_KEY.format(f"E'{text}'")
    return f"SELECT pg_notify('{RUN_CHANNEL}', current_schema() || E'{payload}') WHERE NOT pg_try_advisory_xact_lock({key})"


# The runs page's function (`page_terms`): the text at `key` of the host's JSON object `meta`, as
# SQLite's json_valid/json_type/json_extract read it (not JSON, not an object, not a string at
# `key`, or '': NULL), made per connection in pg_temp (nothing is added to the store's schema).
_PAGE_FUNCTIONS = """CREATE OR REPLACE FUNCTION pg_temp.flow_meta_text(meta text, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE j json;
BEGIN
  j := meta::json;
  IF json_typeof(j) = 'object' AND json_typeof(j -> key) = 'string' THEN
    RETURN nullif(j ->> key, '');
  END IF;
  RETURN NULL;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$"""
# os.path.splitext(os.path.basename(p))[0] or None: the last component, less its last extension
# where a character other than a dot comes before that dot
_PAGE_STEM = (
    "coalesce(substring(regexp_replace({0}, '^.*/', '') from '^(\\.*[^.].*)\\.[^.]*$'), "
    "nullif(regexp_replace({0}, '^.*/', ''), ''))"
)


class PgStoreFile:
    """The store in a PostgreSQL database (the schema of the URL's `options=-csearch_path=…`, else
    `public`): the interface of flowrt.history.schema.StoreFile."""

    #: what a claim's SELECT ends with (flowrt.history.worker_records): a row another
    #: transaction holds is passed over, not waited for; SQLite's file has "" (BEGIN IMMEDIATE
    #: already serialises its claims)
    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"

    def page_terms(self) -> dict:
        """The runs page's terms in PostgreSQL's SQL (flowrt.history.worker_records.WorkerRecords.runs_page;
        SQLite's are Python functions): the recorder leases whose process is gone are read by
        the caller first (`owner_alive`: a process on this host cannot be looked at from the
        server) and passed once, an array (`args`: the caller's); the host's JSON read by `pg_temp.flow_meta_text`
        (made on this connection on first use: NULL where SQLite's json_valid/json_type give
        none); a path's stem as os.path.splitext(basename) in regular expressions; the run's
        submission, cancel and open calls as one-row subqueries; ids ordered by their bytes
        (COLLATE "C", as SQLite's BINARY); no LIMIT as NULL."""
        with self.lock:
            conn = self._connection()
            if self._in_tx or conn not in self._page_functions:
                self._exec(_PAGE_FUNCTIONS)
                # a page's plan costs far more than it takes (its LIMIT ends the index walk
                # early): JIT-compiling it would cost more than running it
                self._exec("SET jit = off")
                if not self._in_tx:
                    self._page_functions.add(conn)
        return {
            "with": "WITH here AS (SELECT CAST(? AS text[]) AS dead) ",
            "join": "CROSS JOIN here ",
            "args": None,
            "dead": "r.owner = ANY(here.dead)",
            # one index probe a row, as the run's rows are read walking runs_by_created (joins
            # or EXISTS would be planned as hashes of whole tables, the page then a sort)
            "cancelled": "(SELECT true FROM worker_cancels c WHERE c.run = r.id)",
            "unstarted": "(SELECT s.started IS NULL FROM worker_submissions s WHERE s.run = r.id)",
            "open": "(SELECT true FROM open_calls o WHERE o.run = r.id LIMIT 1)",
            "submitted": "(SELECT s.program FROM worker_submissions s WHERE s.run = r.id)",
            "meta": "pg_temp.flow_meta_text(r.meta, '{0}')",
            "stem": _PAGE_STEM,
            "id": 'r.id COLLATE "C"',
            "all": None,
        }

    def listen(self, wake) -> "Listener":
        """A started `Listener` calling `wake(payload)` on each notice for this store's schema."""
        return Listener(self.url, wake).start()

    def __init__(self, url: str, *, durable: bool = True, readonly: bool = False):
        try:
            import psycopg
            import psycopg_pool
        except ImportError:
            raise StoreError(
                f"the store {display(url)} is a PostgreSQL URL, and this Python lacks psycopg: {EXTRA_HINT}"
            ) from None
        self.url = url
        self.path = display(url)
        self.durable = durable
        self.readonly = readonly
        self.lock = threading.RLock()
        self.db = _Db(self)
        self._in_tx = False
        self._sync = durable
        self._conn = None
        self._page_functions = weakref.WeakSet()  # connections holding the runs page's functions
        self._run_notices: set[str] = set()  # runs the open transaction changed (`notify_run`)
        self._watch: Optional["RunWatch"] = None
        where = f"the store {self.path}"
        self._where = where
        # A direct first connection gives the server's reason at once (the pool would retry).
        try:
            psycopg.connect(url, connect_timeout=10, autocommit=True).close()
        except psycopg.Error as e:
            raise StoreError(f"{where}: cannot connect to PostgreSQL: {_one_line(e)}") from None
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=4,
            kwargs={"autocommit": True},
            open=False,
            timeout=30,
            name="flow2py-store",
        )
        # A store dropped without close() (a host that forgot it) gives its connections back.
        weakref.finalize(self, self._pool.close)
        try:
            self._pool.open(wait=True, timeout=30)
            self._open()
        except psycopg_pool.PoolTimeout as e:
            self._pool.close()
            raise StoreError(f"{where}: cannot connect to PostgreSQL: {_one_line(e)}") from None
        except BaseException:
            self.close()
            raise

    # ---- connections -----------------------------------------------------------------------------

    def _connection(self):
        if self._conn is None:
            self._conn = self._pool.getconn()
        return self._conn

    def _run(self, fn):
        import psycopg

        with self.lock:
            conn = self._connection()
            try:
                return fn(conn)
            except psycopg.Error as e:
                if conn.broken:
                    self._drop()
                raise translate(e, self._where) from None

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                self._pool.putconn(conn)
            except Exception:
                pass

    def run_watch(self) -> "RunWatch":
        """This file's `RunWatch` (started on first use; stopped by `close`)."""
        with self.lock:
            if self._watch is None:
                self._watch = RunWatch(self.url)
            return self._watch

    def close(self) -> None:
        with self.lock:
            watch, self._watch = self._watch, None
            if watch is not None:
                watch.stop()
            self._drop()
            pool = getattr(self, "_pool", None)
            if pool is not None:
                pool.close()

    # ---- opening -----------------------------------------------------------------------------------

    def _open(self) -> None:
        from flowrt.history import schema as S

        tables = {
            r[0]
            for r in self.db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        }
        if S.TABLES <= tables or (self.readonly and "store_meta" in tables):
            meta = dict(self.db.execute("SELECT key, value FROM store_meta").fetchall())
            if "data_version" in meta:
                S.check_versions(meta, self.path)
                if not S.TABLES <= tables:
                    self._stand_in(S.TABLES - tables)
                if "schema_version" not in meta and not self.readonly:
                    with self.transaction(durable=False) as db:  # a store made before it: version 1
                        S.record_versions(
                            db, dict(db.execute("SELECT key, value FROM store_meta").fetchall())
                        )
                if not self.readonly:
                    self._add_indexes()
                return
        if self.readonly:
            raise StoreError(
                f"{self.path} is not a Flow store (it records no data version); nothing was read"
            )
        with self.transaction() as db:
            for stmt in pg_schema(S.SCHEMA):
                self._run(lambda conn, s=stmt: conn.execute(s))
            meta = dict(db.execute("SELECT key, value FROM store_meta").fetchall())
            if "data_version" in meta:
                S.check_versions(meta, self.path)
            S.record_versions(db, meta)

    def _add_indexes(self) -> None:
        """The indexes of `SCHEMA` a store made before them lacks, made by its first writer (as
        the SQLite file does)."""
        from flowrt.history import schema as S

        have = {
            r[0]
            for r in self.db.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
        }
        if S.INDEXES <= have:
            return
        with self.transaction():
            for stmt in pg_schema(S.SCHEMA):
                if stmt.startswith("CREATE INDEX"):
                    self._run(lambda conn, s=stmt: conn.execute(s))

    def _stand_in(self, missing) -> None:
        """Empty TEMP tables for the tables an older store lacks (as the SQLite file does)."""
        from flowrt.history.schema import SCHEMA

        for stmt in pg_schema(SCHEMA):
            m = re.search(r"CREATE TABLE IF NOT EXISTS (\w+)", stmt)
            if m and m.group(1) in missing:
                s = stmt.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1)
                self._run(lambda conn, s=s: conn.execute(s))
        self.readonly = True

    # ---- transactions ------------------------------------------------------------------------------

    def set_sync(self, durable: bool) -> None:
        """Make the next commit wait for the WAL flush (`durable`, on a durable store) or not
        (`synchronous_commit=off` for that transaction)."""
        self._sync = durable and self.durable

    def _exec(self, sql: str) -> None:
        self._run(lambda conn: conn.execute(sql))

    @contextmanager
    def transaction(self, durable: bool = True, whole: bool = True):
        """BEGIN ... COMMIT, rolled back on any error; `whole`: holding the store's write lock (an
        advisory lock of its schema, what BEGIN IMMEDIATE is to SQLite); `durable`: the commit
        waits for the WAL flush. A store opened read-only refuses every write."""
        if self.readonly:
            raise StoreError(
                f"the store {self.path} is read-only here (opened for reading); nothing was changed"
            )
        with self.lock:
            if self._in_tx:
                raise StoreError(f"the store {self.path}: a transaction is already open on this connection")
            self.set_sync(durable)
            self._exec("BEGIN")
            self._in_tx = True
            try:
                if not self._sync:
                    self._exec("SET LOCAL synchronous_commit TO off")
                if whole:
                    self._exec("SELECT pg_advisory_xact_lock(hashtext('flow2py store ' || current_schema()))")
                yield self.db
            except BaseException:
                self._in_tx = False
                self._run_notices = set()
                self._rollback()
                raise
            self._in_tx = False
            notices, self._run_notices = self._run_notices, set()
            try:
                self._exec(_commit_sql(notices))
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        conn = self._conn
        if conn is None or conn.broken:
            return
        try:
            conn.execute("ROLLBACK")
        except Exception:
            self._drop()

    def lock_run(self, db, run_id: str) -> None:
        """Take the run row's lock until the transaction ends (SELECT … FOR UPDATE)."""
        db.execute("SELECT 1 FROM runs WHERE id=? FOR UPDATE", (run_id,))

    @contextmanager
    def snapshot(self):
        """Reads that see one state of the store (REPEATABLE READ, READ ONLY)."""
        with self.lock:
            if self._in_tx:
                yield
                return
            self._exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._in_tx = True
            try:
                yield
            finally:
                self._in_tx = False
                try:
                    self._exec("COMMIT")
                except sqlite3.Error:
                    self._rollback()


class Listener:
    """LISTEN on `channel` (`CHANNEL`, else `RUN_CHANNEL`) over a dedicated connection (not the pool's), in a daemon thread:
    `wake(what)` for each notice sent from this store's schema, `wake(None)` once after each
    (re)connection (a notice sent while no connection listened is not lost: the caller looks).
    A connection the server drops is made again after half a second."""

    def __init__(self, url: str, wake, channel: str = CHANNEL):
        self.url, self._wake, self.channel = url, wake, channel
        self._stop = threading.Event()
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flowrt-pg-listen", daemon=True)

    def start(self) -> "Listener":
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        import psycopg

        while not self._stop.is_set():
            conn = None
            try:
                conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
                schema = conn.execute("SELECT current_schema()").fetchone()[0]
                conn.execute(f"LISTEN {self.channel}")
                self.ready.set()
                self._wake(None)
                while not self._stop.is_set():
                    for n in conn.notifies(timeout=0.5):
                        where, _, what = n.payload.partition(" ")
                        if where == schema:
                            self._wake(what)
            except psycopg.Error:
                self._stop.wait(0.5)
            finally:
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001  (a connection already gone)
                        pass


class RunWatch:
    """The runs this process waits on (flowrt.host.worker_ops.wait_for_change), woken by their
    notices on RUN_CHANNEL (a `Listener` of its own): `watching(run_id)` for the length of a wait;
    `mark(run_id)` before each look at the run; `wait(run_id, mark, timeout)` returns True as
    soon as a notice for the run (or a reconnection, after which every waiter looks) came after
    the mark, False at the timeout. Notices for runs no one waits on are not kept."""

    def __init__(self, url: str):
        self._cond = threading.Condition(threading.Lock())
        self._seen: dict[str, int] = {}  # run waited on -> notices for it
        self._epoch = 0  # reconnections and notices naming no run
        self.notices = 0  # notices that woke a waiter (what the tests and the bench read)
        self._url = url
        self._keys = threading.Lock()  # `_waiters` and the connection holding their keys
        self._waiters: dict[str, int] = {}
        self._holder = None  # the connection holding the waited runs' keys (shared)
        self._held = True  # False once that connection failed: its keys are gone, waiters poll
        self._listener = Listener(url, self._wake, RUN_CHANNEL).start()

    @property
    def ready(self) -> bool:
        """LISTEN is in place and the waited runs' keys are held (else a waiter polls)."""
        return self._held and self._listener.ready.is_set()

    def wait_ready(self, timeout: float) -> bool:
        return self._listener.ready.wait(timeout)

    def _wake(self, run_id: Optional[str]) -> None:
        with self._cond:
            if not run_id:
                self._epoch += 1
            elif run_id in self._seen:
                self._seen[run_id] += 1
            else:
                return
            self._cond.notify_all()

    def _key(self, run_id: str, take: bool) -> None:
        """Take (or give back) the run's key, shared, on the holding connection: a commit of the
        run NOTIFYs only while some process holds it (`_run_notice`)."""
        import psycopg

        if not self._held:
            return
        fn = "pg_advisory_lock_shared" if take else "pg_advisory_unlock_shared"
        try:
            if self._holder is None:
                self._holder = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
            self._holder.execute(f"SELECT {fn}({_WAIT_KEY.format('%s')})", (" " + run_id,))
        except psycopg.Error:
            self._held = False  # the keys went with the connection: every waiter polls from now

    @contextmanager
    def watching(self, run_id: str):
        """For the length of a wait on the run: its notices are counted, its key held."""
        with self._keys:
            n = self._waiters.get(run_id, 0)
            if not n:
                self._key(run_id, True)
            self._waiters[run_id] = n + 1
            with self._cond:
                self._seen.setdefault(run_id, 0)
        try:
            yield
        finally:
            with self._keys:
                self._waiters[run_id] -= 1
                if not self._waiters[run_id]:
                    del self._waiters[run_id]
                    with self._cond:
                        del self._seen[run_id]
                    self._key(run_id, False)

    def mark(self, run_id: str) -> tuple[int, int]:
        with self._cond:
            return self._epoch, self._seen.get(run_id, 0)

    def wait(self, run_id: str, mark: tuple[int, int], timeout: float) -> bool:
        with self._cond:
            woke = self._cond.wait_for(lambda: (self._epoch, self._seen.get(run_id, 0)) != mark, timeout)
            if woke:
                self.notices += 1
            return woke

    def stop(self) -> None:
        # not waiting for the thread: it ends at its next half-second look, its connection closed
        self._listener.stop(timeout=0)
        with self._keys:
            holder, self._holder, self._held = self._holder, None, False
        if holder is not None:
            try:
                holder.close()
            except Exception:  # noqa: BLE001  (a connection already gone)
                pass
