"""Blocks, statements and `if`: a block statement by statement into its sink, `let` (a name, a
flat tuple, or a pattern through `match`), `guard` and `guard let`. Functions of the walk's
state (lower_base.Body); `match` is in lower_match.py."""

from __future__ import annotations

import libcst as cst

from flow2py.check import pattern_form as pf
from flow2py.codegen import py
from flow2py.codegen.lower_base import DISCARD, STMTS, Body, Sink, bind, error, expr, hoist, mark, to_sink
from flow2py.codegen.lower_lambda import lambda_
from flow2py.codegen.lower_match import Alt, match_alts
from flow2py.syntax import ast as A


def block(b: Body, blk: A.Block, sink: Sink) -> list:
    b.scopes.append({})
    out: list = []
    try:
        for i, st in enumerate(blk.stmts):
            if i == len(blk.stmts) - 1 and type(st) is A.ExprStmt:
                out += to_sink(b, st.expr, sink)
                return out
            f = STMTS.get(type(st))
            if f is None:
                raise error(st, f"unknown statement {type(st).__name__}")
            out += f(b, st)
        out += sink.finish(py.const(None), mark(b, blk)) if sink.kind != "discard" else []
        return out
    finally:
        b.scopes.pop()


def expr_stmt(b: Body, st: A.ExprStmt) -> list:
    return to_sink(b, st.expr, DISCARD)


def guard(b: Body, st: A.Guard) -> list:
    s, c = expr(b, st.cond)
    return s + [py.if_(py.not_(c), block(b, st.else_, DISCARD), None, mark(b, st))]


def guard_let(b: Body, st: A.GuardLet) -> list:
    s, x = expr(b, st.value)
    if not isinstance(x, cst.Name):
        x = hoist(b, x, mark(b, st.value), s)
    alts = [Alt(b.prog.patterns[st.pattern.id], None, list, mark(b, st.pattern))]
    return s + match_alts(b, x, alts, lambda: block(b, st.else_, DISCARD), mark(b, st))


def let(b: Body, st: A.Let) -> list:
    p = b.prog.patterns[st.pattern.id]
    if type(p) is pf.Bind:
        if isinstance(st.value, A.Lambda):
            s, x = lambda_(b, st.value, hint=p.name, binder=p.binder)
            return s
        target = b.namer.fresh(p.name)
        out = to_sink(b, st.value, Sink("assign", target))
        b.locals[p.binder] = target
        b.scopes[-1][p.name] = target
        return out
    if type(p) is pf.Wild:
        return to_sink(b, st.value, DISCARD)
    s, x = expr(b, st.value)
    if type(p) is pf.Tuple and all(pf.irrefutable_names(i) for i in p.items):
        targets = []
        for item in p.items:
            targets.append(py.name(bind(b, item.binder, item.name) if type(item) is pf.Bind else "_"))
        return s + [py.assign(py.tuple_(targets).with_changes(lpar=[], rpar=[]), x, mark(b, st))]
    if not isinstance(x, cst.Name):
        x = hoist(b, x, mark(b, st.value), s)
    return s + match_alts(b, x, [Alt(p, None, list, mark(b, st.pattern))], None, mark(b, st))


def if_(b: Body, e: A.If, sink: Sink) -> list:
    s, c = expr(b, e.cond)
    b.scopes.append({})
    then = block(b, e.then, sink)
    b.scopes.pop()
    if e.else_ is None:
        orelse = [] if sink.kind == "discard" else sink.finish(py.const(None), mark(b, e))
    elif isinstance(e.else_, A.If):
        orelse = if_(b, e.else_, sink)
    else:
        orelse = block(b, e.else_, sink)
    return s + [py.if_(c, then, orelse, mark(b, e))]
