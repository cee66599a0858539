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
from flow2py.check.typeterms import resolve, show
from flow2py.diagnostics import Diagnostic, Edit, Fix, Problems
from flow2py.span import Span
from flow2py.syntax import ast
from flow2py.syntax.joins import _joined
from flow2py.syntax.habits_scanned import joined_template

_NAMED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*$")


def refine(modules, prog: CheckedProgram, problems: Problems) -> None:
    """Settle the keyword-argument fixes (E012 "keyword-args") by the function called, the
    joins of f-strings and template literals by the types of their parts, and `a ?: b` by the
    type of `a`."""
    by_file = {m.display: m for m in modules}
    _joins(by_file, prog, problems)
    _floor_divisions(by_file, prog, problems)
    _elvis(by_file, prog, problems)
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


def _floor_divisions(by_file: dict, prog: CheckedProgram, problems: Problems) -> None:
    """Python's `a // b`, read as `a / b` (syntax/floor_division.py): writing `/` is safe when
    both operands are Int (Flow's Int `/` is floor division, Python's `//`); a Decimal's `/` is
    exact, so it stays to review."""
    items = problems.items
    for k, d in enumerate(items):
        if d.code != "E012" or getattr(d.data, "kind", "") != "floor-division" or not d.fixes:
            continue
        m = by_file.get(d.span.file)
        if m is None or d.fixes[0].safe:
            continue
        for n in ast.walk(m.ast):
            if type(n) is not ast.Binary or n.op != "/":
                continue
            if n.left.span.end <= d.span.start and d.span.end <= n.right.span.start:
                if all(show(resolve(prog.types.get(x.id))) == "Int" for x in (n.left, n.right)):
                    items[k] = dataclasses.replace(d, fixes=(dataclasses.replace(d.fixes[0], safe=True),))
                break


def _elvis(by_file: dict, prog: CheckedProgram, problems: Problems) -> None:
    """Kotlin's `a ?: b`, read as `a.unwrap_or(b)` (syntax/habits_kotlin.py): writing that is
    safe when `a` is an Option or a Result (std's `unwrap_or` of either is the elvis's meaning),
    it holds no `?` (Kotlin's `a?.b` is no early return) and nothing else is reported inside
    the call. When `a` is neither, the checker's "no function `unwrap_or`" (E210) is this
    mistake again, and is not reported apart."""
    items = problems.items
    gone: set[int] = set()
    for k, d in enumerate(items):
        if d.code != "E012" or getattr(d.data, "kind", "") != "elvis" or not d.fixes or d.fixes[0].safe:
            continue
        m = by_file.get(d.span.file)
        call = None if m is None else _unwrap_or_at(m.ast, d.span)
        if call is None:
            continue
        sp = call.span
        inside = [
            x for x in items if x is not d and x.span.file == sp.file and sp.start <= x.span.start < sp.end
        ]
        gone.update(id(x) for x in inside if x.code == "E210" and getattr(x.data, "name", "") == "unwrap_or")
        recv = call.callee.target
        shown = show(resolve(prog.types.get(recv.id)))
        text = (m.ast.source or "")[recv.span.start : recv.span.end]
        if shown.startswith(("Option<", "Result<")) and "?" not in text and not inside:
            items[k] = dataclasses.replace(d, fixes=(dataclasses.replace(d.fixes[0], safe=True),))
    items[:] = [x for x in items if id(x) not in gone]


def _unwrap_or_at(module: ast.Module, sp):
    """The call `a.unwrap_or(b)` the habit at `sp` (the `?:`) was read as."""
    for n in ast.walk(module):
        if type(n) is ast.Call and type(n.callee) is ast.FieldAccess and n.callee.name == "unwrap_or":
            if n.callee.name_span.start == sp.start and n.span.file == sp.file:
                return n
    return None


def _joins(by_file: dict, prog: CheckedProgram, problems: Problems) -> None:
    """`f"{n} of {total}"` is read as its join, `n ++ " of " ++ total`, so each part is checked
    where it is written (joins.joined_tokens). A part that is not Text is reported for it
    (E201, or E209 when it comes first): one mistake with the f-string, whose message says a
    value that is not Text needs `.to_text()`, so those are folded into the E012. When every
    part is Text, Int, Decimal or Bool and nothing else is reported inside, the join writing
    `.to_text()` after each number and Bool is safe; else it stays to review."""
    items = problems.items
    found = {(x.span.file, x.span.start): x.data.found for x in items if x.code == "E201"}
    gone: set[int] = set()
    for k, d in enumerate(items):
        if d.code != "E012" or getattr(d.data, "kind", "") not in ("f-string", "template"):
            continue
        m = by_file.get(d.span.file)
        if m is None or not d.fixes or d.fixes[0].safe:
            continue
        sp = d.span
        inside = [
            x for x in items if x is not d and x.span.file == sp.file and sp.start <= x.span.start <= sp.end
        ]
        folded = [x for x in inside if x.code in ("E201", "E209")]
        gone.update(id(x) for x in folded)
        parts = _parts(m.ast, sp)
        ends = []
        for n in parts:
            shown = show(resolve(prog.types.get(n.id)))
            if shown == "?":  # reported: the type it was found of
                shown = found.get((sp.file, n.span.start), shown)
            if shown in ("Int", "Decimal", "Bool"):
                ends.append(n.span.end)
            elif shown != "Text":
                break
        else:
            if parts and len(folded) == len(inside):
                items[k] = dataclasses.replace(d, fixes=(_join_fix(m, d, ends),))
    items[:] = [x for x in items if id(x) not in gone]


def _join_fix(m, d: Diagnostic, ends: list[int]) -> Fix:
    """The join of the f-string or template literal `d` reports, `.to_text()` after each part
    ending at one of `ends`."""
    sp = d.span
    text = (m.ast.source or "")[sp.start : sp.end]
    for at in sorted(ends, reverse=True):
        text = text[: at - sp.start] + ".to_text()" + text[at - sp.start :]
    if d.data.kind == "template":
        written = joined_template(text[1:-1])
    else:
        written = _joined(text[len(d.data.habit) + 1 : -1], "{", "}")
    return Fix(f"write `{written}`", (Edit(sp, written),), True)


_PART_NODES = (ast.Name, ast.FieldAccess, ast.Call)


def _parts(module: ast.Module, sp) -> list:
    """The interpolated parts of the f-string at `sp`: the outermost names, field reads and
    calls inside it."""
    out: list = []
    for n in ast.walk(module):
        if type(n) not in _PART_NODES or not (sp.start <= n.span.start and n.span.end <= sp.end):
            continue
        if n.span.file == sp.file and not any(
            p.span.start <= n.span.start and n.span.end <= p.span.end for p in out
        ):
            out.append(n)
    return out
