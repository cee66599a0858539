"""The `flow_env` fixture (flow2py.testenv): a Flow program driven from a Python test with Python
fakes, virtual time and a store of its own (docs/spec/testing.md, "From Python")."""

from __future__ import annotations

import flowrt as rt
from flowrt.engine import drive as drv

import datetime
import functools

import pytest

from repo_paths import ROOT, SUPPORT_MAIN

ASK = "Which Safari version does the customer use?"


def support_fakes(asked: list):
    def next_step(ticket, notes):
        if not notes:
            return {"Ok": {"Search": "safari login cookie"}}
        if len(notes) == 1:
            return {"Ok": {"Ask": ASK}}
        return {"Ok": {"Done": "Enable Secure on the session cookie; ..."}}

    def ask(question):
        asked.append(question)
        return rt.pending  # a person: the call stays open until the test delivers the reply

    return {
        "planner.next": next_step,
        "web.search": lambda query: rt.pending,
        "docs.search": lambda query: {"Ok": "SameSite=None requires Secure ..."},
        "human.ask": ask,
    }


def test_the_support_example_pauses_on_the_person_then_completes_and_replays_matched(flow_env):
    asked: list = []
    run = flow_env.start(
        SUPPORT_MAIN, {"ticket": "Login fails on Safari"}, fakes=support_fakes(asked), checkpoint_every=5
    )
    assert run.state == "paused"
    assert [(c.id, c.tool, c.args) for c in run.open_calls] == [("c1:root#2", "human.ask", (ASK,))]
    assert asked == [ASK]

    run.deliver("c1:root#2", {"Ok": "Safari 17.4"})
    assert run.state == "completed"
    assert rt.show(run.result) == 'Resolved("Enable Secure on the session cookie; ...")'
    facts = run.facts
    assert [f.kind for f in facts] == [
        "Start", "Call", "Reply", "Call", "Call", "Reply", "Choice", "Stop", "Checkpoint",
        "Call", "Reply", "Call", "Reply", "Call", "Reply", "End",
    ]  # fmt: skip
    reply = next(f for f in facts if f.kind == "Reply" and f.id == "c1:root#2")
    assert reply.tool == "human.ask" and reply.reply == rt.Ok("Safari 17.4")
    assert [f.args[1] for f in run.calls("planner.next")][-1] == rt.list_of(
        ("SameSite=None requires Secure ...", "Safari 17.4")
    )
    assert isinstance(run.replay(), drv.Matched)


RACE = ROOT / "tests" / "testing_programs" / "race" / "test_race.flow"
WAIT = ROOT / "tests" / "testing_programs" / "wait" / "main.flow"


def test_a_race_of_a_person_against_a_deadline_skips_time_only_when_nothing_else_can_move(flow_env):
    # the person's call is left open by its fake: time does not move by itself, the run pauses
    run = flow_env.start(WAIT, {"request": "deploy"}, fakes={"approvals.ask": lambda r: rt.pending})
    assert run.state == "paused"
    assert sorted(c.tool for c in run.open_calls) == ["approvals.ask", "clock.sleep"]
    start = flow_env.clock.now
    run.advance(30 * 60)  # half an hour: the deadline is not due yet
    assert run.state == "paused" and flow_env.clock.now - start == 30 * 60 * 10**9
    run.advance(datetime.timedelta(minutes=30))  # the deadline fires: the run ends TimedOut
    assert run.state == "completed" and rt.show(run.result) == "TimedOut"
    assert [f.kind for f in run.facts].count("Stop") == 1  # the person's task was stopped
    assert isinstance(run.replay(), drv.Matched)


def test_an_answer_before_the_deadline_wins(flow_env):
    run = flow_env.start(WAIT, {"request": "deploy"}, fakes={"approvals.ask": lambda r: rt.pending})
    ask = next(c for c in run.open_calls if c.tool == "approvals.ask")
    run.deliver(ask.id, {"Ok": True})
    assert rt.show(run.result) == "Approved(true)"


def test_a_day_of_sleeps_passes_by_itself_when_only_the_clock_is_waited_on(flow_env):
    run = flow_env.start(
        WAIT, {"request": "deploy"}, fakes={"approvals.ask": lambda r: {"Ok": True}}, entry="wait_a_day"
    )
    assert run.state == "completed"
    assert rt.show(run.result) == "86400000000000"  # the virtual nanoseconds the day took
    assert [f.tool for f in run.calls()] == ["clock.now", "clock.sleep", "clock.now", "approvals.ask"]


@pytest.mark.parametrize("attempt", range(100))
def test_the_racing_program_gives_one_outcome_every_time_under_pytest(attempt):
    suite = _race_suite()
    for info in suite.tests:
        result = suite.run(info)
        assert result.passed, f"{result.name}: {result.message}"


@functools.lru_cache(maxsize=None)
def _race_suite():
    from flow2py.cache import cache_for
    from flow2py.testing import load_suite

    suite, diagnostics = load_suite(str(RACE), cache_for(None))
    assert suite is not None, diagnostics
    return suite


def _pytest_examples() -> list[tuple[int, str]]:
    """The ```python blocks of docs/spec/testing.md marked `<!-- pytest example -->`: (line, text)."""
    lines = (ROOT / "docs" / "spec" / "testing.md").read_text(encoding="utf-8").split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.strip() == "```python" and i and lines[i - 1].strip() == "<!-- pytest example -->":
            j = lines.index("```", i + 1)
            out.append((i + 1, "\n".join(lines[i + 1 : j]) + "\n"))
    return out


def test_testing_md_has_pytest_examples():
    assert len(_pytest_examples()) >= 2


@pytest.mark.parametrize(
    "line, text", _pytest_examples(), ids=lambda x: f"testing.md:{x}" if isinstance(x, int) else ""
)
def test_the_pytest_examples_of_testing_md_pass(line, text, tmp_path, monkeypatch):
    from flow2py.testenv import FlowEnv

    monkeypatch.chdir(ROOT)  # the examples name programs from the project's root
    namespace: dict = {}
    exec(compile(text, f"testing.md:{line}", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, f"testing.md:{line}: no test function"
    for i, f in enumerate(tests):
        env = FlowEnv(str(tmp_path / f"env{i}.db"))
        try:
            f(env)
        finally:
            env.close()
