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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from flow2py.check.declare import Declarations, ModEnv, ordinal, suggest
from flow2py.check.program import (
    CheckedProgram, CtorInfo, CtorRef, FieldRef, FnInfo, FnRef, LocalRef, MethodRef, ModuleRef,
    TCon, TError, TFun, TNever, TParam, TTuple, TypeInfo,
)
from flow2py.check.types import TVar, fun_effects, has_effect, join, resolve, show, subst, unify
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.syntax import ast


@dataclass
class Binding:
    binder: int
    type: object
    depth: int
    name: str
    span: ast.Span
    node: object
    used: bool = False
    silent: bool = False  # never reported unused (or-pattern alternatives, @lang params)


@dataclass
class FnCtx:
    node: object  # FnDecl or Lambda
    result: object
    name: str
    result_span: ast.Span
    effect: str = "pure"
    first_tool: Optional[ast.Span] = None
    captures: list = field(default_factory=list)
    captured: set = field(default_factory=set)


@dataclass
class Why:
    text: str
    span: Optional[ast.Span] = None


class LazyWhy:
    """A `Why` whose text is only put together when a mismatch reports it (most never are):
    `make(*args)` gives the text. Only for texts built from values that cannot change meanwhile."""

    __slots__ = ("make", "args", "span")

    def __init__(self, make, args: tuple, span: Optional[ast.Span] = None) -> None:
        self.make = make
        self.args = args
        self.span = span

    @property
    def text(self) -> str:
        return self.make(*self.args)


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


class BodyChecker:
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
        self.insts: list = []  # (callee decl, type args, span, owner, callee name)
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
        for p, (_, t) in zip(node.params, fn.params):
            self._bind(p.name, t, p, p.name_span if p.name_span.line else p.span)
        self.expr(node.body, fn.result, Why(f"the result type of `{fn.name}`", result_span))
        self.tail_roots.append((node.body, True))
        self.effects[node.id] = fn.effect
        if ctx.effect == "tool" and fn.effect != "tool":
            end = node.result.span
            fixes = ()
            if end.end > 0:
                fixes = (Fix("mark it `!tool`", (Edit(ast.Span(end.file, end.end_line, end.end_column, end.end_line, end.end_column, end.end, end.end), " !tool"),), True),)
            related = [Related("this reaches a Tool", ctx.first_tool)] if ctx.first_tool else []
            self.problems.add("E301", f"`{fn.name}` may reach a Tool but is not marked `!tool`",
                              node.name_span if node.name_span.line else node.span, related=related, fixes=fixes)

    def expr(self, e, expected=None, why: Optional[Why] = None):
        t = self._dispatch[type(e)](e, expected)
        if expected is not None:
            t = self.expect(t, expected, e, why)
        self.types[e.id] = t
        return t

    def expect(self, actual, expected, node, why: Optional[Why]):
        if unify(actual, expected):
            return actual
        self.mismatch(actual, expected, node.span, why)
        return TError()

    def mismatch(self, actual, expected, span, why: Optional[Why]) -> None:
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

    def add_effect(self, effect: str, span) -> None:
        ctx = self.ctx
        if effect == "tool" and ctx.first_tool is None:
            ctx.first_tool = span
        ctx.effect = join(ctx.effect, effect)

    # -- scopes ---------------------------------------------------------------------------

    def _bind(self, name: str, t, node, span, silent: bool = False) -> Binding:
        b = Binding(node.id, t, len(self.fn_stack), name, span, node, silent=silent)
        self.scopes[-1][name] = b
        self.binders.append(b)
        return b

    def _lookup(self, name: str) -> Optional[Binding]:
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

    # -- literals and names ---------------------------------------------------------------

    def _literal(self, e: ast.Literal, expected):
        info = self.d.literal_types.get(e.kind)
        return self.d.con0(info.decl) if info else TError()

    def _name(self, e: ast.Name, expected):
        b = self._lookup(e.name)
        if b is not None:
            self._use_local(b)
            self.refs[e.id] = LocalRef(b.binder)
            return b.type
        hit = self.resolve_value(e.name, expected, e.span)
        return self._value_of(e, hit)

    def resolve_value(self, name: str, expected, span, report: bool = True):
        """A top-level name: a constructor of the expected type, a function or constructor of
        this module, a prelude constructor. Returns ('fn', FnInfo) | ('ctor', TypeInfo, CtorInfo) | None."""
        env = self.env
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon and name[:1].isupper():
            info = self.d.type_decls.get(exp.decl)
            if info is not None:
                for c in info.ctors:
                    if c.name == name:
                        return ("ctor", info, c)
        fn = env.cm.fns.get(name)
        if fn is not None:
            return ("fn", fn)
        hit = env.ctors.get(name) or self.d.prelude_ctors.get(name)
        if hit is not None:
            return ("ctor", hit[0], hit[1])
        if report:
            if name in env.lm.aliases:
                self.problems.add("E101", f"`{name}` is a module: name one of its declarations, e.g. `{name}.something`", span)
            else:
                cands = list(env.cm.fns) + list(env.ctors) + list(self.d.prelude_ctors)
                for scope in self.scopes:
                    cands.extend(scope)
                s = suggest(name, cands)
                related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", span)] if s else []
                fixes = [Fix(f"replace `{name}` with `{s[0]}`", (Edit(span, s[0]),), False)] if s and span.end > span.start else []
                self.problems.add("E101", f"unknown name `{name}`", span, related=related, fixes=fixes)
        return None

    def _value_of(self, e, hit):
        """The type of a function or constructor used as a value (not called)."""
        if hit is None:
            return TError()
        if hit[0] == "fn":
            fn = hit[1]
            self._mark_used(fn.decl)
            self.refs[e.id] = FnRef(fn.decl)
            params, result, targs = self.instantiate(fn, e.span)
            if targs:
                self.type_args[e.id] = targs
            eff = "tool" if fn.effect != "pure" else "pure"
            return TFun(tuple(params), result, eff)
        _, info, c = hit
        self._ctor_access(info, e.span)
        self._mark_used(info.decl)
        self.refs[e.id] = CtorRef(info.decl, c.name)
        tcon, mapping = self.fresh_tcon(info)
        if c.field_names is not None:
            self.problems.add("E202", f"constructor `{c.name}` has named fields: write `{c.name} {{ ... }}`", e.span)
            return TError()
        if c.params:
            return TFun(tuple(subst(p, mapping) for p in c.params), tcon, "pure")
        return tcon

    def _ctor_access(self, info: TypeInfo, span) -> bool:
        if info.module != self.env.key:
            if info.opaque:
                self.problems.add("E114", f"`{info.name}` is opaque: it can be built and taken apart only in its own module", span)
                return False
            if not info.pub:
                self.problems.add("E109", f"type `{info.name}` is private to its module", span)
                return False
        return True

    def fresh_tcon(self, info: TypeInfo):
        vs = [TVar() for _ in info.type_params]
        mapping = {(info.decl, p): v for p, v in zip(info.type_params, vs)}
        return TCon(info.decl, tuple(vs)), mapping

    def instantiate(self, fn: FnInfo, span):
        """Fresh variables for a generic function's type parameters: (param types, result, type args)."""
        if fn.type_params:
            vs = tuple(TVar() for _ in fn.type_params)
            mapping = {(fn.decl, p): v for p, v in zip(fn.type_params, vs)}
            self.insts.append((fn.decl, vs, span, self.fn.decl, fn.name))
        else:
            vs = ()
            mapping = {}
        params = [subst(t, mapping) for _, t in fn.params]
        result = subst(fn.result, mapping)
        if fn.is_tool:
            result = self.tool_result(result)
        return params, result, vs

    def tool_result(self, declared):
        r = resolve(declared)
        if self.d.is_lang(r, "Result") and len(r.args) == 2:
            return self.d.lang_con("Result", r.args[0], self.d.lang_con("ToolProblem", r.args[1]))
        return TError()

    # -- field access and qualified names -------------------------------------------------

    def qualified(self, e: ast.FieldAccess):
        """`alias.name` where `alias` is a module: ('fn', ...) | ('ctor', ...) | ('error',) | None (not qualified)."""
        t = e.target
        if not isinstance(t, ast.Name) or self._lookup(t.name) is not None or t.name not in self.env.lm.aliases:
            return None
        menv = self.d.alias_env(self.env, t.name, t.span)
        self.types[t.id] = self.d.unit()
        if menv is None:
            return ("error",)
        self.refs[t.id] = ModuleRef(menv.key)
        fn = menv.cm.fns.get(e.name)
        if fn is not None:
            if not fn.pub and menv is not self.env:
                self.problems.add("E109", f"`{t.name}.{e.name}` is private to its module", e.span,
                                  related=[Related("declared here without `pub`", fn.node.span)])
                return ("error",)
            return ("fn", fn)
        hit = menv.ctors.get(e.name)
        if hit is not None:
            return ("ctor", hit[0], hit[1])
        cands = [n for n, f in menv.cm.fns.items() if f.pub] + [n for n, (i, _) in menv.ctors.items() if i.pub]
        s = suggest(e.name, cands)
        related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", e.span)] if s else []
        self.problems.add("E110", f"module `{t.name}` declares no `{e.name}`", e.span, related=related)
        return ("error",)

    def _field(self, e: ast.FieldAccess, expected):
        q = self.qualified(e)
        if q is not None:
            if q[0] == "error":
                return TError()
            return self._value_of(e, q)
        tt = resolve(self.expr(e.target))
        return self.read_field(e, tt)

    def read_field(self, e: ast.FieldAccess, tt):
        if type(tt) is TError or type(tt) is TNever:
            return TError()
        if type(tt) is TVar:
            self.problems.add("E212", f"the type of this value must be known to read `.{e.name}`: annotate it", e.target.span)
            return TError()
        if type(tt) is TCon:
            info = self.d.type_decls.get(tt.decl)
            if info is not None and info.kind == "record":
                for f in info.fields:
                    if f.name == e.name:
                        if info.module != self.env.key:
                            if info.opaque:
                                self.problems.add("E114", f"`{info.name}` is opaque: its fields are read only in its own module", e.span)
                                return TError()
                            if not f.pub:
                                self.problems.add("E109", f"field `{e.name}` of `{info.name}` is private to its module", e.span,
                                                  related=[Related("declared here without `pub`", info.node.span)])
                                return TError()
                        self.refs[e.id] = FieldRef(info.decl, f.name)
                        return subst(f.type, {(info.decl, p): a for p, a in zip(info.type_params, tt.args)})
                s = suggest(e.name, [f.name for f in info.fields])
                related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", e.span)] if s else []
                self.problems.add("E205", f"`{info.name}` has no field `{e.name}`", e.span, related=related)
                return TError()
        self.problems.add("E205", f"`{self.show(tt)}` has no field `{e.name}`", e.span)
        return TError()

    # -- calls ----------------------------------------------------------------------------

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
                if q[0] == "error":
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
                hit = ("fn", fn)
                receiver = callee.target
        if hit is None:
            ft = self.expr(callee)
            return self._call_value(e, ft)
        if hit[0] == "ctor":
            return self._call_ctor(e, hit[1], hit[2], expected)
        return self._call_fn(e, hit[1], receiver)

    def _record_field_fn(self, tt, name: str) -> bool:
        if type(tt) is TCon:
            info = self.d.type_decls.get(tt.decl)
            if info is not None and info.kind == "record":
                return any(f.name == name for f in info.fields)
        return False

    def _method(self, callee: ast.FieldAccess, tt) -> Optional[FnInfo]:
        if type(tt) in (TError, TNever):
            return None
        if type(tt) is TVar:
            self.problems.add("E212", f"the type of this value must be known to call `.{callee.name}(...)`: annotate it", callee.target.span)
            return None
        if type(tt) is TCon:
            home = tt.decl.split("::")[0]
            menv = self.d.envs.get(home)
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
            cands = [n for n, f in menv.cm.fns.items() if f.pub or home == self.env.key] if menv else []
            s = suggest(callee.name, cands)
            related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", callee.span)] if s else []
            self.problems.add("E210", f"no function `{callee.name}` for `{self.show(tt)}` in its module {home}", callee.span, related=related)
            return None
        self.problems.add("E210", f"`{self.show(tt)}` has no methods: call a function with it instead", callee.span)
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
        call_eff = "tool" if eff == "tool" else "pure"
        for i, a in enumerate(args):
            pi = i + offset
            pt = params[pi]
            why = LazyWhy(_arg_why, (i, label), fn.node.params[pi].span)
            self.expr(a, pt, why)
            ae = self.value_effect(a)
            if has_effect(pt, "pure") and ae != "pure":
                self.problems.add("E302", f"the {ordinal(i)} argument of `{label}` must be pure (`!pure`), but this function may reach a Tool", a.span,
                                  related=[Related("declared `!pure` here", fn.node.params[pi].span)])
            if eff == "poly" and pi in fn.poly_params:
                call_eff = join(call_eff, ae)
        if receiver is not None and eff == "poly" and 0 in fn.poly_params:
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

    def value_effect(self, a) -> str:
        """How effectful a function value (or a value holding functions) given as an argument is."""
        if isinstance(a, ast.Lambda):
            return self.effects.get(a.id, "pure")
        if isinstance(a, ast.ListLiteral):
            out = "pure"
            for x in a.items:
                out = join(out, self.value_effect(x))
            return out
        if isinstance(a, ast.TupleLiteral):
            out = "pure"
            for x in a.items:
                out = join(out, self.value_effect(x))
            return out
        ref = self.refs.get(a.id)
        if isinstance(ref, FnRef) and (isinstance(a, ast.Name) or isinstance(a, ast.FieldAccess)):
            fn = self.d.fn_decls[ref.decl]
            return "tool" if fn.effect != "pure" else "pure"
        return fun_effects(self.types.get(a.id, TError()))

    def _call_value(self, e: ast.Call, ft):
        f = resolve(ft)
        if type(f) is TVar:
            params = tuple(TVar() for _ in e.args)
            res = TVar()
            unify(f, TFun(params, res, "tool"))
            f = resolve(f)
        if type(f) in (TError, TNever):
            for a in e.args:
                self.expr(a)
            self.effects[e.id] = "pure"
            return TError()
        if type(f) is not TFun:
            self.problems.add("E204", f"a value of type `{self.show(f)}` is not a function and cannot be called", e.callee.span)
            for a in e.args:
                self.expr(a)
            self.effects[e.id] = "pure"
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
        self.effects[e.id] = "pure"
        ok = self._ctor_access(info, e.callee.span)
        tcon, mapping = self.fresh_tcon(info)
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon and exp.decl == info.decl:
            unify(tcon, exp)
        self.types[e.callee.id] = TFun(tuple(subst(p, mapping) for p in c.params), tcon, "pure")
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
        if has_effect(t, "pure") and not has_effect(t, "tool") and not has_effect(t, "poly"):
            if self.value_effect(a) != "pure":
                self.problems.add("E302", "this function may reach a Tool, but the type it is stored as is pure: mark the type `!tool`", a.span)

    # -- records and collections ----------------------------------------------------------

    def _record(self, e: ast.RecordLiteral, expected):
        target = self._record_target(e, expected)
        for fi in e.fields:
            pass
        if target is None:
            if e.base is not None:
                self.expr(e.base)
            for fi in e.fields:
                self._field_init(fi, None)
            return TError()
        info, ctor = target
        self._mark_used(info.decl)
        ok = self._ctor_access(info, e.ctor.span)
        tcon, mapping = self.fresh_tcon(info)
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon and exp.decl == info.decl:
            unify(tcon, exp)
        name = ctor.name if ctor else info.name
        self.refs[e.id] = CtorRef(info.decl, name)
        self.refs[e.ctor.id] = CtorRef(info.decl, name)
        self.types[e.ctor.id] = tcon
        if ctor is not None:
            if ctor.field_names is None:
                self.problems.add("E202", f"constructor `{ctor.name}` takes positional values: write `{ctor.name}(...)`", e.span)
                for fi in e.fields:
                    self._field_init(fi, None)
                return TError()
            declared = list(zip(ctor.field_names, ctor.params, [True] * len(ctor.params)))
        else:
            declared = [(f.name, f.type, f.pub) for f in info.fields]
        if e.base is not None:
            if ctor is not None:
                self.problems.add("E202", "`..base` works only for records", e.base.span)
                self.expr(e.base)
            else:
                self.expr(e.base, tcon, Why(f"the record `{name}` being updated"))
        by_name = {n: (t, pub) for n, t, pub in declared}
        given = set()
        private_reported = False
        for fi in e.fields:
            if fi.name in given:
                self.problems.add("E207", f"field `{fi.name}` is given twice", fi.span)
                self._field_init(fi, None)
                continue
            given.add(fi.name)
            if fi.name not in by_name:
                s = suggest(fi.name, list(by_name))
                related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", fi.span)] if s else []
                self.problems.add("E205", f"`{name}` has no field `{fi.name}`", fi.span, related=related)
                self._field_init(fi, None)
                continue
            t, pub = by_name[fi.name]
            if not pub and info.module != self.env.key and not private_reported and ok:
                private_reported = True
                self.problems.add("E109", f"field `{fi.name}` of `{name}` is private: `{name}` can be built only in its module", fi.span)
            self._field_init(fi, subst(t, mapping), Why(f"the field `{fi.name}` of `{name}`"))
        if e.base is None:
            missing = [n for n, _, _ in declared if n not in given]
            if missing:
                self.problems.add("E206", f"`{name}` is missing field{'s' if len(missing) > 1 else ''} " + ", ".join(f"`{m}`" for m in missing), e.span)
        return tcon if ok else TError()

    def _field_init(self, fi: ast.FieldInit, t, why=None) -> None:
        if fi.value is not None:
            self.expr(fi.value, t, why)
            if t is not None:
                self._pure_slot(fi.value, t)
            return
        b = self._lookup(fi.name)
        if b is None:
            self.problems.add("E101", f"unknown name `{fi.name}` (the shorthand `{fi.name}` means `{fi.name}: {fi.name}`)", fi.span)
            self.types[fi.id] = TError()
            return
        self._use_local(b)
        self.refs[fi.id] = LocalRef(b.binder)
        self.types[fi.id] = b.type
        if t is not None and not unify(b.type, t):
            self.mismatch(b.type, t, fi.span, why)

    def _record_target(self, e: ast.RecordLiteral, expected):
        c = e.ctor
        if isinstance(c, ast.FieldAccess) and isinstance(c.target, ast.Name):
            menv = self.d.alias_env(self.env, c.target.name, c.target.span)
            self.types[c.target.id] = self.d.unit()
            if menv is None:
                return None
            self.refs[c.target.id] = ModuleRef(menv.key)
            info = menv.cm.types.get(c.name)
            if info is not None and info.kind == "record":
                return info, None
            hit = menv.ctors.get(c.name)
            if hit is not None:
                return hit[0], hit[1]
            self.problems.add("E110", f"module `{c.target.name}` declares no record or constructor `{c.name}`", c.span)
            return None
        if not isinstance(c, ast.Name):
            self.problems.add("E101", "a record literal starts with a record type or constructor name", c.span)
            return None
        name = c.name
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon:
            info = self.d.type_decls.get(exp.decl)
            if info is not None:
                if info.kind == "record" and info.name == name:
                    return info, None
                for ct in info.ctors:
                    if ct.name == name:
                        return info, ct
        info = self.env.cm.types.get(name) or self.d.prelude_types.get(name)
        if info is not None and info.kind == "record":
            self._mark_used(info.decl)
            return info, None
        hit = self.env.ctors.get(name) or self.d.prelude_ctors.get(name)
        if hit is not None:
            return hit[0], hit[1]
        cands = [n for n, i in self.env.cm.types.items() if i.kind == "record"] + list(self.env.ctors)
        s = suggest(name, cands)
        related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", c.span)] if s else []
        self.problems.add("E101", f"unknown record type or constructor `{name}`", c.span, related=related)
        return None

    def _list(self, e: ast.ListLiteral, expected):
        exp = resolve(expected) if expected is not None else None
        if self.d.is_lang(exp, "List") and len(exp.args) == 1:
            elem = exp.args[0]
        else:
            elem = TVar()
        t = self.d.lang_con("List", elem)
        for i, x in enumerate(e.items):
            self.expr(x, elem, Why("the elements of this list (the first one fixes their type)" if i else "the elements of this list"))
            if i == 0 and type(resolve(elem)) is TVar:
                pass
        return t

    def _dict(self, e: ast.DictLiteral, expected):
        exp = resolve(expected) if expected is not None else None
        if self.d.is_lang(exp, "Dict") and len(exp.args) == 2:
            k, v = exp.args
        else:
            k, v = TVar(), TVar()
        for kx, vx in e.entries:
            self.expr(kx, k, Why("the keys of this dict"))
            self.expr(vx, v, Why("the values of this dict"))
        self.data_reqs.append((k, e.span, "a Dict key", self.fn.decl))
        return self.d.lang_con("Dict", k, v)

    def _tuple(self, e: ast.TupleLiteral, expected):
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TTuple and len(exp.items) == len(e.items):
            items = [self.expr(x, t, Why(f"the {ordinal(i)} item of this tuple")) for i, (x, t) in enumerate(zip(e.items, exp.items))]
        else:
            items = [self.expr(x) for x in e.items]
        return TTuple(tuple(items))

    # -- operators ------------------------------------------------------------------------

    def _op_fn(self, op: str, arity: int, t) -> Optional[FnInfo]:
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
        params, result, targs = self.instantiate(fn, e.span)
        if targs:
            self.type_args[e.id] = targs
            callee, vs, span, owner, _ = self.insts[-1]
            self.insts[-1] = (callee, vs, span, owner, e.op)
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

    # -- `?` ------------------------------------------------------------------------------

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
            unify(res, self.d.lang_con("Result", TVar(), TVar() if e.convert is not None else err1))
            res = resolve(res)
        if not (self.d.is_lang(res, "Result") and len(res.args) == 2):
            if type(res) is not TError:
                self.problems.add("E408", f"`?` returns early with an error, but `{ctx.name}` returns `{self.show(res)}`, not a Result", e.span,
                                  related=[Related(f"the result type of `{ctx.name}`", ctx.result_span)] if ctx.result_span.line else [])
            if e.convert is not None:
                self.expr(e.convert)
            return ok_t
        err2 = res.args[1]
        if e.convert is not None:
            self.expr(e.convert, TFun((err1,), err2, "poly"), Why(f"the conversion of the error `{self.show(err1)}` to `{self.show(err2)}`"))
            eff = self.value_effect(e.convert)
            self.effects[e.id] = eff
            self.add_effect(eff, e.convert.span)
        elif not unify(err1, err2):
            self.problems.add("E409", f"`?` here would return the error `{self.show(err1)}`, but `{ctx.name}` returns errors of type `{self.show(err2)}`: convert it with `? f`", e.span,
                              related=[Related(f"the result type of `{ctx.name}`", ctx.result_span)] if ctx.result_span.line else [])
        return ok_t

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
        for p, t in zip(e.params, ptypes):
            self._bind(p.name, t, p, p.name_span if p.name_span.line else p.span)
        self.expr(e.body, result, Why("the result type of this function", e.result.span if e.result is not None else None))
        self.scopes.pop()
        self.fn_stack.pop()
        effect = "tool" if e.effect == "tool" else ctx.effect
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
            if not last or not isinstance(s, ast.ExprStmt):
                if last:
                    if expected is not None:
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
            vt = self.expr(s.value, at, Why("the annotation of this `let`", s.type.span))
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
            t1 = self.expr(e.then, expected, why)
            t2 = self.expr(e.else_, expected, why)
            return expected
        t1 = self.expr(e.then)
        r1 = resolve(t1)
        if type(r1) is TNever:
            return self.expr(e.else_)
        t2 = self.expr(e.else_, t1, Why("the other branch of this `if`", e.then.span))
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
