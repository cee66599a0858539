"""What the command line prints about runs (docs/spec/execution.md "What the command line prints"):
a paused run's open calls with their reply types and the commands that answer them, a finished
run's id on stderr, `flow2py runs` with its times, filters and JSON.

golden/cli/<case>/ holds a transcript each: `case.json` names the program (the case's folder, or
a folder it points to) and the commands, run in that order in a folder of their own;
`expected.txt` is what each printed (times masked). FLOW2PY_UPDATE_GOLDEN=1 rewrites them."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from flow2py import cli_output
from flow2py.cli import main as cli_main
from flowrt.host.runs_view import iso_time

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "cli"
UPDATE = os.environ.get("FLOW2PY_UPDATE_GOLDEN") == "1"
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z")


def _program(case: Path) -> Path:
    plan = json.loads((case / "case.json").read_text())
    return (case / plan["program"]).resolve() if "program" in plan else case


def _setup(case: Path, where: Path) -> list[str]:
    for f in _program(case).iterdir():
        if f.is_file() and f.suffix in (".flow", ".py"):
            shutil.copy(f, where / f.name)
    return json.loads((case / "case.json").read_text())["commands"]


def invoke(*args: str):
    r = CliRunner().invoke(cli_main, list(args), catch_exceptions=False)
    assert "Traceback" not in r.output, r.output
    return r


def transcript(commands: list[str]) -> str:
    out = []
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "flow2py", command
        r = invoke(*words[1:])
        out.append(f"$ {command}\nexit {r.exit_code}\n")
        if r.stdout:
            out.append(r.stdout)
        if r.stderr:
            out.append("stderr:\n" + r.stderr)
        out.append("\n")
    return TIME.sub("<time>", "".join(out))


@pytest.mark.parametrize("name", CASES)
def test_cli_transcript_matches_golden(name, tmp_path, monkeypatch):
    case = GOLDEN / name
    commands = _setup(case, tmp_path)
    monkeypatch.chdir(tmp_path)
    got = transcript(commands)
    expected = case / "expected.txt"
    if UPDATE or not expected.exists():
        expected.write_text(got)
    assert got == expected.read_text(), f"regenerate with FLOW2PY_UPDATE_GOLDEN=1 and review {expected}"


def test_every_cli_golden_case_is_complete():
    for name in CASES:
        for part in ("case.json", "expected.txt"):
            assert (GOLDEN / name / part).exists(), f"golden/cli/{name} lacks {part}"
        assert list(_program(GOLDEN / name).glob("main.flow")), f"golden/cli/{name}: no main.flow"


# ---- the paused report's commands work as printed ----------------------------------------------


def _commands(report: str, label: str) -> list[str]:
    return [line.split(label, 1)[1].strip() for line in report.splitlines() if line.strip().startswith(label)]


@pytest.fixture
def desk(tmp_path, monkeypatch):
    _setup(GOLDEN / "desk", tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_printed_resume_commands_run_as_printed_until_the_run_completes(desk):
    r = invoke("run", "main.flow", "--input", '{"order": "o-1"}', "--tools", "tools.py", "--store", "s.db")
    assert r.exit_code == 3
    run_id = re.match(r"paused: run (\S+) waits on 2 open call\(s\)", r.stdout).group(1)  # an id it made
    first, second = _commands(r.stdout, "resume:")
    assert "--store s.db" in first and "--tools tools.py" in first
    r = invoke(*shlex.split(first)[1:])  # the reply is the printed one, as it is
    assert r.exit_code == 3 and r.stdout.startswith(f"paused: run {run_id} waits on 1 open call(s)")
    assert _commands(r.stdout, "resume:") == [second]  # the other call, answered the same way
    r = invoke(*shlex.split(second)[1:])
    assert (r.exit_code, r.stdout, r.stderr) == (0, '"approved for ..."\n', "")


def test_the_worker_line_names_the_same_reply_for_flow2py_reply(desk):
    r = invoke("run", "main.flow", "--input", '{"order": "o-1"}', "--tools", "tools.py", "--run-id", "w")
    [approve, schedule] = _commands(r.stdout, "or a worker:")
    assert shlex.split(approve) == ["flow2py", "reply", "w", 'root/1#1={"Ok": "Approved"}']
    assert shlex.split(schedule)[:3] == ["flow2py", "reply", "w"]


def test_a_store_named_by_another_path_to_the_default_is_not_repeated(desk):
    how = cli_output.Invocation(("tools.py",), os.path.join(".", ".flow", "runs.db"))
    assert how.store_words() == []
    assert cli_output.Invocation((), "other.db").store_words() == ["--store", "other.db"]


def test_paths_with_spaces_and_quotes_are_shell_quoted(desk):
    weird = desk / "my tools's.py"
    shutil.copy(desk / "tools.py", weird)
    r = invoke("run", "main.flow", "--input", '{"order": "o"}', "--tools", str(weird), "--store", "a b.db")
    assert r.exit_code == 3
    command = _commands(r.stdout, "resume:")[0]
    words = shlex.split(command)
    assert words[words.index("--tools") + 1] == str(weird) and words[words.index("--store") + 1] == "a b.db"


# ---- a finished run names itself on stderr --------------------------------------------------------


def test_a_completed_run_prints_its_id_on_stderr_and_only_the_value_on_stdout(tmp_path, monkeypatch):
    _setup(GOLDEN / "generic", tmp_path)
    monkeypatch.chdir(tmp_path)
    r = invoke("run", "main.flow", "--entry", "one", "--tools", "tools.py")
    assert r.exit_code == 0 and r.stdout == "42\n"
    assert re.fullmatch(r"completed: run run-[0-9a-f]{12}\n", r.stderr), r.stderr
    run_id = r.stderr.split()[-1]
    assert invoke("runs", "--state", "completed").stdout.startswith(f"{run_id}  completed  one  ")


# ---- flow2py runs ---------------------------------------------------------------------------------


def test_runs_json_is_one_array_with_the_fixed_keys_and_iso_times(desk):
    invoke("run", "main.flow", "--input", '{"order": "o"}', "--tools", "tools.py", "--run-id", "j")
    [row] = json.loads(invoke("runs", "--format", "json").stdout)
    assert list(row) == [
        "run_id",
        "state",
        "program",
        "entry",
        "started",
        "paused_since",
        "open_tools",
        "facts",
    ]
    assert (row["run_id"], row["state"], row["program"], row["entry"]) == ("j", "paused", "main", "main")
    assert row["open_tools"] == ["desk.approve", "desk.schedule"]
    assert TIME.fullmatch(row["started"]) and TIME.fullmatch(row["paused_since"])
    assert row["paused_since"] >= row["started"]


def test_runs_filters_accept_every_state_even_one_the_store_does_not_hold(desk):
    invoke("run", "main.flow", "--input", '{"order": "o"}', "--tools", "tools.py", "--run-id", "j")
    for state in ("submitted", "running", "completed", "faulted", "halted"):
        r = invoke("runs", "--state", state, "--format", "json")
        assert (r.exit_code, json.loads(r.stdout)) == (0, [])
    assert invoke("runs", "--state", "paused").stdout.startswith("j  paused on root/1#1, root/2#1  main")
    assert invoke("runs", "--state", "nonsense").exit_code != 0


def test_runs_program_filter_takes_the_name_or_an_identity_prefix(desk):
    invoke("run", "main.flow", "--input", '{"order": "o"}', "--tools", "tools.py", "--run-id", "j")
    identity = sqlite3.connect(".flow/runs.db").execute("SELECT program FROM runs").fetchone()[0]
    for name, found in (("main", True), (identity[:8], True), ("desk", False), (identity[:3], False)):
        rows = json.loads(invoke("runs", "--program", name, "--format", "json").stdout)
        assert [r["run_id"] for r in rows] == (["j"] if found else []), name


def test_paused_since_is_the_hosts_record_of_the_release_not_a_fact(desk):
    invoke("run", "main.flow", "--input", '{"order": "o"}', "--tools", "tools.py", "--run-id", "j")
    db = sqlite3.connect(".flow/runs.db")
    facts = db.execute("SELECT n, hash FROM facts WHERE run='j' ORDER BY n").fetchall()
    [(since,)] = db.execute("SELECT since FROM run_pauses WHERE run='j'").fetchall()
    (created,) = db.execute("SELECT created FROM runs WHERE id='j'").fetchone()
    assert since >= created
    # paused again by a resume that answers one call: paused since that resume's release
    invoke("resume", "j", "--reply", 'root/1#1={"Ok": "Approved"}', "--tools", "tools.py")
    [(again,)] = db.execute("SELECT since FROM run_pauses WHERE run='j'").fetchall()
    assert again >= since
    assert db.execute("SELECT n, hash FROM facts WHERE run='j' ORDER BY n").fetchall()[: len(facts)] == facts
    r = invoke("resume", "j", "--reply", 'root/2#1={"Ok": {"day": "d", "hour": 1, "notes": []}}')
    assert r.exit_code == 0
    assert db.execute("SELECT count(*) FROM run_pauses WHERE run='j'").fetchone() == (0,)  # no longer paused


def test_a_store_made_before_run_pauses_lists_a_paused_run_by_its_pending_calls(desk):
    invoke("run", "main.flow", "--input", '{"order": "o"}', "--tools", "tools.py", "--run-id", "j")
    db = sqlite3.connect(".flow/runs.db", isolation_level=None)
    (latest,) = db.execute("SELECT max(parked) FROM parked_calls WHERE run='j'").fetchone()
    db.execute("DROP TABLE run_pauses")
    db.close()
    [row] = json.loads(invoke("runs", "--format", "json").stdout)  # a reader stands in an empty table
    assert row["paused_since"] == iso_time(latest)


def test_a_faulted_run_prints_the_fault_on_stdout_and_its_id_on_stderr(tmp_path, monkeypatch):
    (tmp_path / "main.flow").write_text("pub flow main(n: Int) -> Int = 10 / n\n")
    monkeypatch.chdir(tmp_path)
    r = invoke("run", "main.flow", "--input", '{"n": 0}', "--run-id", "z")
    assert r.exit_code == 4 and r.stdout.startswith("faulted at ") and r.stderr == "faulted: run z\n"


def test_progress_reader_finds_the_run_this_process_holds_and_counts_its_calls(tmp_path, monkeypatch):
    """A Tool of the run reads the progress while its call is out (in this process, under the
    run's lease): one Call made, one call open."""
    (tmp_path / "main.flow").write_text(
        'use "./svc"\n\npub flow main() -> Text !tool = match svc.look() {\n'
        '    Ok(x) => x,\n    Err(_) => "no",\n}\n'
    )
    (tmp_path / "svc.flow").write_text("@tool pub flow look() -> Result<Text, Text>\n")
    (tmp_path / "tools.py").write_text(
        "from flowrt import bind\n"
        "from flowrt.host.runs_view import ProgressReader\n\n\n"
        '@bind("svc.look")\n'
        "def look():\n"
        '    reader = ProgressReader("r.db")\n'
        "    p = reader.read()\n"
        "    reader.close()\n"
        '    return {"Ok": f"{p.run_id} {p.calls} {p.open}"}\n'
    )
    monkeypatch.chdir(tmp_path)
    r = invoke("run", "main.flow", "--tools", "tools.py", "--store", "r.db", "--run-id", "p1")
    assert (r.exit_code, r.stdout) == (0, '"p1 1 1"\n'), r.output
    from flowrt.host.runs_view import ProgressReader

    assert ProgressReader("r.db").read() is None  # released: this process holds no run now


def test_host_records_holding_times_no_calendar_has_are_listed_as_unknown(desk):
    invoke("run", "main.flow", "--input", '{"order": "o"}', "--tools", "tools.py", "--run-id", "j")
    db = sqlite3.connect(".flow/runs.db", isolation_level=None)
    db.execute("UPDATE runs SET created=1e300")
    db.execute("UPDATE run_pauses SET since='yesterday'")
    db.execute("UPDATE parked_calls SET parked=-1e300")
    db.close()
    r = invoke("runs")
    assert r.exit_code == 0 and "started ?  paused since ? on desk.approve, desk.schedule" in r.stdout
    [row] = json.loads(invoke("runs", "--format", "json").stdout)
    assert (row["started"], row["paused_since"]) == (None, None)


KINDS = """\
pub type Tree { Leaf, Node(List<Tree>) }
pub type Link { Next(Link) }
pub type Shape { Rect(Int, Text), Dot { x: Int, label: Text } }
pub type Spot { Pin { x: Int, label: Text } }
pub type Bag {
    pub text: Text, pub n: Int, pub d: Decimal, pub ok: Bool, pub u: Unit, pub raw: Bytes,
    pub wait: Duration, pub items: List<Int>, pub set: Set<Text>, pub by_name: Dict<Text, Int>,
    pub by_n: Dict<Int, Text>, pub pair: (Int, Text), pub maybe: Option<Int>, pub tree: Tree,
    pub shape: Shape, pub spot: Spot,
}

@tool pub flow bag() -> Result<Bag, Text>
@tool pub flow when() -> Result<Instant, Text>
@tool pub flow link() -> Result<Link, Text>
"""


def test_reply_samples_fit_their_types_and_none_is_made_where_no_value_can_be(tmp_path):
    from flow2py import host
    from flowrt.data.decoding import decode
    from flowrt.host.runs_view import reply_sample

    (tmp_path / "main.flow").write_text(
        'use "./kinds"\n\npub flow main() -> Int !tool = {\n    let _ = kinds.bag()\n'
        "    let _ = kinds.when()\n    let _ = kinds.link()\n    0\n}\n"
    )
    (tmp_path / "kinds.flow").write_text(KINDS)
    loaded = host.compile_path(str(tmp_path / "main.flow"))
    specs = {s.name: s for s in loaded.specs.values()}
    sample = reply_sample(specs["kinds.bag"].result)
    assert sample == {
        "Ok": {
            "text": "...",
            "n": 0,
            "d": "0",
            "ok": True,
            "u": None,
            "raw": "",
            "wait": "1s",
            "items": [],
            "set": [],
            "by_name": {},
            "by_n": [],
            "pair": [0, "..."],
            "maybe": "None",
            "tree": "Leaf",
            "shape": {"Rect": [0, "..."]},
            "spot": {"Pin": {"x": 0, "label": "..."}},
        }
    }
    decode(specs["kinds.bag"].result, sample)  # it fits: admitted as a reply would be
    assert reply_sample(specs["kinds.when"].result) is None  # an Instant: no value made up
    assert reply_sample(specs["kinds.link"].result) is None  # no finite value in reach


def test_the_cli_offers_exactly_the_run_states_the_runtime_knows():
    from flow2py.cli import RUN_STATES
    from flowrt.host.runs_view import STATES

    assert RUN_STATES == STATES
