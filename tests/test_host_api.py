"""A host application runs a built package with flowrt alone: start, pause, resume, replay."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import flowrt as rt
from flowrt.host import Host, Refused

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "support"


@pytest.fixture()
def built(tmp_path):
    out = tmp_path / "pkgs"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "flow2py.cli",
            "build",
            str(EXAMPLE / "main.flow"),
            "-o",
            str(out),
            "--name",
            "support_app",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return out


def _support_bindings():
    b = rt.Bindings()
    b.bind(
        "planner.next",
        lambda ticket, notes: (
            {"Ok": {"Search": "q"}}
            if not notes
            else ({"Ok": {"Ask": "Which version?"}} if len(notes) == 1 else {"Ok": {"Done": "fixed"}})
        ),
    )
    b.bind("web.search", lambda q: rt.pending)
    b.bind("docs.search", lambda q: {"Ok": "docs hit"})
    b.bind("human.ask", lambda q: rt.pending)
    return b


def test_a_host_application_starts_resumes_and_replays_a_built_package(built, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(built))
    pkg = importlib.import_module("support_app")
    try:
        host = Host(str(tmp_path / "runs.db"), bindings=_support_bindings())
        first = host.start(pkg.PROGRAM, input={"ticket": "Login fails"}, run_id="app-1", checkpoint_every=5)
        assert first.exit_code == 3 and "c1:root#2  human.ask" in first.text
        done = host.resume(pkg, "app-1", replies={"c1:root#2": {"Ok": "17.4"}})
        assert done.exit_code == 0 and done.text == 'Resolved("fixed")'
        assert host.replay(pkg, "app-1").text == "Matched"
        assert "Checkpoint  work(" in host.history(pkg, "app-1")
        assert host.verify("app-1")[0] is True
    finally:
        for name in [m for m in sys.modules if m == "support_app" or m.startswith("support_app.")]:
            del sys.modules[name]


def test_the_cli_resumes_a_run_a_host_application_started(built, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(built))
    pkg = importlib.import_module("support_app")
    try:
        db = str(tmp_path / "runs.db")
        Host(db, bindings=_support_bindings()).start(
            pkg.PROGRAM, input={"ticket": "t"}, run_id="app-2", checkpoint_every=5
        )
    finally:
        for name in [m for m in sys.modules if m == "support_app" or m.startswith("support_app.")]:
            del sys.modules[name]
    r = subprocess.run(
        [sys.executable, "-m", "flow2py.cli", "replay", "app-2", "--store", db],
        capture_output=True,
        text=True,
    )
    assert r.stdout.splitlines()[0].startswith(
        "Incomplete: "
    )  # paused on human.ask: the CLI compiled the stored sources


def test_a_run_refuses_to_continue_on_another_program(tmp_path):
    from flow2py import host as fhost

    other = tmp_path / "other.flow"
    other.write_text("pub flow main(ticket: Text) -> Text = ticket\n")
    db = str(tmp_path / "runs.db")
    Host(db).start(fhost.compile_path(str(other)).program, input={"ticket": "x"}, run_id="other-1")
    support = fhost.compile_path(str(EXAMPLE / "main.flow"))
    with pytest.raises(Refused, match="a run always continues on the program it started with"):
        Host(db).replay(support.program, "other-1")
