"""Python bodies of std's `@lang` functions: `@lang("list.map")` is `flowrt.data.lang.list_map`,
which generated code calls as `rt.lang.list_map` (flowrt.abi exports this module as `lang`).

Generated pure code calls these directly, so each is as small as it can be. A function taking a
callback has two versions: `list_map(xs, f)` (f a plain callable) and `list_map__tool(xs, f)`, a
generator function run by the trampoline, where f is a generator function and each call is
`y = yield f(x)` (docs/spec/abi.md "Requests"). Task operations live with the driver.

Collections come from flowrt.data.values; iteration over a Dict or Set is in sorted order, so every
function here computes the same result in every process.
"""

from __future__ import annotations

import decimal
import math
import re
from decimal import Decimal

from pyrsistent import pvector

from flowrt.data.numtext import int_from_text, int_text
from flowrt.data.ops import Fault, dec_add, dec_div, dec_mul, dec_neg, dec_sub
from flowrt.data.ops import int_div, int_rem  # noqa: F401  (std's int.div, int.rem are rt.lang.int_div, rt.lang.int_rem)
from flowrt.data.jsonvalue import json_decode, json_encode, json_parse, json_render  # noqa: F401  (std's json.*)
from flowrt.data.values import EMPTY_DICT, EMPTY_LIST, EMPTY_SET, NONE, Duration, Instant, Some, set_of, show

_some = Some
_pv = pvector

# ---- bool -------------------------------------------------------------------------------------


def bool_and(a, b):
    return a and b


def bool_or(a, b):
    return a or b


def bool_not(a):
    return not a


# ---- data: equality, order, text ---------------------------------------------------------------


def data_eq(a, b):
    return a == b


def data_ne(a, b):
    return a != b


# Unit is Python's None, which Python cannot order; Flow orders it (its one value equals itself).
# Generated code uses Python's operators for every other type (their order is Flow's order).


def data_lt(a, b):
    return False if a is None else a < b


def data_le(a, b):
    return True if a is None else a <= b


def data_gt(a, b):
    return False if a is None else a > b


def data_ge(a, b):
    return True if a is None else a >= b


def data_compare(a, b):
    if a == b:
        return 0
    return -1 if a < b else 1


data_to_text = show

# ---- int ----------------------------------------------------------------------------------------


def int_add(a, b):
    return a + b


def int_sub(a, b):
    return a - b


def int_mul(a, b):
    return a * b


# int_div / int_rem: flowrt.data.ops (floor division, faults on zero).


def int_neg(a):
    return -a


# str() for every Int Python's 4,300-digit conversion limit lets through (one C call, inside a
# try that costs nothing); an Int beyond it is written in pieces (flowrt.data.numtext).
int_to_text = int_text


_INT_RE = re.compile(r"-?[0-9]+\Z")


def int_parse(t):
    return _some(int_from_text(t)) if _INT_RE.match(t) else NONE


def int_to_decimal(a):
    return Decimal(a)


# ---- decimal ---------------------------------------------------------------------------------

decimal_add = dec_add
decimal_sub = dec_sub
decimal_mul = dec_mul
decimal_div = dec_div
decimal_neg = dec_neg


def decimal_to_text(a):
    return format(a, "f")


_DEC_RE = re.compile(r"-?[0-9]+(\.[0-9]+)?\Z")


def decimal_parse(t):
    return _some(Decimal(t)) if _DEC_RE.match(t) else NONE


def decimal_from_int(a):
    return Decimal(a)


def decimal_floor(a):
    return math.floor(a)


def decimal_round(a, places):
    """Rounded to `places` digits after the point, half to even (negative places: to tens, ...)."""
    r = a.quantize(Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_EVEN, context=_ROUND_CONTEXT)
    return r.quantize(Decimal(1), context=_ROUND_CONTEXT) if places < 0 else r


_ROUND_CONTEXT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)

# ---- text ------------------------------------------------------------------------------------


def text_concat(a, b):
    return a + b


def text_length(t):
    return len(t)


def text_split(t, sep):
    if not sep:
        raise Fault("text.split with an empty separator")
    return _pv(t.split(sep))


def text_join(parts, sep):
    return sep.join(parts)


def text_contains(t, part):
    return part in t


def text_starts_with(t, prefix):
    return t.startswith(prefix)


def text_ends_with(t, suffix):
    return t.endswith(suffix)


def text_index_of(t, part):
    i = t.find(part)
    return NONE if i < 0 else _some(i)


def text_replace(t, old, new):
    return t.replace(old, new)


def text_trim(t):
    return t.strip()


def text_to_upper(t):
    return t.upper()


def text_to_lower(t):
    return t.lower()


def _clamp(start, end, n):
    start = 0 if start < 0 else n if start > n else start
    end = start if end < start else n if end > n else end
    return start, end


def text_slice(t, start, end):
    s, e = _clamp(start, end, len(t))
    return t[s:e]


def text_lines(t):
    """Lines split at `\\n` and `\\r\\n`; a final line end does not start another (empty) line."""
    if not t:
        return EMPTY_LIST
    parts = t.split("\n")
    if parts[-1] == "":
        parts.pop()
    return _pv(p[:-1] if p.endswith("\r") else p for p in parts)


def text_to_bytes(t):
    return t.encode("utf-8")


# ---- bytes -----------------------------------------------------------------------------------


def bytes_concat(a, b):
    return a + b


def bytes_length(b):
    return len(b)


def bytes_slice(b, start, end):
    s, e = _clamp(start, end, len(b))
    return b[s:e]


def bytes_get(b, index):
    return _some(b[index]) if 0 <= index < len(b) else NONE


def bytes_to_text(b):
    try:
        return _some(b.decode("utf-8"))
    except UnicodeDecodeError:
        return NONE


def bytes_to_hex(b):
    return b.hex()


# ---- duration, instant -------------------------------------------------------------------------


def duration_add(a, b):
    return Duration(a.nanos + b.nanos)


def duration_sub(a, b):
    return Duration(a.nanos - b.nanos)


def duration_neg(a):
    return Duration(-a.nanos)


def duration_scale(a, n):
    return Duration(a.nanos * n)


def duration_from_nanos(n):
    return Duration(n)


def duration_to_nanos(d):
    return d.nanos


def instant_add(a, d):
    return Instant(a.nanos + d.nanos)


def instant_since(a, b):
    return Duration(a.nanos - b.nanos)


def instant_from_unix_nanos(n):
    return Instant(n)


def instant_to_unix_nanos(i):
    return i.nanos


def instant_to_text(i):
    return i.iso()


def instant_parse(t):
    from flowrt.data.decoding import decode
    from flowrt.data.typedesc import T, DecodeError

    if not isinstance(t, str):
        return NONE
    try:
        return _some(decode(T.INSTANT, t))
    except DecodeError:
        return NONE


# ---- list --------------------------------------------------------------------------------------


def list_concat(a, b):
    return a.extend(b) if a else b


def list_length(xs):
    return len(xs)


def list_get(xs, index):
    return _some(xs[index]) if 0 <= index < len(xs) else NONE


def list_append(xs, x):
    return xs.append(x)


def list_prepend(xs, x):
    return _pv((x,)).extend(xs)


def list_reverse(xs):
    return _pv(reversed(xs))


def list_slice(xs, start, end):
    s, e = _clamp(start, end, len(xs))
    return xs[s:e]


def list_range(start, end):
    return _pv(range(start, end)) if start < end else EMPTY_LIST


def list_sort(xs):
    if len(xs) and xs[0] is None:  # List<Unit>: every element is the same value
        return xs
    return _pv(sorted(xs))


def list_contains(xs, x):
    return x in xs


def list_zip(xs, ys):
    return _pv(zip(xs, ys))


# Generated code passes these instead of a List that would only be iterated once, at once, by
# list.map/filter/fold/each/flat_map/find or text.join (codegen.md, "Lists not built").
iter_range = range


def iter_map(xs, f):
    return map(f, xs)


def list_map(xs, f):
    return _pv(map(f, xs))


def list_map__tool(xs, f):
    out = []
    for x in xs:
        out.append((yield f(x)))
    return _pv(out)


def list_filter(xs, keep):
    return _pv(filter(keep, xs))


def list_filter__tool(xs, keep):
    out = []
    for x in xs:
        if (yield keep(x)):
            out.append(x)
    return _pv(out)


def list_fold(xs, init, f):
    acc = init
    for x in xs:
        acc = f(acc, x)
    return acc


def list_fold__tool(xs, init, f):
    acc = init
    for x in xs:
        acc = yield f(acc, x)
    return acc


def list_each(xs, f):
    for x in xs:
        f(x)
    return None


def list_each__tool(xs, f):
    for x in xs:
        yield f(x)
    return None


def list_flat_map(xs, f):
    out = []
    for x in xs:
        out.extend(f(x))
    return _pv(out)


def list_flat_map__tool(xs, f):
    out = []
    for x in xs:
        out.extend((yield f(x)))
    return _pv(out)


def list_find(xs, test):
    for x in xs:
        if test(x):
            return _some(x)
    return NONE


def list_find__tool(xs, test):
    for x in xs:
        if (yield test(x)):
            return _some(x)
    return NONE


def list_sort_by(xs, key):
    return _pv(sorted(xs, key=key))


def list_sort_by__tool(xs, key):
    # Keys are computed once each, in list order (evaluation order is left to right).
    keyed = []
    for i, x in enumerate(xs):
        keyed.append(((yield key(x)), i, x))
    keyed.sort(key=lambda t: (t[0], t[1]))
    return _pv(t[2] for t in keyed)


# ---- dict --------------------------------------------------------------------------------------


def dict_empty():
    return EMPTY_DICT


def dict_get(d, key):
    v = d._m.get(key, _MISSING)
    return NONE if v is _MISSING else _some(v)


_MISSING = object()


def dict_insert(d, key, value):
    return d.set(key, value)


def dict_remove(d, key):
    return d.remove(key)


def dict_contains(d, key):
    return key in d._m


def dict_size(d):
    return len(d._m)


def dict_keys(d):
    return _pv(d.keys())


def dict_values(d):
    return _pv(d.values())


def dict_to_list(d):
    return _pv(d.items())


def dict_from_list(pairs):
    return EMPTY_DICT.update(pairs)


# ---- set ---------------------------------------------------------------------------------------


def set_empty():
    return EMPTY_SET


def set_insert(s, x):
    return s.add(x)


def set_remove(s, x):
    return s.remove(x)


def set_contains(s, x):
    return x in s._m


def set_size(s):
    return len(s._m)


def set_to_list(s):
    return _pv(s.elements())


def set_from_list(xs):
    return set_of(xs)


def set_union(a, b):
    return a.union(b)


def set_intersection(a, b):
    return a.intersection(b)


def set_difference(a, b):
    return a.difference(b)


__all__ = sorted(
    n
    for n, v in list(globals().items())
    if not n.startswith("_")
    and callable(v)
    and n.split("_", 1)[0]
    in {
        "bool",
        "data",
        "int",
        "decimal",
        "text",
        "bytes",
        "duration",
        "instant",
        "list",
        "dict",
        "set",
        "json",
    }
    and "_" in n
    and n not in {"dict_of", "set_of"}
)

from flowrt.data.lang_task import task_await, task_first, task_spawn, task_stop  # noqa: E402,F401  (driver helper)
