"""Type descriptors, type text and the JSON form (`to_json`) of Flow data.

docs/spec/tools.md "Data across the boundary (JSON form)" is the rule; docs/spec/abi.md "Type descriptors" lists the
descriptors. Admission -- `decode(desc, value)` and its compiled form `compile_decoder(desc)` --
lives in flowrt.data.decoding, which imports this module (never the other way round).

A generated class says what its fields hold with `__flow_field_types__`: a tuple of descriptors
aligned with `__flow_fields__`, where `T.Var(i)` is the class's i-th type parameter. Codegen may
set it to a zero-argument callable instead (for types that refer to classes defined later); it is
called once, on first use. A class with `__flow_opaque__ = True` is never built by decoding. An enum whose base class has
`__flow_json_form__` (std's json.Value: flowrt.data.jsonvalue) has a JSON form of its own: that
object's `admit(value, path)` and `to_json(value)` take the place of the constructor form.
"""

from __future__ import annotations

import base64
import re
from decimal import Decimal
from typing import Any

from flowrt.data.values import (
    Dict,
    Duration,
    Enum,
    Err,
    Failed,
    HostToken,
    Instant,
    List,
    Malformed,
    NotRun,
    Ok,
    Option,
    Record,
    Result,
    Set,
    Some,
    ToolProblem,
    Unknown,
    show,
)

__all__ = [
    "T",
    "DecodeError",
    "to_json",
    "type_text",
    "field_types",
    "fields_of",
    "subst",
    "TypeTextError",
    "parse_type_text",
    "names_types",
]


class DecodeError(Exception):
    """A value does not fit its type: `path` is where (`$.notes[2]`), `message` what."""

    def __init__(self, path: str, message: str):
        # A lone surrogate from the input (a key, a constructor name) is written as its escape:
        # the message is printed and may be recorded (Malformed), and neither takes one.
        path, message = unicode_text(path), unicode_text(message)
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def unicode_text(s: str) -> str:
    """`s` with each lone surrogate written as its escape (`\\ud800`): a text made from input
    that is printed or recorded as Flow Text, which is Unicode (UTF-8 has no form for one)."""
    return s if s.isascii() else s.encode("utf-8", "backslashreplace").decode("utf-8")


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
    __flow_tool_type__ = True  # a module constant of this class names a `@tool type` (class_table)

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
    if t is _Prim or t is Token or d is None:  # None: a task or function slot (no descriptor)
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


_GENERATION = [0]  # bumped by `field_types`: decoders compiled before it are compiled again


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
    """A descriptor in Flow type syntax: `List<Text>`, `Result<Int, Oops>`, `(Int, Text)`, `(Int,)`."""
    t = type(d)
    if t is _Prim:
        return d.name
    if t is ListOf:
        return f"List<{type_text(d.item)}>"
    if t is SetOf:
        return f"Set<{type_text(d.item)}>"
    if t is DictOf:
        return f"Dict<{type_text(d.key)}, {type_text(d.value)}>"
    if t is TupleOf:  # a one-element tuple keeps its comma: `(Int)` is Int in Flow
        return "(" + ", ".join(type_text(x) for x in d.items) + ("," if len(d.items) == 1 else "") + ")"
    if t is Named:
        name = _class_name(d.cls)
        return f"{name}<{', '.join(type_text(a) for a in d.args)}>" if d.args else name
    if t is Var:
        return f"${d.index}"
    if t is Token:
        return d.type_id.rsplit("::", 1)[-1]
    raise TypeError(f"not a type descriptor: {d!r}")


# ---- type text back to a descriptor ---------------------------------------------------------


class TypeTextError(ValueError):
    """A type text that names no type of the program, or more than one."""


_PRIMS = {p.name: p for p in (T.INT, T.DECIMAL, T.TEXT, T.BYTES, T.BOOL, T.UNIT, T.DURATION, T.INSTANT)}
_COLLECTIONS = {"List": (ListOf, 1), "Set": (SetOf, 1), "Dict": (DictOf, 2)}
# a name may be qualified by a module (`json.Value`, the type text of a std type whose lang name is)
_TYPE_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)|([<>,()]))")
_MAX_TYPE_DEPTH = 200  # deeper than any type a program writes; keeps the parser's recursion bounded


def _type_names(classes) -> dict:
    """Type name -> the descriptor heads of that name: a record's or enum's class, or a
    `@tool type`'s Token. Kept on the table (`type_names`) once built."""
    names = classes.type_names
    if names is None:
        names = {}
        for cls in classes.all_classes():
            base = next((b for b in cls.__bases__ if "__flow_variants__" in b.__dict__), None)
            head = base if base is not None else cls
            names.setdefault(_class_name(head), {})[head] = None
        for type_id in classes.tool_types:
            names.setdefault(type_id.rsplit("::", 1)[-1], {})[Token(type_id)] = None
        classes.type_names = names
    return names


def parse_type_text(text: str, classes) -> Any:
    """The descriptor a type text (`type_text`'s output, as a Call or Checkpoint fact records
    it) names in the program whose class table is `classes`: the inverse of `type_text`.
    TypeTextError when a name is not one of the program's types or names two of them. A type
    text never groups, so `(Int)`, which flowrt wrote for a one-element tuple before its text
    became `(Int,)`, reads as that tuple too: recorded facts are read as they were written."""
    toks = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TYPE_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise TypeTextError(f"`{text}` is not a type")
        toks.append(m.group(1) or m.group(2))
        pos = m.end()
    names = _type_names(classes)
    at = [0]

    def peek():
        return toks[at[0]] if at[0] < len(toks) else ""

    def take(want=None):
        t = peek()
        if not t or (want is not None and t != want):
            raise TypeTextError(f"`{text}` is not a type")
        at[0] += 1
        return t

    def many(close: str, depth: int) -> list:
        out = [one(depth)]
        while peek() == ",":
            take(",")
            if peek() == close:  # `(Int,)`, a one-element tuple
                break
            out.append(one(depth))
        take(close)
        return out

    def one(depth: int):
        if depth > _MAX_TYPE_DEPTH:
            raise TypeTextError(f"`{text[:60]}...` is nested too deeply")
        t = take()
        if t == "(":
            return TupleOf(*many(")", depth + 1))
        if not (t[0].isalpha() or t[0] == "_"):
            raise TypeTextError(f"`{text}` is not a type")
        args = []
        if peek() == "<":
            take("<")
            args = many(">", depth + 1)
        if t in _PRIMS and not args:
            return _PRIMS[t]
        if t in _COLLECTIONS:
            make, n = _COLLECTIONS[t]
            if len(args) != n:
                raise TypeTextError(f"`{text}`: {t} takes {n} type argument{'s' if n > 1 else ''}")
            return make(*args)
        heads = list(names.get(t, ()))
        if not heads:
            raise TypeTextError(f"`{t}` in `{text}` names no type of the program")
        if len(heads) > 1:
            decls = ", ".join(sorted(getattr(h, "__flow_decl__", None) or h.type_id for h in heads))
            raise TypeTextError(f"`{t}` in `{text}` names more than one type of the program ({decls})")
        head = heads[0]
        if type(head) is Token:
            if args:
                raise TypeTextError(f"`{text}`: the @tool type {t} takes no type arguments")
            return head
        return Named(head, *args)

    d = one(0)
    if at[0] != len(toks):
        raise TypeTextError(f"`{text}` is not a type")
    return d


def names_types(texts: tuple, descs: tuple, classes) -> bool:
    """Whether the type texts a fact records name the descriptors `descs` (the type arguments a
    program now calls with): the same texts, or texts that read back as them in the program of
    `classes`, as a one-element tuple recorded `(Int)` by an older flowrt does."""
    if len(texts) != len(descs):
        return False
    try:
        return all(parse_type_text(t, classes) == d for t, d in zip(texts, descs))
    except TypeTextError:
        return False


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
        form = getattr(t, "__flow_json_form__", None)
        if form is not None:  # a type whose JSON form is its own (std's json.Value: plain JSON)
            return form.to_json(v)
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
