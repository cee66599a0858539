"""The bounds of admitted data, and bounded JSON text (docs/spec/data.md, "Bounds of admitted data").

Every way data enters a run -- `run --input`, `resume --reply`, `fork --input`, the Python host
API, a Python Tool's result -- goes through admission (flowrt.data.decoding). What makes hostile input
expensive is not its type but its shape: nesting that drives a recursive parser off the stack,
numbers whose conversion is quadratic or whose written-out form is a gigabyte, text that is not
Unicode. So admission has fixed bounds, far beyond any real program's data, each checked before
the expensive step it protects:

* JSON text: at most MAX_TEXT characters, checked first.
* Nesting: at most MAX_DEPTH arrays/objects inside one another (in a Python value: lists, tuples,
  sets, dicts and constructed values). JSON text is measured before it is parsed (a C-speed scan
  with the strings taken out), so Python's recursive parser never meets deeper text; a Python
  value is walked without recursion when its type can nest without end (`walk_depth`).
* Numbers in JSON text: at most MAX_DIGITS digits before any exponent, counted on the text before
  it is converted; Python's own int/str limit is 4,300 digits too.
* A Decimal, from any source: at most MAX_DIGITS digits when written out without an exponent, as
  Flow text writes it (`1e999999999` would be a billion digits).
* Text: Unicode scalar values only; a lone surrogate (U+D800-U+DFFF) has no UTF-8 form.
* An object's keys are distinct: a duplicate is refused, not "last one wins".

A JSON text that breaks a bound is refused with the path of the offending place (`$.notes[2]`),
found after the C parser returns (its hooks cannot know where they are) or, for nesting, by a
token scan of the text up to the place where it gets too deep.
"""

from __future__ import annotations

import json
import operator
import re
from decimal import Decimal, InvalidOperation
from itertools import accumulate, count
from typing import Any, Optional

from flowrt.data.numtext import int_from_text, int_text
from flowrt.data.typedesc import (
    _GENERATION,
    DecodeError,
    DictOf,
    ListOf,
    Named,
    SetOf,
    Token,
    TupleOf,
    _Prim,
    fields_of,
)
from flowrt.data.values import Dict, List, Record, Set, _Data, show

__all__ = [
    "MAX_TEXT",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "loads_exact",
    "walk_depth",
    "unbounded",
    "decimal_digits",
    "surrogate_at",
    "significand_digits",
    "preview",
]

MAX_TEXT = 64 * 2**20  # characters of one JSON text
MAX_DEPTH = 128  # arrays/objects inside one another (serde_json's default too)
MAX_DIGITS = 4300  # digits of a number in JSON text; digits of a Decimal written out


# ---- paths ------------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHOWN_STEPS = 8  # a path deeper than this is written with its first steps and "..."


class _Written(str):
    """A path step already written as decoding writes it (`.Link`, `.Span[1]`)."""


def _step(key) -> str:
    if type(key) is int:
        return f"[{key}]"
    if type(key) is _Written:
        return key
    if type(key) is not str:
        key = "?" if key is None else str(key)
    if _IDENT.match(key):
        return f".{key}"
    return "[" + json.dumps(key, ensure_ascii=False) + "]"


def _path(root: str, steps: list) -> str:
    shown = "".join(_step(k) for k in steps[:_SHOWN_STEPS])
    return root + shown + ("..." if len(steps) > _SHOWN_STEPS else "")


# ---- JSON text ----------------------------------------------------------------------------------

# A JSON string, or what is left of an unterminated one: it always matches from a quote, so a
# scan never restarts inside a string (linear time whatever the text holds).
_STRING = r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)'
_TOKENS = re.compile(_STRING + r"|[\[\]{},]", re.S)
_ESCAPES = re.compile(rb"\\.", re.S)  # in JSON text, only inside strings
_DROP = bytes(range(256)).translate(None, b'[]{}"')  # every byte but brackets and quotes
_LEVEL = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opening adds 2, every bracket costs 1
_BLOCK = 128  # brackets a block: a shallow block (depth + its openings within the bound) is not summed


def _too_deep(text: str) -> bool:
    """Does `text` nest more than MAX_DEPTH arrays/objects (strings not counted)? C-speed passes:
    escapes dropped (they are only inside strings), then all but brackets and quotes; with no
    escape left, quotes alternate, so every other piece between them is outside the strings.
    The running depth is then summed a block at a time, a block bracket by bracket only when it
    could reach past the bound: text nested a million deep is answered in its first block."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    data = text.encode("utf-8", "surrogatepass")
    if b"\\" in data:
        data = _ESCAPES.sub(b"", data)
    levels = b"".join(data.translate(None, _DROP).split(b'"')[::2]).translate(_LEVEL)
    depth = 0
    for start in range(0, len(levels), _BLOCK):
        block = levels[start : start + _BLOCK]
        opens = block.count(2)
        if (
            depth + opens > MAX_DEPTH
            and depth + max(map(operator.sub, accumulate(block), count(1))) > MAX_DEPTH
        ):
            return True
        depth += 2 * opens - len(block)
    return False


def _deep_path(text: str) -> str:
    """The path of the first array/object nested deeper than MAX_DEPTH (a token scan)."""
    frames: list = []  # [is object, index, key, a key comes next]
    for m in _TOKENS.finditer(text):
        tok = m.group()
        c = tok[0]
        if c == '"':
            if frames and frames[-1][0] and frames[-1][3]:
                try:
                    frames[-1][2] = json.loads(tok)
                except ValueError:
                    frames[-1][2] = tok
                frames[-1][3] = False
        elif c == "[" or c == "{":
            frames.append([c == "{", 0, None, True])
            if len(frames) > MAX_DEPTH:
                return _path("$", [f[2] if f[0] else f[1] for f in frames[:-1]])
        elif c == ",":
            if frames:
                frames[-1][1] += 1
                frames[-1][3] = True
        elif frames:
            frames.pop()
    return "$"


class _Problem:
    """What a parser hook found (it cannot raise: it does not know where it is)."""

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message


def significand_digits(s: str) -> int:
    """The digits of a number text before any exponent: `-12.50e3` has 4."""
    end = len(s)
    for mark in "eE":
        i = s.find(mark)
        if i >= 0:
            end = min(end, i)
    return end - s.startswith("-") - ("." in s[:end])


def _number_problem(s: str):
    if len(s) <= MAX_DIGITS:  # most numbers: no digit to count
        return None
    n = significand_digits(s)
    if n > MAX_DIGITS:
        return _Problem(f"a number of {n} digits; at most {MAX_DIGITS} are admitted")
    return None


def loads_exact(text: str | bytes) -> Any:
    """Parse JSON text within the bounds, keeping every number exact (integers as int, others
    as Decimal). Raises ValueError for text that is not JSON (NaN and Infinity included) and
    DecodeError, naming the path, for JSON that breaks a bound (see the module docstring)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode(json.detect_encoding(text))
    if len(text) > MAX_TEXT:
        raise DecodeError("$", f"a JSON text of {len(text)} characters; at most {MAX_TEXT} are admitted")
    if _too_deep(text):
        raise DecodeError(_deep_path(text), f"nested deeper than {MAX_DEPTH} arrays/objects")
    problems: list = []

    def pairs(items):
        obj = dict(items)
        if len(obj) != len(items):
            seen = set()
            key = next(k for k, _ in items if k in seen or seen.add(k))
            problems.append((obj, "duplicate key " + json.dumps(key, ensure_ascii=False)))
        return obj

    def integer(s):
        if len(s) > MAX_DIGITS:
            bad = _number_problem(s)
            if bad is not None:
                problems.append((bad, bad.message))
                return bad
        try:
            return int(s)
        except ValueError:  # the host set Python's int/str limit below ours
            return int_from_text(s)

    def number(s):
        bad = _number_problem(s)
        if bad is None:
            try:
                return Decimal(s)
            except InvalidOperation:  # an exponent beyond what Decimal can hold at all
                bad = _Problem(f"the number {s[:40]} is out of range")
        problems.append((bad, bad.message))
        return bad

    try:
        value = json.loads(
            text, object_pairs_hook=pairs, parse_int=integer, parse_float=number, parse_constant=_no_constant
        )
    except RecursionError:  # within MAX_DEPTH, but the caller's own stack is already deep
        raise DecodeError("$", "nested too deeply for this process's stack") from None
    if problems:
        target, message = problems[0]
        raise DecodeError(_path_to(value, target), message)
    return value


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _path_to(root, target) -> str:
    """The path of `target` (by identity) inside a parsed JSON value (depth <= MAX_DEPTH)."""
    todo = [(root, ())]
    while todo:
        v, steps = todo.pop()
        if v is target:
            return _path("$", list(steps))
        if type(v) is dict:
            todo.extend((x, steps + (k,)) for k, x in v.items())
        elif type(v) is list:
            todo.extend((x, steps + (i,)) for i, x in enumerate(v))
    return "$"


# ---- Python values --------------------------------------------------------------------------------


def _children(v):
    """(step, child) pairs of a container in a Python value, or None for a leaf."""
    t = type(v)
    if t is list or t is tuple or t is List or t is Set:
        return enumerate(v)
    if t is dict or t is Dict:
        return v.items()
    if t is set or t is frozenset:
        return enumerate(v)
    if isinstance(v, _Data) and t.__flow_fields__:
        return zip(_data_steps(t), v._flow_values())
    return None


def _data_steps(cls) -> list:
    """The path steps of a constructed value's fields, as decoding names them (`$.Item.price`
    for a record field, `$.Link` for a one-field constructor, `$.Span[1]`, `$.Move.to`)."""
    names = cls.__flow_field_names__
    if issubclass(cls, Record):
        return [_Written(_step(n)) for n in names]
    ctor = cls.__flow_ctor__
    if cls.__flow_named__:
        return [_Written(f".{ctor}{_step(n)}") for n in names]
    if len(names) == 1:
        return [_Written(f".{ctor}")]
    return [_Written(f".{ctor}[{i}]") for i in range(len(names))]


def walk_depth(value, path: str = "$") -> None:
    """Refuse a Python value nested deeper than MAX_DEPTH containers, naming where; iterative,
    so a value nested a million deep (or one that contains itself) is refused, not recursed on."""
    todo = [(value, 0, -1, None)]  # (value, depth of its parent, parent's entry, step)
    entries: list = []  # (parent entry, step) of every container met
    while todo:
        v, depth, parent, step = todo.pop()
        kids = _children(v)
        if kids is None:
            continue
        me = len(entries)
        entries.append((parent, step))
        if depth + 1 > MAX_DEPTH:
            steps = []
            while me > 0:
                me, step = entries[me]
                steps.append(step)
            raise DecodeError(
                _path(path, [s if type(s) in (int, _Written) else str(s) for s in reversed(steps)]),
                f"nested deeper than {MAX_DEPTH} levels",
            )
        todo.extend((x, depth + 1, me, k) for k, x in kids)


# ---- types that nest without end -----------------------------------------------------------------

_NESTING: dict = {}  # descriptor -> (generation, whether its values can nest past MAX_DEPTH)


def unbounded(desc) -> bool:
    """Can a value of `desc` nest deeper than MAX_DEPTH? Only then is a Python value walked
    (`walk_depth`) before decoding: decoding follows the type, so a type that does not refer
    to itself bounds how deep decoding goes, whatever the value holds."""
    got = _NESTING.get(desc)
    if got is None or got[0] != _GENERATION[0]:
        try:
            n = _nesting(desc, set(), {}, 0)
        except (TypeError, RecursionError):  # a class without field types: decoding says so
            n = None
        got = _NESTING[desc] = (_GENERATION[0], n is None or n > MAX_DEPTH)
    return got[1]


def _nesting(d, active: set, memo: dict, level: int) -> Optional[int]:
    """The deepest nesting of `d`'s JSON form, or None when it can reach itself (or nests past
    MAX_DEPTH). `active`: the named types being measured; `memo`: the ones measured."""
    if level > MAX_DEPTH:
        return None
    if d in memo:
        return memo[d]
    memo[d] = n = _nesting_of(d, active, memo, level)
    return n


def _nesting_of(d, active: set, memo: dict, level: int) -> Optional[int]:
    t = type(d)
    if t is _Prim:
        return 0
    if t is Token:
        return 1
    if t is ListOf or t is SetOf:
        parts = [d.item]
    elif t is DictOf:
        parts = [d.key, d.value]
    elif t is TupleOf:
        parts = list(d.items)
    elif t is Named:
        if d.cls.__dict__.get("__flow_opaque__"):
            return 0
        if d in active:
            return None
        variants = d.cls.__dict__.get("__flow_variants__")
        classes = [d.cls] if variants is None else [vc for vc in variants.values() if vc.__flow_fields__]
        if not classes:
            return 0
        active.add(d)
        try:  # an object or {"Name": payload}: two levels, counted for both
            inner = [_nesting(p, active, memo, level + 2) for vc in classes for p in fields_of(vc, d.args)]
        finally:
            active.discard(d)
        return None if None in inner else 2 + max(inner, default=0)
    else:
        return None
    inner = [_nesting(p, active, memo, level + 1) for p in parts]
    # A Dict with other keys than Text is an array of [key, value] arrays: one level more.
    return None if None in inner else 1 + max(inner, default=0) + (t is DictOf)


# ---- numbers and text ---------------------------------------------------------------------------


def decimal_digits(d: Decimal) -> int:
    """The digits of a finite Decimal written out without exponent (`format(d, "f")`, sign and
    point not counted); a positive exponent is written as zeros (Flow text has no exponent).
    O(digits of the coefficient), whatever the exponent: `1e999999999` is answered at once."""
    _, digits, exp = d.as_tuple()
    if digits == (0,):
        return 1 + (-exp if exp < 0 else 0)
    if exp >= 0:
        return len(digits) + exp
    return max(len(digits) + exp, 1) - exp


_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_at(s: str) -> int:
    """The index of the first lone surrogate in `s`, or -1 (an ASCII text is answered in O(1))."""
    if s.isascii():
        return -1
    m = _SURROGATE.search(s)
    return -1 if m is None else m.start()


# ---- the offending value in a message ------------------------------------------------------------

_GOT = 60  # characters of the offending value an error message shows


def preview(v) -> str:
    """The offending value in an error message: its JSON (or Flow) text, cut at 60 characters.
    Built piece by piece and stopped at the cut, so a value of a million elements, one nested
    a million deep or one that contains itself costs no more than a small one."""
    out: list = []
    _preview(v, out, 0)
    s = "".join(out)
    return s if len(s) <= _GOT else s[: _GOT - 3] + "..."


def _budget_left(out) -> bool:
    return sum(map(len, out)) <= _GOT and len(out) < 4 * _GOT


def _preview(v, out, depth):
    if not _budget_left(out) or depth > _GOT:
        out.append("...")
        return
    t = type(v)
    if v is None:
        out.append("null")
    elif v is True or v is False:
        out.append("true" if v else "false")
    elif t is dict or t is list or t is tuple:
        pairs = t is dict
        out.append("{" if pairs else "[")
        for i, x in enumerate(v.items() if pairs else v):
            if i:
                out.append(", ")
            if not _budget_left(out):
                out.append("...")
                break
            if pairs:
                out.append(
                    json.dumps(x[0] if type(x[0]) is str else _scalar_text(x[0])[:_GOT], ensure_ascii=False)
                    + ": "
                )
                x = x[1]
            _preview(x, out, depth + 1)
        out.append("}" if pairs else "]")
    elif depth and t is not int and t is not float:  # inside JSON: as json.dumps(default=str)
        out.append(
            json.dumps(_scalar_text(v)[:_GOT], ensure_ascii=False)
            if t is not str
            else json.dumps(v[:_GOT], ensure_ascii=False)
        )
    else:
        out.append(_scalar_text(v))


def _scalar_text(v) -> str:
    t = type(v)
    if t is int:
        if v.bit_length() > 4 * _GOT:  # only the size: its digits would be cut off anyway
            return f"<an integer of about {int(v.bit_length() * 0.30103) + 1} digits>"
        return int_text(v)
    if t is float:
        return json.dumps(v)
    if t is str:
        return show(v[:_GOT])
    if t is Decimal and v.is_finite() and decimal_digits(v) > _GOT:
        return f"<a Decimal of {decimal_digits(v)} digits written out>"
    try:
        return show(v)
    except Exception:  # a host object that is not Flow data: its kind is what matters
        return f"<{t.__name__}>"
