"""A crash while a call is out, resending, and two resumes at once: real processes, killed."""

from __future__ import annotations

import os
import signal
import sqlite3

from history_e2e_helpers import CRASH, Cli, calls, flow2py_process, project, wait_for

REASON = "process ended while the call was out"


def _parked(d, run_id):
    try:
        with sqlite3.connect(d / "runs.db") as db:
            return {r[0] for r in db.execute("SELECT call FROM parked_calls WHERE run=?", (run_id,))}
    except sqlite3.Error:
        return set()


def _crash(tmp_path, run_id):
    """Start a run whose slow call blocks while its question is pending; SIGKILL it mid-call."""
    d = project(tmp_path, CRASH)
    (d / "block.flag").write_text("60")
    p = flow2py_process(
        d,
        "run",
        "main.flow",
        "--input",
        '{"q": "why"}',
        "--tools",
        "tools.py",
        "--store",
        "runs.db",
        "--run-id",
        run_id,
    )
    wait_for(
        lambda: (d / "slow.marker").exists() and "root/1#1" in _parked(d, run_id),
        what="the slow call to be out and the question parked",
    )
    cli = Cli(d)
    running = cli("runs").stdout
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    (d / "block.flag").unlink()
    return d, cli, running


def test_crash_closes_the_cut_call_as_unknown_and_keeps_the_pending_one_open(tmp_path):
    d, cli, running = _crash(tmp_path, "c1")
    assert "c1  running (process" in running
    assert "c1  halted with root#1, root/1#1 open" in cli("runs").stdout
    before = cli.facts("c1")
    assert [f["kind"] for f in before] == ["Start", "Call", "Call"]

    r = cli.resume("c1")
    assert r.exit_code == 3, r.output + r.stderr  # continues, then waits on the question
    assert "root/1#1  svc.ask" in r.stdout
    after = cli.facts("c1")
    assert after[: len(before)] == before  # nothing recorded before the crash is lost or changed
    assert after[3] == {**after[3], "kind": "Reply", "id": "root#1", "reply": f'Err(Unknown("{REASON}"))'}
    assert calls(d, "slow") == 1  # never sent again by default

    r = cli.resume("c1", "--reply", 'root/1#1={"Ok": "yes"}')
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f'"unknown: {REASON} + yes"'
    assert cli("replay", "c1").stdout.splitlines()[0] == "Matched"
    assert calls(d, "slow") == 1 and calls(d, "ask") == 1


def test_resend_sends_the_cut_call_again_under_the_same_id(tmp_path):
    d, cli, _ = _crash(tmp_path, "c2")
    before = cli.facts("c2")
    r = cli.resume("c2", "--resend", "root#9")  # not an open call: refused, nothing recorded
    assert r.exit_code == 1 and "no open call root#9" in r.stderr
    assert cli.facts("c2") == before

    r = cli.resume("c2", "--resend", "root#1")
    assert r.exit_code == 3, r.output + r.stderr
    assert calls(d, "slow") == 2
    facts = cli.facts("c2")
    slow = [f for f in facts if f.get("id") == "root#1"]
    assert [(f["kind"], f.get("reply")) for f in slow] == [("Call", None), ("Reply", 'Ok("fast")')]
    r = cli.resume("c2", "--reply", 'root/1#1={"Ok": "yes"}')
    assert r.stdout.strip() == '"fast + yes"'


ASK_THEN_SLOW = """\
use "./svc"

pub flow main(q: Text) -> Text !tool = match svc.ask(q) {
    Ok(a) => match svc.slow(a) { Ok(s) => a ++ s, Err(_) => "error" },
    Err(_) => "no answer",
}
"""


def test_two_resumes_at_once_one_wins_the_other_is_refused(tmp_path):
    d = project(tmp_path, ASK_THEN_SLOW)
    cli = Cli(d)
    assert cli.run("r", '{"q": "why"}').exit_code == 3  # paused on root#1
    (d / "block.flag").write_text("hold")  # the winner's slow call holds the run until released
    args = ("resume", "r", "--reply", 'root#1={"Ok": "a"}', "--tools", "tools.py", "--store", "runs.db")
    ps = [flow2py_process(d, *args) for _ in range(2)]
    # the winner cannot finish while the flag stands, so the other one meets a run in progress,
    # however late it starts; once it has been refused, release the winner
    wait_for(lambda: any(p.poll() is not None for p in ps), what="one resume to be refused")
    (d / "block.flag").unlink()
    results = sorted((p.wait(), *p.communicate()) for p in ps)
    (ok, out, _), (refused, _, err) = results
    assert (ok, refused) == (0, 1), results
    assert out.strip() == '"afast"'
    assert err.startswith("flow2py: ") and len(err.strip().splitlines()) == 1
    assert any(w in err for w in ("another process", "only one process", "changed while")), err
    assert "Traceback" not in err
    replies = [f for f in cli.facts("r") if f["kind"] == "Reply" and f["id"] == "root#1"]
    assert len(replies) == 1 and calls(d, "slow") == 1


# A child that runs `flow2py ...` and dies (os._exit, as a SIGKILL would: no cleanup, lease kept)
# the moment its recorder is handed the Call with id DIE_AT_CALL, before that Call is recorded:
# the store is left exactly as a kill at that point leaves it, with no timing involved.
_DIE_AT_CALL = """\
import os, sys
from flowrt.data.facts import Call
from flowrt.history.store import SqliteRecorder
_record = SqliteRecorder.record
def record(self, fact):
    if type(fact) is Call and fact.id == os.environ["DIE_AT_CALL"]:
        os._exit(137)
    _record(self, fact)
SqliteRecorder.record = record
from flow2py.cli import main
main(sys.argv[1:], prog_name="flow2py")
"""


def _killed_before_call(d, call_id, *args):
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-c", _DIE_AT_CALL, *map(str, args)],
        cwd=d,
        text=True,
        capture_output=True,
        env={**os.environ, "DIE_AT_CALL": call_id},
    )
    assert p.returncode == 137, p.stdout + p.stderr


# The root's slow call is out while a spawned task makes a quick call, then (on its reply) asks.
STEP_THEN_ASK = (
    CRASH.replace("task.spawn(flow() = svc.ask(q))", "task.spawn(flow() = step_then_ask(q))")
    + """
flow step_then_ask(q: Text) -> Result<Text, ToolProblem<Text>> !tool = match svc.step(1) {
    Ok(s) => svc.ask(q ++ s),
    Err(_) => svc.ask(q),
}
"""
)


def test_a_call_cut_while_the_program_went_on_to_another_call_is_closed_unknown_on_the_first_resume(tmp_path):
    # The root's slow call is out (its Call durable), the spawned task's quick call has answered
    # (its Reply committed), and the process dies as the task is about to make its next call:
    # the program had more to do before it would wait again.
    d = project(tmp_path, STEP_THEN_ASK)
    (d / "block.flag").write_text("60")  # the slow call stays out until the kill
    _killed_before_call(
        d,
        "root/1#2",
        "run",
        "main.flow",
        "--input",
        '{"q": "why"}',
        "--tools",
        "tools.py",
        "--store",
        "runs.db",
        "--run-id",
        "k",
    )
    (d / "block.flag").unlink()
    cli = Cli(d)
    assert "k  halted with root#1 open (the process ended)" in cli("runs").stdout
    before = cli.facts("k")
    # the Reply admitted before the kill survived it, though no commit came after it
    assert [(f["kind"], f.get("id")) for f in before] == [
        ("Start", None),
        ("Call", "root#1"),
        ("Call", "root/1#1"),
        ("Reply", "root/1#1"),
    ]
    sent = calls(d, "slow")  # 0 or 1: the worker may or may not have started it before the kill

    r = cli.resume("k")
    assert r.exit_code == 3, r.output + r.stderr
    after = cli.facts("k")
    assert after[:4] == before
    # the task's next call is made (and answers pending), then the cut call is closed Unknown first
    assert [(f["kind"], f.get("id"), f.get("reply")) for f in after[4:]] == [
        ("Call", "root/1#2", None),
        ("Reply", "root#1", f'Err(Unknown("{REASON}"))'),
    ]
    assert "root#1" not in r.stdout and "root/1#2  svc.ask" in r.stdout  # waits on the question only
    assert "k  paused on root/1#2" in cli("runs").stdout
    assert calls(d, "slow") == sent  # the cut call is never sent again by itself
    assert calls(d, "step") == 1  # answered before the kill: served from history on resume

    r = cli.resume("k", "--reply", 'root/1#2={"Ok": "yes"}')
    assert r.exit_code == 0, r.output + r.stderr
    assert r.stdout.strip() == f'"unknown: {REASON} + yes"'
    assert cli("replay", "k").stdout.splitlines()[0] == "Matched"


def test_a_pending_call_sent_again_and_cut_by_a_crash_is_closed_unknown(tmp_path):
    # `ask` answers pending (the call is parked); resent, its implementation kills the process
    # while it is out: it is now a call in flight like any other, so the next resume closes it.
    d = project(tmp_path, CRASH)
    tools = (
        (d / "tools.py")
        .read_text()
        .replace(
            '    _count("ask")\n',
            '    _count("ask")\n    if os.path.exists(os.path.join(HERE, "die.flag")):\n'
            "        os._exit(137)\n",
        )
    )
    (d / "tools.py").write_text(tools)
    cli = Cli(d)
    assert cli.run("p", '{"q": "why"}').exit_code == 3
    assert "p  paused on root/1#1" in cli("runs").stdout
    (d / "die.flag").write_text("")
    p = flow2py_process(d, "resume", "p", "--resend", "root/1#1", "--tools", "tools.py", "--store", "runs.db")
    assert p.wait() == 137, p.communicate()
    (d / "die.flag").unlink()
    assert calls(d, "ask") == 2
    assert "p  halted with root/1#1 open (the process ended)" in cli("runs").stdout

    r = cli.resume("p")
    assert r.exit_code == 0, r.output + r.stderr
    assert r.stdout.strip() == '"fast + no answer"'
    assert cli.facts("p")[-2] == {
        **cli.facts("p")[-2],
        "kind": "Reply",
        "id": "root/1#1",
        "reply": f'Err(Unknown("{REASON}"))',
    }
    assert calls(d, "ask") == 2 and cli("replay", "p").stdout.startswith("Matched")
