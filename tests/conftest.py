"""Fixtures every test file may use: the store backends (tests/pg_helpers.py)."""

from pg_helpers import pg_database, pg_store_url, store_url  # noqa: F401  (fixtures)
