"""Types during checking: the semantic types of typed.py plus unification variables.

A `TVar` is a hole a later constraint fills (union-find through `ref`). Only the checker ever
sees one: `zonk` replaces every solved variable by its solution and every unsolved one by the
default (Unit) before the side tables are handed out.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from flow2py.check.typed import (
    POLY,
    PURE,
    TOOL,
    Effect,
    TCon,
    TError,
    TFun,
    TNever,
    TParam,
    TTuple,
    Type,
)

_var_ids = itertools.count(1)


class TVar:
    __slots__ = ("id", "ref")

    def __init__(self) -> None:
        self.id = next(_var_ids)
        self.ref: object | None = None

    def __repr__(self) -> str:
        return f"?{self.id}"


def resolve(t):
    """Follow solved variables to the representative type (path compression)."""
    if type(t) is not TVar or t.ref is None:
        return t
    root = t.ref
    while type(root) is TVar and root.ref is not None:
        root = root.ref
    # compress
    while type(t) is TVar and t.ref is not None and t.ref is not root:
        nxt = t.ref
        t.ref = root
        t = nxt
    return root


def occurs(v: TVar, t) -> bool:
    t = resolve(t)
    if t is v:
        return True
    k = type(t)
    if k is TCon:
        return any(occurs(v, a) for a in t.args)
    if k is TTuple:
        return any(occurs(v, a) for a in t.items)
    if k is TFun:
        return occurs(v, t.result) or any(occurs(v, a) for a in t.params)
    return False


def unify(a, b) -> bool:
    """Make `a` and `b` the same type. Effects of function types are not part of a type's
    identity (they are checked separately); TError and TNever fit anything."""
    a = resolve(a)
    b = resolve(b)
    if a is b:
        return True
    ka, kb = type(a), type(b)
    if ka is TError or kb is TError:
        # a variable meeting an error is of the error (rustc's `{type error}`): what is taken out
        # of something reported (`Some(itms)`, `itms` unknown) is not reported unknown again
        if ka is TVar:
            _bind_var(a, b, kb)
        elif kb is TVar:
            _bind_var(b, a, ka)
        else:  # and so is every variable of what meets it (`List<A>`: the element of an unknown list)
            _poison(b if ka is TError else a)
        return True
    if ka is TVar:
        return _bind_var(a, b, kb)
    if kb is TVar:
        return _bind_var(b, a, ka)
    if ka is TNever or kb is TNever:
        return True
    if ka is not kb:
        return False
    if ka is TCon:
        if a.decl != b.decl or len(a.args) != len(b.args):
            return False
        return _unify_pairs(a.args, b.args)
    if ka is TTuple:
        if len(a.items) != len(b.items):
            return False
        return _unify_pairs(a.items, b.items)
    if ka is TFun:
        if len(a.params) != len(b.params):
            return False
        ok = _unify_pairs(a.params, b.params)
        return unify(a.result, b.result) and ok
    if ka is TParam:
        return a == b
    return False


def unifiable(a, b) -> bool:
    """Whether `unify(a, b)` would succeed, binding nothing (a probe, as rustc's expectation
    from a call's expected result: what it would fix is only taken when it fits)."""
    return _probe(a, b, {})


def _walk(t, m: dict):
    t = resolve(t)
    while type(t) is TVar and t in m:
        t = resolve(m[t])
    return t


def _probe_occurs(v, t, m: dict) -> bool:
    t = _walk(t, m)
    k = type(t)
    if k is TCon:
        return any(_probe_occurs(v, x, m) for x in t.args)
    if k is TTuple:
        return any(_probe_occurs(v, x, m) for x in t.items)
    if k is TFun:
        return _probe_occurs(v, t.result, m) or any(_probe_occurs(v, x, m) for x in t.params)
    return t is v


def _probe(a, b, m: dict) -> bool:
    a, b = _walk(a, m), _walk(b, m)
    ka, kb = type(a), type(b)
    if a is b or ka is TError or kb is TError:
        return True
    if ka is TVar or kb is TVar:
        v, t = (a, b) if ka is TVar else (b, a)
        if type(t) is TNever:
            return True
        if _probe_occurs(v, t, m):
            return False
        m[v] = t
        return True
    if ka is TNever or kb is TNever:
        return True
    if ka is not kb:
        return False
    if ka is TCon:
        pairs = zip(a.args, b.args) if a.decl == b.decl and len(a.args) == len(b.args) else None
    elif ka is TTuple:
        pairs = zip(a.items, b.items) if len(a.items) == len(b.items) else None
    elif ka is TFun:
        same = len(a.params) == len(b.params)
        pairs = zip((*a.params, a.result), (*b.params, b.result)) if same else None
    else:
        return ka is TParam and a == b
    return pairs is not None and all(_probe(x, y, m) for x, y in pairs)


def _bind_var(v, t, kt) -> bool:
    """Unify the unbound variable `v` with `t` (of type `kt`): `Never` leaves it unbound."""
    if kt is TNever:
        return True
    if occurs(v, t):
        return False
    v.ref = t
    return True


def _poison(t) -> None:
    """Bind every unbound variable of `t` to the error type."""
    t = resolve(t)
    k = type(t)
    if k is TVar:
        t.ref = TError()
    elif k is TCon:
        for x in t.args:
            _poison(x)
    elif k is TTuple:
        for x in t.items:
            _poison(x)
    elif k is TFun:
        for x in (*t.params, t.result):
            _poison(x)


def _unify_pairs(xs, ys) -> bool:
    """Unify each pair of two equally long lists, all of them even after one fails."""
    ok = True
    for x, y in zip(xs, ys):
        ok = unify(x, y) and ok
    return ok


def known(t):
    """`t` with its solved variables replaced by their solutions, or None while one is unsolved
    (whether two types are the same can then be asked with `==`)."""
    hole = TVar()
    z = zonk(t, hole)
    return None if occurs(hole, z) else z


def zonk(t, default):
    """The type with every variable replaced by its solution (unsolved: `default`). A type
    that holds no variable comes back as it is (the same object, rather than an equal copy)."""
    k = type(t)
    if k is TVar:
        t = resolve(t)
        k = type(t)
        if k is TVar:
            return default
    if k is TCon:
        args = t.args
        if not args:
            return t
        new = [zonk(a, default) for a in args]
        for a, b in zip(args, new):
            if a is not b:
                return TCon(t.decl, tuple(new))
        return t
    if k is TTuple:
        items = t.items
        new = [zonk(a, default) for a in items]
        for a, b in zip(items, new):
            if a is not b:
                return TTuple(tuple(new))
        return t
    if k is TFun:
        params = t.params
        new = [zonk(a, default) for a in params]
        result = zonk(t.result, default)
        if result is t.result:
            for a, b in zip(params, new):
                if a is not b:
                    break
            else:
                return t
        return TFun(tuple(new), result, t.effect)
    return t


def subst(t, mapping: dict) -> Type:
    """Replace type parameters (keyed by (owner, name)) by types."""
    if not mapping:
        return t
    k = type(t)
    if k is TParam:
        return mapping.get((t.owner, t.name), t)
    if k is TCon:
        if not t.args:
            return t
        return TCon(t.decl, tuple(subst(a, mapping) for a in t.args))
    if k is TTuple:
        return TTuple(tuple(subst(a, mapping) for a in t.items))
    if k is TFun:
        return TFun(tuple(subst(a, mapping) for a in t.params), subst(t.result, mapping), t.effect)
    return t


def fun_effects(t) -> Effect:
    """The strongest effect of any function type inside `t` ('pure' < 'poly' < 'tool')."""
    best = PURE
    stack = [t]
    while stack:
        x = resolve(stack.pop())
        k = type(x)
        if k is TFun:
            best = join(best, x.effect)
            if best == TOOL:
                return best
        elif k is TCon:
            stack.extend(x.args)
        elif k is TTuple:
            stack.extend(x.items)
    return best


_RANK = {PURE: 0, POLY: 1, TOOL: 2}


def join(a: Effect, b: Effect) -> Effect:
    return a if _RANK[a] >= _RANK[b] else b


def has_effect(t, effect: Effect) -> bool:
    stack = [t]
    while stack:
        x = resolve(stack.pop())
        k = type(x)
        if k is TFun:
            if x.effect == effect:
                return True
            stack.extend(x.params)
            stack.append(x.result)
        elif k is TCon:
            stack.extend(x.args)
        elif k is TTuple:
            stack.extend(x.items)
    return False


def show(t, name_of: Callable[[str], str] = lambda d: d.split("::")[-1]) -> str:
    """A type as the author would write it."""
    t = resolve(t)
    k = type(t)
    if k is TVar:
        return "_"
    if k is TCon:
        n = name_of(t.decl)
        if t.args:
            return f"{n}<{', '.join(show(a, name_of) for a in t.args)}>"
        return n
    if k is TTuple:  # a one-element tuple keeps its comma: `(Int)` is Int
        return "(" + ", ".join(show(a, name_of) for a in t.items) + ("," if len(t.items) == 1 else "") + ")"
    if k is TFun:
        eff = " !tool" if t.effect == TOOL else (" !pure" if t.effect == "pure_marked" else "")
        return "(" + ", ".join(show(a, name_of) for a in t.params) + ") -> " + show(t.result, name_of) + eff
    if k is TParam:
        return t.name
    if k is TNever:
        return "Never"
    if k is TError:
        return "?"
    return str(t)
