"""`match` and patterns. A match of flat constructor arms becomes an `if type(s) is C:` chain
(`dispatch`); any other becomes a Python `match` (`match_alts`), where the parts Python cannot
test in a case (elements of an `rt.List`, effectful guards) are tested in the case body, falling
through to the remaining alternatives. Part of `lower.Body`."""
from __future__ import annotations

from dataclasses import replace

import libcst as cst

from flow2py.check import typed as P
from flow2py.codegen import py
from flow2py.codegen.lower_base import Sink
from flow2py.syntax import ast as A


class MatchMixin:
    def match(self, m: A.Match, sink: Sink) -> list:
        s, x = self.expr(m.scrutinee)
        dispatch = self.dispatchable(m.arms)
        if not isinstance(x, cst.Name) and (dispatch or any(a.guard is not None for a in m.arms) or _has_list(m)):
            x = self.hoist(x, self.mark(m.scrutinee), s)  # it may be matched again in a case
        if dispatch:
            return s + self.dispatch(x, m.arms, sink)
        return s + self.arms(x, m.arms, sink, self.mark(m))

    # A `match` whose arms are constructor patterns with only names or `_` inside (and perhaps a
    # final catch-all) becomes an `if type(s) is Circle: p, r = s._0, s._1 ... elif ...` chain:
    # CPython's class patterns (`case Circle(p, r)`: `__match_args__`, isinstance, getattr by
    # name) cost ~4x as much (bench/bench_pure.py).

    def dispatchable(self, arms: list[A.MatchArm]) -> bool:
        flat = 0
        for arm in arms:
            p = arm.pattern
            if arm.guard is not None:
                return False
            if isinstance(p, (A.WildcardPattern, A.BindPattern)):
                break  # a catch-all: later arms are unreachable
            if not isinstance(p, A.CtorPattern) or not isinstance(self.prog.refs.get(p.id), P.CtorRef):
                return False
            subs = list(p.args or []) + [fp for _, fp in (p.fields or [])]
            if not all(isinstance(q, (A.WildcardPattern, A.BindPattern)) for q in subs):
                return False
            flat += 1
        return flat > 0

    def dispatch(self, subject: cst.Name, arms: list[A.MatchArm], sink: Sink) -> list:
        branches = []  # (test or None for the catch-all, body, mark), in source order
        for arm in arms:
            p = arm.pattern
            amark = self.mark(arm)
            self.scopes.append({})
            try:
                if isinstance(p, (A.WildcardPattern, A.BindPattern)):
                    body = []
                    if isinstance(p, A.BindPattern):
                        body.append(py.assign(py.name(self.bind(p.id, p.name)), subject, amark))
                    branches.append((None, body + self.to_sink(arm.body, sink), amark))
                    break
                ref = self.prog.refs[p.id]
                cls = self.mg.ctor_class(ref.type_decl, ref.ctor)
                attrs = self.mg.ctor_attrs(ref.type_decl, ref.ctor)
                pairs = [(attrs[i], q) for i, q in enumerate(p.args or [])]
                pairs += [(self.mg.field_name(f), q) for f, q in (p.fields or [])]
                targets, values = [], []
                for a, q in pairs:
                    if isinstance(q, A.BindPattern):
                        targets.append(py.name(self.bind(q.id, q.name)))
                        values.append(py.attr(subject, a))
                body = []
                if len(targets) == 1:
                    body.append(py.assign(targets[0], values[0], amark))
                elif targets:
                    body.append(py.assign(py.tuple_(targets).with_changes(lpar=[], rpar=[]),
                                          py.tuple_(values).with_changes(lpar=[], rpar=[]), amark))
                if self.mg.type_info(ref.type_decl).lang:
                    test = py.isinstance_(subject, cls)  # a runtime class (rt.NotRun may be subclassed)
                else:
                    test = cst.Comparison(left=py.call(py.name("type"), [subject]), comparisons=[
                        cst.ComparisonTarget(operator=cst.Is(), comparator=cls)])
                branches.append((test, body + self.to_sink(arm.body, sink), amark))
            finally:
                self.scopes.pop()
        out = None
        for test, body, amark in reversed(branches):
            out = body if test is None else [py.if_(test, body, out, amark)]
        return out

    def arms(self, subject, arms: list[A.MatchArm], sink: Sink, mark: str) -> list:
        alts = [(arm.pattern, arm.guard, (lambda arm=arm: self.to_sink(arm.body, sink)), self.mark(arm)) for arm in arms]
        return self.match_alts(subject, alts, None, mark)

    def match_alts(self, subject, alts, fallback, mark: str) -> list:
        """A Python `match` over alternatives `(pattern, guard or None, body thunk, mark)`;
        `fallback` (a thunk) runs when none matches. Bodies are thunks because a part of a
        pattern Python cannot test in the case itself (an element of an `rt.List`, an effectful
        guard) is tested inside the case, where failing falls through to the remaining
        alternatives: their code is emitted again there."""
        # a `|` whose alternatives need tests in the case body is split into one alternative
        # each; they share one dict of names so that every one binds a Flow name to the same
        # Python variable (the arm's body refers to the binding of the first)
        expanded = []
        for alt in alts:
            if len(alt) == 5:
                expanded.append(alt)
                continue
            pattern, guard, body, amark = alt
            qs = _expand(pattern)
            shared = {} if len(qs) > 1 else None
            expanded.extend((q, guard, body, amark, shared) for q in qs)
        alts = expanded
        cases = []
        for i, (pattern, guard, body, amark, shared) in enumerate(alts):
            rest = alts[i + 1:]

            def remaining(rest=rest):
                return self.match_alts(subject, rest, fallback, mark) if rest else (fallback() if fallback else [])

            self.scopes.append({})
            self.deferred = []
            pat, guards, post = self.pattern(pattern, shared)
            deferred, self.deferred = self.deferred, []
            stmts = self.case_body(deferred, post, guard, body, remaining, guards, amark, shared)
            if isinstance(stmts, tuple):  # the guard could stay in the case header
                stmts, guards = stmts
            self.scopes.pop()
            cases.append(py.case(pat, _and(guards), stmts, amark))
            if not guards and not deferred and guard is None and _irrefutable(pat):
                break  # Python refuses cases after an irrefutable one; they are unreachable anyway
        else:
            if fallback is not None:
                cases.append(py.case(py.p_wild(), None, fallback(), mark))
        if not cases:
            return []
        return [py.match(subject, cases, mark)]

    def case_body(self, deferred, post, guard, body, remaining, guards, amark, shared=None):
        if deferred and all(isinstance(i, (A.BindPattern, A.WildcardPattern)) for _, items in deferred for i in items):
            # elements that are only names: bind them by index, no second match
            post = list(post)
            for lname, items in deferred:
                for j, item in enumerate(items):
                    if isinstance(item, A.BindPattern):
                        target = self.bind(item.id, item.name, shared.get(item.name) if shared is not None else None)
                        if shared is not None:
                            shared[item.name] = target
                        index = cst.Subscript(value=py.name(lname), slice=[cst.SubscriptElement(slice=cst.Index(value=py.integer(j)))])
                        post.insert(0, py.assign(py.name(target), index, self.mark(item)))
            if guard is None:
                return post + body(), guards
            gs, gx = self.expr(guard)
            return post + gs + [py.if_(gx, body(), remaining() or None, amark)]
        if deferred:
            # match the elements of the captured lists, as a tuple (tuples are sequences to
            # `match`; the persistent vector is not)
            subj, pats, guards2, post2 = [], [], [], list(post)
            for lname, items in deferred:
                for j, item in enumerate(items):
                    subj.append(cst.Subscript(value=py.name(lname), slice=[cst.SubscriptElement(slice=cst.Index(value=py.integer(j)))]))
                    pats.append(self._pat(item, guards2, post2, shared))
            inner_deferred, self.deferred = self.deferred, []
            inner = self.case_body(inner_deferred, post2, guard, body, remaining, guards2, amark, shared)
            if isinstance(inner, tuple):
                inner, guards2 = inner
            cases = [py.case(py.p_tuple(pats), _and(guards2), inner, amark)]
            rest = remaining()
            cases.append(py.case(py.p_wild(), None, rest or [py.pass_()], amark))
            return [py.match(py.tuple_(subj), cases, amark)]
        if guard is not None:
            gs, gx = self.expr(guard)
            if gs:
                # an effectful guard cannot sit in `case ... if`: test it in the body
                return post + gs + [py.if_(gx, body(), remaining() or None, amark)]
            return post + body(), guards + [gx]
        return post + body(), guards

    # ---- patterns -------------------------------------------------------------------------------

    def pattern(self, p: A.Pattern, alt_names: dict | None = None):
        """-> (Python pattern, extra guard expressions, statements to run first in the case body)."""
        guards: list = []
        post: list = []
        pat = self._pat(p, guards, post, alt_names)
        return pat, guards, post

    def _pat(self, p, guards, post, alt):
        if isinstance(p, A.WildcardPattern):
            return py.p_wild()
        if isinstance(p, A.BindPattern):
            if alt is not None and p.name in alt:
                return py.p_capture(self.bind(p.id, p.name, alt[p.name]))
            n = self.bind(p.id, p.name)
            if alt is not None:
                alt[p.name] = n
            return py.p_capture(n)
        if isinstance(p, A.LiteralPattern):
            lit = p.literal
            if lit.kind in ("int", "text", "bytes", "bool", "unit"):
                return py.p_value(py.const(lit.value))
            t = self.temp()
            guards.append(py.binop("==", py.name(t), self.literal(lit)))
            return py.p_capture(t)
        if isinstance(p, A.CtorPattern):
            ref = self.prog.refs.get(p.id)
            if not isinstance(ref, P.CtorRef):
                raise self.error(p, f"constructor pattern {p.name} is not resolved")
            cls = self.mg.ctor_class(ref.type_decl, ref.ctor)
            args = [self._pat(a, guards, post, alt) for a in (p.args or [])]
            kwds = [(self.mg.field_name(f), self._pat(fp, guards, post, alt)) for f, fp in (p.fields or [])]
            return py.p_class(cls, args, kwds)
        if isinstance(p, A.TuplePattern):
            return py.p_tuple([self._pat(i, guards, post, alt) for i in p.items])
        if isinstance(p, A.ListPattern):
            # an rt.List is not a sequence to Python's `match`: capture it, test its length in
            # the guard, and match its elements in the case body (`case_body`)
            whole = self.temp()
            n = len(p.items)
            length = py.call(py.name("len"), [py.name(whole)])
            guards.append(py.binop(">=" if p.has_rest else "==", length, py.integer(n)))
            if p.items:
                self.deferred.append((whole, list(p.items)))
            if p.has_rest and isinstance(p.rest, A.BindPattern):
                rest = self.bind(p.rest.id, p.rest.name, alt.get(p.rest.name) if alt else None)
                if alt is not None:
                    alt[p.rest.name] = rest
                post.append(py.assign(py.name(rest), cst.Subscript(
                    value=py.name(whole),
                    slice=[cst.SubscriptElement(slice=cst.Slice(lower=py.integer(n), upper=None))],
                ), self.mark(p.rest)))
            elif p.has_rest and p.rest is not None and not isinstance(p.rest, A.WildcardPattern):
                raise self.error(p.rest, "a rest pattern other than a name or `_` is not supported")
            return py.p_as(cst.MatchClass(cls=py.dotted("rt.List"), patterns=[], kwds=[]), whole)
        if isinstance(p, A.OrPattern):
            names: dict[str, str] = {} if alt is None else alt
            return py.p_or([self._pat(a, guards, post, names) for a in p.alternatives])
        raise self.error(p, f"unknown pattern {type(p).__name__}")


def _tested_in_body(p) -> bool:
    """A part of a pattern Python cannot test in the case pattern itself (a list, a Decimal or
    Duration literal): it adds guards or body tests that would not belong to one alternative of
    a `|` pattern."""
    for n in A.walk(p):
        if isinstance(n, A.ListPattern):
            return True
        if isinstance(n, A.LiteralPattern) and n.literal.kind not in ("int", "text", "bytes", "bool", "unit"):
            return True
    return False


def _expand(p) -> list:
    """The pattern as a list of alternatives, with every `|` whose alternatives need tests in the
    case body distributed to the top (`Some([0] | [1])` -> `Some([0])`, `Some([1])`); each
    alternative then gets its own case, guard and body, in order."""
    if isinstance(p, A.OrPattern):
        if any(_tested_in_body(a) for a in p.alternatives):
            return [q for a in p.alternatives for q in _expand(a)]
        return [p]
    if isinstance(p, A.CtorPattern):
        parts = list(p.args or []) + [fp for _, fp in (p.fields or [])]
        combos = _product([_expand(q) for q in parts])
        if len(combos) == 1:
            return [p]
        out = []
        nargs = len(p.args or [])
        for c in combos:
            args = list(c[:nargs]) if p.args is not None else None
            fields = [(f, q) for (f, _), q in zip(p.fields, c[nargs:])] if p.fields is not None else None
            out.append(replace(p, args=args, fields=fields))
        return out
    if isinstance(p, A.TuplePattern):
        combos = _product([_expand(q) for q in p.items])
        return [p] if len(combos) == 1 else [replace(p, items=list(c)) for c in combos]
    if isinstance(p, A.ListPattern):
        combos = _product([_expand(q) for q in p.items])
        return [p] if len(combos) == 1 else [replace(p, items=list(c)) for c in combos]
    return [p]


def _product(options: list) -> list:
    out = [()]
    for opts in options:
        out = [c + (o,) for c in out for o in opts]
    return out


def _has_list(m: A.Match) -> bool:
    return any(isinstance(n, A.ListPattern) for arm in m.arms for n in A.walk(arm.pattern))


def _and(guards: list) -> py.Expr | None:
    if not guards:
        return None
    g = guards[0]
    for x in guards[1:]:
        g = py.binop("and", g, x)
    return g


def _irrefutable(p) -> bool:
    return isinstance(p, cst.MatchAs) and p.pattern is None
