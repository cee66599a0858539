"""`flow2py check`, `tools` and `build` through the command line, as an author uses them."""

import importlib
import json
import sys
from pathlib import Path

from click.testing import CliRunner

from flow2py.cli import main
from repo_paths import SUPPORT_MAIN

MISTAKES = Path(__file__).parent / "cli_programs" / "mistakes" / "main.flow"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_check_accepts_the_support_example_with_exit_0():
    r = invoke("check", SUPPORT_MAIN)
    assert r.exit_code == 0, r.output
    assert "error" not in r.output


def test_check_reports_every_independent_mistake_in_one_run_with_exit_1():
    r = invoke("check", "--format", "json", MISTAKES)
    assert r.exit_code == 1
    diags = json.loads(r.stdout)
    codes = sorted(d["code"] for d in diags)
    # a non-exhaustive match, a pure function reaching a Tool, an unused binding, a type mismatch
    assert codes == ["E201", "E301", "E401", "E404"]
    for d in diags:
        assert {
            "code",
            "message",
            "file",
            "line",
            "column",
            "end_line",
            "end_column",
            "related",
            "fixes",
        } <= d.keys()
    missing = next(d for d in diags if d["code"] == "E401")
    assert "`Blue`" in missing["message"]
    effect = next(d for d in diags if d["code"] == "E301")
    assert effect["related"] and effect["fixes"][0]["safe"] is True


def test_check_text_rendering_underlines_the_offending_source():
    r = invoke("check", MISTAKES)
    assert r.exit_code == 1
    assert "error[E404]: `unused` is never used" in r.output
    assert "let unused = 3" in r.output and "^^^^^^" in r.output
    assert r.output.rstrip().endswith("4 errors")


def test_check_checkpoints_lists_the_eligible_tail_calls_of_the_program_only():
    r = invoke("check", "--checkpoints", SUPPORT_MAIN)
    assert r.exit_code == 0
    lines = r.output.strip().splitlines()
    assert lines and all("main.flow" in line for line in lines)
    assert sum(": checkpoint: work(...)" in line for line in lines) == 4


def test_tools_lists_every_reachable_tool_with_its_signature():
    r = invoke("tools", SUPPORT_MAIN)
    assert r.exit_code == 0
    assert r.output.splitlines() == [
        "docs.search(query: Text) -> Result<Text, Text>  [docs::search]",
        "human.ask(question: Text) -> Result<Text, Text>  [human::ask]",
        "planner.next(ticket: Text, notes: List<Text>) -> Result<Action, Text>  [planner::next]",
        "web.search(query: Text) -> Result<Text, Text>  [web::search]",
    ]


def test_check_of_a_missing_file_is_a_message_not_a_traceback(tmp_path):
    r = invoke("check", tmp_path / "nope.flow")
    assert r.exit_code == 1
    assert "nope.flow" in r.output and "Traceback" not in r.output


def test_build_writes_an_importable_package(tmp_path, monkeypatch):
    r = invoke("build", SUPPORT_MAIN, "-o", tmp_path, "--name", "support_pkg")
    assert r.exit_code == 0, r.output
    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = importlib.import_module("support_pkg")
    try:
        fn, params = pkg.PROGRAM.entry("main")
        assert [n for n, _ in params] == ["ticket"]
        assert {t[1] for t in pkg.PROGRAM.tools} >= {"planner.next", "web.search", "docs.search", "human.ask"}
        source = (tmp_path / "support_pkg" / "main.py").read_text()
        assert "# flow: main.flow:" in source
    finally:
        for name in [m for m in sys.modules if m == "support_pkg" or m.startswith("support_pkg.")]:
            del sys.modules[name]


STD_FLOW = Path(__file__).parent / "std_flow"


def test_flow_test_runs_every_test_with_fakes_and_reports_each(tmp_path):
    r = invoke("test", STD_FLOW / "test_task.flow", STD_FLOW / "test_list.flow")
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert "ok    test_task::race_returns_one_of_the_answers" in lines
    assert lines[-1] == "9 passed, 0 failed"


def test_flow_test_fails_a_false_test_and_an_unfaked_tool_with_exit_1(tmp_path):
    (tmp_path / "svc.flow").write_text("@tool pub flow fetch(key: Text) -> Result<Text, Text>\n")
    (tmp_path / "test_bad.flow").write_text(
        'use "./svc"\n\n'
        "@test flow arithmetic_is_wrong() -> Bool = 1 + 1 == 3\n\n"
        '@test flow needs_a_fake() -> Bool !tool = match svc.fetch("k") {\n'
        "    Ok(_) => true,\n    Err(_) => false,\n}\n"
    )
    r = invoke("test", tmp_path / "test_bad.flow")
    assert r.exit_code == 1
    assert "FAIL  test_bad::arithmetic_is_wrong" in r.output
    assert "`==` is false:\n    left:  2\n    right: 3\n" in r.output
    assert "FAIL  test_bad::needs_a_fake" in r.output and "svc.fetch" in r.output
    assert r.output.strip().splitlines()[-1] == "0 passed, 2 failed"
