"""The CLI's store commands (verify, archive, runs, history) say what happened: a bad head or a
missing store is refused creating nothing, a second archive has nothing new, readers are not held
up by a writer and a write lock is explained, and the HTML history escapes hostile text
(docs/spec/execution.md "Host operations", trace.md)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.history_e2e_helpers import RACE, Cli, project, run_until_paused


@pytest.fixture
def cli(tmp_path, store_url):
    return Cli(project(tmp_path, RACE), store_url)


def test_verify_refuses_a_head_that_is_not_a_hash_and_accepts_an_earlier_fact(cli):
    run_until_paused(cli)
    facts = cli.facts("a")
    r = cli("verify", "a", "--head", "zz")
    assert r.exit_code == 1 and "not a head hash" in r.stderr
    r = cli("verify", "a", "--head", facts[4]["hash"])
    assert r.exit_code == 0 and "intact up to the given head (fact 5)" in r.stdout
    r = cli("verify", "a", "--head", "ab" * 32)
    assert r.exit_code == 6 and "not in this history" in r.stdout


def test_archive_twice_and_without_a_checkpoint_say_what_happened(cli):
    run_until_paused(cli)
    assert "archived" in cli("archive", "a").stdout
    again = cli("archive", "a")
    assert again.exit_code == 0 and "nothing new to archive" in again.stdout
    assert cli.run("n").exit_code == 3  # no --checkpoint-every: no checkpoint
    r = cli("archive", "n")
    assert r.exit_code == 0 and "has no checkpoint; nothing archived" in r.stdout
    r = cli("fork", "a", "--checkpoint", 2, "--tools", cli.d / "tools.py", "--run-id", "af")
    assert r.exit_code == 3
    assert cli("verify", "a").exit_code == 0 and cli("replay", "a").exit_code == 3


def test_commands_on_a_store_that_does_not_exist_refuse_and_create_nothing(tmp_path):
    cli = Cli(project(tmp_path, RACE))
    missing = tmp_path / "nowhere" / "runs.db"
    for args in (("runs",), ("history", "a"), ("replay", "a"), ("verify", "a"), ("archive", "a")):
        r = cli(*args, "--store", missing, store=False)
        assert r.exit_code == 1 and "no such store" in r.stderr, args
    assert not (tmp_path / "nowhere").exists()


@pytest.fixture
def sqlite_cli(tmp_path):
    return Cli(project(tmp_path, RACE))


def test_reading_a_store_is_not_held_up_and_a_write_lock_is_explained(sqlite_cli, monkeypatch):
    cli = sqlite_cli  # SQLite's file lock (PostgreSQL's readers take no lock: test_store_pg.py)
    run_until_paused(cli)
    holder = sqlite3.connect(cli.store, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE runs SET meta=meta")
    try:
        assert "a  paused on" in cli("runs").stdout  # readers do not wait for the writer
        assert cli("verify", "a").exit_code == 0
        real = sqlite3.connect

        def quick(*a, **kw):
            kw["timeout"] = 0.2
            return real(*a, **kw)

        monkeypatch.setattr(sqlite3, "connect", quick)
        r = cli("archive", "a")
        assert r.exit_code == 1 and "locked by another process" in r.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_html_history_escapes_hostile_text(cli):
    r = cli.run("h", json.dumps({"ticket": "</script><b>\"q\" & 'x'"}))
    assert r.exit_code == 3
    page = cli("history", "h", "--format", "html").stdout
    assert "</script>" not in page and "<b>" not in page
    assert "&lt;/script&gt;&lt;b&gt;" in page
