"""Patterns: resolve constructors (through the type being matched), type every sub-pattern and
bind its names. `bind_pattern` checks a whole pattern (an arm's, a `let`'s, a `guard let`'s);
each kind of pattern has its function, found through `_PATTERNS`. Exhaustiveness is decided
later (exhaust.py, from post.py), once types are solved."""

from __future__ import annotations

import dataclasses
import re

from flow2py.check.body_state import BodyState, bind, lookup, mark_used, mismatch, show
from flow2py.check import codes
from flow2py.check import suggest as sg
from flow2py.check.declare import field_span, ordinal
from flow2py.check.infer_ctx import RecordTarget
from flow2py.check.infer_names import ctor_access, ctor_decl, declared_note, empty_parens, fresh_tcon, literal
from flow2py.check.typed import CtorRef, TCon, TError, TNever, TTuple
from flow2py.check.typeterms import TVar, resolve, subst, unify
from flow2py.diagnostics import Diagnostic, Edit, Fix, Related
from flow2py.syntax import ast


def bind_pattern(st: BodyState, p, t) -> None:
    """Type the whole pattern `p` against `t` and bind its names in the innermost scope; a
    pattern whose checking reported a mistake goes into `st.bad` (its match is not checked for
    exhaustiveness, so one wrong pattern is reported once)."""
    before = len(st.problems.items)
    bad_before = len(st.bad)
    meant_before = len(st.meant)
    if type(resolve(t)) is TError and not isinstance(p, (ast.BindPattern, ast.WildcardPattern)):
        st.bad.add(p.id)  # the value's type is unknown (reported where it was made): so is coverage
    _pat(st, p, t, {})
    # a misspelled constructor read as the one it meant leaves coverage checkable (its fix would
    # make it so; a missing arm then shows now, not only once the fix is applied)
    recovered = len(st.meant) - meant_before
    if len(st.problems.items) - recovered != before or len(st.bad) != bad_before:
        st.bad.add(p.id)


def _pat(st: BodyState, p, t, names: dict) -> None:
    """`names`: name -> BindPattern of the names the whole pattern bound so far."""
    st.types[p.id] = t
    check = _PATTERNS.get(type(p))
    if check is not None:
        check(st, p, t, names)


def _bind_pat(st: BodyState, p: ast.BindPattern, t, names: dict) -> None:
    if p.name in names:
        st.problems.report(codes.DuplicateDeclaration(p.span, p.name, "binding"))
        return
    names[p.name] = p
    bind(st, p.name, t, p, p.span)


def _literal_pat(st: BodyState, p: ast.LiteralPattern, t, names: dict) -> None:
    lt = literal(st, p.literal, None)
    st.types[p.literal.id] = lt
    if not unify(lt, t):
        mismatch(st, lt, t, p.span, None)


def _tuple_pat(st: BodyState, p: ast.TuplePattern, t, names: dict) -> None:
    r = resolve(t)
    if type(r) is TVar:
        items = tuple(TVar() for _ in p.items)
        unify(r, TTuple(items))
        r = resolve(r)
    if type(r) in (TError, TNever):
        for x in p.items:
            _pat(st, x, TError(), names)
        return
    if type(r) is not TTuple or len(r.items) != len(p.items):
        st.problems.report(codes.TypeMismatch(p.span, show(st, r), place="tuple-pattern", items=len(p.items)))
        for x in p.items:
            _pat(st, x, TError(), names)
        return
    for x, it in zip(p.items, r.items):
        _pat(st, x, it, names)


def _list_pat(st: BodyState, p: ast.ListPattern, t, names: dict) -> None:
    r = resolve(t)
    elem = TVar()
    lt = st.d.lang_con("List", elem)
    if not unify(lt, r):
        st.problems.report(
            codes.TypeMismatch(p.span, show(st, r), place="list-pattern"), fixes=_tuple_fix(st, p, r)
        )
        elem = TError()
    for x in p.items:
        _pat(st, x, elem, names)
    if p.rest is not None:
        _pat(st, p.rest, st.d.lang_con("List", elem) if type(elem) is not TError else TError(), names)


def _tuple_fix(st: BodyState, p: ast.ListPattern, r) -> list:
    """`let [a, b] = pair` of a tuple (Python unpacks both alike): Flow's `(a, b)`, safe when
    the pattern has the tuple's length and no rest."""
    r = resolve(r)
    src = st.env.lm.ast.source or ""
    sp = p.span
    if type(r) is not TTuple or p.rest is not None or len(p.items) != len(r.items) or sp.end <= sp.start:
        return []
    text = src[sp.start : sp.end]
    if not (text.startswith("[") and text.endswith("]")):
        return []
    written = "(" + text[1:-1] + ")"
    return [Fix(f"write `{written}`", (Edit(sp, written),), True)]


# another language's "no value", which a pattern binds as a name where Flow's is `None` (post.py)
NO_VALUE = ("null", "nil", "undefined", "none")


def _or_pat(st: BodyState, p: ast.OrPattern, t, names: dict) -> None:
    """Every alternative binds the same names at one type; uses of a name refer to the first
    alternative's binder, so the others' are never reported unused. A name only some bind that
    is another language's "no value" of an Option (`Ok(null) | Err(_)`) is settled in post.py:
    never used, it is the `None` E404 says it is, not also a mismatch of names."""
    first_names: dict = {}
    _pat(st, p.alternatives[0], t, first_names)
    for alt in p.alternatives[1:]:
        alt_names: dict = {}
        saved = st.scopes[-1].copy()
        _pat(st, alt, t, alt_names)
        st.scopes[-1] = saved
        if set(alt_names) != set(first_names):
            data = codes.TypeMismatch(
                alt.span, "", place="alternative-names", names=tuple(sorted(first_names))
            )
            odd = [(alt_names.get(n) or first_names[n]) for n in set(alt_names) ^ set(first_names)]
            if all(bp.name in NO_VALUE and st.d.is_lang(resolve(st.types[bp.id]), "Option") for bp in odd):
                st.no_value_alts.append((data, tuple(bp.id for bp in odd)))
            else:
                st.problems.report(data)
        for n, bp in alt_names.items():
            if n in first_names:
                first_t, alt_t = st.types[first_names[n].id], st.types[bp.id]
                if not unify(alt_t, first_t):
                    st.problems.report(
                        codes.TypeMismatch(
                            bp.span, show(st, alt_t), show(st, first_t), place="alternative", name=n
                        ),
                        related=[Related(f"`{n}` bound here", first_names[n].span)],
                    )
                for b in st.binders:
                    if b.binder == bp.id:
                        b.silent = True
    for n, bp in first_names.items():
        if n in names:
            st.problems.report(codes.DuplicateDeclaration(bp.span, n, "binding"))
        names[n] = bp


def _ctor_pat(st: BodyState, p: ast.CtorPattern, t, names: dict) -> None:
    target = _resolve(st, p, t)
    if target is None:
        for sub in p.args or []:
            _pat(st, sub, TError(), names)
        for _, sub in p.fields or []:
            _pat(st, sub, TError(), names)
        return
    info, ctor = target.info, target.ctor
    mark_used(st, info.decl)
    name = ctor.name if ctor else info.name
    st.refs[p.id] = CtorRef(info.decl, name)
    ok = ctor_access(st, info, p.span)
    tcon, mapping = fresh_tcon(info)
    if not unify(tcon, t):
        st.problems.report(
            codes.TypeMismatch(p.span, show(st, t), info.name, place="ctor-pattern", name=name)
        )
        mapping = {k2: TError() for k2 in mapping}
    elif type(resolve(t)) is TError:
        # the value matched has no known type (its mistake is reported where it was made): nor
        # have the values it holds, so their uses are not mistakes of their own (no E212 cascade)
        mapping = {k2: TError() for k2 in mapping}
    if ctor is None:
        fields = [(f.name, subst(f.type, mapping), f.pub) for f in info.fields]
        named = True
    elif ctor.field_names is not None:
        fields = [(n, subst(pt, mapping), True) for n, pt in zip(ctor.field_names, ctor.params)]
        named = True
    else:
        fields = [(None, subst(pt, mapping), True) for pt in ctor.params]
        named = False
    if p.fields is not None:
        if not named:
            st.problems.report(codes.WrongArity(p.span, "positional", name))
            for _, sub in p.fields:
                _pat(st, sub, TError(), names)
            return
        _named_fields(st, p, target, name, fields, ok, names)
        return
    if named and fields:
        if p.args is not None:
            decl = ctor_decl(info, name)
            st.problems.report(
                codes.WrongArity(p.span, "named-pattern", name),
                related=[Related(f"`{name}` is declared here", decl.span)] if decl is not None else [],
                fixes=_named_pattern_fix(st, p, [f for f, _, _ in fields]),
            )
            for sub in p.args:
                _pat(st, sub, TError(), names)
            return
        st.problems.report(codes.WrongArity(p.span, "bare-pattern", name))
        return
    args = p.args or []
    if p.args is not None and not args and not fields:
        empty_parens(st, p.span, info, name, pattern=True)
        return
    if len(args) != len(fields):
        decl = ctor_decl(info, name)
        st.problems.report(
            codes.WrongArity(p.span, "pattern-values", name, len(fields), len(args)),
            related=[Related(f"`{name}` is declared here", decl.span)] if decl is not None else [],
            fixes=_extra_wildcards_fix(args, len(fields)),
        )
        for sub in args:
            _pat(st, sub, TError(), names)
        return
    for i, (sub, (_, ft, _)) in enumerate(zip(args, fields)):
        if not mapping and type(sub) is ast.BindPattern:
            # a value of a constructor of a type without parameters: its declared type is the
            # name's, and a mismatch at a use of the name notes it
            sp = _ctor_value_at(info, name, i)
            if sp is not None:
                st.origins[sub.id] = Related(f"the {ordinal(i)} value of `{name}` is declared here", sp)
        _pat(st, sub, ft, names)


def _named_pattern_fix(st: BodyState, p: ast.CtorPattern, names: list[str]) -> list:
    """`Truck(axles)` of `Truck { axles: Int }`: the pattern with its fields named, in the order
    of the declaration (`Truck { axles }`). Safe when that order is the only reading: one field,
    or each value a name that is its field's; else to review."""
    src = st.env.lm.ast.source or ""
    sp = p.span
    text = src[sp.start : sp.end]
    if len(p.args) != len(names) or sp.end <= sp.start or "(" not in text:
        return []
    parts = []
    for f, sub in zip(names, p.args):
        sub_text = src[sub.span.start : sub.span.end]
        parts.append(f if sub_text == f else f"{f}: {sub_text}")
    safe = len(names) == 1 or all(type(a) is ast.BindPattern and a.name == f for f, a in zip(names, p.args))
    written = f"{text[: text.index('(')].rstrip()} {{ {', '.join(parts)} }}"
    return [Fix(f"write `{written}`", (Edit(sp, written),), safe)]


def _extra_wildcards_fix(args: list, n: int) -> list:
    """`Lost(sku, _)` of `Lost(Text)`: the values beyond the constructor's are all `_`, so
    they match nothing the arm uses; removing them is the one fix (safe)."""
    extra = args[n:]
    if not n or not extra or not all(type(a) is ast.WildcardPattern for a in extra):
        return []
    a, b = args[n - 1].span, extra[-1].span
    if a.end <= a.start or b.end <= b.start:
        return []
    sp = ast.Span(a.file, a.end_line, a.end_column, b.end_line, b.end_column, a.end, b.end)
    return [Fix(f"remove the extra `_`{'s' if len(extra) > 1 else ''}", (Edit(sp, ""),), True)]


def _field_name_fix(st: BodyState, sub, fname: str, sugg) -> list:
    """The fix of a misspelled field of a constructor pattern, one field meant: `{ trackin }`
    binds `trackin`, which the arm uses, so it becomes `{ tracking: trackin }`; in `{ trackin: t }`
    the name alone is replaced."""
    c = sugg.unique
    src = st.env.lm.ast.source or ""
    sp = sub.span
    if c is None or not c.fits or sp.end <= sp.start:
        return []
    m = re.search(rf"(?<![A-Za-z0-9_]){re.escape(fname)}\s*:\s*$", src[max(0, sp.start - 200) : sp.start])
    if m is None:
        if type(sub) is not ast.BindPattern or src[sp.start : sp.end] != fname:
            return []
        return [Fix(f"write `{c.text}: {fname}`", (Edit(sp, f"{c.text}: {fname}"),), True)]
    start = sp.start - (len(src[max(0, sp.start - 200) : sp.start]) - m.start())
    at = sg.sub_span(
        ast.Span(sp.file, sp.line, sp.column - (sp.start - start), sp.line, sp.column, start, sp.start),
        src,
        fname,
    )
    return sugg.fixes(at) if at is not None and at.line == sp.line else []


def _named_fields(
    st: BodyState, p: ast.CtorPattern, target: RecordTarget, name: str, fields: list, ok: bool, names: dict
) -> None:
    """`Name { f: pattern, g, .. }` against `fields` ((name, type, pub) of each)."""
    info = target.info
    by = {n: (ft, pub) for n, ft, pub in fields}
    seen: dict = {}
    meant = set()  # fields a misspelled one meant: not also left out (E206)
    for fname, sub in p.fields:
        if fname in seen:
            st.problems.report(
                codes.DuplicateField(sub.span, fname),
                related=[Related("first given here", seen[fname].span)] + declared_note(info),
            )
            _pat(st, sub, TError(), names)
            continue
        seen[fname] = sub
        if fname not in by:
            given = {f for f, _ in p.fields}
            cands = [sg.Candidate(n, sg.FIELD, _field_at(target, n)) for n in by]
            sugg = sg.suggest(fname, [c for c in cands if c.text not in given], sg.FIELD)
            if not sugg.cands:
                sugg = sg.suggest(fname, cands, sg.FIELD)
            meant.update(c.text for c in sugg.cands)
            st.problems.report(
                codes.UnknownField(sub.span, name, fname, sugg.said()),
                related=sugg.related() + declared_note(info),
                fixes=_field_name_fix(st, sub, fname, sugg),
            )
            # one field meant: its value is checked as that field's (the arm, as fixed)
            _pat(st, sub, by[sugg.unique.text][0] if sugg.unique else TError(), names)
            continue
        ft, pub = by[fname]
        if isinstance(sub, ast.BindPattern) and sub.name == fname:
            st.field_binders.add(sub.id)
        if not pub and info.module != st.env.key and ok:
            st.problems.report(
                codes.PrivateName(sub.span, fname, "field", owner=name),
                related=[Related("declared here without `pub`", field_span(info, fname))],
                fixes=sg.pub_fix(
                    f"the field `{fname}`", [sg.pub_edit(st.d.envs[info.module].lm, info.node, fname)]
                ),
            )
        _pat(st, sub, ft, names)
    missing = [n for n, _, _ in fields if n not in seen and n not in meant]
    if missing and not p.rest:
        d = st.problems.report(
            codes.MissingField(p.span, tuple(missing)),
            related=declared_note(info),
            fixes=_rest_fix(st, p),
        )
        # An arm that uses a field the pattern left out meant to name it: the field is bound
        # (silently: never reported unused), so that use is not also an unknown name (E101),
        # and the fix names it (left_out_fixes). Not when the name means something already (a
        # local, a function of the module).
        bound = []
        for n, ft, _ in fields:
            if n in missing and n not in names and lookup(st, n) is None and n not in st.env.cm.fns:
                b = bind(st, n, ft, p, p.span)
                b.silent = True
                bound.append(b)
        if bound:
            st.left_out.append((d, p, bound))


def left_out_fixes(st: BodyState) -> None:
    """Once the function is walked: a pattern that left out fields its arm uses gets, in place of
    the fix ending it with `..`, the safe fix naming them (and `..` for the other fields left
    out): the arm says which fields it needs, so there is no choice."""
    items = st.problems.items
    for d, p, bound in st.left_out:
        used = [b.name for b in bound if b.used]
        if not used or d not in items:
            continue
        rest = len(used) < len(d.data.missing)
        at = _pattern_end(st, p)
        if at is None:
            continue
        i, src = at
        names = ", ".join(used) + (", .." if rest else "")
        text = {"{": f" {names} ", ",": f" {names}"}.get(src[i - 1], f", {names}")
        fix = Fix(
            f"name {_listed(used)} in the pattern" + (", then `..`" if rest else ""),
            (Edit(_point(p, src, i), text),),
            True,
        )
        data = dataclasses.replace(d.data, used=tuple(used))
        items[items.index(d)] = Diagnostic.of(data, d.related, (fix,))


def _listed(names: list) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _pattern_end(st: BodyState, p: ast.CtorPattern):
    """Where text goes before a record pattern's `}` (after its last field), and the source."""
    src = st.env.lm.ast.source or ""
    sp = p.span
    if sp.end <= sp.start or src[sp.end - 1 : sp.end] != "}":
        return None
    i = sp.end - 1
    while i > sp.start and src[i - 1] in " \t\r\n":
        i -= 1
    return i, src


def _point(p: ast.CtorPattern, src: str, i: int) -> ast.Span:
    line = src.count("\n", 0, i) + 1
    col = i - (src.rfind("\n", 0, i) + 1) + 1
    return ast.Span(p.span.file, line, col, line, col, i, i)


def _field_at(target: RecordTarget, name: str):
    if target.ctor is None:
        return field_span(target.info, name)
    for c in getattr(target.info.node, "ctors", None) or ():
        if c.name == target.ctor.name:
            for f in c.named or ():
                if f.name == name:
                    return f.span
    return None


def _rest_fix(st: BodyState, p: ast.CtorPattern) -> list:
    """`, ..` before the closing brace: the pattern then ignores the fields it leaves out. Not
    safe: naming them is the other way, and which one is meant is the author's choice."""
    src = st.env.lm.ast.source or ""
    sp = p.span
    if sp.end <= sp.start or src[sp.end - 1 : sp.end] != "}":
        return []
    i = sp.end - 1
    while i > sp.start and src[i - 1] in " \t\r\n":
        i -= 1
    text = ", .." if src[i - 1] not in ",{" else (" .." if src[i - 1] == "," else " .. ")
    line = src.count("\n", 0, i) + 1
    col = i - (src.rfind("\n", 0, i) + 1) + 1
    at = ast.Span(sp.file, line, col, line, col, i, i)
    return [Fix("ignore the other fields: end the pattern with `..`", (Edit(at, text),), False)]


def _resolve(st: BodyState, p: ast.CtorPattern, t) -> RecordTarget | None:
    """The record type or constructor a constructor pattern names (reported when none; not
    when the value matched has no known type, whose mistake is reported where it was made:
    the pattern then only goes into `st.bad`)."""
    if p.module is not None:
        menv = st.d.alias_env(st.env, p.module, p.span, member=p.name)
        if menv is None:
            st.bad.add(p.id)
            return None
        info = menv.cm.types.get(p.name)
        if info is not None and info.kind == "record":
            return RecordTarget(info, None)
        hit = menv.ctors.get(p.name)
        if hit is not None:
            return RecordTarget(hit[0], hit[1])
        cands = [
            sg.Candidate(n, sg.CTOR, _ctor_at(i, n), target=(("decl", i.decl),))
            for n, (i, _) in menv.ctors.items()
            if i.pub or menv is st.env
        ]
        sugg = sg.suggest(p.name, cands, sg.CTOR)
        src = st.env.lm.ast.source or ""
        head = sg.sub_span(p.span, src, p.module + ".")
        at = sg.sub_span(_after(head), src, p.name) if head is not None else None
        fixes = sugg.fixes(at) if at is not None else []
        st.problems.report(
            codes.UnknownMember(p.span, p.module, p.name, "constructor", sugg.said()),
            related=sugg.related() or _matched_type_note(t, menv),
            fixes=fixes,
        )
        return _meant(st, p, fixes, sugg, menv.ctors.get)
    r = resolve(t)
    if type(r) is TCon:
        info = st.d.type_decls.get(r.decl)
        if info is not None:
            if info.kind == "record" and info.name == p.name:
                return RecordTarget(info, None)
            for ct in info.ctors:
                if ct.name == p.name:
                    return RecordTarget(info, ct)
            if info.ctors:
                cands = [sg.Candidate(x.name, sg.CTOR, _ctor_at(info, x.name)) for x in info.ctors]
                sugg = sg.suggest(p.name, cands, sg.CTOR)
                if not sugg:
                    sugg = _left_by_siblings(st, p, info)
                at = sg.sub_span(p.span, st.env.lm.ast.source or "", p.name)
                fixes = sugg.fixes(at) if at is not None else []
                st.problems.report(
                    codes.UnknownName(p.span, p.name, "constructor", info.name, sugg.said()),
                    related=sugg.related() or declared_note(info),
                    fixes=fixes,
                )
                by_name = {x.name: (info, x) for x in info.ctors}
                return _meant(st, p, fixes, sugg, by_name.get)
    info = st.env.cm.types.get(p.name)
    if info is not None and info.kind == "record":
        return RecordTarget(info, None)
    hit = st.env.ctors.get(p.name) or st.d.prelude_ctors.get(p.name)
    if hit is not None:
        return RecordTarget(hit[0], hit[1])
    if type(r) is TError:
        st.bad.add(p.id)
        return None
    cands = [c for c in sg.value_candidates(st.d, st.env) if c.kind == sg.CTOR]
    sugg = sg.suggest(p.name, cands, sg.CTOR)
    sg.count_as_used(st.d, st.env, sugg, st.fn.decl)
    at = sg.sub_span(p.span, st.env.lm.ast.source or "", p.name)
    st.problems.report(
        codes.UnknownName(p.span, p.name, "constructor", suggestion=sugg.said()),
        related=sugg.related(),
        fixes=sugg.fixes(at, sg.use_site(st.env.lm.ast)) if at is not None else [],
    )
    return None


def _matched_type_note(t, menv) -> list[Related]:
    """Where the type matched is declared, when that module declares it: its constructors are
    the ones the pattern can name (E110 with no close spelling)."""
    r = resolve(t)
    if type(r) is not TCon:
        return []
    for info, _ in menv.ctors.values():
        if info.decl == r.decl:
            return declared_note(info)
    return []


def _meant(st: BodyState, p: ast.CtorPattern, fixes, sugg, lookup) -> RecordTarget | None:
    """The constructor a misspelled constructor pattern meant, when it is the one candidate and
    its fix is safe (no choice): the pattern is then checked as that constructor (`st.meant`)."""
    one = sugg.unique
    if one is None or not any(f.safe for f in fixes):
        return None
    hit = lookup(one.text)
    if hit is None:
        return None
    st.meant.add(p.id)
    return RecordTarget(hit[0], hit[1])


def _after(head):
    """The (empty) place right after `head`, on its line: where the name after `alias.` starts."""
    return ast.Span(
        head.file, head.line, head.end_column, head.line, head.end_column + 1, head.end, head.end + 1
    )


def _left_by_siblings(st: BodyState, p: ast.CtorPattern, info) -> sg.Suggestion:
    """An arm's constructor of another type (`Some(w)` on a Result, Option's habit): the one
    constructor of the scrutinee's type, taking as many values, that no other arm names (`Err(_)`
    is there: `Ok`). Unique or nothing."""
    others = st.arm_siblings.get(p.id)
    known = st.env.ctors.get(p.name) or st.d.prelude_ctors.get(p.name)
    if others is None or known is None or p.fields is not None:
        return sg.Suggestion(p.name)
    n = len(p.args or [])
    left = [
        ct for ct in info.ctors if ct.field_names is None and len(ct.params) == n and ct.name not in others
    ]
    if len(left) != 1:
        return sg.Suggestion(p.name)
    return sg.Suggestion(p.name, (sg.Candidate(left[0].name, sg.CTOR, _ctor_at(info, left[0].name)),))


def _ctor_value_at(info, name: str, i: int):
    for c in getattr(info.node, "ctors", None) or ():
        if c.name == name and c.positional and i < len(c.positional) and c.positional[i].span.line:
            return c.positional[i].span
    return None


def _ctor_at(info, name: str):
    for c in getattr(info.node, "ctors", None) or ():
        if c.name == name:
            return c.span
    return None


_PATTERNS = {  # WildcardPattern binds nothing and fits every type: not here
    ast.BindPattern: _bind_pat,
    ast.LiteralPattern: _literal_pat,
    ast.TuplePattern: _tuple_pat,
    ast.ListPattern: _list_pat,
    ast.OrPattern: _or_pat,
    ast.CtorPattern: _ctor_pat,
}
