"""MCP servers as Tools (docs/spec/abi.md, "MCP servers as Tools"): a binding file binds Flow Tools
to the tools of an MCP server (tests/flow_programs/mcp/server.py, written with the `mcp` SDK's
MCPServer), started over stdio; the schemas are checked against the Flow signatures before the
run starts, calls carry the JSON mapping, and each kind of MCP answer becomes an outcome. One
server process serves the whole module (the SDK's start-up is the slow part)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.binding_helpers import restored_bindings
from flow2py.cli import main
from flowrt.data.requests import ToolSpec
from flowrt.data.typedesc import T
from flowrt.data.values import Err, NotRun
from flowrt.host.mcp_schema import fits, from_mcp, to_mcp
from flowrt.host.mcp_tools import McpConnection, McpTool, stdio_params

pytest.importorskip("mcp")

PROGRAM = Path(__file__).parent / "flow_programs" / "mcp"


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    """The program, its server and its binding files in one directory, the server's command
    this interpreter (so every test of the module shares one server process)."""
    d = tmp_path_factory.mktemp("mcp")
    for f in PROGRAM.iterdir():
        if f.is_file():
            text = f.read_text()
            if f.suffix == ".toml":
                text = text.replace("mcp+stdio:python3 ", f"mcp+stdio:{sys.executable} ")
            (d / f.name).write_text(text)
    yield d
    for key in [k for k in list(McpConnection._registry()) if k[1] == str(d)]:
        McpConnection._registry().pop(key).close()


@pytest.fixture(autouse=True)
def _own_bindings():
    with restored_bindings(stop_servers=False):  # the module's one MCP session stays open
        yield


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _run(d: Path, entry: str, text="", tools="tools.toml", store="r.db", program="main.flow"):
    return _cli(
        "run", d / program, "--entry", entry, "--input", json.dumps({"text": text}) if text is not None else "{}",
        "--tools", d / tools, "--store", d / store,
    )  # fmt: skip


def _run_id(r) -> str:
    return r.stderr.strip().rsplit(" ", 1)[-1]


def test_mcp_tools_answer_a_run_that_then_replays_matched_with_nothing_bound(prog):
    r = _run(prog, "main", "the quick brown fox")
    assert r.exit_code == 0, r.output
    assert (
        r.stdout.strip() == '(4, "quick", "THE QUICK BROWN FOX THE QUICK BROWN FOX", "THE QUICK BROWN FOX")'
    )
    replay = _cli("replay", _run_id(r), "--store", prog / "r.db")
    assert replay.exit_code == 0 and replay.stdout.strip() == "Matched", replay.output


def test_a_typed_tool_and_the_generic_call_answer_one_run_that_replays_matched(prog):
    r = _run(prog, "both", "a bb ccc")
    assert r.exit_code == 0, r.output
    # the generic call gives the server's structuredContent as it is (a str tool's is {"result": ...})
    assert r.stdout.strip() == '(3, "{\\"result\\":\\"A BB CCC A BB CCC\\"}", 6)'
    replay = _cli("replay", _run_id(r), "--store", prog / "r.db")
    assert replay.stdout.strip() == "Matched", replay.output


@pytest.mark.parametrize(
    "tool, args, says",
    [
        ("tags", '{"text": "#a b #c"}', '"[\\"a\\",\\"c\\"]"'),
        ("shout", '{"text": ""}', '"failed: Error executing tool shout: nothing to shout"'),
        ("nope", "{}", "has no tool 'nope' (it has count, die, price, shout, tags, wait)"),
        ("shout", "[1]", "the arguments of 'shout' must be a JSON object"),
    ],
)
def test_the_generic_call_reaches_any_tool_of_the_server(prog, tool, args, says):
    r = _cli(
        "run", prog / "main.flow", "--entry", "generic", "--input", json.dumps({"tool": tool, "args": args}),
        "--tools", prog / "tools.toml", "--store", prog / "g.db",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert says in r.stdout, r.stdout


def test_text_content_without_an_output_schema_is_parsed_as_json(prog):
    r = _run(prog, "tagged", "a #b c #dd")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '["b", "dd"]'


def test_is_error_is_failed_when_the_error_type_holds_the_message(prog):
    r = _run(prog, "shouted", "")
    assert r.stdout.strip() == '"failed: Error executing tool shout: nothing to shout"', r.output


def test_is_error_is_unknown_when_the_error_type_cannot_hold_the_message(prog):
    r = _run(prog, "louder", "")
    assert r.stdout.strip().startswith('"unknown: mcp+stdio:'), r.output
    assert "the tool 'shout' failed: Error executing tool shout: nothing to shout" in r.stdout


def test_a_decimal_goes_as_a_number_where_the_schema_says_number(prog):
    r = _run(prog, "price_", None, tools="bad.toml", program="bad.flow", store="ok.db")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '"2.50 EUR"'


@pytest.mark.parametrize(
    "entry, says",
    [
        ("type_", "$.text: the tool's schema says string, the Flow type is Int"),
        ("name_", "$.txt: bad.wrong_name has 'txt', the tool's schema has no such property"),
        ("required_", "$: the tool's schema requires 'currency', which bad.missing_required does not have"),
        (
            "none_",
            "$.currency: the tool's schema requires 'currency', the Flow type Option<Text> may be None",
        ),
        ("result_", "$result.letters: Counted has 'letters', the tool's schema has no such property"),
        ("scalar_", "$result: the tool's schema says string, the Flow type is Int"),
        (
            "generic_",
            "serves (tool: Text, args: json.Value) -> Result<json.Value, E> or () -> Result<json.Value, E>",
        ),
    ],
)
def test_a_schema_that_does_not_fit_refuses_the_run_naming_both_sides(prog, entry, says):
    r = _run(prog, entry, None, tools="bad.toml", program="bad.flow", store=f"{entry}.db")
    assert r.exit_code == 1
    assert says in r.output and "Traceback" not in r.output
    assert (
        "the declaration" in r.output
        and "bad.generic_wrong(tool: Text, args: Text)" in r.output
        or ("(the MCP tool is " in r.output and ", the declaration bad." in r.output)
    )
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.strip().endswith("the run was not started")
    assert not (prog / f"{entry}.db").exists()


def test_a_tool_the_server_does_not_have_refuses_the_run(prog):
    (prog / "none.toml").write_text(f'[tools]\n"words.shout" = "mcp+stdio:{sys.executable} server.py#yell"\n')
    r = _run(prog, "shouted", "x", tools="none.toml", store="none.db")
    assert r.exit_code == 1
    assert "which has no tool 'yell' (it has count, die, price, shout, tags, wait)" in r.output
    assert not (prog / "none.db").exists()


def test_a_server_that_cannot_start_refuses_the_run_recording_nothing(prog):
    (prog / "gone.toml").write_text('[tools]\n"words.shout" = "mcp+stdio:./no-such-server --x"\n')
    r = _run(prog, "shouted", "x", tools="gone.toml", store="gone.db")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "mcp+stdio:./no-such-server --x: could not connect to the MCP server" in r.output
    assert r.output.strip().endswith("the run was not started") and not (prog / "gone.db").exists()


def test_a_call_whose_server_cannot_be_reached_is_not_run(tmp_path):
    spec = ToolSpec("w::shout", "w.shout", ("text",), T.ResultOf(T.TEXT, T.TEXT))
    conn = McpConnection(stdio_params([str(tmp_path / "no-such-server")], str(tmp_path)), "mcp+stdio:x")
    outcome = McpTool(conn, "mcp+stdio:x", "shout").serve_call(spec, ["hi"], (), None)
    assert type(outcome) is Err and type(outcome._0) is NotRun
    assert "could not connect to the MCP server" in outcome._0._0


def test_a_connection_lost_while_the_call_is_out_is_unknown(prog):
    (prog / "die.toml").write_text(f'[tools]\n"words.die" = "mcp+stdio:{sys.executable} server.py --dies"\n')
    r = _run(prog, "died", "x", tools="die.toml", store="die.db")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().startswith('"unknown: mcp+stdio:'), r.output
    assert "the call was out when it failed" in r.stdout


def test_no_answer_within_the_bindings_timeout_is_unknown(prog):
    r = _run(prog, "waited", "x")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().startswith('"unknown: mcp+stdio:'), r.output
    assert "gave no answer within 0.5 s" in r.stdout


@pytest.fixture(scope="module")
def http_url(prog):
    """The test server over streamable HTTP, served in this process by uvicorn on a socket bound
    before it starts (a connection waits in the socket's backlog until the server accepts it)."""
    import importlib.util
    import socket
    import threading

    import uvicorn

    spec = importlib.util.spec_from_file_location("flow_mcp_test_server", prog / "server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(module.server.streamable_http_app(), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    yield url
    for key in [k for k in list(McpConnection._registry()) if k[0].startswith("mcp+" + url)]:
        McpConnection._registry().pop(key).close()
    server.should_exit = True
    thread.join(10)


def test_mcp_tools_over_streamable_http_answer_a_run(prog, http_url):
    (prog / "http.toml").write_text(
        f'[tools]\n"words.count" = "mcp+{http_url}#count"\n"words.shout" = "mcp+{http_url}"\n'
    )
    r = _run(prog, "main", "the quick brown fox", tools="http.toml", store="http.db")
    assert r.exit_code == 0, r.output
    assert (
        r.stdout.strip() == '(4, "quick", "THE QUICK BROWN FOX THE QUICK BROWN FOX", "THE QUICK BROWN FOX")'
    )


def test_tools_shows_the_mcp_binding_of_each_tool(prog):
    r = _cli("tools", prog / "main.flow", "--tools", prog / "tools.toml")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert any(
        line.endswith(f"[words::count]  => mcp+stdio:{sys.executable} server.py#count") for line in lines
    )
    assert any("[words::die]" in line and line.endswith("(timeout 20 s)") for line in lines)


# ---- the JSON mapping against schemas, without a server -------------------------------------------

NULLABLE_INT = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}


@pytest.mark.parametrize(
    "desc, schema, direction, ok",
    [
        (T.TEXT, {"type": "string"}, "in", True),
        (T.INT, {"type": "number"}, "in", True),  # every Int is a number
        (T.DECIMAL, {"type": "integer"}, "in", False),  # not every Decimal is an integer
        (T.INT, {"type": "number"}, "out", False),  # a number may not be an Int
        (T.OptionOf(T.INT), NULLABLE_INT, "out", True),
        (T.ListOf(T.TEXT), {"type": "array", "items": {"type": "string"}}, "in", True),
        (T.ListOf(T.TEXT), {"type": "array", "items": {"type": "integer"}}, "in", False),
        (
            T.ListOf(T.INT),
            {"type": "array", "items": {"$ref": "#/$defs/N"}, "$defs": {"N": {"type": "integer"}}},
            "out",
            True,
        ),
        (
            T.DictOf(T.TEXT, T.BOOL),
            {"type": "object", "additionalProperties": {"type": "boolean"}},
            "in",
            True,
        ),
        (
            T.TupleOf(T.INT, T.TEXT),
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
            "in",
            True,
        ),
        (T.BOOL, {}, "out", True),  # a schema admitting anything: admission checks the answer
        (T.DURATION, {"type": "integer"}, "in", False),  # no mapping
    ],
)
def test_flow_types_fit_json_schemas_by_the_json_mapping(desc, schema, direction, ok):
    assert (fits(desc, schema, schema, direction) is None) is ok


def test_options_are_a_value_or_absent_in_mcp_json():
    opt = T.OptionOf(T.ListOf(T.OptionOf(T.INT)))
    assert to_mcp(opt, {"Some": [{"Some": 1}, "None"]}) == [1, None]
    assert from_mcp(opt, [1, None]) == {"Some": [{"Some": 1}, "None"]}
    assert from_mcp(opt, None) == "None"


def test_the_mcp_example_runs_and_replays_matched(tmp_path):
    example = Path(__file__).parent.parent / "examples" / "mcp"
    for f in example.iterdir():
        text = f.read_text()
        if f.suffix == ".toml":
            text = text.replace("mcp+stdio:python3 ", f"mcp+stdio:{sys.executable} ")
        (tmp_path / f.name).write_text(text)
    try:
        r = _cli(
            "run", tmp_path / "main.flow", "--input", '{"topic": "flow"}', "--tools", tmp_path / "tools.toml",
            "--store", tmp_path / "r.db", "--run-id", "m1",
        )  # fmt: skip
        assert r.exit_code == 0, r.output
        assert r.stdout.strip() == '"flow: Flow is a small ..."'
        assert _cli("replay", "m1", "--store", tmp_path / "r.db").stdout.strip() == "Matched"
    finally:
        for key in [k for k in list(McpConnection._registry()) if k[1] == str(tmp_path)]:
            McpConnection._registry().pop(key).close()
