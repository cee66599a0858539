"""Record literals and collections in a function body: the record or constructor a literal
names (through the expected type first), each field once and none missing, `..base` updates,
private fields across modules; list, dict and tuple literals, whose element types come from the
expected type when there is one. Constructs: `record`, `list_literal`, `dict_literal`,
`tuple_literal`."""

from __future__ import annotations

from flow2py.check.body_state import BodyState, expr, lookup, mark_used, mismatch, use_local
from flow2py.check.declare import field_span, ordinal, suggest
from flow2py.check.infer_calls import pure_slot
from flow2py.check.infer_ctx import DataReq, RecordTarget, Why
from flow2py.check.infer_names import ctor_access, fresh_tcon
from flow2py.check.typed import CtorRef, LocalRef, ModuleRef, TCon, TError, TTuple
from flow2py.check.typeterms import TVar, resolve, subst, unify
from flow2py.diagnostics import Related
from flow2py.syntax import ast


def record(st: BodyState, e: ast.RecordLiteral, expected):
    target = _record_target(st, e, expected)
    if target is None:
        if e.base is not None:
            expr(st, e.base)
        for fi in e.fields:
            _field_init(st, fi, None)
        return TError()
    info, ctor = target.info, target.ctor
    mark_used(st, info.decl)
    ok = ctor_access(st, info, e.ctor.span)
    tcon, mapping = fresh_tcon(info)
    exp = resolve(expected) if expected is not None else None
    if type(exp) is TCon and exp.decl == info.decl:
        unify(tcon, exp)
    name = ctor.name if ctor else info.name
    st.refs[e.id] = CtorRef(info.decl, name)
    st.refs[e.ctor.id] = CtorRef(info.decl, name)
    st.types[e.ctor.id] = tcon
    if ctor is not None:
        if ctor.field_names is None:
            st.problems.add(
                "E202", f"constructor `{ctor.name}` takes positional values: write `{ctor.name}(...)`", e.span
            )
            for fi in e.fields:
                _field_init(st, fi, None)
            return TError()
        declared = list(zip(ctor.field_names, ctor.params, [True] * len(ctor.params)))
    else:
        declared = [(f.name, f.type, f.pub) for f in info.fields]
    if e.base is not None:
        if ctor is not None:
            st.problems.add("E202", "`..base` works only for records", e.base.span)
            expr(st, e.base)
        else:
            expr(st, e.base, tcon, Why(f"the record `{name}` being updated"))
    given = _fields(st, e, target, name, declared, mapping, ok)
    if e.base is None:
        missing = [n for n, _, _ in declared if n not in given]
        if missing:
            st.problems.add(
                "E206",
                f"`{name}` is missing field{'s' if len(missing) > 1 else ''} "
                + ", ".join(f"`{m}`" for m in missing),
                e.span,
            )
    return tcon if ok else TError()


def _fields(
    st: BodyState,
    e: ast.RecordLiteral,
    target: RecordTarget,
    name: str,
    declared: list,
    mapping: dict,
    ok: bool,
) -> set:
    """Check each field a record literal gives against `declared` ((name, type, pub) of each);
    the names given."""
    info = target.info
    by_name = {n: (t, pub) for n, t, pub in declared}
    given = set()
    private_reported = False
    for fi in e.fields:
        if fi.name in given:
            st.problems.add("E207", f"field `{fi.name}` is given twice", fi.span)
            _field_init(st, fi, None)
            continue
        given.add(fi.name)
        if fi.name not in by_name:
            s = suggest(fi.name, list(by_name))
            related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", fi.span)] if s else []
            st.problems.add("E205", f"`{name}` has no field `{fi.name}`", fi.span, related=related)
            _field_init(st, fi, None)
            continue
        t, pub = by_name[fi.name]
        if not pub and info.module != st.env.key and not private_reported and ok:
            private_reported = True
            st.problems.add(
                "E109",
                f"field `{fi.name}` of `{name}` is private: `{name}` can be built only in its module",
                fi.span,
                related=[Related("declared here without `pub`", field_span(info, fi.name))],
            )
        _field_init(st, fi, subst(t, mapping), Why(f"the field `{fi.name}` of `{name}`"))
    return given


def _field_init(st: BodyState, fi: ast.FieldInit, t, why=None) -> None:
    if fi.value is not None:
        expr(st, fi.value, t, why)
        if t is not None:
            pure_slot(st, fi.value, t)
        return
    b = lookup(st, fi.name)
    if b is None:
        st.problems.add(
            "E101",
            f"unknown name `{fi.name}` (the shorthand `{fi.name}` means `{fi.name}: {fi.name}`)",
            fi.span,
        )
        st.types[fi.id] = TError()
        return
    use_local(st, b)
    st.refs[fi.id] = LocalRef(b.binder)
    st.types[fi.id] = b.type
    if t is not None and not unify(b.type, t):
        mismatch(st, b.type, t, fi.span, why)


def _record_target(st: BodyState, e: ast.RecordLiteral, expected) -> RecordTarget | None:
    c = e.ctor
    if isinstance(c, ast.FieldAccess) and isinstance(c.target, ast.Name):
        menv = st.d.alias_env(st.env, c.target.name, c.target.span)
        st.types[c.target.id] = st.d.unit()
        if menv is None:
            return None
        st.refs[c.target.id] = ModuleRef(menv.key)
        info = menv.cm.types.get(c.name)
        if info is not None and info.kind == "record":
            return RecordTarget(info, None)
        hit = menv.ctors.get(c.name)
        if hit is not None:
            return RecordTarget(hit[0], hit[1])
        st.problems.add(
            "E110", f"module `{c.target.name}` declares no record or constructor `{c.name}`", c.span
        )
        return None
    if not isinstance(c, ast.Name):
        st.problems.add("E101", "a record literal starts with a record type or constructor name", c.span)
        return None
    name = c.name
    exp = resolve(expected) if expected is not None else None
    if type(exp) is TCon:
        info = st.d.type_decls.get(exp.decl)
        if info is not None:
            if info.kind == "record" and info.name == name:
                return RecordTarget(info, None)
            for ct in info.ctors:
                if ct.name == name:
                    return RecordTarget(info, ct)
    info = st.env.cm.types.get(name) or st.d.prelude_types.get(name)
    if info is not None and info.kind == "record":
        mark_used(st, info.decl)
        return RecordTarget(info, None)
    hit = st.env.ctors.get(name) or st.d.prelude_ctors.get(name)
    if hit is not None:
        return RecordTarget(hit[0], hit[1])
    cands = [n for n, i in st.env.cm.types.items() if i.kind == "record"] + list(st.env.ctors)
    s = suggest(name, cands)
    related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", c.span)] if s else []
    st.problems.add("E101", f"unknown record type or constructor `{name}`", c.span, related=related)
    return None


def list_literal(st: BodyState, e: ast.ListLiteral, expected):
    exp = resolve(expected) if expected is not None else None
    if st.d.is_lang(exp, "List") and len(exp.args) == 1:
        elem = exp.args[0]
    else:
        elem = TVar()
    t = st.d.lang_con("List", elem)
    for i, x in enumerate(e.items):
        expr(
            st,
            x,
            elem,
            Why(
                "the elements of this list (the first one fixes their type)"
                if i
                else "the elements of this list"
            ),
        )
    return t


def dict_literal(st: BodyState, e: ast.DictLiteral, expected):
    exp = resolve(expected) if expected is not None else None
    if st.d.is_lang(exp, "Dict") and len(exp.args) == 2:
        k, v = exp.args
    else:
        k, v = TVar(), TVar()
    for kx, vx in e.entries:
        expr(st, kx, k, Why("the keys of this dict"))
        expr(st, vx, v, Why("the values of this dict"))
    st.data_reqs.append(DataReq(k, e.span, "a Dict key", st.fn.decl))
    return st.d.lang_con("Dict", k, v)


def tuple_literal(st: BodyState, e: ast.TupleLiteral, expected):
    exp = resolve(expected) if expected is not None else None
    if type(exp) is TTuple and len(exp.items) == len(e.items):
        items = [
            expr(st, x, t, Why(f"the {ordinal(i)} item of this tuple"))
            for i, (x, t) in enumerate(zip(e.items, exp.items))
        ]
    else:
        items = [expr(st, x) for x in e.items]
    return TTuple(tuple(items))
