"""`flow2py store copy SRC DST` (docs/spec/trace.md "Copying runs between stores"): runs copied
between SQLite and PostgreSQL, either way, keep their stored bytes and chain hashes row by row;
`verify` is intact on both sides, `history` prints the same text and `replay` the same verdict on
DST; a run id DST already holds is refused for that run, never overwritten; `--run` selects."""

from __future__ import annotations

import json
import shutil

import pytest

from flowrt.history.store import Store
from flowrt.history.store_copy import RUN_TABLES, _stream
from tests.history_e2e_helpers import Cli
from tests.repo_paths import SUPPORT_DIR

TICKET = json.dumps({"ticket": "Login fails on Safari"})
BIG = "x" * 50_000  # a reply large enough to be kept as a blob


@pytest.fixture(params=["sqlite->postgresql", "postgresql->sqlite", "sqlite->sqlite"])
def stores(request, tmp_path):
    a, b = request.param.split("->")

    def url(kind, name):
        return str(tmp_path / f"{name}.db") if kind == "sqlite" else request.getfixturevalue("pg_store_url")

    return url(a, "src"), url(b, "dst")


def _open_human_call(cli, run_id):
    facts = cli.facts(run_id)
    answered = {f["id"] for f in facts if f["kind"] == "Reply"}
    return next(
        f["id"] for f in facts if f["kind"] == "Call" and f["tool"] == "human.ask" and f["id"] not in answered
    )


@pytest.fixture
def src(tmp_path, stores):
    """SRC holding the support example paused (p1), completed (c1), and one archived, redacted
    and holding a blob (r1)."""
    d = tmp_path / "support"
    shutil.copytree(SUPPORT_DIR, d)
    cli = Cli(d, stores[0])
    for run_id in ("p1", "c1", "r1"):
        r = cli(
            "run",
            d / "main.flow",
            "--input",
            TICKET,
            "--tools",
            d / "tools.py",
            "--run-id",
            run_id,
            "--checkpoint-every",
            "2",
        )
        assert r.exit_code == 3, r.output + r.stderr
    for run_id, answer in (("c1", "Safari 17.4"), ("r1", BIG)):
        reply = f"{_open_human_call(cli, run_id)}={json.dumps({'Ok': answer})}"
        r = cli("resume", run_id, "--reply", reply, "--tools", d / "tools.py")
        assert r.exit_code == 0, r.output + r.stderr
    assert "archived" in cli("archive", "r1").stdout
    with Store(stores[0]) as s:
        rec = next(r for r in s.history.records("r1", decode=False) if r.kind == "Reply" and r.values)
        assert s.history.redact("r1", rec.values[0]) >= 1
        assert s.file.db.execute("SELECT count(*) FROM blobs").fetchone()[0] >= 1
        assert s.file.db.execute("SELECT count(*) FROM holes").fetchone()[0] >= 1
        assert s.file.db.execute("SELECT count(*) FROM archived_facts").fetchone()[0] >= 1
    return cli


def _rows(url, run_id):
    with Store(url, readonly=True) as s:
        return {
            t: [
                tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
                for rows in _stream(s.file.db, t, c, run_id, 3)
                for r in rows
            ]
            for t, c in RUN_TABLES
        }


def test_copied_runs_keep_bytes_hashes_history_and_verdicts(src, stores):
    s_url, d_url = stores
    r = src("store", "copy", s_url, d_url, store=False)
    assert r.exit_code == 0, r.output + r.stderr
    assert "copied 3 of 3 runs" in r.stdout
    dst = Cli(src.d, d_url)
    for run_id in ("p1", "c1", "r1"):
        assert f"run {run_id}: copied" in r.stdout and "verify intact on both sides" in r.stdout
        a, b = _rows(s_url, run_id), _rows(d_url, run_id)
        assert a == b and a["facts"], run_id  # every run table row by row, facts' bytes and hashes
        for c in (src, dst):
            v = c("verify", run_id)
            assert v.exit_code == 0, v.stdout
        assert src("verify", run_id).stdout == dst("verify", run_id).stdout
        for fmt in ("text", "json"):
            assert (
                src("history", run_id, "--format", fmt).stdout
                == dst("history", run_id, "--format", fmt).stdout
            )
        assert src("replay", run_id).stdout.splitlines()[0] == dst("replay", run_id).stdout.splitlines()[0]
    assert dst("replay", "p1").exit_code == 3  # paused: Incomplete, as on SRC
    assert dst("replay", "c1").stdout.splitlines()[0] == "Matched"
    with Store(d_url, readonly=True) as d:
        assert d.file.db.execute("SELECT count(*) FROM runs WHERE owner IS NOT NULL").fetchone()[0] == 0
    # the copy continues on DST as it would have on SRC
    reply = f"{_open_human_call(dst, 'p1')}={json.dumps({'Ok': 'Safari 17.4'})}"
    r = dst("resume", "p1", "--reply", reply, "--tools", src.d / "tools.py")
    assert r.exit_code == 0, r.output + r.stderr
    assert dst("replay", "p1").stdout.splitlines()[0] == "Matched"


def test_a_run_dst_holds_is_refused_and_the_others_copied(src, stores):
    s_url, d_url = stores
    assert src("store", "copy", s_url, d_url, "--run", "c1", store=False).exit_code == 0
    before = _rows(d_url, "c1")
    r = src("store", "copy", s_url, d_url, store=False)
    assert r.exit_code == 1
    assert "run c1: DST already holds a run of this id; nothing of it written" in r.stderr
    assert "copied 2 of 3 runs" in r.stdout
    assert _rows(d_url, "c1") == before


def test_run_selects_and_an_unknown_run_is_refused_whole(src, stores):
    s_url, d_url = stores
    r = src("store", "copy", s_url, d_url, "--run", "p1", "--run", "nope", store=False)
    assert r.exit_code == 1 and "SRC holds no run nope; nothing was copied" in r.stderr
    r = src("store", "copy", s_url, d_url, "--run", "r1", store=False)
    assert r.exit_code == 0 and "copied 1 of 1 runs" in r.stdout
    with Store(d_url, readonly=True) as d:
        assert [x[0] for x in d.file.db.execute("SELECT id FROM runs").fetchall()] == ["r1"]


def test_bad_stores_are_refused_in_one_line(tmp_path, src, stores):
    s_url, _ = stores
    missing = tmp_path / "nowhere.db"
    r = src("store", "copy", missing, tmp_path / "d.db", store=False)
    assert r.exit_code == 1 and "no such store" in r.stderr and len(r.stderr.splitlines()) == 1
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    r = src("store", "copy", s_url, junk, store=False)
    assert r.exit_code == 1 and len(r.stderr.splitlines()) == 1
    r = src("store", "copy", s_url, "postgresql://nobody@127.0.0.1:1/none", store=False)
    assert r.exit_code == 1 and "cannot connect" in r.stderr and len(r.stderr.splitlines()) == 1
