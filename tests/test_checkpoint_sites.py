"""`check --checkpoints` tells the truth about the runtime (docs/spec/checking.md, "Checkpoint
sites"): every entry of tests/flow_programs/checkpoint_sites runs with --checkpoint-every 1, and
the checkpoints it takes are compared with what the checker reported for the tail calls it made."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from flow2py.cli import main

PROGRAM = Path(__file__).parent / "flow_programs" / "checkpoint_sites"

# entry -> (its input, the tail call sites it makes as "file:line", the functions it checkpoints at)
ENTRIES = {
    "background": ({}, ["main:39", "main:11", "lib:7", "main:39:63"], set()),
    "parked": ({}, ["main:41", "main:18"], {"wait"}),
    "dropped": ({}, ["main:45", "main:24"], set()),
    "nested": ({}, ["lib:13", "main:50", "main:24"], {"spin"}),
    "value": ({"k": 1}, ["main:56", "main:24"], {"spin"}),
    "lam": ({"k": 1}, ["main:62", "main:61", "main:24"], {"spin"}),
    "function_arg": ({}, ["main:65", "main:30", "main:28"], set()),
    "function_type_arg": ({}, ["main:69", "main:36"], set()),
    "nested_function_type_arg": ({}, ["main:74", "main:36"], set()),
}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("sites")
    for f in PROGRAM.iterdir():
        shutil.copy(f, d / f.name)
    r = CliRunner().invoke(main, ["check", "--checkpoints", "--format", "json", str(d / "main.flow")])
    assert r.exit_code == 0, r.output
    sites = {}
    for s in json.loads(r.stdout):
        key = f"{Path(s['file']).stem}:{s['line']}"
        sites[key] = sites[f"{key}:{s['column']}"] = s
    return d, sites


def _checkpoints(d, entry, args):
    db = str(d / f"{entry}.db")
    r = CliRunner().invoke(
        main,
        [
            "run",
            str(d / "main.flow"),
            "--entry",
            entry,
            "--input",
            json.dumps(args),
            "--tools",
            str(d / "tools.py"),
            "--store",
            db,
            "--run-id",
            entry,
            "--checkpoint-every",
            "1",
        ],
    )
    assert r.exit_code in (0, 3), r.output
    facts = [
        json.loads(x)
        for x in CliRunner()
        .invoke(main, ["history", entry, "--store", db, "--format", "json"])
        .stdout.splitlines()
    ]
    return {f["function"] for f in facts if f["kind"] == "Checkpoint"}


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_checkpoints_taken_are_at_sites_reported_eligible(program, entry):
    d, sites = program
    args, made, expected = ENTRIES[entry]
    taken = _checkpoints(d, entry, args)
    assert taken == expected
    eligible = [sites[m] for m in made if sites[m]["eligible"]]
    if any(s["callee"] is None for s in eligible):
        return  # an eligible call through a function value may checkpoint at what the value is
    assert taken <= {s["callee"].split("::")[-1] for s in eligible}  # nothing where the checker said no


def test_sites_the_runtime_never_checkpoints_are_reported_not_eligible_with_the_reason(program):
    _, sites = program
    reasons = {
        "main:11": "the arguments hold the task spawned at",  # a task in the middle of its own loop
        "main:39:38": "whose body is not one Tool call",
        "lib:7": "never runs as the root task's outermost function",
        "main:39:63": "a tail call inside a lambda that never runs as the root task's outermost frame",
        "main:45": "is still live here and not in the arguments",
        "main:62": "the callee is a lambda",
        "main:30": "an argument always holds a function value",
        "main:69": "its type argument `() -> Int` is a function or task type",
        "main:74": "its type argument `List<() -> Int>` is a function or task type",
    }
    for where, why in reasons.items():
        assert not sites[where]["eligible"], where
        assert why in sites[where]["reason"], (where, sites[where]["reason"])


def test_sites_that_depend_on_the_run_say_which_condition_they_could_not_check(program):
    _, sites = program
    assert sites["main:24"]["eligible"]  # spin: no task can be in its arguments
    assert sites["main:24"]["reason"].endswith(
        "when `spin` runs as the root task's outermost function and no other task is live"
    )
    assert "every task the arguments hold is parked on its only Tool call" in sites["main:18"]["reason"]
    assert "when the value is a top-level function" in sites["main:56"]["reason"]
    assert "when the lambda runs as the root task's outermost frame" in sites["main:61"]["reason"]
