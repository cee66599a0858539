"""Exhaustiveness and unreachable arms: Maranget's usefulness algorithm ("Warnings for pattern
matching", JFP 2007) over a matrix of normalized patterns.

A pattern is normalized to: None (matches anything), ('con', key, args), ('rest', prefix) for a
list pattern with `..` (matching every length >= len(prefix)), or ('or', alternatives).
A column's constructors come from its type: an enum's constructors, the one constructor of a
record or tuple, `false`/`true` and `()` for the literal kinds bool and unit, and for lists the
lengths 0..L plus "L+1 or more" where L is the longest list pattern in the column. Every other
literal type has infinitely many values, so only `_` (or a binding) completes it.

`missing` returns witnesses, rendered as patterns, so the message can say what is not covered:
"missing `Err(Unknown(_))`". Arms with an `if` guard never count as covering.
"""
from __future__ import annotations

from flow2py.check.program import CtorRef, TCon, TTuple
from flow2py.check.types import subst
from flow2py.syntax import ast

LIMIT = 6


class Column:
    """The constructors of one type: key -> (arity, arg types, render(args))."""

    def __init__(self, sig: list | None, single: bool = False) -> None:
        self.sig = sig  # list of (key, arity, arg_types, render) or None (infinite)
        self.single = single


class Exhaust:
    def __init__(self, decls, types: dict, refs: dict) -> None:
        self.d = decls
        self.types = types
        self.refs = refs
        b = decls.literal_types.get("bool")
        u = decls.literal_types.get("unit")
        lst = decls.lang_types.get("List")
        self.bool_decl = b.decl if b else None
        self.unit_decl = u.decl if u else None
        self.list_decl = lst.decl if lst else None
        self._columns: dict = {}

    # -- normalizing ----------------------------------------------------------------------

    def norm(self, p, t):
        k = type(p)
        if k is ast.WildcardPattern or k is ast.BindPattern:
            return None
        if k is ast.OrPattern:
            return ("or", [self.norm(a, t) for a in p.alternatives])
        if k is ast.LiteralPattern:
            v = p.literal.value
            if p.literal.kind == "decimal":
                from decimal import Decimal

                try:
                    v = Decimal(str(v))
                except Exception:
                    pass
            return ("con", ("lit", p.literal.kind, v), [])
        if k is ast.TuplePattern:
            items = t.items if type(t) is TTuple and len(t.items) == len(p.items) else [None] * len(p.items)
            return ("con", ("tuple", len(p.items)), [self.norm(x, it) for x, it in zip(p.items, items)])
        if k is ast.ListPattern:
            elem = t.args[0] if type(t) is TCon and t.args else None
            items = [self.norm(x, elem) for x in p.items]
            if p.has_rest:
                if p.rest is not None and not isinstance(p.rest, (ast.WildcardPattern, ast.BindPattern)):
                    return ("opaque",)
                return ("rest", items)
            return ("con", ("list", len(items)), items)
        if k is ast.CtorPattern:
            ref = self.refs.get(p.id)
            if not isinstance(ref, CtorRef) or type(t) is not TCon:
                return ("opaque",)
            info = self.d.type_decls.get(ref.type_decl)
            if info is None:
                return ("opaque",)
            mapping = {(info.decl, q): a for q, a in zip(info.type_params, t.args)}
            if info.kind == "record":
                names = [f.name for f in info.fields]
                ftypes = [subst(f.type, mapping) for f in info.fields]
                key = ("rec", info.decl)
            else:
                ctor = next((c for c in info.ctors if c.name == ref.ctor), None)
                if ctor is None:
                    return ("opaque",)
                names = ctor.field_names
                ftypes = [subst(x, mapping) for x in ctor.params]
                key = ("ctor", info.decl, ctor.name)
            if p.fields is not None and names is not None:
                given = dict(p.fields)
                args = [self.norm(given[n], ft) if n in given else None for n, ft in zip(names, ftypes)]
            else:
                subs = p.args or []
                if len(subs) != len(ftypes):
                    return ("opaque",)
                args = [self.norm(x, ft) for x, ft in zip(subs, ftypes)]
            return ("con", key, args)
        return ("opaque",)

    # -- signatures -----------------------------------------------------------------------

    def column(self, t, rows_col: list) -> Column:
        """The column for type `t`. Only a List's depends on the rows (the longest list
        pattern); every other type's is the same each time and computed once."""
        if type(t) is TCon and t.decl == self.list_decl:
            return self._column(t, rows_col)
        try:
            col = self._columns.get(t)
        except TypeError:  # an unhashable part: compute it every time
            return self._column(t, rows_col)
        if col is None:
            col = self._columns[t] = self._column(t, rows_col)
        return col

    def _column(self, t, rows_col: list) -> Column:
        if type(t) is TTuple:
            n = len(t.items)
            return Column([(("tuple", n), n, list(t.items), lambda a: "(" + ", ".join(a) + ")")], single=True)
        if type(t) is not TCon:
            return Column(None)
        if t.decl == self.bool_decl:
            return Column([(("lit", "bool", v), 0, [], lambda a, v=v: "true" if v else "false") for v in (False, True)])
        if t.decl == self.unit_decl:
            return Column([(("lit", "unit", None), 0, [], lambda a: "()")], single=True)
        if t.decl == self.list_decl:
            elem = t.args[0] if t.args else None
            longest = 0
            for h in rows_col:
                for x in _alts(h):
                    if x is None:
                        continue
                    if x[0] == "con" and x[1][0] == "list":
                        longest = max(longest, x[1][1])
                    elif x[0] == "rest":
                        longest = max(longest, len(x[1]))
            sig = [(("list", n), n, [elem] * n, lambda a: "[" + ", ".join(a) + "]") for n in range(longest + 1)]
            m = longest + 1
            sig.append((("list+", m), m, [elem] * m, lambda a: "[" + ", ".join(a + [".."]) + "]"))
            return Column(sig)
        info = self.d.type_decls.get(t.decl)
        if info is None:
            return Column(None)
        mapping = {(info.decl, q): a for q, a in zip(info.type_params, t.args)}
        if info.kind == "record":
            names = [f.name for f in info.fields]
            return Column([(("rec", info.decl), len(names), [subst(f.type, mapping) for f in info.fields],
                            lambda a, n=info.name, ns=names: _render_named(n, ns, a))], single=True)
        if info.kind == "enum":
            sig = []
            for c in info.ctors:
                ts = [subst(x, mapping) for x in c.params]
                if c.field_names is not None:
                    r = (lambda a, n=c.name, ns=c.field_names: _render_named(n, ns, a))
                elif c.params:
                    r = (lambda a, n=c.name: f"{n}({', '.join(a)})")
                else:
                    r = (lambda a, n=c.name: n)
                sig.append((("ctor", info.decl, c.name), len(ts), ts, r))
            return Column(sig)
        return Column(None)

    # -- the algorithm --------------------------------------------------------------------

    def _specialize(self, rows, key, arity):
        out = []
        for row in rows:
            h = row[0]
            for x in _alts(h):
                if x is None:
                    out.append([None] * arity + row[1:])
                elif x[0] == "con":
                    if x[1] == key:
                        out.append(list(x[2]) + row[1:])
                elif x[0] == "rest":
                    if key[0] in ("list", "list+") and len(x[1]) <= key[1]:
                        out.append(list(x[1]) + [None] * (arity - len(x[1])) + row[1:])
        return out

    def _default(self, rows):
        out = []
        for row in rows:
            for x in _alts(row[0]):
                if x is None:
                    out.append(row[1:])
        return out

    def _covered(self, rows, col: Column) -> set:
        keys = set()
        for row in rows:
            for x in _alts(row[0]):
                if x is None:
                    continue
                if x[0] == "con":
                    keys.add(x[1])
                elif x[0] == "rest":
                    for key, *_ in col.sig or []:
                        if key[0] in ("list", "list+") and key[1] >= len(x[1]):
                            keys.add(key)
        return keys

    def missing(self, rows, tys, budget) -> list:
        if budget[0] <= 0:
            return []
        if not tys:
            return [] if rows else [[]]
        t = tys[0]
        col = self.column(t, [r[0] for r in rows])
        if col.sig is not None:
            covered = self._covered(rows, col)
            complete = all(key in covered for key, *_ in col.sig)
            if complete or col.single:
                out = []
                for key, arity, argt, render in col.sig:
                    for w in self.missing(self._specialize(rows, key, arity), list(argt) + tys[1:], budget):
                        out.append([render(w[:arity])] + w[arity:])
                        if len(out) >= budget[0]:
                            return out
                return out
            ws = self.missing(self._default(rows), tys[1:], budget)
            if not ws:
                return []
            out = []
            if covered:
                for key, arity, argt, render in col.sig:
                    if key not in covered:
                        for w in ws:
                            out.append([render(["_"] * arity)] + w)
            else:
                out = [["_"] + w for w in ws]
            budget[0] -= len(out)
            return out
        ws = self.missing(self._default(rows), tys[1:], budget)
        return [["_"] + w for w in ws]

    def useful(self, rows, q, tys) -> bool:
        if not tys:
            return not rows
        h = q[0]
        if h is not None and h[0] == "or":
            return any(self.useful(rows, [a] + q[1:], tys) for a in h[1])
        if h is not None and h[0] == "opaque":
            return True
        t = tys[0]
        col = self.column(t, [r[0] for r in rows] + [h])
        if h is not None and h[0] == "con":
            if col.sig is None:
                return self.useful(self._specialize(rows, h[1], len(h[2])), list(h[2]) + q[1:], [None] * len(h[2]) + tys[1:])
            for key, arity, argt, _ in col.sig:
                if key == h[1]:
                    return self.useful(self._specialize(rows, key, arity), list(h[2]) + q[1:], list(argt) + tys[1:])
            return self.useful(self._specialize(rows, h[1], len(h[2])), list(h[2]) + q[1:], [None] * len(h[2]) + tys[1:])
        if h is not None and h[0] == "rest":
            for key, arity, argt, _ in col.sig or []:
                if key[1] >= len(h[1]):
                    qq = list(h[1]) + [None] * (arity - len(h[1])) + q[1:]
                    if self.useful(self._specialize(rows, key, arity), qq, list(argt) + tys[1:]):
                        return True
            return False
        # wildcard
        if col.sig is not None:
            covered = self._covered(rows, col)
            if all(key in covered for key, *_ in col.sig):
                return any(self.useful(self._specialize(rows, key, arity), [None] * arity + q[1:], list(argt) + tys[1:])
                           for key, arity, argt, _ in col.sig)
        return self.useful(self._default(rows), q[1:], tys[1:])

    # -- entry points ---------------------------------------------------------------------

    def check_match(self, patterns_guards: list, t):
        """(missing witnesses, indexes of unreachable arms)."""
        rows: list = []
        unreachable = []
        for i, (p, guarded) in enumerate(patterns_guards):
            n = self.norm(p, t)
            if not self.useful(rows, [n], [t]):
                unreachable.append(i)
            if not guarded and n != ("opaque",) and not _has_opaque(n):
                rows.append([n])
        ws = self.missing(rows, [t], [LIMIT])
        return [w[0] for w in ws], unreachable


def _alts(h):
    if h is not None and h[0] == "or":
        out = []
        for a in h[1]:
            out.extend(_alts(a))
        return out
    if h is not None and h[0] == "opaque":
        return []
    return [h]


def _has_opaque(n) -> bool:
    if n is None:
        return False
    if n[0] == "opaque":
        return True
    if n[0] == "or":
        return any(_has_opaque(a) for a in n[1])
    if n[0] == "con":
        return any(_has_opaque(a) for a in n[2])
    if n[0] == "rest":
        return any(_has_opaque(a) for a in n[1])
    return False


def _render_named(name: str, names: list, args: list) -> str:
    if all(a == "_" for a in args):
        return f"{name} {{ .. }}" if names else name
    return name + " { " + ", ".join(f"{n}: {a}" for n, a in zip(names, args)) + " }"
