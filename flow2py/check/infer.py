"""Function bodies: names, types and effects, in one bidirectional walk.

`expr(st, e, expected, why)` (body_state.py) infers the type of `e`, using `expected` where it
helps (a lambda's parameters, an empty list, a constructor resolved through the expected type)
and then unifies the two, reporting a mismatch with `why`: the words and the place that made the
expectation ("the 2nd argument of `planner.next`"). Locals and lambdas get unification
variables; generic functions get fresh variables at each use. A failed unification reports once
and the node takes the poison type, which fits everything, so one mistake never cascades.

The effect of a body is accumulated while walking it: a call adds the effect of its callee as
instantiated there (a pass-through callback's effect is the effect of the argument given for it).
Matches, `let` patterns, unused bindings and tail positions are settled after the whole
function is walked, when its variables are solved (patterns.py, post.py).

The walk's state is one `BodyState` (body_state.py), passed to every function. Each expression
form has one function, found through `EXPR` below: names, values and field access
(infer_names.py), calls and operators (infer_calls.py), record literals and collections
(infer_data.py), and `?`, lambdas, `return`, blocks, `let`, `if` and `match` (infer_control.py);
patterns are patterns.py. The records the walk keeps are in infer_ctx.py.
"""

from __future__ import annotations

from flow2py.check import (
    codes,
    infer_calls,
    infer_control,
    infer_data,
    infer_names,
    infer_ops,
    missing_try,
    unused_meant,
)
from flow2py.check.body_state import BodyState, bind, expr, new_state, settle_conversions
from flow2py.check.declare import Declarations, ModEnv
from flow2py.check.infer_ctx import FnCtx, TailRoot, Why
from flow2py.check.typed import TOOL, CheckedProgram, FnInfo, TFun
from flow2py.diagnostics import Edit, Fix, Problems, Related
from flow2py.syntax import ast

# Node type -> the function giving the type of such an expression.
EXPR = {
    ast.Literal: infer_names.literal,
    ast.Name: infer_names.name,
    ast.FieldAccess: infer_names.field_access,
    ast.Call: infer_calls.call,
    ast.Unary: infer_ops.unary,
    ast.Binary: infer_ops.binary,
    ast.RecordLiteral: infer_data.record,
    ast.ListLiteral: infer_data.list_literal,
    ast.DictLiteral: infer_data.dict_literal,
    ast.TupleLiteral: infer_data.tuple_literal,
    ast.Try: infer_control.try_expr,
    ast.Lambda: infer_control.lambda_expr,
    ast.Return: infer_control.return_expr,
    ast.Block: infer_control.block,
    ast.If: infer_control.if_expr,
    ast.Match: infer_control.match_expr,
}


def program_state(decls: Declarations, prog: CheckedProgram, problems: Problems) -> BodyState:
    """The state for walking every function body of `prog`."""
    return new_state(decls, prog, problems, EXPR)


def check_fn(st: BodyState, env: ModEnv, fn: FnInfo) -> None:
    """Walk the top-level function `fn` of `env`: its per-function part of `st` is then ready
    for post.finish_fn."""
    st.env = env
    st.fn = fn
    st.scopes = [{}]
    st.fn_stack = []
    st.matches = []
    st.lets = []
    st.binders = []
    st.tail_roots = []
    st.try_lets = {}
    st.deferred = []
    st.converted = []
    st.converted_params = {}
    node = fn.node
    st.types.setdefault(node.id, TFun(tuple(t for _, t in fn.params), fn.result, fn.effect))
    for p, (_, t) in zip(node.params, fn.params):
        st.types[p.id] = t
    if node.body is None:
        st.effects[node.id] = fn.effect
        return
    result_span = node.result.span
    ctx = FnCtx(node, fn.result, fn.name, result_span)
    st.fn_stack = [ctx]
    seen: set = set()
    for p, (_, t) in zip(node.params, fn.params):
        if p.name in seen:
            continue  # E107 (declare.py): the first parameter of the name stays
        seen.add(p.name)
        bind(st, p.name, t, p, p.name_span if p.name_span.line else p.span)
    expr(st, node.body, fn.result, Why(f"the result type of `{fn.name}`", result_span))
    missing_try.settle(st)
    unused_meant.settle(st)
    settle_conversions(st)
    st.tail_roots.append(TailRoot(node.body, True))
    st.effects[node.id] = fn.effect
    if ctx.effect == TOOL and fn.effect != TOOL:
        _e301(st, fn, ctx)


def _e301(st: BodyState, fn: FnInfo, ctx: FnCtx) -> None:
    """Reported at the signature, which lacks the mark (where the fix goes, and where authors
    of the corpora of mistakes put the mistake, issue 13); the first call that reaches a Tool
    is the first note (with the `@tool` it calls, as rustc notes the async fn awaited), each
    other such call a note after it."""
    node = fn.node
    sig = node.name_span if node.name_span.line else node.span
    uses: list = []
    for u in ctx.tool_uses:
        if u not in uses:
            uses.append(u)
    related = [Related("this reaches a Tool", uses[0])] if uses else []
    tool = st.tool_callees.get(uses[0]) if uses else None
    if tool is not None:
        decl = tool.node.name_span if tool.node.name_span.line else tool.node.span
        related.append(Related(f"`{tool.name}` is a Tool (`@tool`), declared here", decl))
    related += [Related("this also reaches a Tool", u) for u in uses[1:]]
    st.problems.report(
        codes.UndeclaredEffect(sig, fn.name, pure=node.effect == "pure"),
        related=related,
        fixes=_e301_fixes(node, st.env.lm.ast.source or ""),
    )


def _e301_fixes(node: ast.FnDecl, source: str) -> tuple:
    """` !tool` after the result type (grammar.md: `-> type_atom [effect]`): safe, the one
    thing the signature lacks. A function its author marked `!pure` gets `!pure` -> `!tool`,
    not safe: the mark was a choice, and the body may be what is wrong. The callers this makes
    effectful are reported when the program is checked again (flow2py fix repeats until none is
    left)."""
    end = node.result.span
    if end.end <= 0 or end.end > len(source):
        return ()
    if node.effect == "pure":
        i = source.find("!pure", end.end)
        if i < 0 or source[end.end : i].strip():
            return ()
        return (
            Fix("replace `!pure` with `!tool`", (Edit(_at(end.file, source, i, i + 5), "!tool"),), False),
        )
    if node.effect is not None:
        return ()
    return (Fix("mark it `!tool`", (Edit(_at(end.file, source, end.end, end.end), " !tool"),), True),)


def _at(file: str, source: str, start: int, end: int) -> ast.Span:
    def lc(o):
        return source.count("\n", 0, o) + 1, o - (source.rfind("\n", 0, o) + 1) + 1

    (l1, c1), (l2, c2) = lc(start), lc(end)
    return ast.Span(file, l1, c1, l2, c2, start, end)
