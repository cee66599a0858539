"""Names, values and field access in a function body: a local or a top-level name (a
constructor of the expected type first), a function or constructor used as a value, fresh
type variables for a generic use, `alias.name` through an imported module, and reading a
record field (with its visibility rules). Part of `infer.BodyChecker`."""
from __future__ import annotations

from flow2py.check.declare import field_span, suggest
from flow2py.check.infer_ctx import QUALIFIED_ERROR, CtorHit, FnHit, Instantiation
from flow2py.check.typed import (
    PURE,
    TOOL,
    CtorRef,
    FieldRef,
    FnInfo,
    FnRef,
    LocalRef,
    ModuleRef,
    TCon,
    TError,
    TFun,
    TNever,
    TypeInfo,
)
from flow2py.check.typeterms import TVar, resolve, subst
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.syntax import ast


class NamesMixin:
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
        this module, a prelude constructor. Returns a FnHit, a CtorHit or None."""
        env = self.env
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon and name[:1].isupper():
            info = self.d.type_decls.get(exp.decl)
            if info is not None:
                for c in info.ctors:
                    if c.name == name:
                        return CtorHit(info, c)
        fn = env.cm.fns.get(name)
        if fn is not None:
            return FnHit(fn)
        hit = env.ctors.get(name) or self.d.prelude_ctors.get(name)
        if hit is not None:
            return CtorHit(hit[0], hit[1])
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
        if type(hit) is FnHit:
            fn = hit.fn
            self._mark_used(fn.decl)
            self.refs[e.id] = FnRef(fn.decl)
            params, result, targs = self.instantiate(fn, e.span)
            if targs:
                self.type_args[e.id] = targs
            eff = TOOL if fn.effect != PURE else PURE
            return TFun(tuple(params), result, eff)
        info, c = hit.info, hit.ctor
        self._ctor_access(info, e.span)
        self._mark_used(info.decl)
        self.refs[e.id] = CtorRef(info.decl, c.name)
        tcon, mapping = self.fresh_tcon(info)
        if c.field_names is not None:
            self.problems.add("E202", f"constructor `{c.name}` has named fields: write `{c.name} {{ ... }}`", e.span)
            return TError()
        if c.params:
            return TFun(tuple(subst(p, mapping) for p in c.params), tcon, PURE)
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

    def instantiate(self, fn: FnInfo, span, shown: str | None = None):
        """Fresh variables for a generic function's type parameters: (param types, result, type args).
        `shown` is how the use is named where its type arguments are checked (an operator's
        symbol), by default the function's name."""
        if fn.type_params:
            vs = tuple(TVar() for _ in fn.type_params)
            mapping = {(fn.decl, p): v for p, v in zip(fn.type_params, vs)}
            self.insts.append(Instantiation(fn.decl, vs, span, self.fn.decl, shown or fn.name))
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
        """`alias.name` where `alias` is a module: a FnHit, a CtorHit, QUALIFIED_ERROR (reported) or None (not qualified)."""
        t = e.target
        if not isinstance(t, ast.Name) or self._lookup(t.name) is not None or t.name not in self.env.lm.aliases:
            return None
        menv = self.d.alias_env(self.env, t.name, t.span)
        self.types[t.id] = self.d.unit()
        if menv is None:
            return QUALIFIED_ERROR
        self.refs[t.id] = ModuleRef(menv.key)
        fn = menv.cm.fns.get(e.name)
        if fn is not None:
            if not fn.pub and menv is not self.env:
                self.problems.add("E109", f"`{t.name}.{e.name}` is private to its module", e.span,
                                  related=[Related("declared here without `pub`", fn.node.span)])
                return QUALIFIED_ERROR
            return FnHit(fn)
        hit = menv.ctors.get(e.name)
        if hit is not None:
            return CtorHit(hit[0], hit[1])
        cands = [n for n, f in menv.cm.fns.items() if f.pub] + [n for n, (i, _) in menv.ctors.items() if i.pub]
        s = suggest(e.name, cands)
        related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", e.span)] if s else []
        self.problems.add("E110", f"module `{t.name}` declares no `{e.name}`", e.span, related=related)
        return QUALIFIED_ERROR

    def _field(self, e: ast.FieldAccess, expected):
        q = self.qualified(e)
        if q is not None:
            if q is QUALIFIED_ERROR:
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
                                                  related=[Related("declared here without `pub`", field_span(info, e.name))])
                                return TError()
                        self.refs[e.id] = FieldRef(info.decl, f.name)
                        return subst(f.type, {(info.decl, p): a for p, a in zip(info.type_params, tt.args)})
                s = suggest(e.name, [f.name for f in info.fields])
                related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", e.span)] if s else []
                self.problems.add("E205", f"`{info.name}` has no field `{e.name}`", e.span, related=related)
                return TError()
        self.problems.add("E205", f"`{self.show(tt)}` has no field `{e.name}`", e.span)
        return TError()
