"""Lowering Flow function bodies to Python statements.

The shape follows Hy: every expression lowers to `(statements, expression)`. The statements run
first and hold whatever cannot sit inside a Python expression: an effectful call
(`_t1 = yield f(x)`), a Tool call, an `if`/`match` used as a value, a `?` that may return early.
Evaluation is strictly left to right, so when a later operand needs statements, every earlier
operand that is not a plain name or constant is hoisted into a temporary first (`_seq`).

Control forms lower straight into a *sink*, which says what to do with the value: `return` it
(tail position), assign it to a variable (a `let` or a temporary), or drop it (a statement).
Tail calls are decided here, in the `return` sink:

* a pure self tail call rebinds the parameters and `continue`s the function's `while True:`;
* a pure tail call inside a strongly connected group of pure functions sets the group's
  selector and that function's parameters and `continue`s the group's merged loop;
* an effectful tail call returns `rt.TailCall(f, (args,))`, which the runtime turns into a frame
  replacement (and, at an eligible site, a checkpoint); a Tool or @lang callee is just
  `return (yield ...)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from flow2py.check import program as P
from flow2py.codegen import py
from flow2py.codegen.names import Namer, safe
from flow2py.syntax import ast as A

#: @lang operator functions whose meaning is exactly Python's operator on the runtime values
PY_BINOPS = {
    "int.add": "+", "int.sub": "-", "int.mul": "*", "text.concat": "+",
    "data.eq": "==", "data.ne": "!=", "data.lt": "<", "data.le": "<=", "data.gt": ">", "data.ge": ">=",
}
PY_UNOPS = {"int.neg": "-", "bool.not": "not"}
SHORT_CIRCUIT = {"&&": "and", "||": "or"}
#: Int division and remainder: Python's operator when the divisor is a non-zero literal
INLINE_DIVISION = {"int.div": "//", "int.rem": "%"}
#: @lang functions that only iterate their first argument, once, from the start (their `__tool`
#: variants too): a List built right there for them is never seen again, so it is not built:
#: `list.range(a, b)` passes `rt.lang.iter_range(a, b)` (Python's `range`), and `text.join` of a
#: pure `list.map` passes `rt.lang.iter_map(xs, f)` (`join` runs every `f` before it joins).
ITERATE_FIRST = {"list.map", "list.filter", "list.fold", "list.each", "list.flat_map", "list.find", "text.join"}
#: @lang task operations are requests the generator yields to the driver (abi.md, "Requests")
LANG_REQUESTS = {"task.spawn": "rt.Spawn", "task.await": "rt.Await", "task.stop": "rt.StopTask", "task.first": "rt.First"}


class CodegenError(Exception):
    """A construct the generator cannot lower (names the Flow location)."""


@dataclass
class Sink:
    kind: str  # return | assign | discard
    target: Optional[str] = None

    def finish(self, x: py.Expr, mark: Optional[str]) -> list:
        if self.kind == "return":
            return [py.return_(x, mark)]
        if self.kind == "assign":
            return [py.assign(py.name(self.target), x, mark)]
        if _atomic(x):
            return []
        return [py.expr_stmt(x, mark)]


RETURN = Sink("return")
DISCARD = Sink("discard")


def _atomic(x: py.Expr) -> bool:
    """Evaluating it has no effect and cannot fault: safe to leave in place while later operands
    run their statements (Flow locals never change)."""
    if isinstance(x, (cst.Name, cst.Integer, cst.SimpleString, cst.Float)):
        return True
    if isinstance(x, cst.Attribute):
        return _atomic(x.value) and isinstance(x.value, (cst.Name, cst.Attribute))
    if isinstance(x, cst.UnaryOperation) and isinstance(x.expression, cst.Integer):
        return True
    return False


@dataclass
class Loop:
    """The `while True:` of the function being lowered: a self loop or a merged group."""

    decl: str  # the function whose body is being lowered now
    params: dict[str, list[str]]  # member decl -> its parameter names in the loop function
    index: dict[str, int]  # member decl -> selector value (groups only)
    self_calls: set[int]  # Call ids that continue this loop
    group: bool = False


@dataclass
class DefCtx:
    generator: bool
    has_yield: bool = False
    loop: Optional[Loop] = None


class Body:
    """Lowers one top-level function (with its lambdas) in one variant ('pure' or 'tool')."""

    def __init__(self, mg, namer: Namer, variant: str):
        self.mg = mg  # flow2py.codegen.module.ModuleGen
        self.prog: P.CheckedProgram = mg.prog
        self.namer = namer
        self.variant = variant
        self.locals: dict[int, str] = {}
        self.scopes: list[dict[str, str]] = [{}]
        self.ctx = DefCtx(generator=variant == "tool")
        self.deferred: list = []  # list patterns whose elements are matched inside the case

    # ---- small helpers -----------------------------------------------------------------------

    def mark(self, node: A.Node) -> str:
        return f"# flow: {self.mg.flow_file}:{node.span.line}"

    def eff(self, node_id: int) -> str:
        e = self.prog.effects.get(node_id, "pure")
        if e == "poly":
            return self.variant
        return e

    def fun_effect(self, t) -> str:
        if isinstance(t, P.TFun):
            return self.variant if t.effect == "poly" else t.effect
        return "pure"

    def bind(self, binder: int, flow_name: str, py_name: Optional[str] = None) -> str:
        n = py_name or self.namer.fresh(flow_name)
        self.locals[binder] = n
        self.scopes[-1][flow_name] = n
        return n

    def lookup(self, flow_name: str) -> str:
        for s in reversed(self.scopes):
            if flow_name in s:
                return s[flow_name]
        raise CodegenError(f"no local named {flow_name!r}")

    def temp(self) -> str:
        return self.namer.temp()

    def error(self, node: A.Node, what: str) -> CodegenError:
        return CodegenError(f"{node.span.file}:{node.span.line}: {what}")

    def yield_(self, value: py.Expr) -> cst.Yield:
        if not self.ctx.generator:
            raise CodegenError("an effectful call outside an effectful function")
        self.ctx.has_yield = True
        return py.yield_(value)

    def hoist(self, x: py.Expr, mark: str, stmts: list) -> py.Expr:
        if isinstance(x, cst.Name):
            return x
        t = self.temp()
        stmts.append(py.assign(py.name(t), x, mark))
        return py.name(t)

    # ---- sequences: left-to-right evaluation ---------------------------------------------------

    def seq(self, exprs: list[A.Expr]) -> tuple[list, list[py.Expr]]:
        parts = [self.expr(e) for e in exprs]
        return self._seq(parts, exprs)

    def _seq(self, parts, nodes) -> tuple[list, list[py.Expr]]:
        # a lambda's `def` evaluates nothing: operands before it need not move into temporaries
        last = max((i for i, (s, _) in enumerate(parts) if s and not all(isinstance(x, cst.FunctionDef) for x in s)),
                   default=-1)
        stmts: list = []
        out: list[py.Expr] = []
        for i, (s, x) in enumerate(parts):
            stmts += s
            if i < last and not _atomic(x):
                x = self.hoist(x, self.mark(nodes[i]), stmts)
            out.append(x)
        return stmts, out

    # ---- statements and control forms ---------------------------------------------------------

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
            alts = [(st.pattern, None, lambda: [], self.mark(st.pattern))]
            return s + self.match_alts(x, alts, lambda: self.block(st.else_, DISCARD), self.mark(st))
        raise self.error(st, f"unknown statement {type(st).__name__}")

    def let(self, st: A.Let) -> list:
        p = st.pattern
        if isinstance(p, A.BindPattern):
            hint = p.name
            if isinstance(st.value, A.Lambda):
                s, x = self.lambda_(st.value, hint=p.name, binder=p.id)
                return s
            target = self.namer.fresh(hint)
            out = self.to_sink(st.value, Sink("assign", target))
            self.locals[p.id] = target
            self.scopes[-1][p.name] = target
            return out
        if isinstance(p, A.WildcardPattern):
            return self.to_sink(st.value, DISCARD)
        s, x = self.expr(st.value)
        if isinstance(p, A.TuplePattern) and all(isinstance(i, (A.BindPattern, A.WildcardPattern)) for i in p.items):
            targets = []
            for item in p.items:
                targets.append(py.name(self.bind(item.id, item.name) if isinstance(item, A.BindPattern) else "_"))
            return s + [py.assign(py.tuple_(targets).with_changes(lpar=[], rpar=[]), x, self.mark(st))]
        if not isinstance(x, cst.Name):
            x = self.hoist(x, self.mark(st.value), s)
        return s + self.match_alts(x, [(p, None, lambda: [], self.mark(p))], None, self.mark(st))

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

    def match(self, m: A.Match, sink: Sink) -> list:
        s, x = self.expr(m.scrutinee)
        dispatch = self.dispatchable(m.arms)
        if not isinstance(x, cst.Name) and (dispatch or any(a.guard is not None for a in m.arms) or _has_list(m)):
            x = self.hoist(x, self.mark(m.scrutinee), s)  # it may be matched again in a case
        if dispatch:
            return s + self.dispatch(x, m.arms, sink)
        return s + self.arms(x, m.arms, sink, self.mark(m))

    # A `match` whose arms are constructor patterns with only names or `_` inside (and perhaps a
    # final catch-all) becomes an `if type(s) is Circle: p, r = s._0, s._1 ... elif ...` chain:
    # CPython's class patterns (`case Circle(p, r)`: `__match_args__`, isinstance, getattr by
    # name) cost ~4x as much (bench/bench_pure.py).

    def dispatchable(self, arms: list[A.MatchArm]) -> bool:
        flat = 0
        for arm in arms:
            p = arm.pattern
            if arm.guard is not None:
                return False
            if isinstance(p, (A.WildcardPattern, A.BindPattern)):
                break  # a catch-all: later arms are unreachable
            if not isinstance(p, A.CtorPattern) or not isinstance(self.prog.refs.get(p.id), P.CtorRef):
                return False
            subs = list(p.args or []) + [fp for _, fp in (p.fields or [])]
            if not all(isinstance(q, (A.WildcardPattern, A.BindPattern)) for q in subs):
                return False
            flat += 1
        return flat > 0

    def dispatch(self, subject: cst.Name, arms: list[A.MatchArm], sink: Sink) -> list:
        branches = []  # (test or None for the catch-all, body, mark), in source order
        for arm in arms:
            p = arm.pattern
            amark = self.mark(arm)
            self.scopes.append({})
            try:
                if isinstance(p, (A.WildcardPattern, A.BindPattern)):
                    body = []
                    if isinstance(p, A.BindPattern):
                        body.append(py.assign(py.name(self.bind(p.id, p.name)), subject, amark))
                    branches.append((None, body + self.to_sink(arm.body, sink), amark))
                    break
                ref = self.prog.refs[p.id]
                cls = self.mg.ctor_class(ref.type_decl, ref.ctor)
                attrs = self.mg.ctor_attrs(ref.type_decl, ref.ctor)
                pairs = [(attrs[i], q) for i, q in enumerate(p.args or [])]
                pairs += [(self.mg.field_name(f), q) for f, q in (p.fields or [])]
                targets, values = [], []
                for a, q in pairs:
                    if isinstance(q, A.BindPattern):
                        targets.append(py.name(self.bind(q.id, q.name)))
                        values.append(py.attr(subject, a))
                body = []
                if len(targets) == 1:
                    body.append(py.assign(targets[0], values[0], amark))
                elif targets:
                    body.append(py.assign(py.tuple_(targets).with_changes(lpar=[], rpar=[]),
                                          py.tuple_(values).with_changes(lpar=[], rpar=[]), amark))
                if self.mg.type_info(ref.type_decl).lang:
                    test = py.isinstance_(subject, cls)  # a runtime class (rt.NotRun may be subclassed)
                else:
                    test = cst.Comparison(left=py.call(py.name("type"), [subject]), comparisons=[
                        cst.ComparisonTarget(operator=cst.Is(), comparator=cls)])
                branches.append((test, body + self.to_sink(arm.body, sink), amark))
            finally:
                self.scopes.pop()
        out = None
        for test, body, amark in reversed(branches):
            out = body if test is None else [py.if_(test, body, out, amark)]
        return out

    def arms(self, subject, arms: list[A.MatchArm], sink: Sink, mark: str) -> list:
        alts = [(arm.pattern, arm.guard, (lambda arm=arm: self.to_sink(arm.body, sink)), self.mark(arm)) for arm in arms]
        return self.match_alts(subject, alts, None, mark)

    def match_alts(self, subject, alts, fallback, mark: str) -> list:
        """A Python `match` over alternatives `(pattern, guard or None, body thunk, mark)`;
        `fallback` (a thunk) runs when none matches. Bodies are thunks because a part of a
        pattern Python cannot test in the case itself (an element of an `rt.List`, an effectful
        guard) is tested inside the case, where failing falls through to the remaining
        alternatives: their code is emitted again there."""
        cases = []
        for i, (pattern, guard, body, amark) in enumerate(alts):
            rest = alts[i + 1:]

            def remaining(rest=rest):
                return self.match_alts(subject, rest, fallback, mark) if rest else (fallback() if fallback else [])

            self.scopes.append({})
            self.deferred = []
            pat, guards, post = self.pattern(pattern)
            deferred, self.deferred = self.deferred, []
            stmts = self.case_body(deferred, post, guard, body, remaining, guards, amark)
            if isinstance(stmts, tuple):  # the guard could stay in the case header
                stmts, guards = stmts
            self.scopes.pop()
            cases.append(py.case(pat, _and(guards), stmts, amark))
            if not guards and not deferred and guard is None and _irrefutable(pat):
                break  # Python refuses cases after an irrefutable one; they are unreachable anyway
        else:
            if fallback is not None:
                cases.append(py.case(py.p_wild(), None, fallback(), mark))
        if not cases:
            return []
        return [py.match(subject, cases, mark)]

    def case_body(self, deferred, post, guard, body, remaining, guards, amark):
        if deferred and all(isinstance(i, (A.BindPattern, A.WildcardPattern)) for _, items in deferred for i in items):
            # elements that are only names: bind them by index, no second match
            post = list(post)
            for lname, items in deferred:
                for j, item in enumerate(items):
                    if isinstance(item, A.BindPattern):
                        target = self.bind(item.id, item.name)
                        index = cst.Subscript(value=py.name(lname), slice=[cst.SubscriptElement(slice=cst.Index(value=py.integer(j)))])
                        post.insert(0, py.assign(py.name(target), index, self.mark(item)))
            if guard is None:
                return post + body(), guards
            gs, gx = self.expr(guard)
            return post + gs + [py.if_(gx, body(), remaining() or None, amark)]
        if deferred:
            # match the elements of the captured lists, as a tuple (tuples are sequences to
            # `match`; the persistent vector is not)
            subj, pats, guards2, post2 = [], [], [], list(post)
            for lname, items in deferred:
                for j, item in enumerate(items):
                    subj.append(cst.Subscript(value=py.name(lname), slice=[cst.SubscriptElement(slice=cst.Index(value=py.integer(j)))]))
                    pats.append(self._pat(item, guards2, post2, None))
            inner_deferred, self.deferred = self.deferred, []
            inner = self.case_body(inner_deferred, post2, guard, body, remaining, guards2, amark)
            if isinstance(inner, tuple):
                inner, guards2 = inner
            cases = [py.case(py.p_tuple(pats), _and(guards2), inner, amark)]
            rest = remaining()
            cases.append(py.case(py.p_wild(), None, rest or [py.pass_()], amark))
            return [py.match(py.tuple_(subj), cases, amark)]
        if guard is not None:
            gs, gx = self.expr(guard)
            if gs:
                # an effectful guard cannot sit in `case ... if`: test it in the body
                return post + gs + [py.if_(gx, body(), remaining() or None, amark)]
            return post + body(), guards + [gx]
        return post + body(), guards

    # ---- patterns -------------------------------------------------------------------------------

    def pattern(self, p: A.Pattern, alt_names: Optional[dict] = None):
        """-> (Python pattern, extra guard expressions, statements to run first in the case body)."""
        guards: list = []
        post: list = []
        pat = self._pat(p, guards, post, alt_names)
        return pat, guards, post

    def _pat(self, p, guards, post, alt):
        if isinstance(p, A.WildcardPattern):
            return py.p_wild()
        if isinstance(p, A.BindPattern):
            if alt is not None and p.name in alt:
                return py.p_capture(self.bind(p.id, p.name, alt[p.name]))
            n = self.bind(p.id, p.name)
            if alt is not None:
                alt[p.name] = n
            return py.p_capture(n)
        if isinstance(p, A.LiteralPattern):
            lit = p.literal
            if lit.kind in ("int", "text", "bytes", "bool", "unit"):
                return py.p_value(py.const(lit.value))
            t = self.temp()
            guards.append(py.binop("==", py.name(t), self.literal(lit)))
            return py.p_capture(t)
        if isinstance(p, A.CtorPattern):
            ref = self.prog.refs.get(p.id)
            if not isinstance(ref, P.CtorRef):
                raise self.error(p, f"constructor pattern {p.name} is not resolved")
            cls = self.mg.ctor_class(ref.type_decl, ref.ctor)
            args = [self._pat(a, guards, post, alt) for a in (p.args or [])]
            kwds = [(self.mg.field_name(f), self._pat(fp, guards, post, alt)) for f, fp in (p.fields or [])]
            return py.p_class(cls, args, kwds)
        if isinstance(p, A.TuplePattern):
            return py.p_tuple([self._pat(i, guards, post, alt) for i in p.items])
        if isinstance(p, A.ListPattern):
            # an rt.List is not a sequence to Python's `match`: capture it, test its length in
            # the guard, and match its elements in the case body (`case_body`)
            whole = self.temp()
            n = len(p.items)
            length = py.call(py.name("len"), [py.name(whole)])
            guards.append(py.binop(">=" if p.has_rest else "==", length, py.integer(n)))
            if p.items:
                self.deferred.append((whole, list(p.items)))
            if p.has_rest and isinstance(p.rest, A.BindPattern):
                rest = self.bind(p.rest.id, p.rest.name, alt.get(p.rest.name) if alt else None)
                if alt is not None:
                    alt[p.rest.name] = rest
                post.append(py.assign(py.name(rest), cst.Subscript(
                    value=py.name(whole),
                    slice=[cst.SubscriptElement(slice=cst.Slice(lower=py.integer(n), upper=None))],
                ), self.mark(p.rest)))
            elif p.has_rest and p.rest is not None and not isinstance(p.rest, A.WildcardPattern):
                raise self.error(p.rest, "a rest pattern other than a name or `_` is not supported")
            return py.p_as(cst.MatchClass(cls=py.dotted("rt.List"), patterns=[], kwds=[]), whole)
        if isinstance(p, A.OrPattern):
            names: dict[str, str] = {} if alt is None else alt
            return py.p_or([self._pat(a, guards, post, names) for a in p.alternatives])
        raise self.error(p, f"unknown pattern {type(p).__name__}")

    # ---- expressions ----------------------------------------------------------------------------

    def expr(self, e: A.Expr) -> tuple[list, py.Expr]:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise self.error(e, f"unknown expression {type(e).__name__}")
        return method(e)

    def via_sink(self, e: A.Expr) -> tuple[list, py.Expr]:
        t = self.temp()
        return self.to_sink(e, Sink("assign", t)), py.name(t)

    e_Block = e_If = e_Match = via_sink

    def e_Return(self, e: A.Return):
        if e.value is None:
            return [py.return_(None, self.mark(e))], py.const(None)
        return self.to_sink(e.value, RETURN), py.const(None)

    def literal(self, lit: A.Literal) -> py.Expr:
        if lit.kind == "decimal":
            return py.call(py.dotted("rt.Decimal"), [py.string(str(lit.value))])
        if lit.kind == "duration":
            return py.call(py.dotted("rt.Duration"), [py.integer(lit.value)])
        return py.const(lit.value)

    def e_Literal(self, e: A.Literal):
        return [], self.literal(e)

    def e_Name(self, e: A.Name):
        ref = self.prog.refs.get(e.id)
        if isinstance(ref, P.LocalRef):
            if ref.binder not in self.locals:
                raise self.error(e, f"local {e.name} is not bound")
            return [], py.name(self.locals[ref.binder])
        if ref is None:
            return [], py.name(self.lookup(e.name))
        return [], self.global_value(e, ref)

    def global_value(self, e: A.Expr, ref) -> py.Expr:
        if isinstance(ref, P.FnRef):
            t = self.prog.types.get(e.id)
            variant = self.fun_effect(t) if isinstance(t, P.TFun) else "pure"
            return self.mg.fn_value(ref.decl, variant)
        if isinstance(ref, P.CtorRef):
            return self.mg.ctor_value(ref.type_decl, ref.ctor)
        raise self.error(e, f"{type(ref).__name__} used as a value")

    def e_FieldAccess(self, e: A.FieldAccess):
        ref = self.prog.refs.get(e.id)
        if isinstance(ref, (P.FnRef, P.CtorRef)):
            return [], self.global_value(e, ref)
        s, x = self.expr(e.target)
        return s, py.attr(x, self.mg.field_name(e.name))

    def e_TupleLiteral(self, e: A.TupleLiteral):
        s, xs = self.seq(e.items)
        return s, py.tuple_(xs)

    def e_ListLiteral(self, e: A.ListLiteral):
        if not e.items:
            return [], py.dotted("rt.EMPTY_LIST")
        s, xs = self.seq(e.items)
        return s, py.call(py.dotted("rt.list_of"), [py.tuple_(xs)])

    def e_DictLiteral(self, e: A.DictLiteral):
        if not e.entries:
            return [], py.dotted("rt.EMPTY_DICT")
        flat = [x for kv in e.entries for x in kv]
        s, xs = self.seq(flat)
        pairs = [py.tuple_([xs[i], xs[i + 1]]) for i in range(0, len(xs), 2)]
        return s, py.call(py.dotted("rt.dict_of"), [py.tuple_(pairs)])

    def e_RecordLiteral(self, e: A.RecordLiteral):
        ref = self.prog.refs.get(e.id)
        if not isinstance(ref, P.CtorRef):
            raise self.error(e, "record literal is not resolved")
        order = self.mg.ctor_fields(ref.type_decl, ref.ctor)
        nodes: list = []
        parts = []
        if e.base is not None:
            nodes.append(e.base)
            parts.append(self.expr(e.base))
        for fi in e.fields:
            if fi.value is None:
                r = self.prog.refs.get(fi.id)
                x = py.name(self.locals[r.binder]) if isinstance(r, P.LocalRef) else py.name(self.lookup(fi.name))
                nodes.append(fi)
                parts.append(([], x))
            else:
                nodes.append(fi.value)
                parts.append(self.expr(fi.value))
        given = [fi.name for fi in e.fields]
        reordered = [n for n in order if n in given] != given
        if reordered:
            # fields are evaluated in source order, passed in declared order
            parts = [(s, x) for (s, x) in parts]
            stmts: list = []
            xs = []
            for node, (s, x) in zip(nodes, parts):
                stmts += s
                xs.append(x if _atomic(x) else self.hoist(x, self.mark(node), stmts))
        else:
            stmts, xs = self._seq(parts, nodes)
        base = None
        if e.base is not None:
            base = xs.pop(0)
            if not _atomic(base):
                base = self.hoist(base, self.mark(e.base), stmts)
        values = dict(zip(given, xs))
        args = [values[f] if f in values else py.attr(base, self.mg.field_name(f)) for f in order]
        return stmts, py.call(self.mg.ctor_class(ref.type_decl, ref.ctor), args)

    def e_Unary(self, e: A.Unary):
        s, x = self.expr(e.operand)
        ref = self.prog.refs.get(e.id)
        info = self.prog.fn_decls.get(ref.decl) if isinstance(ref, P.FnRef) else None
        if info is None:
            return s, py.unop("not" if e.op == "!" else "-", x)
        if info.lang in PY_UNOPS:
            return s, py.unop(PY_UNOPS[info.lang], x)
        return self.apply(e, info, [x], s, tail=False)

    def e_Binary(self, e: A.Binary):
        ref = self.prog.refs.get(e.id)
        info = self.prog.fn_decls.get(ref.decl) if isinstance(ref, P.FnRef) else None
        if e.op in SHORT_CIRCUIT:
            return self.short_circuit(e)
        s, (a, b) = self.seq([e.left, e.right])
        if (info is None or info.lang in PY_BINOPS) and not self._unit_ordering(e, info):
            op = PY_BINOPS[info.lang] if info is not None else e.op.replace("++", "+")
            return s, py.binop(op, a, b)
        return self.apply(e, info, [a, b], s, tail=False)

    def _unit_ordering(self, e: A.Binary, info) -> bool:
        """Unit is Python's None, which has no `<`: order it through rt.lang (() <= () holds)."""
        if info is None or info.lang not in ("data.lt", "data.le", "data.gt", "data.ge"):
            return False
        t = self.prog.types.get(e.left.id)
        return isinstance(t, P.TCon) and t.decl.endswith("::Unit")

    def short_circuit(self, e: A.Binary):
        op = SHORT_CIRCUIT[e.op]
        s, a = self.expr(e.left)
        rs, b = self.expr(e.right)
        if not rs:
            return s, py.binop(op, a, b)
        # the right operand has statements: they run only when the left does not decide
        t = self.temp()
        s.append(py.assign(py.name(t), a, self.mark(e.left)))
        test = py.name(t) if op == "and" else py.not_(py.name(t))
        s.append(py.if_(test, rs + [py.assign(py.name(t), b, self.mark(e.right))], None, self.mark(e)))
        return s, py.name(t)

    def e_Try(self, e: A.Try):
        s, x = self.expr(e.operand)
        x = self.hoist(x, self.mark(e), s)
        err_payload = py.attr(x, "_0")
        if e.convert is None:
            leave = [py.return_(x, self.mark(e))]
        else:
            cs, f = self.expr(e.convert)
            converted = py.call(f, [err_payload])
            if self.fun_effect(self.prog.types.get(e.convert.id)) == "tool":
                t = self.temp()
                cs.append(py.assign(py.name(t), self.yield_(converted), self.mark(e.convert)))
                converted = py.name(t)
            leave = cs + [py.return_(py.call(py.dotted("rt.Err"), [converted]), self.mark(e))]
        s.append(py.if_(py.isinstance_(x, py.dotted("rt.Err")), leave, None, self.mark(e)))
        return s, py.attr(x, "_0")

    # ---- lambdas --------------------------------------------------------------------------------

    def e_Lambda(self, e: A.Lambda):
        return self.lambda_(e)

    def lambda_(self, e: A.Lambda, hint: Optional[str] = None, binder: Optional[int] = None):
        generator = self.eff(e.id) == "tool"
        if binder is None and not generator:
            forwarded = self.forwarded(e)
            if forwarded is not None:
                return [], forwarded
        fname = self.namer.fresh(hint or f"_flow{e.span.line}")
        if binder is not None:
            self.locals[binder] = fname
            self.scopes[-1][hint] = fname
        kwonly = []
        if self.ctx.loop is not None:
            # the enclosing function loops (tail calls), so its variables are rebound from round
            # to round; bind the captured values now, as keyword defaults
            for b in self.prog.captures.get(e.id, []):
                if b in self.locals:
                    n = self.locals[b]
                    kwonly.append(py.param(n, py.name(n)))
        saved_ctx, saved_scopes = self.ctx, self.scopes
        self.ctx = DefCtx(generator=generator)
        self.scopes = saved_scopes + [{}]
        try:
            params = [py.param(self.bind(p.id, p.name)) for p in e.params]
            body = self.parked(e.body) if generator else None
            if body is None:
                body = self.to_sink(e.body, RETURN)
            if generator and not self.ctx.has_yield:
                body.append(_generator_marker())
        finally:
            self.ctx, self.scopes = saved_ctx, saved_scopes
        d = py.def_(fname, params, body, self.mark(e), kwonly=kwonly)
        return [d], py.name(fname)

    def forwarded(self, e: A.Lambda) -> Optional[py.Expr]:
        """The function itself for a pure lambda that only passes its parameters on, in order,
        to a pure top-level or @lang function: `flow(i) = int.to_text(i)` is `rt.lang.int_to_text`
        (one Python call an element instead of two). None for any other lambda."""
        body = e.body
        while isinstance(body, A.Block) and len(body.stmts) == 1 and isinstance(body.stmts[0], A.ExprStmt):
            body = body.stmts[0].expr
        if not isinstance(body, A.Call) or self.eff(body.id) != "pure":
            return None
        info, receiver = self.callee_fn(body)
        if info is None or info.is_tool or info.effect == "tool" or info.lang in LANG_REQUESTS:
            return None
        args = ([receiver] if receiver is not None else []) + list(body.args)
        if len(args) != len(e.params) or len(info.params) != len(args):
            return None
        for a, p in zip(args, e.params):
            ref = self.prog.refs.get(a.id)
            if not (isinstance(a, A.Name) and isinstance(ref, P.LocalRef) and ref.binder == p.id):
                return None
        if any(isinstance(t, P.TFun) for _, t in info.params):
            return None  # a function argument may need `rt.lift`: keep the lambda
        return self.mg.fn_value(info.decl, "pure")

    # ---- parkable task bodies (abi.md, "Parkable tasks") -----------------------------------------

    def tool_call_of(self, e: A.Expr):
        """-> (FnInfo, argument nodes) when `e` is a call of a Tool, else None."""
        if not isinstance(e, A.Call):
            return None
        info, receiver = self.callee_fn(e)
        if info is None or not info.is_tool:
            return None
        return info, ([receiver] if receiver is not None else []) + list(e.args)

    def _effect_free(self, e: A.Expr) -> bool:
        """No call in `e` (outside lambdas) reaches a Tool or a task operation: evaluating it
        before the Tool call of a parkable body adds no second effect."""
        from flow2py.codegen.module import _calls_outside_lambdas

        return all(self.eff(c.id) != "tool" for c in _calls_outside_lambdas(e))

    def parked(self, body: A.Expr) -> Optional[list]:
        """The statements of a lambda whose whole body is one Tool call, optionally the argument
        of one constructor (enum constructor or record literal) that may also carry data:
        `return (yield rt.ParkCall(SPEC, args, Ctor, data, at=k))`. None for any other body
        (the lambda is then lowered as usual; only checkpoints are affected)."""
        while isinstance(body, A.Block) and len(body.stmts) == 1 and isinstance(body.stmts[0], A.ExprStmt):
            body = body.stmts[0].expr
        mark = self.mark(body)
        direct = self.tool_call_of(body)
        if direct is not None:
            call, ctor, fields, order = body, None, [], []
        elif isinstance(body, A.Call) and isinstance(self.prog.refs.get(body.callee.id), P.CtorRef):
            ref = self.prog.refs[body.callee.id]
            ctor = ref
            fields = [(i, a) for i, a in enumerate(body.args)]  # (declared position, node)
            order = list(range(len(body.args)))
        elif isinstance(body, A.RecordLiteral) and body.base is None and isinstance(
                self.prog.refs.get(body.id), P.CtorRef):
            ctor = self.prog.refs[body.id]
            order_names = self.mg.ctor_fields(ctor.type_decl, ctor.ctor)
            if sorted(fi.name for fi in body.fields) != sorted(order_names):
                return None
            fields = [(order_names.index(fi.name), fi) for fi in body.fields]
            order = list(range(len(order_names)))
        else:
            return None
        if ctor is not None:
            calls = [k for k, (_, node) in enumerate(fields)
                     if self.tool_call_of(node.value if isinstance(node, A.FieldInit) else node) is not None]
            if len(calls) != 1:
                return None
            k = calls[0]
            node = fields[k][1]
            call = node.value if isinstance(node, A.FieldInit) else node
            direct = self.tool_call_of(call)
        info, arg_nodes = direct
        if not all(self._effect_free(a) for a in arg_nodes):
            return None
        before = [n for _, n in fields[:k]] if ctor is not None else []
        after = [n for _, n in fields[k + 1:]] if ctor is not None else []

        def value_node(n):
            return n.value if isinstance(n, A.FieldInit) else n

        for n in before:
            v = value_node(n)
            if v is not None and not self._effect_free(v):
                return None
        for n in after:
            v = value_node(n)
            if v is None:
                continue  # a shorthand field: a variable
            if isinstance(v, A.Literal) and v.kind not in ("decimal", "duration"):
                continue
            if isinstance(v, A.Name) and isinstance(self.prog.refs.get(v.id), P.LocalRef):
                continue
            return None  # computing it before the call could fault or differ: not parkable
        # lower: the fields before the call (source order), then the call's arguments
        parts, nodes = [], []
        for n in before:
            v = value_node(n)
            if v is None:
                parts.append(([], self.shorthand(n)))
            else:
                parts.append(self.expr(v))
            nodes.append(n)
        for a in arg_nodes:
            parts.append(self.expr(a))
            nodes.append(a)
        stmts, xs = self._seq(parts, nodes)
        data_by_pos: dict[int, py.Expr] = {}
        for (pos, _), x in zip(fields[:k] if ctor is not None else [], xs[:len(before)]):
            data_by_pos[pos] = x
        for pos, n in (fields[k + 1:] if ctor is not None else []):
            v = value_node(n)
            s, x = ([], self.shorthand(n)) if v is None else self.expr(v)
            assert not s
            data_by_pos[pos] = x
        args = xs[len(before):]
        call_args = [self.mg.spec_ref(info.decl), py.tuple_(args)]
        kwargs = {}
        if ctor is not None:
            at = fields[k][0]
            call_args.append(self.mg.ctor_class(ctor.type_decl, ctor.ctor))
            data = [data_by_pos[p] for p in order if p != at]
            if data or at:
                call_args.append(py.tuple_(data))
            if at:
                kwargs["at"] = py.integer(at)
        targs = self.prog.type_args.get(call.id)
        if info.type_params and targs:
            kwargs["type_args"] = py.tuple_([self.mg.desc(t) for t in targs])
        request = py.call(py.dotted("rt.ParkCall"), call_args, **kwargs)
        return stmts + [py.return_(self.yield_(request), mark)]

    def shorthand(self, fi: A.FieldInit) -> py.Expr:
        r = self.prog.refs.get(fi.id)
        return py.name(self.locals[r.binder]) if isinstance(r, P.LocalRef) else py.name(self.lookup(fi.name))

    # ---- calls ----------------------------------------------------------------------------------

    def e_Call(self, e: A.Call):
        return self.call(e, tail=False)

    def callee_fn(self, e: A.Call):
        """-> (FnInfo, receiver expression or None) when the callee is a top-level function."""
        c = e.callee
        ref = self.prog.refs.get(c.id)
        if isinstance(ref, P.FnRef):
            return self.prog.fn_decls[ref.decl], None
        if isinstance(ref, P.MethodRef) and isinstance(c, A.FieldAccess):
            return self.prog.fn_decls[ref.decl], c.target
        return None, None

    def call(self, e: A.Call, tail: bool):
        info, receiver = self.callee_fn(e)
        if info is not None:
            arg_nodes = ([receiver] if receiver is not None else []) + list(e.args)
            s, xs = self.seq(arg_nodes)
            xs = self.lift_args(info, e, arg_nodes, xs)
            return self.apply(e, info, xs, s, tail)
        ref = self.prog.refs.get(e.callee.id)
        if isinstance(ref, P.CtorRef):
            s, xs = self.seq(list(e.args))
            out = py.call(self.mg.ctor_class(ref.type_decl, ref.ctor), xs)
            return (s + [py.return_(out, self.mark(e))], py.const(None)) if tail else (s, out)
        # a function value
        s, xs = self.seq([e.callee] + list(e.args))
        f, args = xs[0], xs[1:]
        value = py.call(f, args)
        if self.eff(e.id) == "tool":
            if tail:
                return s + [py.return_(py.call(py.dotted("rt.TailCall"), [f, py.tuple_(args)]), self.mark(e))], py.const(None)
            return self.yielded(value, e, s)
        if tail:
            return s + [py.return_(value, self.mark(e))], py.const(None)
        return s, value

    def yielded(self, value: py.Expr, e: A.Node, s: list):
        t = self.temp()
        s.append(py.assign(py.name(t), self.yield_(value), self.mark(e)))
        return s, py.name(t)

    def lift_args(self, info: P.FnInfo, e: A.Call, nodes: list, xs: list) -> list:
        """Wrap a pure function value passed where the callee (as instantiated) runs it as an
        effectful one: `rt.lift(f)`."""
        call_tool = self.eff(e.id) == "tool"
        out = []
        for i, (node, x) in enumerate(zip(nodes, xs)):
            slot = info.params[i][1] if i < len(info.params) else None
            wants_tool = isinstance(slot, P.TFun) and (
                slot.effect == "tool" or (i in info.poly_params and call_tool)
            )
            if wants_tool and self.arg_effect(node) == "pure":
                x = py.call(py.dotted("rt.lift"), [x])
            out.append(x)
        return out

    def arg_effect(self, node: A.Expr) -> str:
        if isinstance(node, A.Lambda):
            return self.eff(node.id)
        return self.fun_effect(self.prog.types.get(node.id))

    def apply(self, e: A.Node, info: P.FnInfo, xs: list, s: list, tail: bool):
        """A call of the top-level function `info` on already lowered arguments."""
        mark = self.mark(e)
        call_eff = self.eff(e.id) if isinstance(e, A.Call) else "pure"
        if info.is_tool:
            kwargs = {}
            targs = self.prog.type_args.get(e.id)
            if info.type_params and targs:
                kwargs["type_args"] = py.tuple_([self.mg.desc(t) for t in targs])
            request = py.call(py.dotted("rt.ToolCall"), [self.mg.spec_ref(info.decl), py.tuple_(xs)], **kwargs)
            if tail:
                return s + [py.return_(self.yield_(request), mark)], py.const(None)
            return self.yielded(request, e, s)
        bodyless = info.node is None or info.node.body is None
        effectful = call_eff == "tool" or info.effect == "tool"
        if bodyless and info.lang in LANG_REQUESTS:
            request = py.call(py.dotted(LANG_REQUESTS[info.lang]), xs)
            if tail:
                return s + [py.return_(self.yield_(request), mark)], py.const(None)
            return self.yielded(request, e, s)
        if bodyless and info.lang in INLINE_DIVISION and _nonzero_literal(xs[1]):
            # Python's `//` and `%` are Flow's (floor) division; only a zero divisor must fault
            value = py.binop(INLINE_DIVISION[info.lang], xs[0], xs[1])
            return (s + [py.return_(value, mark)], py.const(None)) if tail else (s, value)
        if bodyless and info.lang in ITERATE_FIRST and xs:
            xs = [_lazy(xs[0], info.lang)] + list(xs[1:])
        if bodyless and info.lang:
            fname = "rt.lang." + info.lang.replace(".", "_")
            if info.effect == "poly" and effectful:
                fname += "__tool"
            value = py.call(py.dotted(fname), xs)
            if effectful:
                if tail:
                    return s + [py.return_(self.yield_(value), mark)], py.const(None)
                return self.yielded(value, e, s)
            return (s + [py.return_(value, mark)], py.const(None)) if tail else (s, value)
        variant = "tool" if (info.effect == "poly" and effectful) else ("tool" if info.effect == "tool" else "pure")
        f = self.mg.fn_value(info.decl, variant)
        loop = self.ctx.loop
        if tail and loop is not None and isinstance(e, A.Call) and e.id in loop.self_calls:
            return s + self.continue_loop(loop, info.decl, xs, mark), py.const(None)
        if effectful:
            if tail:
                return s + [py.return_(py.call(py.dotted("rt.TailCall"), [f, py.tuple_(xs)]), mark)], py.const(None)
            return self.yielded(py.call(f, xs), e, s)
        value = py.call(f, xs)
        return (s + [py.return_(value, mark)], py.const(None)) if tail else (s, value)

    def continue_loop(self, loop: Loop, callee: str, xs: list, mark: str) -> list:
        targets = list(loop.params[callee])
        values = list(xs)
        if loop.group and callee != loop.decl:
            targets.insert(0, "_fn")
            values.insert(0, py.integer(loop.index[callee]))
        out: list = []
        if targets:
            if len(targets) == 1:
                out.append(py.assign(py.name(targets[0]), values[0], mark))
            else:
                tgt = py.tuple_([py.name(t) for t in targets]).with_changes(lpar=[], rpar=[])
                val = py.tuple_(values).with_changes(lpar=[], rpar=[])
                out.append(py.assign(tgt, val, mark))
        out.append(py.continue_(mark))
        return out


def _lang_call(x: py.Expr, fname: str) -> bool:
    f = x.func if isinstance(x, cst.Call) else None
    return (isinstance(f, cst.Attribute) and f.attr.value == fname and isinstance(f.value, cst.Attribute)
            and f.value.attr.value == "lang" and isinstance(f.value.value, cst.Name) and f.value.value.value == "rt")


def _lazy(x: py.Expr, consumer: str) -> py.Expr:
    """The first argument of an ITERATE_FIRST function, without the List it would build."""
    if _lang_call(x, "list_range"):
        return x.with_changes(func=py.dotted("rt.lang.iter_range"))
    if consumer == "text.join" and _lang_call(x, "list_map"):
        return x.with_changes(func=py.dotted("rt.lang.iter_map"))
    return x


def _nonzero_literal(x: py.Expr) -> bool:
    if isinstance(x, cst.UnaryOperation) and isinstance(x.operator, cst.Minus):
        x = x.expression
    return isinstance(x, cst.Integer) and int(x.value.replace("_", ""), 0) != 0


def _has_list(m: A.Match) -> bool:
    return any(isinstance(n, A.ListPattern) for arm in m.arms for n in A.walk(arm.pattern))


def _and(guards: list) -> Optional[py.Expr]:
    if not guards:
        return None
    g = guards[0]
    for x in guards[1:]:
        g = py.binop("and", g, x)
    return g


def _irrefutable(p) -> bool:
    return isinstance(p, cst.MatchAs) and p.pattern is None


def _generator_marker() -> cst.SimpleStatementLine:
    """An effectful function whose body never yields (it only tail-calls) must still be a
    generator: the runtime drives it like any other."""
    return py.simple(cst.Expr(value=cst.Yield()), "# (unreachable: makes this function a generator)")
