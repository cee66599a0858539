"""A checkpoint at a generic top-level function records its concrete type arguments (seed 000,
"Checkpoints": the function, its type arguments if it is generic, and its arguments), also when
the generic function tail-calls itself with its own type parameter; resume and replay use them."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from flow2py.cli import main

PROGRAM = Path(__file__).parent / "flow_programs" / "generic_loop"


def test_checkpoints_of_a_generic_loop_record_concrete_type_arguments(tmp_path):
    for f in PROGRAM.iterdir():
        shutil.copy(f, tmp_path / f.name)
    db = str(tmp_path / "r.db")
    run = CliRunner().invoke(
        main,
        [
            "run",
            str(tmp_path / "main.flow"),
            "--input",
            '{"n": 5}',
            "--tools",
            str(tmp_path / "tools.py"),
            "--store",
            db,
            "--run-id",
            "g",
            "--checkpoint-every",
            "1",
        ],
    )
    assert run.exit_code == 0, run.output
    assert run.stdout.strip() == "[5, 5, 5]"
    facts = [
        json.loads(line)
        for line in CliRunner()
        .invoke(main, ["history", "g", "--store", db, "--format", "json"])
        .stdout.splitlines()
    ]
    checkpoints = [f for f in facts if f["kind"] == "Checkpoint"]
    assert [(c["function"], c["type_args"]) for c in checkpoints] == [("loop", ["Int"])] * 3
    assert CliRunner().invoke(main, ["replay", "g", "--store", db]).stdout.splitlines()[0] == "Matched"


# A one-element tuple as the type argument: its text is `(Int,)` (`(Int)` is Int in Flow).
ONE_TUPLE_MAIN = (
    (PROGRAM / "main.flow")
    .read_text()
    .replace(
        "pub flow main(n: Int) -> List<Int> !tool = loop([n], 1, [])",
        "pub flow main(n: Int) -> List<(Int,)> !tool = loop([(n,)], 1, [])",
    )
)


def _one_tuple_loop(tmp_path):
    from flow_run import flow_program

    assert ONE_TUPLE_MAIN != (PROGRAM / "main.flow").read_text()
    return flow_program(
        tmp_path, {"main.flow": ONE_TUPLE_MAIN, "svc.flow": (PROGRAM / "svc.flow").read_text()}
    )


def test_a_one_element_tuple_type_argument_is_recorded_as_flow_writes_it(tmp_path):
    import flowrt as rt
    from flowrt.data.facts import Checkpoint

    prog = _one_tuple_loop(tmp_path)
    out, rec = prog.run("main", (5,), tools={"svc.ping": lambda r: {"Ok": r}}, checkpoint_every=1)
    assert type(out) is rt.RunCompleted and rt.show(out.value) == "[(5,), (5,), (5,)]"
    assert [f.type_args for f in rec.facts if type(f) is Checkpoint] == [("(Int,)",)] * 3
    assert type(prog.replay(rec.facts)) is rt.Matched


def test_a_history_an_older_flowrt_recorded_with_a_one_element_tuple_as_its_type_text_still_replays_and_resumes(
    tmp_path,
):
    """Before one-element tuple texts kept their comma, flowrt recorded `(Int,)` as `(Int)`: those
    facts are read as they were written, and name the same type."""
    import dataclasses

    import flowrt as rt
    from flowrt.data.facts import Checkpoint

    prog = _one_tuple_loop(tmp_path)
    tools = {"svc.ping": lambda r: {"Ok": r}}
    _, rec = prog.run("main", (5,), tools=tools, checkpoint_every=1)
    older = [dataclasses.replace(f, type_args=("(Int)",)) if type(f) is Checkpoint else f for f in rec.facts]
    assert older != rec.facts
    assert type(prog.replay(older)) is rt.Matched
    second = next(i for i, f in enumerate(older) if type(f) is Checkpoint and f.checkpoint == 2)
    out, _ = prog.resume(older[: second + 1], tools=tools)  # restored from the older text
    assert type(out) is rt.RunCompleted and rt.show(out.value) == "[(5,), (5,), (5,)]"


def test_a_generic_tool_call_an_older_flowrt_recorded_at_a_one_element_tuple_still_replays(tmp_path):
    import dataclasses

    import flowrt as rt
    from flow_run import flow_program
    from flowrt.data.facts import Call

    prog = flow_program(
        tmp_path,
        {
            "kv.flow": "@tool pub flow get<T>(k: Text) -> Result<T, Text>\n",
            "main.flow": 'use "./kv"\n\npub flow main() -> (Int,) !tool = match kv.get("k") {\n'
            "    Ok(v) => v,\n    Err(_) => (0,),\n}\n",
        },
    )
    out, rec = prog.run("main", (), tools={"kv.get": lambda k: {"Ok": [7]}})
    assert type(out) is rt.RunCompleted and rt.show(out.value) == "(7,)"
    assert [f.type_args for f in rec.facts if type(f) is Call] == [("(Int,)",)]
    older = [dataclasses.replace(f, type_args=("(Int)",)) if type(f) is Call else f for f in rec.facts]
    assert type(prog.replay(older)) is rt.Matched
    other = [dataclasses.replace(f, type_args=("(Text)",)) if type(f) is Call else f for f in rec.facts]
    assert type(prog.replay(other)) is rt.Diverged  # another type is still another type


def test_type_texts_of_one_element_tuples_keep_their_comma_and_read_back():
    from flowrt.data.typedesc import T, names_types, parse_type_text, type_text
    from flowrt.data.values import ClassTable

    one = T.TupleOf(T.INT)
    assert type_text(one) == "(Int,)" and type_text(T.ListOf(T.TupleOf(one))) == "List<((Int,),)>"
    assert type_text(T.TupleOf(T.INT, T.TEXT)) == "(Int, Text)"
    classes = ClassTable()
    for text in ("(Int,)", "(Int)", " ( Int , ) "):
        assert parse_type_text(text, classes) == one
    assert parse_type_text("List<((Int,),)>", classes) == T.ListOf(T.TupleOf(one))
    assert names_types(("(Int)",), (one,), classes) and not names_types(("Int",), (one,), classes)
