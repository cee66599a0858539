"""Forking a run through the CLI at each of its checkpoints (and forking a fork), and replay naming
the fact where a tampered history diverges (docs/spec/execution.md "Host operations", trace.md)."""

from __future__ import annotations

import pytest

from flowrt.history import trace as T
from flowrt.history.store import Store
from tests.history_e2e_helpers import RACE, Cli, ok_reply, project, run_until_paused


@pytest.fixture
def cli(tmp_path):
    return Cli(project(tmp_path, RACE))


def test_fork_at_every_checkpoint_and_of_a_fork_replays(cli):
    a, b = run_until_paused(cli)
    assert cli.resume("a", "--reply", ok_reply(a, "A"), "--reply", ok_reply(b, "B")).exit_code == 0
    cps = [f["checkpoint"] for f in cli.facts("a") if f["kind"] == "Checkpoint"]
    assert cps == [1, 2]
    for n in cps:
        r = cli(
            "fork",
            "a",
            "--checkpoint",
            n,
            "--tools",
            cli.d / "tools.py",
            "--run-id",
            f"f{n}",
            "--checkpoint-every",
            "1",
        )
        assert r.exit_code == 3, r.stderr
        start = cli.facts(f"f{n}")[0]
        assert (start["parent"], start["from_checkpoint"]) == ("a", n)
        assert cli("replay", f"f{n}").exit_code == 3
    r = cli("fork", "f1", "--checkpoint", 1, "--tools", cli.d / "tools.py", "--run-id", "ff")
    assert r.exit_code == 3 and cli.facts("ff")[0]["parent"] == "f1"
    r = cli("fork", "a", "--checkpoint", 3, "--tools", cli.d / "tools.py")
    assert r.exit_code == 1 and "has no checkpoint 3" in r.stderr
    assert cli("replay", "a").stdout.startswith("Matched")
    assert "ff  paused on" in cli("runs").stdout


def test_tampered_choice_diverges_naming_the_fact(cli):
    assert cli.run("a").exit_code == 3  # no checkpoints: replay starts at Start
    facts = cli.facts("a")
    choice = next(f for f in facts if f["kind"] == "Choice")
    store = Store(cli.store)
    with cli.db() as db:
        rows = db.execute("SELECT n, data FROM facts WHERE run='a' ORDER BY n").fetchall()
        prev = T.ZERO_HASH
        for k, data in rows:
            if k == choice["n"]:
                f = T.decode_fact(data, store.history.blob)
                other = "root/2" if f.picked == "root/1" else "root/1"
                data = T.encode_fact(T.Choice(f.task, other)).data
                db.execute("UPDATE facts SET data=? WHERE run='a' AND n=?", (data, k))
            prev = T.fact_hash(prev, data)
            db.execute("UPDATE facts SET hash=? WHERE run='a' AND n=?", (prev, k))
        db.execute("UPDATE runs SET head=? WHERE id='a'", (prev,))
    store.close()
    r = cli("replay", "a")
    assert r.exit_code == 5 and r.stdout.startswith(f"Diverged at fact {choice['n']}:")
