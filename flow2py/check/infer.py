"""Function bodies: names, types and effects, in one bidirectional walk.

`expr(e, expected, why)` infers the type of `e`, using `expected` where it helps (a lambda's
parameters, an empty list, a constructor resolved through the expected type) and then unifies
the two, reporting a mismatch with `why`: the words and the place that made the expectation
("the 2nd argument of `planner.next`"). Locals and lambdas get unification variables; generic
functions get fresh variables at each use. A failed unification reports once and the node takes
the poison type, which fits everything, so one mistake never cascades.

The effect of a body is accumulated while walking it: a call adds the effect of its callee as
instantiated there (a pass-through callback's effect is the effect of the argument given for it).
Matches, `let` patterns, unused bindings and tail positions are settled after the whole
function is walked, when its variables are solved (patterns.py, post.py).

The walk is split by the forms it checks, one mixin each, all sharing the state kept here (the
scopes, the function stack, the side tables): names, values and field access (infer_names.py),
calls and operators (infer_calls.py), record literals and collections (infer_data.py), and
`?`, lambdas, `return`, blocks, `let`, `if` and `match` (infer_control.py). The records the walk
keeps (bindings, function contexts, `Why`) are in infer_ctx.py.
"""
from __future__ import annotations

from flow2py.check.declare import Declarations, ModEnv
from flow2py.check.infer_calls import CallsMixin
from flow2py.check.infer_control import ControlMixin
from flow2py.check.infer_ctx import Binding, FnCtx, Instantiation, Why
from flow2py.check.infer_data import DataMixin
from flow2py.check.infer_names import NamesMixin
from flow2py.check.typed import (
    TOOL,
    CheckedProgram,
    Effect,
    FnInfo,
    TError,
    TFun,
)
from flow2py.check.typeterms import join, show, unify
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.syntax import ast


class BodyChecker(NamesMixin, CallsMixin, DataMixin, ControlMixin):
    def __init__(self, decls: Declarations, prog: CheckedProgram, problems) -> None:
        self.d = decls
        self.prog = prog
        self.problems = problems
        self.types = prog.types
        self.refs = prog.refs
        self.effects = prog.effects
        self.type_args = prog.type_args
        # filled per function, consumed by post.py
        self.matches: list = []  # (Match node, scrutinee type)
        self.lets: list = []  # (pattern, type, kind)
        self.binders: list[Binding] = []
        self.tail_roots: list = []  # (expr, ctx_is_top)
        # whole program
        self.data_reqs: list = []  # (type, span, why, owner)
        self.insts: list[Instantiation] = []
        self._dispatch = {
            ast.Literal: self._literal, ast.Name: self._name, ast.FieldAccess: self._field,
            ast.Call: self._call, ast.RecordLiteral: self._record, ast.ListLiteral: self._list,
            ast.DictLiteral: self._dict, ast.TupleLiteral: self._tuple, ast.Unary: self._unary,
            ast.Binary: self._binary, ast.Try: self._try, ast.Lambda: self._lambda,
            ast.Block: self._block, ast.If: self._if, ast.Match: self._match, ast.Return: self._return,
        }
        from flow2py.check.patterns import PatternChecker

        self.pat = PatternChecker(self)

    # -- per function ---------------------------------------------------------------------

    def check_fn(self, env: ModEnv, fn: FnInfo) -> None:
        self.env = env
        self.fn = fn
        self.scopes: list[dict[str, Binding]] = [{}]
        self.matches = []
        self.lets = []
        self.binders = []
        self.tail_roots = []
        node = fn.node
        self.types.setdefault(node.id, TFun(tuple(t for _, t in fn.params), fn.result, fn.effect))
        for p, (_, t) in zip(node.params, fn.params):
            self.types[p.id] = t
        if node.body is None:
            self.effects[node.id] = fn.effect
            return
        result_span = node.result.span
        ctx = FnCtx(node, fn.result, fn.name, result_span)
        self.fn_stack = [ctx]
        seen: set = set()
        for p, (_, t) in zip(node.params, fn.params):
            if p.name in seen:
                continue  # E107 (declare.py): the first parameter of the name stays
            seen.add(p.name)
            self._bind(p.name, t, p, p.name_span if p.name_span.line else p.span)
        self.expr(node.body, fn.result, Why(f"the result type of `{fn.name}`", result_span))
        self.tail_roots.append((node.body, True))
        self.effects[node.id] = fn.effect
        if ctx.effect == TOOL and fn.effect != TOOL:
            end = node.result.span
            fixes = ()
            if end.end > 0:
                fixes = (Fix("mark it `!tool`", (Edit(ast.Span(end.file, end.end_line, end.end_column, end.end_line, end.end_column, end.end, end.end), " !tool"),), True),)
            related = [Related("this reaches a Tool", ctx.first_tool)] if ctx.first_tool else []
            self.problems.add("E301", f"`{fn.name}` may reach a Tool but is not marked `!tool`",
                              node.name_span if node.name_span.line else node.span, related=related, fixes=fixes)

    def expr(self, e, expected=None, why: Why | None = None):
        t = self._dispatch[type(e)](e, expected)
        if expected is not None:
            t = self.expect(t, expected, e, why)
        self.types[e.id] = t
        return t

    def expect(self, actual, expected, node, why: Why | None):
        if unify(actual, expected):
            return actual
        self.mismatch(actual, expected, node.span, why)
        return TError()

    def mismatch(self, actual, expected, span, why: Why | None) -> None:
        msg = f"type mismatch: expected `{self.show(expected)}`, found `{self.show(actual)}`"
        related = []
        if why is not None:
            msg += f" (expected because of {why.text})"
            if why.span is not None and why.span.line:
                related.append(Related(why.text, why.span))
        self.problems.add("E201", msg, span, related=related)

    def show(self, t) -> str:
        return show(t, self.d.name_of)

    @property
    def ctx(self) -> FnCtx:
        return self.fn_stack[-1]

    def add_effect(self, effect: Effect, span) -> None:
        ctx = self.ctx
        if effect == TOOL and ctx.first_tool is None:
            ctx.first_tool = span
        ctx.effect = join(ctx.effect, effect)

    # -- scopes ---------------------------------------------------------------------------

    def _bind(self, name: str, t, node, span, silent: bool = False) -> Binding:
        b = Binding(node.id, t, len(self.fn_stack), name, span, node, silent=silent)
        self.scopes[-1][name] = b
        self.binders.append(b)
        return b

    def _lookup(self, name: str) -> Binding | None:
        for scope in reversed(self.scopes):
            b = scope.get(name)
            if b is not None:
                return b
        return None

    def _use_local(self, b: Binding) -> None:
        b.used = True
        for ctx in self.fn_stack[b.depth:]:
            if b.binder not in ctx.captured:
                ctx.captured.add(b.binder)
                ctx.captures.append(b.binder)

    def _mark_used(self, decl: str) -> None:
        if decl != self.fn.decl:
            self.d.used.add(decl)
