"""Names, values and field access in a function body: a local or a top-level name (a
constructor of the expected type first), a function or constructor used as a value, fresh
type variables for a generic use, `alias.name` through an imported module, and reading a
record field (with its visibility rules). Constructs: `literal`, `name`, `field_access`; the
rest is shared with the other parts of the walk."""

from __future__ import annotations

import re

from flow2py.check.body_state import (
    BodyState,
    empty_collection,
    expr,
    lookup,
    mark_used,
    same_type,
    show,
    use_local,
)
from flow2py.check import codes, missing_try, unused_meant
from flow2py.check import suggest as sg
from flow2py.check.annotations import name_span
from flow2py.check.declare import field_span
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
from flow2py.syntax.broken import HOLE
from flow2py.syntax.codes import ForeignSyntax
from flow2py.diagnostics import Diagnostic, Edit, Fix, Related
from flow2py.syntax import ast


def literal(st: BodyState, e: ast.Literal, expected):
    info = st.d.literal_types.get(e.kind)
    return st.d.con0(info.decl) if info else TError()


def name(st: BodyState, e: ast.Name, expected):
    if e.name == HOLE:
        _record_index(st, e)
    b = lookup(st, e.name)
    if b is not None:
        use_local(st, b)
        st.refs[e.id] = LocalRef(b.binder)
        return b.type
    hit = resolve_value(st, e.name, expected, e.span)
    return value_of(st, e, hit)


_INDEX = re.compile(r'([a-z_][A-Za-z0-9_]*)\["([a-z_][A-Za-z0-9_]*)"\]')


def _record_index(st: BodyState, e: ast.Name) -> None:
    """`invoice["number"]` (E012, a hole) where `invoice` is a local record with a field
    `number`: not a Dict's key but the field, so the answer becomes `invoice.number`, a safe fix."""
    src = st.env.lm.ast.source or ""
    m = _INDEX.fullmatch(src[e.span.start : e.span.end])
    b = lookup(st, m.group(1)) if m else None
    t = resolve(b.type) if b is not None else None
    info = st.d.type_decls.get(t.decl) if type(t) is TCon else None
    if info is None or info.kind != "record" or not any(f.name == m.group(2) for f in info.fields):
        return
    items = st.problems.items
    k = next(
        (
            j
            for j, d in enumerate(items)
            if d.code == "E012"
            and getattr(d.data, "kind", "") == "index"
            and e.span.start <= d.span.start
            and d.span.end <= e.span.end
        ),
        None,
    )
    if k is None:
        return
    use_local(st, b)
    flow = f"{m.group(1)}.{m.group(2)}"
    at = items[k].span
    data = ForeignSyntax(at, "record-index", src[e.span.start : e.span.end], flow)
    items[k] = Diagnostic.of(data, fixes=[Fix(f"write `.{m.group(2)}`", (Edit(at, f".{m.group(2)}"),), True)])


def resolve_value(st: BodyState, name: str, expected, span, called: bool = False, arity: int | None = None):
    """A top-level name: a constructor of the expected type, a function or constructor of
    this module, a prelude constructor. Returns a FnHit, a CtorHit or None (reported).
    `called`: the name is a call's callee (never what an unused local meant). `arity`: the
    number of arguments it is called with (a suggestion taking another is no safe fix)."""
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
    _unknown_name(st, name, span, exp, called=called, arity=arity)
    return None


def habit_call(st: BodyState, e: ast.Call):
    """`len(x)`: another language's function of one value that Flow writes as a method of the
    home module of x's type (`x.length()`). When x's type picks one such method, E101 is reported
    with the safe fix `x.length()` and the call has that method's result type (when it is not
    generic); None when the rule does not apply (nothing is reported or inferred then)."""
    callee, env = e.callee, st.env
    name = callee.name
    if len(e.args) != 1 or type(e.args[0]) is ast.Lambda or not callee.span.line:
        return None
    if name in env.cm.fns or name in env.ctors or name in st.d.prelude_ctors or name in env.lm.aliases:
        return None
    methods = sg.method_habit(name)
    if not methods:
        return None
    (arg,) = e.args
    t = resolve(expr(st, arg))
    fns = []
    if type(t) is TCon:
        home = t.decl.split("::")[0]
        menv = st.d.envs.get(home)
        for m in sorted(methods):
            fn = menv.cm.fns.get(m) if menv else None
            if fn is not None and len(fn.params) == 1 and (fn.pub or home == st.env.key):
                first = resolve(fn.params[0][1])
                if type(first) is TCon and first.decl == t.decl:
                    fns.append(fn)
        if not fns:  # `str(severity)`: a generic std function of any value (`severity.to_text()`)
            fns = [
                g
                for m in sorted(methods)
                if (g := st.d.generic_fns.get(m)) is not None and len(g.params) == 1
            ]
    source = env.lm.ast.source or ""
    fixes = []
    if len(fns) == 1 and e.span.end <= len(source) and arg.span.end <= len(source):
        text = source[arg.span.start : arg.span.end]
        # the home module imported: `list.length(xs)`, as the file already names it (the `use`
        # stays used); else the method, `xs.length()`
        alias = next((a for a, k in env.lm.aliases.items() if k == fns[0].module), None)
        if alias is not None:
            written = f"{alias}.{fns[0].name}({text})"
        else:
            if not isinstance(arg, (ast.Name, ast.FieldAccess, ast.Call)):
                text = f"({text})"
            written = f"{text}.{fns[0].name}()"
        fixes = [Fix(f"write `{written}`", (Edit(e.span, written),), True)]
    elif type(t) is TCon and e.span.end <= len(source) and arg.span.end <= len(source):
        fixes = _conversion_fixes(st, name, e, t, source)
    _unknown_name(st, name, callee.span, None, fixes=fixes, called=True)
    res = resolve(fns[0].result) if len(fns) == 1 else None
    return res if type(res) is TCon and not res.args else TError()


def _conversion_fixes(st: BodyState, name: str, e: ast.Call, t: TCon, source: str) -> list:
    """`float(d)` where `d` is already what the conversion gives (a Decimal): the value alone,
    a safe fix; another type the habit's functions do not take: each of them offered, to review
    (`int.to_decimal` is no fix for a Text)."""
    targets = sg.habit_targets(name)
    results = []
    for target in targets:
        module, fn_name = target.rsplit(".", 1)
        menv = st.d.envs.get(f"std@v1/{module}")
        fn = menv.cm.fns.get(fn_name) if menv else None
        results.append(resolve(fn.result) if fn is not None else None)
    if targets and all(type(r) is TCon and r == t for r in results):
        text = source[e.args[0].span.start : e.args[0].span.end]
        kind = t.decl.split("::")[-1]
        return [Fix(f"write `{text}`: it is already a {kind}", (Edit(e.span, text),), True)]
    return [Fix(f"replace `{name}` with `{x}`", (Edit(e.callee.span, x),), False) for x in targets]


_MATH_MODULES = frozenset({"Math", "math"})  # JavaScript's, Python's (not imported: no such module)


def math_call(st: BodyState, e: ast.Call):
    """`Math.abs(x)`, `Math.max(a, b)`, `math.floor(d)`: JavaScript's (or Python's) math functions
    of a number, which Flow writes as a method of the number's home module (`x.abs()`,
    `a.max(b)`, `d.floor()`). When that module has the function, taking the values given, E101
    is reported at `Math` with the method call as a safe fix and the call has its result type;
    None when the rule does not apply."""
    callee, env = e.callee, st.env
    target = callee.target
    if type(target) is not ast.Name or target.name not in _MATH_MODULES or not e.args:
        return None
    if lookup(st, target.name) is not None or target.name in env.lm.aliases or not target.span.line:
        return None
    if any(type(a) is ast.Lambda for a in e.args):
        return None
    types = [resolve(expr(st, a)) for a in e.args]
    t = types[0]
    menv = st.d.envs.get(t.decl.split("::")[0]) if type(t) is TCon else None
    fn = menv.cm.fns.get(callee.name) if menv else None
    fits = (
        fn is not None
        and (fn.pub or fn.module == env.key)
        and len(fn.params) == len(e.args)
        and all(
            type(resolve(pt)) is TCon and resolve(pt).decl == at.decl
            for (_, pt), at in zip(fn.params, types)
            if type(at) is TCon
        )
    )
    source = env.lm.ast.source or ""
    fixes = []
    if fits and all(type(a) is TCon for a in types) and e.span.end > e.span.start:
        first, *rest = (source[a.span.start : a.span.end] for a in e.args)
        if not isinstance(e.args[0], (ast.Name, ast.FieldAccess, ast.Call, ast.Literal)):
            first = f"({first})"
        written = f"{first}.{callee.name}({', '.join(rest)})"
        fixes = [Fix(f"write `{written}`", (Edit(e.span, written),), True)]
    st.problems.report(codes.UnknownName(target.span, target.name, "math"), fixes=fixes)
    res = resolve(fn.result) if fits else None
    return res if type(res) is TCon and not res.args else TError()


def _unknown_name(
    st: BodyState, name: str, span, exp=None, fixes=None, called: bool = False, arity: int | None = None
) -> None:
    env = st.env
    if name in env.lm.aliases:
        st.problems.report(codes.UnknownName(span, name, "module-value"))
        return
    exp_decl = exp.decl if type(exp) is TCon else None
    cands = sg.value_candidates(st.d, env, st.scopes, exp_decl)
    empty = empty_collection(st, exp) if name in sg.ABSENT_SPELLINGS else None
    if empty is not None:
        note = f"Flow has no `{name}`: an empty {empty[1]} is `{empty[0]}`"
        sugg = sg.Suggestion(name, (sg.Candidate(empty[0], sg.VALUE, note=note, exact=True),))
    else:
        sugg = sg.suggest(name, cands, sg.CTOR if name[:1].isupper() else sg.VALUE)
    if not sugg and type(exp) is TCon and not name[:1].isupper():
        sugg = _abbreviation(st, name, cands, exp)
    sugg = sg.Suggestion(name, tuple(_fitted(st, c, exp, arity) for c in sugg.cands), sugg.note)
    sg.count_as_used(st.d, env, sugg, st.fn.decl)
    if not sugg and not fixes and not called and name[:1].islower():
        unused_meant.defer(st, 1, lambda meant: _unknown_local(st, name, span, meant))
        return
    st.problems.report(
        codes.UnknownName(span, name, "name", suggestion=sugg.said()),
        related=sugg.related(),
        fixes=sugg.fixes(span, sg.use_site(env.lm.ast)) if not fixes else fixes,
    )


def _unknown_local(st: BodyState, name: str, span, meant) -> None:
    """E101 of a name with nothing close, once the function is walked: a local in scope there
    that is never used is what it most likely meant (unused_meant.py), to review (either name
    may be the one to change)."""
    if not meant:
        st.problems.report(codes.UnknownName(span, name, "name", suggestion=sg.Suggestion(name)))
        return
    (b,) = meant
    c = sg.Candidate(b.name, sg.VALUE, note=f"did you mean `{b.name}`? It is bound and never used")
    fixes = (
        [Fix(f"replace `{name}` with `{b.name}`", (Edit(span, b.name),), False)]
        if span.end > span.start
        else []
    )
    st.problems.report(
        codes.UnknownName(span, name, "name", suggestion=sg.Suggestion(name, (c,))),
        related=unused_meant.notes(meant),
        fixes=fixes,
    )


_LITERAL_HABITS = {"true": "Bool", "false": "Bool"}


def _abbreviation(st: BodyState, name: str, cands, exp) -> sg.Suggestion:
    """`cust` where a Customer is expected: of the locals `cust` shortens (`customer`,
    `custom_note`), the one of the type expected."""
    hits = [
        c
        for c in sg.prefix_hits(name, cands, sg.VALUE)
        if any(k == "local" and type(resolve(v.type)) is TCon and resolve(v.type) == exp for k, v in c.target)
    ]
    return sg.Suggestion(name, tuple(hits) if len(hits) == 1 else ())


def _takes(st: BodyState, c: sg.Candidate) -> int | None:
    """How many values the function or constructor `c` names takes (None: not known)."""
    for kind, v in c.target:
        if kind == "local":
            t = resolve(v.type)
            return len(t.params) if type(t) is TFun else None
        if kind == "decl":
            fn = st.d.fn_decls.get(v)
            if fn is not None:
                return len(fn.params)
            info = st.d.type_decls.get(v)
            ctor = next((k for k in info.ctors if k.name == c.key), None) if info is not None else None
            return len(ctor.params) if ctor is not None and ctor.field_names is None else None
    return None


def _fitted(st: BodyState, c: sg.Candidate, exp, arity=None) -> sg.Candidate:
    """`c`, marked as not fitting when what is known of its type says it is not the expected
    one, or it takes another number of values than the call gives (its fix is then offered, not
    marked safe)."""
    if arity is not None and _takes(st, c) not in (arity, None):
        return sg.Candidate(**{**c.__dict__, "fits": False})
    if type(exp) is not TCon:
        return c
    t = None
    for kind, v in c.target:
        if kind == "local":
            t = resolve(v.type)
    lang = _LITERAL_HABITS.get(c.text) or ("Option" if c.text == "None" else None)
    if lang is not None:
        info = st.d.lang_types.get(lang)
        t = st.d.con0(info.decl) if info else None
    if type(t) is TCon and t.decl != exp.decl:
        return sg.Candidate(**{**c.__dict__, "fits": False})
    if type(t) not in (TCon, type(None)):
        return sg.Candidate(**{**c.__dict__, "fits": False})
    return c


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
        st.problems.report(codes.WrongArity(e.span, "named-value", c.name))
        return TError()
    if c.params:
        return TFun(tuple(subst(p, mapping) for p in c.params), tcon, PURE)
    return tcon


def ctor_decl(info: TypeInfo, name: str):
    """The declaration of constructor `name` (E202's note), if the type's node has it."""
    for cd in getattr(info.node, "ctors", None) or ():
        if cd.name == name and cd.span.line:
            return cd
    return None


def empty_parens(st: BodyState, span, info: TypeInfo, name: str, pattern: bool) -> None:
    """E202 for `Name()` of a constructor that takes no values (a value or a pattern), with the
    safe fix that removes the `()`: Flow writes such a constructor bare (`Lost`)."""
    src = st.env.lm.ast.source or ""
    text = src[span.start : span.end]
    i = text.rfind("(")
    fixes = []
    if i > 0 and "\n" not in text and text[i + 1 :].strip() == ")":
        at = ast.Span(
            span.file, span.line, span.column + i, span.end_line, span.end_column, span.start + i, span.end
        )
        fixes = [Fix(f"write `{text[:i].rstrip()}`", (Edit(at, ""),), True)]
    form = "unit-pattern" if pattern else "unit"
    decl = ctor_decl(info, name)
    related = [Related(f"`{name}` is declared here", decl.span)] if decl is not None else []
    st.problems.report(codes.WrongArity(span, form, name), related=related, fixes=fixes)


def ctor_access(st: BodyState, info: TypeInfo, span) -> bool:
    """Whether this module may build or take apart values of `info` (E114, E109 when not)."""
    if info.module != st.env.key:
        if info.opaque:
            st.problems.report(
                codes.OpaqueConstruction(span, info.name, reading=False),
                related=opaque_note(info),
            )
            return False
        if not info.pub:
            st.problems.report(
                codes.PrivateName(span, info.name, "type"),
                related=[Related("declared here without `pub`", name_span(info.node))],
                fixes=sg.pub_fix(f"`{info.name}`", [sg.pub_edit(st.d.envs[info.module].lm, info.node)]),
            )
            return False
    return True


def opaque_note(info: TypeInfo) -> list[Related]:
    """Where an opaque type is declared: its module builds and takes apart its values."""
    return [Related(f"`{info.name}` is declared `opaque` here", name_span(info.node))] if info.node else []


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


def qualified(st: BodyState, e: ast.FieldAccess, called: bool = False, arity: int | None = None):
    """`alias.name` where `alias` is a module: a FnHit, a CtorHit, QUALIFIED_ERROR (reported) or None (not qualified).
    `called`: `e` is the callee of a call; `arity`: the number of arguments it is called with, as
    for resolve_value."""
    t = e.target
    if not isinstance(t, ast.Name) or lookup(st, t.name) is not None:
        return None
    env = st.env
    if t.name not in env.lm.aliases:
        if t.name in env.cm.fns or t.name in env.ctors or t.name in st.d.prelude_ctors:
            return None
        hit = _ctor_through_type(st, t, e)
        if hit is not None:
            return hit
        _unknown_qualifier(st, t, e, called)
        return QUALIFIED_ERROR
    menv = st.d.alias_env(env, t.name, t.span)
    st.types[t.id] = st.d.unit()
    if menv is None:
        return QUALIFIED_ERROR
    st.refs[t.id] = ModuleRef(menv.key)
    fn = menv.cm.fns.get(e.name)
    if fn is not None:
        if not fn.pub and menv is not env:
            st.problems.report(
                codes.PrivateName(e.span, e.name, "function", module=t.name),
                related=[Related("declared here without `pub`", name_span(fn.node))],
                fixes=sg.pub_fix(f"`{e.name}`", [sg.pub_edit(menv.lm, fn.node)]),
            )
            st.d.used.add(fn.decl)  # reported once: not also E405 in its module
            return QUALIFIED_ERROR
        return FnHit(fn)
    hit = menv.ctors.get(e.name)
    if hit is not None:
        return CtorHit(hit[0], hit[1])
    cands = [
        sg.Candidate(n, sg.VALUE, sg._decl_span(f.node), target=(("decl", f.decl),))
        for n, f in menv.cm.fns.items()
        if f.pub or menv is env
    ] + [
        sg.Candidate(n, sg.CTOR, sg._ctor_span(i, n), target=(("decl", i.decl),))
        for n, (i, _) in menv.ctors.items()
        if i.pub or menv is env
    ]
    sugg = sg.suggest(e.name, cands, sg.CTOR if e.name[:1].isupper() else sg.VALUE, member=True)
    sugg = sg.Suggestion(e.name, tuple(_fitted(st, c, None, arity) for c in sugg.cands), sugg.note)
    at = e.name_span if e.name_span.line else None
    fixes = sugg.fixes(at) if at is not None else []
    # a constructor only: `clock.wait(d)` beside this module's `wait` most likely meant clock's
    if menv is not env and e.name[:1].isupper() and not any(c.text[:1].isupper() for c in sugg.cands):
        sugg, fixes = _declared_here(st, e, sugg, fixes)
    sg.count_as_used(st.d, env, sugg, st.fn.decl)
    st.problems.report(
        codes.UnknownMember(e.span, t.name, e.name, suggestion=sugg.said()),
        related=sugg.related(),
        fixes=fixes,
    )
    return QUALIFIED_ERROR


def _declared_here(st: BodyState, e: ast.FieldAccess, sugg: sg.Suggestion, fixes: list):
    """`signer.Late` where the module `signer` declares nothing like `Late` of its kind (a
    constructor, a function) and this module declares `Late`: the qualifier is the mistake, and
    the name alone is the fix (safe: it names the one declaration of that name in reach
    unqualified). Else `sugg` and its `fixes` as they were."""
    env = st.env
    note = f"`{e.name}` is declared in this module: write it unqualified"
    if e.name in env.ctors:
        info = env.ctors[e.name][0]
        where, decl, kind = sg._ctor_span(info, e.name), info.decl, sg.CTOR
    elif e.name in env.cm.fns:
        f = env.cm.fns[e.name]
        where, decl, kind = sg._decl_span(f.node), f.decl, sg.VALUE
    else:
        return sugg, fixes
    cand = sg.Candidate(e.name, kind, where, target=(("decl", decl),), note=note)
    return sg.Suggestion(e.name, (cand,)), [Fix(f"write `{e.name}`", (Edit(e.span, e.name),), True)]


def _ctor_through_type(st: BodyState, t: ast.Name, e: ast.FieldAccess) -> CtorHit | None:
    """`Role.User` (Kotlin, TypeScript, Java's enums) of a type this module declares: Flow names
    the constructor alone, `User`, a safe fix while that name means it here; checked as meant."""
    info = st.env.cm.types.get(t.name)
    hit = st.env.ctors.get(e.name)
    if info is None or hit is None or hit[0].decl != info.decl or lookup(st, e.name) is not None:
        return None
    st.types[t.id] = TError()
    where = sg._ctor_span(info, e.name)
    st.problems.report(
        codes.UnknownName(t.span, t.name, "type-qualifier", owner=e.name),
        related=[Related(f"`{e.name}` is declared here", where)] if where is not None and where.line else [],
        fixes=[Fix(f"write `{e.name}`", (Edit(e.span, e.name),), True)] if e.span.end > e.span.start else [],
    )
    return CtorHit(hit[0], hit[1])


def _unknown_qualifier(st: BodyState, t: ast.Name, e: ast.FieldAccess, called: bool = False) -> None:
    """`x.name` where `x` is neither a local, a declaration nor an imported module: most often a
    misspelled module alias (`plannr.next`) or a module not imported (`task.spawn`)."""
    env = st.env
    st.types[t.id] = TError()
    if sg.failed_alias_near(env, t.name):
        return  # the `use` that did not resolve is the mistake (E103), said once
    if (st.fn.decl, t.name) in st.unknown_qualifiers:
        # said at its first use in this function, with no safe fix (`time.Sleep(30 * time.Second)`);
        # one with a safe fix is reported at each use, each its own edit
        return
    locals_ = [
        c for c in sg.value_candidates(st.d, env, st.scopes) if c.kind == sg.VALUE and "." not in c.text
    ]
    cands = sg.module_candidates(st.d, env, e.name) + locals_
    sugg = sg.suggest(t.name, cands, sg.MODULE)
    if t.name in ("self", "this") and not sugg.cands:
        sugg = _self_meant(st, t.name, e.name, locals_)
    if not sugg and (called or e.name[:1].isupper()):
        # a call (`time.sleep(d)`) or a constructor: not a record field of a misspelled local
        sugg = _module_by_member(st, t.name, e.name, cands)
    if not sugg and (called or e.name[:1].isupper()):
        # `console.log(x)` where this module declares `log`: the qualifier is the mistake
        own, fixes = _declared_here(st, e, sugg, [])
        if fixes:
            sg.count_as_used(st.d, env, own, st.fn.decl)
            data = codes.UnknownName(t.span, t.name, "qualifier", suggestion=own.said())
            st.problems.report(data, related=own.related(), fixes=fixes)
            return
    if not st.d.first_missing_use(env, sugg):
        return
    sg.count_as_used(st.d, env, sugg, st.fn.decl)
    is_module = not sugg.cands or any(c.kind == sg.MODULE for c in sugg.cands)
    what = "module" if is_module and (sugg.cands or t.name[:1].islower()) else "name"
    data = codes.UnknownName(t.span, t.name, what if sugg else "qualifier", suggestion=sugg.said())
    fixes = sugg.fixes(t.span, sg.use_site(env.lm.ast))
    st.problems.report(data, related=sugg.related(), fixes=fixes)
    if not any(f.safe for f in fixes):
        st.unknown_qualifiers.add((st.fn.decl, t.name))


def _module_by_member(st: BodyState, name: str, member: str, cands) -> sg.Suggestion:
    """`time.sleep` (Python), no alias near `time`: the one module, imported or std's, that
    declares `sleep` is what was meant (`clock.sleep`); none or several, nothing is said."""
    hits = []
    for c in cands:
        key = st.env.lm.aliases.get(c.text) if c.use_path is None else c.use_path
        menv = st.d.envs.get(key) if c.kind == sg.MODULE and c.fits and key else None
        if menv is None or menv is st.env:
            continue
        fn = menv.cm.fns.get(member)
        ctor = menv.ctors.get(member)
        if (fn is not None and fn.pub) or (ctor is not None and ctor[0].pub):
            hits.append((c, member))
            continue
        # Go's `time.Sleep`: the function is the member in Flow's case, `sleep`
        fn = menv.cm.fns.get(sg.snake(member[:1].lower() + member[1:])) if member[:1].isupper() else None
        if fn is not None and fn.pub:
            hits.append((c, fn.name))
    if len(hits) != 1:
        return sg.Suggestion(name, ())
    c, written = hits[0]
    note = f"`{member}` is `{c.text}.{written}`"
    # spelled otherwise: replacing the qualifier alone is not the whole fix (to review)
    fits = c.fits and written == member
    return sg.Suggestion(name, (sg.Candidate(**{**c.__dict__, "note": note, "fits": fits}),))


def _self_meant(st: BodyState, name: str, field: str, locals_) -> sg.Suggestion:
    """`self.body` (Python, Rust, JavaScript's `this`): Flow's functions take their record as a
    parameter; the one local whose record type has the field is what was meant."""
    hits = []
    for c in locals_:
        b = dict(c.target).get("local")
        t = resolve(b.type) if b is not None else None
        info = st.d.type_decls.get(t.decl) if type(t) is TCon else None
        if info is not None and info.kind == "record" and any(f.name == field for f in info.fields):
            hits.append(c)
    return sg.Suggestion(name, tuple(hits) if len(hits) == 1 else ())


def field_access(st: BodyState, e: ast.FieldAccess, expected):
    q = qualified(st, e)
    if q is not None:
        if q is QUALIFIED_ERROR:
            return TError()
        return value_of(st, e, q)
    tt = resolve(expr(st, e.target))
    return read_field(st, e, tt, expected)


def _field_of_type(st: BodyState, info: TypeInfo, name: str, expected) -> sg.Suggestion:
    """`q.name` where no field is spelled close: the record's one field of the type expected
    there (`guest`, its one Text field), said and offered to review (the name is not a
    misspelling of it, so which field was meant is the author's to say)."""
    want = resolve(expected) if expected is not None else None
    if type(want) is not TCon or not info.fields:
        return sg.Suggestion(name)
    fits = [f for f in info.fields if (f.pub or info.module == st.env.key) and same_type(f.type, want)]
    if len(fits) != 1:
        return sg.Suggestion(name)
    f = fits[0]
    note = f"its one `{show(st, want)}` field is `{f.name}`"
    return sg.Suggestion(name, (sg.Candidate(f.name, sg.FIELD, field_span(info, f.name), note=note),))


def read_field(st: BodyState, e: ast.FieldAccess, tt, expected=None):
    """The type of `e.name` read from a value of type `tt`, with its visibility rules."""
    if type(tt) is TError or type(tt) is TNever:
        return TError()
    if type(tt) is TVar:
        st.problems.report(codes.CannotInfer(e.target.span, "field", e.name))
        return TError()
    if type(tt) is TCon:
        ok = missing_try.field_through(st, e, tt, lambda: read_field(st, e, tt))
        if ok is not None:
            return read_field(st, e, ok)
        info = st.d.type_decls.get(tt.decl)
        if info is not None and info.kind == "record":
            for f in info.fields:
                if f.name == e.name:
                    if info.module != st.env.key:
                        if info.opaque:
                            st.problems.report(
                                codes.OpaqueConstruction(e.span, info.name, reading=True),
                                related=opaque_note(info),
                            )
                            return TError()
                        if not f.pub:
                            st.problems.report(
                                codes.PrivateName(e.span, e.name, "field", owner=info.name),
                                related=[Related("declared here without `pub`", field_span(info, e.name))],
                                fixes=sg.pub_fix(
                                    f"the field `{e.name}`",
                                    [sg.pub_edit(st.d.envs[info.module].lm, info.node, e.name)],
                                ),
                            )
                            return TError()
                    st.refs[e.id] = FieldRef(info.decl, f.name)
                    return subst(f.type, {(info.decl, p): a for p, a in zip(info.type_params, tt.args)})
            sugg = field_suggestion(info, e.name, st.env.key)
            at = e.name_span if e.name_span.line else None
            fn = None if sugg else _method_instead(st, e, tt)
            if fn is not None:
                _e205_call(st, e, info.name, fn)
                return TError()
            by_type = not sugg and not info.type_params
            if by_type:
                sugg = _field_of_type(st, info, e.name, expected)
            st.problems.report(
                codes.UnknownField(e.span, info.name, e.name, sugg.said()),
                related=sugg.related() + declared_note(info),
                fixes=sugg.fixes(at, safe_ok=not by_type) if at is not None else [],
            )
            return TError()
    fn = _method_instead(st, e, tt)
    if fn is not None:
        _e205_call(st, e, show(st, tt), fn)
        return TError()
    ref = st.refs.get(e.target.id)
    origin = st.origins.get(ref.binder) if type(ref) is LocalRef else None
    st.problems.report(
        codes.UnknownField(e.span, show(st, tt), e.name, sg.Suggestion(e.name)),
        related=[origin] if origin is not None else [],
    )
    return TError()


def _method_instead(st: BodyState, e: ast.FieldAccess, tt):
    """Whether `x.name` read as a field is a function of the home module of x's type that takes
    x alone (`xs.length` for `xs.length()`, JavaScript's property): then `()` is the one fix."""
    if type(tt) is not TCon:
        return None
    home = tt.decl.split("::")[0]
    menv = st.d.envs.get(home)
    if menv is None:
        return None
    # the name itself, else another language's property that is one function of the module
    # (Swift's `xs.count`, `s.isEmpty`: `length`, `is_empty`)
    names = [e.name] if e.name in menv.cm.fns else sg.method_property(e.name)
    fns = []
    for name in names:
        fn = menv.cm.fns.get(name)
        if fn is None or len(fn.params) != 1 or not (fn.pub or home == st.env.key):
            continue
        first = resolve(fn.params[0][1])
        if type(first) is TCon and first.decl == tt.decl:
            fns.append(fn)
    return fns[0] if len(fns) == 1 else None


def _e205_call(st: BodyState, e: ast.FieldAccess, owner: str, fn) -> None:
    where = sg._decl_span(fn.node)
    at, renamed = e.name_span, fn.name != e.name
    what = f"`{fn.name}`" if renamed else f"`{e.name}`"
    related = [Related(f"{what} is declared here", where)] if where is not None and where.line else []
    fixes = []
    src = st.env.lm.ast.source or ""
    if at.line and renamed and src[at.end : at.end + 1] == "?" and st.d.is_lang(resolve(fn.result), "Bool"):
        # Ruby's predicate `items.empty?`: the `?` is the name's, not Flow's `?` on a Result
        q = ast.Span(at.file, at.line, at.column, at.end_line, at.end_column + 1, at.start, at.end + 1)
        fixes = [Fix(f"write `.{fn.name}()`", (Edit(q, f"{fn.name}()"),), True)]
    elif at.line and renamed:
        fixes = [Fix(f"write `.{fn.name}()`", (Edit(at, f"{fn.name}()"),), True)]
    elif at.line:
        end = ast.Span(at.file, at.end_line, at.end_column, at.end_line, at.end_column, at.end, at.end)
        fixes = [Fix(f"call it: `.{e.name}()`", (Edit(end, "()"),), True)]
    data = codes.UnknownField(
        e.span, owner, e.name, sg.Suggestion(e.name), call=True, method=fn.name if renamed else ""
    )
    st.problems.report(data, related=related, fixes=fixes)


def field_suggestion(info: TypeInfo, name: str, here: str, names=None) -> sg.Suggestion:
    """The fields of record `info` (or `names` of them) that `name` may have meant."""
    cands = [
        sg.Candidate(f.name, sg.FIELD, field_span(info, f.name))
        for f in info.fields
        if (names is None or f.name in names) and (f.pub or info.module == here)
    ]
    if names is not None and not info.fields:
        cands = [sg.Candidate(n, sg.FIELD, None) for n in names]
    return sg.suggest(name, cands, sg.FIELD)


def declared_note(info: TypeInfo) -> list[Related]:
    """Where a record type (or an enum whose constructor has fields) is declared."""
    return [Related(f"`{info.name}` is declared here", name_span(info.node))] if info.node else []


def method_suggestion(st: BodyState, name: str, menv, home: str | None) -> sg.Suggestion:
    """What `x.name(...)` most likely meant (E210): a function of the home module of x's type
    (`menv`), or a generic std one; another language's method spelled the Flow way."""
    cands = []
    if menv is not None:
        for n, f in menv.cm.fns.items():
            if (f.pub or home == st.env.key) and f.params:
                cands.append(sg.Candidate(n, sg.METHOD, sg._decl_span(f.node), target=(("decl", f.decl),)))
    for n, f in st.d.generic_fns.items():
        if menv is None or n not in menv.cm.fns:
            cands.append(sg.Candidate(n, sg.METHOD, sg._decl_span(f.node), target=(("decl", f.decl),)))
    return sg.suggest(name, cands, sg.METHOD)


def home_qualified(
    st: BodyState, e: ast.Call, menv, home: str | None, sugg: sg.Suggestion, fixes: list
) -> list:
    """E210's fix where the file imports the home module of the receiver's type and the one
    suggestion is that module's function: the call written through the import
    (`decimal.to_text(a)` for `a.toString()`), as `len(xs)` is `list.length(xs)`; the import
    was meant for it, so it is not also reported unused (E112)."""
    aliases = sorted(al for al, k in st.env.lm.aliases.items() if k == home) if menv is not None else []
    own = {("decl", f.decl) for f in menv.cm.fns.values()} if aliases else set()
    if len(sugg.cands) != 1 or not any(t in own for t in sugg.cands[0].target):
        return fixes
    st.env.used_aliases.add(aliases[0])
    src = st.env.lm.ast.source or ""
    parts = [e.callee.target, *e.args]
    if len(fixes) != 1 or e.span.end <= e.span.start or any(p.span.end <= p.span.start for p in parts):
        return fixes
    call = f"{aliases[0]}.{sugg.cands[0].text}({', '.join(src[p.span.start : p.span.end] for p in parts)})"
    return [Fix(f"write `{call}`", (Edit(e.span, call),), fixes[0].safe)]
