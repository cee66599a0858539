"""Calls and operators in a function body. A call resolves its callee (a top-level function, a
method through the receiver's home module, a record field holding a function, a constructor, or
any function value), checks each argument against the parameter as instantiated there, and adds
the callee's effect (a pass-through parameter's effect is that of the argument given for it).
An operator is a call of the function its operand type's home module declares for it (or the
generic one). Part of `infer.BodyChecker`."""
from __future__ import annotations

from flow2py.check.declare import ordinal, suggest
from flow2py.check.infer_ctx import QUALIFIED_ERROR, CtorHit, FnHit, LazyWhy, Why
from flow2py.check.typed import (
    POLY,
    PURE,
    TOOL,
    CtorInfo,
    CtorRef,
    Effect,
    FnInfo,
    FnRef,
    MethodRef,
    ModuleRef,
    TCon,
    TError,
    TFun,
    TNever,
    TTuple,
    TypeInfo,
)
from flow2py.check.typeterms import (
    TVar,
    fun_effects,
    has_effect,
    join,
    resolve,
    subst,
    unify,
)
from flow2py.diagnostics import Related
from flow2py.syntax import ast


def _arg_why(i: int, label: str) -> str:
    return f"the {ordinal(i)} argument of `{label}`"


def _right_why(op: str, left: str) -> str:
    return f"the right operand of `{op}` (its left operand is `{left}`)"


def _ground(t) -> bool:
    """Whether `t` holds no type variable, solved or not (so showing it later shows the same)."""
    stack = [t]
    while stack:
        x = stack.pop()
        k = type(x)
        if k is TCon:
            stack.extend(x.args)
        elif k is TVar:
            return False
        elif k is TTuple:
            stack.extend(x.items)
        elif k is TFun:
            stack.extend(x.params)
            stack.append(x.result)
    return True


class CallsMixin:
    def _call(self, e: ast.Call, expected):
        callee = e.callee
        hit = None
        receiver = None
        if isinstance(callee, ast.Name) and self._lookup(callee.name) is None:
            hit = self.resolve_value(callee.name, expected, callee.span)
            if hit is None:
                return self._args_poison(e)
        elif isinstance(callee, ast.FieldAccess):
            q = self.qualified(callee)
            if q is not None:
                if q is QUALIFIED_ERROR:
                    return self._args_poison(e)
                hit = q
            else:
                tt = resolve(self.expr(callee.target))
                field_hit = self._record_field_fn(tt, callee.name)
                if field_hit:
                    ft = self.read_field(callee, tt)
                    self.types[callee.id] = ft
                    return self._call_value(e, ft)
                fn = self._method(callee, tt)
                if fn is None:
                    return self._args_poison(e)
                hit = FnHit(fn)
                receiver = callee.target
        if hit is None:
            ft = self.expr(callee)
            return self._call_value(e, ft)
        if type(hit) is CtorHit:
            return self._call_ctor(e, hit.info, hit.ctor, expected)
        return self._call_fn(e, hit.fn, receiver)

    def _record_field_fn(self, tt, name: str) -> bool:
        if type(tt) is TCon:
            info = self.d.type_decls.get(tt.decl)
            if info is not None and info.kind == "record":
                return any(f.name == name for f in info.fields)
        return False

    def _method(self, callee: ast.FieldAccess, tt) -> FnInfo | None:
        """`x.f(...)`: the `f` of the home module of x's type; when that module declares no `f`
        (or x's type has no home module: tuples, functions), the generic std function `f` whose
        first parameter is a type parameter (std/data.flow: `to_text`, `compare`, ...), the same
        rule as the generic operators."""
        if type(tt) in (TError, TNever):
            return None
        if type(tt) is TVar:
            self.problems.add("E212", f"the type of this value must be known to call `.{callee.name}(...)`: annotate it", callee.target.span)
            return None
        home = tt.decl.split("::")[0] if type(tt) is TCon else None
        menv = self.d.envs.get(home) if home else None
        fn = menv.cm.fns.get(callee.name) if menv else None
        if fn is not None:
            if not fn.pub and home != self.env.key:
                self.problems.add("E109", f"`{callee.name}` of module {home} is private to its module", callee.span)
                return None
            if not fn.params:
                self.problems.add("E210", f"`{callee.name}` takes no arguments, so it cannot be called as a method", callee.span)
                return None
            self.refs[callee.id] = MethodRef(fn.decl)
            return fn
        fn = self.d.generic_fns.get(callee.name)
        if fn is not None:
            self.refs[callee.id] = MethodRef(fn.decl)
            return fn
        cands = [n for n, f in menv.cm.fns.items() if f.pub or home == self.env.key] if menv else []
        s = suggest(callee.name, cands + list(self.d.generic_fns))
        related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", callee.span)] if s else []
        if home:
            msg = f"no function `{callee.name}` for `{self.show(tt)}` in its module {home}"
        else:
            msg = f"no function `{callee.name}` for `{self.show(tt)}`: its type has no home module, so only generic std functions apply"
        self.problems.add("E210", msg, callee.span, related=related)
        return None

    def _args_poison(self, e: ast.Call):
        for a in e.args:
            self.expr(a)
        self.types[e.callee.id] = self.types.get(e.callee.id, TError())
        return TError()

    def _call_fn(self, e: ast.Call, fn: FnInfo, receiver):
        self._mark_used(fn.decl)
        callee = e.callee
        if receiver is None:
            self.refs[callee.id] = FnRef(fn.decl)
        params, result, targs = self.instantiate(fn, e.span)
        if targs:
            self.type_args[e.id] = targs
        label = self._fn_label(callee, fn)
        self.types[callee.id] = TFun(tuple(params), result, fn.effect)
        args = list(e.args)
        offset = 0
        if receiver is not None:
            offset = 1
            rt = self.types[receiver.id]
            self.expect(rt, params[0], receiver, Why(f"the receiver of `.{fn.name}`", fn.node.params[0].span))
        given = len(args) + offset
        if given != len(params):
            n = len(params) - offset
            self.problems.add("E202", f"`{label}` takes {n} argument{'s' if n != 1 else ''}, found {len(args)}", e.span,
                              related=[Related(f"`{fn.name}` is declared here", fn.node.span)])
            for a in args:
                self.expr(a)
            return result
        eff = fn.effect
        call_eff = TOOL if eff == TOOL else PURE
        for i, a in enumerate(args):
            pi = i + offset
            pt = params[pi]
            why = LazyWhy(_arg_why, (i, label), fn.node.params[pi].span)
            self.expr(a, pt, why)
            ae = self.value_effect(a)
            if has_effect(pt, PURE) and ae != PURE:
                self.problems.add("E302", f"the {ordinal(i)} argument of `{label}` must be pure (`!pure`), but this function may reach a Tool", a.span,
                                  related=[Related("declared `!pure` here", fn.node.params[pi].span)])
            if eff == POLY and pi in fn.poly_params:
                call_eff = join(call_eff, ae)
        if receiver is not None and eff == POLY and 0 in fn.poly_params:
            call_eff = join(call_eff, self.value_effect(receiver))
        self.effects[e.id] = call_eff
        self.add_effect(call_eff, e.span)
        return result

    def _fn_label(self, callee, fn: FnInfo) -> str:
        if isinstance(callee, ast.FieldAccess):
            if isinstance(callee.target, ast.Name) and isinstance(self.refs.get(callee.target.id), ModuleRef):
                return f"{callee.target.name}.{fn.name}"
            return f".{fn.name}"
        return fn.name

    def value_effect(self, a) -> Effect:
        """How effectful a function value (or a value holding functions) given as an argument is."""
        if isinstance(a, ast.Lambda):
            return self.effects.get(a.id, PURE)
        if isinstance(a, ast.ListLiteral):
            out = PURE
            for x in a.items:
                out = join(out, self.value_effect(x))
            return out
        if isinstance(a, ast.TupleLiteral):
            out = PURE
            for x in a.items:
                out = join(out, self.value_effect(x))
            return out
        ref = self.refs.get(a.id)
        if isinstance(ref, FnRef) and isinstance(a, (ast.Name, ast.FieldAccess)):
            fn = self.d.fn_decls[ref.decl]
            return TOOL if fn.effect != PURE else PURE
        return fun_effects(self.types.get(a.id, TError()))

    def _call_value(self, e: ast.Call, ft):
        f = resolve(ft)
        if type(f) is TVar:
            params = tuple(TVar() for _ in e.args)
            res = TVar()
            unify(f, TFun(params, res, TOOL))
            f = resolve(f)
        if type(f) in (TError, TNever):
            for a in e.args:
                self.expr(a)
            self.effects[e.id] = PURE
            return TError()
        if type(f) is not TFun:
            self.problems.add("E204", f"a value of type `{self.show(f)}` is not a function and cannot be called", e.callee.span)
            for a in e.args:
                self.expr(a)
            self.effects[e.id] = PURE
            return TError()
        if len(f.params) != len(e.args):
            self.problems.add("E202", f"this function takes {len(f.params)} argument{'s' if len(f.params) != 1 else ''}, found {len(e.args)}", e.span)
            for a in e.args:
                self.expr(a)
        else:
            for i, (a, pt) in enumerate(zip(e.args, f.params)):
                self.expr(a, pt, Why(f"the {ordinal(i)} argument of this function"))
        self.effects[e.id] = f.effect
        self.add_effect(f.effect, e.span)
        return f.result

    def _call_ctor(self, e: ast.Call, info: TypeInfo, c: CtorInfo, expected):
        self.refs[e.callee.id] = CtorRef(info.decl, c.name)
        self._mark_used(info.decl)
        self.effects[e.id] = PURE
        ok = self._ctor_access(info, e.callee.span)
        tcon, mapping = self.fresh_tcon(info)
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon and exp.decl == info.decl:
            unify(tcon, exp)
        self.types[e.callee.id] = TFun(tuple(subst(p, mapping) for p in c.params), tcon, PURE)
        if c.field_names is not None:
            self.problems.add("E202", f"constructor `{c.name}` has named fields: write `{c.name} {{ {', '.join(c.field_names)} }}`", e.span)
            for a in e.args:
                self.expr(a)
            return tcon if ok else TError()
        if len(c.params) != len(e.args):
            n = len(c.params)
            self.problems.add("E202", f"constructor `{c.name}` takes {n} value{'s' if n != 1 else ''}, found {len(e.args)}", e.span)
            for a in e.args:
                self.expr(a)
            return tcon if ok else TError()
        for i, (a, p) in enumerate(zip(e.args, c.params)):
            pt = subst(p, mapping)
            self.expr(a, pt, Why(f"the {ordinal(i)} value of `{c.name}`"))
            self._pure_slot(a, pt)
        return tcon if ok else TError()

    def _pure_slot(self, a, t) -> None:
        """A function stored in data must not be more effectful than its declared type says."""
        if (has_effect(t, PURE) and not has_effect(t, TOOL) and not has_effect(t, POLY)
                and self.value_effect(a) != PURE):
            self.problems.add("E302", "this function may reach a Tool, but the type it is stored as is pure: mark the type `!tool`", a.span)

    # -- operators ------------------------------------------------------------------------

    def _op_fn(self, op: str, arity: int, t) -> FnInfo | None:
        t = resolve(t)
        if type(t) is TCon:
            home = t.decl.split("::")[0]
            fn = self.d.home_ops.get((home, op, arity))
            if fn is not None:
                return fn
        return self.d.generic_ops.get((op, arity))

    def _binary(self, e: ast.Binary, expected):
        lt = self.expr(e.left)
        rt = None
        r = resolve(lt)
        if type(r) is TVar:
            rt = self.expr(e.right)
            r = resolve(rt)
        if type(r) in (TError, TNever):
            if rt is None:
                self.expr(e.right)
            return TError()
        fn = self._op_fn(e.op, 2, r)
        if fn is None:
            if type(r) is TVar:
                self.problems.add("E212", f"the type of the operands of `{e.op}` must be known: annotate one of them", e.span)
            else:
                self.problems.add("E209", f"no `{e.op}` for `{self.show(r)}`", e.span)
            if rt is None:
                self.expr(e.right)
            return TError()
        self.refs[e.id] = FnRef(fn.decl)
        params, result, targs = self.instantiate(fn, e.span, e.op)
        if targs:
            self.type_args[e.id] = targs
        why0 = Why(f"the left operand of `{e.op}`")
        self.expect(lt, params[0], e.left, why0)
        if _ground(lt):  # its text cannot change before a mismatch shows it
            why1 = LazyWhy(self._right_why, (e.op, lt))
        else:
            why1 = Why(_right_why(e.op, self.show(lt)))
        if rt is None:
            self.expr(e.right, params[1], why1)
        else:
            self.expect(rt, params[1], e.right, why1)
        return result

    def _right_why(self, op: str, lt) -> str:
        return _right_why(op, self.show(lt))

    def _unary(self, e: ast.Unary, expected):
        t = self.expr(e.operand)
        r = resolve(t)
        if type(r) in (TError, TNever):
            return TError()
        fn = self._op_fn(e.op, 1, r)
        if fn is None:
            if type(r) is TVar:
                self.problems.add("E212", f"the type of the operand of `{e.op}` must be known: annotate it", e.span)
            else:
                self.problems.add("E209", f"no unary `{e.op}` for `{self.show(r)}`", e.span)
            return TError()
        self.refs[e.id] = FnRef(fn.decl)
        params, result, targs = self.instantiate(fn, e.span)
        if targs:
            self.type_args[e.id] = targs
        self.expect(t, params[0], e.operand, Why(f"the operand of `{e.op}`"))
        return result
