"""The import layering holds: the compiler and the runtime stay apart, and within flowrt a floor
imports only its own floor and the ones below it (every import counts, a lazy one in a function
body too)."""
from __future__ import annotations

import ast
import pathlib
from typing import Optional

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: the runtime's floors, lowest first (runtime/*/__init__.py states them too); flowrt.abi and
#: flowrt/__init__.py sit above them all
FLOORS = ("data", "history", "engine", "host")
TOP = len(FLOORS)
#: the engine's own floors, lowest first (runtime/engine/__init__.py)
ENGINE_FLOORS = (("interrupts", "describe", "outcomes", "tools"), ("calls", "task_ops"), ("checkpoints",),
                 ("run_loop",), ("drive",))
#: the compiler's parts that never import the runtime
COMPILER = ("flow2py.check", "flow2py.codegen", "flow2py.syntax")


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    parts = list(rel.with_suffix("").parts)
    if parts[0] == "runtime":
        parts[0] = "flowrt"
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: pathlib.Path, name: Optional[str] = None) -> set[str]:
    """Every module `path` (the module `name`) imports, wherever the import is; `from pkg import
    mod` names pkg.mod too (it may be a module)."""
    here = (name or module_name(path)).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def graph() -> dict[str, set[str]]:
    files = [*(ROOT / "runtime").rglob("*.py"), *(ROOT / "flow2py").rglob("*.py")]
    return {module_name(f): imports_of(f) for f in files}


def runtime_floor(mod: str) -> Optional[tuple[int, int]]:
    """(floor, engine floor) of a flowrt module; None for a name outside flowrt."""
    parts = mod.split(".")
    if parts[0] != "flowrt":
        return None
    if len(parts) == 1 or parts[1] not in FLOORS:
        return (TOP, 0)
    floor = FLOORS.index(parts[1])
    inner = 0
    if parts[1] == "engine" and len(parts) > 2:
        inner = next((i for i, names in enumerate(ENGINE_FLOORS) if parts[2] in names), len(ENGINE_FLOORS))
    return (floor, inner)


def violations(g: dict[str, set[str]]) -> list[str]:
    out = []
    for mod, deps in sorted(g.items()):
        mine = runtime_floor(mod)
        for dep in sorted(deps):
            if mod.startswith(COMPILER) and (dep == "flowrt" or dep.startswith("flowrt.")):
                out.append(f"{mod} (the compiler) imports {dep} (the runtime)")
            if mine is not None and mine[0] < FLOORS.index("host") and dep.split(".")[0] == "flow2py":
                out.append(f"{mod} (the runtime's core) imports {dep} (the compiler)")
            theirs = runtime_floor(dep)
            if mine is None or theirs is None or mine[0] == TOP:
                continue
            if theirs[0] > mine[0]:
                out.append(f"{mod} (floor {FLOORS[mine[0]]}) imports {dep} (floor "
                           f"{FLOORS[theirs[0]] if theirs[0] < TOP else 'top'})")
            elif theirs[0] == mine[0] == FLOORS.index("engine") and theirs[1] > mine[1]:
                out.append(f"{mod} imports {dep}, a higher floor of the engine")
    return out


def test_the_tree_keeps_its_layers():
    g = graph()
    assert "flowrt.engine.run_loop" in g and "flow2py.check" in g  # the walk sees the tree
    assert violations(g) == []


def test_a_lower_floor_importing_a_higher_one_is_caught():
    g = {"flowrt.data.values": {"flowrt.history.trace"}, "flowrt.history.store": {"flowrt.data.values"}}
    assert violations(g) == ["flowrt.data.values (floor data) imports flowrt.history.trace (floor history)"]


def test_the_engine_floors_are_held_inside_the_engine():
    g = {"flowrt.engine.tools": {"flowrt.engine.run_loop"}, "flowrt.engine.drive": {"flowrt.engine.run_loop"}}
    assert violations(g) == ["flowrt.engine.tools imports flowrt.engine.run_loop, a higher floor of the engine"]


def test_a_floor_importing_the_package_top_is_caught():
    assert violations({"flowrt.history.store": {"flowrt", "flowrt.abi"}}) == [
        "flowrt.history.store (floor history) imports flowrt (floor top)",
        "flowrt.history.store (floor history) imports flowrt.abi (floor top)"]


def test_the_compiler_importing_the_runtime_is_caught():
    assert violations({"flow2py.codegen.module": {"flowrt", "flow2py.codegen.py"}}) == [
        "flow2py.codegen.module (the compiler) imports flowrt (the runtime)"]


def test_the_runtime_core_importing_the_compiler_is_caught_and_the_host_may():
    g = {"flowrt.engine.drive": {"flow2py.check"}, "flowrt.host.operations": {"flow2py.check"}}
    assert violations(g) == ["flowrt.engine.drive (the runtime's core) imports flow2py.check (the compiler)"]


def test_a_lazy_import_in_a_function_body_counts(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from flowrt.engine import drive\n    return drive\n", encoding="utf-8")
    deps = imports_of(probe, "flowrt.data.probe")
    assert deps == {"flowrt.engine", "flowrt.engine.drive"}
    assert violations({"flowrt.data.probe": deps}) == [
        "flowrt.data.probe (floor data) imports flowrt.engine (floor engine)",
        "flowrt.data.probe (floor data) imports flowrt.engine.drive (floor engine)"]


def test_a_relative_import_is_resolved_in_its_package(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from ..engine import run_loop\n", encoding="utf-8")
    assert imports_of(probe, "flowrt.history.probe") == {"flowrt.engine", "flowrt.engine.run_loop"}
