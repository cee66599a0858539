"""Which Tools a program can reach from its entry, before it runs (seed 001: "the compiler can list
every Tool a program can reach before the run starts"; a missing binding refuses the run).

A plain walk over the checked program's call graph: from the root functions, every function a
body refers to (called or passed as a value, methods and operators included) is visited once.
"""

from __future__ import annotations

from flow2py.check.typed import CheckedProgram, FnRef, MethodRef
from flow2py.syntax import ast


def reachable_tools(program: CheckedProgram, roots: list[str]) -> list[str]:
    """Declaration ids of the Tools reachable from the `roots` (declaration ids), sorted."""
    seen: set[str] = set()
    stack = [r for r in roots if r in program.fn_decls]
    tools: set[str] = set()
    while stack:
        decl = stack.pop()
        if decl in seen:
            continue
        seen.add(decl)
        info = program.fn_decls[decl]
        if info.is_tool:
            tools.add(decl)
            continue
        if info.node is None or info.node.body is None:
            continue
        for node in ast.walk(info.node.body):
            ref = program.refs.get(node.id)
            if isinstance(ref, (FnRef, MethodRef)) and ref.decl not in seen:
                stack.append(ref.decl)
    return sorted(tools)


def entry_roots(program: CheckedProgram, entry: str | None = None) -> list[str]:
    """The entry function, or (no entry named) every function of the entry module."""
    module = program.entry_module
    if entry is not None:
        return [f"{module}::{entry}"]
    return [d for d, i in program.fn_decls.items() if i.module == module]
