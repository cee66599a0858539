"""Strict reading of stored bytes: the CBOR subset the trace format writes, values, the shape of a fact.

docs/spec/trace.md ("Strict decoding") is the rule; flowrt.history.trace is the one caller. A store is
input like any other: whoever holds the file can write any bytes into it, re-chained or not. So
stored bytes are parsed as the subset of CBOR the encoder writes and nothing else, before any of
it is interpreted:

* cbor2 decodes about twenty semantic tags into host objects (datetimes, regular expressions,
  UUIDs, Fractions, e-mail messages, IP addresses, sets, shared and string references). It is
  given a `semantic_decoders` mapping that answers for *every* tag: the bignum tags 2 and 3 (the
  only tags the encoder writes, for an Int beyond 64 bits) get a strict decoder of their own,
  and any other tag is refused at its head, before its content is read, so none of cbor2's tag
  decoders ever runs. Indefinite lengths are refused; maps, floats and simple values pass the
  parse but no value or fact decoder takes them.
* Sizes and depth are bounded: an Int is at most `MAX_INT_BITS` bits (its text then takes a few
  milliseconds, not minutes), a Decimal's exponent is within `MAX_DECIMAL_EXPONENT` (its text
  stays small), and arrays nest at most `MAX_DEPTH` deep (cbor2's own parse limit; the value
  walks are recursive and also refuse at Python's recursion limit). The encoder refuses the same
  values, so everything it writes reads back.
* `value(item, get)`: a parsed item as a Flow value. Each value code's array has its exact
  length and element types; a record has its class's number of fields; Dict keys and Set
  elements are distinct and compare with each other (they are sorted on decoding, so no later
  reader meets a mixture); a parked task is a value only in a checkpoint's arguments (and a
  fork's Start input, which holds them).
* `check_fact(item)`: a parsed fact array has its kind's exact length and field types, and each
  value slot is an inline byte string or a `[18|19, 32-byte digest]` reference, so no reader of a
  fact (decoding, the chain, redaction) ever indexes outside it or meets a field of the wrong type.

Every refusal is a `StrictError` with a short reason; flowrt.history.trace words it as a `TraceError`.
"""

from __future__ import annotations

import decimal
import reprlib
from typing import Any, Callable

import cbor2

from flowrt.data import values as V
from flowrt.data.facts import ParkedTask

__all__ = [
    "StrictError",
    "NoClass",
    "loads",
    "value",
    "parked_get",
    "check_fact",
    "MAX_INT_BITS",
    "MAX_DECIMAL_EXPONENT",
    "MAX_DEPTH",
]

# Fact kinds: the first element of a fact array.
START, CALL, REPLY, CHOICE, STOP, CHECKPOINT, END = 1, 2, 3, 4, 5, 6, 7
# Value codes: the first element of a value's array item.
LIST, TUPLE, DICT, SET, DECIMAL, DURATION, INSTANT, TOKEN = 0, 1, 2, 3, 4, 5, 6, 7
OK, ERR, SOME, NONE, FAILED, MALFORMED, NOTRUN, UNKNOWN = 8, 9, 10, 11, 12, 13, 14, 15
DATA, PARKED, HOLE, BLOB = 16, 17, 18, 19

#: An Int (and a Decimal's coefficient, a Duration's or Instant's nanoseconds) is below 2**MAX_INT_BITS
#: in magnitude: 19,729 decimal digits.
MAX_INT_BITS = 65536
#: A Decimal's exponent lies in [-MAX_DECIMAL_EXPONENT, MAX_DECIMAL_EXPONENT].
MAX_DECIMAL_EXPONENT = 100_000
#: Arrays nest at most this deep in one stored item (cbor2's default limit).
MAX_DEPTH = 400

_U64 = (1 << 64) - 1
_MAX_INT_BYTES = MAX_INT_BITS // 8


class StrictError(Exception):
    """Stored bytes outside what the trace format writes."""


# ---- the CBOR subset ----------------------------------------------------------------------------


def _bignum_magnitude(content) -> int:
    """The magnitude a bignum tag's content gives, exactly as the encoder writes it: a byte string
    with no leading zero byte, for a number that does not fit CBOR's own 64-bit integers."""
    if type(content) is not bytes:
        raise StrictError("a bignum tag must hold a byte string")
    if len(content) > _MAX_INT_BYTES:
        raise StrictError(f"an integer of more than {MAX_INT_BITS} bits")
    n = int.from_bytes(content, "big")
    if n <= _U64 or content[0] == 0:
        raise StrictError("a bignum tag for a number CBOR writes as a plain integer")
    return n


def _positive_bignum(content, immutable):
    return _bignum_magnitude(content)


def _negative_bignum(content, immutable):
    return -1 - _bignum_magnitude(content)


class _Tags(dict):
    """cbor2 consults `semantic_decoders` for every tag before its built-in decoders; this one
    answers for every tag. A tag it does not hold gets a decoder that refuses at once: one marked
    `shareable_decoder` is called at the tag's head, before its content is decoded."""

    def __missing__(self, tag):
        def refuse(immutable):
            raise StrictError(f"CBOR tag {tag}: the trace format writes no tags but bignums (2, 3)")

        return cbor2.shareable_decoder(refuse)


_TAGS = _Tags({2: _positive_bignum, 3: _negative_bignum})


def loads(data: Any) -> Any:
    """One stored item parsed strictly (see the module docstring)."""
    if type(data) is not bytes:
        raise StrictError(f"stored as {type(data).__name__}, not bytes")
    try:
        return _loads(data, semantic_decoders=_TAGS, max_depth=MAX_DEPTH, allow_indefinite=False)
    except Exception as e:
        raise refusal(e) from None


_loads = cbor2.loads


def refusal(e: Exception) -> "StrictError":
    """The StrictError for what a strict `cbor2.loads` raised (a tag refused at its head comes
    back as the cause of cbor2's own error)."""
    if isinstance(e, StrictError):
        return e
    if isinstance(e.__cause__, StrictError):
        return e.__cause__
    if isinstance(e, (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError, MemoryError)):
        return StrictError(str(e) if isinstance(e, cbor2.CBORDecodeError) else f"{type(e).__name__}: {e}")
    raise e


def value_of(data: Any, get: Callable) -> Any:
    """`value(loads(data), get)` in one call: the decoding of one stored value (its hot path)."""
    if type(data) is not bytes:
        raise StrictError(f"stored as {type(data).__name__}, not bytes")
    try:
        item = _loads(data, semantic_decoders=_TAGS, max_depth=MAX_DEPTH, allow_indefinite=False)
    except Exception as e:
        raise refusal(e) from None
    return value(item, get)


# ---- values ---------------------------------------------------------------------------------------

_PLAIN = {int, str, bytes, bool, type(None)}


class NoClass(Exception):
    """A record or enum value whose class the reader's class table does not hold
    (flowrt.history.trace raises it as `MissingClass`)."""

    def __init__(self, decl: str, ctor: str):
        super().__init__(decl, ctor)
        self.decl, self.ctor = decl, ctor


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 2, 4, 30, 30, 30


def _brief(x) -> str:
    try:
        return _REPR.repr(x)
    except ValueError:  # an int beyond Python's conversion limit
        return "[...]"


def _bad(x, why: str):
    raise StrictError(f"{why} (in {_brief(x)})")


def _dec_data(x, get):
    if len(x) < 3 or type(x[1]) is not str or type(x[2]) is not str:
        _bad(x, "a record or enum value is [16, declaration id, constructor, fields...]")
    cls = get((x[1], x[2]))
    if cls is None:
        raise NoClass(x[1], x[2])
    fields = cls.__flow_fields__
    if len(x) - 3 != len(fields):
        _bad(x, f"{x[2]} has {len(fields)} field(s)")
    if not fields:
        return cls.INSTANCE if "INSTANCE" in cls.__dict__ else cls()
    return cls(*[value(f, get) for f in x[3:]])


_QUICK_DIGITS = 10**4000  # below this, str() is fast and within Python's conversion limit


def _dec_decimal(x, get):
    n = len(x)
    if n < 3 or n > 4 or type(x[1]) is not int or type(x[2]) is not int:
        _bad(x, "a Decimal is [4, exponent, coefficient]")
    exp, coef = x[1], x[2]
    if n == 4 and (coef != 0 or type(x[3]) is not int or x[3] != 1):
        _bad(x, "only a zero Decimal carries a sign marker")
    if not -MAX_DECIMAL_EXPONENT <= exp <= MAX_DECIMAL_EXPONENT:
        _bad(x, f"a Decimal exponent is within ±{MAX_DECIMAL_EXPONENT}")
    sign = 1 if (coef < 0 or n > 3) else 0
    mag = -coef if coef < 0 else coef
    if mag < _QUICK_DIGITS:
        digits = tuple(map(int, str(mag)))
    else:
        digits = decimal.Decimal(mag).as_tuple().digits
    return decimal.Decimal((sign, digits, exp))


def _sorted_or_bad(c, x):
    """Dict keys and Set elements are of one type, so they sort: sort them now (the order is kept),
    and refuse a mixture that does not (it would fail wherever the value is shown or iterated)."""
    try:
        c.items() if type(c) is V.Dict else c.elements()
    except TypeError:
        _bad(x, "Dict keys or Set elements that do not compare")
    return c


def _dec_dict(x, get):
    n = len(x) - 1
    if n % 2:
        _bad(x, "a Dict is [2, key, value, ...]")
    it = iter(x[1:])
    try:
        d = V.dict_of([(value(k, get), value(v, get)) for k, v in zip(it, it)])
    except TypeError:
        _bad(x, "a Dict key that cannot be a key")
    if len(d) != n // 2:
        _bad(x, "a Dict with a key twice")
    return _sorted_or_bad(d, x)


def _dec_set(x, get):
    try:
        s = V.set_of([value(e, get) for e in x[1:]])
    except TypeError:
        _bad(x, "a Set element that cannot be an element")
    if len(s) != len(x) - 1:
        _bad(x, "a Set with an element twice")
    return _sorted_or_bad(s, x)


def _dec_nanos(cls):
    def dec(x, get):
        if len(x) != 2 or type(x[1]) is not int:
            _bad(x, f"a {cls.__name__} is [{x[0]}, nanoseconds]")
        return cls(x[1])

    return dec


def _dec_token(x, get):
    if len(x) != 3 or type(x[1]) is not str or type(x[2]) is not str:
        _bad(x, "a host token is [7, type id, token]")
    return V.HostToken(x[1], x[2])


def _dec_one(cls):
    def dec(x, get):
        if len(x) != 2:
            _bad(x, f"{cls.__name__} holds one value")
        return cls(value(x[1], get))

    return dec


def _dec_none(x, get):
    if len(x) != 1:
        _bad(x, "None holds nothing")
    return V.NONE


def _dec_parked(x, get):
    # Only a checkpoint's arguments (and a fork's Start input, made from them) hold parked tasks:
    # their slots are decoded with a `get` that says so (`parked_get`); anywhere else a parked
    # task is not a value.
    if not getattr(get, "parked", False):
        _bad(x, "a parked task outside a checkpoint's arguments")  # (or a fork's input)
    if (
        len(x) < 4
        or type(x[1]) is not str
        or type(x[2]) is not str
        or not (x[3] is None or type(x[3]) is str)
    ):
        _bad(x, "a parked task is [17, task id, call id, constructor or null, data...]")
    return ParkedTask(x[1], x[2], x[3], tuple(value(e, get) for e in x[4:]))


def _dec_hole(x, get):
    if len(x) != 2 or type(x[1]) is not bytes or len(x[1]) != 32:
        _bad(x, "a hole is [18, 32-byte digest]")
    return V.Hole(x[1].hex())


# Each decoder takes the item and `get`, the class table's lookup ((decl, ctor) -> class or None):
# a record or enum value is rebuilt with the class of the program whose history is read. Each
# checks its array's length and element types: the bytes may be anyone's.
_DEC: dict[int, Callable[[list, Callable], Any]] = {
    LIST: lambda x, get: (
        V.list_of([value(e, get) for e in x[1:]]) if x[0] is not False else _bad(x, "code false")
    ),
    TUPLE: lambda x, get: tuple(value(e, get) for e in x[1:]) if x[0] is not True else _bad(x, "code true"),
    DICT: _dec_dict,
    SET: _dec_set,
    DECIMAL: _dec_decimal,
    DURATION: _dec_nanos(V.Duration),
    INSTANT: _dec_nanos(V.Instant),
    TOKEN: _dec_token,
    OK: _dec_one(V.Ok),
    ERR: _dec_one(V.Err),
    SOME: _dec_one(V.Some),
    NONE: _dec_none,
    FAILED: _dec_one(V.Failed),
    MALFORMED: _dec_one(V.Malformed),
    NOTRUN: _dec_one(V.NotRun),
    UNKNOWN: _dec_one(V.Unknown),
    DATA: _dec_data,
    PARKED: _dec_parked,
    HOLE: _dec_hole,
}


def value(x, get):
    """The Flow value of one parsed item; `get` looks a record or enum class up by (declaration
    id, constructor) in the class table of the program whose history is read."""
    if type(x) is not list:
        if type(x) in _PLAIN:
            return x
        _bad(x, "not a Flow value")
    try:
        dec = _DEC[x[0]]  # (a code `true`/`false` finds 1/0: the list and tuple decoders refuse it)
    except (KeyError, IndexError, TypeError):
        _bad(x, "an unknown value code")
    return dec(x, get)


def parked_get(get: Callable) -> Callable:
    """`get` for a checkpoint's arguments: the same lookup, marked to admit parked tasks."""

    def lookup(key):
        return get(key)

    lookup.parked = True
    return lookup


# ---- the shape of a fact --------------------------------------------------------------------------

_NAMES = {
    START: "Start",
    CALL: "Call",
    REPLY: "Reply",
    CHOICE: "Choice",
    STOP: "Stop",
    CHECKPOINT: "Checkpoint",
    END: "End",
}


def _slot(s) -> bool:
    if type(s) is bytes:
        return True
    return (
        type(s) is list
        and len(s) == 2
        and type(s[0]) is int
        and s[0] in (HOLE, BLOB)
        and type(s[1]) is bytes
        and len(s[1]) == 32
    )


def _slots(s) -> bool:
    return type(s) is list and all(_slot(x) for x in s)


def _texts(s) -> bool:
    return type(s) is list and all(type(x) is str for x in s)


def _str(x) -> bool:
    return type(x) is str


def _opt_str(x) -> bool:
    return x is None or type(x) is str


def _count(x) -> bool:
    return type(x) is int and x >= 1


def _closed(c) -> bool:
    return type(c) is list and 1 <= len(c) <= 2 and type(c[0]) is str and (len(c) == 1 or _slot(c[1]))


def _stop(item) -> bool:
    found, value = item[2], item[3]
    if found == "finished":
        ok = _slot(value)
    elif found == "running":
        ok = value is None
    else:
        return False
    return ok and _str(item[1]) and type(item[4]) is list and all(_closed(c) for c in item[4])


def _end(item) -> bool:
    if len(item) == 3:
        return type(item[1]) is int and item[1] == 0 and _slot(item[2])
    return (
        len(item) == 6
        and type(item[1]) is int
        and item[1] == 1
        and _str(item[2])
        and _str(item[3])
        and type(item[4]) is int
        and type(item[5]) is int
    )


# kind -> (length, check of the whole array, what the array should be)
_SHAPES = {
    START: (
        9,
        lambda i: (
            type(i[1]) is int
            and _str(i[2])
            and _str(i[3])
            and _str(i[4])
            and _slots(i[5])
            and _texts(i[6])
            and _opt_str(i[7])
            and (i[8] is None or _count(i[8]))
        ),
        "[1, data version, program, std, entry, [slots], [parameter names], parent, from_checkpoint]",
    ),
    CALL: (
        6,
        lambda i: _str(i[1]) and _str(i[2]) and _str(i[3]) and _slots(i[4]) and _texts(i[5]),
        "[2, call id, tool, tool id, [slots], [type arguments]]",
    ),
    REPLY: (3, lambda i: _str(i[1]) and _slot(i[2]), "[3, call id, slot]"),
    CHOICE: (3, lambda i: _str(i[1]) and _str(i[2]), "[4, task, picked task]"),
    STOP: (5, _stop, '[5, task, "running" or "finished", slot or null, [[call id, slot?], ...]]'),
    CHECKPOINT: (
        5,
        lambda i: _count(i[1]) and _str(i[2]) and _texts(i[3]) and _slots(i[4]),
        "[6, n, function, [type arguments], [slots]]",
    ),
    END: (None, _end, "[7, 0, slot] or [7, 1, message, file, line, column]"),
}


def kind_of(item: Any) -> int:
    """The kind code of a parsed fact array, or StrictError."""
    if type(item) is not list or not item or type(item[0]) is not int or item[0] not in _NAMES:
        raise StrictError("not a fact array")
    return item[0]


def check_fact(item: Any) -> int:
    """Check a parsed fact array against its kind's shape; its kind code. Start's data version
    (item[1]) is not checked here: the reader refuses an unknown one first, whole."""
    if type(item) is list and len(item) == 3 and item[0] == REPLY and type(item[0]) is int:
        # the commonest fact, checked inline (a replay reads one per Tool call)
        if type(item[1]) is str and (type(item[2]) is bytes or _slot(item[2])):
            return REPLY
    elif type(item) is list and len(item) == 6 and item[0] == CALL and type(item[0]) is int:
        if (
            type(item[1]) is str
            and type(item[2]) is str
            and type(item[3]) is str
            and type(item[4]) is list
            and type(item[5]) is list
        ):
            for x in item[4]:
                if type(x) is not bytes and not _slot(x):
                    break
            else:
                if not item[5] or _texts(item[5]):
                    return CALL
    k = kind_of(item)
    length, ok, form = _SHAPES[k]
    if (length is not None and len(item) != length) or not ok(item):
        raise StrictError(f"a {_NAMES[k]} fact is {form}")
    return k
