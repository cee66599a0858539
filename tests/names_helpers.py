"""Running one Flow program every way a host runs one, for the name tests (test_names*.py).

`run_everywhere` checks it (`flow2py check`), builds it to disk (`flow2py build`), imports the
built package and runs it with flowrt.host (start, history, replay), and runs it again with the
CLI (`flow2py run`, which compiles in memory, then `history` and `replay`). Both runs must
complete and replay as Matched; what they print is returned for the test to compare.
"""

from __future__ import annotations

import importlib
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from click.testing import CliRunner

import flowrt as rt
from flow2py.cli import main as cli_main
from flowrt.host import Host

_packages = itertools.count()


@dataclass
class Ran:
    output: Optional[str]  # `flow2py run`'s stdout: the End value's Flow text
    history: Optional[str]  # `flow2py history` of that run
    built_value: object  # the End value of the run of the built package (a runtime value)
    built_history: Optional[str]  # flowrt.host's history of that run
    python: dict  # the built package's files: relative path -> Python text


def flow2py(*args) -> object:
    r = CliRunner().invoke(cli_main, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    return r


def _tools_file(tools: dict) -> str:
    lines = ["from flowrt import bind", ""]
    for name, src in tools.items():
        lines.append(f"bind({name!r}, {src})")
    return "\n".join(lines) + "\n"


def run_everywhere(
    d: Path,
    files: dict,
    input: Optional[dict] = None,
    tools: Optional[dict] = None,
    cli: bool = True,
    built: bool = True,
) -> Ran:
    """`files`: name -> Flow text (the entry is main.flow); `tools`: qualified Tool name -> the
    Python source of its implementation (a lambda taking the JSON arguments). `cli=False` leaves
    out the CLI's run (`output`, `history` None), `built=False` the built package's."""
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    main = d / "main.flow"
    r = flow2py("check", main)
    assert r.exit_code == 0, r.output
    ran = Ran(None, None, None, None, {})
    if built:
        ran.built_value, ran.built_history, ran.python = _run_built(d, main, input, tools)
    if cli:
        ran.output, ran.history = run_cli(d, input, tools)
    return ran


def _run_built(d: Path, main: Path, input: Optional[dict], tools: Optional[dict]):
    """`flow2py build` to disk, import, and run with flowrt.host: (End value, history, files)."""
    name = f"names_pkg{next(_packages)}"
    r = flow2py("build", main, "-o", d / "built", "--name", name)
    assert r.exit_code == 0, r.output
    sys.path.insert(0, str(d / "built"))
    try:
        pkg = importlib.import_module(name)
        bindings = rt.Bindings()
        for tool, src in (tools or {}).items():
            bindings.bind(tool, eval(src))
        host = Host(str(d / "built.db"), bindings=bindings)
        report = host.start(pkg.PROGRAM, input=input or {}, run_id="b")
        assert report.exit_code == 0, report.text
        history = host.history(pkg.PROGRAM, "b")
        assert host.replay(pkg.PROGRAM, "b").text == "Matched"
    finally:
        sys.path.remove(str(d / "built"))
        for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[m]
    python = {
        str(p.relative_to(d / "built" / name)): p.read_text() for p in (d / "built" / name).rglob("*.py")
    }
    return report.outcome.value, history, python


def run_cli(d: Path, input: Optional[dict], tools: Optional[dict]):
    """`flow2py run` of `d`/main.flow (compiling in memory), `history`, `replay`: (stdout, history)."""
    tool_args: list = []
    if tools:
        (d / "tools.py").write_text(_tools_file(tools))
        tool_args = ["--tools", d / "tools.py"]
    store = d / "runs.db"
    r = flow2py(
        "run",
        d / "main.flow",
        "--input",
        json.dumps(input or {}),
        "--store",
        store,
        "--run-id",
        "a",
        *tool_args,
    )
    assert r.exit_code == 0, r.output
    h = flow2py("history", "a", "--store", store)
    assert h.exit_code == 0, h.output
    rp = flow2py("replay", "a", "--store", store)
    assert (rp.exit_code, rp.stdout) == (0, "Matched\n"), rp.output
    return r.stdout.strip(), h.stdout


def end_line(history: str) -> str:
    """The End fact's text of a history (`2    End         Completed(...)` -> `Completed(...)`)."""
    line = next(ln for ln in history.splitlines() if ln.split()[1:2] == ["End"])
    return line.split(None, 2)[2]
