"""flowrt.abi is the ABI docs/spec/abi.md names, and generated code uses nothing else."""

from __future__ import annotations

import ast
import pathlib
import pkgutil
import re

import pytest

import flowrt
import flowrt.abi
from flow2py.check import check_program
from flow2py.codegen import package_files

ROOT = pathlib.Path(__file__).resolve().parent.parent
ABI_MD = ROOT / "docs" / "spec" / "abi.md"
#: entry files whose generated code the test reads: every runnable program in the repository
ENTRIES = sorted(
    [
        *(ROOT / "golden" / "codegen").glob("*.flow"),
        ROOT / "examples" / "support" / "main.flow",
        *(ROOT / "tests" / "flow_programs").glob("*/main.flow"),
        *(ROOT / "bench" / "flow").glob("*.flow"),
        *(ROOT / "golden" / "history").glob("*/main.flow"),
    ]
)


def _submodules() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(flowrt.__path__)}


def names_on_page(text: str) -> set[str]:
    """The `rt.X` names a page mentions (`rt.dec_add/dec_sub` names both), and those it imports
    `from flowrt import ...`; `flowrt.X` counts too unless X is a module of the package."""
    names: set[str] = set()
    for m in re.finditer(r"\brt\.(\w+)((?:/\w+)*)", text):
        names.add(m.group(1))
        names.update(n for n in m.group(2).split("/") if n)
    for m in re.finditer(r"from flowrt import ([\w, ]+)", text):
        names.update(n.strip() for n in m.group(1).split(","))
    names.update(set(re.findall(r"\bflowrt\.(\w+)", text)) - _submodules())
    return names


def rt_names_in(source: str) -> set[str]:
    """Every attribute generated code reads from `rt` (`rt.T.INT` reads `T`)."""
    return {
        n.attr
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "rt"
    }


def test_abi_exports_exactly_the_names_abi_md_lists():
    page = names_on_page(ABI_MD.read_text(encoding="utf-8"))
    assert set(flowrt.abi.__all__) == page, (
        f"on the page, not in flowrt.abi: {sorted(page - set(flowrt.abi.__all__))}; "
        f"in flowrt.abi, not on the page: {sorted(set(flowrt.abi.__all__) - page)}"
    )
    assert len(flowrt.abi.__all__) == len(page)
    for name in flowrt.abi.__all__:
        assert getattr(flowrt, name) is getattr(flowrt.abi, name), name


def test_every_name_generated_code_uses_is_in_the_abi():
    used: set[str] = set()
    for entry in ENTRIES:
        r = check_program(str(entry))
        assert r.program is not None and not r.diagnostics, (entry, [d.message for d in r.diagnostics])
        for path, text in package_files(r.program).items():
            if path.endswith(".py"):
                used |= rt_names_in(text)
    assert {"fn", "T", "ToolCall", "TailCall", "ParkCall", "lang"} <= used  # the scan sees real code
    assert used <= set(flowrt.abi.__all__), sorted(used - set(flowrt.abi.__all__))


def test_every_rt_name_codegen_can_emit_is_in_the_abi():
    """Names codegen writes as text (`py.dotted("rt.bouncing")`), even where no program here
    reaches the construct that emits them."""
    emitted: set[str] = set()
    for path in (ROOT / "flow2py" / "codegen").glob("*.py"):
        emitted |= set(re.findall(r"[\"']rt\.(\w+)", path.read_text(encoding="utf-8")))
    assert emitted <= set(flowrt.abi.__all__), sorted(emitted - set(flowrt.abi.__all__))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("`rt.dec_add/dec_sub` and `rt.T.INT`", {"dec_add", "dec_sub", "T"}),
        (
            "from flowrt import bind, pending\n`flowrt.BINDINGS`, `flowrt.host`",
            {"bind", "pending", "BINDINGS"},
        ),
    ],
)
def test_page_names_are_read_as_the_page_writes_them(text, expected):
    assert names_on_page(text) == expected


def test_a_name_generated_code_uses_outside_the_abi_is_caught():
    assert rt_names_in("import flowrt as rt\nx = rt.Store(rt.T.INT)\n") - set(flowrt.abi.__all__) == {"Store"}
