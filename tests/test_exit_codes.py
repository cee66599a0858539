"""Exit codes live in one place: runtime/data/exit_codes.py defines them, docs/spec/execution.md
("Exit codes") lists the same ones, and no other source file of flow2py/ or runtime/ writes one
as a number (`sys.exit(3)`, `exit_code = 4`, `exit_code=5`, `x.exit_code == 130`)."""

from __future__ import annotations

import ast
import re

from flowrt.data import exit_codes
from import_graph import ROOT

EXITS = {"exit", "_exit", "SystemExit"}  # sys.exit, os._exit, raise SystemExit(n)


def _int(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _named_exit_code(node) -> bool:
    return (isinstance(node, ast.Name) and node.id == "exit_code") or (
        isinstance(node, ast.Attribute) and node.attr == "exit_code"
    )


def literal_exit_codes(source: str) -> list[int]:
    """Lines of `source` that write an exit code as a number."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if (name in EXITS and node.args and _int(node.args[0])) or any(
                k.arg == "exit_code" and _int(k.value) for k in node.keywords
            ):
                out.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and _int(node.value) and any(map(_named_exit_code, targets)):
                out.append(node.lineno)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(map(_named_exit_code, sides)) and any(map(_int, sides)):
                out.append(node.lineno)
    return sorted(out)


def test_no_source_file_but_exit_codes_py_writes_an_exit_code_as_a_number():
    home = ROOT / "runtime" / "data" / "exit_codes.py"
    found = {}
    for f in sorted([*ROOT.glob("flow2py/**/*.py"), *ROOT.glob("runtime/**/*.py")]):
        if f != home:
            lines = literal_exit_codes(f.read_text(encoding="utf-8"))
            if lines:
                found[f.relative_to(ROOT).as_posix()] = lines
    assert found == {}


def test_the_scan_finds_every_way_of_writing_one():
    source = (
        "import sys\nsys.exit(3)\nraise SystemExit(1)\nexit_code = 4\nclass R:\n    exit_code = 5\n"
        "Report('x', exit_code=6)\nif r.exit_code == 130:\n    pass\n"
        "sys.exit(EXIT_OK)\nexit_code = EXIT_PAUSED\nlen(x) == 3\n"
    )
    assert literal_exit_codes(source) == [2, 3, 4, 6, 7, 8]


def test_the_spec_lists_exactly_the_codes_the_module_defines():
    page = (ROOT / "docs" / "spec" / "execution.md").read_text(encoding="utf-8")
    section = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = {name: int(code) for code, name in re.findall(r"^\| (\d+) \| `(EXIT_[A-Z]+)` \|", section, re.M)}
    defined = {name: getattr(exit_codes, name) for name in exit_codes.__all__}
    assert listed == defined
