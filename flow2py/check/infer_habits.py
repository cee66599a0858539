"""Calls written the way another language writes them, answered in Flow where the call is
checked (check/infer_calls.py calls these first): Kotlin's `listOf(a, b)` (the list), a record
type called like a function (its literal), `.clone()` (the value itself), `a.equals(b)` (`==`);
Java's getters (`t.getAssignee()`: the field); and where E210 points for a method chain written
one call a line."""

from __future__ import annotations

import re

from flow2py.check import codes
from flow2py.check import suggest as sg
from flow2py.check.body_state import BodyState, expr, mark_used, show
from flow2py.check.infer_ctx import Why
from flow2py.check.infer_names import declared_note, fresh_tcon
from flow2py.check.typed import TCon, TError, TNever
from flow2py.check.typeterms import TVar, subst
from flow2py.diagnostics import Edit, Fix
from flow2py.span import Span
from flow2py.syntax import ast


#: other languages' functions building a list of their arguments (Kotlin, Java's Arrays.asList)
_LIST_OF = frozenset({"listOf", "mutableListOf", "arrayOf", "arrayListOf", "listof", "list_of", "asList"})


def list_of(st: BodyState, e: ast.Call, expected):
    """Kotlin's `listOf(a, b)`: Flow writes the list `[a, b]` (a safe fix), and the values are
    checked as that list's items."""
    name = e.callee.name
    if name not in _LIST_OF or name in st.env.cm.fns or name in st.env.lm.aliases:
        return None
    src = st.env.lm.ast.source or ""
    open_at = src.find("(", e.callee.span.end)
    fixes = []
    if 0 <= open_at < e.span.end and src[e.span.end - 1 : e.span.end] == ")":
        text = "[" + src[open_at + 1 : e.span.end - 1] + "]"
        fixes = [
            Fix(
                f"write the list `{text}`" if len(text) <= 60 else "write the list `[...]`",
                (Edit(e.span, text),),
                True,
            )
        ]
    note = sg.Candidate("[...]", sg.VALUE, note="Flow writes a list as `[a, b, c]`", exact=True)
    st.problems.report(
        codes.UnknownName(e.callee.span, name, "name", suggestion=sg.Suggestion(name, (note,)).said()),
        fixes=fixes,
    )
    return expr(st, ast.ListLiteral(list(e.args), span=e.span), expected)


def record_called(st: BodyState, e: ast.Call):
    """`Stats(count, mean)` of a record type: its fields are named, so it is built with a record
    literal. The fix writes one with the values in the order of the fields: safe when each value
    is a name that is its field's (`Stats { count, mean }`: no choice), else to review."""
    info = st.env.cm.types.get(e.callee.name)
    if info is None or info.kind != "record":
        return None
    mark_used(st, info.decl)
    names = tuple(f.name for f in info.fields)
    for a in e.args:
        expr(st, a)
    src = st.env.lm.ast.source or ""
    fixes = []
    if len(e.args) == len(names) and names and e.span.end > e.span.start:
        parts = []
        for f, a in zip(names, e.args):
            text = src[a.span.start : a.span.end]
            parts.append(f if text == f else f"{f}: {text}")
        safe = all(type(a) is ast.Name and a.name == f for f, a in zip(names, e.args))
        literal = f"{e.callee.name} {{ {', '.join(parts)} }}"
        fixes = [Fix(f"write `{literal}`", (Edit(e.span, literal),), safe)]
    st.problems.report(
        codes.WrongArity(e.span, "record-call", info.name, fields=names),
        related=declared_note(info),
        fixes=fixes,
    )
    tcon, _ = fresh_tcon(info)
    return tcon


_COPY_METHODS = frozenset({"clone", "copy", "to_owned", "deepcopy", "dup"})
#: an iterator taken of a collection, or a list made of one (Rust's `.iter()`, `.collect()`,
#: Java's `.stream()`, `.toList()`, Kotlin's `.asSequence()`): Flow's functions take the list
_ITER_METHODS = frozenset({"iter", "into_iter", "iter_mut", "stream", "asSequence", "values_iter"})
_LIST_METHODS = frozenset({"collect", "toList", "ToList", "to_vec", "toArray", "ToArray", "collect_vec"})


def _collection(st: BodyState, tt, name: str) -> bool:
    """Whether `tt` is what `.name()` of `_ITER_METHODS` (a List, Set or Dict) or of
    `_LIST_METHODS` (a List) is the value itself for."""
    if name in _LIST_METHODS:
        return st.d.is_lang(tt, "List")
    return any(st.d.is_lang(tt, k) for k in ("List", "Set", "Dict"))


def copy_call(st: BodyState, e: ast.Call, tt) -> bool:
    """`invoice.clone()` (Rust, Java, Python's `.copy()`): Flow's values never change, so the
    value is its own copy; the safe fix drops the call, which is then the receiver's value. So
    is Rust's `xs.iter()` and `.collect()` (Java's `.stream()`, `.toList()`) of a collection:
    Flow's list functions take the list itself."""
    callee = e.callee
    if e.args or type(tt) in (TError, TNever, TVar):
        return False
    iterator = callee.name in _ITER_METHODS or callee.name in _LIST_METHODS
    if not (callee.name in _COPY_METHODS or (iterator and _collection(st, tt, callee.name))):
        return False
    home = tt.decl.split("::")[0] if type(tt) is TCon else None
    if _declares(st, home, callee.name):
        return False
    end, sp = callee.target.span, e.span
    fixes = []
    if sp.end > end.end:
        at = Span(sp.file, end.end_line, end.end_column, sp.end_line, sp.end_column, end.end, sp.end)
        fixes = [Fix(f"remove `.{callee.name}()`", (Edit(at, ""),), True)]
    st.problems.report(
        codes.UnknownMethod(
            method_span(callee), callee.name, show(st, tt), home, copy=not iterator, iterator=iterator
        ),
        fixes=fixes,
    )
    return True


_EQUALS_METHODS = frozenset({"equals", "Equals", "eq", "equal", "isEqual", "isEqualTo", "__eq__"})
# the operators that bind tighter than `==` (or chain with it) beside the call: the fix's `a == b`
# is then put in parentheses (`!a.equals(b)` is `!(a == b)`, not `!a == b`)
_TIGHTER = re.compile(r"(?:[-+*/%<>!.]|==|!=|\+\+)$")
_TIGHTER_AFTER = re.compile(r"^(?:[-+*/%<>.?]|==|!=)")


def equals_call(st: BodyState, e: ast.Call, tt) -> bool:
    """`a.equals(b)` (Java, C#, Kotlin; Python's `__eq__`): Flow compares values with `==`, so
    where the receiver's type has `==` and no function of that name, the safe fix writes `a == b`
    (in parentheses where an operator beside it binds tighter); `b` is checked against `a`'s type."""
    callee = e.callee
    if callee.name not in _EQUALS_METHODS or len(e.args) != 1 or type(tt) in (TError, TNever, TVar):
        return False
    home = tt.decl.split("::")[0] if type(tt) is TCon else None
    if _declares(st, home, callee.name):
        return False
    if st.d.home_ops.get((home, "==", 2)) is None and st.d.generic_ops.get(("==", 2)) is None:
        return False
    mark = len(st.problems.items)
    expr(st, e.args[0], tt, Why(f"`.{callee.name}` compares it with the receiver, of type `{show(st, tt)}`"))
    src = st.env.lm.ast.source or ""
    left, right = callee.target.span, e.args[0].span
    fixes = []
    if e.span.end > e.span.start and left.end > left.start and right.end > right.start:
        text = f"{src[left.start : left.end]} == {src[right.start : right.end]}"
        # the operators beside it on its line (an editor checks a declaration apart from the
        # text around it: flow2py.lsp.incremental)
        before = src[src.rfind("\n", 0, e.span.start) + 1 : e.span.start].rstrip()
        after = src[e.span.end : (src.find("\n", e.span.end) + 1 or len(src) + 1) - 1].lstrip()
        if _TIGHTER.search(before) or _TIGHTER_AFTER.match(after):
            text = f"({text})"
        # safe unless the compared value is itself wrong: then the comparison meant is a choice
        fixes = [Fix(f"write `{text}`", (Edit(e.span, text),), len(st.problems.items) == mark)]
    st.problems.report(
        codes.UnknownMethod(method_span(callee), callee.name, show(st, tt), home, equals=True), fixes=fixes
    )
    return True


def method_span(callee: ast.FieldAccess) -> Span:
    """Where E210 points for `x.name(...)`: the whole `x.name`, or only `name` when `x` starts on
    an earlier line (a chain written one call a line: the line of the method, as rustc points)."""
    at = callee.name_span
    return at if at.line and at.line != callee.span.line else callee.span


_GETTER = re.compile(r"(?:get|is|Get)([A-Z][A-Za-z0-9]*)$")


def _declares(st: BodyState, home: str | None, name: str) -> bool:
    """Whether `name` is a function of the module `home` or a generic std one: then `x.name()`
    calls it, and no other language's habit is meant."""
    menv = st.d.envs.get(home) if home else None
    return (menv is not None and name in menv.cm.fns) or name in st.d.generic_fns


def getter_call(st: BodyState, e: ast.Call, tt):
    """Java's getter `t.getAssignee()` (`isActive()`) of a record with the field `assignee`
    (`active`; `getDueDate` is `due_date`): Flow reads the field, `t.assignee`, a safe fix; the
    value is the field's. None when it is not that."""
    callee = e.callee
    m = _GETTER.match(callee.name)
    info = st.d.type_decls.get(tt.decl) if type(tt) is TCon and m and not e.args else None
    if info is None or info.kind != "record":
        return None
    if _declares(st, info.module, callee.name):
        return None  # a function of that name is what it calls
    want = sg.snake(m.group(1)[0].lower() + m.group(1)[1:])
    f = next((f for f in info.fields if f.name == want), None)
    if f is None or not (f.pub or info.module == st.env.key):
        return None
    at = callee.name_span
    fixes = []
    if at.line and e.span.end > at.start:
        sp = Span(at.file, at.line, at.column, e.span.end_line, e.span.end_column, at.start, e.span.end)
        fixes = [Fix(f"read the field: `.{f.name}`", (Edit(sp, f.name),), True)]
    st.problems.report(
        codes.UnknownMethod(method_span(callee), callee.name, show(st, tt), info.module, getter=f.name),
        related=declared_note(info),
        fixes=fixes,
    )
    return subst(f.type, {(info.decl, p): a for p, a in zip(info.type_params, tt.args)})
