"""Interruptions halt a run, never fault it or leave it looking paused: Ctrl-C delivered to a real
`flow2py` process, a Tool calling sys.exit, quitting pdb (docs/spec/execution.md "Interruptions")."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from history_e2e_helpers import CRASH, Cli, calls, flow2py_process, project, wait_for

REASON = "process ended while the call was out"

ASK_THEN_SLOW = """\
use "./svc"

pub flow main(q: Text) -> Text !tool = match svc.ask(q) {
    Ok(a) => match svc.slow(a) { Ok(s) => a ++ s, Err(_) => "error" },
    Err(_) => "no answer",
}
"""

# One Tool call, run inline by the driver (nothing else can happen meanwhile).
ONE_SLOW = """\
use "./svc"

pub flow main(q: Text) -> Text !tool = {
    let x = q ++ "!"
    match svc.slow(x) { Ok(s) => s, Err(Unknown(why)) => "unknown: " ++ why, Err(_) => "error" }
}
"""

# `slow` blocks until the test interrupts the process; it says so by writing slow.marker.
HOLD = "hold"


def _parked(d, call_id):
    try:
        with sqlite3.connect(d / "runs.db") as db:
            return db.execute("SELECT 1 FROM parked_calls WHERE call=?", (call_id,)).fetchone() is not None
    except sqlite3.Error:
        return False


def _interrupted(d, *command, parked=None):
    """Start `flow2py COMMAND` in its own process, wait until its slow call runs (the Tool writes
    slow.marker) and the call `parked` is parked, send SIGINT; (exit code, stdout, stderr)."""
    (d / "block.flag").write_text(HOLD)
    p = flow2py_process(d, *command, "--tools", "tools.py", "--store", "runs.db")
    wait_for(
        lambda: (
            ((d / "slow.marker").exists() and (parked is None or _parked(d, parked))) or p.poll() is not None
        ),
        what="the slow call to run",
    )
    assert p.poll() is None, p.communicate()
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    (d / "block.flag").unlink()
    (d / "slow.marker").unlink()
    return p.returncode, out, err


def _run(run_id):
    return ("run", "main.flow", "--input", '{"q": "why"}', "--run-id", run_id)


def test_ctrl_c_during_an_inline_tool_call_halts_the_run_and_says_how_to_resume(tmp_path):
    d = project(tmp_path, ONE_SLOW)
    code, out, err = _interrupted(d, *_run("i1"))
    assert code == 130, out + err
    assert "Aborted!" not in out + err and "Traceback" not in out + err
    lines = out.splitlines()
    assert lines[0] == (
        "halted: run i1: interrupted (Ctrl-C) while svc.slow (root#1) was running; no End is recorded"
    )
    assert lines[1].startswith('  root#1  svc.slow("why!")  (cut: a resume records Err(Unknown(')
    assert lines[2] == "to continue it: flow2py resume i1 --tools tools.py --store runs.db"
    cli = Cli(d)
    assert "i1  halted with root#1 open (interrupted)" in cli("runs").stdout
    assert [f["kind"] for f in cli.facts("i1")] == ["Start", "Call"]  # no Reply, no End

    r = cli.resume("i1")  # the cut call is closed Unknown; never sent again by itself
    assert r.exit_code == 0, r.output + r.stderr
    assert r.stdout.strip() == f'"unknown: {REASON}"'
    assert calls(d, "slow") == 1
    assert cli("replay", "i1").stdout.splitlines()[0] == "Matched"


def test_ctrl_c_while_the_driver_waits_on_worker_threads_halts_with_every_open_call(tmp_path):
    # `slow` runs on a worker (the spawned task was ready), `ask` answered pending: the main
    # thread is waiting for slow's completion when the signal comes.
    d = project(tmp_path, CRASH)
    code, out, err = _interrupted(d, *_run("i2"), parked="root/1#1")
    assert code == 130, out + err
    lines = out.splitlines()
    assert lines[0] == "halted: run i2: interrupted (Ctrl-C); no End is recorded"
    assert lines[1].startswith('  root#1  svc.slow("why")  (cut: ')
    assert lines[2] == '  root/1#1  svc.ask("why")  (pending: its reply can be given with --reply)'
    cli = Cli(d)
    assert "i2  halted with root#1, root/1#1 open (interrupted)" in cli("runs").stdout
    r = cli.resume("i2", "--reply", 'root/1#1={"Ok": "yes"}')
    assert r.exit_code == 0, r.output + r.stderr
    assert r.stdout.strip() == f'"unknown: {REASON} + yes"'


def test_ctrl_c_during_resume_halts_it_too(tmp_path):
    d = project(tmp_path, ASK_THEN_SLOW)
    cli = Cli(d)
    assert cli.run("i3", '{"q": "why"}').exit_code == 3  # waits on the question (pending)
    code, out, err = _interrupted(d, "resume", "i3", "--reply", 'root#1={"Ok": "a"}')
    assert code == 130, out + err
    assert out.splitlines()[0] == (
        "halted: run i3: interrupted (Ctrl-C) while svc.slow (root#2) was running; no End is recorded"
    )
    assert out.splitlines()[-1] == "to continue it: flow2py resume i3 --tools tools.py --store runs.db"
    assert [(f["kind"], f.get("id")) for f in cli.facts("i3")][-2:] == [
        ("Reply", "root#1"),
        ("Call", "root#2"),
    ]
    r = cli.resume("i3")
    assert r.exit_code == 0 and r.stdout.strip() == '"error"', r.output + r.stderr


@pytest.mark.parametrize("where", ["inline", "worker"])
def test_a_tool_calling_sys_exit_halts_the_run_not_pauses_it(tmp_path, where):
    d = project(tmp_path, ONE_SLOW if where == "inline" else CRASH)
    tools = (
        (d / "tools.py")
        .read_text()
        .replace('    _count("slow")\n', '    _count("slow")\n    raise SystemExit(3)\n')
    )
    (d / "tools.py").write_text(tools)
    cli = Cli(d)
    r = cli.run("e", '{"q": "why"}')
    assert r.exit_code == 130, r.output + r.stderr
    arg = '"why!"' if where == "inline" else '"why"'
    assert r.stdout.splitlines()[0] == (
        "halted: run e: the implementation of svc.slow (root#1) called sys.exit(3); no End is recorded"
    )
    assert f"  root#1  svc.slow({arg})  (cut: " in r.stdout
    assert "to continue it: flow2py resume e" in r.stdout
    kinds = [f["kind"] for f in cli.facts("e")]
    assert "End" not in kinds and "Reply" not in kinds[:3]
    assert "e  halted with root#1" in cli("runs").stdout


def test_quitting_pdb_in_a_tool_halts_the_run_and_records_no_fault(tmp_path):
    d = project(tmp_path, ONE_SLOW)
    tools = (
        (d / "tools.py").read_text().replace('    _count("slow")\n', '    _count("slow")\n    breakpoint()\n')
    )
    (d / "tools.py").write_text(tools)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "flow2py.cli",
            "run",
            "main.flow",
            "--input",
            '{"q": "a"}',
            "--tools",
            "tools.py",
            "--store",
            "runs.db",
            "--run-id",
            "q1",
        ],
        cwd=d,
        input="q\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONBREAKPOINT": "pdb.set_trace"},
    )
    assert p.returncode == 130, p.stdout + p.stderr
    assert "halted: run q1: the debugger was quit (BdbQuit) in svc.slow (root#1)" in p.stdout
    cli = Cli(d)
    assert [f["kind"] for f in cli.facts("q1")] == ["Start", "Call"]


def test_quitting_pdb_in_generated_code_halts_the_run_instead_of_faulting_it(tmp_path):
    d = project(tmp_path, ONE_SLOW)
    flow = d / "main.flow"
    # generated code carries the Flow file and lines: a breakpoint on the `match` line stops there
    commands = f"b {flow}:5\nc\nq\n"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pdb",
            "-m",
            "flow2py.cli",
            "run",
            "main.flow",
            "--input",
            '{"q": "a"}',
            "--tools",
            "tools.py",
            "--store",
            "runs.db",
            "--run-id",
            "q2",
        ],
        cwd=d,
        input=commands,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"{flow}(5)main()" in p.stdout, p.stdout + p.stderr
    assert "halted: run q2: the debugger was quit (BdbQuit); no End is recorded" in p.stdout
    assert "Exit status: 130" in p.stdout  # pdb reports the program's exit code
    cli = Cli(d)
    assert [f["kind"] for f in cli.facts("q2")] == ["Start"]  # no End Faulted(BdbQuit)
    assert "q2  halted" in cli("runs").stdout


def test_a_fork_whose_tool_calls_sys_exit_is_halted_and_its_parent_untouched(tmp_path):
    from history_e2e_helpers import LOOP

    d = project(tmp_path, LOOP)
    cli = Cli(d)
    assert cli.run("l", '{"ticket": "t"}', "--checkpoint-every", "1").exit_code == 3
    parent = cli.facts("l")
    tools = (
        (d / "tools.py")
        .read_text()
        .replace(
            '    _count("step")\n',
            '    _count("step")\n    if os.path.exists(os.path.join(HERE, "exit.flag")):\n'
            "        sys.exit(3)\n",
        )
        .replace("import os, time", "import os, sys, time")
    )
    (d / "tools.py").write_text(tools)
    (d / "exit.flag").write_text("")
    r = cli("fork", "l", "--checkpoint", 1, "--tools", d / "tools.py", "--run-id", "f")
    assert r.exit_code == 130, r.output + r.stderr
    assert r.stdout.startswith("halted: run f: the implementation of svc.step (root#1) called sys.exit(3)")
    assert "to continue it: flow2py resume f --tools" in r.stdout
    assert "End" not in [f["kind"] for f in cli.facts("f")]
    assert cli.facts("l") == parent
    (d / "exit.flag").unlink()
    r = cli.resume("f")  # step root#1 was cut: Unknown, so `work` answers "step failed"
    assert r.exit_code == 0 and r.stdout.strip() == '"step failed"', r.output + r.stderr


# ---- the driver: an interruption is an outcome, RunHalted, with nothing recorded for it ------------


def _halting_program():
    import flowrt as rt
    from _driver_progs import ECHO, SLOW

    def prog(x):
        a = yield rt.ToolCall(ECHO, (x,))
        b = yield rt.ToolCall(SLOW, (a._0,))
        return b._0

    return prog


@pytest.mark.parametrize("inline", [True, False])
@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3), __import__("bdb").BdbQuit()])
def test_an_interruption_in_a_tool_is_run_halted_with_the_call_open_and_no_fact_for_it(exc, inline):
    import flowrt as rt
    from _driver_progs import echo_bindings

    def slow(x):
        raise exc

    rec = rt.MemoryRecorder()
    out = rt.start_run(
        _halting_program(), (1,), rt.DriveOptions(recorder=rec, bindings=echo_bindings(slow), inline=inline)
    )
    assert type(out) is rt.RunHalted and out.exit_code == 130
    assert out.open == (rt.OpenCall("root#2", "t.slow"),) and out.open[0].args == (1,)
    assert out.cause is exc
    assert "t.slow (root#2)" in out.reason
    assert [type(f).__name__ for f in rec.facts] == ["Start", "Call", "Reply", "Call"]


def test_quitting_pdb_inside_generated_code_is_run_halted_not_faulted():
    import bdb

    import flowrt as rt

    def prog(x):
        yield from ()
        raise bdb.BdbQuit()

    rec = rt.MemoryRecorder()
    out = rt.start_run(prog, (1,), rt.DriveOptions(recorder=rec, bindings=rt.Bindings()))
    assert out == rt.RunHalted("the debugger was quit (BdbQuit)", ())
    assert [type(f).__name__ for f in rec.facts] == ["Start"]


def test_replay_lets_an_interruption_through_rather_than_giving_a_verdict():
    import flowrt as rt

    def prog(x):
        yield from ()
        raise KeyboardInterrupt

    start = rt.Start("p", "std@v1", rt.DATA_VERSION, "prog", (1,), ("x",))
    with pytest.raises(KeyboardInterrupt):
        rt.drive(prog, [start], rt.DriveOptions(mode="replay"))


def test_ctrl_c_inside_an_append_is_held_until_the_fact_is_whole():
    from flowrt.engine.interrupts import Shielded, deferred

    class Recorder:
        def __init__(self):
            self.steps = []

        def record(self, fact):
            self.steps.append("begin")
            os.kill(os.getpid(), signal.SIGINT)  # arrives while the fact is half-appended
            self.steps.append("end")

    rec = Recorder()
    with deferred():
        with pytest.raises(KeyboardInterrupt):
            Shielded(rec).record("fact")
        assert rec.steps == ["begin", "end"]
        with pytest.raises(KeyboardInterrupt):  # outside a shielded section it interrupts at once
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**7):  # a loop's backward jumps are where Python runs the handler
                pass
            rec.steps.append("after")
    assert rec.steps == ["begin", "end"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
