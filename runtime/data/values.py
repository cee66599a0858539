"""Flow values as Python objects (docs/spec/abi.md, "Values").

Scalars are Python's own (`int`, `decimal.Decimal`, `str`, `bytes`, `bool`, `None` for Unit,
`tuple`). What Python lacks is built here:

* `Record` / `Enum`: bases of generated data classes. The `record` / `variant` decorators attach
  the Flow metadata and generate `__init__`, `__eq__`, `__hash__` and the ordering key once per
  class (like `dataclasses`, by compiling a small function), so constructing a value costs one
  Python call and no loop over fields. They register the class nowhere.
* `ClassTable`: a program's classes by (declaration id, constructor), what rebuilds a value by
  name (the store's decoder, a checkpoint's parked tasks). There is deliberately no process-wide
  table: two programs in one process (a run and its fork on a newer version, a host embedding
  several programs) may share a declaration id with different shapes. `class_table(...)` builds
  one from a program's modules; every table falls back to `STD_CLASSES`, the runtime's own
  classes of std's built-in enums (Ok/Err, Some/None, ToolProblem), shared by every program.
* `List`, `Dict`, `Set`: persistent collections. `List` *is* pyrsistent's C `PVector` (no wrapper:
  append, index and iteration run at C speed). `Dict` and `Set` wrap an `immutables.Map` (a HAMT,
  ~10x faster inserts than `pmap`; see bench/bench_collections.py) and iterate in **sorted** order:
  a HAMT's own order depends on string hashes, which Python randomises per process, and a Flow
  program must compute the same thing in every process (replay).
* `Duration`, `Instant`, `HostToken`, `Hole`.
* `show(value)`: the Flow text of any value (docs/spec/trace.md "Rendering"); `repr` of every Flow
  class is its Flow text.

Flow data is totally ordered: Python's `<` works on every data value here (records by fields in
order, enum values by constructor tag then payload, lists lexicographically, dicts and sets by
their sorted contents).
"""

from __future__ import annotations

import decimal
import keyword
from decimal import Decimal  # re-exported: generated code writes rt.Decimal("1.50")
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator, Optional

import immutables
from pyrsistent import pvector

from flowrt.data.numtext import int_text

__all__ = [
    "Record",
    "Enum",
    "record",
    "variant",
    "unit_variant",
    "ClassTable",
    "class_table",
    "STD_CLASSES",
    "Result",
    "Ok",
    "Err",
    "Option",
    "Some",
    "None_",
    "NONE",
    "ToolProblem",
    "Failed",
    "Malformed",
    "NotRun",
    "Unknown",
    "List",
    "Dict",
    "Set",
    "EMPTY_LIST",
    "EMPTY_DICT",
    "EMPTY_SET",
    "list_of",
    "dict_of",
    "set_of",
    "Duration",
    "Instant",
    "HostToken",
    "Hole",
    "show",
    "Decimal",
]

_set = object.__setattr__


class _Data:
    """Shared behaviour of records and enum values: immutable, Flow text as repr, total order.

    `_flow_key()` (generated per class) returns the tuple that equality, hashing and ordering use.
    """

    __slots__ = ()
    __flow_fields__: tuple[str, ...] = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __repr__(self):
        return show(self)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (type(self), self._flow_values())

    def __lt__(self, other):
        k = self._flow_order(other)
        return k[0] < k[1] if k is not None else NotImplemented

    def __le__(self, other):
        k = self._flow_order(other)
        return k[0] <= k[1] if k is not None else NotImplemented

    def __gt__(self, other):
        k = self._flow_order(other)
        return k[0] > k[1] if k is not None else NotImplemented

    def __ge__(self, other):
        k = self._flow_order(other)
        return k[0] >= k[1] if k is not None else NotImplemented


class Record(_Data):
    """Base of generated record classes (`@rt.record(...)`)."""

    __slots__ = ()

    def _flow_order(self, other):
        if other.__class__ is not self.__class__:
            return None
        return self._flow_values(), other._flow_values()


class Enum(_Data):
    """Base of a generated enum's base class; each constructor is a subclass (`@rt.variant`)."""

    __slots__ = ()

    def _flow_order(self, other):
        if not isinstance(other, Enum) or other.__flow_decl__ != self.__flow_decl__:
            return None
        if other.__flow_tag__ != self.__flow_tag__:
            return self.__flow_tag__, other.__flow_tag__
        return self._flow_values(), other._flow_values()


def _flow_name(f: str) -> str:
    """The default Flow name of a hand-written class's field: a keyword written with a trailing
    `_` (PEP 8's `from_`) is Flow's `from`. Generated classes state their names (`names=`)."""
    return f[:-1] if f.endswith("_") and keyword.iskeyword(f[:-1]) else f


def _runtime_attribute(cls, f: str) -> bool:
    """A field `f` would hide or replace what the runtime and Python keep on the class: a dunder
    or private name (`__init__`, `__slots__`, `_flow_values`), `INSTANCE`, or anything a base
    class defines. Codegen's names never are one (flow2py/codegen/names.py)."""
    if f.startswith("__") or f.startswith("_flow") or f == "INSTANCE":
        return True
    return any(f in k.__dict__ for k in cls.__mro__[1:])


def _slot_setter(cls, f: str):
    """The bound `__set__` of the slot descriptor for field `f` (the nearest in the MRO)."""
    for k in cls.__mro__:
        d = k.__dict__.get(f)
        if d is not None:
            if type(d).__name__ != "member_descriptor":
                raise TypeError(f"{cls.__name__}.{f} is not a slot")
            return d.__set__
    raise TypeError(f"{cls.__name__} has no slot {f!r}")


def _install(cls, decl: str, ctor: str, tag: int, fields: tuple[str, ...], named: bool, names=None):
    fields = tuple(fields)
    flow_names = tuple(names) if names is not None else tuple(_flow_name(f) for f in fields)
    if len(flow_names) != len(fields):
        raise ValueError("names= must name every field")
    for f in fields:
        if not f.isidentifier():
            raise ValueError(f"bad field name {f!r}")
        if _runtime_attribute(cls, f):
            raise ValueError(
                f"field name {f!r} of {cls.__name__} is a name the runtime or Python uses on the class"
            )
    if len(set(fields)) != len(fields):
        raise ValueError(f"two fields of {cls.__name__} have one name")
    slots = set()
    for k in cls.__mro__:
        slots.update(k.__dict__.get("__slots__", ()))
    missing = [f for f in fields if f not in slots]
    if missing:
        raise TypeError(f"{cls.__name__} must declare __slots__ for {missing}")
    cls.__flow_decl__ = decl
    cls.__flow_ctor__ = ctor
    cls.__flow_tag__ = tag
    cls.__flow_fields__ = fields
    cls.__flow_field_names__ = flow_names
    cls.__flow_named__ = named
    cls.__match_args__ = fields
    # Parameters are the field names where that is a plain parameter; otherwise (`self`, a
    # keyword, a name starting with `_`, which could meet `_set_0` or `_KEY`) `_p<i>`, which no
    # plain name can be. A field named like a keyword is still a valid slot, read with getattr.
    params = [
        f"_p{i}" if f == "self" or f.startswith("_") or keyword.iskeyword(f) else f
        for i, f in enumerate(fields)
    ]
    args = ", ".join(params)

    def read(obj, f):
        return f"getattr({obj}, {f!r})" if keyword.iskeyword(f) else f"{obj}.{f}"

    values = "(" + "".join(f"{read('self', f)}, " for f in fields) + ")"
    other_values = "(" + "".join(f"{read('other', f)}, " for f in fields) + ")"
    # Each field is stored through its slot descriptor's bound `__set__`, looked up once here:
    # `_Data.__setattr__` refuses every assignment, and this skips `object.__setattr__`'s
    # attribute lookup by name (about 1.7x faster a construction; bench/bench_pure.py).
    setters = {f"_set_{i}": _slot_setter(cls, f) for i, f in enumerate(fields)}
    body = "".join(f"    _set_{i}(self, {p})\n" for i, p in enumerate(params)) or "    pass\n"
    key = (decl, ctor)
    src = (
        f"def __init__(self{', ' if fields else ''}{args}):\n{body}"
        f"def _flow_values(self):\n    return {values}\n"
        f"def __eq__(self, other):\n"
        f"    return other.__class__ is self.__class__ and {values} == {other_values}\n"
        f"def __hash__(self):\n    return hash((_KEY, {values}))\n"
    )
    ns: dict[str, Any] = {"_KEY": key, **setters}
    exec(compile(src, f"<flowrt {decl}.{ctor}>", "exec"), ns)
    for name in ("__init__", "_flow_values", "__eq__", "__hash__"):
        fn = ns[name]
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, fn)
    return cls


def record(decl: str, fields: Iterable[str] = (), names: Iterable[str] | None = None):
    """Class decorator for a generated record: `@rt.record("main::Item", fields=("name",))`.

    `fields` are the Python attribute names; `names` the Flow field names when they differ
    (default: a codegen-renamed `from_` is Flow's `from`)."""

    def deco(cls):
        if not issubclass(cls, Record):
            raise TypeError("@record classes derive from rt.Record")
        _install(cls, decl, decl.rsplit("::", 1)[-1], 0, tuple(fields), True, names)
        cls.__flow_name__ = cls.__flow_ctor__
        return cls

    return deco


def variant(
    decl: str,
    ctor: str,
    tag: int = 0,
    fields: Iterable[str] = (),
    named: bool | None = None,
    names: Iterable[str] | None = None,
):
    """Class decorator for one constructor of a generated enum.

    `fields` are `_0, _1, ...` for a positional payload and the declared names for a named one;
    `named` defaults to "the fields are not `_0, _1, ...`". The class's direct base (the enum's
    class) gets `__flow_decl__`, `__flow_name__` and the table `__flow_variants__` (ctor -> class).
    """

    def deco(cls):
        fs = tuple(fields)
        is_named = named if named is not None else any(f != f"_{i}" for i, f in enumerate(fs))
        base = next((b for b in cls.__bases__ if issubclass(b, Enum) and b is not Enum), None)
        if base is None:
            raise TypeError("@variant classes derive from a generated enum class (an rt.Enum subclass)")
        _install(cls, decl, ctor, tag, fs, is_named, names)
        if "__flow_variants__" not in base.__dict__:
            base.__flow_variants__ = {}
            base.__flow_decl__ = decl
            base.__flow_name__ = decl.rsplit("::", 1)[-1]
        base.__flow_variants__[ctor] = cls
        cls.__flow_name__ = base.__flow_name__
        if not fs:
            unit_variant(cls)
        return cls

    return deco


def unit_variant(cls):
    """Give a payload-less constructor its single shared instance `cls.INSTANCE` (idempotent)."""
    if "INSTANCE" not in cls.__dict__:
        cls.INSTANCE = cls()
    return cls.INSTANCE


# ---- class tables --------------------------------------------------------------------------


def _flow_classes(value: Any) -> Iterator[type]:
    """The generated constructor classes `value` is or holds: a record or variant class itself,
    an enum's base class (its `__flow_variants__`)."""
    if not isinstance(value, type) or not issubclass(value, _Data):
        return
    if "__flow_ctor__" in value.__dict__:
        yield value
    variants = value.__dict__.get("__flow_variants__")
    if variants:
        yield from variants.values()


class ClassTable:
    """The generated classes of one program by (declaration id, constructor name).

    What rebuilds a value by name (`flowrt.history.trace.decode_value(b, classes=...)`, the store's
    readers, the driver restoring a checkpoint's parked tasks) looks its class up here. A table
    falls back to `fallback` (default `STD_CLASSES`, the runtime's classes of std's built-in enums)
    for a key it does not hold; the fallback's classes are taken when the table is made.

    `lookup((decl, ctor))` is the table's C-level `dict.get` (the decoder calls it per value).
    """

    __slots__ = ("_own", "_all", "lookup", "fallback", "tool_types", "type_names")

    def __init__(
        self, classes: Iterable[type] = (), *, fallback: Optional["ClassTable"] = None, std: bool = True
    ):
        self.fallback = fallback if fallback is not None else (STD_CLASSES if std else None)
        self._own: dict[tuple[str, str], type] = {}
        self._all: dict[tuple[str, str], type] = dict(self.fallback._all) if self.fallback is not None else {}
        self.lookup = self._all.get
        #: declaration ids of the program's `@tool type`s (a module's `rt.T.Token` constants)
        self.tool_types: set[str] = set()
        #: filled on first use by flowrt.data.typedesc.parse_type_text: type name -> descriptor heads
        self.type_names: Optional[dict] = None
        for cls in classes:
            self.add(cls)

    def add(self, cls: type) -> type:
        """Put a generated record or variant class in the table (by its `__flow_decl__` and
        `__flow_ctor__`). A second, different class for the same constructor is refused: one
        program has one class per constructor."""
        decl = cls.__dict__.get("__flow_decl__")
        ctor = cls.__dict__.get("__flow_ctor__")
        if decl is None or ctor is None:
            raise TypeError(f"{cls!r} is not a generated record or variant class (@rt.record / @rt.variant)")
        key = (decl, ctor)
        have = self._own.get(key)
        if have is not None and have is not cls:
            raise ValueError(
                f"two classes for the constructor {decl}.{ctor} in one class table: "
                f"{have.__module__}.{have.__qualname__} and {cls.__module__}.{cls.__qualname__}"
            )
        self._own[key] = cls
        self._all[key] = cls
        self.type_names = None
        return cls

    def get(self, key: tuple[str, str], default: Any = None) -> Optional[type]:
        return self._all.get(key, default)

    def all_classes(self) -> Iterable[type]:
        """Every class the table finds, the fallback's included."""
        return self._all.values()

    def __getitem__(self, key: tuple[str, str]) -> type:
        return self._all[key]

    def __contains__(self, key) -> bool:
        return key in self._all

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """The keys of the table's own classes (not the fallback's)."""
        return iter(self._own)

    def __len__(self) -> int:
        return len(self._own)

    def __repr__(self):
        return f"<ClassTable of {len(self._own)} classes>"


def class_table(*sources: Any, fallback: Optional[ClassTable] = None) -> ClassTable:
    """The class table of a program from where its classes are defined: each source is a module,
    a namespace dict, a function (its module's globals: `class_table(entry)` for a hand-written
    one-module program, like `flowrt.data.requests.module_resolver`), or a class. Every generated record
    and variant class found at the top level (an enum's variants through its base) is taken, and
    every `@tool type` descriptor (`rt.T.Token`), so the table knows each type of the program by
    name (`flowrt.data.typedesc.parse_type_text`)."""
    table = ClassTable(fallback=fallback)
    for src in sources:
        if isinstance(src, type):
            values: Iterable[Any] = (src,)
        elif isinstance(src, dict):
            values = list(src.values())
        elif hasattr(src, "__globals__"):
            values = list(src.__globals__.values())
        else:
            values = list(vars(src).values())
        for v in values:
            if getattr(type(v), "__flow_tool_type__", False):  # a `@tool type`'s descriptor
                table.tool_types.add(v.type_id)
                continue
            for cls in _flow_classes(v):
                table.add(cls)
    return table


# ---- std's built-in enums -----------------------------------------------------------------


class Result(Enum):
    __slots__ = ()


@variant("std@v1/result::Result", "Ok", tag=0, fields=("_0",))
class Ok(Result):
    __slots__ = ("_0",)


@variant("std@v1/result::Result", "Err", tag=1, fields=("_0",))
class Err(Result):
    __slots__ = ("_0",)


class Option(Enum):
    __slots__ = ()


@variant("std@v1/option::Option", "None", tag=0, fields=())
class None_(Option):
    __slots__ = ()


@variant("std@v1/option::Option", "Some", tag=1, fields=("_0",))
class Some(Option):
    __slots__ = ("_0",)


NONE = None_.INSTANCE


class ToolProblem(Enum):
    __slots__ = ()


@variant("std@v1/tool::ToolProblem", "Failed", tag=0, fields=("_0",))
class Failed(ToolProblem):
    __slots__ = ("_0",)


@variant("std@v1/tool::ToolProblem", "Malformed", tag=1, fields=("_0",))
class Malformed(ToolProblem):
    __slots__ = ("_0",)


@variant("std@v1/tool::ToolProblem", "NotRun", tag=2, fields=("_0",))
class NotRun(ToolProblem, Exception):
    """The Flow value `NotRun(reason)` and, the very same class, what a Tool implementation raises
    (`raise NotRun("service down")`) when the call definitely did not happen.

    The layout allows it because every Flow base has empty `__slots__`; the instance also carries
    BaseException's fields (args, traceback), which Flow never looks at: equality, hash, order and
    text use `_0` only. Python may set exception dunders (`__traceback__`, `__notes__` ...), so those
    are exempt from immutability.
    """

    __slots__ = ("_0",)

    def __setattr__(self, name, value):
        if name.startswith("__"):
            Exception.__setattr__(self, name, value)
        else:
            _Data.__setattr__(self, name, value)

    def __str__(self):
        return self._0 if isinstance(self._0, str) else show(self._0)


@variant("std@v1/tool::ToolProblem", "Unknown", tag=3, fields=("_0",))
class Unknown(ToolProblem):
    __slots__ = ("_0",)


#: The runtime's classes of std's built-in enums, shared by every program: every `ClassTable`
#: falls back to it. Nothing adds to it (generated classes belong to their program's table).
STD_CLASSES = ClassTable((Ok, Err, None_, Some, Failed, Malformed, NotRun, Unknown), std=False)


# ---- collections ----------------------------------------------------------------------------

EMPTY_LIST = pvector()
#: Flow `List<T>`: pyrsistent's persistent vector (`.append(x)`, `.extend(xs)`, `[i]`, `len`).
List = type(EMPTY_LIST)


def list_of(items: Iterable = ()) -> List:
    return items if type(items) is List else pvector(items)


class _Sorted:
    """What Dict and Set share: an immutables.Map inside, iterated and ordered by its sorted
    contents (`_order()`: the items, or the elements), equal and hashed by the map."""

    # `_sorted` and `_hash` are caches, unset until first needed (a new value costs one slot store).
    __slots__ = ("_m", "_sorted", "_hash")

    def __init__(self, m: immutables.Map = immutables.Map()):
        _set(self, "_m", m)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __len__(self):
        return len(self._m)

    def __contains__(self, key):
        return key in self._m

    def __eq__(self, other):
        return type(other) is type(self) and self._m == other._m

    def __hash__(self):
        try:
            return self._hash
        except AttributeError:
            h = hash(self._m)
            _set(self, "_hash", h)
            return h

    def __lt__(self, other):
        return self._order() < other._order() if type(other) is type(self) else NotImplemented

    def __le__(self, other):
        return self._order() <= other._order() if type(other) is type(self) else NotImplemented

    def __gt__(self, other):
        return self._order() > other._order() if type(other) is type(self) else NotImplemented

    def __ge__(self, other):
        return self._order() >= other._order() if type(other) is type(self) else NotImplemented

    def __repr__(self):
        return show(self)


class Dict(_Sorted):
    """Flow `Dict<K, V>`: a persistent map, iterated in sorted key order."""

    __slots__ = ()

    def items(self) -> tuple:
        """(key, value) pairs in key order (computed once per Dict)."""
        try:
            return self._sorted
        except AttributeError:
            s = tuple(sorted(self._m.items(), key=_first))
            _set(self, "_sorted", s)
            return s

    def keys(self) -> tuple:
        return tuple(k for k, _ in self.items())

    def values(self) -> tuple:
        return tuple(v for _, v in self.items())

    def __iter__(self):
        return (k for k, _ in self.items())

    def __getitem__(self, key):
        return self._m[key]

    def get(self, key, default=None):
        return self._m.get(key, default)

    def set(self, key, value) -> "Dict":
        return _mk_dict(self._m.set(key, value))

    def remove(self, key) -> "Dict":
        """Without `key` (the same Dict when absent)."""
        if key not in self._m:
            return self
        return _mk_dict(self._m.delete(key))

    def update(self, pairs) -> "Dict":
        m = self._m.mutate()
        for k, v in pairs:
            m[k] = v
        return _mk_dict(m.finish())

    _order = items

    def __reduce__(self):
        return (dict_of, (self.items(),))


def _first(pair):
    return pair[0]


def dict_of(pairs: Iterable = ()) -> Dict:
    """A Dict from (key, value) pairs or a Python mapping; a later pair wins."""
    if isinstance(pairs, Dict):
        return pairs
    if hasattr(pairs, "items"):
        pairs = pairs.items()
    return _mk_dict(immutables.Map(pairs))


class Set(_Sorted):
    """Flow `Set<T>`: a persistent set, iterated in sorted order."""

    __slots__ = ()

    def elements(self) -> tuple:
        """The elements in order (computed once per Set)."""
        try:
            return self._sorted
        except AttributeError:
            s = tuple(sorted(self._m.keys()))
            _set(self, "_sorted", s)
            return s

    def __iter__(self):
        return iter(self.elements())

    def add(self, x) -> "Set":
        if x in self._m:
            return self
        return _mk_set(self._m.set(x, None))

    def remove(self, x) -> "Set":
        if x not in self._m:
            return self
        return _mk_set(self._m.delete(x))

    def union(self, other: "Set") -> "Set":
        small, big = (self, other) if len(self) <= len(other) else (other, self)
        m = big._m.mutate()
        for x in small._m:
            m[x] = None
        return _mk_set(m.finish())

    def intersection(self, other: "Set") -> "Set":
        small, big = (self, other) if len(self) <= len(other) else (other, self)
        return set_of(x for x in small._m if x in big._m)

    def difference(self, other: "Set") -> "Set":
        m = self._m.mutate()
        for x in other._m:
            if x in m:
                del m[x]
        return _mk_set(m.finish())

    _order = elements

    def __reduce__(self):
        return (set_of, (self.elements(),))


def set_of(items: Iterable = ()) -> Set:
    if isinstance(items, Set):
        return items
    return _mk_set(immutables.Map((x, None) for x in items))


_new = object.__new__
_DICT_M = Dict._m.__set__
_SET_M = Set._m.__set__


def _mk_dict(m):
    d = _new(Dict)
    _DICT_M(d, m)
    return d


def _mk_set(m):
    s = _new(Set)
    _SET_M(s, m)
    return s


EMPTY_DICT = Dict()
EMPTY_SET = Set()


# ---- time, tokens, holes ------------------------------------------------------------------


class _Scalar:
    __slots__ = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __repr__(self):
        return show(self)


class _Nanos(_Scalar):
    """A scalar of whole nanoseconds: equal, hashed and ordered by `nanos` within its own type."""

    __slots__ = ("nanos",)
    __match_args__ = ("nanos",)

    def __init__(self, nanos: int):
        if type(nanos) is not int:
            raise TypeError(f"{type(self).__name__}(nanos) takes an int")
        _set(self, "nanos", nanos)

    def __eq__(self, o):
        return type(o) is type(self) and o.nanos == self.nanos

    def __hash__(self):
        return hash((type(self), self.nanos))

    def __lt__(self, o):
        return self.nanos < o.nanos if type(o) is type(self) else NotImplemented

    def __le__(self, o):
        return self.nanos <= o.nanos if type(o) is type(self) else NotImplemented

    def __gt__(self, o):
        return self.nanos > o.nanos if type(o) is type(self) else NotImplemented

    def __ge__(self, o):
        return self.nanos >= o.nanos if type(o) is type(self) else NotImplemented

    def __reduce__(self):
        return (type(self), (self.nanos,))


class Duration(_Nanos):
    """A length of time in whole nanoseconds (may be negative)."""

    __slots__ = ()

    def __add__(self, o):
        return Duration(self.nanos + o.nanos) if type(o) is Duration else NotImplemented

    def __sub__(self, o):
        return Duration(self.nanos - o.nanos) if type(o) is Duration else NotImplemented

    def __mul__(self, k):
        return Duration(self.nanos * k) if type(k) is int else NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return Duration(-self.nanos)


class Instant(_Nanos):
    """A point in time: nanoseconds since 1970-01-01T00:00:00Z."""

    __slots__ = ()

    def __add__(self, d):
        return Instant(self.nanos + d.nanos) if type(d) is Duration else NotImplemented

    __radd__ = __add__

    def __sub__(self, o):
        if type(o) is Instant:
            return Duration(self.nanos - o.nanos)
        if type(o) is Duration:
            return Instant(self.nanos - o.nanos)
        return NotImplemented

    def iso(self) -> str:
        """RFC 3339 in UTC with the shortest exact fraction: `2024-05-01T12:00:00.5Z`."""
        secs, ns = divmod(self.nanos, 1_000_000_000)
        at = datetime.fromtimestamp(secs, timezone.utc)
        base = f"{at.year:04d}" + at.strftime("-%m-%dT%H:%M:%S")  # %Y does not pad years before 1000
        if ns:
            base += "." + f"{ns:09d}".rstrip("0")
        return base + "Z"


class HostToken(_Scalar):
    """A value of a `@tool type`: the host's opaque token. Only the host makes one."""

    __slots__ = ("type_id", "token")

    def __init__(self, type_id: str, token: str):
        _set(self, "type_id", type_id)
        _set(self, "token", token)

    def __eq__(self, o):
        return type(o) is HostToken and o.type_id == self.type_id and o.token == self.token

    def __hash__(self):
        return hash((HostToken, self.type_id, self.token))

    def __lt__(self, o):
        return (self.type_id, self.token) < (o.type_id, o.token) if type(o) is HostToken else NotImplemented

    def __reduce__(self):
        return (HostToken, (self.type_id, self.token))


class Hole(_Scalar):
    """Stands where the store redacted a value (`redact`); not a value a program can use."""

    __slots__ = ("hash",)

    def __init__(self, hash: str):
        _set(self, "hash", hash)

    def __eq__(self, o):
        return type(o) is Hole and o.hash == self.hash

    def __hash__(self):
        return hash((Hole, self.hash))

    def __reduce__(self):
        return (Hole, (self.hash,))


# ---- Flow text ------------------------------------------------------------------------------

_ESC = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _show_text(s: str) -> str:
    out = ['"']
    for ch in s:
        e = _ESC.get(ch)
        if e is not None:
            out.append(e)
        elif ch < " " or ch == "\x7f" or (0x80 <= ord(ch) < 0xA0):
            out.append("\\u{%x}" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _show_bytes(b: bytes) -> str:
    out = ['b"']
    for c in b:
        if c == 0x22:
            out.append('\\"')
        elif c == 0x5C:
            out.append("\\\\")
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x09:
            out.append("\\t")
        elif c == 0x0D:
            out.append("\\r")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    out.append('"')
    return "".join(out)


def _show_decimal(d: decimal.Decimal) -> str:
    text = format(d, "f")
    # a Decimal literal has digits on both sides of the point; one without a fraction (`3`, from
    # input or rounding) is written as the std call that makes exactly it
    return text if "." in text else f"decimal.from_int({text})"


_UNITS = (
    (86_400_000_000_000, "d"),
    (3_600_000_000_000, "h"),
    (60_000_000_000, "m"),
    (1_000_000_000, "s"),
    (1_000_000, "ms"),
    (1_000, "us"),
)


def _show_duration(d: Duration) -> str:
    n = d.nanos
    if n == 0:
        return "0s"
    for size, unit in _UNITS:
        if n % size == 0:
            return f"{int_text(n // size)}{unit}"
    return f"{int_text(n)}ns"


def _type_name(type_id: str) -> str:
    return type_id.rsplit("::", 1)[-1].rsplit(".", 1)[-1]


def _show_data(v: _Data) -> str:
    cls = type(v)
    fields = cls.__flow_fields__
    if not fields:
        return cls.__flow_ctor__ + " {}" if isinstance(v, Record) else cls.__flow_ctor__
    if cls.__flow_named__:
        inner = ", ".join(f"{n}: {show(x)}" for n, x in zip(cls.__flow_field_names__, v._flow_values()))
        return f"{cls.__flow_ctor__} {{ {inner} }}"
    return f"{cls.__flow_ctor__}({', '.join(show(x) for x in v._flow_values())})"


def show(v: Any) -> str:
    """The Flow text of a value: what history, `run` and `repr` print. For data it is a Flow
    expression that reads back as an equal value where its type is expected, with std's modules
    `set`, `instant` and `decimal` in use (docs/spec/data.md "Text")."""
    t = type(v)
    f = _SHOW.get(t)
    if f is not None:
        return f(v)
    if isinstance(v, _Data):
        return _show_data(v)
    hook = getattr(t, "__flow_text__", None)
    if hook is not None:
        return hook(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return int_text(int(v))
    if isinstance(v, str):
        return _show_text(v)
    if isinstance(v, tuple):
        return _show_tuple(v)
    if callable(v):
        return f"<function {getattr(v, '__qualname__', t.__name__)}>"
    return f"<{t.__name__}>"


def _show_tuple(v: tuple) -> str:
    if len(v) == 1:
        return f"({show(v[0])},)"
    return "(" + ", ".join(show(x) for x in v) + ")"


_SHOW = {
    str: _show_text,
    int: int_text,  # an Int of any size: str() stops at Python's 4,300-digit limit
    bool: lambda b: "true" if b else "false",
    decimal.Decimal: _show_decimal,
    bytes: _show_bytes,
    type(None): lambda _: "()",
    tuple: _show_tuple,
    List: lambda xs: "[" + ", ".join(show(x) for x in xs) + "]",
    Dict: lambda d: "[" + ", ".join(f"{show(k)}: {show(x)}" for k, x in d.items()) + "]" if len(d) else "[:]",
    # std has no literal for these: the std call that builds the value (`use "std@v1/set"`)
    Set: lambda s: "set.from_list([" + ", ".join(show(x) for x in s) + "])",
    Duration: _show_duration,
    Instant: lambda i: f"instant.from_unix_nanos({int_text(i.nanos)})",
    HostToken: lambda h: f"<{_type_name(h.type_id)} {h.token}>",
    Hole: lambda h: f"<hole blake3:{h.hash}>",
}
