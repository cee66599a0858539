"""Expressions other than calls and lambdas: names, literals, field access, tuple/list/dict and
record literals (evaluated in source order, passed in declared order), unary and binary
operators (Python's own operator where it means the same, else the @lang function), `&&`/`||`,
and `?`. Control forms used as values go through a temporary's sink. One function per construct,
each taking the walk's state (lower_base.Body) first; lower.py dispatches to them."""

from __future__ import annotations

from flow2py.check import typed as P
from flow2py.codegen import py
from flow2py.codegen.lower_base import (
    RETURN,
    Body,
    Sink,
    _atomic,
    error,
    expr,
    fun_effect,
    hoist,
    lookup,
    mark,
    seq,
    seq_parts,
    to_sink,
    type_args_of,
    yield_,
)
from flow2py.codegen.lower_calls import apply
from flow2py.syntax import ast as A

#: @lang operator functions whose meaning is exactly Python's operator on the runtime values
PY_BINOPS = {
    "int.add": "+",
    "int.sub": "-",
    "int.mul": "*",
    "text.concat": "+",
    "data.eq": "==",
    "data.ne": "!=",
    "data.lt": "<",
    "data.le": "<=",
    "data.gt": ">",
    "data.ge": ">=",
}
PY_UNOPS = {"int.neg": "-", "bool.not": "not"}
SHORT_CIRCUIT = {"&&": "and", "||": "or"}


def via_sink(b: Body, e: A.Expr) -> tuple[list, py.Expr]:
    """A control form (block, `if`, `match`) used as a value: lowered into a temporary."""
    t = b.namer.temp()
    return to_sink(b, e, Sink("assign", t)), py.name(t)


def return_value(b: Body, e: A.Return):
    if e.value is None:
        return [py.return_(None, mark(b, e))], py.const(None)
    return to_sink(b, e.value, RETURN), py.const(None)


def return_into(b: Body, e: A.Return, sink: Sink) -> list:
    """`return` leaves: what it would hand to a sink is never there."""
    return return_value(b, e)[0]


def literal_value(kind: str, value) -> py.Expr:
    if kind == "decimal":
        return py.call(py.dotted("rt.Decimal"), [py.string(str(value))])
    if kind == "duration":
        return py.call(py.dotted("rt.Duration"), [py.integer(value)])
    return py.const(value)


def literal(b: Body, e: A.Literal):
    return [], literal_value(e.kind, e.value)


def name(b: Body, e: A.Name):
    ref = b.prog.refs.get(e.id)
    if isinstance(ref, P.LocalRef):
        if ref.binder not in b.locals:
            raise error(e, f"local {e.name} is not bound")
        return [], py.name(b.locals[ref.binder])
    if ref is None:
        return [], py.name(lookup(b, e.name))
    return [], global_value(b, e, ref)


def global_value(b: Body, e: A.Expr, ref) -> py.Expr:
    if isinstance(ref, P.FnRef):
        t = b.prog.types.get(e.id)
        variant = fun_effect(b, t) if isinstance(t, P.TFun) else "pure"
        f = b.mg.fn_value(ref.decl, variant)
        if ref.decl in b.mg.names.typed:  # the value carries its type arguments
            return py.call(py.dotted("rt.with_type_args"), [f, type_args_of(b, e)])
        return f
    if isinstance(ref, P.CtorRef):
        return b.mg.ctor_value(ref.type_decl, ref.ctor)
    raise error(e, f"{type(ref).__name__} used as a value")


def field_access(b: Body, e: A.FieldAccess):
    ref = b.prog.refs.get(e.id)
    if isinstance(ref, (P.FnRef, P.CtorRef)):
        return [], global_value(b, e, ref)
    s, x = expr(b, e.target)
    return s, py.attr(x, b.mg.field_name(e.name))


def tuple_literal(b: Body, e: A.TupleLiteral):
    s, xs = seq(b, e.items)
    return s, py.tuple_(xs)


def list_literal(b: Body, e: A.ListLiteral):
    if not e.items:
        return [], py.dotted("rt.EMPTY_LIST")
    s, xs = seq(b, e.items)
    return s, py.call(py.dotted("rt.list_of"), [py.tuple_(xs)])


def dict_literal(b: Body, e: A.DictLiteral):
    if not e.entries:
        return [], py.dotted("rt.EMPTY_DICT")
    flat = [x for kv in e.entries for x in kv]
    s, xs = seq(b, flat)
    pairs = [py.tuple_([xs[i], xs[i + 1]]) for i in range(0, len(xs), 2)]
    return s, py.call(py.dotted("rt.dict_of"), [py.tuple_(pairs)])


def record_literal(b: Body, e: A.RecordLiteral):
    ref = b.prog.refs.get(e.id)
    if not isinstance(ref, P.CtorRef):
        raise error(e, "record literal is not resolved")
    order = b.mg.ctor_fields(ref.type_decl, ref.ctor)
    nodes: list = []
    parts = []
    if e.base is not None:
        nodes.append(e.base)
        parts.append(expr(b, e.base))
    for fi in e.fields:
        if fi.value is None:
            r = b.prog.refs.get(fi.id)
            x = py.name(b.locals[r.binder]) if isinstance(r, P.LocalRef) else py.name(lookup(b, fi.name))
            nodes.append(fi)
            parts.append(([], x))
        else:
            nodes.append(fi.value)
            parts.append(expr(b, fi.value))
    given = [fi.name for fi in e.fields]
    reordered = [n for n in order if n in given] != given
    if reordered:
        # fields are evaluated in source order, passed in declared order
        parts = [(s, x) for (s, x) in parts]
        stmts: list = []
        xs = []
        for node, (s, x) in zip(nodes, parts):
            stmts += s
            xs.append(x if _atomic(x) else hoist(b, x, mark(b, node), stmts))
    else:
        stmts, xs = seq_parts(b, parts, nodes)
    base = None
    if e.base is not None:
        base = xs.pop(0)
        if not _atomic(base):
            base = hoist(b, base, mark(b, e.base), stmts)
    values = dict(zip(given, xs))
    args = [values[f] if f in values else py.attr(base, b.mg.field_name(f)) for f in order]
    return stmts, py.call(b.mg.ctor_class(ref.type_decl, ref.ctor), args)


def unary(b: Body, e: A.Unary):
    s, x = expr(b, e.operand)
    ref = b.prog.refs.get(e.id)
    info = b.prog.fn_decls.get(ref.decl) if isinstance(ref, P.FnRef) else None
    if info is None:
        return s, py.unop("not" if e.op == "!" else "-", x)
    if info.lang in PY_UNOPS:
        return s, py.unop(PY_UNOPS[info.lang], x)
    return apply(b, e, info, [x], s, tail=False)


def binary(b: Body, e: A.Binary):
    ref = b.prog.refs.get(e.id)
    info = b.prog.fn_decls.get(ref.decl) if isinstance(ref, P.FnRef) else None
    if e.op in SHORT_CIRCUIT:
        return short_circuit(b, e)
    s, (left, right) = seq(b, [e.left, e.right])
    if e.op == "==" and e.id in test_tails(b.prog):  # a failing test shows both sides (testing.md)
        return s, py.call(py.dotted("rt.test_eq"), [left, right])
    if (info is None or info.lang in PY_BINOPS) and not unit_ordering(b, e, info):
        op = PY_BINOPS[info.lang] if info is not None else e.op.replace("++", "+")
        return s, py.binop(op, left, right)
    return apply(b, e, info, [left, right], s, tail=False)


def test_tails(prog: P.CheckedProgram) -> frozenset:
    """Ids of the `==` expressions that are the last expression of a `@test` body (made once)."""
    got = prog.__dict__.get("_test_tails")
    if got is None:
        ids = set()
        for i in prog.fn_decls.values():
            e = i.node.body if i.is_test and i.node is not None else None
            while isinstance(e, A.Block) and e.stmts and isinstance(e.stmts[-1], A.ExprStmt):
                e = e.stmts[-1].expr
            if isinstance(e, A.Binary) and e.op == "==":
                ids.add(e.id)
        got = prog.__dict__["_test_tails"] = frozenset(ids)
    return got


def unit_ordering(b: Body, e: A.Binary, info) -> bool:
    """Unit is Python's None, which has no `<`: order it through rt.lang (() <= () holds)."""
    if info is None or info.lang not in ("data.lt", "data.le", "data.gt", "data.ge"):
        return False
    t = b.prog.types.get(e.left.id)
    ti = b.prog.type_decls.get(t.decl) if isinstance(t, P.TCon) else None
    return ti is not None and ti.lang == "Unit"


def short_circuit(b: Body, e: A.Binary):
    op = SHORT_CIRCUIT[e.op]
    s, left = expr(b, e.left)
    rs, right = expr(b, e.right)
    if not rs:
        return s, py.binop(op, left, right)
    # the right operand has statements: they run only when the left does not decide
    t = b.namer.temp()
    s.append(py.assign(py.name(t), left, mark(b, e.left)))
    test = py.name(t) if op == "and" else py.not_(py.name(t))
    s.append(py.if_(test, rs + [py.assign(py.name(t), right, mark(b, e.right))], None, mark(b, e)))
    return s, py.name(t)


def try_(b: Body, e: A.Try):
    s, x = expr(b, e.operand)
    x = hoist(b, x, mark(b, e), s)
    err_payload = py.attr(x, "_0")
    if e.convert is None:
        leave = [py.return_(x, mark(b, e))]
    else:
        cs, f = expr(b, e.convert)
        converted = py.call(f, [err_payload])
        if fun_effect(b, b.prog.types.get(e.convert.id)) == "tool":
            t = b.namer.temp()
            cs.append(py.assign(py.name(t), yield_(b, converted), mark(b, e.convert)))
            converted = py.name(t)
        leave = cs + [py.return_(py.call(py.dotted("rt.Err"), [converted]), mark(b, e))]
    s.append(py.if_(py.isinstance_(x, py.dotted("rt.Err")), leave, None, mark(b, e)))
    return s, py.attr(x, "_0")
