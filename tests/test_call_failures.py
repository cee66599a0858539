"""Tool failures keep their evidence (docs/spec/tools.md "Problems", trace.md "Store"): the
exception and traceback behind an `Unknown(...)` or `NotRun(...)` are the host's record
(`call_failures`), shown by `history --details`, the run page and FLOW2PY_DEBUG=1; never history.
A binding whose signature cannot take the Tool's arguments refuses the run before it starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import flowrt
from flowrt.data.requests import ToolSpec
from flowrt.engine.retry import Retry
from flowrt.history.store import Store
from flowrt.engine.tools import signature_misfit
from flow2py.cli import main as cli_main

SVC = """\
@tool pub flow ask(q: Text) -> Result<Text, Text>
@tool pub flow other(q: Text) -> Result<Text, Text>
"""

MAIN = """\
use "./svc"
use "std@v1/task"

pub flow main(q: Text) -> Text !tool = match svc.ask(q) {
    Ok(a) => a,
    Err(Unknown(why)) => "unknown: " ++ why,
    Err(NotRun(why)) => "not run: " ++ why,
    Err(_) => "error",
}

pub flow both(q: Text) -> Text !tool = {
    let a = task.spawn(flow() = svc.ask(q))
    let b = task.spawn(flow() = svc.other(q))
    match (task.await(a), task.await(b)) {
        (Err(Unknown(x)), Err(Unknown(y))) => x ++ " / " ++ y,
        _ => "answered",
    }
}
"""

TOOLS = """\
import flowrt


def lookup(q):
    if q == "refuse":
        raise flowrt.NotRun("the service is switched off")
    if q == "fine":
        return {"Ok": "fine"}
    raise ValueError("no such key: " + q)


@flowrt.bind("svc.ask")
def ask(q):
    return lookup(q)


@flowrt.bind("svc.other")
def other(q):
    raise KeyError(q)
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    (tmp_path / "svc.flow").write_text(SVC)
    (tmp_path / "main.flow").write_text(MAIN)
    (tmp_path / "tools.py").write_text(TOOLS)
    return tmp_path


def cli(d: Path, *args, env=None):
    r = CliRunner(env=env).invoke(cli_main, [str(a) for a in args], catch_exceptions=False)
    return r


def run(d: Path, run_id: str, q: str, entry: str = "main", tools: str = "tools.py", env=None):
    return cli(
        d,
        "run",
        d / "main.flow",
        "--entry",
        entry,
        "--input",
        json.dumps({"q": q}),
        "--tools",
        d / tools,
        "--store",
        d / "runs.db",
        "--run-id",
        run_id,
        env=env,
    )


def failures(d: Path, run_id: str) -> dict:
    store = Store(d / "runs.db")
    try:
        return store.host_records.failures(run_id)
    finally:
        store.close()


def facts(d: Path, run_id: str) -> list[dict]:
    r = cli(d, "history", run_id, "--store", d / "runs.db", "--format", "json")
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_an_exception_becomes_unknown_in_history_and_its_traceback_a_host_record(proj):
    r = run(proj, "a", "k")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '"unknown: ValueError: no such key: k"'
    reply = facts(proj, "a")[2]
    assert reply["kind"] == "Reply" and reply["reply"] == 'Err(Unknown("ValueError: no such key: k"))'
    assert "Traceback" not in json.dumps(facts(proj, "a"))  # history keeps only the reason
    (f,) = failures(proj, "a")["root#1"]
    assert (f.call, f.attempt, f.exc_type, f.message) == ("root#1", 1, "ValueError", "no such key: k")
    tb = f.traceback
    assert tb.startswith("Traceback (most recent call last):\n")
    assert 'tools.py", line 14, in ask' in tb and 'tools.py", line 9, in lookup' in tb
    assert tb.endswith("ValueError: no such key: k\n")
    assert "flowrt" not in tb and "runtime" not in tb  # from the implementation's own frame


def test_a_raised_notrun_keeps_its_evidence_too(proj):
    r = run(proj, "n", "refuse")
    assert r.stdout.strip() == '"not run: the service is switched off"'
    (f,) = failures(proj, "n")["root#1"]
    assert f.exc_type == "flowrt.data.values.NotRun" and "lookup" in f.traceback


def test_a_call_that_answers_leaves_no_failure_record(proj):
    assert run(proj, "ok", "fine").stdout.strip() == '"fine"'
    assert failures(proj, "ok") == {}


def test_failures_on_worker_threads_are_kept_for_each_call(proj):
    r = run(proj, "w", "k", entry="both")
    assert r.stdout.strip() == "\"ValueError: no such key: k / KeyError: 'k'\"", r.output
    got = failures(proj, "w")
    assert {c: [f.exc_type for f in fs] for c, fs in got.items()} == {
        "root/1#1": ["ValueError"],
        "root/2#1": ["KeyError"],
    }
    assert "in other" in got["root/2#1"][0].traceback


def test_history_details_shows_the_evidence_under_the_reply(proj):
    run(proj, "a", "k")
    plain = cli(proj, "history", "a", "--store", proj / "runs.db")
    assert "Traceback" not in plain.stdout and "raised" not in plain.stdout
    r = cli(proj, "history", "a", "--store", proj / "runs.db", "--details")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    reply = next(i for i, line in enumerate(lines) if " Reply " in line)
    assert lines[: reply + 1] == plain.stdout.splitlines()[: reply + 1]  # the facts as they were
    assert lines[reply + 1].startswith("   │ raised ValueError: no such key: k (at 20")
    assert lines[reply + 1].endswith("; the host's record, not history)")
    assert lines[reply + 2] == "   │ Traceback (most recent call last):"
    assert "   │ ValueError: no such key: k" in lines
    assert lines[-1] == plain.stdout.splitlines()[-1]  # End, after the evidence


def test_history_details_in_json_is_refused_in_one_line(proj):
    run(proj, "a", "k")
    r = cli(proj, "history", "a", "--store", proj / "runs.db", "--details", "--format", "json")
    assert r.exit_code == 1
    assert r.stderr.startswith("flow2py: --details adds the host's records to the text form")
    assert len(r.stderr.splitlines()) == 1


def test_the_run_page_folds_the_traceback_under_the_reply(proj):
    run(proj, "a", "k")
    r = cli(proj, "history", "a", "--store", proj / "runs.db", "--format", "html")
    page = r.stdout
    row = page[page.index('<tr class="failure">') :]
    row = row[: row.index("</tr>")]
    assert "<summary>raised ValueError: no such key: k (the host's record, not history)</summary>" in row
    assert "<pre>Traceback (most recent call last):" in row and "&quot;" in row  # escaped
    assert (
        page.index('<tr class="Reply"') < page.index('<tr class="failure">') < page.index('<tr class="End"')
    )


def test_flow2py_debug_prints_the_evidence_on_stderr(proj):
    r = run(proj, "d", "k", env={"FLOW2PY_DEBUG": "1"})
    assert r.exit_code == 0
    err = r.stderr
    assert err.startswith(
        'flow2py: run d: svc.ask (root#1) answered Err(Unknown("ValueError: no such key: k")), from:\n'
        "Traceback (most recent call last):\n"
    ), err
    assert 'in lookup\n    raise ValueError("no such key: " + q)\nValueError: no such key: k\n' in err
    quiet = run(proj, "e", "k", env={"FLOW2PY_DEBUG": ""})
    assert "Traceback" not in quiet.stderr


# ---- a binding that cannot take the Tool's arguments ----------------------------------------------


def test_a_binding_whose_signature_cannot_take_the_arguments_refuses_the_run(proj):
    (proj / "bad.py").write_text(
        TOOLS.replace("def ask(q):\n    return lookup(q)", "def ask(q, extra):\n    return lookup(q)")
    )
    r = run(proj, "x", "k", tools="bad.py")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        "flow2py: svc.ask(q) is bound to ask(q, extra) at "
        f"{Path('bad.py') if Path.cwd() == proj else proj / 'bad.py'}:12, which cannot take its 1 argument: "
        "missing a required argument: 'extra'; the run was not started"
    ]
    assert not (proj / "runs.db").exists()  # nothing recorded


def _spec(*params):
    return ToolSpec("svc::ask", "svc.ask", params)


def test_signatures_that_take_the_arguments_pass():
    def one(q):
        return q

    def defaults(q, extra=1):
        return q

    def star(*args):
        return args

    class Impl:
        def __call__(self, q):
            return q

    for impl in (one, defaults, star, Impl(), print):  # print: a builtin whose signature is unread
        assert signature_misfit(_spec("q"), impl) is None
    retried = flowrt.Bindings()
    retried.bind("svc.ask", one, retry=Retry(attempts=2))
    assert signature_misfit(_spec("q"), retried.lookup(_spec("q"))) is None  # the wrapped function's


def test_signatures_that_cannot_take_them_say_why():
    def none():
        return 1

    def keyword_only(*, q):
        return q

    assert signature_misfit(_spec("q"), none).endswith(
        "which cannot take its 1 argument: too many positional arguments"
    )
    assert signature_misfit(_spec("q"), keyword_only).endswith(
        "its 1 argument: too many positional arguments"
    )
    assert "missing a required argument: 'q'" in signature_misfit(_spec(), keyword_only)
    assert "its 2 arguments" in signature_misfit(_spec("q", "r"), none)


def test_a_lone_surrogate_in_the_evidence_is_kept_as_its_escape():
    from flowrt.engine.tools import failure_of

    try:
        raise ValueError("bad \ud800 gateway")
    except ValueError as e:
        f = failure_of(e)
    assert f.message == "bad \\ud800 gateway" and f.traceback.endswith("ValueError: bad \\ud800 gateway\n")
    f.traceback.encode("utf-8")  # storable
