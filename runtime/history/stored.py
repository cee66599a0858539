"""Stored values checked against the types the program expects, before the program sees them.

docs/spec/trace.md ("Stored values fit their types") is the rule. Decoding (flowrt.history.strict) makes
sure stored bytes are *some* Flow value; whoever holds the store can still write a value that is
well formed and wrong: a Reply of a `-> Result<Text, E>` Tool holding `Ok(5)`, a host token or a
parked task, a checkpoint argument of another record. Such a history is corrupt, not served:
replay and resume refuse it naming the fact (`CorruptHistory`, exit 1), exactly as they refuse a
broken chain. What is checked, by the driver, as history is served:

* a Reply against its Call's Tool: `Result<T, ToolProblem<E>>` for a Tool declared
  `-> Result<T, E>` (flowrt.engine.calls);
* a Checkpoint's arguments against the parameter types of the checkpoint's function, a parked
  task standing where the parameter is a task (flowrt.engine.checkpoints);
* Start's input against the entry function's parameters (flowrt.engine.run_loop).

`fits(desc, value)` is the check, compiled once per descriptor into closures that test
`type(v) is ...` all the way down (as the compiled reply decoders of flowrt.data.decoding do), so it
costs a fraction of a microsecond a reply; only a misfit walks the value again (`_explain`) to
say where. A type variable left in a descriptor (a generic function or Tool whose concrete type
is recorded only as text) fits any value there; a hole fits anywhere (a hole is never served: the
driver stops Incomplete first).
"""

from __future__ import annotations

import decimal
from operator import attrgetter
from typing import Any, Callable, Optional

from flowrt.data.facts import ParkedTask
from flowrt.data.typedesc import (
    _GENERATION,
    DictOf,
    ListOf,
    Named,
    SetOf,
    Token,
    TupleOf,
    Var,
    _Prim,
    fields_of,
    type_text,
)
from flowrt.data.values import (
    Dict,
    Duration,
    Hole,
    HostToken,
    Instant,
    List,
    Record,
    Result,
    Set,
    ToolProblem,
    show,
)

__all__ = ["CorruptHistory", "checker", "fits", "misfit", "reply_type", "reply_checker", "param_types"]


class CorruptHistory(Exception):
    """A stored fact whose value does not fit the type the program expects: refused, not served."""

    def __init__(self, n: int, message: str):
        super().__init__(f"fact {n} is corrupt: {message}")
        self.n = n


# ---- compiled checks ------------------------------------------------------------------------------

_PRIMS = {
    "Int": int,
    "Decimal": decimal.Decimal,
    "Text": str,
    "Bytes": bytes,
    "Bool": bool,
    "Unit": type(None),
    "Duration": Duration,
    "Instant": Instant,
}


def _always(v) -> bool:
    return True


def _compile(d, memo: dict) -> Callable[[Any], bool]:
    f = memo.get(d)
    if f is not None:
        return f
    cell: list = []
    memo[d] = lambda v: cell[0](v)  # a recursive type refers to itself through the cell
    f = _node(d, memo)
    cell.append(f)
    memo[d] = f
    return f


def _node(d, memo) -> Callable[[Any], bool]:
    if d is None:  # a task (or function) position: only a checkpoint's parked task stands there
        return lambda v: type(v) is ParkedTask or type(v) is Hole
    t = type(d)
    if t is _Prim:
        want = _PRIMS[d.name]
        return lambda v: type(v) is want or type(v) is Hole
    if t is Var:
        return _always
    if t is Token:
        type_id = d.type_id
        return lambda v: (type(v) is HostToken and v.type_id == type_id) or type(v) is Hole
    if t is ListOf or t is SetOf:
        item = _compile(d.item, memo)
        want = List if t is ListOf else Set

        def coll(v):
            if type(v) is not want:
                return type(v) is Hole
            return all(map(item, v))

        return coll
    if t is DictOf:
        key, val = _compile(d.key, memo), _compile(d.value, memo)

        def dct(v):
            if type(v) is not Dict:
                return type(v) is Hole
            return all(key(k) and val(x) for k, x in v.items())

        return dct
    if t is TupleOf:
        items = tuple(_compile(x, memo) for x in d.items)
        n = len(items)

        def tup(v):
            if type(v) is not tuple or len(v) != n:
                return type(v) is Hole
            return all(f(x) for f, x in zip(items, v))

        return tup
    if t is Named:
        return _named(d, memo)
    raise TypeError(f"not a type descriptor: {d!r}")


def _field_types(cls, args) -> tuple:
    try:
        return fields_of(cls, args)
    except TypeError:  # a class written by hand, with no field descriptors: its fields are not checked
        return (Var(0),) * len(cls.__flow_fields__)


def _fields(cls, args, memo):
    """(get the field values, their checks) of a constructor class applied to `args`."""
    names = cls.__flow_fields__
    if not names:
        return None, ()
    return attrgetter(*names), tuple(_compile(x, memo) for x in _field_types(cls, args))


def _named(d, memo):
    cls, args = d.cls, d.args
    variants = cls.__dict__.get("__flow_variants__")
    classes = [cls] if variants is None else list(variants.values())
    table: dict = {}
    for c in classes:
        get, checks = _fields(c, args, memo)
        if not checks:
            table[c] = _always
        elif len(checks) == 1:
            table[c] = (lambda get, f: lambda v: f(get(v)))(get, checks[0])
        else:
            table[c] = (lambda get, fs: lambda v: all(f(x) for f, x in zip(fs, get(v))))(get, checks)

    def named(v):
        f = table.get(type(v))
        if f is None:
            return type(v) is Hole
        return f(v)

    return named


_CACHE: dict = {}  # descriptor -> (generation, compiled check)


def _check(desc) -> Callable[[Any], bool]:
    got = _CACHE.get(desc)
    if got is not None and got[0] == _GENERATION[0]:
        return got[1]
    f = _compile(desc, {})
    _CACHE[desc] = (_GENERATION[0], f)
    return f


def checker(desc) -> Callable[[Any], bool]:
    """The compiled check of `desc` as one function (kept by a call site, e.g. a ToolSpec): True
    when a value fits. It compiles itself again after `field_types` (flowrt.data.typedesc)."""
    state: list = [None, -1]

    def check(v) -> bool:
        if state[1] != _GENERATION[0]:
            state[0], state[1] = _compile(desc, {}), _GENERATION[0]
        try:
            return state[0](v)
        except RecursionError:
            return False

    check.desc = desc
    return check


def misfit(desc, value, path: str = "$") -> Optional[str]:
    """None when `value` fits `desc`, else where and how it does not (`$.Ok: expected Text, got 5`)."""
    try:
        if _check(desc)(value):
            return None
        return _explain(desc, value, path) or f"{path}: does not fit {_type(desc)}"
    except RecursionError:
        return f"{path}: a value nested too deeply to check against {_type(desc)}"


def fits(desc, value) -> bool:
    return misfit(desc, value) is None


# ---- the misfit, in words ---------------------------------------------------------------------------


def _type(d) -> str:
    return "a task" if d is None else type_text(d)


def _got(v) -> str:
    if type(v) is ParkedTask:
        return f"a parked task ({v.task})"
    if type(v) is HostToken:
        return f"a {v.type_id.rsplit('::', 1)[-1]} host token"
    try:
        s = show(v)
    except Exception:  # the text of a value is not what is being judged here
        s = f"a {type(v).__name__}"
    return s if len(s) <= 60 else s[:57] + "..."


def _field_paths(vc, path: str) -> list[str]:
    """The paths of a value's fields, as admission names them (flowrt.data.decoding)."""
    names = vc.__flow_field_names__
    if issubclass(vc, Record):
        return [f"{path}.{n}" for n in names]
    ctor = vc.__flow_ctor__
    if vc.__flow_named__:
        return [f"{path}.{ctor}.{n}" for n in names]
    if len(names) == 1:
        return [f"{path}.{ctor}"]
    return [f"{path}.{ctor}[{i}]" for i in range(len(names))]


def _explain(d, v, path: str) -> Optional[str]:
    """The first place where `v` does not fit `d`, as `path: expected T, got v` (None: it fits)."""
    if type(v) is Hole:
        return None
    if not _check(d)(v):
        t = type(d)
        if d is None or t in (_Prim, Var, Token):
            return f"{path}: expected {_type(d)}, got {_got(v)}"
        if t is ListOf or t is SetOf:
            if type(v) is not (List if t is ListOf else Set):
                return f"{path}: expected {_type(d)}, got {_got(v)}"
            for i, x in enumerate(v):
                why = _explain(d.item, x, f"{path}[{i}]")
                if why:
                    return why
        elif t is DictOf:
            if type(v) is not Dict:
                return f"{path}: expected {_type(d)}, got {_got(v)}"
            for k, x in v.items():
                why = _explain(d.key, k, f"{path}.<key {_got(k)}>") or _explain(
                    d.value, x, f"{path}[{_got(k)}]"
                )
                if why:
                    return why
        elif t is TupleOf:
            if type(v) is not tuple or len(v) != len(d.items):
                return f"{path}: expected {_type(d)}, got {_got(v)}"
            for i, (td, x) in enumerate(zip(d.items, v)):
                why = _explain(td, x, f"{path}[{i}]")
                if why:
                    return why
        elif t is Named:
            cls, args = d.cls, d.args
            variants = cls.__dict__.get("__flow_variants__")
            vc = type(v)
            if (
                (vc is not cls)
                if variants is None
                else (variants.get(getattr(vc, "__flow_ctor__", None)) is not vc)
            ):
                return f"{path}: expected {_type(d)}, got {_got(v)}"
            for td, x, p in zip(_field_types(vc, args), v._flow_values(), _field_paths(vc, path)):
                why = _explain(td, x, p)
                if why:
                    return why
        return f"{path}: expected {_type(d)}, got {_got(v)}"
    return None


# ---- what the program expects -------------------------------------------------------------------------


def reply_type(spec, type_args: tuple = ()):
    """The type of a reply to a call of `spec`: `Result<T, ToolProblem<E>>` for a Tool declared
    `-> Result<T, E>`, with a generic Tool's type arguments (descriptors) put in."""
    from flowrt.data.typedesc import subst

    desc = spec.result
    if desc is None:
        return None
    if type_args:
        desc = subst(desc, tuple(type_args))
    if type(desc) is Named and desc.cls is Result:
        return Named(Result, desc.args[0], Named(ToolProblem, desc.args[1]))
    return desc


#: What a reply to a call of an unknown Tool must at least be (its payload types unknown).
ANY_REPLY = Named(Result, Var(0), Named(ToolProblem, Var(0)))


def reply_checker(spec, type_args: tuple = ()) -> Callable[[Any], bool]:
    """The check of a stored reply to a call of `spec` (with a generic Tool's type arguments),
    kept on the spec; for no spec, the check that it is a Tool outcome at all."""
    if spec is None:
        return checker(ANY_REPLY)
    f = spec.checks.get(type_args)
    if f is None:
        f = spec.checks[type_args] = checker(reply_type(spec, type_args) or ANY_REPLY)
    return f


def fields_or_any(cls, args: tuple = ()) -> tuple:
    """A constructor's field descriptors (any value fits a field of a class written by hand)."""
    return _field_types(cls, args)


def args_misfit(fn, args: tuple, allow_parked: bool = False) -> Optional[str]:
    """Where stored arguments (a Start's input, a Checkpoint's arguments) do not fit the
    parameters of `fn`, or None. A parked task may stand for a task parameter only with
    `allow_parked` (a checkpoint's arguments). Nothing is checked for a function with no
    parameter types (written by hand)."""
    types = param_types(fn)
    if types is None:
        return None
    if len(types) != len(args):
        return f"{len(args)} argument(s) for {len(types)} parameter(s)"
    names = tuple(getattr(fn.__flow__, "params", ()))
    for i, (desc, x) in enumerate(zip(types, args)):
        path = f"$.{names[i]}" if i < len(names) else f"$[{i}]"
        if desc is None and not allow_parked and type(x) is ParkedTask:
            return f"{path}: a parked task where no task can be"
        why = misfit(desc, x, path)
        if why:
            return why
    return None


def param_types(fn) -> Optional[tuple]:
    """The parameter descriptors of a generated top-level function (`rt.fn(..., types=...)`), or
    None for a function that gives none (written by hand): then nothing is checked."""
    meta = getattr(fn, "__flow__", None)
    types = getattr(meta, "types", None)
    if types is None:
        return None
    if callable(types):
        types = tuple(types())
        meta.types = types
    return types
