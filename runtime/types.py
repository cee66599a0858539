"""Type descriptors, admission (`decode`) and the JSON form (`to_json`) of Flow data.

DESIGN.md "JSON mapping of Flow data" is the rule; docs/spec/abi.md "Type descriptors" lists the
descriptors. `decode(desc, value)` is the one admission check for run input, Tool replies and
fork input: it takes the plain JSON form *or* runtime values (instances of generated classes,
`rt.List`, ...) and mixtures of both, and returns a runtime value or raises `DecodeError` naming
the path (`$.notes[2]: expected Text, got 3`).

A generated class says what its fields hold with `__flow_field_types__`: a tuple of descriptors
aligned with `__flow_fields__`, where `T.Var(i)` is the class's i-th type parameter. Codegen may
set it to a zero-argument callable instead (for types that refer to classes defined later); it is
called once, on first use. A class with `__flow_opaque__ = True` is never built by decoding.
"""
from __future__ import annotations

import base64
import binascii
import decimal
import json
import re
from datetime import datetime
from decimal import Decimal
from typing import Any

from flowrt.values import (
    NONE, Dict, Duration, Enum, Err, Failed, HostToken, Instant, List, Malformed, NotRun,
    Ok, Option, Record, Result, Set, Some, ToolProblem, Unknown, dict_of, list_of, set_of, show,
)

__all__ = ["T", "DecodeError", "decode", "compile_decoder", "to_json", "loads_exact", "type_text", "field_types", "fields_of", "subst"]


class DecodeError(Exception):
    """A value does not fit its type: `path` is where (`$.notes[2]`), `message` what."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


# ---- descriptors ------------------------------------------------------------------------------

class _Desc:
    __slots__ = ()

    def _key(self):
        return ()

    def __eq__(self, other):
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def __repr__(self):
        return f"<type {type_text(self)}>"


class _Prim(_Desc):
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def _key(self):
        return self.name


class ListOf(_Desc):
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def _key(self):
        return self.item


class SetOf(_Desc):
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def _key(self):
        return self.item


class DictOf(_Desc):
    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key, self.value = key, value

    def _key(self):
        return (self.key, self.value)


class TupleOf(_Desc):
    __slots__ = ("items",)

    def __init__(self, *items):
        self.items = items

    def _key(self):
        return self.items


class Named(_Desc):
    """A generated record or enum class (or std's Result/Option/ToolProblem) applied to args."""

    __slots__ = ("cls", "args")

    def __init__(self, cls, *args):
        self.cls, self.args = cls, args

    def _key(self):
        return (self.cls, self.args)


class Var(_Desc):
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def _key(self):
        return self.index


class Token(_Desc):
    __slots__ = ("type_id",)

    def __init__(self, type_id):
        self.type_id = type_id

    def _key(self):
        return self.type_id


class T:
    """The descriptor namespace generated code uses: `rt.T.ListOf(rt.T.TEXT)`."""

    INT = _Prim("Int")
    DECIMAL = _Prim("Decimal")
    TEXT = _Prim("Text")
    BYTES = _Prim("Bytes")
    BOOL = _Prim("Bool")
    UNIT = _Prim("Unit")
    DURATION = _Prim("Duration")
    INSTANT = _Prim("Instant")
    ListOf = ListOf
    SetOf = SetOf
    DictOf = DictOf
    TupleOf = TupleOf
    Named = Named
    Var = Var
    Token = Token

    @staticmethod
    def OptionOf(t):
        return Named(Option, t)

    @staticmethod
    def ResultOf(t, e):
        return Named(Result, t, e)

    @staticmethod
    def ToolProblemOf(e):
        return Named(ToolProblem, e)


# std's built-in enums describe their payloads like generated classes do.
Ok.__flow_field_types__ = (Var(0),)
Err.__flow_field_types__ = (Var(1),)
Some.__flow_field_types__ = (Var(0),)
Failed.__flow_field_types__ = (Var(0),)
Malformed.__flow_field_types__ = (T.TEXT,)
NotRun.__flow_field_types__ = (T.TEXT,)
Unknown.__flow_field_types__ = (T.TEXT,)
Result.__flow_type_params__ = ("T", "E")
Option.__flow_type_params__ = ("T",)
ToolProblem.__flow_type_params__ = ("E",)


def _subst(d, args):
    t = type(d)
    if t is Var:
        return args[d.index]
    if t is _Prim or t is Token:
        return d
    if t is ListOf:
        return ListOf(_subst(d.item, args))
    if t is SetOf:
        return SetOf(_subst(d.item, args))
    if t is DictOf:
        return DictOf(_subst(d.key, args), _subst(d.value, args))
    if t is TupleOf:
        return TupleOf(*(_subst(x, args) for x in d.items))
    if t is Named:
        return Named(d.cls, *(_subst(x, args) for x in d.args))
    raise TypeError(f"not a type descriptor: {d!r}")


subst = _subst  # public name: a descriptor with T.Var(i) replaced by args[i]

_FIELD_CACHE: dict = {}


def field_types(cls, descs) -> None:
    """Set a generated class's field descriptors (codegen emits this after every class exists):
    `rt.field_types(Item, (rt.T.TEXT, rt.T.DECIMAL))`; `descs` may be a zero-argument callable."""
    n = len(cls.__flow_fields__)
    if not callable(descs):
        descs = tuple(descs)
        if len(descs) != n:
            raise TypeError(f"{cls.__qualname__} has {n} fields, got {len(descs)} descriptors")
    cls.__flow_field_types__ = descs
    for key in [k for k in _FIELD_CACHE if k[0] is cls]:
        del _FIELD_CACHE[key]
    _GENERATION[0] += 1


def fields_of(cls, args: tuple = ()) -> tuple:
    """The field descriptors of a generated class with its type parameters replaced by `args`."""
    key = (cls, args)
    r = _FIELD_CACHE.get(key)
    if r is None:
        raw = cls.__dict__.get("__flow_field_types__")
        if raw is None:
            if cls.__flow_fields__:
                raise TypeError(f"{cls.__qualname__} has no __flow_field_types__")
            raw = ()
        if callable(raw):
            raw = tuple(raw())
            cls.__flow_field_types__ = raw
        r = tuple(_subst(d, args) for d in raw) if args else tuple(raw)
        _FIELD_CACHE[key] = r
    return r


# ---- type text -------------------------------------------------------------------------------

def _class_name(cls) -> str:
    return cls.__dict__.get("__flow_name__") or getattr(cls, "__flow_name__", cls.__name__)


def type_text(d) -> str:
    """A descriptor in Flow type syntax: `List<Text>`, `Result<Int, Oops>`, `(Int, Text)`."""
    t = type(d)
    if t is _Prim:
        return d.name
    if t is ListOf:
        return f"List<{type_text(d.item)}>"
    if t is SetOf:
        return f"Set<{type_text(d.item)}>"
    if t is DictOf:
        return f"Dict<{type_text(d.key)}, {type_text(d.value)}>"
    if t is TupleOf:
        return "(" + ", ".join(type_text(x) for x in d.items) + ")"
    if t is Named:
        name = _class_name(d.cls)
        return f"{name}<{', '.join(type_text(a) for a in d.args)}>" if d.args else name
    if t is Var:
        return f"${d.index}"
    if t is Token:
        return d.type_id.rsplit("::", 1)[-1]
    raise TypeError(f"not a type descriptor: {d!r}")


# ---- decoding ------------------------------------------------------------------------------

def loads_exact(text: str | bytes) -> Any:
    """`json.loads` keeping every number exact: integers as int, others as Decimal."""
    return json.loads(text, parse_float=Decimal, parse_constant=_no_constant)


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _got(v) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (dict, list)) or type(v) is float:
        try:
            s = json.dumps(v, default=str, ensure_ascii=False)
        except (TypeError, ValueError):
            s = repr(v)
    else:
        s = show(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _fail(path, want, v):
    raise DecodeError(path, f"expected {want}, got {_got(v)}")


_DEC_RE = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")


def _canon_decimal(d: Decimal) -> Decimal:
    if d.as_tuple().exponent > 0:  # 1E+3 -> 1000: Flow text has no exponent form
        d = d.quantize(Decimal(1), context=_QCTX)
    if not d and d.is_signed():
        d = -d
    return d


_QCTX = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _dec_int(d, v, path):
    if type(v) is int:
        return v
    _fail(path, "Int", v)


def _dec_decimal(d, v, path):
    t = type(v)
    if t is Decimal:
        if not v.is_finite():
            _fail(path, "Decimal", v)
        return _canon_decimal(v)
    if t is int:
        return Decimal(v)
    if t is str:
        if _DEC_RE.match(v):
            return _canon_decimal(Decimal(v))
        _fail(path, "Decimal", v)
    if t is float:
        # A float from a Python host or plain json.loads: its shortest repr is the literal it came from.
        if v != v or v in (float("inf"), float("-inf")):
            _fail(path, "Decimal", v)
        return _canon_decimal(Decimal(repr(v)))
    _fail(path, "Decimal", v)


def _dec_text(d, v, path):
    if type(v) is str:
        return v
    _fail(path, "Text", v)


def _dec_bytes(d, v, path):
    if type(v) is bytes:
        return v
    if type(v) is str:
        try:
            return base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise DecodeError(path, "expected Bytes (base64), got a string that is not base64") from None
    _fail(path, "Bytes", v)


def _dec_bool(d, v, path):
    if type(v) is bool:
        return v
    _fail(path, "Bool", v)


def _dec_unit(d, v, path):
    if v is None:
        return None
    _fail(path, "Unit (null)", v)


_DUR_RE = re.compile(r"(-?[0-9]+)(ns|us|ms|s|m|h|d)\Z")
_DUR_UNIT = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000,
             "h": 3_600_000_000_000, "d": 86_400_000_000_000}


def _dec_duration(d, v, path):
    t = type(v)
    if t is Duration:
        return v
    if t is int:
        return Duration(v)
    if t is str:
        m = _DUR_RE.match(v)
        if m:
            return Duration(int(m.group(1)) * _DUR_UNIT[m.group(2)])
    _fail(path, "Duration (integer nanoseconds or like \"250ms\")", v)


_ISO_RE = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)\Z")


def _dec_instant(d, v, path):
    t = type(v)
    if t is Instant:
        return v
    if t is int:
        return Instant(v)
    if t is str:
        m = _ISO_RE.match(v)
        if m:
            try:
                base = datetime.fromisoformat(m.group(1) + ("+00:00" if m.group(3) == "Z" else m.group(3)))
            except ValueError:
                base = None
            if base is not None:
                frac = int((m.group(2) or "").ljust(9, "0"))
                return Instant(int(base.timestamp()) * 1_000_000_000 + frac)
    _fail(path, "Instant (RFC 3339 text or integer nanoseconds)", v)


def _dec_list(d, v, path):
    t = type(v)
    if t is List or t is list or t is tuple:
        item = d.item
        f = _DECODERS[type(item)]
        out = [f(item, x, f"{path}[{i}]") for i, x in enumerate(v)]
        if t is List and all(a is b for a, b in zip(out, v)):
            return v
        return list_of(out)
    _fail(path, type_text(d), v)


def _dec_set(d, v, path):
    t = type(v)
    if t is Set or t is list or t is tuple or t is List or t is frozenset or t is set:
        item = d.item
        f = _DECODERS[type(item)]
        xs = sorted(v, key=_sort_key_safe) if t in (set, frozenset) else list(v)
        out = [f(item, x, f"{path}[{i}]") for i, x in enumerate(xs)]
        if t is Set and all(a is b for a, b in zip(out, xs)):
            return v
        return set_of(out)
    _fail(path, type_text(d), v)


def _sort_key_safe(x):
    return (type(x).__name__, repr(x))


def _dec_dict(d, v, path):
    kd, vd = d.key, d.value
    fk, fv = _DECODERS[type(kd)], _DECODERS[type(vd)]
    t = type(v)
    if t is Dict:
        pairs = [(fk(kd, k, f"{path}.<key {show(k)}>"), fv(vd, x, f"{path}[{show(k)}]")) for k, x in v.items()]
        if all(a is k and b is x for (a, b), (k, x) in zip(pairs, v.items())):
            return v
        return dict_of(pairs)
    if t is dict:
        if kd == T.TEXT or not v or not all(type(k) is str for k in v):
            pairs = [(fk(kd, k, f"{path}.<key {_got(k)}>"), fv(vd, x, f"{path}[{_got(k)}]"))
                     for k, x in v.items()]
            return dict_of(pairs)
        _fail(path, f"{type_text(d)} (an array of [key, value] pairs)", v)
    if (t is list or t is tuple or t is List) and kd != T.TEXT:
        pairs = []
        seen = set()
        for i, p in enumerate(v):
            if type(p) not in (list, tuple, List) or len(p) != 2:
                _fail(f"{path}[{i}]", "a [key, value] pair", p)
            k = fk(kd, p[0], f"{path}[{i}][0]")
            if k in seen:
                raise DecodeError(f"{path}[{i}][0]", f"duplicate key {show(k)}")
            seen.add(k)
            pairs.append((k, fv(vd, p[1], f"{path}[{i}][1]")))
        return dict_of(pairs)
    _fail(path, type_text(d) + (" (an object)" if kd == T.TEXT else ""), v)


def _dec_tuple(d, v, path):
    t = type(v)
    if t is tuple or t is list or t is List:
        if len(v) != len(d.items):
            raise DecodeError(path, f"expected {type_text(d)} ({len(d.items)} elements), got {len(v)} elements")
        out = tuple(_DECODERS[type(td)](td, x, f"{path}[{i}]") for i, (td, x) in enumerate(zip(d.items, v)))
        if t is tuple and all(a is b for a, b in zip(out, v)):
            return v
        return out
    _fail(path, type_text(d), v)


def _dec_token(d, v, path):
    if type(v) is HostToken:
        if v.type_id == d.type_id:
            return v
        raise DecodeError(path, f"expected a {type_text(d)} token, got a {v.type_id.rsplit('::', 1)[-1]} token")
    if type(v) is dict and len(v) == 1 and "$token" in v and type(v["$token"]) is str:
        return HostToken(d.type_id, v["$token"])
    _fail(path, f"{type_text(d)} (a host token {{\"$token\": ...}})", v)


def _dec_var(d, v, path):
    raise TypeError(f"unresolved type variable ${d.index} at {path}")


def _fields_from(cls, args, payload, path, ctor_path):
    """Decode a payload (JSON or already runtime) into the constructor's field values."""
    names = cls.__flow_field_names__
    types = fields_of(cls, args)
    if cls.__flow_named__:
        if type(payload) is not dict:
            _fail(ctor_path, f"an object with fields {', '.join(names)}", payload)
        extra = [k for k in payload if k not in names]
        if extra:
            raise DecodeError(f"{ctor_path}.{extra[0]}", f"unknown field of {cls.__flow_ctor__}")
        out = []
        for n, td in zip(names, types):
            if n in payload:
                out.append(_DECODERS[type(td)](td, payload[n], f"{ctor_path}.{n}"))
            elif type(td) is Named and td.cls is Option:
                out.append(NONE)
            else:
                raise DecodeError(ctor_path, f"missing field {n}")
        return out
    if len(names) == 1:
        td = types[0]
        return [_DECODERS[type(td)](td, payload, ctor_path)]
    if type(payload) not in (list, tuple) or len(payload) != len(names):
        _fail(ctor_path, f"an array of {len(names)} values", payload)
    return [_DECODERS[type(td)](td, x, f"{ctor_path}[{i}]") for i, (td, x) in enumerate(zip(types, payload))]


def _check_instance(cls, args, v, path):
    """Admit an already-built value: check every field against its descriptor (same paths as JSON)."""
    types = fields_of(cls, args)
    vals = v._flow_values()
    names = cls.__flow_field_names__
    if issubclass(cls, Record):
        paths = [f"{path}.{n}" for n in names]
    elif cls.__flow_named__:
        paths = [f"{path}.{cls.__flow_ctor__}.{n}" for n in names]
    elif len(names) == 1:
        paths = [f"{path}.{cls.__flow_ctor__}"]
    else:
        paths = [f"{path}.{cls.__flow_ctor__}[{i}]" for i in range(len(names))]
    out = [_DECODERS[type(td)](td, x, p) for td, x, p in zip(types, vals, paths)]
    if all(a is b for a, b in zip(out, vals)):
        return v
    return cls(*out)


def _dec_named(d, v, path):
    cls, args = d.cls, d.args
    if cls.__dict__.get("__flow_opaque__"):
        raise DecodeError(path, f"{type_text(d)} is opaque: decoding never builds one")
    if issubclass(cls, Record):
        if type(v) is cls:
            return _check_instance(cls, args, v, path)
        if type(v) is dict:
            return cls(*_fields_from(cls, args, v, path, path))
        _fail(path, type_text(d), v)
    variants = cls.__dict__.get("__flow_variants__")
    if variants is None:
        raise TypeError(f"{cls.__qualname__} is neither a record nor an enum class")
    if isinstance(v, Enum):
        if type(v).__flow_decl__ == cls.__flow_decl__ and variants.get(type(v).__flow_ctor__) is type(v):
            return _check_instance(type(v), args, v, path)
        _fail(path, type_text(d), v)
    if type(v) is str:
        vc = variants.get(v)
        if vc is None:
            raise DecodeError(path, f"expected {type_text(d)}, got unknown constructor {_got(v)} "
                                    f"(one of {', '.join(variants)})")
        if vc.__flow_fields__:
            raise DecodeError(path, f"constructor {v} needs a payload: {{\"{v}\": ...}}")
        return vc.INSTANCE
    if type(v) is dict and len(v) == 1:
        (name, payload), = v.items()
        vc = variants.get(name)
        if vc is None:
            raise DecodeError(path, f"expected {type_text(d)}, got unknown constructor {_got(name)} "
                                    f"(one of {', '.join(variants)})")
        if not vc.__flow_fields__:
            raise DecodeError(f"{path}.{name}", f"constructor {name} has no payload: write \"{name}\"")
        return vc(*_fields_from(vc, args, payload, path, f"{path}.{name}"))
    _fail(path, type_text(d), v)


_DECODERS = {
    _Prim: None, ListOf: _dec_list, SetOf: _dec_set, DictOf: _dec_dict, TupleOf: _dec_tuple,
    Named: _dec_named, Var: _dec_var, Token: _dec_token,
}
_PRIMS = {
    "Int": _dec_int, "Decimal": _dec_decimal, "Text": _dec_text, "Bytes": _dec_bytes,
    "Bool": _dec_bool, "Unit": _dec_unit, "Duration": _dec_duration, "Instant": _dec_instant,
}


def _dec_prim(d, v, path):
    return _PRIMS[d.name](d, v, path)


_DECODERS[_Prim] = _dec_prim


def decode(desc, value, path: str = "$"):
    """Admit `value` (JSON form or runtime values) as `desc`, or raise DecodeError."""
    return _DECODERS[type(desc)](desc, value, path)


# ---- compiled decoders -----------------------------------------------------------------------

class _Slow(Exception):
    """A compiled decoder met a value its fast path does not take: `decode` decides."""


_SLOW = _Slow()
_GENERATION = [0]  # bumped by `field_types`: decoders compiled before it are compiled again


def compile_decoder(desc):
    """A function `f(value, path="$")` behaving exactly as `decode(desc, value, path)`.

    It is built once per descriptor (a Tool's result type: see `flowrt.tools.admit`) and takes the
    common shapes (JSON objects, arrays, scalars; already-built `rt.List`s) on a fast path that
    builds no path texts. Anything else, and every error, goes to `decode` itself, so values,
    errors, messages and paths are `decode`'s own. Field descriptors are read when the decoder is
    first used; `field_types` afterwards makes it compile itself again.
    """
    state = [None, -1]  # [fast function, generation]

    def decoder(value, path="$"):
        fast, gen = state
        if gen != _GENERATION[0]:
            try:
                fast = _compile(desc, {})
            except RecursionError:  # a type nested too deeply (polymorphic recursion): decode alone
                fast = _always_slow
            state[0], state[1] = fast, _GENERATION[0]
        try:
            return fast(value)
        except _Slow:
            pass
        except RecursionError:
            pass
        return _DECODERS[type(desc)](desc, value, path)

    decoder.desc = desc
    return decoder


def _always_slow(v):
    raise _SLOW


def _compile(d, memo: dict):
    """The fast function of descriptor `d`: returns the value or raises _Slow (no path texts)."""
    f = memo.get(d)
    if f is not None:
        return f
    cell = []
    memo[d] = lambda v: cell[0](v)  # a recursive type refers to itself through the cell
    f = _compile_node(d, memo)
    cell.append(f)
    memo[d] = f
    return f


def _generic(d):
    """The generic decoder of `d` as a fast function (its result does not depend on the path)."""
    g = _DECODERS[type(d)]

    def f(v):
        try:
            return g(d, v, "$")
        except (DecodeError, TypeError):
            raise _SLOW from None

    return f


def _compile_node(d, memo):
    t = type(d)
    if t is _Prim:
        name = d.name
        if name == "Int":
            def f(v):
                if type(v) is int:
                    return v
                raise _SLOW
        elif name == "Text":
            def f(v):
                if type(v) is str:
                    return v
                raise _SLOW
        elif name == "Bool":
            def f(v):
                if type(v) is bool:
                    return v
                raise _SLOW
        elif name == "Unit":
            def f(v):
                if v is None:
                    return None
                raise _SLOW
        else:
            return _generic(d)
        return f
    if t is ListOf:
        fi = _compile(d.item, memo)

        def f(v):
            tv = type(v)
            if tv is list or tv is tuple:
                return list_of([fi(x) for x in v])
            if tv is List:
                out = [fi(x) for x in v]
                if all(a is b for a, b in zip(out, v)):
                    return v
                return list_of(out)
            raise _SLOW
        return f
    if t is Var:
        def f(v):
            raise _SLOW
        return f
    if t is Named:
        cls = d.cls
        if cls.__dict__.get("__flow_opaque__"):
            return _generic(d)  # always an error: decode raises it
        if issubclass(cls, Record):
            return _compile_record(d, memo)
        if cls.__dict__.get("__flow_variants__") is not None:
            return _compile_enum(d, memo)
    return _generic(d)


def _payload(vc, args, memo):
    """The fast function from a constructor's JSON payload to its field values (a list)."""
    names = vc.__flow_field_names__
    fs = [_compile(td, memo) for td in fields_of(vc, args)]
    if vc.__flow_named__:
        opt = [type(td) is Named and td.cls is Option for td in fields_of(vc, args)]
        spec = tuple(zip(names, fs, opt))
        nameset = frozenset(names)
        n = len(names)

        def f(p):
            if type(p) is not dict:
                raise _SLOW
            if len(p) > n or not nameset.issuperset(p):
                raise _SLOW
            out = []
            for name, fd, is_opt in spec:
                if name in p:
                    out.append(fd(p[name]))
                elif is_opt:
                    out.append(NONE)
                else:
                    raise _SLOW
            return out
        return f
    if len(names) == 1:
        f0 = fs[0]
        return lambda p: [f0(p)]
    n = len(names)

    def f(p):
        if (type(p) is list or type(p) is tuple) and len(p) == n:
            return [fd(x) for fd, x in zip(fs, p)]
        raise _SLOW
    return f


def _compile_record(d, memo):
    cls, args = d.cls, d.args
    payload = _payload(cls, args, memo)
    slow = _generic(d)

    def f(v):
        if type(v) is dict:
            return cls(*payload(v))
        return slow(v)
    return f


def _compile_enum(d, memo):
    cls, args = d.cls, d.args
    variants = cls.__dict__["__flow_variants__"]
    bare = {}  # constructor name -> its one value (no fields)
    with_payload = {}  # constructor name -> (class, payload function)
    for name, vc in variants.items():
        if vc.__flow_fields__:
            with_payload[name] = (vc, _payload(vc, args, memo))
        else:
            bare[name] = vc.INSTANCE
    slow = _generic(d)

    def f(v):
        tv = type(v)
        if tv is dict:
            if len(v) == 1:
                for name, p in v.items():
                    e = with_payload.get(name)
                    if e is not None:
                        return e[0](*e[1](p))
            raise _SLOW
        if tv is str:
            x = bare.get(v)
            if x is not None:
                return x
            raise _SLOW
        return slow(v)
    return f


# ---- JSON form -------------------------------------------------------------------------------

def to_json(v) -> Any:
    """The plain JSON form of a Flow data value (Decimals become strings, Bytes base64)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is Decimal:
        return format(v, "f")
    if t is bytes:
        return base64.b64encode(v).decode("ascii")
    if t is List or t is tuple:
        return [to_json(x) for x in v]
    if t is Set:
        return [to_json(x) for x in v]
    if t is Dict:
        items = v.items()
        if all(type(k) is str for k, _ in items):
            return {k: to_json(x) for k, x in items}
        return [[to_json(k), to_json(x)] for k, x in items]
    if t is Duration:
        return v.nanos
    if t is Instant:
        return v.iso()
    if t is HostToken:
        return {"$token": v.token}
    if isinstance(v, Record):
        return {f: to_json(x) for f, x in zip(t.__flow_field_names__, v._flow_values())}
    if isinstance(v, Enum):
        fields = t.__flow_field_names__
        if not fields:
            return t.__flow_ctor__
        vals = v._flow_values()
        if t.__flow_named__:
            return {t.__flow_ctor__: {f: to_json(x) for f, x in zip(fields, vals)}}
        if len(vals) == 1:
            return {t.__flow_ctor__: to_json(vals[0])}
        return {t.__flow_ctor__: [to_json(x) for x in vals]}
    raise TypeError(f"not Flow data: {show(v)}")

