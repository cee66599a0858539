"""Control in a function body: `?` (against the enclosing function's Result), lambdas (their
own function context, captures and effect), `return`, blocks and their statements (`let`,
`guard`, `guard let`), `if` and `match` (arms checked against the first arm or the expected
type; exhaustiveness is settled later, post.py). Part of `infer.BodyChecker`."""
from __future__ import annotations

from flow2py.check.infer_ctx import FnCtx, Why
from flow2py.check.typed import POLY, TOOL, TError, TFun, TNever, TParam
from flow2py.check.typeterms import TVar, resolve, unify
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.syntax import ast


class ControlMixin:
    def _try(self, e: ast.Try, expected):
        t = resolve(self.expr(e.operand))
        if type(t) in (TError, TNever):
            if e.convert is not None:
                self.expr(e.convert)
            return TError()
        if type(t) is TVar:
            unify(t, self.d.lang_con("Result", TVar(), TVar()))
            t = resolve(t)
        if not (self.d.is_lang(t, "Result") and len(t.args) == 2):
            self.problems.add("E201", f"`?` works on a Result, found `{self.show(t)}`", e.operand.span)
            if e.convert is not None:
                self.expr(e.convert)
            return TError()
        ok_t, err1 = t.args
        ctx = self.ctx
        res = resolve(ctx.result)
        if type(res) is TVar:
            if e.convert is None and isinstance(ctx.node, ast.Lambda):
                # decided by the lambda's body: `flow(x) = get(x)? + 1` is E408, not a mismatch
                ctx.pending_tries.append((e, err1))
                return ok_t
            unify(res, self.d.lang_con("Result", TVar(), TVar() if e.convert is not None else err1))
            res = resolve(res)
        if not (self.d.is_lang(res, "Result") and len(res.args) == 2):
            if type(res) is not TError:
                self._e408(e, ctx, res)
            if e.convert is not None:
                self.expr(e.convert)
            return ok_t
        err2 = res.args[1]
        if e.convert is not None:
            self.expr(e.convert, TFun((err1,), err2, POLY), Why(f"the conversion of the error `{self.show(err1)}` to `{self.show(err2)}`"))
            eff = self.value_effect(e.convert)
            self.effects[e.id] = eff
            self.add_effect(eff, e.convert.span)
        elif not unify(err1, err2):
            self._e409(e, ctx, err1, err2)
        return ok_t

    def _e408(self, e, ctx, res) -> None:
        who = "this function" if ctx.name == "this function" else f"`{ctx.name}`"
        self.problems.add("E408", f"`?` returns early with an error, but {who} returns `{self.show(res)}`, not a Result", e.span,
                          related=[Related(f"the result type of {who}", ctx.result_span)] if ctx.result_span.line else [])

    def _e409(self, e, ctx, err1, err2) -> None:
        who = "this function" if ctx.name == "this function" else f"`{ctx.name}`"
        self.problems.add("E409", f"`?` here would return the error `{self.show(err1)}`, but {who} returns errors of type `{self.show(err2)}`: convert it with `? f`", e.span,
                          related=[Related(f"the result type of {who}", ctx.result_span)] if ctx.result_span.line else [])

    def _settle_tries(self, ctx) -> None:
        """The `x?` of a lambda whose result was unknown at the `?`, now that the body set it."""
        for e, err1 in ctx.pending_tries:
            res = resolve(ctx.result)
            if type(res) is TVar:
                unify(res, self.d.lang_con("Result", TVar(), err1))
                continue
            if type(res) in (TError, TNever):
                continue
            if not (self.d.is_lang(res, "Result") and len(res.args) == 2):
                self._e408(e, ctx, res)
            elif not unify(err1, res.args[1]):
                self._e409(e, ctx, err1, res.args[1])
        ctx.pending_tries = []

    # -- functions ------------------------------------------------------------------------

    def _lambda(self, e: ast.Lambda, expected):
        exp = resolve(expected) if expected is not None else None
        exp_params = exp.params if type(exp) is TFun and len(exp.params) == len(e.params) else None
        ptypes = []
        for i, p in enumerate(e.params):
            if p.type is not None:
                t = self.d.resolve_texpr(p.type, self.env, self._tparams(), False, self.fn.decl)
                if exp_params is not None:
                    unify(t, exp_params[i])
            elif exp_params is not None:
                t = exp_params[i]
            else:
                t = TVar()
            ptypes.append(t)
            self.types[p.id] = t
        if e.result is not None:
            result = self.d.resolve_texpr(e.result, self.env, self._tparams(), False, self.fn.decl)
        elif type(exp) is TFun:
            result = exp.result
        else:
            result = TVar()
        ctx = FnCtx(e, result, "this function", e.result.span if e.result is not None else e.span)
        self.fn_stack.append(ctx)
        self.scopes.append({})
        seen: set = set()
        for p, t in zip(e.params, ptypes):
            if p.name in seen and p.name != "_":
                self.problems.add("E107", f"parameter `{p.name}` is declared twice", p.name_span if p.name_span.line else p.span)
                continue
            seen.add(p.name)
            self._bind(p.name, t, p, p.name_span if p.name_span.line else p.span)
        self.expr(e.body, result, Why("the result type of this function", e.result.span if e.result is not None else None))
        self._settle_tries(ctx)
        self.scopes.pop()
        self.fn_stack.pop()
        effect = TOOL if e.effect == "tool" else ctx.effect
        self.effects[e.id] = effect
        self.prog.captures[e.id] = ctx.captures
        self.tail_roots.append((e.body, False))
        # a lambda's captures are uses inside the enclosing function too
        for b in ctx.captures:
            pass
        return TFun(tuple(ptypes), result, effect)

    def _tparams(self) -> dict:
        return {p: TParam(p, self.fn.decl) for p in self.fn.type_params}

    def _return(self, e: ast.Return, expected):
        ctx = self.ctx
        if e.value is not None:
            self.expr(e.value, ctx.result, Why(f"the result type of `{ctx.name}`" if ctx.name != "this function" else "the result type of this function", ctx.result_span))
            self.tail_roots.append((e.value, len(self.fn_stack) == 1))
        else:
            if not unify(self.d.unit(), ctx.result):
                self.mismatch(self.d.unit(), ctx.result, e.span, Why(f"the result type of `{ctx.name}`", ctx.result_span))
        return TNever()

    # -- blocks and control ---------------------------------------------------------------

    def _block(self, e: ast.Block, expected):
        self.scopes.append({})
        result = self.d.unit()
        n = len(e.stmts)
        for i, s in enumerate(e.stmts):
            last = i == n - 1
            if isinstance(s, ast.ExprStmt):
                if last:
                    result = self.expr(s.expr, expected, Why("the value of this block") if expected is not None else None)
                    if expected is not None:
                        result = expected
                else:
                    t = resolve(self.expr(s.expr))
                    if type(t) is TVar:
                        unify(t, self.d.unit())
                    elif type(t) not in (TError, TNever) and not unify(t, self.d.unit()):
                        sp = s.expr.span
                        fix = Fix("discard the value with `let _ = `", (Edit(ast.Span(sp.file, sp.line, sp.column, sp.line, sp.column, sp.start, sp.start), "let _ = "),), True)
                        self.problems.add("E403", f"this statement's value is `{self.show(t)}`, not Unit: use it, or discard it with `let _ = `", sp,
                                          fixes=[fix] if sp.end > sp.start else [])
                    if type(t) is TNever:
                        result = TNever()
            elif isinstance(s, ast.Let):
                self._let(s)
            elif isinstance(s, ast.Guard):
                self.expr(s.cond, self.d.lang_con("Bool"), Why("the condition of `guard`"))
                self._else_leaves(s.else_)
            elif isinstance(s, ast.GuardLet):
                vt = self.expr(s.value)
                self._else_leaves(s.else_)
                self.pat.bind(s.pattern, vt, self)
            if last and not isinstance(s, ast.ExprStmt) and expected is not None:
                result = self.expect(self.d.unit(), expected, e, Why("the value of this block (its last statement is not an expression, so it is Unit)"))
        self.scopes.pop()
        if n == 0 and expected is not None:
            self.expect(self.d.unit(), expected, e, Why("the value of this empty block"))
        return result

    def _else_leaves(self, block: ast.Block) -> None:
        t = resolve(self.expr(block))
        if type(t) not in (TNever, TError):
            self.problems.add("E406", "the `else` block of `guard` must leave: end it with `return ...`", block.span)

    def _let(self, s: ast.Let) -> None:
        if s.type is not None:
            at = self.d.resolve_texpr(s.type, self.env, self._tparams(), False, self.fn.decl)
            self.expr(s.value, at, Why("the annotation of this `let`", s.type.span))
            self._pure_slot(s.value, at)
            t = at
        else:
            t = self.expr(s.value)
        self.pat.bind(s.pattern, t, self)
        self.lets.append((s.pattern, t, "let"))

    def _if(self, e: ast.If, expected):
        self.expr(e.cond, self.d.lang_con("Bool"), Why("the condition of `if`"))
        if e.else_ is None:
            t = resolve(self.expr(e.then))
            if type(t) is TVar:
                unify(t, self.d.unit())
            elif type(t) not in (TError, TNever) and not unify(t, self.d.unit()):
                self.problems.add("E407", f"an `if` without `else` must be Unit, but this block's value is `{self.show(t)}`: add an `else`", e.then.span)
            return self.d.unit()
        if expected is not None:
            why = Why("the expected type of this `if`")
            self.expr(e.then, expected, why)
            self.expr(e.else_, expected, why)
            return expected
        t1 = self.expr(e.then)
        r1 = resolve(t1)
        if type(r1) is TNever:
            return self.expr(e.else_)
        self.expr(e.else_, t1, Why("the other branch of this `if`", e.then.span))
        return t1

    def _match(self, e: ast.Match, expected):
        st = self.expr(e.scrutinee)
        result = expected
        seen_value = expected is not None
        for i, arm in enumerate(e.arms):
            self.scopes.append({})
            self.pat.bind(arm.pattern, st, self)
            if arm.guard is not None:
                self.expr(arm.guard, self.d.lang_con("Bool"), Why("an arm's `if` guard"))
            if result is None:
                t = self.expr(arm.body)
                if type(resolve(t)) is not TNever:
                    result = t
            else:
                why = Why("the expected type of this match") if seen_value else Why("the first arm of this match", e.arms[0].body.span)
                self.expr(arm.body, result, why)
            self.scopes.pop()
        self.matches.append((e, st))
        if result is None:
            return TNever() if e.arms else TVar()
        return result
