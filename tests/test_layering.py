"""The import layering holds on both sides, every module on a floor: a floor imports only its own
floor and the ones below it, the compiler below the pipeline never imports the runtime, and the
runtime never imports the compiler. Every import counts, a lazy one in a function body too
(tests/import_graph.py reads them; tests/test_import_cycles.py holds that they form no cycle)."""

from __future__ import annotations

from typing import Optional

from import_graph import graph, imports_of

#: the runtime's floors, lowest first (runtime/*/__init__.py state them), then flowrt.abi (what
#: generated code may use) and flowrt/__init__.py ("top": the ABI plus the host API of the floors
#: below the host), with what each may import. The host is reached as flowrt.host, never through
#: the package, and generated code never reaches it.
RUNTIME = ("data", "history", "engine", "host", "abi", "top")
RUNTIME_MAY_IMPORT = {
    "data": {"data"},
    "history": {"data", "history"},
    "engine": {"data", "history", "engine"},
    "host": {"data", "history", "engine", "host"},
    "abi": {"data", "history", "engine"},
    "top": {"data", "history", "engine", "abi"},
}
#: the one import the package top makes of the host floor: `flowrt.Client` (the client of a
#: worker; importing it imports the package flowrt.host first), imported lazily by
#: flowrt/__init__.py's `__getattr__` when it is first asked for, so `import flowrt` (every
#: generated module) never loads the host; nothing else of the host is reached through the package
TOP_MAY_IMPORT_OF_THE_HOST = {"flowrt.host", "flowrt.host.client"}
#: the engine's own floors, lowest first (runtime/engine/__init__.py)
ENGINE_FLOORS = (
    ("interrupts", "describe", "outcomes", "tools", "retry", "debug"),
    ("state",),
    ("record",),
    ("task_ops",),
    ("calls",),
    ("checkpoints",),
    ("run_loop",),
    ("drive",),
)
#: the modules the command line is made of besides flow2py.cli (on its floor)
CLI_PARTS = ("flow2py.cli_output", "flow2py.cli_progress")
#: the compiler's floors, lowest first: a module imports its own floor or lower ones. "ground"
#: imports nothing above it; the floors below "pipeline" never import the runtime.
COMPILER = (
    ("ground", ("flow2py", "flow2py.span", "flow2py.diagnostics")),
    ("syntax", ("flow2py.syntax",)),
    ("format", ("flow2py.format",)),
    ("check", ("flow2py.check",)),
    ("codegen", ("flow2py.codegen",)),
    ("pipeline", ("flow2py.pipeline", "flow2py.inspect", "flow2py.cache", "flow2py.bundles", "flow2py.fix")),
    (
        "host",
        (
            "flow2py.host",
            "flow2py.testing",
            "flow2py.testenv",
            "flow2py.cli",
            "flow2py.pytest_plugin",
            *CLI_PARTS,
            "flow2py.worker_cli",
            "flow2py.store_cli",
            "flow2py.lsp",  # the language server: the checker for an editor (docs/spec/editor.md)
        ),
    ),
)
JOINS = [name for name, _ in COMPILER].index("pipeline")  # the lowest compiler floor that may use flowrt


def _within(mod: str, prefix: str) -> bool:
    return mod == prefix or (prefix != "flow2py" and mod.startswith(prefix + "."))


def runtime_floor(mod: str) -> Optional[tuple[str, int]]:
    """(floor, engine floor) of a flowrt module; None for a name outside flowrt."""
    parts = mod.split(".")
    if parts[0] != "flowrt":
        return None
    if len(parts) == 1:
        return ("top", 0)
    if parts[1] not in RUNTIME[:4] and parts[1] != "abi":
        return ("unplaced", 0)
    inner = 0
    if parts[1] == "engine" and len(parts) > 2:
        inner = next((i for i, names in enumerate(ENGINE_FLOORS) if parts[2] in names), len(ENGINE_FLOORS))
    return (parts[1], inner)


def compiler_floor(mod: str) -> Optional[int]:
    """The index in COMPILER of a flow2py module's floor (len(COMPILER): on none); None outside."""
    if mod.split(".")[0] != "flow2py":
        return None
    return next(
        (i for i, (_, prefixes) in enumerate(COMPILER) if any(_within(mod, p) for p in prefixes)),
        len(COMPILER),
    )


def _runtime_violation(mod: str, dep: str) -> Optional[str]:
    mine, theirs = runtime_floor(mod), runtime_floor(dep)
    if dep.split(".")[0] == "flow2py":
        return f"{mod} (the runtime) imports {dep} (the compiler)"
    if theirs is None or "unplaced" in (mine[0], theirs[0]):
        return None
    if theirs[0] not in RUNTIME_MAY_IMPORT[mine[0]]:
        if mine[0] == "top" and dep in TOP_MAY_IMPORT_OF_THE_HOST:
            return None
        return f"{mod} (floor {mine[0]}) imports {dep} (floor {theirs[0]})"
    if mine[0] == theirs[0] == "engine" and theirs[1] > mine[1]:
        return f"{mod} imports {dep}, a higher floor of the engine"
    return None


def _compiler_violation(mod: str, dep: str) -> Optional[str]:
    mine, theirs = compiler_floor(mod), compiler_floor(dep)
    if runtime_floor(dep) is not None:
        return f"{mod} (the compiler) imports {dep} (the runtime)" if mine < JOINS else None
    if theirs is None or len(COMPILER) in (mine, theirs) or theirs <= mine:
        return None
    return f"{mod} (floor {COMPILER[mine][0]}) imports {dep} (floor {COMPILER[theirs][0]})"


def violations(g: dict[str, set[str]]) -> list[str]:
    out = []
    for mod, deps in sorted(g.items()):
        if runtime_floor(mod) == ("unplaced", 0) or compiler_floor(mod) == len(COMPILER):
            out.append(f"{mod} is on no floor (place it in tests/test_layering.py)")
            continue
        check = _runtime_violation if runtime_floor(mod) is not None else _compiler_violation
        out.extend(v for v in (check(mod, dep) for dep in sorted(deps)) if v)
    return out


def test_the_tree_keeps_its_layers():
    g = graph()
    assert (
        "flowrt.engine.run_loop" in g and "flow2py.check" in g and "flowrt.abi" in g
    )  # the walk sees the tree
    assert violations(g) == []


def test_a_lower_floor_importing_a_higher_one_is_caught():
    g = {"flowrt.data.values": {"flowrt.history.trace"}, "flowrt.history.store": {"flowrt.data.values"}}
    assert violations(g) == ["flowrt.data.values (floor data) imports flowrt.history.trace (floor history)"]


def test_the_engine_floors_are_held_inside_the_engine():
    g = {"flowrt.engine.tools": {"flowrt.engine.run_loop"}, "flowrt.engine.drive": {"flowrt.engine.run_loop"}}
    assert violations(g) == [
        "flowrt.engine.tools imports flowrt.engine.run_loop, a higher floor of the engine"
    ]


def test_a_floor_importing_the_package_top_is_caught():
    assert violations({"flowrt.history.store": {"flowrt", "flowrt.abi"}}) == [
        "flowrt.history.store (floor history) imports flowrt (floor top)",
        "flowrt.history.store (floor history) imports flowrt.abi (floor abi)",
    ]


def test_the_host_may_import_every_floor_below_it_but_not_the_abi_or_the_package():
    ok = {
        "flowrt.host.operations": {
            "flowrt.data.values",
            "flowrt.history.store",
            "flowrt.engine.drive",
            "flowrt.host.forks",
        }
    }
    assert violations(ok) == []
    assert violations({"flowrt.host.nested": {"flowrt", "flowrt.abi"}}) == [
        "flowrt.host.nested (floor host) imports flowrt (floor top)",
        "flowrt.host.nested (floor host) imports flowrt.abi (floor abi)",
    ]


def test_the_abi_and_the_package_never_import_the_host():
    assert (
        violations(
            {
                "flowrt.abi": {"flowrt.data.values", "flowrt.engine.tools"},
                "flowrt": {"flowrt.abi", "flowrt.history.store", "flowrt.engine.drive"},
            }
        )
        == []
    )
    assert violations({"flowrt.abi": {"flowrt.host", "flowrt"}, "flowrt": {"flowrt.host.operations"}}) == [
        "flowrt (floor top) imports flowrt.host.operations (floor host)",
        "flowrt.abi (floor abi) imports flowrt (floor top)",
        "flowrt.abi (floor abi) imports flowrt.host (floor host)",
    ]


def test_the_compiler_importing_the_runtime_is_caught():
    assert violations({"flow2py.codegen.module": {"flowrt", "flow2py.codegen.py"}}) == [
        "flow2py.codegen.module (the compiler) imports flowrt (the runtime)"
    ]
    assert violations({"flow2py.diagnostics": {"flowrt.data.values"}}) == [
        "flow2py.diagnostics (the compiler) imports flowrt.data.values (the runtime)"
    ]


def test_the_pipeline_and_the_modules_above_it_may_join_the_two_halves():
    assert (
        violations(
            {
                "flow2py.pipeline": {"flowrt", "flow2py.codegen"},
                "flow2py.testing": {"flowrt.engine.drive", "flow2py.pipeline"},
            }
        )
        == []
    )


def test_the_runtime_importing_the_compiler_is_caught_the_host_floor_too():
    g = {"flowrt.engine.drive": {"flow2py.check"}, "flowrt.host.operations": {"flow2py.pipeline"}}
    assert violations(g) == [
        "flowrt.engine.drive (the runtime) imports flow2py.check (the compiler)",
        "flowrt.host.operations (the runtime) imports flow2py.pipeline (the compiler)",
    ]


def test_the_compiler_floors_go_one_way():
    g = {
        "flow2py.syntax.parser": {"flow2py.diagnostics", "flow2py.check.typed"},
        "flow2py.check.driver": {"flow2py.syntax.ast", "flow2py.codegen"},
        "flow2py.codegen.module": {"flow2py.check.typed", "flow2py.pipeline"},
        "flow2py.pipeline": {"flow2py.codegen", "flow2py.host"},
        "flow2py.cli": {"flow2py.host", "flow2py.testing", "flow2py.pipeline"},
    }
    assert violations(g) == [
        "flow2py.check.driver (floor check) imports flow2py.codegen (floor codegen)",
        "flow2py.codegen.module (floor codegen) imports flow2py.pipeline (floor pipeline)",
        "flow2py.pipeline (floor pipeline) imports flow2py.host (floor host)",
        "flow2py.syntax.parser (floor syntax) imports flow2py.check.typed (floor check)",
    ]


def test_the_ground_floor_imports_nothing_above_it():
    assert violations(
        {"flow2py.span": set(), "flow2py.diagnostics": {"flow2py.span", "flow2py.syntax.ast"}}
    ) == ["flow2py.diagnostics (floor ground) imports flow2py.syntax.ast (floor syntax)"]


def test_a_module_on_no_floor_is_caught():
    assert violations({"flow2py.newthing": set(), "flowrt.newthing": set()}) == [
        "flow2py.newthing is on no floor (place it in tests/test_layering.py)",
        "flowrt.newthing is on no floor (place it in tests/test_layering.py)",
    ]


def test_a_lazy_import_in_a_function_body_counts(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from flowrt.engine import drive\n    return drive\n", encoding="utf-8")
    deps = imports_of(probe, "flowrt.data.probe")
    assert deps == {"flowrt.engine", "flowrt.engine.drive"}
    assert violations({"flowrt.data.probe": deps}) == [
        "flowrt.data.probe (floor data) imports flowrt.engine (floor engine)",
        "flowrt.data.probe (floor data) imports flowrt.engine.drive (floor engine)",
    ]


def test_a_relative_import_is_resolved_in_its_package(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from ..engine import run_loop\n", encoding="utf-8")
    assert imports_of(probe, "flowrt.history.probe") == {"flowrt.engine", "flowrt.engine.run_loop"}


def test_the_package_top_reaches_the_client_and_nothing_else_of_the_host():
    assert violations({"flowrt": {"flowrt.host.client"}}) == []
    assert violations({"flowrt": {"flowrt.host.client", "flowrt.host.worker"}}) == [
        "flowrt (floor top) imports flowrt.host.worker (floor host)"
    ]
    assert violations({"flowrt.abi": {"flowrt.host.client"}}) == [
        "flowrt.abi (floor abi) imports flowrt.host.client (floor host)"
    ]
