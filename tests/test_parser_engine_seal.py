"""The parser engine is sealed: lark is reached from one module, the engine leaves the process's
global state as it found it, and the syntax package's lower floors import nothing above them."""

from __future__ import annotations

import ast
import gc
import pathlib

import pytest

from flow2py.syntax import parser
from flow2py.syntax.engine.lalr import gc_paused

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "flow2py"


def _imports(path: pathlib.Path) -> set[str]:
    """The modules a file imports, at any depth of its code (lazy imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_only_lark_tables_imports_lark_in_the_compiler():
    users = {
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        if any(m == "lark" or m.startswith("lark.") for m in _imports(p))
    }
    assert users == {"flow2py/syntax/engine/lark_tables.py"}


def test_diagnostics_and_span_import_nothing_of_the_project_above_them():
    assert {m for m in _imports(PACKAGE / "diagnostics.py") if m.startswith("flow2py")} == {"flow2py.span"}
    assert not {m for m in _imports(PACKAGE / "span.py") if m.startswith("flow2py")}


def test_the_engine_knows_no_flow_tree_and_nothing_imports_the_parser_front():
    for p in (PACKAGE / "syntax" / "engine").glob("*.py"):
        above = {
            m
            for m in _imports(p)
            if m.startswith("flow2py.syntax") and not m.startswith("flow2py.syntax.engine")
        }
        assert not above, p
    assert "flow2py.syntax.parser" not in _imports(PACKAGE / "syntax" / "messages.py")


def test_parsing_turns_the_collector_back_on_when_it_was_on():
    assert gc.isenabled()
    parser.parse_module("flow f() -> Int = 1\n", "m.flow")
    assert gc.isenabled()


def test_parsing_leaves_the_collector_off_when_the_caller_turned_it_off():
    gc.disable()
    try:
        parser.parse_module("flow f() -> Int = 1\n", "m.flow")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_is_back_on_after_an_exception_inside_the_pause():
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), gc_paused():
        assert not gc.isenabled()
        1 / 0  # noqa: B018
    assert gc.isenabled()
