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

The work is split along the forms it lowers, one mixin each, all sharing the state kept here:
statements, blocks and `if` (lower_stmts.py), `match` and patterns (lower_match.py), plain
expressions and operators (lower_exprs.py), lambdas and parkable task bodies (lower_lambda.py),
calls and tail calls (lower_calls.py); sinks, loops and the per-`def` context are in
lower_base.py.
"""
from __future__ import annotations

import libcst as cst

from flow2py.check import typed as P
from flow2py.codegen import py
from flow2py.codegen.lower_base import CodegenError, DefCtx, _atomic
from flow2py.codegen.lower_calls import CallsMixin
from flow2py.codegen.lower_exprs import ExprsMixin
from flow2py.codegen.lower_lambda import LambdaMixin
from flow2py.codegen.lower_match import MatchMixin
from flow2py.codegen.lower_stmts import StmtsMixin
from flow2py.codegen.names import Namer
from flow2py.syntax import ast as A


class Body(StmtsMixin, MatchMixin, ExprsMixin, LambdaMixin, CallsMixin):
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
        #: (function decl, Python name) when the function takes its type arguments (typeargs.py)
        self.targs: tuple[str, str] | None = None

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

    def bind(self, binder: int, flow_name: str, py_name: str | None = None) -> str:
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

    def desc(self, t) -> py.Expr:
        """A type descriptor here: the function's own type parameters read from `_targs`."""
        return self.mg.desc(t, self.targs)

    def type_args_of(self, node: A.Node) -> py.Expr:
        """The type arguments of a site (a call, or a function used as a value) as a tuple of
        descriptors, for a callee that takes them at run time."""
        targs = self.prog.type_args.get(node.id)
        if not targs:
            raise self.error(node, "a call of a generic function without type arguments")
        if self.targs is not None:
            owner = self.targs[0]
            own = tuple(P.TParam(n, owner) for n in self.prog.fn_decls[owner].type_params)
            if tuple(targs) == own:  # passed on as they came
                return py.name(self.targs[1])
        return py.tuple_([self.desc(t) for t in targs])

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
