"""Syntax habits whose fix the checked program settles (E012; habits.py has the habits).

A habit is answered while parsing, before anything is known of the names it uses, so a fix that
depends on them is offered to review there. Once the program is checked some of those are no
longer a choice: Python's keyword arguments `split(body, size=400)` are dropped to give the
values by position, which is right exactly when each name is the parameter at its value's
position. `refine` looks each such call up in the checked program: when that holds for the
function it calls, the fix is safe; when the names are the parameters in another order, the fix
writes the values in the parameters' order, safe too (the names said which is which), and the
mismatches the order written made (E201 inside the call's arguments) are not reported.
"""

from __future__ import annotations

import dataclasses
import re

from flow2py.check.typed import CheckedProgram, FnRef, MethodRef
from flow2py.diagnostics import Diagnostic, Edit, Fix, Problems
from flow2py.span import Span
from flow2py.syntax import ast

_NAMED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*$")


def refine(modules, prog: CheckedProgram, problems: Problems) -> None:
    """Settle the keyword-argument fixes (E012 "keyword-args") by the function called."""
    by_file = {m.display: m for m in modules}
    items = problems.items
    drop: list[tuple[str, int, int]] = []  # (file, start, end): arguments given in another order
    for k, d in enumerate(items):
        data = d.data
        if d.code != "E012" or getattr(data, "kind", "") != "keyword-args" or not d.fixes:
            continue
        m = by_file.get(d.span.file)
        settled = _by_position(m, prog, d) if m is not None and not d.fixes[0].safe else None
        if settled is not None:
            fix, region = settled
            items[k] = dataclasses.replace(d, fixes=(fix,))
            if region is not None:
                drop.append(region)
    if drop:
        items[:] = [
            d
            for d in items
            if not (
                d.code == "E201"
                and any(f == d.span.file and a <= d.span.start and d.span.end <= b for f, a, b in drop)
            )
        ]


def _by_position(m, prog: CheckedProgram, d: Diagnostic):
    """The safe fix for the call `d` is in, and the arguments' region when they are reordered
    (None: the names are not the function's parameters, each once)."""
    src = m.ast.source or ""
    sp = d.span
    call = None
    for n in ast.walk(m.ast):
        if type(n) is ast.Call and n.span.start <= sp.start and sp.end <= n.span.end:
            call = n  # the innermost: walk is depth first
    if call is None or not call.args:
        return None
    ref = prog.refs.get(call.callee.id)
    fn = prog.fn_decls.get(ref.decl) if type(ref) in (FnRef, MethodRef) else None
    if fn is None:
        return None
    offset = 1 if type(ref) is MethodRef else 0
    names = [n for n, _ in fn.params][offset:]
    if len(call.args) != len(names):
        return None
    given: dict[str, str] = {}
    in_order = True
    for i, a in enumerate(call.args):
        before = src[: a.span.start]
        cut = max(before.rfind(","), before.rfind("("))
        hit = _NAMED.search(before[cut + 1 :]) if cut >= 0 else None
        name = hit.group(1) if hit is not None else names[i]
        if name not in names or name in given or a.span.end <= a.span.start:
            return None
        given[name] = src[a.span.start : a.span.end]
        in_order = in_order and name == names[i]
    if in_order:
        return dataclasses.replace(d.fixes[0], safe=True), None
    first, last = call.args[0].span, call.args[-1].span
    open_ = src.rfind("(", 0, first.start)
    if open_ < call.callee.span.end:
        return None
    start = open_ + 1
    at = Span(first.file, *_line_col(src, start), last.end_line, last.end_column, start, last.end)
    written = ", ".join(given[n] for n in names)
    fix = Fix(f"give the values in the parameters' order: `{written}`", (Edit(at, written),), True)
    return fix, (first.file, start, last.end)


def _line_col(src: str, off: int) -> tuple[int, int]:
    return src.count("\n", 0, off) + 1, off - (src.rfind("\n", 0, off) + 1) + 1
