"""The store on PostgreSQL beside SQLite: the same run holds the same fact bytes, chain hashes,
blobs, sources and host records on both; the schema version in store_meta; two writers of one
run never both append; a PostgreSQL store that cannot be reached, or a Python without psycopg,
is refused in one line (docs/spec/trace.md "Store", "PostgreSQL")."""

from __future__ import annotations

import builtins
import shutil
import threading

import pytest

import flowrt as rt
from flowrt.data.facts import Call, Reply, Start
from flowrt.history.store import HistoryConflict, Store, StoreError, StoreRecorder, UnsupportedSchemaVersion
from tests.history_e2e_helpers import Cli
from tests.repo_paths import SUPPORT_DIR


def _support_run(d, store):
    """The support example with its tools, paused on human.ask, then resumed to completion."""
    if not d.exists():
        shutil.copytree(SUPPORT_DIR, d)
    cli = Cli(d, store)
    r = cli(
        "run",
        d / "main.flow",
        "--input",
        '{"ticket": "Login fails"}',
        "--tools",
        d / "tools.py",
        "--run-id",
        "t1",
        "--checkpoint-every",
        "1",
    )
    assert r.exit_code == 3, r.output + r.stderr  # paused on human.ask
    ask = next(f for f in reversed(cli.facts("t1")) if f["kind"] == "Call" and f["tool"] == "human.ask")
    r = cli("resume", "t1", "--reply", f'{ask["id"]}={{"Ok": "Safari 17"}}', "--tools", d / "tools.py")
    assert r.exit_code == 0, r.output + r.stderr
    for command in (("verify", "t1"), ("replay", "t1")):
        r = cli(*command)
        assert r.exit_code == 0, r.output + r.stderr
    return cli


def _rows(url):
    with Store(url, readonly=True) as s:
        q = s.file.db.execute
        return {
            "facts": [
                tuple(map(_b, r))
                for r in q("SELECT n, kind, data, hash FROM facts WHERE run='t1' ORDER BY n")
            ],
            "run": tuple(
                map(
                    _b,
                    q(
                        "SELECT n, head, state, program, std, data_version, latest_checkpoint FROM runs WHERE id='t1'"
                    ).fetchone(),
                )
            ),
            "sources": [
                tuple(map(_b, r))
                for r in q("SELECT module, hash FROM run_sources WHERE run='t1' ORDER BY module")
            ],
            "texts": sorted(tuple(map(_b, r)) for r in q("SELECT hash, text FROM sources")),
            "blobs": sorted(tuple(map(_b, r)) for r in q("SELECT hash, data FROM blobs")),
            "open": [
                tuple(r) for r in q("SELECT call, tool_id, n FROM open_calls WHERE run='t1' ORDER BY call")
            ],
            "bindings": sorted(
                # a --tools file is loaded under a fresh module name each time: compare the functions
                (t, i.rsplit(".", 1)[-1])
                for t, i in q("SELECT tool_id, implementation FROM bindings WHERE run='t1'")
            ),
        }


def _b(v):
    return bytes(v) if isinstance(v, (bytes, memoryview)) else v


def test_the_same_run_holds_the_same_bytes_and_hashes_on_sqlite_and_postgresql(tmp_path, pg_store_url):
    lite = _support_run(tmp_path / "p", str(tmp_path / "lite.db"))
    pg = _support_run(tmp_path / "p", pg_store_url)
    a, b = _rows(lite.store), _rows(pg.store)
    assert len(a["facts"]) > 10 and a["facts"][-1][1] == b["facts"][-1][1]
    for key in a:
        assert a[key] == b[key], key
    assert [f["hash"] for f in lite.facts("t1")] == [f["hash"] for f in pg.facts("t1")]
    for fmt in ("text", "json"):
        assert lite("history", "t1", "--format", fmt).stdout == pg("history", "t1", "--format", fmt).stdout
    page = pg("history", "t1", "--format", "html")  # (it shows when the run was created: not compared)
    assert page.exit_code == 0 and page.stdout.startswith("<!DOCTYPE html>")
    # the rest of the commands on the PostgreSQL store
    assert pg("runs").exit_code == 0 and "t1" in pg("runs").stdout
    r = pg("fork", "t1", "--checkpoint", "1", "--tools", pg.d / "tools.py", "--run-id", "f1")
    assert r.exit_code == 3, r.output + r.stderr
    assert pg("archive", "t1").exit_code == 0 and pg("verify", "t1").exit_code == 0
    assert pg("replay", "f1").exit_code == 3 and pg("verify", "f1").exit_code == 0


def test_a_store_records_its_schema_version_and_an_older_store_gets_it_from_its_first_writer(store_url):
    with Store(store_url) as s:
        assert s.file.db.execute("SELECT value FROM store_meta WHERE key='schema_version'").fetchone() == (
            "1",
        )
        s.file.db.execute("DELETE FROM store_meta WHERE key='schema_version'")  # as made before the key
    with Store(store_url, readonly=True) as s:  # a reader reads it as version 1 and writes nothing
        assert s.file.db.execute("SELECT value FROM store_meta WHERE key='schema_version'").fetchone() is None
    with Store(store_url) as s:
        assert s.file.db.execute("SELECT value FROM store_meta WHERE key='schema_version'").fetchone() == (
            "1",
        )


def test_a_store_of_a_newer_schema_version_is_refused_whole(store_url):
    with Store(store_url) as s:
        s.history.create_run("r1", Start("ab" * 32, "std@v1", 1, "main", (), ()), {})
        s.file.db.execute("UPDATE store_meta SET value='99' WHERE key='schema_version'")
    for readonly in (False, True):
        with pytest.raises(
            UnsupportedSchemaVersion, match="has schema version 99; this flowrt knows versions 1 to 1"
        ):
            Store(store_url, readonly=readonly)


def test_two_writers_holding_the_same_lease_and_head_never_both_append(store_url):
    """The guarded head update: of two commits from the same head, exactly one lands."""
    with Store(store_url) as s:
        s.history.create_run("r1", Start("ab" * 32, "std@v1", 1, "main", (), ()), {})
    stores = [Store(store_url), Store(store_url)]
    try:
        a = StoreRecorder(stores[0], "r1")
        stores[0].file.db.execute("UPDATE runs SET owner=NULL WHERE id='r1'")  # as if a's lease expired
        b = StoreRecorder(stores[1], "r1")
        a.owner = b.owner  # and a still believed it held it
        outcomes = []
        gate = threading.Barrier(2)

        def write(rec, who):
            rec.record(Call(f"root#{who}", "a.b", "a::b", (who,)))
            gate.wait()
            try:
                rec.sync()
                outcomes.append("appended")
            except HistoryConflict:
                outcomes.append("refused")

        threads = [threading.Thread(target=write, args=(r, i)) for i, r in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["appended", "refused"]
        with Store(store_url) as s:
            assert s.history.verify("r1")[0] and s.host_records.load_run("r1").facts == 2
    finally:
        for s in stores:
            s.close()


def test_an_unreachable_postgresql_store_is_refused_in_one_line(tmp_path):
    cli = Cli(tmp_path, "postgresql://postgres@127.0.0.1:1/nowhere")
    for args in (("runs",), ("verify", "r1"), ("history", "r1"), ("cancel", "r1")):
        r = cli(*args)
        assert r.exit_code == 1, (args, r.output)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot connect to PostgreSQL" in lines[0], (args, r.stderr)


def test_a_postgresql_url_without_psycopg_is_refused_naming_the_extra(tmp_path, monkeypatch):
    real = builtins.__import__

    def no_psycopg(name, *a, **kw):
        if name.split(".")[0] in ("psycopg", "psycopg_pool"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    with pytest.raises(StoreError, match=r"lacks psycopg: pip install 'flow2py\[pg\]'"):
        Store("postgres://someone@db.example/flow")
    r = Cli(tmp_path, "postgresql://u:secret@db.example/flow")("runs")
    assert r.exit_code == 1 and "flow2py[pg]" in r.stderr and "secret" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_reply_is_recorded_through_the_store_on_both_backends(store_url):
    with Store(store_url) as s:
        s.history.create_run("r1", Start("ab" * 32, "std@v1", 1, "main", (), ()), {})
        with StoreRecorder(s, "r1") as rec:
            rec.record(Call("root#1", "a.b", "a::b", ()))
            rec.sync()
        assert s.host_records.load_run("r1").state == "paused"
        s.history.record_reply("r1", "root#1", rt.Ok("x"))
        assert [r.kind for r in s.history.records("r1")] == ["Start", "Call", "Reply"]
        assert s.history.records("r1")[-1].fact == Reply("root#1", rt.Ok("x"))
