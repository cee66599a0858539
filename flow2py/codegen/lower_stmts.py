"""Statements, blocks and `if`: lowering a control form straight into its sink (`to_sink`), a
block statement by statement, `let` (a name, a flat tuple, or a pattern through `match`),
`guard` and `guard let`. Part of `lower.Body`; `match` is in lower_match.py."""
from __future__ import annotations

import libcst as cst

from flow2py.check import pattern_form as pf
from flow2py.codegen import py
from flow2py.codegen.lower_base import DISCARD, Sink
from flow2py.codegen.lower_match import Alt
from flow2py.syntax import ast as A


class StmtsMixin:
    def to_sink(self, e: A.Expr, sink: Sink) -> list:
        if isinstance(e, A.Block):
            return self.block(e, sink)
        if isinstance(e, A.If):
            return self.if_(e, sink)
        if isinstance(e, A.Match):
            return self.match(e, sink)
        if isinstance(e, A.Return):
            s, _ = self.expr(e)
            return s
        if isinstance(e, A.Call) and sink.kind == "return":
            return self.call(e, tail=True)[0]
        s, x = self.expr(e)
        if s and isinstance(x, cst.Name) and x.value.startswith("_t"):
            last = s[-1]
            if (
                isinstance(last, cst.SimpleStatementLine)
                and isinstance(last.body[0], cst.Assign)
                and isinstance(last.body[0].targets[0].target, cst.Name)
                and last.body[0].targets[0].target.value == x.value
            ):
                # `_t1 = yield f(x)` followed by `return _t1` reads better as one statement
                value = last.body[0].value
                mark = last.trailing_whitespace.comment.value if last.trailing_whitespace.comment else None
                if sink.kind == "discard":
                    return s[:-1] + [py.expr_stmt(value, mark)]
                return s[:-1] + sink.finish(value, mark)
        return s + sink.finish(x, self.mark(e))

    def block(self, b: A.Block, sink: Sink) -> list:
        self.scopes.append({})
        out: list = []
        try:
            for i, st in enumerate(b.stmts):
                if i == len(b.stmts) - 1 and isinstance(st, A.ExprStmt):
                    out += self.to_sink(st.expr, sink)
                    return out
                out += self.stmt(st)
            out += sink.finish(py.const(None), self.mark(b)) if sink.kind != "discard" else []
            return out
        finally:
            self.scopes.pop()

    def stmt(self, st: A.Stmt) -> list:
        if isinstance(st, A.ExprStmt):
            return self.to_sink(st.expr, DISCARD)
        if isinstance(st, A.Let):
            return self.let(st)
        if isinstance(st, A.Guard):
            s, c = self.expr(st.cond)
            return s + [py.if_(py.not_(c), self.block(st.else_, DISCARD), None, self.mark(st))]
        if isinstance(st, A.GuardLet):
            s, x = self.expr(st.value)
            if not isinstance(x, cst.Name):
                x = self.hoist(x, self.mark(st.value), s)
            alts = [Alt(self.prog.patterns[st.pattern.id], None, list, self.mark(st.pattern))]
            return s + self.match_alts(x, alts, lambda: self.block(st.else_, DISCARD), self.mark(st))
        raise self.error(st, f"unknown statement {type(st).__name__}")

    def let(self, st: A.Let) -> list:
        p = self.prog.patterns[st.pattern.id]
        if type(p) is pf.Bind:
            if isinstance(st.value, A.Lambda):
                s, x = self.lambda_(st.value, hint=p.name, binder=p.binder)
                return s
            target = self.namer.fresh(p.name)
            out = self.to_sink(st.value, Sink("assign", target))
            self.locals[p.binder] = target
            self.scopes[-1][p.name] = target
            return out
        if type(p) is pf.Wild:
            return self.to_sink(st.value, DISCARD)
        s, x = self.expr(st.value)
        if type(p) is pf.Tuple and all(pf.irrefutable_names(i) for i in p.items):
            targets = []
            for item in p.items:
                targets.append(py.name(self.bind(item.binder, item.name) if type(item) is pf.Bind else "_"))
            return s + [py.assign(py.tuple_(targets).with_changes(lpar=[], rpar=[]), x, self.mark(st))]
        if not isinstance(x, cst.Name):
            x = self.hoist(x, self.mark(st.value), s)
        return s + self.match_alts(x, [Alt(p, None, list, self.mark(st.pattern))], None, self.mark(st))

    def if_(self, e: A.If, sink: Sink) -> list:
        s, c = self.expr(e.cond)
        self.scopes.append({})
        then = self.block(e.then, sink)
        self.scopes.pop()
        if e.else_ is None:
            orelse = [] if sink.kind == "discard" else sink.finish(py.const(None), self.mark(e))
        elif isinstance(e.else_, A.If):
            orelse = self.if_(e.else_, sink)
        else:
            orelse = self.block(e.else_, sink)
        return s + [py.if_(c, then, orelse, self.mark(e))]
