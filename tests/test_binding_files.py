"""Binding files (docs/spec/abi.md, "Binding files"): `--tools x.toml` says where each Tool runs
(`python:`, `exec:`, `http://`), a module repository's `flow.tools.toml` binds its own Tools unless
the host binds them, `flow2py tools PATH --tools FILE` shows where each Tool would run, and every
bad file is a one-line refusal with exit 1 that records nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.binding_helpers import restored_bindings
from flow2py.cli import main
from flowrt.host.binding_files import close, load_binding_file
from flowrt.host.tool_protocol import RemoteTool

SERVER = Path(__file__).parent / "flow_programs" / "tool_protocol" / "server.py"

WORDS = "@tool pub flow upper(text: Text) -> Result<Text, Text>\n@tool pub flow lower(text: Text) -> Result<Text, Text>\n"
MAIN = """use "./words"
pub flow main(text: Text) -> Text !tool = match words.upper(text) {
    Ok(t) => t,
    Err(_) => "no answer",
}
pub flow both(text: Text) -> (Text, Text) !tool = (
    match words.upper(text) { Ok(t) => t, Err(_) => "no answer" },
    match words.lower(text) { Ok(t) => t, Err(_) => "no answer" },
)
"""
IMPL = "def upper(text):\n    return {'Ok': text.upper() + '!'}\n\ndef lower(text):\n    return {'Ok': text.lower()}\n"


@pytest.fixture(autouse=True)
def _own_bindings():
    with restored_bindings():
        yield


def _cli(*args, env=None):
    return CliRunner(env=env).invoke(main, [str(a) for a in args])


def _program(tmp_path: Path, module: str) -> Path:
    (tmp_path / "main.flow").write_text(MAIN)
    (tmp_path / "words.flow").write_text(WORDS)
    (tmp_path / f"{module}.py").write_text(IMPL)
    return tmp_path


def _run(d: Path, tools: str, entry="main", env=None):
    return _cli(
        "run", d / "main.flow", "--entry", entry, "--input", '{"text": "Hi"}', "--tools", tools,
        "--store", d / "r.db", env=env,
    )  # fmt: skip


def test_a_python_target_binds_a_function_of_a_module_next_to_the_file(tmp_path):
    d = _program(tmp_path, "bf_impl_a")
    (d / "t.toml").write_text('[tools]\n"words.upper" = "python:bf_impl_a.upper"\n')
    r = _run(d, d / "t.toml")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '"HI!"'


def test_a_binding_by_declaration_identity_and_one_by_name_both_bind(tmp_path):
    d = _program(tmp_path, "bf_impl_b")
    (d / "t.toml").write_text(
        '[tools]\n"words::upper" = "python:bf_impl_b.upper"\n"words.lower" = "python:bf_impl_b.lower"\n'
    )
    r = _run(d, d / "t.toml", entry="both")
    assert r.stdout.strip() == '("HI!", "hi")', r.output


def test_targets_naming_one_command_share_one_process(tmp_path):
    target = f"exec:{sys.executable} {SERVER}"
    (tmp_path / "t.toml").write_text(
        f'[tools]\n"words.upper" = {json.dumps(target)}\n"words.block" = {{ at = {json.dumps(target)}, timeout = 2 }}\n'
    )
    b = load_binding_file(str(tmp_path / "t.toml"))
    upper, block = b._impls["words.upper"], b._impls["words.block"]
    assert isinstance(upper, RemoteTool) and upper.conn is block.conn
    assert (upper.timeout, block.timeout) == (None, 2.0)
    close(b)


@pytest.mark.parametrize(
    "text, says",
    [
        ('[tools]\n"words.upper" = "ftp://x"\n', "unknown scheme 'ftp' (use python:module.function"),
        ("[tools\n", "not valid TOML"),
        ('[bindings]\n"words.upper" = "exec:x"\n', "expected a [tools] table"),
        ('[tools]\n"words.upper" = "python:bf_no_such_module.f"\n', "no module 'bf_no_such_module'"),
        (
            '[tools]\n"words.upper" = "python:bf_impl_c.missing"\n',
            "module bf_impl_c has no function 'missing'",
        ),
        ('[tools]\n"words.upper" = { at = "exec:x", retries = 2 }\n', "unknown option 'retries'"),
        ('[tools]\n"words.upper" = { at = "exec:x", timeout = -1 }\n', "timeout must be a positive number"),
        ('[tools]\n"words.upper" = 3\n', 'expected "python:module.function"'),
        ('[tools]\n"words.upper" = "exec:"\n', "exec: names no command"),
    ],
)
def test_a_bad_binding_file_is_refused_in_one_line_recording_nothing(tmp_path, text, says):
    d = _program(tmp_path, "bf_impl_c")
    (d / "t.toml").write_text(text)
    r = _run(d, d / "t.toml")
    assert r.exit_code == 1
    assert says in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith(f"flow2py: --tools {d / 't.toml'}: ")
    assert not (d / "r.db").exists()


def test_a_missing_binding_file_is_refused(tmp_path):
    d = _program(tmp_path, "bf_impl_d")
    r = _run(d, d / "nope.toml")
    assert r.exit_code == 1 and "nope.toml: no such file" in r.output


def test_a_server_that_cannot_start_refuses_the_run(tmp_path):
    d = _program(tmp_path, "bf_impl_e")
    (d / "t.toml").write_text('[tools]\n"words.upper" = "exec:./no-such-server --x"\n')
    r = _run(d, d / "t.toml")
    assert r.exit_code == 1
    assert "exec:./no-such-server --x: could not start the tool server" in r.output
    assert "the run was not started" in r.output and not (d / "r.db").exists()


def test_tools_shows_where_each_reachable_tool_would_run(tmp_path):
    d = _program(tmp_path, "bf_impl_f")
    (d / "t.toml").write_text(
        '[tools]\n"words.upper" = { at = "exec:python3 server.py", timeout = 5 }\n'
        '"words.lower" = "python:bf_impl_f.lower"\n'
    )
    r = _cli("tools", d / "main.flow", "--tools", d / "t.toml")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        "words.lower(text: Text) -> Result<Text, Text>  [words::lower]  => in-process python:bf_impl_f.lower",
        "words.upper(text: Text) -> Result<Text, Text>  [words::upper]  => exec:python3 server.py (timeout 5 s)",
    ]


def test_tools_shows_a_url_and_an_unbound_tool(tmp_path):
    d = _program(tmp_path, "bf_impl_h")
    (d / "u.toml").write_text('[tools]\n"words.lower" = "http://127.0.0.1:9"\n')
    r = _cli("tools", d / "main.flow", "--tools", d / "u.toml")
    assert r.stdout.splitlines()[0].endswith("=> http://127.0.0.1:9")
    assert r.stdout.splitlines()[1].endswith("[words::upper]  => unbound")


def test_tools_without_bindings_prints_the_signatures_only(tmp_path):
    d = _program(tmp_path, "bf_impl_g")
    r = _cli("tools", d / "main.flow")
    assert r.stdout.splitlines() == [
        "words.lower(text: Text) -> Result<Text, Text>  [words::lower]",
        "words.upper(text: Text) -> Result<Text, Text>  [words::upper]",
    ]


# ---- a module repository's own bindings ----------------------------------------------------------

REPO_MAIN = """use "github.com/acme/shout@v1/loud"
pub flow main(text: Text) -> Text !tool = match loud.shout(text) {
    Ok(t) => t,
    Err(_) => "no answer",
}
"""


def _repo(tmp_path: Path, bindings: str) -> tuple[Path, dict]:
    cache = tmp_path / "cache"
    root = cache / "github.com" / "acme" / "shout"
    (root / "tags").mkdir(parents=True)
    (root / "tags" / "v1").write_text("c0ffee\n")
    commit = root / "commits" / "c0ffee"
    commit.mkdir(parents=True)
    (commit / "loud.flow").write_text("@tool pub flow shout(text: Text) -> Result<Text, Text>\n")
    (commit / "bf_repo_impl.py").write_text("def shout(text):\n    return {'Ok': text.upper() + ' (repo)'}\n")
    (commit / "flow.tools.toml").write_text(bindings)
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "main.flow").write_text(REPO_MAIN)
    (prog / "host_impl.py").write_text(
        "from flowrt import bind\n@bind('loud.shout')\ndef shout(text):\n    return {'Ok': text + ' (host)'}\n"
    )
    (prog / "empty.toml").write_text("[tools]\n")
    return prog, {"FLOW2PY_CACHE": str(cache)}


def test_a_repositorys_default_binding_file_binds_its_own_tools(tmp_path):
    prog, env = _repo(tmp_path, '[tools]\n"loud::shout" = "python:bf_repo_impl.shout"\n')
    r = _cli("run", prog / "main.flow", "--input", '{"text": "hi"}', "--store", prog / "r.db", env=env)
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '"HI (repo)"'
    sites = _cli("tools", prog / "main.flow", "--tools", prog / "empty.toml", env=env).stdout
    assert sites.strip().endswith("=> in-process python:bf_repo_impl.shout")
    # without --tools too: the repository's defaults are where its Tools would run
    alone = _cli("tools", prog / "main.flow", env=env).stdout
    assert alone.strip().endswith("=> in-process python:bf_repo_impl.shout")


def test_the_hosts_own_binding_overrides_the_repositorys_default(tmp_path):
    prog, env = _repo(tmp_path, '[tools]\n"loud.shout" = "python:bf_repo_impl.shout"\n')
    r = _cli(
        "run", prog / "main.flow", "--input", '{"text": "hi"}', "--tools", prog / "host_impl.py",
        "--store", prog / "r.db", env=env,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == '"hi (host)"'


def test_a_bad_repository_binding_file_is_refused_in_one_line(tmp_path):
    prog, env = _repo(tmp_path, '[tools]\n"loud.shout" = "gopher:x"\n')
    r = _cli("run", prog / "main.flow", "--input", '{"text": "hi"}', "--store", prog / "r.db", env=env)
    assert r.exit_code == 1
    assert "a repository's default bindings:" in r.output and "unknown scheme 'gopher'" in r.output
    assert len(r.output.strip().splitlines()) == 1
