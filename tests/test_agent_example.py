"""examples/agent/ end to end (its README): a faked model plans typed actions, an MCP server's
tools are called through json.Value, a program the model writes is checked, repaired from its
diagnostics and run as a nested run, and a person's approval is raced against a 24-hour
deadline. Under `flow2py run` the run pauses on the approval and completes on the reply given to
`flow2py resume`; under a worker (in process, its HTTP API) the deadline is a durable timer and
the reply arrives over HTTP. One MCP server process serves the whole module."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import flowrt as rt
from tests.binding_helpers import restored_bindings
from flow2py import host
from flow2py.cli import main
from flowrt.host import http_api
from flowrt.host.mcp_tools import McpConnection
from flowrt.host.operations import open_store
from http_helpers import running_worker, until

pytest.importorskip("mcp")

EXAMPLE = Path(__file__).parent.parent / "examples" / "agent"
TOOLS = ("tools.toml", "tools.py", "clock.py")
APPROVED = {"Ok": {"Approved": "alice"}}
POSTED = 'Done("posted: {\\"channel\\":\\"team\\",\\"number\\":1}")'


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example copied into a folder, the MCP server started by this interpreter (so every test
    of the module shares one server process); the server's connections closed at the end."""
    d = tmp_path_factory.mktemp("agent")
    for f in EXAMPLE.iterdir():
        if f.is_file() and f.suffix in (".flow", ".py", ".toml"):
            text = f.read_text()
            if f.suffix == ".toml":
                text = text.replace("mcp+stdio:python3 ", f"mcp+stdio:{sys.executable} ")
            (d / f.name).write_text(text)
    yield d
    for key in [k for k in list(McpConnection._registry()) if k[1] == str(d)]:
        McpConnection._registry().pop(key).close()


@pytest.fixture(autouse=True)
def _own_bindings(example):
    (example / "posts.jsonl").unlink(missing_ok=True)
    with restored_bindings(stop_servers=False):  # the module's one MCP session stays open
        yield


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _tools(d: Path, names=TOOLS) -> list[str]:
    return [a for n in names for a in ("--tools", str(d / n))]


def _history(d: Path, db: str, run_id: str) -> list[dict]:
    out = _cli("history", run_id, "--store", d / db, "--format", "json")
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.stdout.splitlines()]


def _calls(facts: list[dict], tool: str) -> list[tuple[dict, dict]]:
    """Each Call of `tool` with its Reply, in order."""
    replies = {f["id"]: f for f in facts if f["kind"] == "Reply"}
    return [(f, replies.get(f["id"])) for f in facts if f["kind"] == "Call" and f["tool"] == tool]


def _assert_repaired_and_run(facts: list[dict]) -> None:
    (first, failed), (_, passed) = _calls(facts, "bundle.check")
    assert failed["reply"].startswith("Err(Failed(Diagnostics([")
    assert 'code: "E101", message: "unknown name `wrds` — did you mean `words`?"' in failed["reply"]
    assert "wrds" in first["args"][0] and passed["reply"] == "Ok(())"
    ((repair, repaired),) = _calls(facts, "model.repair")
    assert "words, flow(w: Text)" in repaired["reply"] and "wrds" not in repaired["reply"]
    ((run, answer),) = _calls(facts, "bundle.run")
    assert "words, flow(w: Text)" in run["args"][0] and answer["reply"] == "Ok(8)"


def test_the_agent_pauses_on_the_approval_and_completes_on_the_reply_then_replays_matched(example):
    d = example
    r = _cli("run", d / "main.flow", "--input", '{"goal": "flow"}', *_tools(d), "--store", d / "r.db",
             "--run-id", "a1")  # fmt: skip
    assert r.exit_code == 3, r.output
    assert 'root/1#1  approvals.request("post to #team: flow: the program answered 8")' in r.output
    assert "root/2#1  clock.sleep(1d)" in r.output
    assert not (d / "posts.jsonl").exists()  # nothing is posted before the approval
    r = _cli("resume", "a1", "--reply", f"root/1#1={json.dumps(APPROVED)}", *_tools(d), "--store", d / "r.db")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == POSTED
    posts = [json.loads(line) for line in (d / "posts.jsonl").read_text().splitlines()]
    assert posts == [{"channel": "team", "text": "flow: the program answered 8 (approved by alice)"}]
    facts = _history(d, "r.db", "a1")
    _assert_repaired_and_run(facts)
    assert open_store(str(d / "r.db")).host_records.nested_runs("a1") == {"root#7": "a1/root#7"}
    rt.BINDINGS._impls.clear()  # replay binds nothing
    for run_id in ("a1", "a1/root#7"):
        out = _cli("replay", run_id, "--store", d / "r.db")
        assert out.exit_code == 0 and out.stdout.splitlines()[0] == "Matched", out.output


def test_the_deadline_passing_first_expires_the_agent_without_posting(example):
    d = example
    r = _cli("run", d / "main.flow", "--input", '{"goal": "flow"}', *_tools(d), "--store", d / "e.db",
             "--run-id", "e1")  # fmt: skip
    assert r.exit_code == 3, r.output
    r = _cli("resume", "e1", "--reply", 'root/2#1={"Ok": null}', *_tools(d), "--store", d / "e.db")
    assert r.exit_code == 0 and r.stdout.strip() == "Expired", r.output
    assert not (d / "posts.jsonl").exists()


def test_under_a_worker_the_reply_arrives_over_http_and_the_run_completes(example, monkeypatch):
    d = example
    monkeypatch.chdir(d)
    served = {"agent": host.compile_path(str(d / "main.flow"))}
    bindings = host.worker_bindings(served, [str(d / "tools.toml"), str(d / "tools.py")])
    with running_worker(d / "w.db", served, bindings) as w:
        with TestClient(http_api.make_app(w, token="s3cret"), raise_server_exceptions=False) as api:
            auth = {"Authorization": "Bearer s3cret"}
            body = {"program": "agent", "input": {"goal": "flow"}, "run_id": "w1"}
            assert api.post("/runs", json=body, headers=auth).status_code == 201

            def paused():
                got = api.get("/runs/w1").json()
                return got if got["state"] == "paused" and len(got["open_calls"]) == 2 else None

            seen = until(paused, timeout=30, what="run w1 to pause on the approval and the timer")
            assert sorted(c["tool"] for c in seen["open_calls"]) == ["approvals.request", "clock.sleep"]
            reply = {"call": "root/1#1", "reply": APPROVED}
            assert api.post("/runs/w1/replies", json=reply, headers=auth).status_code == 202
            done = until(lambda: (s := api.get("/runs/w1").json())["state"] == "completed" and s,
                         timeout=30, what="run w1 to complete")  # fmt: skip
    assert done["result"] == POSTED
    _assert_repaired_and_run(_history(d, "w.db", "w1"))
    rt.BINDINGS._impls.clear()
    out = _cli("replay", "w1", "--store", d / "w.db")
    assert out.exit_code == 0 and out.stdout.splitlines()[0] == "Matched", out.output
