"""Operators in a function body: an operator is a call of the function its operand type's home
module declares for it (or the generic one); a `+` on Text, `%` formatting and an Int on the
left of Decimal arithmetic get their answers here. Constructs: `binary`, `unary`."""

from __future__ import annotations

import re

from flow2py.check import codes, missing_try
from flow2py.check import suggest as sg
from flow2py.check.body_state import BodyState, expect, expr, found_notes, lookup, same_type, show
from flow2py.check.infer_calls import is_ground, solved
from flow2py.check.infer_ctx import LazyWhy, Why
from flow2py.check.infer_names import instantiate
from flow2py.check.typed import FnInfo, FnRef, TCon, TError, TNever
from flow2py.check.typeterms import TVar, resolve, unify
from flow2py.diagnostics import Edit, Fix
from flow2py.syntax import ast


def _right_why(st: BodyState, op: str, left) -> str:
    return f"the right operand of `{op}` (its left operand is `{show(st, left)}`)"


def _op_fn(st: BodyState, op: str, arity: int, t) -> FnInfo | None:
    t = resolve(t)
    if type(t) is TCon:
        home = t.decl.split("::")[0]
        fn = st.d.home_ops.get((home, op, arity))
        if fn is not None:
            return fn
    return st.d.generic_ops.get((op, arity))


#: Go's time units (`30 * time.Second`) and the suffix of Flow's Duration literal for each
_GO_UNITS = {
    "Nanosecond": "ns",
    "Microsecond": "us",
    "Millisecond": "ms",
    "Second": "s",
    "Minute": "m",
    "Hour": "h",
}


def _go_duration(st: BodyState, e: ast.Binary):
    """Go's `30 * time.Second` (or `time.Second * 30`), `time` not a name here: Flow writes the
    Duration literal `30s` (a safe fix, the value a Duration); None when it is not that."""
    if e.op != "*":
        return None
    for n, u in ((e.left, e.right), (e.right, e.left)):
        if (
            type(n) is ast.Literal
            and n.kind == "int"
            and n.value >= 0
            and type(u) is ast.FieldAccess
            and type(u.target) is ast.Name
            and u.name in _GO_UNITS
            and lookup(st, u.target.name) is None
            and u.target.name not in st.env.lm.aliases
            and u.target.name not in st.env.cm.fns
        ):
            text = f"{n.value}{_GO_UNITS[u.name]}"
            note = sg.Candidate(
                text, sg.VALUE, note=f"Flow writes a Duration as a literal: `{text}`", exact=True
            )
            fixes = [Fix(f"write `{text}`", (Edit(e.span, text),), True)] if e.span.end > e.span.start else []
            st.problems.report(
                codes.UnknownName(
                    u.target.span,
                    u.target.name,
                    "module",
                    suggestion=sg.Suggestion(u.target.name, (note,)).said(),
                ),
                fixes=fixes,
            )
            return st.d.lang_con("Duration")
    return None


def binary(st: BodyState, e: ast.Binary, expected):
    go = _go_duration(st, e)
    if go is not None:
        return go
    context = st.operand_context.pop(e.id, expected)
    lt = expr(st, e.left)
    rt = None
    r = resolve(lt)
    if type(r) is TVar:
        rt = expr(st, e.right)
        r = resolve(rt)
    if type(r) in (TError, TNever):
        if rt is None:
            expr(st, e.right)
        return TError()
    fn = _op_fn(st, e.op, 2, r)
    ok = missing_try.ok_of(st, e.left, r)  # `tracking ++ note`, the `?` forgotten on `tracking`
    if fn is None:
        fn = _op_fn(st, e.op, 2, ok) if ok is not None else None
    elif ok is not None and rt is None:
        # `i >= 0` of a `let i` of an Option: the Option has `>=` too, but the other operand is
        # the value in it, which is what the use wants (one mistake, at the `let`)
        rt = expr(st, e.right)
        if not (same_type(rt, ok) and not same_type(rt, r)):
            ok = None
    if fn is None:
        if type(r) is TVar:
            st.problems.report(codes.CannotInfer(e.span, "binary", e.op))
        else:
            if rt is None:
                rt = expr(st, e.right)
            fixes = _one_join(st, e, _concat_fix(st, e, r, rt, expected))
            formatting = _percent_formatting(st, e, r)
            if formatting is not None:
                fixes = formatting
            st.problems.report(
                codes.NoOperator(e.span, e.op, show(st, r), formatting=formatting is not None), fixes=fixes
            )
            # written as `++` it is of the operands' type: an enclosing `+` is then reported too,
            # in the same pass, rather than once this one is fixed; `%` formatting gives Text
            return r if fixes or formatting is not None else TError()
        if rt is None:
            expr(st, e.right)
        return TError()
    st.refs[e.id] = FnRef(fn.decl)
    params, result, targs = instantiate(st, fn, e.span, e.op)
    if targs:
        st.type_args[e.id] = targs
    if ok is not None:  # the operand is taken as the value in it (a generic `>=`: of that type)
        unify(params[0], ok)
    expect(st, lt, params[0], e.left, Why(f"the left operand of `{e.op}`"))
    # where the left operand's type is declared (a field, a function's result): the other place
    left = found_notes(st, e.left)[:1]
    at, note = (left[0].span, left[0].message) if left else (None, None)
    if is_ground(lt):  # its text cannot change before a mismatch shows it
        why1 = LazyWhy(_right_why, (st, e.op, lt), at, note)
    else:
        why1 = Why(_right_why(st, e.op, lt), at, note)
    mark = len(st.problems.items)
    if type(e.right) is ast.Binary and resolve(result) == resolve(params[0]) == resolve(params[1]):
        st.operand_context[e.right.id] = context
    if rt is None:
        expr(st, e.right, params[1], why1)
    else:
        expect(st, rt, params[1], e.right, why1)
    st.operand_context.pop(e.right.id, None)
    _int_left_of_decimal(st, e, lt, mark, context)
    new = st.problems.items[mark:]
    if new and resolve(result) == resolve(params[0]) and not _settled_by_literal(e, new):
        # `Int * Decimal`: which type was meant is not known, so neither is the result's (a use
        # of it is not reported again); a comparison is Bool all the same. Where the operand's
        # right operand is a literal with a safe fix (`price * 85`: `85.0`), the left operand's
        # type is the one meant, and what is around is checked with it (`... / 100`: the `100`)
        return TError()
    return result


def _settled_by_literal(e: ast.Binary, new: list) -> bool:
    """Whether the right operand is a literal whose one mismatch has a safe fix (`85` -> `85.0`
    beside a Decimal): the left operand's type is then the one meant."""
    return (
        type(e.right) is ast.Literal
        and len(new) == 1
        and new[0].span == e.right.span
        and bool(new[0].fixes)
        and new[0].fixes[0].safe
    )


def _int_left_of_decimal(st: BodyState, e: ast.Binary, lt, mark: int, expected=None) -> None:
    """`2 * price`, `count * price`: the Int on the left of Decimal arithmetic is what needs the
    conversion, as it would on the right (`2.0`, `decimal.from_int(count)`): the mismatch the
    right operand reported is reported at the left one instead, with that fix. Not where the
    context wants an Int (`-> Int = years * 4000.0`): the Decimal on the right is then the
    operand out of place, and its mismatch stays (`4000.0` as `4000`)."""
    new = st.problems.items[mark:]
    if len(new) != 1 or new[0].code != "E201" or new[0].span != e.right.span:
        return
    dec = st.d.lang_con("Decimal")
    if not st.d.is_lang(resolve(lt), "Int") or type(dec) is TError:
        return
    # a type variable solved on the way (fold's `A`, Int by its `0`) is no written context: the
    # `0` may be the mistake (infer_calls' fold start), so the Int on the left is reported
    if expected is not None and type(expected) is not TVar and st.d.is_lang(resolve(expected), "Int"):
        return
    if (new[0].data.expected, new[0].data.found) != (show(st, lt), show(st, dec)):
        return
    del st.problems.items[mark:]
    expect(st, lt, dec, e.left, Why(f"the left operand of `{e.op}` (its right operand is `Decimal`)"))


def _concat_fix(st: BodyState, e: ast.Binary, lt, rt, expected) -> list:
    """`+` on two operands of one type that has `++` (Text, List, Bytes: semantics.md) is
    concatenation written the way other languages write it: `++` is safe when the operands'
    type is known, the same on both sides, and what the context expects."""
    if e.op != "+" or _op_fn(st, "++", 2, lt) is None:
        return []
    lt, rt = solved(lt), solved(rt)
    if not (is_ground(lt) and is_ground(rt) and lt == rt):
        return []
    if expected is not None:
        want = resolve(expected)
        if type(want) is not TVar and not (is_ground(solved(want)) and solved(want) == lt):
            return []
    source = st.env.lm.ast.source or ""
    a, b = e.left.span.end, e.right.span.start
    gap = source[a:b]
    if not (0 < a < b <= len(source)) or gap.count("+") != 1 or "/" in gap:
        return []
    i = a + gap.index("+")
    line = source.count("\n", 0, i) + 1
    col = i - (source.rfind("\n", 0, i) + 1) + 1
    sp = ast.Span(e.span.file, line, col, line, col + 1, i, i + 1)
    return [Fix(f"concatenate with `++`: `{show(st, lt)}` has no `+`", (Edit(sp, "++"),), True)]


def _one_join(st: BodyState, e: ast.Binary, fixes: list) -> list:
    """`"a" + x + "b"` is one join written with `+`: the `+` of an operand that was reported
    (E209 with its `++` fix) is not reported again on its own, its edit joins this one's fix."""
    if not fixes:
        return fixes
    edits = list(fixes[0].edits)
    items = st.problems.items
    for side in (e.left, e.right):
        if type(side) is not ast.Binary or side.op != "+":
            continue
        for k in range(len(items) - 1, -1, -1):
            d = items[k]
            if d.code == "E209" and d.span == side.span and d.fixes and d.fixes[0].safe:
                edits.extend(d.fixes[0].edits)
                del items[k]
                break
    if len(edits) == len(fixes[0].edits):
        return fixes
    edits.sort(key=lambda x: x.span.start)
    return [Fix(fixes[0].message, tuple(edits), True)]


_PLACEHOLDER = re.compile(r"%[sdi%]|%")


def _percent_formatting(st: BodyState, e: ast.Binary, lt) -> list | None:
    """`"# %s (%d)" % (title, n)`, Python's text formatting on a Text literal: None when it is
    not that; else the fix joining the pieces with `++` (`"# " ++ title ++ " (" ++ n.to_text() ++
    ")"`), safe when every placeholder is `%s`, `%d` or `%i`, as many as the values, each value
    Text or an Int, Decimal or Bool (`.to_text()`), and no fix when one is not."""
    if e.op != "%" or not st.d.is_lang(lt, "Text") or type(e.left) is not ast.Literal:
        return None
    src = st.env.lm.ast.source or ""
    lit, sp = src[e.left.span.start : e.left.span.end], e.span
    if len(lit) < 2 or lit[0] != '"' or lit[-1] != '"' or "%" not in lit or sp.end <= sp.start:
        return None
    values = e.right.items if type(e.right) is ast.TupleLiteral else [e.right]
    body = lit[1:-1]
    holes = [m for m in _PLACEHOLDER.finditer(body) if m.group() != "%%"]
    if len(holes) != len(values) or any(m.group() == "%" for m in holes):
        return []
    texts = []
    for v in values:
        kind = next(
            (k for k in ("Text", "Int", "Decimal", "Bool") if st.d.is_lang(resolve(st.types.get(v.id)), k)),
            None,
        )
        text = src[v.span.start : v.span.end]
        atomic = isinstance(v, (ast.Name, ast.FieldAccess, ast.Call, ast.Literal))
        if kind is None or v.span.end <= v.span.start:
            return []
        text = text if atomic else f"({text})"
        texts.append(text if kind == "Text" else f"{text}.to_text()")
    parts, at = [], 0
    for m, text in zip(holes, texts):
        piece = body[at : m.start()].replace("%%", "%")
        parts += [f'"{piece}"'] * bool(piece) + [text]
        at = m.end()
    rest = body[at:].replace("%%", "%")
    parts += [f'"{rest}"'] * bool(rest)
    joined = " ++ ".join(parts)
    before, after = src[: sp.start].rstrip(), src[sp.end :].lstrip()
    loose = before.endswith(("*", "/", "%", "-", "!")) or (before.endswith("+") and not before.endswith("++"))
    loose = loose or after[:1] in ("*", "/", "%", "-", ".") or (after[:1] == "+" and after[:2] != "++")
    written = f"({joined})" if loose and len(parts) > 1 else joined
    return [Fix(f"join with `++`: `{written}`", (Edit(sp, written),), True)]


def unary(st: BodyState, e: ast.Unary, expected):
    t = expr(st, e.operand)
    r = resolve(t)
    if type(r) in (TError, TNever):
        return TError()
    fn = _op_fn(st, e.op, 1, r)
    if fn is None:
        if type(r) is TVar:
            st.problems.report(codes.CannotInfer(e.span, "unary", e.op))
        else:
            st.problems.report(codes.NoOperator(e.span, e.op, show(st, r), unary=True))
        return TError()
    st.refs[e.id] = FnRef(fn.decl)
    params, result, targs = instantiate(st, fn, e.span)
    if targs:
        st.type_args[e.id] = targs
    expect(st, t, params[0], e.operand, Why(f"the operand of `{e.op}`"))
    return result
