"""`flow2py test` and flow2py.testing: virtual time, deterministic fakes, fakes per test, failures
that explain themselves (docs/spec/testing.md). Goldens: golden/testing/NAME.expected is the exact
output of `flow2py test golden/testing/NAME` (FLOW2PY_UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import functools
import os

import pytest
from click.testing import CliRunner

import flowrt as rt
from flow2py.cache import cache_for
from flow2py.cli import main
from flow2py.testing import load_suite
from repo_paths import ROOT

RACE = ROOT / "tests" / "testing_programs" / "race"
GOLDEN = ROOT / "golden" / "testing"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@functools.lru_cache(maxsize=None)
def race_suite():
    suite, diagnostics = load_suite(str(RACE / "test_race.flow"), cache_for(None))
    assert suite is not None, diagnostics
    return suite


def test_the_racing_program_passes_100_times_out_of_100_under_flow2py_test():
    r = invoke("test", *[RACE] * 100)
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[-1] == "500 passed, 0 failed"
    assert {line for line in lines[:-1]} == {
        "ok    test_race::the_approval_wins_the_race",
        "ok    test_race::the_deadline_wins_when_the_person_is_late",
        "ok    test_race::with_both_at_once_the_first_call_wins",
        "ok    test_race::a_day_passes_in_virtual_time",
        "ok    test_race::time_moves_to_the_late_answer",
    }


def test_every_test_records_the_same_history_on_every_run():
    suite = race_suite()
    for info in suite.tests:
        seen = {rt.to_text(suite.run(info).facts) for _ in range(20)}
        assert len(seen) == 1, f"{info.name}: {len(seen)} different histories"


def test_a_fake_answers_at_virtual_now_so_the_approval_beats_the_deadline_and_records_it():
    suite = race_suite()
    info = next(t for t in suite.tests if t.name == "the_approval_wins_the_race")
    text = rt.to_text(suite.run(info).facts)
    # the approval (root/1) is called first and answered at once; the sleep's call stays open
    # and is closed by the Stop when the race is decided: virtual time never moved
    assert "Choice      picked root/1" in text
    assert "closed root/2#1 with no reply" in text


def test_a_test_naming_a_fake_uses_it_instead_of_the_files():
    suite = race_suite()
    info = next(t for t in suite.tests if t.name == "the_deadline_wins_when_the_person_is_late")
    assert info.fakes == ("approve_late",)
    result = suite.run(info)
    assert result.passed, result.message
    assert "picked root/2" in rt.to_text(result.facts)  # the deadline's task


@pytest.mark.parametrize("name", ["failures", "duplicate_fake"])
def test_failure_messages_match_their_golden(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = invoke("test", os.path.join("golden", "testing", name))
    assert r.exit_code == 1
    path = GOLDEN / f"{name}.expected"
    if os.environ.get("FLOW2PY_UPDATE_GOLDEN"):
        path.write_text(r.output, encoding="utf-8")
    assert r.output == path.read_text(encoding="utf-8")


def test_a_false_comparison_shows_both_sides_as_flow_text(tmp_path):
    (tmp_path / "test_eq.flow").write_text(
        "pub type P { pub name: Text, pub tags: List<Text> }\n\n"
        '@test flow differs() -> Bool = P { name: "a", tags: ["x"] } == P { name: "a", tags: [] }\n'
    )
    r = invoke("test", tmp_path)
    assert r.exit_code == 1
    assert '    left:  P { name: "a", tags: ["x"] }\n    right: P { name: "a", tags: [] }\n' in r.output


def test_a_call_nothing_answers_fails_the_test_naming_the_open_call(tmp_path):
    (tmp_path / "svc.flow").write_text("@tool pub flow ask(q: Text) -> Result<Text, Text>\n")
    (tmp_path / "test_wait.flow").write_text(
        'use "./svc"\n\n@test flow waits() -> Bool !tool = svc.ask("q") == Ok("a")\n'
    )
    suite, diagnostics = load_suite(str(tmp_path / "test_wait.flow"))
    assert suite is not None, diagnostics
    suite.bindings = rt.Bindings({"svc.ask": lambda q: rt.pending})  # a Python fake leaving it open
    result = suite.run(suite.tests[0])
    assert not result.passed
    assert result.message.startswith('waits on root#1 svc.ask("q"), which nothing answers')


def test_flow2py_test_finds_test_files_below_a_directory(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "a" / "test_one.flow").write_text("@test flow one() -> Bool = true\n")
    (tmp_path / "a" / "b" / "test_two.flow").write_text("@test flow two() -> Bool = 1 + 1 == 2\n")
    (tmp_path / "a" / "helper.flow").write_text("pub flow h() -> Int = 1\n")
    (tmp_path / ".hidden" / "test_no.flow").write_text("@test flow no() -> Bool = false\n")
    r = invoke("test", tmp_path)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == ["ok    test_one::one", "ok    test_two::two", "2 passed, 0 failed"]


def test_flow2py_test_refuses_a_directory_without_tests_and_a_missing_path(tmp_path):
    r = invoke("test", tmp_path)
    assert r.exit_code != 0 and "no test_*.flow file in" in r.output
    r = invoke("test", tmp_path / "nothing_here")
    assert r.exit_code != 0 and "no such file or directory" in r.output


def test_a_test_may_name_only_fakes_of_its_module(tmp_path):
    (tmp_path / "test_bad.flow").write_text(
        "flow helper() -> Int = 1\n\n@test(helper) flow t() -> Bool = helper() == 1\n"
    )
    r = invoke("test", tmp_path / "test_bad.flow")
    assert r.exit_code == 1
    assert (
        "error[E508]: `@test(...)` names the `@fake` functions of this module the test uses: `helper` is not one"
        in r.output
    )
