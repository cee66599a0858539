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
    run = CliRunner().invoke(main, ["run", str(tmp_path / "main.flow"), "--input", '{"n": 5}', "--tools",
                                    str(tmp_path / "tools.py"), "--store", db, "--run-id", "g",
                                    "--checkpoint-every", "1"])
    assert run.exit_code == 0, run.output
    assert run.stdout.strip() == "[5, 5, 5]"
    facts = [json.loads(line) for line in CliRunner().invoke(
        main, ["history", "g", "--store", db, "--format", "json"]).stdout.splitlines()]
    checkpoints = [f for f in facts if f["kind"] == "Checkpoint"]
    assert [(c["function"], c["type_args"]) for c in checkpoints] == [("loop", ["Int"])] * 3
    assert CliRunner().invoke(main, ["replay", "g", "--store", db]).stdout.splitlines()[0] == "Matched"
