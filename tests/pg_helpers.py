"""PostgreSQL for the store tests: one fresh database per session, one schema per test.

`store_url` (params sqlite, postgresql) is what a store test takes to run on both backends: a
SQLite path under tmp_path, or a `postgresql://` URL whose `search_path` is a schema made for the
test (dropped after). The server is $FLOW2PY_TEST_PG (a URL of a database the user may create
databases from), else postgres@127.0.0.1:5432. With no server answering the PostgreSQL cases are
skipped, saying how to get one, except under CI (`CI=true`), where that fails.
"""

from __future__ import annotations

import os
import secrets
from urllib.parse import quote

import pytest

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
NO_SERVER = "no PostgreSQL server at 127.0.0.1:5432; start one or set FLOW2PY_TEST_PG=postgresql://…"


def _with_db(url: str, db: str) -> str:
    base, _, query = url.partition("?")
    head, _, _old = base.rpartition("/")
    return f"{head}/{db}" + (f"?{query}" if query else "")


def with_schema(url: str, schema: str) -> str:
    """The URL of `schema` in the database of `url` (libpq's `options=-csearch_path=…`)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"


@pytest.fixture(scope="session")
def pg_database():
    """A fresh database on the test server for this session (dropped after): its URL."""
    try:
        import psycopg
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("psycopg is not installed (pip install -e '.[test]')")
        pytest.skip("psycopg is not installed (pip install -e '.[test]')")
    server = os.environ.get("FLOW2PY_TEST_PG") or DEFAULT_SERVER
    try:
        admin = psycopg.connect(server, autocommit=True, connect_timeout=3)
    except psycopg.Error as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{NO_SERVER} (CI=true requires one): {str(e).strip().splitlines()[0]}")
        pytest.skip(NO_SERVER)
    name = f"flow2py_test_{secrets.token_hex(4)}"
    admin.execute(f"CREATE DATABASE {name}")
    try:
        yield _with_db(server, name)
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


@pytest.fixture
def pg_store_url(pg_database):
    """A `postgresql://` store URL of a schema made for this test (dropped after)."""
    import psycopg

    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield with_schema(pg_database, schema)
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A store to test on: a SQLite file path, or a PostgreSQL URL (one schema for this test)."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return request.getfixturevalue("pg_store_url")
