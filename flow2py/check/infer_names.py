"""Names, values and field access in a function body: a local or a top-level name (a
constructor of the expected type first), a function or constructor used as a value, fresh
type variables for a generic use, `alias.name` through an imported module, and reading a
record field (with its visibility rules). Constructs: `literal`, `name`, `field_access`; the
rest is shared with the other parts of the walk."""

from __future__ import annotations

from flow2py.check.body_state import BodyState, expr, lookup, mark_used, show, use_local
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


def literal(st: BodyState, e: ast.Literal, expected):
    info = st.d.literal_types.get(e.kind)
    return st.d.con0(info.decl) if info else TError()


def name(st: BodyState, e: ast.Name, expected):
    b = lookup(st, e.name)
    if b is not None:
        use_local(st, b)
        st.refs[e.id] = LocalRef(b.binder)
        return b.type
    hit = resolve_value(st, e.name, expected, e.span)
    return value_of(st, e, hit)


def resolve_value(st: BodyState, name: str, expected, span):
    """A top-level name: a constructor of the expected type, a function or constructor of
    this module, a prelude constructor. Returns a FnHit, a CtorHit or None (reported)."""
    env = st.env
    exp = resolve(expected) if expected is not None else None
    if type(exp) is TCon and name[:1].isupper():
        info = st.d.type_decls.get(exp.decl)
        if info is not None:
            for c in info.ctors:
                if c.name == name:
                    return CtorHit(info, c)
    fn = env.cm.fns.get(name)
    if fn is not None:
        return FnHit(fn)
    hit = env.ctors.get(name) or st.d.prelude_ctors.get(name)
    if hit is not None:
        return CtorHit(hit[0], hit[1])
    _unknown_name(st, name, span)
    return None


def _unknown_name(st: BodyState, name: str, span) -> None:
    env = st.env
    if name in env.lm.aliases:
        st.problems.add(
            "E101", f"`{name}` is a module: name one of its declarations, e.g. `{name}.something`", span
        )
        return
    cands = list(env.cm.fns) + list(env.ctors) + list(st.d.prelude_ctors)
    for scope in st.scopes:
        cands.extend(scope)
    s = suggest(name, cands)
    related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", span)] if s else []
    fixes = (
        [Fix(f"replace `{name}` with `{s[0]}`", (Edit(span, s[0]),), False)]
        if s and span.end > span.start
        else []
    )
    st.problems.add("E101", f"unknown name `{name}`", span, related=related, fixes=fixes)


def value_of(st: BodyState, e, hit):
    """The type of a function or constructor used as a value (not called)."""
    if hit is None:
        return TError()
    if type(hit) is FnHit:
        fn = hit.fn
        mark_used(st, fn.decl)
        st.refs[e.id] = FnRef(fn.decl)
        params, result, targs = instantiate(st, fn, e.span)
        if targs:
            st.type_args[e.id] = targs
        eff = TOOL if fn.effect != PURE else PURE
        return TFun(tuple(params), result, eff)
    info, c = hit.info, hit.ctor
    ctor_access(st, info, e.span)
    mark_used(st, info.decl)
    st.refs[e.id] = CtorRef(info.decl, c.name)
    tcon, mapping = fresh_tcon(info)
    if c.field_names is not None:
        st.problems.add(
            "E202", f"constructor `{c.name}` has named fields: write `{c.name} {{ ... }}`", e.span
        )
        return TError()
    if c.params:
        return TFun(tuple(subst(p, mapping) for p in c.params), tcon, PURE)
    return tcon


def ctor_access(st: BodyState, info: TypeInfo, span) -> bool:
    """Whether this module may build or take apart values of `info` (E114, E109 when not)."""
    if info.module != st.env.key:
        if info.opaque:
            st.problems.add(
                "E114",
                f"`{info.name}` is opaque: it can be built and taken apart only in its own module",
                span,
            )
            return False
        if not info.pub:
            st.problems.add("E109", f"type `{info.name}` is private to its module", span)
            return False
    return True


def fresh_tcon(info: TypeInfo):
    """`info` applied to fresh variables, and the mapping from its type parameters to them."""
    vs = [TVar() for _ in info.type_params]
    mapping = {(info.decl, p): v for p, v in zip(info.type_params, vs)}
    return TCon(info.decl, tuple(vs)), mapping


def instantiate(st: BodyState, fn: FnInfo, span, shown: str | None = None):
    """Fresh variables for a generic function's type parameters: (param types, result, type args).
    `shown` is how the use is named where its type arguments are checked (an operator's
    symbol), by default the function's name."""
    if fn.type_params:
        vs = tuple(TVar() for _ in fn.type_params)
        mapping = {(fn.decl, p): v for p, v in zip(fn.type_params, vs)}
        st.insts.append(Instantiation(fn.decl, vs, span, st.fn.decl, shown or fn.name))
    else:
        vs = ()
        mapping = {}
    params = [subst(t, mapping) for _, t in fn.params]
    result = subst(fn.result, mapping)
    if fn.is_tool:
        result = _tool_result(st, result)
    return params, result, vs


def _tool_result(st: BodyState, declared):
    r = resolve(declared)
    if st.d.is_lang(r, "Result") and len(r.args) == 2:
        return st.d.lang_con("Result", r.args[0], st.d.lang_con("ToolProblem", r.args[1]))
    return TError()


# -- field access and qualified names -----------------------------------------------------


def qualified(st: BodyState, e: ast.FieldAccess):
    """`alias.name` where `alias` is a module: a FnHit, a CtorHit, QUALIFIED_ERROR (reported) or None (not qualified)."""
    t = e.target
    if not isinstance(t, ast.Name) or lookup(st, t.name) is not None or t.name not in st.env.lm.aliases:
        return None
    menv = st.d.alias_env(st.env, t.name, t.span)
    st.types[t.id] = st.d.unit()
    if menv is None:
        return QUALIFIED_ERROR
    st.refs[t.id] = ModuleRef(menv.key)
    fn = menv.cm.fns.get(e.name)
    if fn is not None:
        if not fn.pub and menv is not st.env:
            st.problems.add(
                "E109",
                f"`{t.name}.{e.name}` is private to its module",
                e.span,
                related=[Related("declared here without `pub`", fn.node.span)],
            )
            return QUALIFIED_ERROR
        return FnHit(fn)
    hit = menv.ctors.get(e.name)
    if hit is not None:
        return CtorHit(hit[0], hit[1])
    cands = [n for n, f in menv.cm.fns.items() if f.pub] + [n for n, (i, _) in menv.ctors.items() if i.pub]
    s = suggest(e.name, cands)
    related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", e.span)] if s else []
    st.problems.add("E110", f"module `{t.name}` declares no `{e.name}`", e.span, related=related)
    return QUALIFIED_ERROR


def field_access(st: BodyState, e: ast.FieldAccess, expected):
    q = qualified(st, e)
    if q is not None:
        if q is QUALIFIED_ERROR:
            return TError()
        return value_of(st, e, q)
    tt = resolve(expr(st, e.target))
    return read_field(st, e, tt)


def read_field(st: BodyState, e: ast.FieldAccess, tt):
    """The type of `e.name` read from a value of type `tt`, with its visibility rules."""
    if type(tt) is TError or type(tt) is TNever:
        return TError()
    if type(tt) is TVar:
        st.problems.add(
            "E212", f"the type of this value must be known to read `.{e.name}`: annotate it", e.target.span
        )
        return TError()
    if type(tt) is TCon:
        info = st.d.type_decls.get(tt.decl)
        if info is not None and info.kind == "record":
            for f in info.fields:
                if f.name == e.name:
                    if info.module != st.env.key:
                        if info.opaque:
                            st.problems.add(
                                "E114",
                                f"`{info.name}` is opaque: its fields are read only in its own module",
                                e.span,
                            )
                            return TError()
                        if not f.pub:
                            st.problems.add(
                                "E109",
                                f"field `{e.name}` of `{info.name}` is private to its module",
                                e.span,
                                related=[Related("declared here without `pub`", field_span(info, e.name))],
                            )
                            return TError()
                    st.refs[e.id] = FieldRef(info.decl, f.name)
                    return subst(f.type, {(info.decl, p): a for p, a in zip(info.type_params, tt.args)})
            s = suggest(e.name, [f.name for f in info.fields])
            related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", e.span)] if s else []
            st.problems.add("E205", f"`{info.name}` has no field `{e.name}`", e.span, related=related)
            return TError()
    st.problems.add("E205", f"`{show(st, tt)}` has no field `{e.name}`", e.span)
    return TError()
