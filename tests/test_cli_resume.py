"""Operator audit of the host operations on history: refusals record nothing, verdicts are right,
messages say what and where (docs/spec/execution.md "Host operations", trace.md)."""
from __future__ import annotations

import json
import re
import sqlite3
import threading

import pytest

from flowrt import trace as T
from flowrt.store import Store
from tests.history_e2e_helpers import Cli, project

RACE = """\
use "std@v1/task"
use "./svc"

pub flow main(ticket: Text) -> Text !tool = work(ticket, "", 1)

flow work(ticket: Text, acc: Text, round: Int) -> Text !tool = if round > 2 {
    finish(acc)
} else {
    match task.race([flow() = svc.step(round), flow() = svc.step(round + 10)]) {
        Ok(s) => work(ticket, acc ++ s, round + 1),
        Err(_) => "step failed",
    }
}

flow finish(acc: Text) -> Text !tool = {
    let a = task.spawn(flow() = svc.ask(acc))
    let b = task.spawn(flow() = svc.ask(acc ++ "2"))
    match (task.await(a), task.await(b)) {
        (Ok(x), Ok(y)) => acc ++ "|" ++ x ++ "|" ++ y,
        _ => acc ++ "|no answer",
    }
}
"""

# The root and a background task each wait on an `ask` call (left pending).
CUT = """\
use "std@v1/task"
use "./svc"

pub flow main(ticket: Text) -> Text !tool = {
    let t = task.spawn(flow() = svc.ask("background"))
    match svc.ask(ticket) {
        Ok(a) => {
            let _ = task.stop(t)
            a
        },
        Err(_) => "no",
    }
}
"""


@pytest.fixture
def cli(tmp_path):
    return Cli(project(tmp_path, RACE))


def _paused(cli, run_id="a"):
    r = cli.run(run_id, '{"ticket": "t"}', "--checkpoint-every", "1")
    assert r.exit_code == 3, r.stdout + r.stderr
    return [line.split()[0] for line in r.stdout.splitlines()[1:]]


def _reply(call, text):
    return f'{call}={{"Ok": "{text}"}}'


def test_several_replies_at_once_are_admitted_in_the_order_given_and_replay_matches(cli):
    a, b = _paused(cli)
    r = cli.resume("a", "--reply", _reply(b, "B"), "--reply", _reply(a, "A"))
    # which step of each race answers first is timing (recorded as a Choice): only the shape is fixed
    assert r.exit_code == 0 and re.fullmatch(r'"s\d+s\d+\|A\|B"', r.stdout.strip()), r.stdout
    replies = [f["id"] for f in cli.facts("a") if f["kind"] == "Reply"][-2:]
    assert replies == [b, a]
    assert cli("replay", "a").stdout.startswith("Matched")


def test_a_reply_given_twice_for_one_call_is_refused_and_nothing_recorded(cli):
    a, _ = _paused(cli)
    before = cli.facts("a")
    r = cli.resume("a", "--reply", _reply(a, "x"), "--reply", _reply(a, "y"))
    assert r.exit_code == 1 and f"--reply {a}: given more than once" in r.stderr
    assert cli.facts("a") == before


def test_resume_of_a_run_whose_checkpoint_holds_a_hole_is_refused_recording_nothing(cli):
    a, b = _paused(cli)
    facts = cli.facts("a")
    call = next(f for f in facts if f["kind"] == "Call" and f["id"] == a)
    assert cli("redact", "a", "--value", call["values"][0]).exit_code == 0  # also the checkpoint's acc
    r = cli.resume("a", "--reply", _reply(a, "A"), "--reply", _reply(b, "B"))
    assert r.exit_code == 1
    assert "holds a hole" in r.stderr and "nothing was recorded" in r.stderr
    assert len(cli.facts("a")) == len(facts)
    assert "paused on" in cli("runs").stdout
    assert cli("replay", "a").stdout.startswith("Incomplete: checkpoint")
    assert cli("verify", "a").exit_code == 0


def test_resume_whose_needed_reply_is_a_hole_is_refused_clearly(cli):
    a, b = _paused(cli)
    assert cli.resume("a", "--reply", _reply(a, "secret")).exit_code == 3
    reply = cli.facts("a")[-1]
    assert reply["kind"] == "Reply" and cli("redact", "a", "--value", reply["values"][0]).exit_code == 0
    n = len(cli.facts("a"))
    r = cli.resume("a", "--reply", _reply(b, "B"))
    assert r.exit_code == 1
    assert f"needs the reply to {a} (svc.ask), which is a hole" in r.stderr
    assert len(cli.facts("a")) == n
    assert cli("replay", "a").stdout.startswith(f"Incomplete: needs the reply to {a}")


def test_every_call_cut_by_a_crash_is_closed_unknown_a_stopped_tasks_by_its_stop(tmp_path):
    cli = Cli(project(tmp_path, CUT))
    r = cli.run("c", '{"ticket": "t"}', tools="tools.py")  # `ask` answers pending: paused
    assert r.exit_code == 3
    with cli.db() as db:
        db.execute("DELETE FROM parked_calls")  # as if the process had died instead
    r = cli.resume("c")
    assert r.exit_code == 0, r.stderr
    kinds = [(f["kind"], f.get("id") or f.get("task")) for f in cli.facts("c")]
    assert ("Reply", "root#1") in kinds
    assert ("Reply", "root/1#1") not in kinds  # its task is stopped before it is admitted:
    stop = next(f for f in cli.facts("c") if f["kind"] == "Stop")  # the Stop records its Unknown
    assert stop["closed"] == [{"call": "root/1#1", "reply": 'Err(Unknown("process ended while the call was out"))'}]
    assert cli("replay", "c").stdout.startswith("Matched")


def test_fork_at_every_checkpoint_and_of_a_fork_replays(cli):
    a, b = _paused(cli)
    assert cli.resume("a", "--reply", _reply(a, "A"), "--reply", _reply(b, "B")).exit_code == 0
    cps = [f["checkpoint"] for f in cli.facts("a") if f["kind"] == "Checkpoint"]
    assert cps == [1, 2]
    for n in cps:
        r = cli("fork", "a", "--checkpoint", n, "--tools", cli.d / "tools.py", "--run-id", f"f{n}",
                "--checkpoint-every", "1")
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


def test_verify_refuses_a_head_that_is_not_a_hash_and_accepts_an_earlier_fact(cli):
    _paused(cli)
    facts = cli.facts("a")
    r = cli("verify", "a", "--head", "zz")
    assert r.exit_code == 1 and "not a head hash" in r.stderr
    r = cli("verify", "a", "--head", facts[4]["hash"])
    assert r.exit_code == 0 and "intact up to the given head (fact 5)" in r.stdout
    r = cli("verify", "a", "--head", "ab" * 32)
    assert r.exit_code == 6 and "not in this history" in r.stdout


def test_archive_twice_and_without_a_checkpoint_say_what_happened(cli):
    _paused(cli)
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


def test_reading_a_store_is_not_held_up_and_a_write_lock_is_explained(cli, monkeypatch):
    _paused(cli)
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
                f = T.decode_fact(data, store._blob)
                other = "root/2" if f.picked == "root/1" else "root/1"
                data = T.encode_fact(T.Choice(f.task, other)).data
                db.execute("UPDATE facts SET data=? WHERE run='a' AND n=?", (data, k))
            prev = T.fact_hash(prev, data)
            db.execute("UPDATE facts SET hash=? WHERE run='a' AND n=?", (prev, k))
        db.execute("UPDATE runs SET head=? WHERE id='a'", (prev,))
    store.close()
    r = cli("replay", "a")
    assert r.exit_code == 5 and r.stdout.startswith(f"Diverged at fact {choice['n']}:")


def test_a_parked_tasks_call_carried_across_a_checkpoint_is_shown_with_its_tool_and_arguments(tmp_path):
    from pathlib import Path

    golden = Path(__file__).parent.parent / "golden" / "history" / "parked"
    for name in ("main.flow", "feed.flow", "tools.py"):
        (tmp_path / name).write_text((golden / name).read_text())
    cli = Cli(tmp_path)
    r = cli.run("p", "{}", "--checkpoint-every", "1")
    assert r.exit_code == 3 and "  root/1#1  feed.next()" in r.stdout.splitlines()
    assert any(f["kind"] == "Checkpoint" for f in cli.facts("p"))
    # from the latest checkpoint, the call's Call fact is before it (and archived, then)
    assert cli("replay", "p").stdout.splitlines()[0] == (
        "Incomplete: needs the reply to root/1#1 (feed.next), which is not recorded")
    assert "archived" in cli("archive", "p").stdout
    r = cli.resume("p")
    assert r.exit_code == 3, r.output + r.stderr
    assert r.stdout.splitlines() == ["paused: run p waits on 1 open call(s)", "  root/1#1  feed.next()"]


def test_replay_of_a_run_whose_input_is_redacted_is_incomplete_and_resume_is_refused(tmp_path):
    cli = Cli(project(tmp_path))  # the loop: three steps, then a question left pending
    assert cli.run("h", '{"ticket": "secret"}').exit_code == 3
    start = cli.facts("h")[0]
    assert cli("redact", "h", "--value", start["values"][0]).exit_code == 0
    r = cli("replay", "h")
    assert r.exit_code == 3, r.output + r.stderr
    assert r.stdout.splitlines()[0] == "Incomplete: the run's input holds a hole"
    n = len(cli.facts("h"))
    r = cli.resume("h", "--reply", 'root#4={"Ok": "a"}')
    assert r.exit_code == 1 and "internal error" not in r.stderr
    assert "Incomplete: the run's input holds a hole" in r.stderr and "nothing was recorded" in r.stderr
    assert len(cli.facts("h")) == n
