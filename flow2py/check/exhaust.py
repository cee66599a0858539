"""Exhaustiveness and unreachable arms: Maranget's usefulness algorithm ("Warnings for pattern
matching", JFP 2007) over a matrix of normalized patterns.

The rows are derived from the checked patterns of pattern_form.py (`norm`), into the matrix
form below: None (matches anything: `_` or a name), `Con(key, args)`, `Rest(prefix)` for a list
pattern with `..` (matching every length >= len(prefix)), `Or(alts)`, or `OPAQUE`: a pattern
whose checking reported a mistake (`Unchecked`, or a constructor matched against a value that
is not of its type), or a rest pattern that is not a name or `_`. It never covers anything and
is never reported unreachable. A constructor's key says which value it is: `Lit(kind, value)`,
`TupleOf(n)`, `ListOf(n)`, `ListMore(n)` (n or more elements), `Rec(decl)`, `Ctor(decl, name)`.
A column's constructors come from its type: an enum's constructors, the one constructor of a
record or tuple, `false`/`true` and `()` for the literal kinds bool and unit, and for lists the
lengths 0..L plus "L+1 or more" where L is the longest list pattern in the column. Every other
literal type has infinitely many values, so only `_` (or a binding) completes it.

`missing` returns every missing case at once, rendered as patterns, so the message can say what
is not covered ("missing `X(B)`, `Y`, `Z`") and the fix can insert an arm for each: a cover in
which every value no arm matches is matched by exactly one witness. It follows every constructor
of a column some row names (one no row names gets `_` arguments), and writes `_` for a column no
row looks into; `_merge` folds a column whose every constructor came back with `_` arguments
into `_`, and a list's lengths into `[p, ..]`. For a type with infinitely many values (Int,
Text, ...) `_` stands for the values the rows' literals do not name, as the arms inserted go after
them. Arms with an `if` guard never count as covering. Past LIMIT witnesses (or a bound on the
work) the verdict says `truncated`. A pattern that looks into a part of the value whose type is
the error type (a misspelled type, reported already) is OPAQUE, and no case of that match is
said missing: what its arms cover cannot be known.

An unreachable arm comes with the arms above that make it so: the first that alone matches every
value it matches, or else each (reachable) one that matches some of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import partial

from flow2py.check import pattern_form as pf
from flow2py.check.typed import TCon, TError, TTuple
from flow2py.check.typeterms import subst

#: the most witnesses a match is given (each needs an arm; more and the fix ends with `_`)
LIMIT = 64


# -- the pattern space ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lit:
    kind: str  # the literal kind: int, text, bool, unit, decimal, ...
    value: object


@dataclass(frozen=True, slots=True)
class TupleOf:
    n: int


@dataclass(frozen=True, slots=True)
class ListOf:
    n: int  # exactly n elements


@dataclass(frozen=True, slots=True)
class ListMore:
    n: int  # n elements or more (the last of a List column's constructors)


@dataclass(frozen=True, slots=True)
class Rec:
    decl: str


@dataclass(frozen=True, slots=True)
class Ctor:
    decl: str
    name: str


Key = Lit | TupleOf | ListOf | ListMore | Rec | Ctor


@dataclass(frozen=True, slots=True)
class Con:
    key: Key
    args: tuple  # normalized sub-patterns, one per value of the constructor


@dataclass(frozen=True, slots=True)
class Rest:
    prefix: tuple  # a list pattern with `..`: these elements first, then any number


@dataclass(frozen=True, slots=True)
class Or:
    alts: tuple


@dataclass(frozen=True, slots=True)
class Opaque:
    pass


OPAQUE = Opaque()
#: a normalized pattern; None matches anything
Pat = Con | Rest | Or | Opaque | None


@dataclass(frozen=True, slots=True)
class Sig:
    """One constructor of a column's type."""

    key: Key
    arity: int
    arg_types: tuple
    render: Callable[[list], str]  # the witness text, given its arguments' texts


class Column:
    """The constructors of one type, or None (infinitely many values: only `_` completes it)."""

    __slots__ = ("sig", "single")

    def __init__(self, sig: list[Sig] | None, single: bool = False) -> None:
        self.sig = sig
        self.single = single


class Budget:
    """How many more witnesses `missing` may produce; `truncated` once it ran out (the
    witnesses found then do not cover every missing value)."""

    __slots__ = ("left", "steps", "truncated")

    def __init__(self, left: int, steps: int = 20_000) -> None:
        self.left = left
        self.steps = steps  # how many more calls: a pathological matrix stops, truncated
        self.truncated = False


class Exhaust:
    """Exhaustiveness of the matches of a whole program; a column's constructors are computed
    once per type (`column`)."""

    def __init__(self, decls) -> None:
        self.d = decls
        b = decls.literal_types.get("bool")
        u = decls.literal_types.get("unit")
        lst = decls.lang_types.get("List")
        self.bool_decl = b.decl if b else None
        self.unit_decl = u.decl if u else None
        self.list_decl = lst.decl if lst else None
        self._columns: dict = {}
        self.poisoned = False  # the match being checked looks into a part of unknown type

    # -- normalizing ----------------------------------------------------------------------

    def norm(self, p: pf.Pattern, t) -> Pat:
        """The matrix row cell of the checked pattern `p` (pattern_form.py) matched against a
        value of type `t`."""
        k = type(p)
        if k is pf.Bind or k is pf.Wild:
            return None
        if type(t) is TError:
            # a part of the value whose type is a mistake already reported (`Optional<Customer>`
            # misspelled): what its patterns cover cannot be known, so no case is said missing
            self.poisoned = True
            return OPAQUE
        if k is pf.Or:
            return Or(tuple(self.norm(a, t) for a in p.alts))
        if k is pf.Lit:
            v = p.value
            if p.kind == "decimal":
                try:
                    v = Decimal(str(v))
                except InvalidOperation:
                    pass  # compared as written
            return Con(Lit(p.kind, v), ())
        if k is pf.Tuple:
            n = len(p.items)
            items = t.items if type(t) is TTuple and len(t.items) == n else [None] * n
            return Con(TupleOf(n), tuple(self.norm(x, it) for x, it in zip(p.items, items)))
        if k is pf.List:
            elem = t.args[0] if type(t) is TCon and t.args else None
            items = tuple(self.norm(x, elem) for x in p.items)
            if p.rest is None:
                return Con(ListOf(len(items)), items)
            if type(p.rest) is not pf.Wild and type(p.rest) is not pf.Bind:
                return OPAQUE
            return Rest(items)
        if k is pf.Ctor:
            return self._norm_ctor(p, t)
        return OPAQUE  # pf.Unchecked

    def _norm_ctor(self, p: pf.Ctor, t) -> Pat:
        if type(t) is not TCon:
            return OPAQUE
        info = self.d.type_decls.get(p.decl)
        if info is None:
            return OPAQUE
        mapping = {(info.decl, q): a for q, a in zip(info.type_params, t.args)}
        if info.kind == "record":
            names = [f.name for f in info.fields]
            ftypes = [subst(f.type, mapping) for f in info.fields]
            key = Rec(info.decl)
        else:
            ctor = next((c for c in info.ctors if c.name == p.name), None)
            if ctor is None:
                return OPAQUE
            names = ctor.field_names
            ftypes = [subst(x, mapping) for x in ctor.params]
            key = Ctor(info.decl, ctor.name)
        if p.fields is not None and names is not None:
            given = dict(p.fields)
            args = tuple(self.norm(given[n], ft) if n in given else None for n, ft in zip(names, ftypes))
        else:
            subs = p.args or ()
            if len(subs) != len(ftypes):
                return OPAQUE
            args = tuple(self.norm(x, ft) for x, ft in zip(subs, ftypes))
        return Con(key, args)

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
            return Column(
                [Sig(TupleOf(n), n, tuple(t.items), lambda a: "(" + ", ".join(a) + ")")], single=True
            )
        if type(t) is not TCon:
            return Column(None)
        if t.decl == self.bool_decl:
            return Column(
                [Sig(Lit("bool", v), 0, (), lambda a, v=v: "true" if v else "false") for v in (False, True)]
            )
        if t.decl == self.unit_decl:
            return Column([Sig(Lit("unit", None), 0, (), lambda a: "()")], single=True)
        if t.decl == self.list_decl:
            return self._list_column(t, rows_col)
        info = self.d.type_decls.get(t.decl)
        if info is None:
            return Column(None)
        mapping = {(info.decl, q): a for q, a in zip(info.type_params, t.args)}
        if info.kind == "record":
            names = [f.name for f in info.fields]
            return Column(
                [
                    Sig(
                        Rec(info.decl),
                        len(names),
                        tuple(subst(f.type, mapping) for f in info.fields),
                        lambda a, n=info.name, ns=names: _render_named(n, ns, a),
                    )
                ],
                single=True,
            )
        if info.kind == "enum":
            sig = []
            for c in info.ctors:
                ts = tuple(subst(x, mapping) for x in c.params)
                if c.field_names is not None:
                    r = partial(_render_named, c.name, c.field_names)
                elif c.params:
                    r = partial(_render_applied, c.name)
                else:
                    r = partial(_render_bare, c.name)
                sig.append(Sig(Ctor(info.decl, c.name), len(ts), ts, r))
            return Column(sig)
        return Column(None)

    def _list_column(self, t, rows_col: list) -> Column:
        """Lengths 0..L and "L+1 or more", L the longest list pattern in the column."""
        elem = t.args[0] if t.args else None
        longest = 0
        for h in rows_col:
            for x in _alts(h):
                if type(x) is Con and type(x.key) is ListOf:
                    longest = max(longest, x.key.n)
                elif type(x) is Rest:
                    longest = max(longest, len(x.prefix))
        sig = [Sig(ListOf(n), n, (elem,) * n, lambda a: "[" + ", ".join(a) + "]") for n in range(longest + 1)]
        m = longest + 1
        sig.append(Sig(ListMore(m), m, (elem,) * m, lambda a: "[" + ", ".join(a + [".."]) + "]"))
        return Column(sig)

    # -- the algorithm --------------------------------------------------------------------

    def _specialize(self, rows, key: Key, arity: int):
        out = []
        for row in rows:
            for x in _alts(row[0]):
                if x is None:
                    out.append([None] * arity + row[1:])
                elif type(x) is Con:
                    if x.key == key:
                        out.append(list(x.args) + row[1:])
                elif type(x) is Rest and _is_list_key(key) and len(x.prefix) <= key.n:
                    out.append(list(x.prefix) + [None] * (arity - len(x.prefix)) + row[1:])
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
                if type(x) is Con:
                    keys.add(x.key)
                elif type(x) is Rest:
                    for sg in col.sig or []:
                        if _is_list_key(sg.key) and sg.key.n >= len(x.prefix):
                            keys.add(sg.key)
        return keys

    def missing(self, rows, tys, budget: Budget) -> list:
        """Every value vector of types `tys` that no row matches, as disjoint witnesses (lists of
        pattern texts, one per column): each unmatched vector is matched by exactly one of them.
        A column none of the rows looks into is `_`; otherwise each of its constructors is
        followed (an uncovered one gets `_` arguments), and `_merge` folds the results back
        where a whole column, or a list's tail, turns out to be missing."""
        budget.steps -= 1
        if budget.left <= 0 or budget.steps <= 0:
            budget.truncated = True
            return []
        if not tys:
            if rows:
                return []
            budget.left -= 1
            return [[]]
        col = self.column(tys[0], [r[0] for r in rows])
        covered = None if col.sig is None else self._covered(rows, col)
        if not covered:
            # every row's head is a wildcard (or the type has infinitely many values, and a
            # literal the rows name is matched by an earlier arm anyway): only the rest matters
            return [["_"] + w for w in self.missing(self._default(rows), tys[1:], budget)]
        entries = []
        rest = None  # what the rows whose head is a wildcard leave missing of the other columns
        for i, sg in enumerate(col.sig):
            if sg.key in covered or col.single:
                for w in self.missing(
                    self._specialize(rows, sg.key, sg.arity), list(sg.arg_types) + tys[1:], budget
                ):
                    entries.append((i, tuple(w[: sg.arity]), tuple(w[sg.arity :])))
                continue
            # no row names this constructor: only the wildcard rows match it, whatever its
            # arguments, and what they leave of the other columns is the same for each such one
            if rest is None:
                rest = self.missing(self._default(rows), tys[1:], budget)
            elif rest:
                if budget.left < len(rest):
                    budget.truncated = True
                    break
                budget.left -= len(rest)
            entries += [(i, ("_",) * sg.arity, tuple(w)) for w in rest]
        return _merge(col, entries)

    def useful(self, rows, q, tys) -> bool:
        if not tys:
            return not rows
        h = q[0]
        kh = type(h)
        if kh is Or:
            return any(self.useful(rows, [a] + q[1:], tys) for a in h.alts)
        if kh is Opaque:
            return True
        col = self.column(tys[0], [r[0] for r in rows] + [h])
        if kh is Con:
            n = len(h.args)
            for sg in col.sig or []:
                if sg.key == h.key:
                    return self.useful(
                        self._specialize(rows, sg.key, sg.arity),
                        list(h.args) + q[1:],
                        list(sg.arg_types) + tys[1:],
                    )
            return self.useful(self._specialize(rows, h.key, n), list(h.args) + q[1:], [None] * n + tys[1:])
        if kh is Rest:
            for sg in col.sig or []:
                if _is_list_key(sg.key) and sg.key.n >= len(h.prefix):
                    qq = list(h.prefix) + [None] * (sg.arity - len(h.prefix)) + q[1:]
                    if self.useful(
                        self._specialize(rows, sg.key, sg.arity), qq, list(sg.arg_types) + tys[1:]
                    ):
                        return True
            return False
        # wildcard
        if col.sig is not None:
            covered = self._covered(rows, col)
            if all(sg.key in covered for sg in col.sig):
                return any(
                    self.useful(
                        self._specialize(rows, sg.key, sg.arity),
                        [None] * sg.arity + q[1:],
                        list(sg.arg_types) + tys[1:],
                    )
                    for sg in col.sig
                )
        return self.useful(self._default(rows), q[1:], tys[1:])

    # -- entry points ---------------------------------------------------------------------

    def check_match(self, patterns_guards: list, t) -> Verdict:
        """The verdict on a match of a value of type `t` whose arms are `patterns_guards`:
        (checked pattern, whether the arm has a guard)."""
        rows: list = []
        row_arms: list = []  # the arm index of each row
        unreachable = []
        self.poisoned = False
        for i, (p, guarded) in enumerate(patterns_guards):
            n = self.norm(p, t)
            if not self.useful(rows, [n], [t]):
                # the one arm above that alone matches all it matches, or else every arm
                # above that matches some of it
                alone = [j for j, r in zip(row_arms, rows) if not self.useful([r], [n], [t])]
                if alone:
                    unreachable.append((i, (alone[0],)))
                else:
                    dead = {u for u, _ in unreachable}
                    unreachable.append(
                        (i, tuple(j for j, r in zip(row_arms, rows) if j not in dead and _overlap(r[0], n)))
                    )
            if not guarded and not _has_opaque(n):
                rows.append([n])
                row_arms.append(i)
        # room for more than LIMIT (witnesses fold, and exactly LIMIT is not a truncation)
        budget = Budget(4 * LIMIT + 1)
        ws = self.missing(rows, [t], budget)
        if len(ws) > LIMIT:
            ws, budget.truncated = ws[:LIMIT], True
        if self.poisoned:  # a pattern looks into a part of unknown type (`norm`)
            ws, budget.truncated = [], False
        return Verdict(tuple(w[0] for w in ws), budget.truncated, tuple(unreachable))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What exhaustiveness says of one match."""

    missing: tuple  # witness pattern texts: every value no arm matches is matched by exactly one
    truncated: bool  # LIMIT was reached: `missing` does not cover every missing value
    unreachable: tuple  # (arm index, indexes of the arms above that make it unreachable)


def _merge(col: Column, entries: list) -> list:
    """The witnesses of a column whose constructors were each followed: `entries` holds
    (constructor index, argument texts, texts of the columns after). Where every constructor
    of the column is missing with `_` arguments and the same tail, they fold into one `_`; for a
    list, the lengths n..L and "L+1 or more" with the same first elements fold into one `[p, ..]`."""
    sig = col.sig
    folded: dict = {}  # entry -> the witness it folds into
    if _is_list_key(sig[0].key):
        present = set(entries)
        more = len(sig) - 1  # the index of "L+1 or more"
        m = sig[more].arity
        for e in entries:
            i, args, tail = e
            if i != more:
                continue
            k0 = m
            while k0 > 0 and args[k0 - 1] == "_":
                k0 -= 1
            for k in range(k0, m + 1):
                prefix = args[:k]
                need = [(n, prefix + ("_",) * (n - k), tail) for n in range(k, more)]
                if all(x in present for x in need):
                    head = "[" + ", ".join(prefix + ("..",)) + "]" if prefix else "_"
                    for x in need + [e]:
                        folded[x] = (head,) + tail
                    break
    else:
        wild: dict = {}
        for e in entries:
            if all(x == "_" for x in e[1]):
                wild.setdefault(e[2], []).append(e)
        for tail, es in wild.items():
            if len(es) == len(sig):
                for e in es:
                    folded[e] = ("_",) + tail
    result = []
    emitted: set = set()
    for e in entries:
        w = folded.get(e)
        if w is None:
            result.append([sig[e[0]].render(list(e[1]))] + list(e[2]))
        elif w not in emitted:
            emitted.add(w)
            result.append(list(w))
    return result


def _overlap(a: Pat, b: Pat) -> bool:
    """Whether some value matches both normalized patterns."""
    if a is None or b is None:
        return True
    ka, kb = type(a), type(b)
    if ka is Opaque or kb is Opaque:
        return False
    if ka is Or:
        return any(_overlap(x, b) for x in a.alts)
    if kb is Or:
        return any(_overlap(a, x) for x in b.alts)
    if ka is Con and kb is Con:
        return a.key == b.key and all(_overlap(x, y) for x, y in zip(a.args, b.args))
    if ka is Rest and kb is Rest:
        return all(_overlap(x, y) for x, y in zip(a.prefix, b.prefix))
    if ka is Con:
        a, b = b, a
    # a is a Rest, b a Con
    if type(b.key) is not ListOf or b.key.n < len(a.prefix):
        return False
    return all(_overlap(x, y) for x, y in zip(a.prefix, b.args))


def _is_list_key(key: Key) -> bool:
    return type(key) is ListOf or type(key) is ListMore


def _alts(h: Pat) -> list:
    if type(h) is Or:
        out = []
        for a in h.alts:
            out.extend(_alts(a))
        return out
    if type(h) is Opaque:
        return []
    return [h]


def _has_opaque(n: Pat) -> bool:
    k = type(n)
    if k is Opaque:
        return True
    if k is Or:
        return any(_has_opaque(a) for a in n.alts)
    if k is Con:
        return any(_has_opaque(a) for a in n.args)
    if k is Rest:
        return any(_has_opaque(a) for a in n.prefix)
    return False


def _render_applied(name: str, args) -> str:
    return f"{name}({', '.join(args)})"


def _render_bare(name: str, args) -> str:
    return name


def _render_named(name: str, names: list, args: list) -> str:
    """`Name { field: pattern, .. }`: the fields any value fits are left to the `..`."""
    if not names:
        return name
    given = [f"{n}: {a}" for n, a in zip(names, args) if a != "_"]
    if len(given) < len(names):
        given.append("..")
    return name + " { " + ", ".join(given) + " }"
