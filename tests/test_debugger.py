"""pdb on Flow frames (docs/spec/debugging.md): scripted pdb sessions driven through stdin.

The program is two Flow calls deep: `main` (main.flow) calls `util.helper` (lib/util.flow),
which calls the Tool `svc.ask`. Each test runs `flow2py run` in its own process, feeds pdb its
commands on stdin and reads what it printed, then looks at the run's stored history."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flowrt.engine.flowpdb import generated_location, match_flow_file

SVC = "@tool pub flow ask(q: Text) -> Result<Text, Text>\n"

UTIL = """\
use "../svc"
use "std@v1/int"

pub flow helper(x: Int) -> Text !tool = {
    let q = "n=" ++ int.to_text(x)
    match svc.ask(q) {
        Ok(a) => a,
        Err(_) => "none",
    }
}

pub flow divide(n: Int) -> Int !tool = {
    let d = n - 4
    match svc.ask("d") {
        Ok(_) => 100 / d,
        Err(_) => 0,
    }
}
"""

MAIN = """\
use "./lib/util"
use "./svc"
use "std@v1/task"

pub flow main(x: Int) -> Text !tool = {
    let a = x + 1
    let r = util.helper(a)
    r ++ "!"
}

pub flow faulty(x: Int) -> Int !tool = {
    let a = x + 1
    util.divide(a) + 1
}

pub flow both(x: Int) -> Text !tool = {
    let a = task.spawn(flow() = svc.ask("b1"))
    let b = task.spawn(flow() = svc.ask("b2"))
    match (task.await(a), task.await(b)) {
        (Ok(p), Ok(q)) => if x > 0 { p ++ q } else { q },
        _ => "none",
    }
}
"""

TOOLS = """\
import flowrt


@flowrt.bind("svc.ask")
def ask(q):
    if q in ("n=4", "b2") and BREAK:
        breakpoint()
    return {"Ok": "answer to " + q}


BREAK = False
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "svc.flow").write_text(SVC)
    (tmp_path / "lib" / "util.flow").write_text(UTIL)
    (tmp_path / "main.flow").write_text(MAIN)
    (tmp_path / "tools.py").write_text(TOOLS)
    return tmp_path


def flow2py(d: Path, *args: str, commands: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONBREAKPOINT"}
    return subprocess.run(
        [sys.executable, "-m", "flow2py.cli", *args],
        cwd=d,
        input=commands,
        capture_output=True,
        text=True,
        timeout=120,
        env={**environ, **(env or {})},
    )


def run(d: Path, run_id: str, *args: str, commands: str = "", entry: str = "main", env=None):
    return flow2py(
        d,
        "run",
        "main.flow",
        "--entry",
        entry,
        "--input",
        '{"x": 3}',
        "--tools",
        "tools.py",
        "--store",
        "runs.db",
        "--run-id",
        run_id,
        *args,
        commands=commands,
        env=env,
    )


def kinds(d: Path, run_id: str) -> list[str]:
    with sqlite3.connect(d / "runs.db") as db:
        rows = db.execute("SELECT n FROM facts WHERE run=? ORDER BY n", (run_id,)).fetchall()
    p = flow2py(d, "history", run_id, "--store", "runs.db", "--format", "json")
    assert p.returncode == 0, p.stderr
    facts = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    assert len(facts) == len(rows)
    return [f["kind"] for f in facts]


def state(d: Path, run_id: str) -> str:
    p = flow2py(d, "runs", "--store", "runs.db", "--format", "json")
    return next(r["state"] for r in json.loads(p.stdout) if r["run_id"] == run_id)


def prompts(out: str) -> list[str]:
    """pdb's output, one block per command (split at its prompt)."""
    return out.split("(Pdb) ")


# ---- a breakpoint on a Flow line, two Flow calls deep ---------------------------------------------


def test_a_flow_breakpoint_two_calls_deep_shows_the_flow_call_chain_and_quitting_halts_the_run(proj):
    p = run(proj, "b1", "--break", "lib/util.flow:6", commands="where\nup\np a\np x\ndown\np q\nq\n")
    assert p.returncode == 130, p.stdout + p.stderr
    blocks = prompts(p.stdout)
    assert blocks[0] == "Breakpoint 1 at lib/util.flow:6\n> lib/util.flow(6)helper()\n-> match svc.ask(q) {\n"
    # where: both Flow frames, the caller first, each with its Flow line and text; no runtime frame
    assert blocks[1] == (
        "Flow task root:\n"
        "  main.flow(7)main()\n-> let r = util.helper(a)\n"
        "> lib/util.flow(6)helper()\n-> match svc.ask(q) {\n"
    )
    assert blocks[2] == "> main.flow(7)main()\n-> let r = util.helper(a)\n"  # up: the caller's line
    assert blocks[3:5] == ["4\n", "3\n"]  # p a, p x: the caller's Flow variables
    assert blocks[5] == "> lib/util.flow(6)helper()\n-> match svc.ask(q) {\n"
    assert blocks[6] == "'n=4'\n"
    assert "halted: run b1: the debugger was quit (BdbQuit); no End is recorded" in p.stdout
    assert kinds(proj, "b1") == ["Start"]  # stopped before the call: no End, nothing faulted
    assert state(proj, "b1") == "halted"


def test_a_breakpoint_by_the_flow_files_path_and_continuing_completes_the_run(proj):
    p = run(proj, "b2", "--break", str(proj / "main.flow") + ":8", commands="p r\nc\n")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "> main.flow(8)main()\n-> r ++ \"!\"\n(Pdb) 'answer to n=4'\n" in p.stdout
    assert p.stdout.splitlines()[-1].endswith('"answer to n=4!"')
    assert kinds(proj, "b2") == ["Start", "Call", "Reply", "End"]


def test_a_breakpoint_on_a_generated_py_line_stops_at_its_flow_line(proj):
    b = flow2py(proj, "build", "main.flow", "-o", "out")
    assert b.returncode == 0, b.stderr
    py = proj / "out" / "main_flow" / "lib" / "util.py"
    line = next(n for n, text in enumerate(py.read_text().splitlines(), 1) if "return a" in text)
    # the Python lines of one Flow line are one line to pdb: it stops at the first of them
    p = run(proj, "b3", "--break", f"out/main_flow/lib/util.py:{line}", commands="p q\nq\n")
    assert p.returncode == 130, p.stdout + p.stderr
    assert p.stdout.startswith(
        f"out/main_flow/lib/util.py:{line} is generated from lib/util.flow:7\n"
        "Breakpoint 1 at lib/util.flow:7\n> lib/util.flow(7)helper()\n-> Ok(a) => a,\n"
        "(Pdb) 'n=4'\n"
    ), p.stdout
    assert kinds(proj, "b3") == ["Start", "Call", "Reply"]  # quit after the reply: still no End


@pytest.mark.parametrize(
    "spec, says",
    [
        ("main.flow", "--break main.flow: expected FILE:LINE"),
        ("nowhere.flow:3", "--break nowhere.flow:3: cannot read nowhere.flow"),
        ("main.flow:99", "--break main.flow:99: main.flow has 23 lines"),
    ],
)
def test_a_break_that_names_no_line_is_refused_before_anything_is_recorded(proj, spec, says):
    p = run(proj, "bad", "--break", spec)
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith(f"flow2py: {says}"), p.stderr
    assert not (proj / "runs.db").exists()


# ---- breakpoint() in a Tool ---------------------------------------------------------------------


def test_breakpoint_in_a_tool_shows_the_flow_frames_waiting_on_its_call(proj):
    (proj / "tools.py").write_text(TOOLS.replace("BREAK = False", "BREAK = True"))
    p = run(proj, "t1", commands="where\np q\nup\np x\nc\n")
    assert p.returncode == 0, p.stdout + p.stderr
    blocks = prompts(p.stdout)
    assert blocks[1].startswith(
        "Flow task root:\n"
        "  main.flow(7)main()\n-> let r = util.helper(a)\n"
        "  lib/util.flow(6)helper()\n-> match svc.ask(q) {\n"
        f"> {proj / 'tools.py'}(8)ask()\n"
    )
    assert blocks[2] == "'n=4'\n"  # the Tool's own variable
    assert blocks[3] == "> lib/util.flow(6)helper()\n-> match svc.ask(q) {\n"  # up: the Flow caller
    assert blocks[4] == "4\n"
    assert kinds(proj, "t1") == ["Start", "Call", "Reply", "End"]


def test_breakpoint_in_a_tool_on_a_worker_thread_shows_the_task_that_made_the_call(proj):
    (proj / "tools.py").write_text(TOOLS.replace("BREAK = False", "BREAK = True"))
    p = run(proj, "t3", entry="both", commands="where\nup\nc\n")
    assert p.returncode == 0, p.stdout + p.stderr
    blocks = prompts(p.stdout)
    assert blocks[1].startswith(
        "Flow task root/2 (spawned by root):\n"
        '  main.flow(18)_flow18()\n-> let b = task.spawn(flow() = svc.ask("b2"))\n'
        f"> {proj / 'tools.py'}(8)ask()\n"
    ), blocks[1]
    assert blocks[2] == '> main.flow(18)_flow18()\n-> let b = task.spawn(flow() = svc.ask("b2"))\n'


def test_pythonbreakpoint_0_turns_breakpoint_off_as_in_python(proj):
    (proj / "tools.py").write_text(TOOLS.replace("BREAK = False", "BREAK = True"))
    p = run(proj, "t2", env={"PYTHONBREAKPOINT": "0"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "(Pdb)" not in p.stdout


# ---- post-mortem ---------------------------------------------------------------------------------


def test_pdb_opens_a_post_mortem_at_the_faulting_flow_frame_and_quitting_records_no_fault(proj):
    p = run(proj, "f1", "--pdb", entry="faulty", commands="where\np d\nup\np a\nq\n")
    assert p.returncode == 130, p.stdout + p.stderr
    blocks = prompts(p.stdout)
    assert blocks[0] == (
        "fault at lib/util.flow:15: integer division by zero (post-mortem; q halts the run, c records the fault)\n"
        "> lib/util.flow(15)divide()\n-> Ok(_) => 100 / d,\n"
    )
    assert blocks[1] == (
        "Flow task root:\n  main.flow(13)faulty()\n-> util.divide(a) + 1\n"
        "> lib/util.flow(15)divide()\n-> Ok(_) => 100 / d,\n"
    )
    assert blocks[2:5] == ["0\n", "> main.flow(13)faulty()\n-> util.divide(a) + 1\n", "4\n"]
    assert kinds(proj, "f1") == ["Start", "Call", "Reply"]  # no End Faulted
    assert state(proj, "f1") == "halted"


def test_continuing_a_post_mortem_records_the_fault(proj):
    p = run(proj, "f2", "--pdb", entry="faulty", commands="c\n")
    assert p.returncode == 4, p.stdout + p.stderr
    assert "faulted at lib/util.flow:15: integer division by zero" in p.stdout
    assert kinds(proj, "f2") == ["Start", "Call", "Reply", "End"]


# ---- --trace and stepping ------------------------------------------------------------------------


def test_trace_stops_at_the_first_flow_line_and_steps_through_flow_calls_only(proj):
    p = run(proj, "s1", "--trace", commands="n\ns\nn\nn\nn\nq\n")
    assert p.returncode == 130, p.stdout + p.stderr
    where = [b.splitlines()[0] for b in prompts(p.stdout)[:-1]]
    assert where == [
        "> main.flow(6)main()",  # the first Flow line
        "> main.flow(7)main()",
        "> lib/util.flow(5)helper()",  # s: into the Flow call, not into the trampoline
        "> lib/util.flow(6)helper()",
        "> lib/util.flow(7)helper()",  # n over the Tool call: its reply has come
        "> main.flow(8)main()",  # n past the return: back in the caller, with its value
    ]


# ---- the pieces ---------------------------------------------------------------------------------


def test_a_generated_line_maps_to_the_flow_line_of_its_statement(tmp_path):
    py = tmp_path / "m.py"
    py.write_text(
        "# Generated by flow2py from m.flow; do not edit (rebuild instead).\n"
        "import flowrt as rt\n"
        "def f(x):  # flow: m.flow:3\n"
        "    y = (\n"
        "        x + 1\n"
        "    )  # flow: m.flow:4\n"
        "    return y  # flow: m.flow:5\n"
    )
    assert generated_location(str(py), 7) == ("m.flow", 5)
    assert generated_location(str(py), 6) == ("m.flow", 4)
    assert generated_location(str(py), 5) == ("m.flow", 3)  # inside a statement: the marker above
    assert generated_location(str(py), 1) == ("m.flow", 3)  # above every statement: the first
    (tmp_path / "plain.py").write_text("x = 1  # flow: m.flow:3\n")
    assert generated_location(str(tmp_path / "plain.py"), 1) is None  # not generated by flow2py


def test_a_flow_file_is_named_by_its_name_or_a_path_ending_in_it(tmp_path):
    known = ["main.flow", "lib/util.flow", "std@v1/list.flow"]
    assert match_flow_file("lib/util.flow", known) == "lib/util.flow"
    assert match_flow_file(str(tmp_path / "lib" / "util.flow"), known) == "lib/util.flow"
    assert match_flow_file(str(tmp_path / "main.flow"), known) == "main.flow"
    assert match_flow_file(str(tmp_path / "other.flow"), known) is None
