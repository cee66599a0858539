"""`match` and patterns. A match of flat constructor arms becomes an `if type(s) is C:` chain
(`dispatch`); any other becomes a Python `match` (`match_alts`), where the parts Python cannot
test in a case (elements of an `rt.List`, effectful guards) are tested in the case body, falling
through to the remaining alternatives. Functions of the walk's state (lower_base.Body); patterns
are read in their checked form (check/pattern_form.py, `prog.patterns`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import libcst as cst

from flow2py.check import pattern_form as pf
from flow2py.codegen import py
from flow2py.codegen.lower_base import Body, Sink, bind, error, expr, hoist, mark, to_sink
from flow2py.codegen.lower_exprs import literal_value
from flow2py.syntax import ast as A


@dataclass(frozen=True, slots=True)
class Alt:
    """One alternative of a Python `match`: a checked pattern, the arm's guard, the thunk that
    lowers its body and the mark of its statements. `shared` is set when the alternative is one
    of several a `|` was split into: the Flow name -> Python variable map they all bind with."""

    pattern: pf.Pattern
    guard: A.Expr | None
    body: Callable[[], list]
    mark: str
    shared: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Deferred:
    """A list matched in a case: its elements are matched in the case body (an `rt.List` is not
    a sequence to Python's `match`)."""

    whole: str  # the variable the case captured the list in
    items: tuple[pf.Pattern, ...]


@dataclass(slots=True)
class CaseTests:
    """What a case's pattern leaves to its guard and body."""

    guards: list = field(default_factory=list)  # tests and-ed into the case's `if`
    post: list = field(default_factory=list)  # statements the case body runs first
    deferred: list[Deferred] = field(default_factory=list)


def match(b: Body, m: A.Match, sink: Sink) -> list:
    s, x = expr(b, m.scrutinee)
    forms = [b.prog.patterns[a.pattern.id] for a in m.arms]
    flat = dispatchable(m.arms, forms)
    if not isinstance(x, cst.Name) and (
        flat or any(a.guard is not None for a in m.arms) or any(_has_list(f) for f in forms)
    ):
        x = hoist(b, x, mark(b, m.scrutinee), s)  # it may be matched again in a case
    if flat:
        return s + dispatch(b, x, m.arms, forms, sink)
    alts = [
        Alt(f, arm.guard, (lambda arm=arm: to_sink(b, arm.body, sink)), mark(b, arm))
        for arm, f in zip(m.arms, forms)
    ]
    return s + match_alts(b, x, alts, None, mark(b, m))


# A `match` whose arms are constructor patterns with only names or `_` inside (and perhaps a
# final catch-all) becomes an `if type(s) is Circle: p, r = s._0, s._1 ... elif ...` chain:
# CPython's class patterns (`case Circle(p, r)`: `__match_args__`, isinstance, getattr by
# name) cost ~4x as much (bench/bench_pure.py).


def dispatchable(arms: list[A.MatchArm], forms: list[pf.Pattern]) -> bool:
    flat = 0
    for arm, p in zip(arms, forms):
        if arm.guard is not None:
            return False
        if pf.irrefutable_names(p):
            break  # a catch-all: later arms are unreachable
        if type(p) is not pf.Ctor or not all(pf.irrefutable_names(q) for q in pf.sub_patterns(p)):
            return False
        flat += 1
    return flat > 0


def dispatch(b: Body, subject: cst.Name, arms: list[A.MatchArm], forms: list[pf.Pattern], sink: Sink) -> list:
    branches = []  # (test or None for the catch-all, body, mark), in source order
    for arm, p in zip(arms, forms):
        amark = mark(b, arm)
        b.scopes.append({})
        try:
            if pf.irrefutable_names(p):
                body = []
                if type(p) is pf.Bind:
                    body.append(py.assign(py.name(bind(b, p.binder, p.name)), subject, amark))
                branches.append((None, body + to_sink(b, arm.body, sink), amark))
                break
            cls = b.mg.ctor_class(p.decl, p.name)
            attrs = b.mg.ctor_attrs(p.decl, p.name)
            pairs = [(attrs[i], q) for i, q in enumerate(p.args or ())]
            pairs += [(b.mg.field_name(f), q) for f, q in (p.fields or ())]
            targets, values = [], []
            for a, q in pairs:
                if type(q) is pf.Bind:
                    targets.append(py.name(bind(b, q.binder, q.name)))
                    values.append(py.attr(subject, a))
            body = []
            if len(targets) == 1:
                body.append(py.assign(targets[0], values[0], amark))
            elif targets:
                body.append(
                    py.assign(
                        py.tuple_(targets).with_changes(lpar=[], rpar=[]),
                        py.tuple_(values).with_changes(lpar=[], rpar=[]),
                        amark,
                    )
                )
            if b.mg.type_info(p.decl).lang:
                test = py.isinstance_(subject, cls)  # a runtime class (rt.NotRun may be subclassed)
            else:
                test = cst.Comparison(
                    left=py.call(py.name("type"), [subject]),
                    comparisons=[cst.ComparisonTarget(operator=cst.Is(), comparator=cls)],
                )
            branches.append((test, body + to_sink(b, arm.body, sink), amark))
        finally:
            b.scopes.pop()
    out = None
    for test, body, amark in reversed(branches):
        out = body if test is None else [py.if_(test, body, out, amark)]
    return out


def match_alts(b: Body, subject, alts: list[Alt], fallback, mk: str) -> list:
    """A Python `match` over `alts`; `fallback` (a thunk) runs when none matches. A `|`
    whose alternatives need tests in the case body is split into one alternative each; they
    share one dict of names so that every one binds a Flow name to the same Python variable
    (the arm's body refers to the binding of the first)."""
    expanded = []
    for alt in alts:
        qs = _expand(alt.pattern)
        shared = {} if len(qs) > 1 else None
        expanded.extend(replace(alt, pattern=q, shared=shared) for q in qs)
    return match_cases(b, subject, expanded, fallback, mk)


def match_cases(b: Body, subject, alts: list[Alt], fallback, mk: str) -> list:
    """The `match` of already split alternatives. Bodies are thunks because a part of a
    pattern Python cannot test in the case itself (an element of an `rt.List`, an effectful
    guard) is tested inside the case, where failing falls through to the remaining
    alternatives: their code is emitted again there."""
    cases = []
    for i, alt in enumerate(alts):
        rest = alts[i + 1 :]

        def remaining(rest=rest):
            return match_cases(b, subject, rest, fallback, mk) if rest else (fallback() if fallback else [])

        b.scopes.append({})
        tests = CaseTests()
        pat = pattern(b, alt.pattern, tests, alt.shared)
        stmts, guards = case_body(b, alt, tests, remaining)
        b.scopes.pop()
        cases.append(py.case(pat, _and(guards), stmts, alt.mark))
        if not guards and not tests.deferred and alt.guard is None and _irrefutable(pat):
            break  # Python refuses cases after an irrefutable one; they are unreachable anyway
    else:
        if fallback is not None:
            cases.append(py.case(py.p_wild(), None, fallback(), mk))
    if not cases:
        return []
    return [py.match(subject, cases, mk)]


def case_body(b: Body, alt: Alt, tests: CaseTests, remaining) -> tuple[list, list]:
    """-> (the case's body, the guards its header keeps) once its pattern left `tests`."""
    deferred, post, guards, shared, guard = tests.deferred, tests.post, tests.guards, alt.shared, alt.guard
    if deferred and all(pf.irrefutable_names(i) for d in deferred for i in d.items):
        # elements that are only names: bind them by index, no second match
        post = list(post)
        for d in deferred:
            for j, item in enumerate(d.items):
                if type(item) is pf.Bind:
                    target = bind(
                        b, item.binder, item.name, shared.get(item.name) if shared is not None else None
                    )
                    if shared is not None:
                        shared[item.name] = target
                    post.insert(0, py.assign(py.name(target), _index(d.whole, j), mark(b, item)))
        if guard is None:
            return post + alt.body(), guards
        gs, gx = expr(b, guard)
        return post + gs + [py.if_(gx, alt.body(), remaining() or None, alt.mark)], guards
    if deferred:
        # match the elements of the captured lists, as a tuple (tuples are sequences to
        # `match`; the persistent vector is not)
        subj, pats = [], []
        inner = CaseTests(post=list(post))
        for d in deferred:
            for j, item in enumerate(d.items):
                subj.append(_index(d.whole, j))
                pats.append(pattern(b, item, inner, shared))
        stmts, inner_guards = case_body(b, alt, inner, remaining)
        cases = [py.case(py.p_tuple(pats), _and(inner_guards), stmts, alt.mark)]
        rest = remaining()
        cases.append(py.case(py.p_wild(), None, rest or [py.pass_()], alt.mark))
        return [py.match(py.tuple_(subj), cases, alt.mark)], guards
    if guard is not None:
        gs, gx = expr(b, guard)
        if gs:
            # an effectful guard cannot sit in `case ... if`: test it in the body
            return post + gs + [py.if_(gx, alt.body(), remaining() or None, alt.mark)], guards
        return post + alt.body(), guards + [gx]
    return post + alt.body(), guards


# ---- patterns -------------------------------------------------------------------------------


def pattern(b: Body, p: pf.Pattern, tests: CaseTests, alt: dict | None):
    """The Python pattern of `p`; what it cannot test itself goes to `tests`. `alt`: the
    names an alternative of a `|` shares with the others (Flow name -> Python variable)."""
    k = type(p)
    if k is pf.Wild:
        return py.p_wild()
    if k is pf.Bind:
        if alt is not None and p.name in alt:
            return py.p_capture(bind(b, p.binder, p.name, alt[p.name]))
        n = bind(b, p.binder, p.name)
        if alt is not None:
            alt[p.name] = n
        return py.p_capture(n)
    if k is pf.Lit:
        if p.kind in pf.CONSTANT_KINDS:
            return py.p_value(py.const(p.value))
        t = b.namer.temp()
        tests.guards.append(py.binop("==", py.name(t), literal_value(p.kind, p.value)))
        return py.p_capture(t)
    if k is pf.Ctor:
        cls = b.mg.ctor_class(p.decl, p.name)
        args = [pattern(b, a, tests, alt) for a in (p.args or ())]
        kwds = [(b.mg.field_name(f), pattern(b, fp, tests, alt)) for f, fp in (p.fields or ())]
        return py.p_class(cls, args, kwds)
    if k is pf.Tuple:
        return py.p_tuple([pattern(b, i, tests, alt) for i in p.items])
    if k is pf.List:
        return list_pattern(b, p, tests, alt)
    if k is pf.Or:
        names: dict[str, str] = {} if alt is None else alt
        return py.p_or([pattern(b, a, tests, names) for a in p.alts])
    raise error(p, "a constructor pattern that was not resolved")


def list_pattern(b: Body, p: pf.List, tests: CaseTests, alt: dict | None):
    # an rt.List is not a sequence to Python's `match`: capture it, test its length in the
    # guard, and match its elements in the case body (`case_body`)
    whole = b.namer.temp()
    n = len(p.items)
    length = py.call(py.name("len"), [py.name(whole)])
    tests.guards.append(py.binop(">=" if p.rest is not None else "==", length, py.integer(n)))
    if p.items:
        tests.deferred.append(Deferred(whole, p.items))
    if type(p.rest) is pf.Bind:
        rest = bind(b, p.rest.binder, p.rest.name, alt.get(p.rest.name) if alt else None)
        if alt is not None:
            alt[p.rest.name] = rest
        tests.post.append(
            py.assign(
                py.name(rest),
                cst.Subscript(
                    value=py.name(whole),
                    slice=[cst.SubscriptElement(slice=cst.Slice(lower=py.integer(n), upper=None))],
                ),
                mark(b, p.rest),
            )
        )
    elif p.rest is not None and type(p.rest) is not pf.Wild:
        raise error(p.rest, "a rest pattern other than a name or `_` is not supported")
    return py.p_as(cst.MatchClass(cls=py.dotted("rt.List"), patterns=[], kwds=[]), whole)


def _index(name: str, j: int) -> cst.Subscript:
    return cst.Subscript(
        value=py.name(name), slice=[cst.SubscriptElement(slice=cst.Index(value=py.integer(j)))]
    )


def _tested_in_body(p: pf.Pattern) -> bool:
    """A part of a pattern Python cannot test in the case pattern itself (a list, a Decimal or
    Duration literal): it adds guards or body tests that would not belong to one alternative of
    a `|` pattern."""
    for q in pf.walk(p):
        if type(q) is pf.List or (type(q) is pf.Lit and q.kind not in pf.CONSTANT_KINDS):
            return True
    return False


def _expand(p: pf.Pattern) -> list:
    """The pattern as a list of alternatives, with every `|` whose alternatives need tests in the
    case body distributed to the top (`Some([0] | [1])` -> `Some([0])`, `Some([1])`); each
    alternative then gets its own case, guard and body, in order."""
    k = type(p)
    if k is pf.Or:
        if any(_tested_in_body(a) for a in p.alts):
            return [q for a in p.alts for q in _expand(a)]
        return [p]
    if k is pf.Ctor:
        parts = list(p.args or ()) + [fp for _, fp in (p.fields or ())]
        combos = _product([_expand(q) for q in parts])
        if len(combos) == 1:
            return [p]
        out = []
        nargs = len(p.args or ())
        for c in combos:
            args = tuple(c[:nargs]) if p.args is not None else None
            fields = tuple((f, q) for (f, _), q in zip(p.fields, c[nargs:])) if p.fields is not None else None
            out.append(replace(p, args=args, fields=fields))
        return out
    if k is pf.Tuple or k is pf.List:
        combos = _product([_expand(q) for q in p.items])
        return [p] if len(combos) == 1 else [replace(p, items=tuple(c)) for c in combos]
    return [p]


def _product(options: list) -> list:
    out = [()]
    for opts in options:
        out = [c + (o,) for c in out for o in opts]
    return out


def _has_list(p: pf.Pattern) -> bool:
    return any(type(q) is pf.List for q in pf.walk(p))


def _and(guards: list) -> py.Expr | None:
    if not guards:
        return None
    g = guards[0]
    for x in guards[1:]:
        g = py.binop("and", g, x)
    return g


def _irrefutable(p) -> bool:
    return isinstance(p, cst.MatchAs) and p.pattern is None
