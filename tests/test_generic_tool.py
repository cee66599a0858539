"""A generic Tool called from generic Flow functions (issue 7, point 7): the Call records the
concrete type the outermost caller chose, the reply is admitted against it, and resume (from
Start and from a checkpoint) and replay agree. The program is tests/flow_programs/generic_tool;
its generic functions take their type arguments at run time (docs/spec/codegen.md)."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from flow2py.cli import main

PROGRAM = Path(__file__).parent / "flow_programs" / "generic_tool"


def _copy(tmp_path, boxes=False):
    for f in PROGRAM.iterdir():
        if f.is_file():
            shutil.copy(f, tmp_path / f.name)
    if boxes:
        tools = tmp_path / "tools.py"
        tools.write_text(tools.read_text().replace("BOXES = False", "BOXES = True"))
    return str(tmp_path / "main.flow"), str(tmp_path / "tools.py"), str(tmp_path / "r.db")


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _facts(run_id, db):
    return [
        json.loads(line)
        for line in _cli("history", run_id, "--store", db, "--format", "json").stdout.splitlines()
    ]


def _calls(run_id, db):
    return [(f["tool"], f.get("type_args"), f["args"]) for f in _facts(run_id, db) if f["kind"] == "Call"]


def _replies(run_id, db):
    return [f["reply"] for f in _facts(run_id, db) if f["kind"] == "Reply"]


def _run(src, tools, db, entry, run_id, *extra):
    return _cli("run", src, "--entry", entry, "--tools", tools, "--store", db, "--run-id", run_id, *extra)


def _replay_verdict(run_id, db):
    return _cli("replay", run_id, "--store", db).stdout.splitlines()[0]


def test_generic_tool_in_a_generic_function_records_the_callers_concrete_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    r = _run(src, tools, db, "one", "a")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "42"
    assert _calls("a", db) == [("kv.get", ["Int"], ['"int"'])]
    assert 'kv.get<Int>("int")' in _cli("history", "a", "--store", db).stdout
    assert _replay_verdict("a", db) == "Matched"


def test_reply_of_the_wrong_type_is_malformed_at_the_concrete_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    Path(tools).write_text(Path(tools).read_text().replace('"int": 42', '"int": "forty-two"'))
    r = _run(src, tools, db, "one", "m")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "0"  # fetch's default: the reply did not fit Int
    [reply] = _replies("m", db)
    assert reply.startswith("Err(Malformed(") and "expected Int" in reply
    assert _replay_verdict("m", db) == "Matched"


def test_two_levels_of_generic_functions_pass_the_type_down(tmp_path):
    src, tools, db = _copy(tmp_path)
    r = _run(src, tools, db, "two", "t")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '("hello", "bye")'
    assert [c[1] for c in _calls("t", db)] == [["Text"], ["Text"]]
    assert _replay_verdict("t", db) == "Matched"


def test_tool_call_inside_a_lambda_of_a_generic_function_records_the_concrete_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    r = _run(src, tools, db, "lambda", "l")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "[1, 2]"
    assert [c[1] for c in _calls("l", db)] == [["Int"], ["Int"]]
    assert _replay_verdict("l", db) == "Matched"


def test_generic_tool_as_a_function_value_is_called_at_the_callers_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    r = _run(src, tools, db, "values", "v")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "[Ok(true)]"
    assert _calls("v", db) == [("kv.get", ["Bool"], ['"yes"'])]


def test_resume_admits_a_delivered_reply_at_the_recorded_concrete_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    Path(tools).write_text(
        "from flowrt import bind, pending\n@bind('kv.get')\ndef get(key):\n    return pending\n"
    )
    r = _run(src, tools, db, "one", "p")
    assert r.exit_code == 3, r.output
    refused = _cli("resume", "p", "--store", db, "--tools", tools, "--reply", 'root#1={"Ok": "x"}')
    assert refused.exit_code == 1
    assert "expected Int" in refused.output and "internal error" not in refused.output
    assert len(_facts("p", db)) == 2  # nothing recorded by the refused resume
    done = _cli("resume", "p", "--store", db, "--tools", tools, "--reply", 'root#1={"Ok": 7}')
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "7"
    assert _replay_verdict("p", db) == "Matched"


def test_generic_loop_checkpoints_record_and_restore_a_record_type_argument(tmp_path):
    src, tools, db = _copy(tmp_path, boxes=True)
    r = _run(src, tools, db, "boxes", "b", "--checkpoint-every", "1")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "[Box { n: 1 }, Box { n: 2 }, Box { n: 3 }]"
    facts = _facts("b", db)
    checkpoints = [(f["function"], f["type_args"]) for f in facts if f["kind"] == "Checkpoint"]
    assert checkpoints and all(c == ("gather", ["Box"]) for c in checkpoints)
    assert [c[1] for c in _calls("b", db)] == [["Box"]] * 3
    assert _replay_verdict("b", db) == "Matched"


def test_resume_from_a_checkpoint_of_a_generic_loop_rebuilds_its_type_arguments(tmp_path):
    src, tools, db = _copy(tmp_path, boxes=True)
    # the third call stays open: the run pauses after two checkpoints at gather<Box>
    Path(tools).write_text(Path(tools).read_text().replace('if key == "box":', 'if key in ("box", "c"):'))
    r = _run(src, tools, db, "boxes", "rb", "--checkpoint-every", "1")
    assert r.exit_code == 3, r.output
    assert any(f["kind"] == "Checkpoint" for f in _facts("rb", db))
    [open_call] = [f["id"] for f in _facts("rb", db) if f["kind"] == "Call"][-1:]
    bad = _cli("resume", "rb", "--store", db, "--tools", tools, "--reply", f'{open_call}={{"Ok": 3}}')
    assert bad.exit_code == 1 and "expected" in bad.output  # admitted at Box, not Int
    done = _cli(
        "resume", "rb", "--store", db, "--tools", tools, "--reply", f'{open_call}={{"Ok": {{"n": 9}}}}'
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "[Box { n: 1 }, Box { n: 2 }, Box { n: 9 }]"
    assert _replay_verdict("rb", db) == "Matched"


def test_checkpoints_of_a_generic_loop_over_host_tokens_record_the_tool_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    r = _run(src, tools, db, "handles", "h", "--checkpoint-every", "1")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "0"
    checkpoints = [(f["function"], f["type_args"]) for f in _facts("h", db) if f["kind"] == "Checkpoint"]
    assert checkpoints and all(c == ("hold", ["Handle"]) for c in checkpoints)
    assert _replay_verdict("h", db) == "Matched"


def test_task_parked_on_a_generic_tool_across_checkpoints_is_admitted_at_its_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    r = _run(src, tools, db, "parked", "k", "--checkpoint-every", "1")
    assert r.exit_code == 3, r.output
    facts = _facts("k", db)
    assert any(f["kind"] == "Checkpoint" and f["type_args"] == ["Box"] for f in facts)
    [box_call] = [f for f in facts if f["kind"] == "Call" and f["args"] == ['"box"']]
    assert box_call["type_args"] == ["Box"]
    done = _cli(
        "resume", "k", "--store", db, "--tools", tools, "--reply", f'{box_call["id"]}={{"Ok": {{"n": 5}}}}'
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "Box { n: 5 }"
    assert _replay_verdict("k", db) == "Matched"


AMBIGUOUS = {
    "a.flow": "pub type Item { pub n: Int }\n",
    "svc.flow": "@tool pub flow ping(r: Int) -> Result<Int, Text>\n",
    "main.flow": """use "./a"
use "./svc"

type Item { n: Int }

flow loop<T>(x: T, round: Int) -> Int !tool = {
    guard round > 0 else { return round }
    let _ = svc.ping(round)
    loop(x, round - 1)
}

pub flow main() -> Int !tool = loop(a.Item { n: 1 }, 2)
pub flow mine() -> Int !tool = loop(Item { n: 1 }, 2)
""",
}


def test_no_checkpoint_is_taken_where_its_type_argument_would_not_read_back(tmp_path):
    """`Item` names two types of the program: a checkpoint recording `loop<Item>` could not be
    restored, so none is taken there; the run completes and replays."""
    for name, text in AMBIGUOUS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "tools.py").write_text(
        "from flowrt import bind\n@bind('svc.ping')\ndef ping(r):\n    return {'Ok': r}\n"
    )
    src, tools, db = str(tmp_path / "main.flow"), str(tmp_path / "tools.py"), str(tmp_path / "r.db")
    r = _run(src, tools, db, "main", "x", "--checkpoint-every", "1")
    assert r.exit_code == 0, r.output
    assert not [f for f in _facts("x", db) if f["kind"] == "Checkpoint"]
    assert _replay_verdict("x", db) == "Matched"


def test_fork_makes_a_parked_generic_tool_call_again_at_its_recorded_type(tmp_path):
    src, tools, db = _copy(tmp_path)
    r = _run(src, tools, db, "watched", "w", "--checkpoint-every", "1")
    assert r.exit_code == 3, r.output
    [box_call] = [f for f in _facts("w", db) if f["kind"] == "Call" and f["args"] == ['"box"']]
    assert box_call["type_args"] == ["Box"]
    f = _cli("fork", "w", "--checkpoint", "1", "--tools", tools, "--store", db, "--run-id", "fw")
    assert f.exit_code == 3, f.output
    [again] = [x for x in _facts("fw", db) if x["kind"] == "Call" and x["args"] == ['"box"']]
    assert (again["id"], again["type_args"]) == ("f:root/1#1", ["Box"])
    bad = _cli("resume", "fw", "--store", db, "--tools", tools, "--reply", 'f:root/1#1={"Ok": 7}')
    assert bad.exit_code == 1 and "expected" in bad.output
    done = _cli("resume", "fw", "--store", db, "--tools", tools, "--reply", 'f:root/1#1={"Ok": {"n": 7}}')
    assert (done.exit_code, done.stdout.strip()) == (0, "Box { n: 7 }"), done.output
    assert _replay_verdict("fw", db) == "Matched"
