"""std@v1/json's `Value`: runtime-shaped data as an ordinary std enum, and its plain JSON form.

std/json.flow declares `@lang("json.Value") pub type Value { Null, Bool(Bool), Number(Decimal),
Text(Text), List(List<Value>), Object(Dict<Text, Value>) }`. As for std's other `@lang` enums, the
classes are the runtime's: a lang name `m.T` names classes of the namespace `rt.m` (flowrt.abi
exports this module as `json`), so generated code writes `rt.json.Number(x)` and `rt.json.NULL`.

A `Value` crosses every boundary of the JSON mapping as the JSON it stands for, not in the tagged
form of an enum (docs/spec/data.md, "JSON values"): the base class carries `__flow_json_form__`,
which admission (flowrt.data.decoding) and `to_json` (flowrt.data.typedesc) ask a class for,
so no rule there knows the type's name. In a history the value is an enum value like any other
(the canonical CBOR of its constructors).

`json_parse` and `json_render` are the bodies of `json.parse` and `json.render` (flowrt.data.lang
re-exports them): pure, deterministic, numbers exact.
"""

from __future__ import annotations

import decimal
import json
from decimal import Decimal

from flowrt.data.bounds import MAX_DIGITS, _step, decimal_digits, loads_exact, preview, surrogate_at
from flowrt.data.decoding import decode
from flowrt.data.typedesc import T, DecodeError, DictOf, ListOf, Named, to_json
from flowrt.data.values import STD_CLASSES, Dict, Enum, Err, Ok, dict_of, list_of, variant
from flowrt.data.values import List as _PyList  # the runtime's List; `List` here is the constructor

__all__ = [
    "Value",
    "Null",
    "Bool",
    "Number",
    "Text",
    "List",
    "Object",
    "NULL",
    "to_plain",
    "from_plain",
    "json_parse",
    "json_render",
    "json_decode",
    "json_encode",
]

_DECL = "std@v1/json::Value"


class Value(Enum):
    """The enum `json.Value`: its constructors are the classes below."""

    __slots__ = ()


@variant(_DECL, "Null", tag=0, fields=())
class Null(Value):
    __slots__ = ()


@variant(_DECL, "Bool", tag=1, fields=("_0",))
class Bool(Value):
    __slots__ = ("_0",)


@variant(_DECL, "Number", tag=2, fields=("_0",))
class Number(Value):
    __slots__ = ("_0",)


@variant(_DECL, "Text", tag=3, fields=("_0",))
class Text(Value):
    __slots__ = ("_0",)


@variant(_DECL, "List", tag=4, fields=("_0",))
class List(Value):
    __slots__ = ("_0",)


@variant(_DECL, "Object", tag=5, fields=("_0",))
class Object(Value):
    __slots__ = ("_0",)


NULL = Null.INSTANCE
_VALUE = Named(Value)
Bool.__flow_field_types__ = (T.BOOL,)
Number.__flow_field_types__ = (T.DECIMAL,)
Text.__flow_field_types__ = (T.TEXT,)
List.__flow_field_types__ = (ListOf(_VALUE),)
Object.__flow_field_types__ = (DictOf(T.TEXT, _VALUE),)
Value.__flow_type_params__ = ()
# Its type text is the lang name, `json.Value`, as a program writes the type: a program's own
# `Value` is another type, and a type text recorded for either reads back as that one.
Value.__flow_name__ = "json.Value"
for _cls in (Null, Bool, Number, Text, List, Object):
    _cls.__flow_name__ = Value.__flow_name__
    STD_CLASSES.add(_cls)  # like Ok and Some: a table without the program knows them


# ---- the plain JSON form ------------------------------------------------------------------------


def to_plain(v: Value):
    """The JSON a Value stands for, as Python: None, bool, str, list, dict, and a number as an
    int when it has no fraction digits (`Number(2)`), else as a Decimal (`Number(2.50)`)."""
    t = type(v)
    if t is Text or t is Bool:
        return v._0
    if t is Number:
        d = v._0
        return int(d) if d.as_tuple().exponent >= 0 else d
    if t is Null:
        return None
    if t is List:
        return [to_plain(x) for x in v._0]
    if t is Object:
        return {k: to_plain(x) for k, x in v._0.items()}
    raise TypeError(f"not a json.Value: {v!r}")


def _number(x, path: str) -> Number:
    t = type(x)
    if t is int:
        d = Decimal(x)
    elif t is float:  # a float from a Python host: its shortest repr is the literal it came from
        if x != x or x in (float("inf"), float("-inf")):
            raise DecodeError(path, f"expected a JSON value, got {preview(x)} (not a JSON number)")
        d = Decimal(repr(x))
    else:
        d = x
        if not d.is_finite():
            raise DecodeError(path, f"expected a JSON value, got {preview(x)} (not a JSON number)")
    n = decimal_digits(d)
    if n > MAX_DIGITS:
        raise DecodeError(path, f"a Decimal of {n} digits written out; at most {MAX_DIGITS} are admitted")
    return Number(_canonical(d))


def _canonical(d: Decimal) -> Decimal:
    """As admission keeps a Decimal: no positive exponent (`1E+3` is 1000), no negative zero."""
    if d.as_tuple().exponent > 0:
        d = d.quantize(Decimal(1), context=_WIDE)
    if not d and d.is_signed():
        d = -d
    return d


_WIDE = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _text(s: str, path: str) -> str:
    at = surrogate_at(s)
    if at >= 0:
        raise DecodeError(path, f"not Unicode text: a lone surrogate U+{ord(s[at]):04X} at character {at}")
    return s


class _Slow(Exception):
    """The fast path met something it does not take: `_admit` decides and words the error."""


def _fast(x) -> Value:
    """`_admit` for the common shapes, building no path texts (most of the work otherwise)."""
    t = type(x)
    if t is str:
        if x.isascii() or surrogate_at(x) < 0:
            return Text(x)
        raise _Slow
    if t is int:
        if -_INT_END < x < _INT_END:
            return Number(Decimal(x))
        raise _Slow
    if t is dict:
        pairs = []
        for k, y in x.items():
            if type(k) is not str or not (k.isascii() or surrogate_at(k) < 0):
                raise _Slow
            pairs.append((k, _fast(y)))
        return Object(dict_of(pairs))
    if t is list:
        return List(list_of([_fast(y) for y in x]))
    if x is None:
        return NULL
    if t is bool:
        return Bool(x)
    if t is Decimal and x.is_finite() and decimal_digits(x) <= MAX_DIGITS:
        return Number(_canonical(x))
    raise _Slow


_INT_END = 10**MAX_DIGITS


def from_plain(x, path: str = "$") -> Value:
    """Admit plain JSON (None, bool, int, Decimal, float, str, list/tuple, dict with text keys;
    Values already built may appear anywhere in it) as a Value, or raise DecodeError naming the
    path, with the messages of the JSON mapping. Depth is bounded by the caller (`decode` walks a
    value of a type that refers to itself before decoding it)."""
    try:
        return _fast(x)
    except _Slow:
        return _admit(x, path)


def _admit(x, path: str) -> Value:
    """`from_plain` with the path of each place: it finds and words the error."""
    t = type(x)
    if x is None:
        return NULL
    if t is bool:
        return Bool(x)
    if t is str:
        return Text(_text(x, path))
    if t is int or t is float or t is Decimal:
        return _number(x, path)
    if t is list or t is tuple or t is _PyList:
        return List(list_of([_admit(y, f"{path}[{i}]") for i, y in enumerate(x)]))
    if t is dict or t is Dict:
        pairs = []
        for k, y in x.items():
            if type(k) is not str:
                raise DecodeError(
                    path, f"expected json.Value (an object's keys are text), got the key {preview(k)}"
                )
            step = f"{path}{_step(k)}"
            pairs.append((_text(k, f"{path}.<key {preview(k)}>"), _admit(y, step)))
        return Object(dict_of(pairs))
    if isinstance(x, Value):
        return _admit_built(x, path)
    raise DecodeError(path, f"expected json.Value (JSON), got {preview(x)}")


def _admit_built(v: Value, path: str) -> Value:
    """A Value a Python host built (`rt.json.Number(...)`): its payload admitted like JSON."""
    t = type(v)
    if t is Null:
        return v
    if t is Bool:
        if type(v._0) is not bool:
            raise DecodeError(f"{path}.Bool", f"expected Bool, got {preview(v._0)}")
        return v
    if t is Number:
        if type(v._0) not in (int, float, Decimal):
            raise DecodeError(f"{path}.Number", f"expected Decimal, got {preview(v._0)}")
        out = _number(v._0, f"{path}.Number")
        return v if out._0 is v._0 else out
    if t is Text:
        if type(v._0) is not str:
            raise DecodeError(f"{path}.Text", f"expected Text, got {preview(v._0)}")
        _text(v._0, f"{path}.Text")
        return v
    if t is List:
        if type(v._0) not in (_PyList, list, tuple):
            raise DecodeError(f"{path}.List", f"expected List<Value>, got {preview(v._0)}")
        return from_plain(v._0, f"{path}.List")
    if type(v._0) not in (Dict, dict):
        raise DecodeError(f"{path}.Object", f"expected Dict<Text, Value>, got {preview(v._0)}")
    return from_plain(v._0, f"{path}.Object")


class _PlainForm:
    """What `__flow_json_form__` holds: how a class's values are admitted from, and written as,
    JSON (asked for by flowrt.data.decoding and flowrt.data.typedesc.to_json)."""

    __slots__ = ()

    @staticmethod
    def admit(x, path: str):
        return from_plain(x, path)

    @staticmethod
    def to_json(v):
        return to_plain(v)


Value.__flow_json_form__ = _PlainForm()


# ---- render and parse -----------------------------------------------------------------------------

_dumps_text = json.encoder.encode_basestring  # what json.dumps(s, ensure_ascii=False) writes


def json_render(v: Value) -> str:
    """JSON text, compact (no spaces), object keys in ascending code point order (a Dict's order),
    a number written exactly as its Decimal is (`1.50`, `1000`, `-0.001`), never with an exponent.
    Iterative, so a Value nested however deep is rendered."""
    out: list = []
    todo: list = [v]
    while todo:
        x = todo.pop()
        t = type(x)
        if t is str:  # a piece of punctuation queued below
            out.append(x)
        elif t is Text:
            out.append(_dumps_text(x._0))
        elif t is Number:
            out.append(format(x._0, "f"))
        elif t is Bool:
            out.append("true" if x._0 else "false")
        elif t is Null:
            out.append("null")
        elif t is List:
            items = x._0
            if not items:
                out.append("[]")
                continue
            todo.append("]")
            for i in range(len(items) - 1, -1, -1):
                todo.append(items[i])
                if i:
                    todo.append(",")
            out.append("[")
        else:
            pairs = list(x._0.items())
            if not pairs:
                out.append("{}")
                continue
            todo.append("}")
            for i in range(len(pairs) - 1, -1, -1):
                k, y = pairs[i]
                todo.append(y)
                todo.append(_dumps_text(k) + ":")
                if i:
                    todo.append(",")
            out.append("{")
    return "".join(out)


def _where(text: str, at: int) -> tuple:
    """(line, column) of character `at`, both from 1."""
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def json_parse(text: str):
    """`Ok(value)` for a JSON text (RFC 8259: one value, white space around it), or
    `Err((at, line, column, message))`: where parsing stopped (`at` counts characters from 0,
    line and column from 1) and what was expected there. Within the bounds of admitted data
    (data.md): nesting, digits, Unicode text, distinct keys."""
    try:
        plain = loads_exact(text)
        return Ok(from_plain(plain))
    except json.JSONDecodeError as e:
        return Err((e.pos, e.lineno, e.colno, _expected(e.msg)))
    except DecodeError as e:
        return Err((0, 1, 1, f"{e.path}: {e.message}"))
    except ValueError as e:  # NaN, Infinity: json.loads asked parse_constant, which refused
        word = str(e).split(" ", 1)[0]
        at = _constant_at(text, word)
        line, column = _where(text, at)
        return Err((at, line, column, f"expected a value: {word} is not a JSON number"))


def _expected(msg: str) -> str:
    """Python's wording of a JSON syntax error, as std words it (`expected ',' or ']'`)."""
    words = {
        "Expecting value": "expected a value",
        "Expecting ',' delimiter": "expected ',' or the end of the array or object",
        "Expecting ':' delimiter": "expected ':' after an object's key",
        "Expecting property name enclosed in double quotes": "expected a key in double quotes",
        "Extra data": "expected the end of the text after one value",
        "Unterminated string starting at": "expected '\"' to end the text that starts here",
        "Invalid control character at": "expected an escape (\\n, \\u0000) for a control character in a text",
        "Invalid \\escape": 'expected a valid escape (\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t, \\uXXXX)',
        "Invalid \\uXXXX escape": "expected four hexadecimal digits after \\u",
        "Illegal trailing comma before end of object": "expected a key after ','",
        "Illegal trailing comma before end of array": "expected a value after ','",
    }
    return words.get(msg, msg[:1].lower() + msg[1:])


def _constant_at(text: str, word: str) -> int:
    """Where the first `word` (NaN, Infinity) outside a string starts."""
    inside = False
    i = 0
    while i < len(text):
        c = text[i]
        if inside:
            if c == "\\":
                i += 1
            elif c == '"':
                inside = False
        elif c == '"':
            inside = True
        elif text.startswith(word, i):
            return i
        i += 1
    return 0


# ---- conversion to and from a program's types -------------------------------------------------------


def json_decode(type_args: tuple, v: Value):
    """`json.decode<T>(v)`: `Ok` of the value of type T the JSON mapping admits from `v`'s plain
    JSON (the same admission as `--input` and a Tool's reply), or `Err` of its one-line refusal
    (`$.notes[2]: expected Text, got 3`)."""
    try:
        return Ok(decode(type_args[0], to_plain(v)))
    except DecodeError as e:
        return Err(str(e))


def json_encode(x) -> Value:
    """`json.encode<T>(x)`: the JSON mapping's form of a data value, as a Value (a Decimal is a
    Text, as the mapping writes it: `"2.50"`). The program's own value, so not bounded."""
    return _built(to_json(x))


def _built(x) -> Value:
    t = type(x)
    if t is str:
        return Text(x)
    if t is int:
        return Number(Decimal(x))
    if t is list:
        return List(list_of([_built(y) for y in x]))
    if t is dict:
        return Object(dict_of([(k, _built(y)) for k, y in x.items()]))
    if t is bool:
        return Bool(x)
    if x is None:
        return NULL
    if isinstance(x, Value):
        return x
    return Number(_canonical(x))  # a Decimal inside a Value's plain form
