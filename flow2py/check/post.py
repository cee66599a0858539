"""What is settled after a whole function was walked (its variables are solved by then): the
checked form of every pattern (pattern_form.py), exhaustive matches and irrefutable `let`
patterns, unused bindings, tail positions and the checkpoint sites among them."""

from __future__ import annotations

import re
from dataclasses import replace

from flow2py.check import codes
from flow2py.check import pattern_form as pf
from flow2py.check.body_state import BodyState
from flow2py.check.exhaust import Exhaust
from flow2py.check.patterns import NO_VALUE, left_out_fixes
from flow2py.check.typed import (
    PURE,
    CheckpointSite,
    TCon,
    TTuple,
    CtorRef,
    FnRef,
    MethodRef,
)
from flow2py.check.typeterms import resolve, zonk
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.syntax import ast

ROOT_CONDITION = (
    "taken only in the root task, when no other task is live except tasks parked on their only Tool call"
)


def finish_fn(st: BodyState, exhaust: Exhaust) -> None:
    """Settle the function `st` has just walked (infer.check_fn): its part of `st` is read here."""
    d = st.d
    unit = d.unit()
    problems = st.problems
    bad = st.bad
    forms = st.prog.patterns
    if st.fn.node.body is not None:
        refs = st.refs
        for p in _pattern_sites(st.fn.node.body):
            forms[p.id] = checked_pattern(p, refs)
    as_none = _no_value_binders(st)
    for site in st.matches:
        m = site.node
        if any(a.pattern.id in bad for a in m.arms):
            continue
        t = zonk(site.scrutinee, unit)
        rows = [(_none_for(forms[a.pattern.id], as_none), a.guard is not None) for a in m.arms]
        v = exhaust.check_match(rows, t)
        if v.missing:
            problems.report(
                codes.NonExhaustiveMatch(_head(m.span), tuple(v.missing), v.truncated),
                related=_missing_declared(st, t, v.missing),
                fixes=_add_arms_fix(m, v.missing, v.truncated, st.env.lm.ast.source or ""),
            )
        for i, above in v.unreachable:
            problems.report(
                codes.UnreachableArm(m.arms[i].pattern.span),
                related=_covering_arms(m, above),
                fixes=_remove_arm_fix(m, i, above, st.env.lm.ast.source or ""),
            )
    for site in st.lets:
        p = site.pattern
        if isinstance(p, (ast.BindPattern, ast.WildcardPattern)) or p.id in bad:
            continue
        v = exhaust.check_match([(forms[p.id], False)], zonk(site.type, unit))
        if v.missing:
            problems.report(codes.RefutableLet(p.span, tuple(v.missing), v.truncated))
    left_out_fixes(st)
    source = st.env.lm.ast.source or ""
    # a @test with parameters is E504 already: its parameters are the mistake, not unused bindings
    test_params = {p.id for p in st.fn.node.params} if st.fn.is_test else set()
    for b in st.binders:
        if b.used or b.silent or b.name.startswith("_") or b.node.id in test_params:
            continue
        if b.name in _NO_VALUE and type(b.node) is ast.BindPattern and _is_option(st, b.type):
            # `Ok(null) =>`: another language's "no value", bound as a name; Flow's is `None`
            problems.report(
                codes.UnusedBinding(b.span, b.name, no_value=True),
                fixes=[Fix("write `None`", (Edit(b.span, "None"),), True)]
                if source[b.span.start : b.span.end] == b.name
                else [],
            )
            continue
        problems.report(
            codes.UnusedBinding(b.span, b.name),
            fixes=_rename_fix(b, source, st.field_binders),
        )
    used = {b.binder for b in st.binders if b.used}
    for data, ids in st.no_value_alts:
        if any(i in used for i in ids):
            problems.report(data)
    for root in st.tail_roots:
        _mark_tail(st, root.expr, root.top)


def _missing_declared(st: BodyState, t, missing) -> list[Related]:
    """E401's notes: where each missing constructor of a type the program declares is declared
    (as rustc notes the variants not covered), the matched type's own and those nested in it
    (`Ok(Ask(_))` over `Result<planner.Action, E>` notes `Ask`); none for std's types."""
    declared: dict = {}
    for decl in _program_types(st, t, set()):
        info = st.d.type_decls[decl]
        for c in getattr(info.node, "ctors", None) or ():
            if c.span.line:  # a name two of these types declare is not noted
                declared[c.name] = None if c.name in declared else c
    notes, seen = [], set()
    for w in missing:
        for head in re.findall(r"(?<![\w.])(?:\w+\.)?([A-Z]\w*)", w):
            c = declared.get(head)
            if c is not None and head not in seen:
                seen.add(head)
                notes.append(Related(f"`{head}` is declared here", c.span))
    return notes


def _program_types(st: BodyState, t, out: set) -> list[str]:
    """The declarations of the program's own (not std's) types in `t`, outermost first."""
    t = resolve(t)
    found: list[str] = []
    if type(t) is TCon:
        info = st.d.type_decls.get(t.decl)
        if info is not None and info.node is not None and not info.module.startswith("std@"):
            if t.decl not in out:
                out.add(t.decl)
                found.append(t.decl)
        for a in t.args:
            found += _program_types(st, a, out)
    elif type(t) is TTuple:
        for a in t.items:
            found += _program_types(st, a, out)
    return found


#: the children of each expression and statement node that may hold a pattern site
_CHILDREN = {
    ast.Literal: (),
    ast.Name: (),
    ast.FieldAccess: ("target",),
    ast.Call: ("callee", "args"),
    ast.RecordLiteral: ("base", "fields"),
    ast.FieldInit: ("value",),
    ast.ListLiteral: ("items",),
    ast.DictLiteral: ("entries",),
    ast.TupleLiteral: ("items",),
    ast.Unary: ("operand",),
    ast.Binary: ("left", "right"),
    ast.Try: ("operand", "convert"),
    ast.Lambda: ("body",),
    ast.Block: ("stmts",),
    ast.If: ("cond", "then", "else_"),
    ast.Match: ("scrutinee", "arms"),
    ast.MatchArm: ("guard", "body"),
    ast.Return: ("value",),
    ast.Let: ("value",),
    ast.Guard: ("cond", "else_"),
    ast.GuardLet: ("value", "else_"),
    ast.ExprStmt: ("expr",),
}


def _pattern_sites(body: ast.Expr):
    """The whole pattern of every `match` arm, `let` and `guard let` in a function body, its
    lambdas included."""
    stack = [body]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        n = pop()
        k = type(n)
        if k is list or k is tuple:
            extend(n)
            continue
        if n is None:
            continue
        if k is ast.MatchArm or k is ast.Let or k is ast.GuardLet:
            yield n.pattern
        for f in _CHILDREN[k]:
            push(getattr(n, f))


def checked_pattern(p: ast.Pattern, refs: dict) -> pf.Pattern:
    """The checked form (pattern_form.py) of the AST pattern `p`; `refs` is the program's,
    which holds the constructor a CtorPattern resolved to."""
    k = type(p)
    if k is ast.BindPattern:
        return pf.Bind(p.name, p.id, p.span)
    if k is ast.WildcardPattern:
        return pf.Wild(p.span)
    if k is ast.LiteralPattern:
        return pf.Lit(p.literal.kind, p.literal.value, p.span)
    if k is ast.TuplePattern:
        return pf.Tuple(tuple(checked_pattern(x, refs) for x in p.items), p.span)
    if k is ast.ListPattern:
        items = tuple(checked_pattern(x, refs) for x in p.items)
        rest = None
        if p.has_rest:
            rest = pf.Wild(p.span) if p.rest is None else checked_pattern(p.rest, refs)
        return pf.List(items, rest, p.span)
    if k is ast.OrPattern:
        return pf.Or(tuple(checked_pattern(a, refs) for a in p.alternatives), p.span)
    if k is ast.CtorPattern:
        ref = refs.get(p.id)
        if not isinstance(ref, CtorRef):
            return pf.Unchecked(p.span)
        args = None if p.args is None else tuple(checked_pattern(a, refs) for a in p.args)
        fields = None if p.fields is None else tuple((f, checked_pattern(fp, refs)) for f, fp in p.fields)
        return pf.Ctor(ref.type_decl, ref.ctor, args, fields, p.span)
    raise TypeError(f"not a pattern: {k.__name__}")


def _head(span: ast.Span) -> ast.Span:
    return span


#: the body of an arm the fix inserts: not a Flow name, so the program does not check until the
#: author writes each body (E101 at each); flow2py/fix.py never "fixes" it into something else
PLACEHOLDER = "todo"


def _add_arms_fix(m: ast.Match, missing, truncated: bool, source: str) -> list:
    """Insert an arm for every missing pattern (and `_` after them when there were too many to
    list), each with the body `todo`: not safe, since each body is the author's choice."""
    sp = m.span
    close = sp.end - 1
    if sp.end <= sp.start or source[close : sp.end] != "}":
        return []
    arms = [f"{w} => {PLACEHOLDER}" for w in missing] + ([f"_ => {PLACEHOLDER}"] if truncated else [])
    line_start = source.rfind("\n", 0, close) + 1
    n = len(arms)
    if n == 1:
        message = f"add the missing arm (its body in place of `{PLACEHOLDER}` is yours to write)"
    else:
        message = f"add the {n} missing arms (each body in place of `{PLACEHOLDER}` is yours to write)"
    if source[line_start:close].strip() == "" and line_start > sp.start:
        # the `}` on its own line: one arm a line, indented as the arms are
        if m.arms:
            a = m.arms[-1].span.start
            first = source.rfind("\n", 0, a) + 1
            indent = source[first:a]
            if indent.strip():
                indent = source[line_start:close] + "    "
        else:
            indent = source[line_start:close] + "    "
        text = "".join(f"{indent}{arm},\n" for arm in arms)
        at = end = line_start
    else:
        i = close
        while i > sp.start and source[i - 1] in " \t":
            i -= 1
        before = source[i - 1] if i > sp.start else "{"
        text = ("" if before in "{," else ",") + " " + ", ".join(arms) + " "
        at, end = i, close
    edit = Edit(ast.Span(sp.file, 0, 0, 0, 0, at, end), text)
    return [Fix(message, (_located(edit, source),), False)]


def _remove_arm_fix(m: ast.Match, i: int, above, source: str) -> list:
    """Remove the unreachable arm `i`: no value reaches it, so the match means the same without
    it. Safe for a catch-all without a guard (`_`, a name): above the arms that cover it, it
    would take their values, so it can have been meant nowhere else; safe too when the arms
    `above` that cover it name every value they match (no `_` or binding anywhere in them: the
    arm repeats them); another pattern covered by a binding may have been meant above the arm
    that covers it (to review). The arm goes with its lines when it is alone on them (a comment
    after it too), else with the `,` before it."""
    arm = m.arms[i]
    start, end = arm.span.start, arm.span.end
    if i == 0 or end <= start or source[start:end].strip() == "":
        return []
    after = end + (source[end : end + 1] == ",")
    line_start = source.rfind("\n", 0, start) + 1
    line_end = source.find("\n", after)
    line_end = len(source) if line_end < 0 else line_end
    rest = source[after:line_end].strip()
    if source[line_start:start].strip() == "" and (rest == "" or rest.startswith("//")):
        cut = (line_start, min(line_end + 1, len(source)))
    else:
        prev = m.arms[i - 1].span.end
        if source[prev:start].strip(", \t\r\n"):
            return []  # a comment between the arms
        cut = (prev, end)
    catch_all = type(arm.pattern) in (ast.WildcardPattern, ast.BindPattern) and arm.guard is None
    repeated = bool(above) and not any(_binds_any(m.arms[j].pattern) for j in above)
    edit = _located(Edit(ast.Span(m.span.file, 0, 0, 0, 0, *cut), ""), source)
    return [Fix("remove the arm", (edit,), catch_all or repeated)]


def _binds_any(p) -> bool:
    """Whether pattern `p` holds a `_` or a binding anywhere (it matches more than it names)."""
    if type(p) in (ast.WildcardPattern, ast.BindPattern):
        return True
    if type(p) is ast.CtorPattern:
        return any(map(_binds_any, p.args or ())) or any(_binds_any(q) for _, q in p.fields or ()) or p.rest
    if type(p) is ast.TuplePattern:
        return any(map(_binds_any, p.items))
    if type(p) is ast.ListPattern:
        return p.has_rest or any(map(_binds_any, p.items))
    if type(p) is ast.OrPattern:
        return any(map(_binds_any, p.alternatives))
    return False


def _located(e: Edit, source: str) -> Edit:
    """`e` with the lines and columns of its offsets."""
    return Edit(_span_at(e.span.file, source, e.span.start, e.span.end), e.text)


def _span_at(file: str, source: str, start: int, end: int) -> ast.Span:
    def lc(o):
        line = source.count("\n", 0, o) + 1
        return line, o - (source.rfind("\n", 0, o) + 1) + 1

    (l1, c1), (l2, c2) = lc(start), lc(end)
    return ast.Span(file, l1, c1, l2, c2, start, end)


def _covering_arms(m: ast.Match, above) -> list:
    if len(above) == 1:
        return [Related("this arm above matches every value it matches", m.arms[above[0]].pattern.span)]
    return [
        Related("the arms above together match every value it matches", m.arms[j].pattern.span) for j in above
    ]


_NO_VALUE = NO_VALUE


def _no_value_binders(st: BodyState) -> dict[int, str]:
    """The bindings E404 reports as another language's "no value" (`nil =>` where an Option is
    matched): BindPattern id -> the Option's declaration. A match counts each as the `None` it
    stands for, so the arm it would make unreachable (`Some(x)` below it) is not reported too,
    and the coverage is the one its fix gives."""
    return {
        b.node.id: resolve(b.type).decl
        for b in st.binders
        if not b.used and b.name in _NO_VALUE and type(b.node) is ast.BindPattern and _is_option(st, b.type)
    }


def _none_for(p, as_none: dict[int, str]):
    """Pattern form `p` with each binding of `as_none` read as the pattern `None`."""
    if not as_none:
        return p
    k = type(p)
    if k is pf.Bind and p.binder in as_none:
        return pf.Ctor(as_none[p.binder], "None", None, None, p.span)
    if k is pf.Tuple:
        return replace(p, items=tuple(_none_for(q, as_none) for q in p.items))
    if k is pf.Or:
        return replace(p, alts=tuple(_none_for(q, as_none) for q in p.alts))
    if k is pf.Ctor:
        args = None if p.args is None else tuple(_none_for(q, as_none) for q in p.args)
        fields = None if p.fields is None else tuple((n, _none_for(q, as_none)) for n, q in p.fields)
        return replace(p, args=args, fields=fields)
    return p


def _is_option(st: BodyState, t) -> bool:
    r = resolve(t)
    info = st.d.lang_types.get("Option")
    return type(r) is TCon and info is not None and r.decl == info.decl


def _rename_fix(b, source: str, field_binders: set) -> list:
    sp = b.span
    if sp.end <= sp.start or source[sp.start : sp.end] != b.name:
        return []
    if b.binder in field_binders:
        i = sp.start - 1
        while i >= 0 and source[i] in " \t\r\n":
            i -= 1
        if i < 0 or source[i] != ":":
            return [Fix(f"ignore the field: `{b.name}: _`", (Edit(sp, f"{b.name}: _"),), True)]
    return [Fix(f"rename it to `_{b.name}`", (Edit(sp, "_" + b.name),), True)]


def _mark_tail(st: BodyState, e, is_top: bool) -> None:
    while True:
        k = type(e)
        if k is ast.Call:
            ref = st.refs.get(e.callee.id)
            if isinstance(ref, CtorRef):
                return
            st.prog.tail_calls.add(e.id)
            if is_top:
                _checkpoint(st, e, ref)
            return
        if k is ast.Block:
            if e.stmts and isinstance(e.stmts[-1], ast.ExprStmt):
                e = e.stmts[-1].expr
                continue
            return
        if k is ast.If:
            _mark_tail(st, e.then, is_top)
            if e.else_ is None:
                return
            e = e.else_
            continue
        if k is ast.Match:
            for arm in e.arms:
                _mark_tail(st, arm.body, is_top)
            return
        return


def _checkpoint(st: BodyState, call: ast.Call, ref) -> None:
    caller = st.fn.decl
    effect = st.effects.get(call.id, PURE)
    if isinstance(ref, (FnRef, MethodRef)):
        fn = st.d.fn_decls[ref.decl]
        callee = fn.decl
        if fn.is_tool:
            ok, why = False, f"`{fn.name}` is a Tool: its body is outside Flow"
        elif fn.node.body is None:
            ok, why = False, f"`{fn.name}` is provided by the compiler (@lang), not a Flow function"
        elif effect == PURE:
            ok, why = False, f"a pure tail call to `{fn.name}` records nothing and runs as a loop"
        else:
            ok, why = (
                True,
                f"tail call to the top-level function `{fn.name}`: its arguments are the whole state; {ROOT_CONDITION}",
            )
    else:
        callee = None
        ok, why = (
            False,
            "the callee is a function value (a lambda, a local or a parameter), not a top-level function: what it captured is not in its arguments",
        )
    st.prog.checkpoints.append(CheckpointSite(call.id, caller, callee, ok, why, call.span))
