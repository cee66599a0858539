"""Admission of Flow data: `decode(desc, value)`, and `compile_decoder(desc)`, its fast form.

`decode` is the one admission check for run input, Tool replies and fork input: it takes the
plain JSON form *or* runtime values (instances of generated classes, `rt.List`, ...) and mixtures
of both, and returns a runtime value or raises `DecodeError` naming the path (`$.notes[2]:
expected Text, got 3`). It walks value and descriptor together, one `_dec_*` function per
descriptor kind; numbers are kept exact (`loads_exact`: no floats), Decimals canonical. The bounds
of admitted data (flowrt.data.bounds: nesting, digits, Unicode text) hold for every form of value.

A Tool's result is admitted on every reply, so walking the descriptor each time would dominate a
cheap call. `compile_decoder` turns a descriptor once into nested closures that take the common
shapes (values already of the right runtime type, plain JSON of the expected kind) with no
dispatch; any value the fast path does not take raises `_Slow` inside, and the whole value goes
to `decode`, which decides and words the error, so both paths always agree. Compiled decoders
follow `field_types`: it bumps `_GENERATION` (flowrt.data.typedesc), and a decoder built before then is
built again on its next use.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import decimal
import re
from datetime import datetime
from decimal import Decimal

from flowrt.data.bounds import (
    MAX_DIGITS,
    decimal_digits,
    loads_exact,
    preview,
    significand_digits,
    surrogate_at,
    unbounded,
    walk_depth,
)
from flowrt.data.facts import ParkedTask
from flowrt.data.numtext import int_from_text
from flowrt.data.typedesc import (
    _GENERATION,
    DecodeError,
    DictOf,
    ListOf,
    Named,
    SetOf,
    T,
    Token,
    TupleOf,
    Var,
    _Prim,
    fields_of,
    type_text,
)
from flowrt.data.values import (
    NONE,
    Dict,
    Duration,
    Enum,
    HostToken,
    Instant,
    List,
    Option,
    Record,
    Set,
    dict_of,
    list_of,
    set_of,
    show,
)

#: Who admits the host tokens and opaque values a decode meets (docs/spec/tools.md "Host tokens",
#: execution.md "Fork"). None, as for a Tool implementation's result: a token is taken as given
#: (recording the Reply that carries it issues it) and an opaque type is never built. The host
#: sets a policy (flowrt.history.tokens) around what it is handed: its `token(tok, path)` refuses a token
#: the host never issued; one with `restoring` set checks the values a checkpoint rebuilt, so an
#: opaque value or a parked task the program made passes as it is.
ADMISSION: contextvars.ContextVar = contextvars.ContextVar("flowrt_admission", default=None)

__all__ = ["DecodeError", "decode", "compile_decoder", "loads_exact"]


# ---- decoding ------------------------------------------------------------------------------

_got = preview  # the offending value in a message (bounded: flowrt.data.bounds)


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


_INT_END = 10**MAX_DIGITS  # an admitted Int has at most MAX_DIGITS digits, whatever its form


def _restoring() -> bool:
    """Is this decode checking values a checkpoint rebuilt (flowrt.history.tokens.RESTORE)? They are the
    program's own, which may be beyond the bounds of admitted data (10^5000 is an Int): a bound
    is for what comes in. Asked only once a bound is broken, so admission pays nothing for it."""
    policy = ADMISSION.get()
    return policy is not None and policy.restoring


def _dec_int(d, v, path):
    if type(v) is int:
        if -_INT_END < v < _INT_END or _restoring():
            return v
        raise DecodeError(path, f"an integer of more than {MAX_DIGITS} digits is not admitted")
    _fail(path, "Int", v)


def _dec_decimal(d, v, path):
    t = type(v)
    if t is Decimal:
        if not v.is_finite():
            _fail(path, "Decimal", v)
        return _canon_decimal(_bounded(v, path))
    if t is int:
        return _bounded(Decimal(v), path)
    if t is str:
        if significand_digits(v) > MAX_DIGITS:  # before the regex and the conversion
            raise DecodeError(
                path, f"a number of {significand_digits(v)} digits; at most {MAX_DIGITS} are admitted"
            )
        if _DEC_RE.match(v):
            try:
                x = Decimal(v)
            except decimal.InvalidOperation:  # an exponent beyond what Decimal can hold at all
                raise DecodeError(path, f"the Decimal {_got(v)} is out of range") from None
            return _canon_decimal(_bounded(x, path))
        _fail(path, "Decimal", v)
    if t is float:
        # A float from a Python host or plain json.loads: its shortest repr is the literal it came from.
        if v != v or v in (float("inf"), float("-inf")):
            _fail(path, "Decimal", v)
        return _canon_decimal(Decimal(repr(v)))
    _fail(path, "Decimal", v)


def _bounded(x: Decimal, path) -> Decimal:
    """`x`, unless written out it has more than MAX_DIGITS digits (checked before `_canon_decimal`
    writes a positive exponent out as zeros: 1e999999999 would be a billion of them)."""
    n = decimal_digits(x)
    if n > MAX_DIGITS and not _restoring():
        raise DecodeError(path, f"a Decimal of {n} digits written out; at most {MAX_DIGITS} are admitted")
    return x


def _dec_text(d, v, path):
    if type(v) is str:
        at = surrogate_at(v)
        if at < 0 or _restoring():
            return v
        raise DecodeError(path, f"not Unicode text: a lone surrogate U+{ord(v[at]):04X} at character {at}")
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
_DUR_UNIT = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
}


def _dec_duration(d, v, path):
    t = type(v)
    if t is Duration or t is int:
        n = v.nanos if t is Duration else v
    elif t is str and len(v) <= MAX_DIGITS and _DUR_RE.match(v):  # the length before converting
        m = _DUR_RE.match(v)
        n = int_from_text(m.group(1)) * _DUR_UNIT[m.group(2)]
    else:
        if t is str and len(v) > MAX_DIGITS:
            raise DecodeError(path, f"a Duration text of {len(v)} characters is not admitted")
        _fail(path, 'Duration (integer nanoseconds or like "250ms")', v)
    if not -_INT_END < n < _INT_END and not _restoring():
        raise DecodeError(path, f"a Duration of more than {MAX_DIGITS} digits of nanoseconds is not admitted")
    return v if t is Duration else Duration(n)


_ISO_RE = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)\Z")


# Instants RFC 3339 can write: the years 0001 to 9999 (a later one could not be shown).
_INSTANT_MIN, _INSTANT_END = -62_135_596_800 * 10**9, 253_402_300_800 * 10**9


def _dec_instant(d, v, path):
    t = type(v)
    if t is Instant or t is int:
        n = v.nanos if t is Instant else v
        if not _INSTANT_MIN <= n < _INSTANT_END and not _restoring():
            raise DecodeError(
                path, f"expected an Instant in the years 0001 to 9999, got {_got(n)} nanoseconds from 1970"
            )
        return v if t is Instant else Instant(v)
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
    t = type(x)  # an int or a text orders as itself: repr() of a big int would hit Python's limit
    return (t.__name__, x) if t is int or t is str else (t.__name__, repr(x))


def _dec_dict(d, v, path):
    kd, vd = d.key, d.value
    fk, fv = _DECODERS[type(kd)], _DECODERS[type(vd)]
    t = type(v)
    if t is Dict:
        pairs = [
            (fk(kd, k, f"{path}.<key {_got(k)}>"), fv(vd, x, f"{path}[{_got(k)}]")) for k, x in v.items()
        ]
        if all(a is k and b is x for (a, b), (k, x) in zip(pairs, v.items())):
            return v
        return dict_of(pairs)
    if t is dict:
        if kd == T.TEXT or not v or not all(type(k) is str for k in v):
            pairs = [
                (fk(kd, k, f"{path}.<key {_got(k)}>"), fv(vd, x, f"{path}[{_got(k)}]")) for k, x in v.items()
            ]
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
            raise DecodeError(
                path, f"expected {type_text(d)} ({len(d.items)} elements), got {len(v)} elements"
            )
        out = tuple(_DECODERS[type(td)](td, x, f"{path}[{i}]") for i, (td, x) in enumerate(zip(d.items, v)))
        if t is tuple and all(a is b for a, b in zip(out, v)):
            return v
        return out
    _fail(path, type_text(d), v)


def _dec_token(d, v, path):
    if type(v) is HostToken:
        if v.type_id != d.type_id:
            raise DecodeError(
                path, f"expected a {type_text(d)} token, got a {v.type_id.rsplit('::', 1)[-1]} token"
            )
        tok = v
    elif type(v) is dict and len(v) == 1 and "$token" in v and type(v["$token"]) is str:
        tok = HostToken(d.type_id, v["$token"])
    else:
        _fail(path, f'{type_text(d)} (a host token {{"$token": ...}})', v)
    at = surrogate_at(tok.token)
    if at >= 0:  # it is recorded, and a lone surrogate has no UTF-8 form
        raise DecodeError(
            path,
            f"a host token is Unicode text: a lone surrogate U+{ord(tok.token[at]):04X} at character {at}",
        )
    policy = ADMISSION.get()
    if policy is not None:
        policy.token(tok, path)
    return tok


def _dec_handle(d, v, path):
    """A slot with no descriptor: a task or a function, neither of which is data."""
    policy = ADMISSION.get()
    if policy is not None and policy.restoring and type(v) is ParkedTask:
        return v
    raise DecodeError(path, "a task or a function is not data, so no input or reply can hold one")


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
    form = cls.__dict__.get("__flow_json_form__")
    if form is not None:  # a type whose JSON form is its own (std's json.Value: plain JSON)
        return form.admit(v, path)
    if cls.__dict__.get("__flow_opaque__"):
        policy = ADMISSION.get()
        if policy is None or not policy.restoring or not isinstance(v, (Record, Enum)):
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
            raise DecodeError(
                path,
                f"expected {type_text(d)}, got unknown constructor {_got(v)} (one of {', '.join(variants)})",
            )
        if vc.__flow_fields__:
            raise DecodeError(path, f'constructor {v} needs a payload: {{"{v}": ...}}')
        return vc.INSTANCE
    if type(v) is dict and len(v) == 1:
        ((name, payload),) = v.items()
        vc = variants.get(name)
        if vc is None:
            raise DecodeError(
                path,
                f"expected {type_text(d)}, got unknown constructor {_got(name)} "
                f"(one of {', '.join(variants)})",
            )
        if not vc.__flow_fields__:
            raise DecodeError(f"{path}.{name}", f'constructor {name} has no payload: write "{name}"')
        return vc(*_fields_from(vc, args, payload, path, f"{path}.{name}"))
    _fail(path, type_text(d), v)


_DECODERS = {
    _Prim: None,
    ListOf: _dec_list,
    SetOf: _dec_set,
    DictOf: _dec_dict,
    TupleOf: _dec_tuple,
    Named: _dec_named,
    Var: _dec_var,
    Token: _dec_token,
    type(None): _dec_handle,
}
_PRIMS = {
    "Int": _dec_int,
    "Decimal": _dec_decimal,
    "Text": _dec_text,
    "Bytes": _dec_bytes,
    "Bool": _dec_bool,
    "Unit": _dec_unit,
    "Duration": _dec_duration,
    "Instant": _dec_instant,
}


def _dec_prim(d, v, path):
    return _PRIMS[d.name](d, v, path)


_DECODERS[_Prim] = _dec_prim


def decode(desc, value, path: str = "$"):
    """Admit `value` (JSON form or runtime values) as `desc`, or raise DecodeError."""
    if unbounded(desc) and not _restoring():
        walk_depth(value, path)
    try:
        return _DECODERS[type(desc)](desc, value, path)
    except RecursionError:  # within MAX_DEPTH, but the caller's own stack was already deep
        raise DecodeError(path, "nested too deeply for this process's stack") from None


# ---- compiled decoders -----------------------------------------------------------------------


class _Slow(Exception):
    """A compiled decoder met a value its fast path does not take: `decode` decides."""


_SLOW = _Slow()


def compile_decoder(desc):
    """A function `f(value, path="$")` behaving exactly as `decode(desc, value, path)`.

    It is built once per descriptor (a Tool's result type: see `flowrt.engine.tools.admit`) and takes the
    common shapes (JSON objects, arrays, scalars; already-built `rt.List`s) on a fast path that
    builds no path texts. Anything else, and every error, goes to `decode` itself, so values,
    errors, messages and paths are `decode`'s own. Field descriptors are read when the decoder is
    first used; `field_types` afterwards makes it compile itself again.
    """
    state = [None, -1, False]  # [fast function, generation, whether values are walked first]

    def decoder(value, path="$"):
        fast, gen, walk = state
        if gen != _GENERATION[0]:
            try:
                fast = _compile(desc, {})
            except RecursionError:  # a type nested too deeply (polymorphic recursion): decode alone
                fast = _always_slow
            walk = unbounded(desc)
            state[0], state[1], state[2] = fast, _GENERATION[0], walk
        if walk and not _restoring():  # a type that refers to itself: bound the depth before recursing
            walk_depth(value, path)
        try:
            return fast(value)
        except _Slow:
            pass
        except RecursionError:
            pass
        try:
            return _DECODERS[type(desc)](desc, value, path)
        except RecursionError:  # within MAX_DEPTH, but the caller's own stack was already deep
            raise DecodeError(path, "nested too deeply for this process's stack") from None

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
                if type(v) is int and -_INT_END < v < _INT_END:
                    return v
                raise _SLOW
        elif name == "Text":

            def f(v):
                if type(v) is str and (v.isascii() or surrogate_at(v) < 0):
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
        if cls.__dict__.get("__flow_opaque__") or cls.__dict__.get("__flow_json_form__"):
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
