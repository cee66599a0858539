"""What `flow2py check --checkpoints` and `flow2py tools` show about a checked program."""

from __future__ import annotations

from flow2py.check.typed import CheckedProgram
from flow2py.check.reach import entry_roots, reachable_tools
from flow2py.check.typeterms import show


def checkpoint_sites(program: CheckedProgram) -> list[dict]:
    """Every tail call in the program's own modules (std is not the author's to change), with
    whether a checkpoint can be taken there and why."""
    out = []
    for s in program.checkpoints:
        if s.caller.startswith("std@"):
            continue
        out.append(
            {
                "file": s.span.file,
                "line": s.span.line,
                "column": s.span.column,
                "caller": s.caller,
                "callee": s.callee,
                "call": (s.callee.split("::")[-1] if s.callee else "a function value") + "(...)",
                "eligible": s.eligible,
                "reason": s.reason,
            }
        )
    return out


def tool_signatures(program: CheckedProgram) -> list[str]:
    """`web.search(query: Text) -> Result<Text, Text>  [web::search]` for every Tool the entry
    module's functions can reach, sorted by declaration id."""
    lines = []
    for decl in reachable_tools(program, entry_roots(program)):
        info = program.fn_decls[decl]
        alias = info.module.rsplit("/", 1)[-1]
        params = ", ".join(f"{n}: {show(t)}" for n, t in info.params)
        tps = f"<{', '.join(info.type_params)}>" if info.type_params else ""
        lines.append(f"{alias}.{info.name}{tps}({params}) -> {show(info.result)}  [{decl}]")
    return lines
