"""Record literals and collections in a function body: the record or constructor a literal
names (through the expected type first), each field once and none missing, `..base` updates,
private fields across modules; list, dict and tuple literals, whose element types come from the
expected type when there is one. Constructs: `record`, `list_literal`, `dict_literal`,
`tuple_literal`."""

from __future__ import annotations

from flow2py.check import codes, unused_meant
from flow2py.check.body_state import BodyState, expr, lookup, mark_used, mismatch, use_local
from flow2py.check import suggest as sg
from flow2py.check.declare import field_span, ordinal
from flow2py.check.infer_calls import pure_slot
from flow2py.check.infer_ctx import DataReq, RecordTarget, Why
from flow2py.check.infer_names import ctor_access, declared_note, fresh_tcon
from flow2py.check.typed import CtorRef, LocalRef, ModuleRef, TCon, TError, TTuple
from flow2py.check.typeterms import TVar, known, resolve, subst, unify
from flow2py.diagnostics import Edit, Fix, Related
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
            st.problems.report(codes.WrongArity(e.span, "positional", ctor.name))
            for fi in e.fields:
                _field_init(st, fi, None)
            return TError()
        declared = list(zip(ctor.field_names, ctor.params, [True] * len(ctor.params)))
    else:
        declared = [(f.name, f.type, f.pub) for f in info.fields]
    if e.base is not None:
        if ctor is not None:
            st.problems.report(codes.WrongArity(e.base.span, "base"))
            expr(st, e.base)
        else:
            expr(st, e.base, tcon, Why(f"the record `{name}` being updated"))
    given = _fields(st, e, target, name, declared, mapping, ok)
    if e.base is None:
        missing = [n for n, _, _ in declared if n not in given]
        if missing:
            related, fixes = _declared_fields(target, missing), _in_scope_fix(st, e, missing)
            unused_meant.defer(
                st,
                0 if fixes else len(missing),
                lambda meant: st.problems.report(
                    codes.MissingField(e.span, tuple(missing), name),
                    related=related + unused_meant.notes(meant),
                    fixes=fixes,
                ),
            )
    return tcon if ok else TError()


def _in_scope_fix(st: BodyState, e: ast.RecordLiteral, missing: list) -> list:
    """Each missing field a local of that name holds, given as `name` (shorthand) before the
    closing brace: safe when every missing field has its local, none of them used yet (the
    binding left unused was meant for the field; it is then not also reported unused)."""
    src = st.env.lm.ast.source or ""
    sp = e.span
    binds = [lookup(st, n) for n in missing]
    if any(b is None or b.used for b in binds) or sp.end <= sp.start or src[sp.end - 1 : sp.end] != "}":
        return []
    i = sp.end - 1
    while i > sp.start and src[i - 1] in " \t\r\n":
        i -= 1
    sep = "" if src[i - 1] in "{," else ","
    text = sep + " " + ", ".join(missing) + (" " if src[i - 1] == "{" else "")
    for b in binds:
        b.used = True
    line = src.count("\n", 0, i) + 1
    col = i - (src.rfind("\n", 0, i) + 1) + 1
    at = ast.Span(sp.file, line, col, line, col, i, i)
    return [
        Fix(
            f"give {', '.join(f'`{n}`' for n in missing)}, the local{'s' if len(missing) > 1 else ''} of that name",
            (Edit(at, text),),
            True,
        )
    ]


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
    given: dict = {}
    meant = set()  # fields a misspelled one meant: not also missing (E206)
    private_reported = False
    for fi in e.fields:
        if fi.name in given:
            st.problems.report(
                codes.DuplicateField(fi.span, fi.name),
                related=[Related("first given here", given[fi.name].span)] + declared_note(info),
                fixes=_drop_field_fix(st, e, fi),
            )
            _field_init(st, fi, None)
            continue
        given[fi.name] = fi
        if fi.name not in by_name:
            unused = [n for n in by_name if n not in {f.name for f in e.fields}]
            sugg = _field_sugg(st, target, fi.name, list(by_name), unused)
            unknown = [f for f in e.fields if f.name not in by_name]
            typed = False
            if not sugg.cands and len(unknown) == 1 and len(unused) == 1:
                # one field given that the record does not have, one it has left out: one
                # mistake, the name; safe when the value is of that field's type
                _field_init(st, fi, None)
                typed = True
                vt = known(st.types.get(fi.value.id)) if fi.value is not None else None
                ft = known(subst(by_name[unused[0]][0], mapping))
                fits = type(vt) is TCon and type(ft) is TCon and vt == ft and not mapping
                c = sg.Candidate(unused[0], sg.FIELD, _field_decl_span(target, unused[0]), fits=fits)
                sugg = sg.Suggestion(fi.name, (c,))
            meant.update(c.text for c in sugg.cands)
            at = sg.sub_span(fi.span, st.env.lm.ast.source or "", fi.name) if fi.value is not None else None
            fixes = sugg.fixes(at) if at is not None else []
            if not sugg and not unused:
                fixes = _extra_field_fix(st, e, fi)
            st.problems.report(
                codes.UnknownField(fi.span, name, fi.name, sugg.said()),
                related=sugg.related() + declared_note(info),
                fixes=fixes,
            )
            if not typed:
                _field_init(st, fi, None)
            continue
        t, pub = by_name[fi.name]
        if not pub and info.module != st.env.key and not private_reported and ok:
            private_reported = True
            private = [n for n, _, p in declared if not p]
            lm = st.d.envs[info.module].lm
            st.problems.report(
                codes.PrivateName(fi.span, fi.name, "field", owner=name, building=True),
                related=[Related("declared here without `pub`", field_span(info, fi.name))],
                fixes=sg.pub_fix(
                    "the field" + ("s " if len(private) > 1 else " ") + ", ".join(f"`{n}`" for n in private),
                    [sg.pub_edit(lm, info.node, n) for n in private] if target.ctor is None else [None],
                ),
            )
        why = Why(f"the field `{fi.name}` of `{name}`", _field_decl_span(target, fi.name))
        _field_init(st, fi, subst(t, mapping), why)
    return set(given) | meant


def _field_decl_span(target: RecordTarget, name: str):
    """Where field `name` of the record (or of the constructor) is declared, for E201's note."""
    node = target.info.node
    if target.ctor is None:
        return field_span(target.info, name) if node is not None else None
    for c in getattr(node, "ctors", None) or ():
        if c.name == target.ctor.name:
            for f in c.named or ():
                if f.name == name:
                    return f.span
    return None


def _declared_fields(target: RecordTarget, names) -> list:
    """Where the record (or constructor) the literal builds is declared, for E206."""
    what = target.ctor.name if target.ctor else target.info.name
    sp = _field_decl_span(target, names[0]) if names else None
    if target.ctor is None:
        return declared_note(target.info)
    return [Related(f"`{what}` is declared here", sp)] if sp is not None else declared_note(target.info)


def _field_sugg(st: BodyState, target: RecordTarget, name: str, names: list, unused: list):
    """The declared fields `name` may have meant; those not given yet first."""
    cands = [sg.Candidate(n, sg.FIELD, _field_decl_span(target, n)) for n in names]
    sugg = sg.suggest(name, [c for c in cands if c.text in unused], sg.FIELD)
    return sugg if sugg.cands else sg.suggest(name, cands, sg.FIELD)


def _drop_field_fix(st: BodyState, e: ast.RecordLiteral, fi: ast.FieldInit) -> list:
    """Removing a field given twice, when it is given twice the same way (no choice then)."""
    src = st.env.lm.ast.source or ""
    first = next(f for f in e.fields if f.name == fi.name)
    a, b = first.span, fi.span
    if b.end <= b.start or a.end <= a.start or src[a.start : a.end] != src[b.start : b.end]:
        return []
    i = b.start
    while i > 0 and src[i - 1] in " \t":
        i -= 1
    if i == 0 or src[i - 1] != ",":
        return []
    sp = ast.Span(b.file, b.line, b.column - (b.start - i + 1), b.end_line, b.end_column, i - 1, b.end)
    return [Fix(f"remove the second `{fi.name}`", (Edit(sp, ""),), True)]


def _extra_field_fix(st: BodyState, e: ast.RecordLiteral, fi: ast.FieldInit) -> list:
    """A field the record does not have, given when every field it has is given
    (`Halted { stage: s, log: l, version: v }`): removing it is the fix, with the comma before
    it (or after it, when it is first). Safe when its value is a literal, or a local already used
    before (nothing becomes unused and no call is dropped); to review otherwise."""
    src = st.env.lm.ast.source or ""
    sp = fi.span
    if sp.end <= sp.start or len(e.fields) < 2:
        return []
    v = fi.value
    b = lookup(st, v.name) if type(v) is ast.Name else lookup(st, fi.name) if v is None else None
    safe = type(v) is ast.Literal or (b is not None and b.used)
    i = sp.start
    while i > 0 and src[i - 1] in " \t\r\n":
        i -= 1
    if src[i - 1 : i] == ",":
        start, end = i - 1, sp.end
    else:
        j = sp.end
        while j < len(src) and src[j] in " \t":
            j += 1
        if src[j : j + 1] != ",":
            return []
        j += 1
        while j < len(src) and src[j] in " \t":
            j += 1
        start, end = sp.start, j
    first_line = src.count("\n", 0, start) + 1
    col = start - (src.rfind("\n", 0, start) + 1) + 1
    end_line = src.count("\n", 0, end) + 1
    end_col = end - (src.rfind("\n", 0, end) + 1) + 1
    at = ast.Span(sp.file, first_line, col, end_line, end_col, start, end)
    return [Fix(f"remove the field `{fi.name}`", (Edit(at, ""),), safe)]


def _field_init(st: BodyState, fi: ast.FieldInit, t, why=None) -> None:
    if fi.value is not None:
        expr(st, fi.value, t, why)
        if t is not None:
            pure_slot(st, fi.value, t)
        return
    b = lookup(st, fi.name)
    if b is None:
        locals_ = [x for x in sg.value_candidates(st.d, st.env, st.scopes) if x.target[0][0] == "local"]
        sugg = sg.suggest(fi.name, locals_, sg.VALUE)
        sg.count_as_used(st.d, st.env, sugg)
        fixes = [
            Fix(
                f"write `{fi.name}: {x.text}`", (Edit(fi.span, f"{fi.name}: {x.text}"),), len(sugg.cands) == 1
            )
            for x in sugg.cands
            if fi.span.end > fi.span.start
        ]
        st.problems.report(
            codes.UnknownName(fi.span, fi.name, "shorthand", suggestion=sugg.said()),
            related=sugg.related(),
            fixes=fixes,
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
        cands = [
            x
            for x in sg.type_candidates(st.d, menv) + sg.value_candidates(st.d, menv)
            if "." not in x.text and x.key[:1].isupper() and _has_fields(st, x) and _public(st, x, menv)
        ]
        sugg = sg.suggest(c.name, cands, sg.CTOR)
        sugg = sg.Suggestion(
            c.name,
            tuple(
                sg.Candidate(**{**x.__dict__, "use_path": None, "fits": _buildable(st, x)})
                for x in sugg.cands
            ),
        )
        at = c.name_span if c.name_span.line else None
        st.problems.report(
            codes.UnknownMember(c.span, c.target.name, c.name, "record or constructor", sugg.said()),
            related=sugg.related(),
            fixes=sugg.fixes(at) if at is not None else [],
        )
        return None
    if not isinstance(c, ast.Name):
        st.problems.report(codes.UnknownName(c.span, "", "record-head"))
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
    exp_decl = exp.decl if type(exp) is TCon else None
    cands = [
        x
        for x in sg.type_candidates(st.d, st.env) + sg.value_candidates(st.d, st.env, (), exp_decl)
        if x.key[:1].isupper() and _has_fields(st, x)
    ]
    sugg = sg.suggest(name, cands, sg.CTOR)
    sugg = sg.Suggestion(
        name, tuple(sg.Candidate(**{**x.__dict__, "fits": _buildable(st, x)}) for x in sugg.cands)
    )
    sg.count_as_used(st.d, st.env, sugg, st.fn.decl)
    st.problems.report(
        codes.UnknownName(c.span, name, "record", suggestion=sugg.said()),
        related=sugg.related(),
        fixes=sugg.fixes(c.span, sg.use_site(st.env.lm.ast)),
    )
    return None


def _buildable(st: BodyState, c) -> bool:
    """Whether this module may build what candidate `c` names (a record of another module with
    a private field, or an opaque type, may not: renaming to it is then not a safe fix)."""
    for kind, v in c.target:
        if kind == "decl":
            info = st.d.type_decls.get(v)
            if info is None:
                return False
            if info.module == st.env.key:
                return True
            if info.opaque or not info.pub:
                return False
            return c.kind != sg.TYPE or all(f.pub for f in info.fields)
    return False


def _public(st: BodyState, c, menv) -> bool:
    """Whether candidate `c` (a declaration of module `menv`) may be named from this module."""
    if menv is st.env:
        return True
    for kind, v in c.target:
        if kind == "decl":
            info = st.d.type_decls.get(v)
            return info is not None and info.pub and info.module == menv.key
    return False


def _has_fields(st: BodyState, c) -> bool:
    """Whether candidate `c` names a record type or a constructor with named fields."""
    for kind, v in c.target:
        if kind == "decl":
            info = st.d.type_decls.get(v)
            if info is None:
                return False
            if c.kind == sg.TYPE:
                return info.kind == "record"
            return any(x.name == c.key and x.field_names is not None for x in info.ctors)
    return False


def list_literal(st: BodyState, e: ast.ListLiteral, expected):
    exp = resolve(expected) if expected is not None else None
    if st.d.is_lang(exp, "List") and len(exp.args) == 1:
        elem = exp.args[0]
    else:
        elem = TVar()
    t = st.d.lang_con("List", elem)
    why, mark = st.why_in, len(st.problems.items)
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
    _values_for_thunks(st, e, why, mark)
    return t


def _values_for_thunks(st: BodyState, e: ast.ListLiteral, why, mark: int) -> None:
    """Several elements of a list of functions of no parameters given as the values they would
    return (`task.all([fetch(a), fetch(b)])`): one mistake, one E201 over them whose fix puts
    `flow() = ` before each, safe when each would be."""
    spans = {x.span for x in e.items}
    found = [
        d
        for d in st.problems.items[mark:]
        if d.code == "E201" and getattr(d.data, "hint", "") == "thunk" and d.span in spans
    ]
    if len(found) < 2:
        return
    st.problems.items = [d for d in st.problems.items if all(d is not f for f in found)]
    first = found[0].data
    edits = tuple(ed for d in found for ed in d.fixes[0].edits)
    safe = all(d.fixes[0].safe for d in found)
    because = why.text if why is not None else None
    related = (
        [Related(why.text, why.span)] if why is not None and why.span is not None and why.span.line else []
    )
    st.problems.report(
        codes.TypeMismatch(
            found[0].span.merge(found[-1].span),
            first.found,
            first.expected,
            because=because,
            hint="thunks",
            items=len(found),
        ),
        related=related,
        fixes=[Fix("make each a function: `flow() = ...`", edits, safe)],
    )


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
