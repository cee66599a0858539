"""Calls and tail calls: resolving the callee (top-level function, method, constructor or
function value), lifting pure function arguments where the callee runs them effectfully, and
`apply`, which picks the Python form of one call: a Tool request, an @lang task request, an
inline `//` or `%`, an `rt.lang` function, a plain call, a `yield`, and in tail position a
`continue` of the function's loop or an `rt.TailCall`. Functions of the walk's state
(lower_base.Body)."""

from __future__ import annotations

import libcst as cst

from flow2py.check import typed as P
from flow2py.check.annotations import lang_args
from flow2py.codegen import py
from flow2py.codegen.lower_base import (
    Body,
    Loop,
    Sink,
    desc,
    eff,
    fun_effect,
    mark,
    seq,
    type_args_of,
    value_into,
    yield_,
    yielded,
)
from flow2py.codegen.typeargs import TARGS
from flow2py.syntax import ast as A

#: Int division and remainder: Python's operator when the divisor is a non-zero literal
INLINE_DIVISION = {"int.div": "//", "int.rem": "%"}
#: std's marks (docs/spec/stdlib.md): a function marked "iterates" only iterates its first
#: argument, once, from the start (its `__tool` variant too), "iterates-all" also always to the
#: end before it returns. A List built right there for it is never seen again, so it is not
#: built: a plain call of a function marked "lazy:NAME" passes `rt.lang.NAME` instead (same
#: arguments, the same elements, no List: `list.range` -> `rt.lang.iter_range`), and one marked
#: "lazy-all:NAME" does so only into "iterates-all" (its lazy form runs its work as the elements
#: are taken: `text.join` of a pure `list.map`).
ITERATES = ("iterates", "iterates-all")
#: @lang task operations are requests the generator yields to the driver (abi.md, "Requests")
LANG_REQUESTS = {
    "task.spawn": "rt.Spawn",
    "task.await": "rt.Await",
    "task.stop": "rt.StopTask",
    "task.first": "rt.First",
}


def call_value(b: Body, e: A.Call):
    return call(b, e, tail=False)


def call_into(b: Body, e: A.Call, sink: Sink) -> list:
    """A call in tail position (`return` sink) is a tail call; elsewhere a value."""
    if sink.kind == "return":
        return call(b, e, tail=True)[0]
    return value_into(b, e, sink)


def callee_fn(b: Body, e: A.Call):
    """-> (FnInfo, receiver expression or None) when the callee is a top-level function."""
    c = e.callee
    ref = b.prog.refs.get(c.id)
    if isinstance(ref, P.FnRef):
        return b.prog.fn_decls[ref.decl], None
    if isinstance(ref, P.MethodRef) and isinstance(c, A.FieldAccess):
        return b.prog.fn_decls[ref.decl], c.target
    return None, None


def call(b: Body, e: A.Call, tail: bool):
    info, receiver = callee_fn(b, e)
    if info is not None:
        arg_nodes = ([receiver] if receiver is not None else []) + list(e.args)
        s, xs = seq(b, arg_nodes)
        xs = lift_args(b, info, e, arg_nodes, xs)
        return apply(b, e, info, xs, s, tail, arg_nodes[0] if arg_nodes else None)
    ref = b.prog.refs.get(e.callee.id)
    if isinstance(ref, P.CtorRef):
        s, xs = seq(b, list(e.args))
        out = py.call(b.mg.ctor_class(ref.type_decl, ref.ctor), xs)
        return (s + [py.return_(out, mark(b, e))], py.const(None)) if tail else (s, out)
    # a function value
    s, xs = seq(b, [e.callee] + list(e.args))
    f, args = xs[0], xs[1:]
    value = py.call(f, args)
    if eff(b, e.id) == "tool":
        if tail:
            return s + [
                py.return_(py.call(py.dotted("rt.TailCall"), [f, py.tuple_(args)]), mark(b, e))
            ], py.const(None)
        return yielded(b, value, e, s)
    if tail:
        if b.ctx.bouncing:  # a pure tail call through a value: the trampoline makes it
            value = py.call(py.dotted("rt.Tail"), [f, py.tuple_(args)])
        return s + [py.return_(value, mark(b, e))], py.const(None)
    return s, value


def lift_args(b: Body, info: P.FnInfo, e: A.Call, nodes: list, xs: list) -> list:
    """Wrap a pure function value passed where the callee (as instantiated) runs it as an
    effectful one: `rt.lift(f)`."""
    call_tool = eff(b, e.id) == "tool"
    out = []
    for i, (node, x) in enumerate(zip(nodes, xs)):
        slot = info.params[i][1] if i < len(info.params) else None
        wants_tool = isinstance(slot, P.TFun) and (
            slot.effect == "tool" or (i in info.poly_params and call_tool)
        )
        if wants_tool and arg_effect(b, node) == "pure":
            x = py.call(py.dotted("rt.lift"), [x])
        out.append(x)
    return out


def arg_effect(b: Body, node: A.Expr) -> str:
    if isinstance(node, A.Lambda):
        return eff(b, node.id)
    return fun_effect(b, b.prog.types.get(node.id))


def apply(b: Body, e: A.Node, info: P.FnInfo, xs: list, s: list, tail: bool, first: A.Node | None = None):
    """A call of the top-level function `info` on already lowered arguments (`first`: the
    node of the first, when the call has one)."""
    mk = mark(b, e)
    call_eff = eff(b, e.id) if isinstance(e, A.Call) else "pure"
    if info.is_tool:
        kwargs = {}
        if info.type_params and b.prog.type_args.get(e.id):
            kwargs["type_args"] = type_args_of(b, e)
        request = py.call(py.dotted("rt.ToolCall"), [b.mg.spec_ref(info.decl), py.tuple_(xs)], **kwargs)
        if tail:
            return s + [py.return_(yield_(b, request), mk)], py.const(None)
        return yielded(b, request, e, s)
    bodyless = info.node is None or info.node.body is None
    effectful = call_eff == "tool" or info.effect == "tool"
    if bodyless and info.lang in LANG_REQUESTS:
        request = py.call(py.dotted(LANG_REQUESTS[info.lang]), xs)
        if tail and b.ctx.request_body and not s and not b.ctx.has_yield:
            # the whole body of an effectful lambda: the request itself (abi.md, "Requests")
            return [py.return_(request, mk)], py.const(None)
        if tail:
            return s + [py.return_(yield_(b, request), mk)], py.const(None)
        return yielded(b, request, e, s)
    if bodyless and info.lang in INLINE_DIVISION and _nonzero_literal(xs[1]):
        # Python's `//` and `%` are Flow's (floor) division; only a zero divisor must fault
        value = py.binop(INLINE_DIVISION[info.lang], xs[0], xs[1])
        return (s + [py.return_(value, mk)], py.const(None)) if tail else (s, value)
    if bodyless and info.lang and xs and first is not None:
        consumes = [f for f in lang_flags(info) if f in ITERATES]
        if consumes:
            xs = [lazy(b, first, xs[0], "iterates-all" in consumes)] + list(xs[1:])
    if bodyless and info.lang:
        fname = "rt.lang." + info.lang.replace(".", "_")
        if info.decl in b.mg.names.typed:  # marked "types": its type arguments first (typeargs.py)
            xs = [type_args_of(b, e)] + list(xs)
        if info.effect == "poly" and effectful:
            fname += "__tool"
        value = py.call(py.dotted(fname), xs)
        if effectful:
            if tail:
                return s + [py.return_(yield_(b, value), mk)], py.const(None)
            return yielded(b, value, e, s)
        return (s + [py.return_(value, mk)], py.const(None)) if tail else (s, value)
    variant = (
        "tool" if (info.effect == "poly" and effectful) else ("tool" if info.effect == "tool" else "pure")
    )
    f = b.mg.fn_value(info.decl, variant)
    typed = info.decl in b.mg.names.typed
    if typed:  # its type arguments first (codegen/typeargs.py)
        xs = [type_args_of(b, e)] + list(xs)
    loop = b.ctx.loop
    if tail and loop is not None and isinstance(e, A.Call) and e.id in loop.self_calls:
        return s + continue_loop(b, loop, info.decl, xs, mk), py.const(None)
    if effectful:
        if tail:
            kwargs = {}
            targs = b.prog.type_args.get(e.id) if info.type_params and not typed else None
            if targs:  # a checkpoint at a generic function records its type arguments
                kwargs["type_args"] = py.tuple_([desc(b, t) for t in targs])
            tc = py.call(py.dotted("rt.TailCall"), [f, py.tuple_(xs)], **kwargs)
            return s + [py.return_(tc, mk)], py.const(None)
        return yielded(b, py.call(f, xs), e, s)
    if tail and b.ctx.bouncing and info.decl in b.mg.names.bouncing:
        value = py.call(py.dotted("rt.Tail"), [f, py.tuple_(xs)])  # stays in the caller's trampoline
    else:
        value = py.call(f, xs)
    return (s + [py.return_(value, mk)], py.const(None)) if tail else (s, value)


def continue_loop(b: Body, loop: Loop, callee: str, xs: list, mk: str) -> list:
    targets = list(loop.params[callee])
    values = list(xs)
    if targets and targets[0] == TARGS and isinstance(values[0], cst.Name) and values[0].value == TARGS:
        del targets[0], values[0]  # the same type arguments: `_targs` stays as it is
    if loop.group and callee != loop.decl:
        targets.insert(0, "_fn")
        values.insert(0, py.integer(loop.index[callee]))
    out: list = []
    if targets:
        if len(targets) == 1:
            out.append(py.assign(py.name(targets[0]), values[0], mk))
        else:
            tgt = py.tuple_([py.name(t) for t in targets]).with_changes(lpar=[], rpar=[])
            val = py.tuple_(values).with_changes(lpar=[], rpar=[])
            out.append(py.assign(tgt, val, mk))
    out.append(py.continue_(mk))
    return out


def lazy(b: Body, node: A.Node, x: py.Expr, to_the_end: bool) -> py.Expr:
    """The first argument `x` (lowered from `node`) of a function marked "iterates", without
    the List it would build, when it is a plain call of a function marked lazy."""
    info = callee_fn(b, node)[0] if isinstance(node, A.Call) else None
    if info is None or not info.lang or not _lang_call(x, info.lang.replace(".", "_")):
        return x  # not that call, or not lowered as its plain call (yielded, hoisted)
    for flag in lang_flags(info):
        kind, _, name = flag.partition(":")
        if name and (kind == "lazy" or (kind == "lazy-all" and to_the_end)):
            return x.with_changes(func=py.dotted("rt.lang." + name.replace(".", "_")))
    return x


def lang_flags(info: P.FnInfo) -> list[str]:
    """The flags of a std function's `@lang("name", flags...)`."""
    la = lang_args(info.node.annotations) if info.node is not None else None
    return [f for f in la[1:] if f] if la else []


def _lang_call(x: py.Expr, fname: str) -> bool:
    f = x.func if isinstance(x, cst.Call) else None
    return (
        isinstance(f, cst.Attribute)
        and f.attr.value == fname
        and isinstance(f.value, cst.Attribute)
        and f.value.attr.value == "lang"
        and isinstance(f.value.value, cst.Name)
        and f.value.value.value == "rt"
    )


def _nonzero_literal(x: py.Expr) -> bool:
    if isinstance(x, cst.UnaryOperation) and isinstance(x.operator, cst.Minus):
        x = x.expression
    return isinstance(x, cst.Integer) and int(x.value.replace("_", ""), 0) != 0
