"""Forks rebuild, never decode (seed 000, "Forks"): a checkpoint's opaque values, host tokens and
parked tasks come back as the program made them, still checked against the fork's parameter
types; a fork may start from any checkpoint (docs/spec/execution.md, "Host operations": Fork)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from history_e2e_helpers import Cli, calls, project

MONEY = """\
pub opaque type Money { Cents(Int) }

pub flow cents(n: Int) -> Money = Cents(n)

pub flow add(a: Money, b: Money) -> Money = match (a, b) {
    (Cents(x), Cents(y)) => Cents(x + y),
}

pub flow text(m: Money) -> Text = match m {
    Cents(x) => "$" ++ x.to_text(),
}
"""

LOOP = """\
use "./money"
use "./svc"

pub flow main(n: Int) -> Text !tool = loop(money.cents(250), n)

flow loop(total: money.Money, n: Int) -> Text !tool = if n == 0 {
    money.text(total)
} else {
    match svc.step(n) {
        Ok(s) => loop(money.add(total, money.cents(s.length())), n - 1),
        Err(_) => "failed",
    }
}
"""

# A background question (pending) carried from round to round: every checkpoint holds it parked.
ROUNDS = """\
use "std@v1/task"
use "./svc"

pub flow main(q: Text) -> Text !tool = {
    let t = task.spawn(flow() = svc.ask(q))
    rounds(t, 1)
}

flow rounds(t: task.Task<Result<Text, ToolProblem<Text>>>, n: Int) -> Text !tool = if n > 3 {
    match task.await(t) {
        Ok(a) => "answer " ++ a,
        Err(_) => "no answer",
    }
} else {
    match svc.step(n) {
        Ok(_) => rounds(t, n + 1),
        Err(_) => "step failed",
    }
}
"""


def _cli(tmp_path, main, sub=""):
    d = project(tmp_path, main, sub=sub)
    (d / "money.flow").write_text(MONEY)
    return Cli(d)


def _fork(cli, *args, program=None):
    extra = ("--program", program / "main.flow") if program is not None else ()
    return cli("fork", *args, *extra, "--tools", cli.d / "tools.py")


# ---- opaque values ------------------------------------------------------------------------------


def test_fork_rebuilds_an_opaque_value_the_checkpoint_holds(tmp_path):
    cli = _cli(tmp_path, LOOP)
    r = cli.run("a", '{"n": 3}', "--checkpoint-every", "1")
    assert (r.exit_code, r.stdout.strip()) == (0, '"$256"'), r.stderr
    assert [f["args"] for f in cli.facts("a") if f["kind"] == "Checkpoint"][0] == ["Cents(252)", "2"]
    parent = cli.facts("a")
    r = _fork(cli, "a", "--checkpoint", "1", "--run-id", "f")
    assert (r.exit_code, r.stdout.strip()) == (0, '"$256"'), r.stderr
    assert cli.facts("f")[0]["input"] == "{ total: Cents(252), n: 2 }"
    assert cli("replay", "f").stdout == "Matched\n"
    assert cli.facts("a") == parent


@pytest.mark.parametrize(
    "money, message",
    [
        (
            MONEY.replace("Cents(Int)", "Cents(Text)")
            .replace("Cents(x + y)", "Cents(x ++ y)")
            .replace('"$" ++ x.to_text()', '"$" ++ x')
            .replace("Cents(n)", "Cents(n.to_text())"),
            "checkpoint 1 does not fit the fork's parameters: $.total.Cents: expected Text, got 252",
        ),
        (
            MONEY.replace("Cents(Int)", "Cents(Int, Int)")
            .replace("(Cents(x), Cents(y)) => Cents(x + y)", "(Cents(x, _), Cents(y, _)) => Cents(x + y, 0)")
            .replace("Cents(x) =>", "Cents(x, _) =>")
            .replace("Cents(n)", "Cents(n, 0)"),
            "checkpoint 1 holds a value of money::Money (constructor Cents: 2 fields in the fork's program, 1 in the checkpoint); give the fork --input instead",
        ),
        (
            MONEY.replace("Cents", "Pennies"),
            "checkpoint 1 holds a value of money::Money (constructor Cents), which the fork's program does not declare",
        ),
    ],
)
def test_fork_onto_a_newer_program_whose_opaque_type_changed_is_refused(tmp_path, money, message):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 3}', "--checkpoint-every", "1").exit_code == 0
    newer = _cli(tmp_path, LOOP, sub="v2").d
    (newer / "money.flow").write_text(money)
    r = _fork(cli, "a", "--checkpoint", "1", "--run-id", "f", program=newer)
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert "f " not in cli("runs").stdout


# ---- host tokens --------------------------------------------------------------------------------

BROWSER = """\
@tool pub type Page
@tool pub flow open(url: Text) -> Result<Page, Text>
@tool pub flow read(page: Page) -> Result<Text, Text>
"""

PAGES = """\
use "./browser"
use "./svc"

pub flow main(u: Text) -> Text !tool = match browser.open(u) {
    Ok(p) => visit(p, 1),
    Err(_) => "no page",
}

flow visit(p: browser.Page, n: Int) -> Text !tool = if n > 2 {
    match browser.read(p) {
        Ok(t) => t,
        Err(NotRun(why)) => "not run: " ++ why,
        Err(_) => "no text",
    }
} else {
    match svc.step(n) {
        Ok(_) => visit(p, n + 1),
        Err(_) => "step failed",
    }
}
"""

BROWSER_TOOLS = """\
from flowrt import NotRun, bind


@bind("browser.open")
def open_(url):
    return {"Ok": {"$token": "tab-" + url}}


@bind("browser.read")
def read(page):
    with open(__file__ + ".closed") as f:
        closed = f.read().split()
    if page["$token"] in closed:
        raise NotRun("no such page: " + page["$token"])
    return {"Ok": "contents of " + page["$token"]}
"""


def test_fork_restores_a_host_token_without_checking_or_issuing_it(tmp_path):
    cli = _cli(tmp_path, PAGES)
    (cli.d / "browser.flow").write_text(BROWSER)
    (cli.d / "browser_tools.py").write_text(BROWSER_TOOLS)
    (cli.d / "browser_tools.py.closed").write_text("")
    r = cli.run("a", '{"u": "x"}', "--checkpoint-every", "1", tools="browser_tools.py")
    assert (r.exit_code, r.stdout.strip()) == (0, '"contents of tab-x"'), r.stderr
    with cli.db() as db:  # the host no longer has a record of it (a store older than the record)
        db.execute("DELETE FROM host_tokens")
    r = cli("fork", "a", "--checkpoint", "1", "--tools", cli.d / "browser_tools.py", "--run-id", "f")
    assert (r.exit_code, r.stdout.strip()) == (0, '"contents of tab-x"'), r.stderr
    with cli.db() as db:
        assert db.execute("SELECT count(*) FROM host_tokens").fetchone() == (0,)  # not issued again
    # its host no longer knows the page: it answers the call with NotRun (seed 000, "Forks")
    (cli.d / "browser_tools.py.closed").write_text("tab-x")
    r = cli("fork", "a", "--checkpoint", "2", "--tools", cli.d / "browser_tools.py", "--run-id", "g")
    assert (r.exit_code, r.stdout.strip()) == (0, '"not run: no such page: tab-x"'), r.stderr
    assert cli("replay", "g").stdout == "Matched\n"


def test_a_forged_token_in_fork_input_is_refused_and_no_run_recorded(tmp_path):
    cli = _cli(tmp_path, PAGES)
    (cli.d / "browser.flow").write_text(BROWSER)
    (cli.d / "browser_tools.py").write_text(BROWSER_TOOLS)
    (cli.d / "browser_tools.py.closed").write_text("")
    assert cli.run("a", '{"u": "x"}', "--checkpoint-every", "1", tools="browser_tools.py").exit_code == 0
    before = cli("runs").stdout
    r = cli(
        "fork",
        "a",
        "--checkpoint",
        "1",
        "--tools",
        cli.d / "browser_tools.py",
        "--run-id",
        "f",
        "--input",
        '{"p": {"$token": "forged"}, "n": 1}',
    )
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "flow2py: --input: $.p: Page token 'forged' was not issued by this host "
        "(a token comes from a Tool's reply or the host's Host.issue_token)"
    ]
    assert cli("runs").stdout == before
    r = cli(
        "fork",
        "a",
        "--checkpoint",
        "1",
        "--tools",
        cli.d / "browser_tools.py",
        "--run-id",
        "f",
        "--input",
        '{"p": {"$token": "tab-x"}, "n": 1}',
    )
    assert (r.exit_code, r.stdout.strip()) == (0, '"contents of tab-x"'), r.stderr


# ---- parked tasks -------------------------------------------------------------------------------


def _paused_rounds(cli):
    r = cli.run("a", '{"q": "why"}', "--checkpoint-every", "1")
    assert r.exit_code == 3 and "root/1#1  svc.ask" in r.stdout, r.output + r.stderr
    cps = [f for f in cli.facts("a") if f["kind"] == "Checkpoint"]
    assert [c["args"][0] for c in cps] == ["<task root/1 on root/1#1>"] * 3


def test_fork_of_a_parked_task_with_no_reply_makes_its_call_again_under_the_forks_id(tmp_path):
    cli = _cli(tmp_path, ROUNDS)
    _paused_rounds(cli)
    parent = cli.facts("a")
    assert calls(cli.d, "ask") == 1
    r = _fork(cli, "a", "--checkpoint", "1", "--run-id", "f", "--checkpoint-every", "1")
    assert r.exit_code == 3 and "f:root/1#1  svc.ask" in r.stdout, r.output + r.stderr
    assert calls(cli.d, "ask") == 2  # sent again, once
    facts = cli.facts("f")
    assert facts[0]["input"] == "{ t: <task f:root/1 on f:root/1#1>, n: 2 }"
    assert (facts[1]["kind"], facts[1]["id"], facts[1]["args"]) == ("Call", "f:root/1#1", ['"why"'])
    assert [f["args"][0] for f in facts if f["kind"] == "Checkpoint"] == ["<task f:root/1 on f:root/1#1>"] * 2
    assert "f  paused on f:root/1#1" in cli("runs").stdout
    r = cli.resume("f", "--reply", 'f:root/1#1={"Ok": "fork"}')
    assert (r.exit_code, r.stdout.strip()) == (0, '"answer fork"'), r.stderr
    assert cli("replay", "f").stdout == "Matched\n"
    assert cli.facts("a") == parent
    # the parent is still waiting on its own call, and completes on its own reply
    r = cli.resume("a", "--reply", 'root/1#1={"Ok": "parent"}')
    assert (r.exit_code, r.stdout.strip()) == (0, '"answer parent"'), r.stderr


def test_fork_of_a_parked_task_whose_reply_the_parent_recorded_is_finished_from_it(tmp_path):
    cli = _cli(tmp_path, ROUNDS)
    _paused_rounds(cli)
    assert cli.resume("a", "--reply", 'root/1#1={"Ok": "parent"}').exit_code == 0
    parent = cli.facts("a")
    r = _fork(cli, "a", "--checkpoint", "2", "--run-id", "f", "--checkpoint-every", "1")
    assert (r.exit_code, r.stdout.strip()) == (0, '"answer parent"'), r.output + r.stderr
    assert calls(cli.d, "ask") == 1  # the world answered once; the fork does not ask again
    facts = cli.facts("f")
    assert (facts[1]["kind"], facts[1]["id"], facts[1]["reply"]) == ("Reply", "f:root/1#1", 'Ok("parent")')
    assert "Call" not in [f["kind"] for f in facts if f.get("id") == "f:root/1#1"]
    # the fork's own checkpoint carries the finished task; replay from it reads the fork's reply
    assert any(f["kind"] == "Checkpoint" for f in facts)
    assert cli("replay", "f").stdout == "Matched\n"
    assert cli.facts("a") == parent


def test_fork_of_a_parked_task_onto_a_program_without_its_tool_is_refused(tmp_path):
    cli = _cli(tmp_path, ROUNDS)
    _paused_rounds(cli)
    newer = _cli(tmp_path, ROUNDS.replace("svc.ask(q)", "svc.slow(q)"), sub="v2").d
    (newer / "svc.flow").write_text(
        (newer / "svc.flow").read_text().replace("@tool pub flow ask(q: Text) -> Result<Text, Text>\n", "")
    )
    r = _fork(cli, "a", "--checkpoint", "1", "--run-id", "f", program=newer)
    assert r.exit_code == 1 and r.stderr.count("\n") == 1
    assert (
        "checkpoint 1: task root/1, parked on root/1#1, calls svc.ask, which the fork's program "
        "does not declare"
    ) in r.stderr
    assert "f " not in cli("runs").stdout


def test_fork_input_for_a_task_parameter_is_refused_with_its_path(tmp_path):
    cli = _cli(tmp_path, ROUNDS)
    _paused_rounds(cli)
    r = _fork(cli, "a", "--checkpoint", "1", "--run-id", "f", "--input", '{"t": 1, "n": 2}')
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        "flow2py: --input: $.t: a task or a function is not data, so no input or reply can hold one"
    )


# Both the background question and the root's question each round are left pending.
ASKING = ROUNDS.replace("svc.step(n)", 'svc.ask("round " ++ n.to_text())').replace("n > 3", "n > 2")


def test_fork_finishes_a_parked_task_from_a_reply_recorded_before_the_checkpoint_and_archived(tmp_path):
    cli = _cli(tmp_path, ASKING)
    assert cli.run("a", '{"q": "why"}', "--checkpoint-every", "1").exit_code == 3
    # the background reply first: the task is finished (still parked) when checkpoint 1 is taken
    r = cli.resume(
        "a",
        "--reply",
        'root/1#1={"Ok": "early"}',
        "--reply",
        'root#1={"Ok": "go"}',
        "--checkpoint-every",
        "1",
    )
    assert r.exit_code == 3 and "c1:root#1  svc.ask" in r.stdout, r.output + r.stderr
    # archive keeps the reply hot (the latest checkpoint carries it: a resume reads it) ...
    assert "carries the reply to root/1#1" in cli("archive", "a").stdout
    # ... but an archive made by an earlier flowrt moved it: the reply then lives in the archive only
    with cli.db() as db:
        cp = db.execute("SELECT latest_checkpoint FROM runs WHERE id='a'").fetchone()[0]
        kept = db.execute("SELECT hash FROM facts WHERE run='a' AND n=?", (cp - 1,)).fetchone()[0]
        db.execute("INSERT INTO archived_facts SELECT * FROM facts WHERE run='a' AND n>1 AND n<?", (cp,))
        db.execute("DELETE FROM facts WHERE run='a' AND n>1 AND n<?", (cp,))
        db.execute("UPDATE runs SET archived_through=?, archived_hash=? WHERE id='a'", (cp - 1, kept))
    assert cli("verify", "a").exit_code == 0
    r = _fork(cli, "a", "--checkpoint", "1", "--run-id", "f")
    assert r.exit_code == 3 and "root#1  svc.ask" in r.stdout, r.output + r.stderr
    facts = cli.facts("f")
    assert [(f["kind"], f.get("id")) for f in facts[:3]] == [
        ("Start", None),
        ("Reply", "f:root/1#1"),
        ("Call", "root#1"),
    ]
    r = cli.resume("f", "--reply", 'root#1={"Ok": "go"}')
    assert (r.exit_code, r.stdout.strip()) == (0, '"answer early"'), r.stderr
    # the background question once (the fork does not ask it again), two rounds in the parent, one in the fork
    assert calls(cli.d, "ask") == 4
    assert cli("replay", "f").stdout == "Matched\n"


# A `flow2py fork` whose process dies (os._exit: no cleanup, like a kill) the moment the fork's
# Start is committed: whatever that commit holds is all the crash leaves.
CRASH_AFTER_START = """\
import os, sys
from flowrt.history.history_store import HistoryStore
made = HistoryStore.create_run
def create_then_crash(self, *args, **kw):
    info = made(self, *args, **kw)
    if info.parent is not None:
        os._exit(9)
    return info
HistoryStore.create_run = create_then_crash
from flow2py.cli import main
main(sys.argv[1:], prog_name="flow2py")
"""


def _fork_crashing_after_start(cli, *args):
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            CRASH_AFTER_START,
            "fork",
            *map(str, args),
            "--tools",
            cli.d / "tools.py",
            "--store",
            cli.store,
        ],
        cwd=cli.d,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 9, r.stdout + r.stderr


def test_a_fork_crashed_right_after_its_start_holds_the_remade_call_and_resumes(tmp_path):
    cli = _cli(tmp_path, ROUNDS)
    _paused_rounds(cli)
    _fork_crashing_after_start(cli, "a", "--checkpoint", "1", "--run-id", "f")
    facts = cli.facts("f")  # the Start and the call made again: one commit
    assert [(f["kind"], f.get("id")) for f in facts] == [("Start", None), ("Call", "f:root/1#1")]
    assert calls(cli.d, "ask") == 1  # the fork's call was never sent
    # the crash may have cut the call once it was recorded: the resume closes it Unknown, like any
    # cut call, and `--resend` sends it
    r = cli.resume("f", "--resend", "f:root/1#1")
    assert r.exit_code == 3 and "f:root/1#1  svc.ask" in r.stdout, r.output + r.stderr
    assert calls(cli.d, "ask") == 2
    r = cli.resume("f", "--reply", 'f:root/1#1={"Ok": "fork"}')
    assert (r.exit_code, r.stdout.strip()) == (0, '"answer fork"'), r.stderr
    assert cli("replay", "f").stdout == "Matched\n"


def test_a_fork_crashed_right_after_its_start_holds_the_parents_reply_and_resumes(tmp_path):
    cli = _cli(tmp_path, ROUNDS)
    _paused_rounds(cli)
    assert cli.resume("a", "--reply", 'root/1#1={"Ok": "parent"}').exit_code == 0
    _fork_crashing_after_start(cli, "a", "--checkpoint", "2", "--run-id", "f")
    facts = cli.facts("f")
    assert [(f["kind"], f.get("id"), f.get("reply")) for f in facts] == [
        ("Start", None, None),
        ("Reply", "f:root/1#1", 'Ok("parent")'),
    ]
    r = cli.resume("f")
    assert (r.exit_code, r.stdout.strip()) == (0, '"answer parent"'), r.output + r.stderr
    assert calls(cli.d, "ask") == 1
    assert cli("replay", "f").stdout == "Matched\n"


def test_a_parent_that_fails_its_hash_chain_is_not_forked(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 3}', "--checkpoint-every", "1").exit_code == 0
    with cli.db() as db:
        db.execute(
            "UPDATE facts SET data=(SELECT data FROM facts WHERE run='a' AND n=5) WHERE run='a' AND n=3"
        )
    r = _fork(cli, "a", "--checkpoint", "1", "--run-id", "f")
    assert r.exit_code == 1 and "fails its hash chain" in r.stderr and "refusing to fork it" in r.stderr
    assert "f " not in cli("runs").stdout


def test_restoring_takes_the_programs_own_opaque_values_and_parked_tasks_but_decodes_none():
    from test_decode import Secret

    from flowrt.data.decoding import DecodeError, decode
    from flowrt.data.facts import ParkedTask
    from flowrt.history.tokens import RESTORE, admitting
    from flowrt.data.typedesc import T

    made, parked = Secret("x"), ParkedTask("root/1", "root/1#1", None)
    with admitting(RESTORE):
        assert decode(T.Named(Secret), made) is made
        assert decode(T.ListOf(None), [parked]) == [parked]
        with pytest.raises(DecodeError, match="Secret is opaque: decoding never builds one"):
            decode(T.Named(Secret), {"value": "x"})  # JSON is still never decoded into one
    with pytest.raises(DecodeError, match="Secret is opaque"):
        decode(T.Named(Secret), made)
    with pytest.raises(DecodeError, match="a task or a function is not data"):
        decode(T.ListOf(None), [parked])
