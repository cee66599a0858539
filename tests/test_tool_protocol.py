"""The Tool protocol (docs/spec/abi.md, "Tool protocol"): a Flow run whose Tools are served by
another process, over its stdio and over HTTP. The server is
tests/flow_programs/tool_protocol/server.py (flowrt.host.tool_server); the Node.js one is
examples/node_tool/server.js. Nothing here sleeps: a blocking Tool tells the test where it is by
writing to a FIFO the test reads, and the HTTP server prints its port on a line the test reads."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import flowrt as rt
from tests.binding_helpers import restored_bindings
from flow2py import host
from flow2py.cli import main
from flowrt.history.trace import DATA_VERSION
from flowrt.host.tool_clients import StdioConnection
from flowrt.host.tool_protocol import Lost, hello_message

PROGRAM = Path(__file__).parent / "flow_programs" / "tool_protocol"
NODE_EXAMPLE = Path(__file__).parent.parent / "examples" / "node_tool"
TOOLS = ("upper", "block", "meet", "seen", "get")


@pytest.fixture(autouse=True)
def _own_bindings():
    """Each test's --tools bindings are its own: the process-wide registry is restored after it,
    and every Tool server process it started is stopped."""
    with restored_bindings():
        yield


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _copy(tmp_path) -> Path:
    for f in PROGRAM.iterdir():
        if f.is_file():
            shutil.copy(f, tmp_path / f.name)
    return tmp_path


def _server_argv(d: Path, *flags) -> list[str]:
    return [sys.executable, str(d / "server.py"), "--dir", str(d), *flags]


def _toml(d: Path, target: str, timeout=None, name="tools.toml") -> str:
    value = json.dumps(target) if timeout is None else f"{{ at = {json.dumps(target)}, timeout = {timeout} }}"
    lines = ["[tools]"] + [f'"words.{t}" = {value}' for t in TOOLS]
    (d / name).write_text("\n".join(lines) + "\n")
    return str(d / name)


def _exec(d: Path, *flags, timeout=None) -> str:
    return _toml(d, "exec:" + " ".join(_server_argv(d, *flags)), timeout)


@pytest.fixture
def http_server(tmp_path):
    """Start server.py over HTTP; yields a function making a binding file for it."""
    procs = []

    def start(*flags) -> str:
        d = _copy(tmp_path)
        proc = subprocess.Popen(_server_argv(d, "--http", *flags), stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        port = int(proc.stdout.readline())
        return _toml(d, f"http://127.0.0.1:{port}")

    yield start
    for p in procs:
        p.kill()
        p.wait()


def _run(d: Path, tools: str, entry="main", input_json=None, run_id="r"):
    args = [
        "run",
        d / "main.flow",
        "--entry",
        entry,
        "--tools",
        tools,
        "--store",
        d / "r.db",
        "--run-id",
        run_id,
    ]
    return _cli(*args, *(["--input", input_json] if input_json else []))


def _replay(d: Path, run_id="r") -> str:
    return _cli("replay", run_id, "--store", d / "r.db").stdout.splitlines()[0]


# ---- a run answered over the protocol -----------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_server_answers_a_run_that_then_replays_matched_with_nothing_bound(
    tmp_path, http_server, transport
):
    d = _copy(tmp_path)
    tools = _exec(d) if transport == "stdio" else http_server()
    r = _run(d, tools, input_json='{"text": "hi"}')
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '"HI"'
    assert _replay(d) == "Matched"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_declared_error_answered_by_the_server_is_failed(tmp_path, http_server, transport):
    d = _copy(tmp_path)
    tools = _exec(d) if transport == "stdio" else http_server()
    r = _run(d, tools, input_json='{"text": "refuse"}')
    assert r.stdout.strip() == '"failed: refused"', r.output


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_calls_are_in_flight_together_on_one_connection(tmp_path, http_server, transport):
    # words.meet answers only once two calls are in at once (a barrier): serialised calls fail
    d = _copy(tmp_path)
    tools = _exec(d) if transport == "stdio" else http_server()
    r = _run(d, tools, entry="together")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '["met a", "met b"]'


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_generic_tool_call_carries_its_concrete_type_arguments(tmp_path, http_server, transport):
    d = _copy(tmp_path)
    tools = _exec(d) if transport == "stdio" else http_server()
    r = _run(d, tools, entry="typed")
    assert r.stdout.strip() == "7", r.output


# ---- refused before the run ---------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_data_version_mismatch_refuses_the_binding_before_the_run(tmp_path, http_server, transport):
    d = _copy(tmp_path)
    other = str(DATA_VERSION + 1)
    tools = (
        _exec(d, "--data-version", other) if transport == "stdio" else http_server("--data-version", other)
    )
    r = _run(d, tools, input_json='{"text": "hi"}')
    assert r.exit_code == 1
    assert f"speaks data version {other}, this flowrt data version {DATA_VERSION}" in r.output
    assert "the run was not started" in r.output and "Traceback" not in r.output
    assert not (d / "r.db").exists()  # nothing recorded: not even a store


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_signature_that_does_not_fit_refuses_the_run_naming_both(tmp_path, http_server, transport):
    d = _copy(tmp_path)
    tools = _exec(d, "--wrong-signature") if transport == "stdio" else http_server("--wrong-signature")
    r = _run(d, tools, input_json='{"text": "hi"}')
    assert r.exit_code == 1
    line = r.output.strip()
    assert "words.upper [words::upper]" in line
    assert "serves (Int) -> Result<Text, Text>, the declaration is (Text) -> Result<Text, Text>" in line
    assert len(line.splitlines()) == 1 and not (d / "r.db").exists()


def test_a_tool_the_server_does_not_serve_refuses_the_run(tmp_path):
    d = _copy(tmp_path)
    tools = _exec(d)
    with open(tools, "a") as f:
        f.write('"words.nothing" = "exec:true"\n')
    (d / "main.flow").write_text(
        (d / "main.flow").read_text().replace('use "./words"', 'use "./words"\nuse "./extra"')
        + "pub flow other() -> Text !tool = said(extra.gone())\n"
    )
    (d / "extra.flow").write_text("@tool pub flow gone() -> Result<Text, Text>\n")
    with open(tools, "a") as f:
        f.write(f'"extra.gone" = "exec:{" ".join(_server_argv(d))}"\n')
    r = _run(d, tools, entry="other")
    assert r.exit_code == 1
    assert "extra.gone [extra::gone] is bound to exec:" in r.output and "which does not serve it" in r.output


# ---- a server that dies, or does not answer -------------------------------------------------------


def _start_blocked(d: Path, tools: str, results: list) -> threading.Thread:
    os.mkfifo(d / "m1")

    def go():
        results.append(
            host.start(
                str(d / "main.flow"),
                entry="blocked",
                input_json='{"marker": "m1"}',
                tools=[tools],
                store_path=str(d / "r.db"),
                run_id="k",
            )
        )

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_a_killed_tool_subprocess_gives_unknown_with_its_reason(tmp_path):
    d = _copy(tmp_path)
    tools = _exec(d)
    results: list = []
    t = _start_blocked(d, tools, results)
    with open(d / "m1") as f:  # returns once the Tool is inside the call, blocked
        pid = int(f.read())
    os.kill(pid, signal.SIGKILL)
    t.join(60)
    assert results, "the run did not end after its Tool server was killed"
    text = results[0].text
    assert (
        text.startswith('"unknown: the tool server exec:')
        and "exited (code -9) while the call was out" in text
    )
    assert _replay(d, "k") == "Matched"


def test_no_answer_within_the_bindings_timeout_is_unknown(tmp_path):
    d = _copy(tmp_path)
    tools = _exec(d, timeout=0.5)
    r = _run(d, tools, entry="blocked", input_json='{"marker": "plain-file"}')
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().endswith('gave no answer within 0.5 s"')


def test_a_dead_server_is_started_again_for_the_next_call(tmp_path):
    d = _copy(tmp_path)
    conn = StdioConnection(_server_argv(d))
    try:
        assert "words.upper" in conn.ensure()
        call = {
            "type": "call",
            "id": "root#1",
            "run": "r",
            "tool": "words.upper",
            "type_args": [],
            "args": ["a"],
        }
        assert conn.call(call, 30)["result"] == {"Ok": "A"}
        first = conn.pid
        conn.proc.kill()
        conn.proc.wait()
        assert conn.call(dict(call, id="root#2"), 30)["result"] == {"Ok": "A"}
        assert conn.pid != first and conn.starts == 2
    finally:
        conn.close()


def test_calls_out_when_the_server_dies_are_lost_not_hung(tmp_path):
    d = _copy(tmp_path)
    conn = StdioConnection(_server_argv(d))
    os.mkfifo(d / "m2")
    errors: list = []

    def call():
        try:
            conn.call(
                {"type": "call", "id": "root#1", "tool": "words.block", "type_args": [], "args": ["m2"]}, 60
            )
        except Lost as e:
            errors.append(str(e))

    try:
        t = threading.Thread(target=call, daemon=True)
        t.start()
        with open(d / "m2") as f:
            int(f.read())
        conn.proc.kill()
        t.join(60)
        assert errors and "while the call was out" in errors[0]
    finally:
        conn.close()


def test_the_hello_carries_this_flowrts_data_version():
    assert hello_message() == {"type": "hello", "protocol": "flow-tools/1", "data_version": DATA_VERSION}


# ---- a re-send under the same id --------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_resend_reaches_the_server_under_the_same_call_id(tmp_path, http_server, transport):
    d = _copy(tmp_path)
    tools = _exec(d) if transport == "stdio" else http_server()
    r = _run(d, tools, entry="resent", input_json='{"name": "x"}')
    assert r.exit_code == 3, r.output  # the server left the call open (pending)
    assert (d / "seen.log").read_text().split() == ["root#1"]
    again = _cli("resume", "r", "--resend", "root#1", "--tools", tools, "--store", d / "r.db")
    assert again.exit_code == 0, again.output
    assert again.stdout.strip() == '"x again as root#1"'
    assert (d / "seen.log").read_text().split() == ["root#1", "root#1"]
    assert _replay(d) == "Matched"


# ---- a server in another language --------------------------------------------------------------


@pytest.mark.skipif(shutil.which("node") is None, reason="node (Node.js) is not installed on this machine")
def test_the_nodejs_tool_server_answers_a_run_that_replays_matched(tmp_path):
    for f in NODE_EXAMPLE.iterdir():
        shutil.copy(f, tmp_path / f.name)
    db = tmp_path / "r.db"
    r = _cli(
        "run", tmp_path / "main.flow", "--input", '{"words": ["abc", "", "héllo"]}',
        "--tools", tmp_path / "tools.toml", "--store", db, "--run-id", "n",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == 'Summary { reversed: ["cba", "(empty)", "olléh"], letters: 8 }'
    assert _replay(tmp_path, "n") == "Matched"
    sites = _cli("tools", tmp_path / "main.flow", "--tools", tmp_path / "tools.toml").stdout
    assert (
        "strings.reverse(text: Text) -> Result<Text, Text>  [strings::reverse]  => exec:node server.js"
        in sites
    )


# ---- the answers, one by one ----------------------------------------------------------------------

SPEC = rt.ToolSpec("w::up", "w.up", params=("text",), result=rt.T.ResultOf(rt.T.TEXT, rt.T.TEXT))


def test_each_answer_becomes_the_outcome_the_program_receives():
    from flowrt.engine.tools import PENDING
    from flowrt.host.tool_protocol import answer_outcome

    def out(answer):
        return answer_outcome(answer, SPEC, (), "exec:s")

    assert out({"type": "result", "id": "a", "result": {"Ok": "x"}}) == rt.Ok("x")
    assert out({"type": "result", "id": "a", "result": {"Err": "no"}}) == rt.Err(rt.Failed("no"))
    assert out({"type": "result", "id": "a", "result": {"Ok": 3}}) == rt.Err(
        rt.Malformed("$.Ok: expected Text, got 3")
    )
    assert out({"type": "not_run", "id": "a", "reason": "down"}) == rt.Err(rt.NotRun("down"))
    assert out({"type": "unknown", "id": "a", "reason": "lost"}) == rt.Err(rt.Unknown("lost"))
    assert out({"type": "pending", "id": "a"}) is PENDING
    assert out({"type": "maybe", "id": "a"}) == rt.Err(
        rt.Unknown('exec:s answered with no outcome: {"type": "maybe", "id": "a"}')
    )


def test_the_python_server_answers_not_run_unknown_pending_and_async_results():
    from flowrt.host.tool_server import ToolServer

    server = ToolServer()

    @server.tool("w.down", "(x: Text) -> Result<Text, Text>")
    def down(x):
        raise rt.NotRun("maintenance")

    @server.tool("w.boom", "(x: Text) -> Result<Text, Text>")
    def boom(x):
        raise ValueError("bad " + x)

    @server.tool("w.later", "(x: Text) -> Result<Text, Text>")
    def later(x):
        return rt.pending

    @server.tool("w.up", "(x: Text) -> Result<Text, Text>", tool_id="w::up")
    async def up(x):
        return rt.Ok(x.upper())

    def call(tool, **extra):
        return server.handle({"type": "call", "id": "c", "tool": tool, "args": ["a"], **extra})

    assert call("w.down") == {"type": "not_run", "id": "c", "reason": "maintenance"}
    assert call("w.boom") == {"type": "unknown", "id": "c", "reason": "ValueError: bad a"}
    assert call("w.later") == {"type": "pending", "id": "c"}
    assert call("nobody", tool_id="w::up") == {"type": "result", "id": "c", "result": {"Ok": "A"}}
    assert call("w.none")["type"] == "not_run"
    tools = server.hello()["tools"]
    assert {
        "tool": "w.up",
        "tool_id": "w::up",
        "type_params": 0,
        "params": ["Text"],
        "result": "Result<Text, Text>",
    } in tools
    assert len(tools) == 4


def test_a_server_started_again_is_checked_again_before_the_next_call(tmp_path):
    from flowrt.host.tool_protocol import RemoteTool

    d = _copy(tmp_path)
    spec = rt.ToolSpec(
        "words::upper", "words.upper", params=("text",), result=rt.T.ResultOf(rt.T.TEXT, rt.T.TEXT)
    )
    fn = rt.fn("words::upper", params=("text",), types=(rt.T.TEXT,))(lambda text: None)
    conn = StdioConnection(_server_argv(d, "--wrong-if", str(d / "flag")))
    remote = RemoteTool(conn, "exec:server.py")
    try:
        remote.check(spec, fn)
        assert remote.serve_call(spec, ["a"], (), ("r", "root#1", None)) == rt.Ok("A")
        (d / "flag").write_text("")  # the next process serves another signature
        conn.proc.kill()
        conn.proc.wait()
        out = remote.serve_call(spec, ["a"], (), ("r", "root#2", None))
        assert out == rt.Err(
            rt.NotRun(
                "words.upper [words::upper]: exec:server.py serves (Int) -> Result<Text, Text>, "
                "the declaration is (Text) -> Result<Text, Text>"
            )
        )
    finally:
        conn.close()
