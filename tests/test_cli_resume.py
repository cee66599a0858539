"""Resuming a run through the CLI: replies given at once are admitted in the order given; a resume
that cannot proceed (a reply given twice, a hole it needs) is refused and records nothing; calls cut
by a crash are closed Unknown; a call carried across a checkpoint is shown with its Tool
(docs/spec/execution.md "Host operations", trace.md)."""

from __future__ import annotations

import re

import pytest

from tests.history_e2e_helpers import RACE, Cli, ok_reply, project, run_until_paused

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


def test_several_replies_at_once_are_admitted_in_the_order_given_and_replay_matches(cli):
    a, b = run_until_paused(cli)
    r = cli.resume("a", "--reply", ok_reply(b, "B"), "--reply", ok_reply(a, "A"))
    # which step of each race answers first is timing (recorded as a Choice): only the shape is fixed
    assert r.exit_code == 0 and re.fullmatch(r'"s\d+s\d+\|A\|B"', r.stdout.strip()), r.stdout
    replies = [f["id"] for f in cli.facts("a") if f["kind"] == "Reply"][-2:]
    assert replies == [b, a]
    assert cli("replay", "a").stdout.startswith("Matched")


def test_a_reply_given_twice_for_one_call_is_refused_and_nothing_recorded(cli):
    a, _ = run_until_paused(cli)
    before = cli.facts("a")
    r = cli.resume("a", "--reply", ok_reply(a, "x"), "--reply", ok_reply(a, "y"))
    assert r.exit_code == 1 and f"--reply {a}: given more than once" in r.stderr
    assert cli.facts("a") == before


def test_resume_of_a_run_whose_checkpoint_holds_a_hole_is_refused_recording_nothing(cli):
    a, b = run_until_paused(cli)
    facts = cli.facts("a")
    call = next(f for f in facts if f["kind"] == "Call" and f["id"] == a)
    assert cli("redact", "a", "--value", call["values"][0]).exit_code == 0  # also the checkpoint's acc
    r = cli.resume("a", "--reply", ok_reply(a, "A"), "--reply", ok_reply(b, "B"))
    assert r.exit_code == 1
    assert "holds a hole" in r.stderr and "nothing was recorded" in r.stderr
    assert len(cli.facts("a")) == len(facts)
    assert "paused on" in cli("runs").stdout
    assert cli("replay", "a").stdout.startswith("Incomplete: checkpoint")
    assert cli("verify", "a").exit_code == 0


def test_resume_whose_needed_reply_is_a_hole_is_refused_clearly(cli):
    a, b = run_until_paused(cli)
    assert cli.resume("a", "--reply", ok_reply(a, "secret")).exit_code == 3
    reply = cli.facts("a")[-1]
    assert reply["kind"] == "Reply" and cli("redact", "a", "--value", reply["values"][0]).exit_code == 0
    n = len(cli.facts("a"))
    r = cli.resume("a", "--reply", ok_reply(b, "B"))
    assert r.exit_code == 1
    assert f"needs the reply to {a} (svc.ask), which is a hole" in r.stderr
    assert len(cli.facts("a")) == n
    assert cli("replay", "a").stdout.startswith(f"Incomplete: needs the reply to {a}")


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
    assert stop["closed"] == [
        {"call": "root/1#1", "reply": 'Err(Unknown("process ended while the call was out"))'}
    ]
    assert cli("replay", "c").stdout.startswith("Matched")


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
        "Incomplete: needs the reply to root/1#1 (feed.next), which is not recorded"
    )
    assert "archived" in cli("archive", "p").stdout
    r = cli.resume("p")
    assert r.exit_code == 3, r.output + r.stderr
    # the paused report (docs/spec/execution.md "What the command line prints"): the call, then how
    # to answer it; this used to be the two lines alone
    lines = r.stdout.splitlines()
    assert lines[:2] == ["paused: run p waits on 1 open call(s)", "  root/1#1  feed.next()"]
    assert lines[2].split() == ["reply", "type:", "Result<Text,", "Text>"], lines
    assert lines[3].split()[1:5] == ["flow2py", "resume", "p", "--reply"], lines
