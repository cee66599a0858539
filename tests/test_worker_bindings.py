"""`flow2py worker --tools` binds as `flow2py run` does (flow2py.host.worker_bindings): each
served program's Tool protocol bindings are checked (hello, signatures) before the worker starts,
a mismatch refusing it in one line with exit code 1 and no store; a module repository's default
binding file binds the Tools the host's files leave unbound."""

from __future__ import annotations

import shutil
import time
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.binding_helpers import restored_bindings
from flow2py import host
from flow2py.cli import main
from flowrt.host.binding_files import where

PROTOCOL = Path(__file__).parent / "flow_programs" / "tool_protocol"
TOOLS = ("upper", "block", "meet", "seen", "get")


@pytest.fixture(autouse=True)
def _own_bindings():
    with restored_bindings():
        yield


def _protocol_program(d: Path, *flags) -> Path:
    for f in PROTOCOL.iterdir():
        if f.is_file():
            shutil.copy(f, d / f.name)
    target = " ".join(["exec:" + sys.executable, str(d / "server.py"), "--dir", str(d), *flags])
    lines = ["[tools]"] + [f'"words.{t}" = "{target}"' for t in TOOLS]
    (d / "tools.toml").write_text("\n".join(lines) + "\n")
    return d


def test_a_worker_whose_tool_server_signature_does_not_fit_refuses_to_start_in_one_line(tmp_path):
    d = _protocol_program(tmp_path, "--wrong-signature")
    r = CliRunner().invoke(
        main, ["worker", f"p={d / 'main.flow'}", "--tools", str(d / "tools.toml"), "--store", str(d / "w.db")]
    )
    assert r.exit_code == 1, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert "words.upper [words::upper]" in line
    assert "serves (Int) -> Result<Text, Text>, the declaration is (Text) -> Result<Text, Text>" in line
    assert line.endswith("the worker was not started (program 'p')")
    assert not (d / "w.db").exists()  # refused before the store is opened


def test_worker_bindings_check_every_served_program_and_keep_a_fitting_server(tmp_path):
    d = _protocol_program(tmp_path)
    served = {"p": host.compile_path(str(d / "main.flow"))}
    bindings = host.worker_bindings(served, [str(d / "tools.toml")])
    assert where(bindings._impls["words.upper"]).startswith("exec:")


REPO_MAIN = """use "github.com/acme/shout@v1/loud"
pub flow main(text: Text) -> Text !tool = match loud.shout(text) {
    Ok(t) => t,
    Err(_) => "no answer",
}
"""


def test_worker_bindings_apply_a_repositorys_default_binding_file(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    root = cache / "github.com" / "acme" / "shout"
    (root / "tags").mkdir(parents=True)
    (root / "tags" / "v1").write_text("c0ffee\n")
    commit = root / "commits" / "c0ffee"
    commit.mkdir(parents=True)
    (commit / "loud.flow").write_text("@tool pub flow shout(text: Text) -> Result<Text, Text>\n")
    (commit / "wb_repo_impl.py").write_text("def shout(text):\n    return {'Ok': text.upper()}\n")
    (commit / "flow.tools.toml").write_text('[tools]\n"loud::shout" = "python:wb_repo_impl.shout"\n')
    (tmp_path / "main.flow").write_text(REPO_MAIN)
    monkeypatch.setenv("FLOW2PY_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    loaded = host.compile_path(str(tmp_path / "main.flow"))
    ((tool_id, name),) = loaded.reachable(None)
    alone = host.load_tools([])
    assert tool_id not in alone and name not in alone  # only the repository's file binds it
    bindings = host.worker_bindings({"shout": loaded}, [])
    impl = bindings._impls.get(tool_id) or bindings._impls.get(name)
    assert where(impl) == "in-process python:wb_repo_impl.shout"


def test_a_worker_calls_a_tool_protocol_binding_with_the_whole_call_and_logs_it(tmp_path):
    from flowrt.host.worker import Worker

    d = _protocol_program(tmp_path)
    served = {"p": host.compile_path(str(d / "main.flow"))}
    bindings = host.worker_bindings(served, [str(d / "tools.toml")])
    lines: list[str] = []
    w = Worker(str(d / "w.db"), served, bindings, log=lines.append)
    w.start()
    try:
        run_id = w.submit("p", input={"text": "hi"}, run_id="t1")
        deadline = time.monotonic() + 20
        while w.status(run_id).state != "completed":
            assert time.monotonic() < deadline, "run t1 did not complete"
            time.sleep(0.01)
    finally:
        w.stop()
    assert w.status(run_id).result == '"HI"'
    said = [line for line in lines if "tool=words.upper" in line]
    assert [line.split("event=")[1].split()[0] for line in said] == ["call_sent", "call_returned"]
