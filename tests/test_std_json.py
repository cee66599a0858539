"""std@v1/json's Value at the boundary: it crosses as the plain JSON it stands for (docs/spec/data.md,
"JSON values"), in `--input`, `--reply`, a Python Tool's result and the arguments an implementation
is handed; in a history it is an enum value, so a run holding one replays Matched."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

import flowrt as rt
from flowrt.data.jsonvalue import from_plain, json_parse, json_render, to_plain
from tests.history_e2e_helpers import Cli

SVC = """\
use "std@v1/json"

@tool pub flow fetch(query: json.Value) -> Result<json.Value, Text>
@tool pub flow ask(question: Text) -> Result<json.Value, Text>
"""

MAIN = """\
use "std@v1/json"
use "./svc"

pub type Request { pub id: Int, pub body: json.Value }

// The Tool's answer, rendered, and the member `name` of its first item.
pub flow main(req: Request) -> (Text, Option<json.Value>) !tool = match svc.fetch(req.body) {
    Ok(v) => (json.render(v), json.path(v, ["items", "0", "name"])),
    Err(_) => ("no answer", None),
}

pub flow asking(q: Text) -> Text !tool = match svc.ask(q) {
    Ok(v) => json.render(v),
    Err(_) => "no answer",
}

pub flow echo(v: json.Value) -> json.Value = v
"""

TOOLS = """\
import json
from decimal import Decimal

import flowrt
from flowrt import bind, pending


@bind("svc.fetch")
def fetch(query):
    # what the implementation is handed, written down for the test to read
    with open("seen.json", "w") as f:
        json.dump(query, f, default=lambda d: {"decimal": str(d)})
    if query == "runtime values":
        return flowrt.Ok(flowrt.json.Object(flowrt.dict_of([("items", flowrt.json.List(flowrt.list_of([])))])))
    return {"Ok": {"items": [{"name": "pen", "price": Decimal("2.50")}, {"name": "ink"}], "n": 2, "none": None}}


@bind("svc.ask")
def ask(question):
    return pending
"""


@pytest.fixture
def cli(tmp_path, monkeypatch):
    (tmp_path / "svc.flow").write_text(SVC)
    (tmp_path / "main.flow").write_text(MAIN)
    (tmp_path / "tools.py").write_text(TOOLS)
    monkeypatch.chdir(tmp_path)
    return Cli(tmp_path)


def _run(cli, input_json, *extra, run_id="a"):
    return cli(
        "run",
        cli.d / "main.flow",
        "--input",
        input_json,
        "--tools",
        cli.d / "tools.py",
        "--run-id",
        run_id,
        *extra,
    )


def test_input_with_a_value_field_is_plain_json_and_the_tool_gets_plain_json(cli):
    r = _run(cli, '{"req": {"id": 1, "body": {"q": ["pens", 2.5, 3, true, null], "Object": {}}}}')
    assert r.exit_code == 0, r.stdout + r.stderr
    seen = json.loads((cli.d / "seen.json").read_text())
    # numbers with a fraction reach Python as Decimal, integers as int; `Object` is just a key
    assert seen == {"Object": {}, "q": ["pens", {"decimal": "2.5"}, 3, True, None]}


def test_a_tool_result_in_plain_json_is_a_value(cli):
    r = _run(cli, '{"req": {"id": 1, "body": "x"}}')
    assert r.exit_code == 0, r.stdout + r.stderr
    out = r.stdout.strip()
    assert (
        r'"{\"items\":[{\"name\":\"pen\",\"price\":2.50},{\"name\":\"ink\"}],\"n\":2,\"none\":null}"' in out
    )
    assert 'Some(Text("pen"))' in out


def test_a_tool_result_of_runtime_values_is_admitted_too(cli):
    r = _run(cli, '{"req": {"id": 1, "body": "runtime values"}}')
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r'("{\"items\":[]}", None)' in r.stdout


def test_a_run_holding_values_replays_matched(cli):
    assert _run(cli, '{"req": {"id": 1, "body": {"deep": [[[1.000]]]}}}').exit_code == 0
    r = cli("replay", "a")
    assert r.exit_code == 0 and r.stdout.startswith("Matched"), r.stdout + r.stderr


def test_a_reply_is_plain_json(cli):
    r = cli(
        "run",
        cli.d / "main.flow",
        "--entry",
        "asking",
        "--input",
        '{"q": "?"}',
        "--tools",
        cli.d / "tools.py",
        "--run-id",
        "p",
    )
    assert r.exit_code == 3, r.stdout + r.stderr
    call = r.stdout.splitlines()[1].split()[0]
    r = cli(
        "resume",
        "p",
        "--tools",
        cli.d / "tools.py",
        "--reply",
        f'{call}={{"Ok": {{"b": [1e2, "x"], "a": {{}}}}}}',
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r'"{\"a\":{},\"b\":[100,\"x\"]}"' in r.stdout
    assert cli("replay", "p").stdout.startswith("Matched")


@pytest.mark.parametrize(
    "body, message",
    [
        ('"\\ud800"', "$.v: not Unicode text: a lone surrogate U+D800 at character 0"),
        ('{"k\\udc00": 1}', "$.v.<key"),
        ("[" * 200 + "]" * 200, "nested deeper than 128"),
        ("1e999999999", "at most 4300 are admitted"),
    ],
)
def test_input_beyond_the_bounds_is_refused_with_its_path(cli, body, message):
    r = cli("run", cli.d / "main.flow", "--entry", "echo", "--input", '{"v": ' + body + "}", "--run-id", "b")
    assert r.exit_code == 1 and message in r.stderr, r.stdout + r.stderr


def test_a_value_in_a_record_field_is_refused_with_the_mapping_s_messages():
    from flowrt.data.decoding import decode

    with pytest.raises(rt.DecodeError) as e:
        decode(rt.T.Named(rt.json.Value), {"a": [1, object()]})
    assert str(e.value).startswith("$.a[1]: expected json.Value (JSON), got <object>")


def test_plain_json_and_values_round_trip():
    plain = {"a": [1, Decimal("2.50"), "x", None, True, {"b": []}]}
    v = from_plain(plain)
    assert to_plain(v) == plain and type(to_plain(v)["a"][0]) is int
    assert rt.to_json(v) == plain  # the JSON mapping writes a Value as its plain JSON
    assert json_parse(json_render(v)) == rt.Ok(v)


def test_a_value_in_a_history_is_the_canonical_cbor_of_the_enum():
    from flowrt.history.trace import decode_value, encode_value

    v = from_plain({"k": [1, "x", None]})
    assert decode_value(encode_value(v)) == v


def test_the_examples_of_stdlib_md_json_section_run_and_pass(tmp_path):
    from pathlib import Path

    from flow2py.testing import run_file

    page = (Path(__file__).parent.parent / "docs" / "spec" / "stdlib.md").read_text(encoding="utf-8")
    section = page.split("## std@v1/json", 1)[1]
    blocks = [b.split("```", 1)[0] for b in section.split("```flow\n")[1:]]
    runnable = [b for b in blocks if "@test" in b]
    assert runnable
    names = []
    for i, text in enumerate(runnable):
        path = tmp_path / f"example_{i}.flow"
        path.write_text(text)
        results, diagnostics = run_file(str(path))
        assert results is not None, diagnostics
        assert all(r.passed for r in results), [(r.name, r.message) for r in results if not r.passed]
        names += [r.name for r in results]
    assert len(names) >= 5


@pytest.mark.parametrize(
    "text, message",
    [
        ('"\\ud800"', "$: not Unicode text: a lone surrogate U+D800 at character 0"),
        ('{"a": {"b": 1, "b": 2}}', '$.a: duplicate key "b"'),
        ("[" * 129 + "]" * 129, "nested deeper than 128 arrays/objects"),
    ],
)
def test_parse_keeps_the_bounds_of_admitted_data(text, message):
    got = json_parse(text)
    assert type(got) is rt.Err and message in got._0[3], got
    assert got._0[:3] == (0, 1, 1)


def test_render_of_a_value_nested_far_deeper_than_python_recursion():
    v = rt.json.NULL
    for _ in range(50_000):
        v = rt.json.List(rt.list_of([v]))
    assert json_render(v) == "[" * 50_000 + "null" + "]" * 50_000


GENERIC = """\
use "std@v1/json"
use "./kv"

pub type Value { pub n: Int }

// A generic Tool at the program's own `Value` and at std's `json.Value`, both left pending.
pub flow main() -> Text !tool = match (kv.get("mine"), kv.get("theirs")) {
    (Ok(Value { n }), Ok(v)) => data.to_text(n) ++ " " ++ json.render(v),
    _ => "no",
}
"""


def test_a_generic_tool_at_json_value_and_at_a_program_s_own_value_resumes_and_replays(tmp_path):
    (tmp_path / "kv.flow").write_text("@tool pub flow get<T>(key: Text) -> Result<T, Text>\n")
    (tmp_path / "main.flow").write_text(GENERIC.replace('use "./kv"', 'use "./kv"\nuse "std@v1/data"'))
    (tmp_path / "tools.py").write_text(
        "from flowrt import bind, pending\n\nbind('kv.get', lambda key: pending)\n"
    )
    cli = Cli(tmp_path)
    r = cli("run", tmp_path / "main.flow", "--tools", tmp_path / "tools.py", "--run-id", "g")
    assert r.exit_code == 3, r.stdout + r.stderr
    assert "reply type:  Result<Value, Text>" in r.stdout  # the program's own Value
    r = cli("resume", "g", "--tools", tmp_path / "tools.py", "--reply", 'root#1={"Ok": {"n": 7}}')
    assert r.exit_code == 3 and "reply type:  Result<json.Value, Text>" in r.stdout, r.stdout + r.stderr
    r = cli("resume", "g", "--tools", tmp_path / "tools.py", "--reply", 'root#2={"Ok": {"n": [7]}}')
    assert r.exit_code == 0 and '"7 {\\"n\\":[7]}"' in r.stdout, r.stdout + r.stderr
    assert cli("replay", "g").stdout.startswith("Matched")


def test_the_type_text_of_a_value_is_json_value_and_reads_back():
    d = rt.T.ListOf(rt.T.Named(rt.json.Value))
    assert rt.type_text(d) == "List<json.Value>"
    assert rt.parse_type_text("List<json.Value>", rt.ClassTable()) == d
