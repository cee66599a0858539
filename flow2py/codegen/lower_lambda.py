"""Lambdas: a nested `def` (captured values bound as keyword defaults when the enclosing
function loops), a pure lambda that only forwards its parameters replaced by the function it
calls, and a task body that is one Tool call lowered to an `rt.ParkCall` request (abi.md,
"Parkable tasks"). Functions of the walk's state (lower_base.Body)."""

from __future__ import annotations

from dataclasses import dataclass

from flow2py.check import typed as P
from flow2py.codegen import py
from flow2py.codegen.lower_base import (
    RETURN,
    Body,
    DefCtx,
    bind,
    eff,
    expr,
    lookup,
    mark,
    seq_parts,
    to_sink,
    type_args_of,
    yield_,
)
from flow2py.codegen.lower_calls import LANG_REQUESTS, callee_fn
from flow2py.codegen.tails import calls_outside_lambdas, tail_calls_of
from flow2py.syntax import ast as A


@dataclass(frozen=True, slots=True)
class ParkShape:
    """A task body that is one Tool call, alone or as one value of a constructor."""

    call: A.Call  # the Tool call
    info: P.FnInfo  # the Tool
    args: list  # the call's argument nodes
    ctor: P.CtorRef | None  # the constructor its result is a value of, if any
    fields: list  # the constructor's values: (declared position, node), in source order
    order: list[int]  # the constructor's declared positions
    k: int  # the index in `fields` of the call

    def before(self) -> list:
        return [n for _, n in self.fields[: self.k]] if self.ctor is not None else []

    def after(self) -> list:
        return [n for _, n in self.fields[self.k + 1 :]] if self.ctor is not None else []


def _value_node(n):
    """A constructor's value: the node itself, or a record field's value (None: shorthand)."""
    return n.value if isinstance(n, A.FieldInit) else n


def lambda_(b: Body, e: A.Lambda, hint: str | None = None, binder: int | None = None):
    generator = eff(b, e.id) == "tool"
    if binder is None and not generator:
        fwd = forwarded(b, e)
        if fwd is not None:
            return [], fwd
    fname = b.namer.fresh(hint) if hint is not None else b.namer.generated(f"_flow{e.span.line}")
    if binder is not None:
        b.locals[binder] = fname
        b.scopes[-1][hint] = fname
    kwonly = []
    if b.ctx.loop is not None:
        # the enclosing function loops (tail calls), so its variables are rebound from round
        # to round; bind the captured values now, as keyword defaults
        for binder_id in b.prog.captures.get(e.id, []):
            if binder_id in b.locals:
                n = b.locals[binder_id]
                kwonly.append(py.param(n, py.name(n)))
        if b.targs is not None:  # a self call may pass other type arguments
            kwonly.append(py.param(b.targs[1], py.name(b.targs[1])))
    bouncing = False
    if not generator:
        through_value, callees = tail_calls_of(b.prog, e.body)
        bouncing = through_value or bool(callees & b.mg.names.bouncing)
    saved_ctx, saved_scopes = b.ctx, b.scopes
    b.ctx = DefCtx(generator=generator, bouncing=bouncing, request_body=generator and requesting(b, e))
    b.scopes = saved_scopes + [{}]
    try:
        params = [py.param(bind(b, p.id, p.name)) for p in e.params]
        body = parked(b, e.body) if generator else None
        if body is None:
            body = to_sink(b, e.body, RETURN)
    finally:
        b.ctx, b.scopes = saved_ctx, saved_scopes
    d = py.def_(fname, params, body, mark(b, e), kwonly=kwonly)
    if bouncing:  # its rt.Tail returns run in rt.bouncing's loop (codegen.md)
        wrap = py.assign(py.name(fname), py.call(py.dotted("rt.bouncing"), [py.name(fname)]), mark(b, e))
        return [d, wrap], py.name(fname)
    return [d], py.name(fname)


def requesting(b: Body, e: A.Lambda) -> bool:
    """Whether the whole body of an effectful lambda is one call of a task operation (`spawn`,
    `await`, `stop`, `first`: `flow(f) = task.spawn(f)`, as std's `task.all` has two): it is
    emitted as a plain function returning the request, `return rt.Spawn(f)`, when its arguments
    need no statements (lower_calls.apply), instead of a generator yielding it (one generator
    frame, two sends and a StopIteration less a task operation: abi.md, "Requests")."""
    body = e.body
    while isinstance(body, A.Block) and len(body.stmts) == 1 and isinstance(body.stmts[0], A.ExprStmt):
        body = body.stmts[0].expr
    if not isinstance(body, A.Call):
        return False
    info, _ = callee_fn(b, body)
    return info is not None and info.lang in LANG_REQUESTS and (info.node is None or info.node.body is None)


def forwarded(b: Body, e: A.Lambda) -> py.Expr | None:
    """The function itself for a pure lambda that only passes its parameters on, in order,
    to a pure top-level or @lang function: `flow(i) = int.to_text(i)` is `rt.lang.int_to_text`
    (one Python call an element instead of two). None for any other lambda."""
    body = e.body
    while isinstance(body, A.Block) and len(body.stmts) == 1 and isinstance(body.stmts[0], A.ExprStmt):
        body = body.stmts[0].expr
    if not isinstance(body, A.Call) or eff(b, body.id) != "pure":
        return None
    info, receiver = callee_fn(b, body)
    if (
        info is None
        or info.is_tool
        or info.effect == "tool"
        or info.lang in LANG_REQUESTS
        or info.decl in b.mg.names.typed
    ):
        return None
    args = ([receiver] if receiver is not None else []) + list(body.args)
    if len(args) != len(e.params) or len(info.params) != len(args):
        return None
    for a, p in zip(args, e.params):
        ref = b.prog.refs.get(a.id)
        if not (isinstance(a, A.Name) and isinstance(ref, P.LocalRef) and ref.binder == p.id):
            return None
    if any(isinstance(t, P.TFun) for _, t in info.params):
        return None  # a function argument may need `rt.lift`: keep the lambda
    return b.mg.fn_value(info.decl, "pure")


# ---- parkable task bodies (abi.md, "Parkable tasks") -----------------------------------------


def tool_call_of(b: Body, e: A.Expr):
    """-> (FnInfo, argument nodes) when `e` is a call of a Tool, else None."""
    if not isinstance(e, A.Call):
        return None
    info, receiver = callee_fn(b, e)
    if info is None or not info.is_tool:
        return None
    return info, ([receiver] if receiver is not None else []) + list(e.args)


def effect_free(b: Body, e: A.Expr) -> bool:
    """No call in `e` (outside lambdas) reaches a Tool or a task operation: evaluating it
    before the Tool call of a parkable body adds no second effect."""
    return all(eff(b, c.id) != "tool" for c in calls_outside_lambdas(e))


def parked(b: Body, body: A.Expr) -> list | None:
    """The statements of a lambda whose whole body is one Tool call, optionally the argument
    of one constructor (enum constructor or record literal) that may also carry data:
    `return (yield rt.ParkCall(SPEC, args, Ctor, data, at=k))`. None for any other body
    (the lambda is then lowered as usual; only checkpoints are affected)."""
    while isinstance(body, A.Block) and len(body.stmts) == 1 and isinstance(body.stmts[0], A.ExprStmt):
        body = body.stmts[0].expr
    shape = park_shape(b, body)
    if shape is None or not parkable(b, shape):
        return None
    return park_request(b, shape, mark(b, body))


def park_shape(b: Body, body: A.Expr) -> ParkShape | None:
    """The Tool call of a body that is one, alone or as one value of a constructor."""
    direct = tool_call_of(b, body)
    if direct is not None:
        return ParkShape(body, direct[0], direct[1], None, [], [], 0)
    if isinstance(body, A.Call) and isinstance(b.prog.refs.get(body.callee.id), P.CtorRef):
        ctor = b.prog.refs[body.callee.id]
        fields = list(enumerate(body.args))  # (declared position, node)
        order = list(range(len(body.args)))
    elif (
        isinstance(body, A.RecordLiteral)
        and body.base is None
        and isinstance(b.prog.refs.get(body.id), P.CtorRef)
    ):
        ctor = b.prog.refs[body.id]
        order_names = b.mg.ctor_fields(ctor.type_decl, ctor.ctor)
        if sorted(fi.name for fi in body.fields) != sorted(order_names):
            return None
        fields = [(order_names.index(fi.name), fi) for fi in body.fields]
        order = list(range(len(order_names)))
    else:
        return None
    calls = [k for k, (_, node) in enumerate(fields) if tool_call_of(b, _value_node(node)) is not None]
    if len(calls) != 1:
        return None
    k = calls[0]
    call = _value_node(fields[k][1])
    info, arg_nodes = tool_call_of(b, call)
    return ParkShape(call, info, arg_nodes, ctor, fields, order, k)


def parkable(b: Body, shape: ParkShape) -> bool:
    """Whether moving the constructor's other values around the call changes nothing."""
    if not all(effect_free(b, a) for a in shape.args):
        return False
    for n in shape.before():
        v = _value_node(n)
        if v is not None and not effect_free(b, v):
            return False
    for n in shape.after():
        v = _value_node(n)
        if v is None:
            continue  # a shorthand field: a variable
        if isinstance(v, A.Literal) and v.kind not in ("decimal", "duration"):
            continue
        if isinstance(v, A.Name) and isinstance(b.prog.refs.get(v.id), P.LocalRef):
            continue
        return False  # computing it before the call could fault or differ: not parkable
    return True


def park_request(b: Body, shape: ParkShape, mk: str) -> list:
    # lower: the fields before the call (source order), then the call's arguments
    before = shape.before()
    parts, nodes = [], []
    for n in before:
        v = _value_node(n)
        parts.append(([], shorthand(b, n)) if v is None else expr(b, v))
        nodes.append(n)
    for a in shape.args:
        parts.append(expr(b, a))
        nodes.append(a)
    stmts, xs = seq_parts(b, parts, nodes)
    data_by_pos: dict[int, py.Expr] = {}
    for (pos, _), x in zip(shape.fields[: shape.k] if shape.ctor is not None else [], xs[: len(before)]):
        data_by_pos[pos] = x
    for pos, n in shape.fields[shape.k + 1 :] if shape.ctor is not None else []:
        v = _value_node(n)
        s, x = ([], shorthand(b, n)) if v is None else expr(b, v)
        assert not s
        data_by_pos[pos] = x
    call_args = [b.mg.spec_ref(shape.info.decl), py.tuple_(xs[len(before) :])]
    kwargs = {}
    if shape.ctor is not None:
        at = shape.fields[shape.k][0]
        call_args.append(b.mg.ctor_class(shape.ctor.type_decl, shape.ctor.ctor))
        data = [data_by_pos[p] for p in shape.order if p != at]
        if data or at:
            call_args.append(py.tuple_(data))
        if at:
            kwargs["at"] = py.integer(at)
    if shape.info.type_params and b.prog.type_args.get(shape.call.id):
        kwargs["type_args"] = type_args_of(b, shape.call)
    request = py.call(py.dotted("rt.ParkCall"), call_args, **kwargs)
    return stmts + [py.return_(yield_(b, request), mk)]


def shorthand(b: Body, fi: A.FieldInit) -> py.Expr:
    r = b.prog.refs.get(fi.id)
    return py.name(b.locals[r.binder]) if isinstance(r, P.LocalRef) else py.name(lookup(b, fi.name))
