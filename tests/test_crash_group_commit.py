"""Killed with SIGKILL during a fan-out and during a long pure stretch after a reply: real
processes. Nothing answered is lost, no call is sent twice, the facts verify."""

from __future__ import annotations

import os
import signal
import sqlite3

from history_e2e_helpers import Cli, calls, flow2py_process, project, wait_for

REASON = "process ended while the call was out"

FAN = """\
use "std@v1/list"
use "std@v1/task"
use "./fan"

pub flow main(n: Int) -> Int !tool = {
    let values = task.all(list.range(0, n).map(flow(i) = flow() = one(i)))
    values.fold(0, flow(a, v) = a + v)
}

flow one(i: Int) -> Int !tool = match fan.one(i) {
    Ok(v) => v,
    Err(_) => 1000,
}
"""

FAN_SVC = "@tool pub flow one(i: Int) -> Result<Int, Text>\n"

# `fan.one(i)` notes its call id in sent.txt; an odd i waits while block.flag exists.
FAN_TOOLS = """\
import os, time
from flowrt import bind, current_call

HERE = os.path.dirname(os.path.abspath(__file__))


@bind("fan.one")
def one(i):
    with open(os.path.join(HERE, "sent.txt"), "a") as f:
        f.write(current_call().call_id + "\\n")
    flag = os.path.join(HERE, "block.flag")
    deadline = time.time() + 60
    while i % 2 and os.path.exists(flag) and time.time() < deadline:
        time.sleep(0.02)
    return {"Ok": i}
"""

# One quick call, then a pure loop of `n` rounds, then a question left pending.
SPIN = """\
use "./svc"

pub flow main(n: Int) -> Text !tool = match svc.step(1) {
    Ok(s) => finish(s, spin(n, 0)),
    Err(_) => "step failed",
}

flow spin(i: Int, acc: Int) -> Int = if i == 0 { acc } else { spin(i - 1, acc + i % 7) }

flow finish(s: Text, x: Int) -> Text !tool = match svc.ask(if x > 0 { s } else { s ++ "!" }) {
    Ok(a) => s ++ a,
    Err(_) => s ++ " no answer",
}
"""


def _count(d, run_id, sql):
    try:
        with sqlite3.connect(d / "runs.db") as db:
            return db.execute(sql, (run_id,)).fetchone()[0]
    except sqlite3.Error:
        return -1


def _sent(d):
    p = d / "sent.txt"
    return p.read_text().split() if p.exists() else []


def test_a_kill_during_a_fan_out_sends_no_call_twice_and_loses_no_reply(tmp_path):
    d = project(tmp_path, FAN)
    (d / "fan.flow").write_text(FAN_SVC)
    (d / "tools.py").write_text(FAN_TOOLS)
    (d / "block.flag").write_text("")
    n = 20
    p = flow2py_process(
        d,
        "run",
        "main.flow",
        "--input",
        f'{{"n": {n}}}',
        "--tools",
        "tools.py",
        "--store",
        "runs.db",
        "--run-id",
        "f",
    )
    # every call sent, the even ones answered and their replies committed; the odd ones out
    wait_for(
        lambda: (
            len(_sent(d)) == n and _count(d, "f", "SELECT count(*) FROM open_calls WHERE run=?") == n // 2
        ),
        what="all calls sent and half of them answered",
    )
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    (d / "block.flag").unlink()
    cli = Cli(d)
    before = cli.facts("f")
    assert [f["kind"] for f in before].count("Call") == n
    replied = {f["id"] for f in before if f["kind"] == "Reply"}
    assert len(replied) == n // 2  # every reply admitted before the kill is there

    r = cli.resume("f")
    assert r.exit_code == 0, r.output + r.stderr
    evens, odds = range(0, n, 2), range(1, n, 2)
    assert r.stdout.strip() == str(sum(evens) + 1000 * len(odds))  # the cut calls closed Unknown
    after = cli.facts("f")
    assert after[: len(before)] == before
    cut = [f for f in after[len(before) :] if f["kind"] == "Reply"]
    assert len(cut) == n // 2 and all(f["reply"] == f'Err(Unknown("{REASON}"))' for f in cut)
    sent = _sent(d)
    assert len(sent) == n and len(set(sent)) == n  # no call sent twice
    assert cli("verify", "f").exit_code == 0
    assert cli("replay", "f").stdout.splitlines()[0] == "Matched"


def test_a_reply_admitted_before_a_long_pure_stretch_survives_a_kill_during_it(tmp_path):
    d = project(tmp_path, SPIN)
    p = flow2py_process(
        d,
        "run",
        "main.flow",
        "--input",
        '{"n": 1000000}',
        "--tools",
        "tools.py",
        "--store",
        "runs.db",
        "--run-id",
        "s",
    )
    # the step's Reply is committed; the program is in its pure loop (no next Call yet)
    wait_for(lambda: _count(d, "s", "SELECT count(*) FROM facts WHERE run=?") == 3, what="the step's reply")
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    cli = Cli(d)
    before = cli.facts("s")
    assert [(f["kind"], f.get("id")) for f in before] == [
        ("Start", None),
        ("Call", "root#1"),
        ("Reply", "root#1"),
    ]
    assert before[2]["reply"] == 'Ok("s1")'

    r = cli.resume("s")
    assert r.exit_code == 3, r.output + r.stderr  # the loop ran again, then the question waits
    after = cli.facts("s")
    assert after[:3] == before  # the reply is served from history: not Unknown, not asked again
    assert [(f["kind"], f.get("id")) for f in after[3:]] == [("Call", "root#2")]
    assert calls(d, "step") == 1
    assert cli("verify", "s").exit_code == 0


# `n` calls answered together (each waits while block.flag exists), then a pure loop of `m`
# rounds, then a question left pending.
FAN_SPIN = """\
use "std@v1/list"
use "std@v1/task"
use "./fan"
use "./svc"

pub flow main(n: Int, m: Int) -> Text !tool = {
    let values = task.all(list.range(0, n).map(flow(i) = flow() = one(i)))
    let total = values.fold(0, flow(a, v) = a + v)
    match svc.ask(if spin(m, total) > 0 { "more" } else { "less" }) {
        Ok(a) => a,
        Err(_) => "no answer",
    }
}

flow one(i: Int) -> Int !tool = match fan.one(i) {
    Ok(v) => v,
    Err(_) => 1000,
}

flow spin(i: Int, acc: Int) -> Int = if i == 0 { acc } else { spin(i - 1, acc + i % 7) }
"""


def test_a_batch_of_replies_survives_a_kill_during_the_pure_stretch_after_it(tmp_path):
    d = project(tmp_path, FAN_SPIN)
    (d / "fan.flow").write_text(FAN_SVC)
    (d / "tools.py").write_text((d / "tools.py").read_text() + "\n" + FAN_TOOLS.replace("i % 2 and ", ""))
    (d / "block.flag").write_text("")
    n = 20
    p = flow2py_process(
        d,
        "run",
        "main.flow",
        "--input",
        f'{{"n": {n}, "m": 1000000}}',
        "--tools",
        "tools.py",
        "--store",
        "runs.db",
        "--run-id",
        "b",
    )
    wait_for(lambda: len(_sent(d)) == n, what="all calls sent")
    (d / "block.flag").unlink()  # they all answer at once; then the program computes
    wait_for(
        lambda: _count(d, "b", "SELECT count(*) FROM facts WHERE run=?") == 1 + 2 * n,
        what="the replies committed",
    )
    os.kill(p.pid, signal.SIGKILL)
    assert p.wait() == -signal.SIGKILL  # killed in the pure stretch: the question was never asked
    cli = Cli(d)
    before = cli.facts("b")
    assert [f["kind"] for f in before].count("Reply") == n
    assert all(f["reply"].startswith("Ok(") for f in before if f["kind"] == "Reply")

    r = cli.resume("b")
    assert r.exit_code == 3, r.output + r.stderr  # the loop ran again, then the question waits
    after = cli.facts("b")
    assert after[: len(before)] == before  # the replies are served from history, none Unknown
    assert [(f["kind"], f.get("id")) for f in after[len(before) :]] == [("Call", "root#1")]
    sent = _sent(d)
    assert len(sent) == n and len(set(sent)) == n  # no call sent twice
    assert cli("verify", "b").exit_code == 0
