"""Patterns: resolve constructors (through the type being matched), type every sub-pattern and
bind its names. Exhaustiveness is decided later (exhaust.py), once types are solved."""
from __future__ import annotations

from flow2py.check.declare import field_span, suggest
from flow2py.check.typed import CtorRef, TCon, TError, TNever, TTuple
from flow2py.check.typeterms import TVar, resolve, subst, unify
from flow2py.diagnostics import Related
from flow2py.syntax import ast


class PatternChecker:
    def __init__(self, checker) -> None:
        self.c = checker
        self.field_binders: set[int] = set()  # BindPatterns written as `{ x }` or `{ x: y }`
        # Whole patterns (of an arm or a `let`) whose checking reported a mistake: exhaustiveness
        # is not decided for a match holding one, so one wrong pattern is reported once.
        self.bad: set[int] = set()

    def bind(self, p, t, checker=None) -> None:
        names: dict[str, object] = {}
        before = len(self.c.problems.items)
        self._pat(p, t, names)
        if len(self.c.problems.items) != before:
            self.bad.add(p.id)

    def _pat(self, p, t, names: dict) -> None:
        c = self.c
        c.types[p.id] = t
        k = type(p)
        if k is ast.WildcardPattern:
            return
        if k is ast.BindPattern:
            if p.name in names:
                c.problems.add("E107", f"`{p.name}` is bound twice in this pattern", p.span)
                return
            names[p.name] = p
            c._bind(p.name, t, p, p.span)
            return
        if k is ast.LiteralPattern:
            lt = c._literal(p.literal, None)
            c.types[p.literal.id] = lt
            if not unify(lt, t):
                c.mismatch(lt, t, p.span, None)
            return
        if k is ast.TuplePattern:
            r = resolve(t)
            if type(r) is TVar:
                items = tuple(TVar() for _ in p.items)
                unify(r, TTuple(items))
                r = resolve(r)
            if type(r) in (TError, TNever):
                for x in p.items:
                    self._pat(x, TError(), names)
                return
            if type(r) is not TTuple or len(r.items) != len(p.items):
                c.problems.add("E201", f"type mismatch: this pattern is a tuple of {len(p.items)}, the value is `{c.show(r)}`", p.span)
                for x in p.items:
                    self._pat(x, TError(), names)
                return
            for x, it in zip(p.items, r.items):
                self._pat(x, it, names)
            return
        if k is ast.ListPattern:
            r = resolve(t)
            elem = TVar()
            lt = c.d.lang_con("List", elem)
            if not unify(lt, r):
                c.problems.add("E201", f"type mismatch: this pattern is a list, the value is `{c.show(r)}`", p.span)
                elem = TError()
            for x in p.items:
                self._pat(x, elem, names)
            if p.rest is not None:
                self._pat(p.rest, c.d.lang_con("List", elem) if type(elem) is not TError else TError(), names)
            return
        if k is ast.OrPattern:
            first_names: dict = {}
            self._pat(p.alternatives[0], t, first_names)
            for alt in p.alternatives[1:]:
                alt_names: dict = {}
                saved = c.scopes[-1].copy()
                self._pat(alt, t, alt_names)
                c.scopes[-1] = saved
                if set(alt_names) != set(first_names):
                    c.problems.add("E201", "every alternative of `|` must bind the same names (" +
                                   (", ".join(sorted(first_names)) or "none") + ")", alt.span)
                for n, bp in alt_names.items():
                    if n in first_names:
                        first_t, alt_t = c.types[first_names[n].id], c.types[bp.id]
                        if not unify(alt_t, first_t):
                            c.problems.add("E201", f"type mismatch: `{n}` is `{c.show(first_t)}` in the first alternative "
                                           f"of `|`, `{c.show(alt_t)}` here; every alternative must bind it with one type",
                                           bp.span, related=[Related(f"`{n}` bound here", first_names[n].span)])
                        for b in c.binders:
                            if b.binder == bp.id:
                                b.silent = True
                        # uses of the name refer to the first alternative's binder
            for n, bp in first_names.items():
                if n in names:
                    c.problems.add("E107", f"`{n}` is bound twice in this pattern", bp.span)
                names[n] = bp
            return
        if k is ast.CtorPattern:
            self._ctor(p, t, names)
            return

    def _ctor(self, p: ast.CtorPattern, t, names) -> None:
        c = self.c
        hit = self._resolve(p, t)
        if hit is None:
            for sub in (p.args or []):
                self._pat(sub, TError(), names)
            for _, sub in (p.fields or []):
                self._pat(sub, TError(), names)
            return
        info, ctor = hit
        c._mark_used(info.decl)
        name = ctor.name if ctor else info.name
        c.refs[p.id] = CtorRef(info.decl, name)
        ok = c._ctor_access(info, p.span)
        tcon, mapping = c.fresh_tcon(info)
        if not unify(tcon, t):
            c.problems.add("E201", f"type mismatch: the pattern `{name}` is a `{info.name}`, the value is `{c.show(t)}`", p.span)
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
                c.problems.add("E202", f"constructor `{name}` takes positional values: write `{name}(...)`", p.span)
                for _, sub in p.fields:
                    self._pat(sub, TError(), names)
                return
            by = {n: (ft, pub) for n, ft, pub in fields}
            seen = set()
            for fname, sub in p.fields:
                if fname in seen:
                    c.problems.add("E207", f"field `{fname}` is given twice", sub.span)
                    self._pat(sub, TError(), names)
                    continue
                seen.add(fname)
                if fname not in by:
                    s = suggest(fname, list(by))
                    c.problems.add("E205", f"`{name}` has no field `{fname}`", sub.span,
                                   related=[Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", sub.span)] if s else [])
                    self._pat(sub, TError(), names)
                    continue
                ft, pub = by[fname]
                if isinstance(sub, ast.BindPattern) and sub.name == fname:
                    self.field_binders.add(sub.id)
                if not pub and info.module != c.env.key and ok:
                    c.problems.add("E109", f"field `{fname}` of `{name}` is private to its module", sub.span,
                                   related=[Related("declared here without `pub`", field_span(info, fname))])
                self._pat(sub, ft, names)
            missing = [n for n, _, _ in fields if n not in seen]
            if missing and not p.rest:
                c.problems.add("E206", f"this pattern leaves out field{'s' if len(missing) > 1 else ''} " +
                               ", ".join(f"`{m}`" for m in missing) + ": name them or end with `..`", p.span)
            return
        if named and fields:
            if p.args is not None:
                c.problems.add("E202", f"`{name}` has named fields: write `{name} {{ ... }}`", p.span)
                for sub in p.args:
                    self._pat(sub, TError(), names)
                return
            c.problems.add("E202", f"`{name}` has fields: write `{name} {{ .. }}` to match any", p.span)
            return
        args = p.args or []
        if len(args) != len(fields):
            n = len(fields)
            c.problems.add("E202", f"constructor `{name}` takes {n} value{'s' if n != 1 else ''}, this pattern gives {len(args)}", p.span)
            for sub in args:
                self._pat(sub, TError(), names)
            return
        for sub, (_, ft, _) in zip(args, fields):
            self._pat(sub, ft, names)

    def _resolve(self, p: ast.CtorPattern, t):
        c = self.c
        if p.module is not None:
            menv = c.d.alias_env(c.env, p.module, p.span)
            if menv is None:
                return None
            info = menv.cm.types.get(p.name)
            if info is not None and info.kind == "record":
                return info, None
            hit = menv.ctors.get(p.name)
            if hit is not None:
                return hit
            c.problems.add("E110", f"module `{p.module}` declares no constructor `{p.name}`", p.span)
            return None
        r = resolve(t)
        if type(r) is TCon:
            info = c.d.type_decls.get(r.decl)
            if info is not None:
                if info.kind == "record" and info.name == p.name:
                    return info, None
                for ct in info.ctors:
                    if ct.name == p.name:
                        return info, ct
                if info.ctors and type(r) is TCon:
                    s = suggest(p.name, [x.name for x in info.ctors])
                    c.problems.add("E101", f"`{info.name}` has no constructor `{p.name}`", p.span,
                                   related=[Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", p.span)] if s else [])
                    return None
        info = c.env.cm.types.get(p.name)
        if info is not None and info.kind == "record":
            return info, None
        hit = c.env.ctors.get(p.name) or c.d.prelude_ctors.get(p.name)
        if hit is not None:
            return hit
        cands = list(c.env.ctors) + list(c.d.prelude_ctors)
        s = suggest(p.name, cands)
        c.problems.add("E101", f"unknown constructor `{p.name}`", p.span,
                       related=[Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", p.span)] if s else [])
        return None
