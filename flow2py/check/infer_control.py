"""Control in a function body: `?` (against the enclosing function's Result), lambdas (their
own function context, captures and effect), `return`, blocks and their statements (`let`,
`guard`, `guard let`), `if` and `match` (arms checked against the first arm or the expected
type; exhaustiveness is settled later, post.py). Constructs: `try_expr`, `lambda_expr`,
`return_expr`, `block`, `if_expr`, `match_expr`."""

from __future__ import annotations

from flow2py.check import codes, missing_try
from flow2py.check import suggest as sg
from flow2py.check.body_state import (
    BodyState,
    add_effect,
    bind,
    expect,
    expr,
    lookup,
    mark_used,
    mismatch,
    rewrap_branches,
    show,
)
from flow2py.check.infer_calls import pure_slot, value_effect
from flow2py.check.infer_ctx import FnCtx, LetSite, MatchSite, PendingTry, TailRoot, Why
from flow2py.check.patterns import bind_pattern
from flow2py.check.typed import POLY, PURE, TOOL, FnRef, TCon, TError, TFun, TNever, TParam
from flow2py.check.typeterms import TVar, resolve, unifiable, unify
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.span import Span
from flow2py.syntax import ast


def try_expr(st: BodyState, e: ast.Try, expected):
    t = resolve(expr(st, e.operand))
    if type(t) in (TError, TNever):
        if e.convert is not None:
            expr(st, e.convert)
        return TError()
    if type(t) is TVar:
        unify(t, st.d.lang_con("Result", TVar(), TVar()))
        t = resolve(t)
    if not (st.d.is_lang(t, "Result") and len(t.args) == 2):
        st.problems.report(codes.TypeMismatch(e.operand.span, show(st, t), place="try"))
        if e.convert is not None:
            expr(st, e.convert)
        return TError()
    ok_t, err1 = t.args
    ctx = st.fn_stack[-1]
    res = resolve(ctx.result)
    if type(res) is TVar:
        if e.convert is None and isinstance(ctx.node, ast.Lambda):
            # decided by the lambda's body: `flow(x) = get(x)? + 1` is E408, not a mismatch
            ctx.pending_tries.append(PendingTry(e, err1))
            return ok_t
        unify(res, st.d.lang_con("Result", TVar(), TVar() if e.convert is not None else err1))
        res = resolve(res)
    if not (st.d.is_lang(res, "Result") and len(res.args) == 2):
        if type(res) is not TError:
            _e408(st, e, ctx, res)
        if e.convert is not None:
            expr(st, e.convert)
        return ok_t
    err2 = res.args[1]
    if e.convert is not None:
        expr(
            st,
            e.convert,
            TFun((err1,), err2, POLY),
            Why(f"the conversion of the error `{show(st, err1)}` to `{show(st, err2)}`"),
        )
        eff = value_effect(st, e.convert)
        st.effects[e.id] = eff
        add_effect(st, eff, e.convert.span)
    elif not unify(err1, err2):
        _e409(st, e, ctx, err1, err2)
    return ok_t


def _e408(st: BodyState, e, ctx: FnCtx, res) -> None:
    who = "this function" if ctx.name == "this function" else f"`{ctx.name}`"
    fn = None if ctx.name == "this function" else ctx.name
    st.problems.report(
        codes.TryOutsideResult(e.span, fn, show(st, res)),
        related=[Related(f"the result type of {who}", ctx.result_span)] if ctx.result_span.line else [],
    )


def _e409(st: BodyState, e, ctx: FnCtx, err1, err2) -> None:
    who = "this function" if ctx.name == "this function" else f"`{ctx.name}`"
    fn = None if ctx.name == "this function" else ctx.name
    related = [Related(f"the result type of {who}", ctx.result_span)] if ctx.result_span.line else []
    fixes = []
    conv = _converter(st, err1, err2)
    if conv is not None:
        # the module's one function from the one error to the other, most often written for this
        # `?` (`e ? why`): noted and offered, to review (changing the result type is the other
        # way); it is not also reported unused
        mark_used(st, conv.decl)
        related.append(
            Related(f"`{conv.name}` converts `{show(st, err1)}` to `{show(st, err2)}`", conv.node.span)
        )
        sp = e.span
        at = Span(sp.file, sp.end_line, sp.end_column, sp.end_line, sp.end_column, sp.end, sp.end)
        fixes.append(
            Fix(f"convert the error with `{conv.name}`: `? {conv.name}`", (Edit(at, f" {conv.name}"),), False)
        )
    st.problems.report(
        codes.TryErrorType(e.span, fn, show(st, err1), show(st, err2)), related=related, fixes=fixes
    )


def _converter(st: BodyState, err1, err2):
    """The one non-generic pure function of this module from `err1` to `err2`, or None."""
    hits = []
    for f in st.env.cm.fns.values():
        if f.type_params or len(f.params) != 1 or f.effect != PURE or f.decl == st.fn.decl:
            continue
        if f.node is None or not f.node.span.line or f.is_tool or f.lang:
            continue
        if unifiable(f.params[0][1], err1) and unifiable(f.result, err2):
            hits.append(f)
    return hits[0] if len(hits) == 1 else None


def _settle_tries(st: BodyState, ctx: FnCtx) -> None:
    """The `x?` of a lambda whose result was unknown at the `?`, now that the body set it."""
    for pending in ctx.pending_tries:
        e, err1 = pending.node, pending.err
        res = resolve(ctx.result)
        if type(res) is TVar:
            unify(res, st.d.lang_con("Result", TVar(), err1))
            continue
        if type(res) in (TError, TNever):
            continue
        if not (st.d.is_lang(res, "Result") and len(res.args) == 2):
            _e408(st, e, ctx, res)
        elif not unify(err1, res.args[1]):
            _e409(st, e, ctx, err1, res.args[1])
    ctx.pending_tries = []


# -- functions ----------------------------------------------------------------------------


def lambda_expr(st: BodyState, e: ast.Lambda, expected):
    exp = resolve(expected) if expected is not None else None
    exp_params = exp.params if type(exp) is TFun and len(exp.params) == len(e.params) else None
    ptypes = []
    for i, p in enumerate(e.params):
        if p.type is not None:
            t = st.d.resolve_texpr(p.type, st.env, _tparams(st), False, st.fn.decl)
            if exp_params is not None:
                unify(t, exp_params[i])
        elif exp_params is not None:
            t = exp_params[i]
        elif type(exp) is TFun:
            t = TError()  # the wrong number of parameters (E201 at the lambda): uses not reported
        else:
            t = TVar()
        ptypes.append(t)
        st.types[p.id] = t
    if e.result is not None:
        result = st.d.resolve_texpr(e.result, st.env, _tparams(st), False, st.fn.decl)
    elif type(exp) is TFun and exp_params is not None:
        result = exp.result
    else:
        result = TVar()
    ctx = FnCtx(e, result, "this function", e.result.span if e.result is not None else e.span)
    st.fn_stack.append(ctx)
    st.scopes.append({})
    seen: set = set()
    for p, t in zip(e.params, ptypes):
        if p.name in seen and p.name != "_":
            st.problems.report(
                codes.DuplicateDeclaration(p.name_span if p.name_span.line else p.span, p.name, "parameter")
            )
            continue
        seen.add(p.name)
        b = bind(st, p.name, t, p, p.name_span if p.name_span.line else p.span)
        if type(exp) is TFun and exp_params is None:
            b.used = True  # a parameter too many is part of the wrong shape, not unused
    expr(
        st,
        e.body,
        result,
        Why("the result type of this function", e.result.span if e.result is not None else None),
    )
    _settle_tries(st, ctx)
    st.scopes.pop()
    st.fn_stack.pop()
    st.fn_stack[-1].lambda_tool_uses.extend(ctx.tool_uses)
    effect = TOOL if e.effect == "tool" else ctx.effect  # e.effect: the mark as written, `!tool`
    st.effects[e.id] = effect
    st.prog.captures[e.id] = ctx.captures
    st.tail_roots.append(TailRoot(e.body, False))
    if type(exp) is TFun and exp_params is None:  # shown as written: `(_, _) -> _`
        ptypes = [TVar() if type(t) is TError else t for t in ptypes]
        result = TVar() if type(resolve(result)) is TError else result
    return TFun(tuple(ptypes), result, effect)


def _tparams(st: BodyState) -> dict:
    return {p: TParam(p, st.fn.decl) for p in st.fn.type_params}


def return_expr(st: BodyState, e: ast.Return, expected):
    ctx = st.fn_stack[-1]
    if e.value is not None:
        expr(
            st,
            e.value,
            ctx.result,
            Why(
                f"the result type of `{ctx.name}`"
                if ctx.name != "this function"
                else "the result type of this function",
                ctx.result_span,
            ),
        )
        st.tail_roots.append(TailRoot(e.value, len(st.fn_stack) == 1))
    else:
        if not unify(st.d.unit(), ctx.result):
            mismatch(
                st, st.d.unit(), ctx.result, e.span, Why(f"the result type of `{ctx.name}`", ctx.result_span)
            )
    return TNever()


# -- blocks and control -------------------------------------------------------------------


def _placed(outer, fallback: str) -> Why:
    """The reason a part of a block, `if` or `match` must have the expected type: what fixed it
    when that has a place to show (the result type in the signature, a `let` annotation), else
    `fallback`."""
    if outer is not None and outer.span is not None and outer.span.line:
        return outer
    return Why(fallback)


def _implicit_it(st: BodyState, e: ast.Block, expected):
    """`{ it.active }` where a function of one value is expected, `it` naming nothing: Kotlin's
    lambda with its implicit parameter. One E101, at the first `it`, with the fix `flow(it) = `
    before the block (safe unless a lambda or block inside it uses `it` too: whose it is then a
    choice); the block is checked as that lambda, so its other uses of `it` are not reported."""
    x = resolve(expected) if expected is not None else None
    if type(x) is not TFun or len(x.params) != 1 or not e.span.line or e.span.end <= e.span.start:
        return None
    env = st.env
    b = lookup(st, "it")
    # bound only by an enclosing block this rule read as a lambda: Kotlin's `it` is then this one's
    if (b is not None and type(b.node) is not ast.Name) or "it" in env.lm.aliases or "it" in env.cm.fns:
        return None
    uses = [n for n in ast.walk(e) if type(n) is ast.Name and n.name == "it" and n.span.line]
    if not uses or (b is not None and uses[0] is b.node):
        return None
    inner = [a for n in ast.walk(e) if type(n) is ast.Call for a in n.args if type(a) is ast.Block]
    inner += [n for n in ast.walk(e) if type(n) is ast.Lambda]
    safe = not any(type(n) is ast.Name and n.name == "it" for a in inner for n in ast.walk(a))
    sp = e.span
    at = ast.Span(sp.file, sp.line, sp.column, sp.line, sp.column, sp.start, sp.start)
    note = "Flow has no implicit `it`: a lambda names its parameter, `flow(it) = ...`"
    st.problems.report(
        codes.UnknownName(uses[0].span, "it", "name", suggestion=sg.Suggestion("it", (), note)),
        fixes=[Fix("write `flow(it) = ` before the block", (Edit(at, "flow(it) = "),), safe)],
    )
    ctx = FnCtx(e, x.result, "this function", e.span)
    st.fn_stack.append(ctx)
    st.scopes.append({})
    bind(st, "it", x.params[0], uses[0], uses[0].span)
    st.why_in = Why("the result type of this function")
    block(st, e, x.result)
    _settle_tries(st, ctx)
    st.scopes.pop()
    st.fn_stack.pop()
    st.fn_stack[-1].lambda_tool_uses.extend(ctx.tool_uses)
    st.effects[e.id] = ctx.effect
    return TFun((x.params[0],), x.result, ctx.effect)


def block(st: BodyState, e: ast.Block, expected):
    lam = _implicit_it(st, e, expected)
    if lam is not None:
        return lam
    outer = st.why_in
    st.scopes.append({})
    result = st.d.unit()
    n = len(e.stmts)
    for i, s in enumerate(e.stmts):
        last = i == n - 1
        if isinstance(s, ast.ExprStmt):
            if last and _dropped_value(st, s.expr, expected, outer):
                result = expected
            elif last:
                result = expr(
                    st,
                    s.expr,
                    expected,
                    _placed(outer, "the value of this block") if expected is not None else None,
                )
                if expected is not None:
                    result = expected
            elif _statement(st, s):
                result = TNever()
        elif isinstance(s, ast.Let):
            _let(st, s)
        elif isinstance(s, ast.Guard):
            expr(st, s.cond, st.d.lang_con("Bool"), Why("the condition of `guard`"))
            _else_leaves(st, s.else_)
        elif isinstance(s, ast.GuardLet):
            vt = expr(st, s.value)
            _else_leaves(st, s.else_)
            bind_pattern(st, s.pattern, vt)
        if last and not isinstance(s, ast.ExprStmt) and expected is not None:
            result = expect(
                st,
                st.d.unit(),
                expected,
                e,
                Why("the value of this block (its last statement is not an expression, so it is Unit)"),
            )
    st.scopes.pop()
    if n == 0 and expected is not None:
        return _empty_block(st, e, expected)
    return result


def _dropped_value(st: BodyState, e, expected, outer) -> bool:
    """A call whose value is not Unit as the last expression of a block whose value must be
    Unit (`xs.each(flow(m) = { send(m) })`, a Tool's Result left over): the value is what to
    drop, as for a statement (E403), with the safe fix `let _ = ` before it (the block then ends
    with a `let`, so its value is Unit). Whether it was reported (or fits)."""
    if expected is None or type(e) is not ast.Call or not e.span.line or e.span.end <= e.span.start:
        return False
    x = resolve(expected)
    if type(x) is not TCon or not st.d.is_lang(x, "Unit"):
        return False
    t = resolve(expr(st, e))
    if type(t) in (TError, TNever) or unify(t, x):
        return True
    sp = e.span
    at = ast.Span(sp.file, sp.line, sp.column, sp.line, sp.column, sp.start, sp.start)
    fix = Fix("discard the value with `let _ = `", (Edit(at, "let _ = "),), True)
    mismatch(st, t, expected, sp, _placed(outer, "the value of this block"), fixes=[fix])
    return True


def _empty_block(st: BodyState, e: ast.Block, expected):
    """`{}` where a value is expected: Unit, reported once (its type then unknown). Where a Dict
    is expected it is another language's empty dictionary: Flow's `[:]`, a safe fix."""
    x = resolve(expected)
    why = st.why_in or Why("the value of this empty block")
    info = st.d.lang_types.get("Dict")
    if type(x) is TCon and info is not None and x.decl == info.decl and e.span.end > e.span.start:
        mismatch(
            st,
            st.d.unit(),
            expected,
            e.span,
            why,
            fixes=[Fix("write `[:]`, Flow's empty dictionary", (Edit(e.span, "[:]"),), True)],
        )
        return TError()
    t = expect(st, st.d.unit(), expected, e, Why("the value of this empty block"))
    return t


def _statement(st: BodyState, s: ast.ExprStmt) -> bool:
    """An expression statement before a block's last: its value must be Unit (E403). Whether it
    never finishes (`return`, or a call of a function that never returns)."""
    t = resolve(expr(st, s.expr))
    if type(t) is TVar:
        unify(t, st.d.unit())
    elif type(t) not in (TError, TNever) and not unify(t, st.d.unit()):
        sp = s.expr.span
        fix = Fix(
            "discard the value with `let _ = `",
            (
                Edit(
                    ast.Span(sp.file, sp.line, sp.column, sp.line, sp.column, sp.start, sp.start), "let _ = "
                ),
            ),
            True,
        )
        st.problems.report(
            codes.NonUnitStatement(sp, show(st, t)),
            fixes=[fix] if sp.end > sp.start else [],
        )
    return type(t) is TNever


def _else_leaves(st: BodyState, blk: ast.Block) -> None:
    """E406 for a `guard`'s `else` block that can finish. When its value is of the function's
    result type, `return` is what is missing: the report is at the value, with the safe fix
    that writes `return` before it."""
    t = resolve(expr(st, blk))
    if type(t) in (TNever, TError):
        return
    last = blk.stmts[-1] if blk.stmts else None
    result = resolve(st.fn_stack[-1].result)
    if (
        isinstance(last, ast.ExprStmt)
        and type(t) is TCon
        and type(result) is TCon
        and t.decl == result.decl
        and unify(t, result)
    ):
        sp = last.expr.span
        at = ast.Span(sp.file, sp.line, sp.column, sp.line, sp.column, sp.start, sp.start)
        fix = Fix("write `return` before it", (Edit(at, "return "),), True)
        st.problems.report(codes.GuardMustLeave(sp, value=True), fixes=[fix])
        return
    st.problems.report(codes.GuardMustLeave(blk.span))


def _let(st: BodyState, s: ast.Let) -> None:
    if s.type is not None:
        at = st.d.resolve_texpr(s.type, st.env, _tparams(st), False, st.fn.decl)
        expr(st, s.value, at, Why("the annotation of this `let`", s.type.span))
        pure_slot(st, s.value, at)
        t = at
        bind_pattern(st, s.pattern, t)
    else:
        t = expr(st, s.value)
        bind_pattern(st, s.pattern, t)
        missing_try.note_let(st, s, t)
    st.lets.append(LetSite(s.pattern, t))


def if_expr(st: BodyState, e: ast.If, expected):
    outer = st.why_in
    expr(st, e.cond, st.d.lang_con("Bool"), Why("the condition of `if`"))
    if e.else_ is None:
        t = resolve(expr(st, e.then))
        if type(t) is TVar:
            unify(t, st.d.unit())
        elif type(t) is TError:
            return t  # the block's value is not known (a hole, a mistake): nor is the `if`'s
        elif type(t) is not TNever and not unify(t, st.d.unit()):
            st.problems.report(codes.IfWithoutElse(e.then.span, show(st, t)))
            # the author meant a value here (the `else` is what is missing): its type is not
            # known, so nothing that uses it is reported as well
            return TError()
        return st.d.unit()
    if expected is not None:
        why = _placed(outer, "the expected type of this `if`")
        expr(st, e.then, expected, why)
        expr(st, e.else_, expected, why)
        return expected
    t1 = expr(st, e.then)
    r1 = resolve(t1)
    if type(r1) is TNever:
        return expr(st, e.else_)
    before = len(st.problems.items)
    expr(st, e.else_, t1, Why("the other branch of this `if`", e.then.span))
    wrapped = rewrap_branches(st, before, [e.then], e.else_, t1, "the other branch of this `if`")
    return t1 if wrapped is None else wrapped


def _result_origin(st: BodyState, scrutinee) -> Related | None:
    """A match on a call of a function: where its result type is declared, the type the names
    its arms bind come from (E201's and E205's note on their uses)."""
    if type(scrutinee) is not ast.Call:
        return None
    ref = st.refs.get(scrutinee.callee.id)
    fn = st.d.fn_decls.get(ref.decl) if type(ref) is FnRef else None
    res = getattr(fn.node, "result", None) if fn is not None else None
    if res is None or not res.span.line:
        return None
    return Related(f"the result type of `{fn.name}`, which the arms match", res.span)


def match_expr(st: BodyState, e: ast.Match, expected):
    outer = st.why_in
    scrutinee = expr(st, e.scrutinee)
    origin = _result_origin(st, e.scrutinee)
    result = expected
    seen_value = expected is not None
    named = [
        a.pattern.name for a in e.arms if type(a.pattern) is ast.CtorPattern and a.pattern.module is None
    ]
    typed = []  # the arm bodies that gave the result type, before an expected type is known
    for arm in e.arms:
        if type(arm.pattern) is ast.CtorPattern:
            # the constructors the other arms name: a constructor of another type in this arm most
            # likely meant the one of the scrutinee's type they leave (patterns.py)
            others = list(named)
            if arm.pattern.module is None:
                others.remove(arm.pattern.name)
            st.arm_siblings[arm.pattern.id] = frozenset(others)
        st.scopes.append({})
        bind_pattern(st, arm.pattern, scrutinee)
        if origin is not None and type(arm.pattern) is ast.CtorPattern:
            for sub in arm.pattern.args or ():
                if type(sub) is ast.BindPattern:
                    st.origins.setdefault(sub.id, origin)
        if arm.guard is not None:
            expr(st, arm.guard, st.d.lang_con("Bool"), Why("an arm's `if` guard"))
        if result is None:
            t = expr(st, arm.body)
            if type(resolve(t)) is not TNever:
                result = t
                typed.append(arm.body)
        elif seen_value:
            expr(st, arm.body, result, _placed(outer, "the expected type of this match"))
        else:
            before = len(st.problems.items)
            t = resolve(expr(st, arm.body, result, Why("the first arm of this match", e.arms[0].body.span)))
            wrapped = rewrap_branches(st, before, typed, arm.body, result, "a later arm of this match")
            if wrapped is not None:
                result, seen_value = wrapped, True
            elif type(t) not in (TNever, TError):
                typed.append(arm.body)
        st.scopes.pop()
    st.matches.append(MatchSite(e, scrutinee))
    if result is None:
        return TNever() if e.arms else TVar()
    return result
