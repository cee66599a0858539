"""What every peer of bench/peers/ shares: timing (wall and CPU time of the peer's process),
payload bytes of a SQLite file or a PostgreSQL schema, and the PostgreSQL databases the bench
creates and drops."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

PEERS = Path(__file__).resolve().parent
FLOW = PEERS / "flow"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


class Timer:
    """Wall time and CPU time (every thread of this process) of the `with` block."""

    def __enter__(self):
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0

    def per(self, n: int) -> dict:
        return {"wall": self.wall / n, "cpu": self.cpu / n}


def sqlite_payload(path: str) -> int:
    """Bytes of every value of every row of every table of a SQLite file (length() of each
    column as a blob): what the file holds, without pages, indexes or free space."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        total = 0
        tables = [
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        for t in tables:
            cols = [r[1] for r in db.execute(f'PRAGMA table_info("{t}")')]
            if not cols:
                continue
            expr = " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in cols)
            total += db.execute(f'SELECT coalesce(sum({expr}), 0) FROM "{t}"').fetchone()[0]
        return total
    finally:
        db.close()


def pg_payload(url: str, schema: str) -> int:
    """Bytes of every row of every table of `schema` (pg_column_size of the row, as stored,
    before TOAST compression of large values; no pages, indexes or WAL)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema=%s "
                "AND table_type='BASE TABLE'",
                (schema,),
            )
        ]
        total = 0
        for t in tables:
            total += con.execute(
                f'SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM "{schema}"."{t}" t'
            ).fetchone()[0]
        return int(total)


def pg_url(db: str) -> str:
    return f"postgresql://postgres@127.0.0.1:5432/{db}"


def pg_create(db: str) -> str:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        con.execute(f'CREATE DATABASE "{db}"')
    return pg_url(db)


def pg_drop(db: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def pg_available() -> str | None:
    """None when the local server answers, else why not."""
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as con:
            con.execute("SELECT 1")
        return None
    except Exception as e:  # noqa: BLE001  (any reason: the column says it)
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
