"""History end to end through the CLI (in this process, click's runner): replay verdicts, holes,
integrity, data versions, archive, forks, bad input, run states and nested runs."""

from __future__ import annotations

import pytest

import flowrt.history.trace as T
from history_e2e_helpers import LOOP, Cli, project
from flow2py.cli import main as cli_main
from flowrt import Ok
from flowrt.history.store import Store


@pytest.fixture
def cli(tmp_path, store_url):
    project(tmp_path)
    return Cli(tmp_path, store_url)


def _paused(cli, run_id="a", *extra):
    r = cli.run(run_id, '{"ticket": "t"}', *extra)
    assert r.exit_code == 3, r.output + r.stderr
    return r


def _completed(cli, run_id="a", *extra):
    _paused(cli, run_id, *extra)
    call = cli.facts(run_id)[-1]["id"]
    r = cli.resume(run_id, "--reply", f'{call}={{"Ok": "yes"}}')
    assert r.exit_code == 0 and r.stdout.strip() == '"s1s2s3|yes"', r.output + r.stderr
    return cli.facts(run_id)


# ---- replay verdicts -------------------------------------------------------------------------


def test_replay_of_a_completed_run_is_matched(cli):
    _completed(cli)
    r = cli("replay", "a")
    assert (r.exit_code, r.stdout) == (0, "Matched\n")


def test_replay_of_a_paused_run_is_incomplete_naming_the_call(cli):
    _paused(cli)
    r = cli("replay", "a")
    assert r.exit_code == 3
    assert (
        r.stdout.splitlines()[0] == "Incomplete: needs the reply to root#4 (svc.ask), which is not recorded"
    )


def test_replay_of_a_history_cut_short_is_incomplete(cli):
    facts = _completed(cli)
    with cli.db() as db:
        db.execute("DELETE FROM facts WHERE run='a' AND n >= ?", (len(facts) - 1,))  # last Reply, End
    r = cli("replay", "a")
    assert r.exit_code == 3 and r.stdout.startswith("Incomplete: needs the reply to root#4 (svc.ask)")


def test_a_hole_makes_replay_incomplete_and_history_still_shows_the_rest(cli):
    facts = _completed(cli)
    reply = next(f for f in facts if f["kind"] == "Reply" and f["id"] == "root#2")
    (digest,) = reply["values"]
    r = cli("redact", "a", "--value", digest)
    assert r.exit_code == 0, r.stderr
    r = cli("replay", "a")
    assert r.exit_code == 3
    assert r.stdout.splitlines()[0] == "Incomplete: needs the reply to root#2 (svc.step), which is a hole"
    text = cli("history", "a").stdout
    assert f"<hole blake3:{digest}>" in text and "svc.step(3)" in text and 'Ok("s3")' in text
    assert cli("verify", "a").exit_code == 0


def _rewrite(cli, n, change):
    """Change fact n's stored value with `change(fact)` and recompute every later hash (a holder
    rewriting its own record consistently)."""
    store = Store(cli.store)
    with cli.db() as db:
        rows = db.execute("SELECT n, data FROM facts WHERE run='a' ORDER BY n").fetchall()
        prev = T.ZERO_HASH
        for k, data in rows:
            if k == n:
                data = T.encode_fact(change(T.decode_fact(data, store.history.blob))).data
                db.execute("UPDATE facts SET data=? WHERE run='a' AND n=?", (data, k))
            prev = T.fact_hash(prev, data)
            db.execute("UPDATE facts SET hash=? WHERE run='a' AND n=?", (prev, k))
        db.execute("UPDATE runs SET head=? WHERE id='a'", (prev,))
    store.close()


def test_a_consistently_rewritten_call_diverges_at_that_fact(cli):
    _completed(cli)
    _rewrite(cli, 4, lambda f: T.Call(f.id, f.tool, f.tool_id, (7,), f.type_args))
    assert cli("verify", "a").exit_code == 0  # the chain was recomputed: only a head held elsewhere shows it
    r = cli("replay", "a")
    assert r.exit_code == 5
    assert r.stdout.startswith(
        "Diverged at fact 4: the program calls svc.step(2) as root#2, but the "
        "history records Call root#2 svc.step(7)"
    )


def test_a_consistently_rewritten_reply_diverges_where_the_program_departs(cli):
    _completed(cli)
    _rewrite(cli, 3, lambda f: T.Reply(f.id, Ok("X")))  # root#1 answered "X" instead of "s1"
    assert cli("verify", "a").exit_code == 0
    r = cli("replay", "a")
    assert r.exit_code == 5
    assert r.stdout == (
        'Diverged at fact 8: the program calls svc.ask("Xs2s3") as root#4, but the history '
        'records Call root#4 svc.ask("s1s2s3")\n'
    )


# ---- integrity and versions --------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            "UPDATE facts SET data=(SELECT data FROM facts WHERE run='a' AND n=5) WHERE run='a' AND n=3",
            "fact 3 was changed, removed or moved",
        ),
        ("DELETE FROM facts WHERE run='a' AND n=3", "fact 3 is missing"),
        (
            "UPDATE facts SET n=-n WHERE run='a' AND n IN (2, 3); "
            "UPDATE facts SET n=3 WHERE run='a' AND n=-2; UPDATE facts SET n=2 WHERE run='a' AND n=-3",
            "fact 2 was changed, removed or moved",
        ),
    ],
)
def test_verify_detects_a_changed_removed_or_reordered_fact(cli, damage, message):
    _completed(cli)
    assert cli("verify", "a").exit_code == 0
    with cli.db() as db:
        for stmt in damage.split("; "):
            db.execute(stmt)
    r = cli("verify", "a")
    assert r.exit_code == 6 and r.stdout.startswith("broken: ") and message in r.stdout


def test_verify_against_a_head_held_elsewhere(cli):
    facts = _completed(cli)
    head = facts[-1]["hash"]
    assert cli("verify", "a", "--head", head).exit_code == 0
    _rewrite(cli, 4, lambda f: T.Call(f.id, f.tool, f.tool_id, (7,), f.type_args))
    assert cli("verify", "a").exit_code == 0
    r = cli("verify", "a", "--head", head)
    assert r.exit_code == 6 and f"the given head {head} is not in this history" in r.stdout


def test_a_store_of_an_unknown_data_version_is_refused_by_every_command(cli, tmp_path):
    _paused(cli)
    with cli.db() as db:
        db.execute("UPDATE store_meta SET value='99' WHERE key='data_version'")
    d = tmp_path
    commands = [
        ("runs",),
        ("history", "a"),
        ("replay", "a"),
        ("verify", "a"),
        ("archive", "a"),
        ("redact", "a", "--value", "00" * 32),
        ("resume", "a", "--tools", d / "tools.py"),
        ("fork", "a", "--checkpoint", "1"),
        ("run", d / "main.flow", "--input", '{"ticket": "t"}', "--tools", d / "tools.py"),
    ]
    for args in commands:
        r = cli(*args)
        assert r.exit_code == 1, args
        assert "data version '99'" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


# ---- checkpoints, archive, forks -----------------------------------------------------------------


def test_archive_then_resume_and_replay_use_only_facts_from_the_latest_checkpoint(cli):
    _paused(cli, "a", "--checkpoint-every", "1")
    r = cli("archive", "a")
    assert r.exit_code == 0 and "archived 8 fact(s)" in r.stdout
    with cli.db() as db:  # the archived facts are not needed: drop them altogether
        db.execute("DELETE FROM archived_facts WHERE run='a'")
    r = cli.resume("a", "--reply", 'c3:root#1={"Ok": "yes"}')
    assert r.exit_code == 0 and r.stdout.strip() == '"s1s2s3|yes"', r.output + r.stderr
    assert cli("replay", "a").stdout == "Matched\n"


def test_fork_from_a_checkpoint_records_its_parent_and_leaves_the_parent_unchanged(cli, tmp_path):
    _paused(cli, "a", "--checkpoint-every", "1")
    parent = cli.facts("a")
    tools = tmp_path / "tools.py"
    r = cli("fork", "a", "--checkpoint", "1", "--tools", tools, "--run-id", "f1")
    assert r.exit_code == 3 and "root#3  svc.ask" in r.stdout, r.output + r.stderr
    start = cli.facts("f1")[0]
    assert (start["parent"], start["from_checkpoint"], start["entry"]) == ("a", 1, "work")
    assert start["input"] == '{ ticket: "t", acc: "s1", round: 2 }'
    assert "f1  paused on root#3  work  6 facts  fork of a at checkpoint 1" in cli("runs").stdout

    r = cli(
        "fork",
        "a",
        "--checkpoint",
        "2",
        "--tools",
        tools,
        "--run-id",
        "f2",
        "--input",
        '{"ticket": "u", "acc": "Z", "round": 3}',
    )
    assert r.exit_code == 3, r.output + r.stderr
    assert cli.resume("f2", "--reply", 'root#2={"Ok": "k"}').stdout.strip() == '"Zs3|k"'
    assert cli("replay", "f2").stdout == "Matched\n"

    r = cli(
        "fork",
        "a",
        "--checkpoint",
        "1",
        "--tools",
        tools,
        "--run-id",
        "f3",
        "--input",
        '{"ticket": 5, "acc": "Z", "round": 3}',
    )
    assert r.exit_code == 1 and "$.ticket: expected Text, got 5" in r.stderr
    assert "f3" not in cli("runs").stdout

    newer = project(tmp_path, LOOP.replace('acc ++ "|" ++ a', '"v2:" ++ acc ++ "|" ++ a'), sub="v2")
    r = cli(
        "fork", "a", "--checkpoint", "3", "--program", newer / "main.flow", "--tools", tools, "--run-id", "f4"
    )
    assert r.exit_code == 3, r.output + r.stderr
    assert cli.resume("f4", "--reply", 'root#1={"Ok": "n"}').stdout.strip() == '"v2:s1s2s3|n"'
    assert cli.facts("f4")[0]["program"] != parent[0]["program"]
    assert cli("replay", "f4").stdout == "Matched\n"

    assert cli.facts("a") == parent


# ---- bad input ---------------------------------------------------------------------------------


def test_bad_input_is_refused_with_one_line_and_nothing_recorded(cli, tmp_path):
    _paused(cli)
    before = cli.facts("a"), cli("runs").stdout
    d = tmp_path
    (d / "broken_tools.py").write_text("import no_such_module_anywhere\n")
    (d / "lonely.flow").write_text(
        'use "./nobody"\npub flow main(x: Int) -> Int !tool = '
        "match nobody.there(x) { Ok(n) => n, Err(_) => 0 }\n"
    )
    (d / "nobody.flow").write_text("@tool pub flow there(x: Int) -> Result<Int, Text>\n")
    (d / "garbage.db").write_bytes(b"this is not a database at all" * 100)
    tools = d / "tools.py"
    cases = [
        (("run", d / "main.flow", "--input", '{"ticket": ', "--tools", tools), "--input: not valid JSON"),
        (
            ("run", d / "main.flow", "--input", '{"ticket": 3}', "--tools", tools),
            "--input: $.ticket: expected Text, got 3",
        ),
        (("resume", "nope", "--tools", tools), "unknown run 'nope'"),
        (("replay", "nope"), "unknown run 'nope'"),
        (
            ("resume", "a", "--reply", 'root#1={"Ok": "x"}', "--tools", tools),
            "run a has no open call root#1 (open calls: root#4)",
        ),
        (
            ("resume", "a", "--reply", 'root#4={"Ok": 5}', "--tools", tools),
            "--reply root#4: the reply does not fit svc.ask's result: $.Ok: expected Text, got 5",
        ),
        (("resume", "a", "--reply", 'root#4={"Ok": ', "--tools", tools), "--reply root#4: not valid JSON"),
        (
            ("run", d / "lonely.flow", "--input", '{"x": 1}', "--tools", tools),
            "no implementation bound for nobody.there",
        ),
        (
            ("run", d / "main.flow", "--input", '{"ticket": "t"}', "--tools", d / "broken_tools.py"),
            "importing it failed: ModuleNotFoundError",
        ),
    ]
    for args, message in cases:
        r = cli(*args)
        assert r.exit_code == 1, (args, r.output)
        assert r.stderr.startswith("flow2py: ") and message in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli.runner.invoke(cli_main, ["runs", "--store", str(d / "garbage.db")])
    assert r.exit_code == 1 and "not a Flow store" in r.stderr and "Traceback" not in r.output
    assert (cli.facts("a"), cli("runs").stdout) == before


# ---- run states --------------------------------------------------------------------------------


def test_runs_lists_each_run_with_its_state(cli, tmp_path):
    _paused(cli, "p")
    _completed(cli, "c")
    (tmp_path / "boom.flow").write_text("pub flow main(n: Int) -> Int = 10 / n\n")
    r = cli("run", tmp_path / "boom.flow", "--input", '{"n": 0}', "--run-id", "f")
    assert r.exit_code == 4, r.output
    lines = cli("runs").stdout.splitlines()
    assert lines[0].startswith("p  paused on root#4  main")
    assert lines[1].startswith("c  completed  main  10 facts")
    assert lines[2].startswith("f  faulted  main")
    # running and halted (a killed process): tests/test_crash.py


# ---- nested runs -------------------------------------------------------------------------------

OUTER = """\
use "./inner"

pub flow main(x: Text) -> Text !tool = {
    let a = match inner.shout(x) { Ok(s) => s, Err(Failed(e)) => "failed: " ++ e, Err(_) => "problem" }
    let b = match inner.broken(x) { Ok(s) => s, Err(Failed(e)) => "failed: " ++ e, Err(_) => "problem" }
    a ++ " / " ++ b
}
"""
INNER_DECLS = """\
@tool pub flow shout(x: Text) -> Result<Text, Text>
@tool pub flow broken(x: Text) -> Result<Text, Text>
"""
SHOUT = """\
use "./up"

pub flow main(x: Text) -> Text !tool = match up.upper(x) { Ok(u) => "[" ++ u ++ "]", Err(_) => "none" }
"""
BROKEN = "pub flow main(x: Text) -> Text = if 10 / (0 * 1) > 0 { x } else { x }\n"
NESTED_TOOLS = """\
import os
import flowrt
from flow2py.host import flow_tool

HERE = os.path.dirname(os.path.abspath(__file__))
flowrt.bind("up.upper", lambda x: {"Ok": x.upper()})
flowrt.bind("inner.shout", flow_tool(os.path.join(HERE, "shout", "main.flow")))
flowrt.bind("inner.broken", flow_tool(os.path.join(HERE, "broken", "main.flow")))
"""


def test_a_nested_run_has_its_own_history_linked_to_the_outer_call(cli, tmp_path):
    d = tmp_path
    (d / "outer.flow").write_text(OUTER)
    (d / "inner.flow").write_text(INNER_DECLS)
    (d / "shout").mkdir()
    (d / "shout" / "main.flow").write_text(SHOUT)
    (d / "shout" / "up.flow").write_text("@tool pub flow upper(x: Text) -> Result<Text, Text>\n")
    (d / "broken").mkdir()
    (d / "broken" / "main.flow").write_text(BROKEN)
    (d / "nested_tools.py").write_text(NESTED_TOOLS)
    r = cli(
        "run", d / "outer.flow", "--input", '{"x": "hi"}', "--tools", d / "nested_tools.py", "--run-id", "o"
    )
    assert r.exit_code == 0, r.output + r.stderr
    assert r.stdout.startswith('"[HI] / failed: faulted at ')
    outer = cli.facts("o")
    assert [(f["kind"], f.get("id")) for f in outer] == [
        ("Start", None),
        ("Call", "root#1"),
        ("Reply", "root#1"),
        ("Call", "root#2"),
        ("Reply", "root#2"),
        ("End", None),
    ]
    assert outer[2]["reply"] == 'Ok("[HI]")'
    runs = cli("runs").stdout
    assert "o/root#1  completed  main  4 facts  nested in o at root#1" in runs
    assert "o/root#2  faulted  main" in runs
    inner = cli.facts("o/root#1")
    assert [f["kind"] for f in inner] == ["Start", "Call", "Reply", "End"]
    assert inner[1]["tool"] == "up.upper" and inner[-1]["end"] == 'Completed("[HI]")'
    assert cli("replay", "o/root#1").stdout == "Matched\n"
    assert cli("replay", "o").stdout == "Matched\n"
    store = Store(cli.store)
    assert store.host_records.nested_runs("o") == {"root#1": "o/root#1", "root#2": "o/root#2"}
    assert store.host_records.outer_of("o/root#1") == ("o", "root#1")
    store.close()


# ---- replay, resume and history check the chain before using history ----------------------


@pytest.mark.parametrize("command", [("replay", "a"), ("history", "a")])
def test_replay_and_history_of_a_run_whose_chain_is_broken_are_refused_naming_the_fact(cli, command):
    _completed(cli)
    with cli.db() as db:  # a Reply's stored value swapped for another: content no longer matches its hash
        db.execute(
            "UPDATE facts SET data=(SELECT data FROM facts WHERE run='a' AND n=5) WHERE run='a' AND n=3"
        )
        before = db.execute("SELECT n, data, hash FROM facts WHERE run='a' ORDER BY n").fetchall()
    r = cli(*command)
    assert r.exit_code == 1, r.output + r.stderr
    assert "fact 3 was changed, removed or moved" in r.stderr and "hash chain" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    with cli.db() as db:
        assert db.execute("SELECT n, data, hash FROM facts WHERE run='a' ORDER BY n").fetchall() == before


def test_resume_of_a_run_whose_chain_is_broken_is_refused_and_records_nothing(cli):
    _paused(cli)
    call = cli.facts("a")[-1]["id"]
    with cli.db() as db:
        db.execute(
            "UPDATE facts SET data=(SELECT data FROM facts WHERE run='a' AND n=5) WHERE run='a' AND n=3"
        )
        before = db.execute("SELECT n, data, hash FROM facts WHERE run='a' ORDER BY n").fetchall()
        state = db.execute("SELECT state, owner, n FROM runs WHERE id='a'").fetchone()
    r = cli.resume("a", "--reply", f'{call}={{"Ok": "yes"}}')
    assert r.exit_code == 1, r.output + r.stderr
    assert "fact 3 was changed, removed or moved" in r.stderr and "refusing" in r.stderr
    with cli.db() as db:
        assert db.execute("SELECT n, data, hash FROM facts WHERE run='a' ORDER BY n").fetchall() == before
        assert db.execute("SELECT state, owner, n FROM runs WHERE id='a'").fetchone() == state


def test_resume_refuses_a_run_whose_last_facts_are_gone(cli):
    _paused(cli)
    call = cli.facts("a")[-1]["id"]
    with cli.db() as db:
        n = db.execute("SELECT n FROM runs WHERE id='a'").fetchone()[0]
        db.execute("DELETE FROM facts WHERE run='a' AND n=?", (n,))
    r = cli.resume("a", "--reply", f'{call}={{"Ok": "yes"}}')
    assert r.exit_code == 1 and f"facts {n}-{n} are missing" in r.stderr, r.output + r.stderr
