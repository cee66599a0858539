"""Lowering Flow function bodies to Python statements.

The shape follows Hy: every expression lowers to `(statements, expression)`. The statements run
first and hold whatever cannot sit inside a Python expression: an effectful call
(`_t1 = yield f(x)`), a Tool call, an `if`/`match` used as a value, a `?` that may return early.
Evaluation is strictly left to right, so when a later operand needs statements, every earlier
operand that is not a plain name or constant is hoisted into a temporary first (`seq`).

Control forms lower straight into a *sink*, which says what to do with the value: `return` it
(tail position), assign it to a variable (a `let` or a temporary), or drop it (a statement).
Tail calls are decided here, in the `return` sink:

* a pure self tail call rebinds the parameters and `continue`s the function's `while True:`;
* a pure tail call inside a strongly connected group of pure functions sets the group's
  selector and that function's parameters and `continue`s the group's merged loop;
* an effectful tail call returns `rt.TailCall(f, (args,))`, which the runtime turns into a frame
  replacement (and, at an eligible site, a checkpoint); a Tool or @lang callee is just
  `return (yield ...)`.

The walk's whole state is one `lower_base.Body` (the module, the program, the names, the `def`
being emitted), passed explicitly to one function per construct. The functions live with the
forms they lower: blocks, statements and `if` (lower_stmts.py), `match` and patterns
(lower_match.py), plain expressions and operators (lower_exprs.py), lambdas and parkable task
bodies (lower_lambda.py), calls and tail calls (lower_calls.py); the state, sinks, loops and the
per-`def` context are in lower_base.py. The tables filled below are the only dispatch: they send
each node type to its function (`EXPRS`: lowered to a value, read by `lower_base.expr`;
`INTO_SINK`: lowered straight into a sink, read by `lower_base.to_sink`; `STMTS`: a statement of
a block).
"""

from __future__ import annotations

from flow2py.codegen import lower_calls as C
from flow2py.codegen import lower_exprs as X
from flow2py.codegen import lower_lambda as L
from flow2py.codegen import lower_match as M
from flow2py.codegen import lower_stmts as S
from flow2py.codegen.lower_base import EXPRS, INTO_SINK, STMTS, Body, CodegenError, new_body, to_sink
from flow2py.syntax import ast as A

__all__ = ["Body", "CodegenError", "new_body", "to_sink"]

EXPRS.update(
    {
        A.Literal: X.literal,
        A.Name: X.name,
        A.FieldAccess: X.field_access,
        A.Call: C.call_value,
        A.RecordLiteral: X.record_literal,
        A.ListLiteral: X.list_literal,
        A.DictLiteral: X.dict_literal,
        A.TupleLiteral: X.tuple_literal,
        A.Unary: X.unary,
        A.Binary: X.binary,
        A.Try: X.try_,
        A.Lambda: L.lambda_,
        A.Block: X.via_sink,
        A.If: X.via_sink,
        A.Match: X.via_sink,
        A.Return: X.return_value,
    }
)
INTO_SINK.update(
    {
        A.Block: S.block,
        A.If: S.if_,
        A.Match: M.match,
        A.Return: X.return_into,
        A.Call: C.call_into,
    }
)
STMTS.update({A.ExprStmt: S.expr_stmt, A.Let: S.let, A.Guard: S.guard, A.GuardLet: S.guard_let})
