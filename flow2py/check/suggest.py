"""Every "did you mean": what a misspelled or foreign name most likely meant, and the fix.

A name that resolves to nothing is compared with what the program could have meant by it, of
the kind the place wants (a value, a type, a constructor, a module, a field, a method):

- the habits of other languages first, by exact spelling (`True` is `true`, `null` is `None`,
  `string` is `Text`, `push` is `list.append`, `.unwrap()` has no Flow form): a table, below;
- then the candidates in scope, each with where it is defined: locals, the module's
  declarations, the prelude, what each imported module exports (offered qualified, `next` as
  `planner.next`), and what a std module exports that the module has not imported (offered with
  the `use` to add; exact names only, so a typo never reaches into an unimported module).

Candidates are ranked by edit distance (optimal string alignment, so a swap of two letters is
one edit) against a threshold that grows with the name's length, then by kind (the kind the
place wants first) and case (`Stop` for `stp`, but `stop` first). Only the best are kept; a
fix is safe when exactly one is, and the caller knows of no reason it would not fit (a
constructor of another type than the one expected is never offered at all).

This module imports nothing of the checker: the module graph (for `use` paths) and the body
walk both use it, and what it is given is plain data.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from flow2py.diagnostics import Edit, Fix, Related
from flow2py.span import Span

VALUE, TYPE, CTOR, MODULE, FIELD, METHOD = "value", "type", "constructor", "module", "field", "method"


@dataclass(frozen=True)
class Candidate:
    """Something the misspelling may have meant: `text` is written in its place."""

    text: str
    kind: str
    where: Span | None = None  # where it is defined, for the "defined here" note
    use_path: str | None = None  # a `use` the module must add for `text` to resolve
    target: tuple = ()  # what it refers to: ("local", binding) | ("decl", id) | ("alias", name)
    fits: bool = True  # nothing known says it would not fit the place (a safe fix needs it)
    note: str | None = None  # a habit's explanation, said instead of "did you mean"
    exact: bool = False  # a habit with one Flow equivalent: the fix is the answer, not a guess

    @property
    def key(self) -> str:
        return self.text.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Suggestion:
    """The best candidates for one misspelling (empty: nothing close)."""

    name: str
    cands: tuple[Candidate, ...] = ()
    note: str | None = None  # what Flow writes instead when there is nothing to replace it with

    def __bool__(self) -> bool:
        return bool(self.cands) or self.note is not None

    @property
    def unique(self) -> Candidate | None:
        return self.cands[0] if len(self.cands) == 1 else None

    def said(self) -> Suggestion:
        """What its message says of it (check/messages.py `_name_tail`), and only that: the
        candidates without their places and targets, so that a diagnostic's data holding it
        compares by value."""
        cands = tuple(Candidate(c.text, c.kind, use_path=c.use_path, note=c.note) for c in self.cands)
        return Suggestion(self.name, cands, self.note)

    def related(self) -> list[Related]:
        out = []
        for c in self.cands:
            if c.where is not None and c.where.line:
                verb = "imported" if c.kind == MODULE else "defined"
                out.append(Related(f"`{c.text}` is {verb} here", c.where))
        return out

    def fixes(self, span: Span, uses: UseSite | None = None, safe_ok: bool = True) -> list[Fix]:
        """A fix replacing `span` by each candidate (adding its `use`); safe when it is the only
        one, it fits, and `safe_ok` (the caller's say)."""
        if span.end <= span.start:
            return []
        out = []
        one = len(self.cands) == 1
        for c in self.cands:
            if c.text == self.name:  # the name is right: only its module's `use` is missing
                if c.use_path is None or uses is None:
                    continue
                edits = [uses.edit(c.use_path)]
                msg = f'add `use "{c.use_path}"`'
            else:
                edits = [Edit(span, c.text)]
                msg = f"replace `{self.name}` with `{c.text}`"
            if c.use_path is not None and c.text != self.name:
                if uses is None:
                    continue
                edits.append(uses.edit(c.use_path))
                msg += f' and add `use "{c.use_path}"`'
            out.append(Fix(msg, tuple(edits), one and c.fits and safe_ok))
        return out


# -- ranking --------------------------------------------------------------------------------


def distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps."""
    if a == b:
        return 0
    la, lb = len(a), len(b)
    prev2: list[int] = []
    prev = list(range(lb + 1))
    for i in range(1, la + 1):
        cur = [i] + [0] * lb
        for j in range(1, lb + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[lb]


def limit(name: str) -> int:
    """How many edits a misspelling of `name` may be away from what it meant: one for a short
    name (so `Action` is not `Option`, two edits off), more as names grow."""
    n = len(name)
    if n <= 1:
        return 0
    if n <= 7:
        return 1
    if n <= 12:
        return 2
    return 3


def snake(name: str) -> str:
    """`isEmpty` -> `is_empty`, `startsWith` -> `starts_with` (Flow's functions are snake_case)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def rank(name: str, cands, kind: str, most: int = 3) -> list[Candidate]:
    """The best of `cands` for the misspelling `name` at a place wanting `kind`."""
    lim = limit(name)
    low = name.lower()
    alt = snake(name).lower()
    scored: dict[str, tuple[float, Candidate]] = {}
    n, n_alt = len(low), len(alt)
    for c in cands:
        key = c.key
        if key == name and c.use_path is None and "." not in c.text:
            continue  # the name itself: whatever it is, it is not what was meant
        k = len(key)
        if abs(k - n) > lim and abs(k - n_alt) > lim:
            continue  # more edits apart than allowed whatever they are
        kl = key.lower()
        d = min(distance(low, kl), distance(alt, kl)) if alt != low else distance(low, kl)
        if d > lim:
            continue
        if c.use_path is not None and d != 0:
            continue  # an unimported module is offered for its exact names only
        score = 2.0 * d
        if c.kind != kind:
            score += 1
        if key[:1].isupper() != name[:1].isupper():
            score += 1 if key.lower() != low else 0.5
        elif key != name and key.lower() == low:
            score += 0.25
        if c.use_path is not None:
            score += 0.5
        prev = scored.get(c.text)
        if prev is None or score < prev[0]:
            scored[c.text] = (score, c)
    if not scored:
        return _by_prefix(name, cands, kind)
    best = min(s for s, _ in scored.values())
    return sorted((c for s, c in scored.values() if s == best), key=lambda c: c.text)[:most]


def _by_prefix(name: str, cands, kind: str) -> list[Candidate]:
    """When nothing is a few edits away: the one candidate of the kind wanted that `name`
    lengthens or shortens (`Warning` for `Warn`, `Err` for `Error`), at least 3 letters shared."""
    hits = prefix_hits(name, cands, kind)
    return hits if len(hits) == 1 else []


def prefix_hits(name: str, cands, kind: str) -> list[Candidate]:
    """Every candidate of the kind wanted that `name` lengthens or shortens (3 letters shared at
    least): the checker picks among them by type (`cust` for the one local of the type wanted)."""
    low = name.lower()
    hits = {}
    for c in cands:
        kl = c.key.lower()
        if c.kind != kind or kl == low or c.use_path is not None or min(len(kl), len(low)) < 3:
            continue
        if kl.startswith(low) or low.startswith(kl):
            hits[c.text] = c
    return list(hits.values())


def suggest(name: str, cands, kind: str, member: bool = False) -> Suggestion:
    """A habit of another language when `name` is one, else the best candidates (`member`: the
    candidates are a module's exports, where no local can be what was misspelled)."""
    habit = habits(name, kind, cands)
    own_first = name in _VALUE_HABITS or name in _PRINTS
    if (
        habit is not None
        and kind in (VALUE, CTOR)
        and own_first
        and name not in _LITERAL_SPELLINGS
        and not member
    ):
        # `count` or `size` may as well be a misspelled local: what the program declares wins
        # (not a module's member spelled as another language's method, `dict.getOrDefault`:
        # its candidates are the module's, which never hold a local)
        own = [c for c in rank(name, cands, kind) if "." not in c.text]
        if own:
            return Suggestion(name, tuple(own))
    if habit is not None:
        return habit
    return Suggestion(name, tuple(rank(name, cands, kind)))


# -- habits of other languages --------------------------------------------------------------

# value name -> (what Flow writes, the `use` it needs or None, why; None: no single spelling)
_VALUE_HABITS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "True": (("true",), None),
    "TRUE": (("true",), None),
    "False": (("false",), None),
    "FALSE": (("false",), None),
    "null": (("None",), "Flow has no `null`: an absent value is `None` (an `Option`)"),
    "NULL": (("None",), "Flow has no `null`: an absent value is `None` (an `Option`)"),
    "nil": (("None",), "Flow has no `nil`: an absent value is `None` (an `Option`)"),
    "Nil": (("None",), "Flow has no `nil`: an absent value is `None` (an `Option`)"),
    "none": (("None",), None),
    "Nothing": (("None",), None),
    "Just": (("Some",), None),
    "Error": (("Err",), None),
    "Failure": (("Err",), None),
    "Success": (("Ok",), None),
    "undefined": (("None",), "Flow has no `undefined`: an absent value is `None` (an `Option`)"),
    "len": (("list.length", "text.length"), "Flow has no `len`: write `xs.length()`"),
    "length": (("list.length", "text.length"), "write `xs.length()`, or qualify it"),
    "size": (("dict.size", "set.size"), None),
    "count": (("list.length", "text.length"), None),
    "push": (("list.append",), None),
    "append": (("list.append",), None),
    "push_back": (("list.append",), None),
    "str": (("data.to_text",), None),
    "to_string": (("data.to_text",), None),
    "toString": (("data.to_text",), None),
    "String": (("data.to_text",), None),
    # Python's conversions: `float(n)` is the Int's `to_decimal`; `int(x)` truncates, which
    # Flow leaves to a choice (`floor` rounds down, `round` to the nearest; a Text is parsed)
    # (Go's `float64(n)`, `int(d)`, `string(n)` are the same conversions)
    **dict.fromkeys(
        ["float", "double", "float64", "float32", "Decimal", "decimal", "BigDecimal"],
        (("int.to_decimal",), None),
    ),
    **dict.fromkeys(
        ["int", "int64", "int32"],
        (
            (),
            "Flow has no `{name}(...)`: a Decimal's whole part is `d.floor()` (or `d.round(0)`), "
            "the number a Text holds `int.parse(t)` (an Option)",
        ),
    ),
    "string": (("data.to_text",), None),
    # a Duration counted in a unit std@v1/duration has no function for (Kotlin's
    # `inWholeMinutes`, `to_hours`): its seconds divided
    **{
        f"{verb}{unit}{plural}": (
            (),
            f"std@v1/duration counts a Duration in seconds, not in {unit}s: `duration.to_seconds(d) / {n}`",
        )
        for unit, n in (("minute", 60), ("hour", 3600), ("day", 86400))
        for verb in ("to_", "as_", "in_")
        for plural in ("", "s")
    },
}


def habit_targets(name: str) -> tuple[str, ...]:
    """The std functions another language's function `name(x)` is in Flow (`float` ->
    `int.to_decimal`); () when it has none."""
    h = _VALUE_HABITS.get(name)
    return tuple(t for t in h[0] if "." in t) if h is not None else ()


def method_habit(name: str) -> set[str]:
    """The method names another language's function `name(x)` is in Flow (`len` -> `length`),
    when every spelling Flow has for it is a std module's function (`list.length`)."""
    h = _VALUE_HABITS.get(name)
    if h is None or not all("." in t for t in h[0]):
        return set()
    return {t.rsplit(".", 1)[1] for t in h[0]}


# spellings of Flow's literals and `None`: never a misspelling of something the program declares
_LITERAL_SPELLINGS = {"True", "TRUE", "False", "FALSE", "null", "NULL", "nil", "Nil", "none", "undefined"}
# other languages' "no value": where a List or Dict is expected, its empty value (`[]`, `[:]`)
ABSENT_SPELLINGS = frozenset({"null", "NULL", "nil", "Nil", "none", "undefined", "Nothing"})

_NO_PRINT = (
    "Flow has no `{name}`: a program touches the world only through Tool calls; declare one "
    "(`@tool flow {name}(line: Text) -> Result<Unit, E>`) or return the text as the result"
)
_PRINTS = {"print", "println", "printf", "puts", "echo", "console", "log", "debug", "dbg"}

_TYPE_HABITS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(["string", "str", "String", "&str", "char", "Char", "Str"], ("Text",)),
    **dict.fromkeys(
        ["int", "integer", "Integer", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32"]
        + ["u64", "u128", "usize", "long", "Long", "bigint", "BigInt", "number"],
        ("Int",),
    ),
    **dict.fromkeys(["float", "double", "f32", "f64", "Float", "Double", "decimal", "real"], ("Decimal",)),
    "Number": ("Int", "Decimal"),
    **dict.fromkeys(["bool", "boolean", "Boolean"], ("Bool",)),
    **dict.fromkeys(["void", "Void", "unit", "None", "NoneType", "()"], ("Unit",)),
    **dict.fromkeys(["list", "Vec", "Array", "array", "vector", "Vector", "ArrayList", "Seq"], ("List",)),
    **dict.fromkeys(["dict", "Map", "HashMap", "map", "object", "Object", "Record"], ("Dict",)),
    **dict.fromkeys(["set", "HashSet"], ("Set",)),
    **dict.fromkeys(["Maybe", "Optional", "optional"], ("Option",)),
    **dict.fromkeys(["Either", "Expected"], ("Result",)),
    **dict.fromkeys(["bytes", "bytearray", "Buffer", "ByteArray"], ("Bytes",)),
}

# method name -> (Flow's method names, the arity changes: never a safe fix, the note)
_METHOD_HABITS: dict[str, tuple[tuple[str, ...], bool, str | None]] = {
    **dict.fromkeys(
        ["unwrap", "expect", "get_or_throw", "unwrap_unchecked", "value", "get_value"],
        (
            ("unwrap_or",),
            True,
            "Flow has no `{name}`: a missing value is data; `match` on it, use `?` in a function that "
            "returns a Result, or `.unwrap_or(default)`",
        ),
    ),
    **dict.fromkeys(["len", "size", "count", "length", "Length", "Count"], (("length", "size"), False, None)),
    **dict.fromkeys(["push", "push_back", "add", "append", "pushBack"], (("append",), False, None)),
    **dict.fromkeys(["unshift", "push_front"], (("prepend",), False, None)),
    **dict.fromkeys(["set", "put"], (("insert",), False, None)),
    **dict.fromkeys(["toString", "to_string", "str", "toStr", "string"], (("to_text",), False, None)),
    **dict.fromkeys(["toUpperCase", "upper", "uppercase", "toUpper"], (("to_upper",), False, None)),
    **dict.fromkeys(["toLowerCase", "lower", "lowercase", "toLower"], (("to_lower",), False, None)),
    **dict.fromkeys(["strip", "trim_whitespace"], (("trim",), False, None)),
    **dict.fromkeys(["as_string", "as_str", "asString", "as_String"], (("as_text",), False, None)),
    **dict.fromkeys(["stringify", "dumps", "to_json", "serialize"], (("render",), False, None)),
    **dict.fromkeys(["loads", "from_json", "deserialize"], (("parse",), False, None)),
    **dict.fromkeys(["startswith"], (("starts_with",), False, None)),
    **dict.fromkeys(["endswith"], (("ends_with",), False, None)),
    **dict.fromkeys(
        ["includes", "has", "contains_key", "has_key", "containsKey"], (("contains",), False, None)
    ),
    **dict.fromkeys(["forEach", "for_each", "iter"], (("each",), False, None)),
    # a value or a default: an Option's or Result's `unwrap_or`, a Dict's `get_or`
    **dict.fromkeys(
        ["get_or", "getOrElse", "get_or_else", "orElse", "getOrDefault", "get_or_default"],
        (("unwrap_or", "get_or"), False, None),
    ),
    **dict.fromkeys(["indexOf", "find_index", "index"], (("index_of",), False, None)),
    **dict.fromkeys(["reduce", "foldl", "inject"], (("fold",), True, None)),
    **dict.fromkeys(["sorted"], (("sort",), False, None)),
    **dict.fromkeys(["reversed"], (("reverse",), False, None)),
    **dict.fromkeys(["is_some", "isSome", "is_present"], (("is_some",), False, None)),
    # Java's and Kotlin's `getOrDefault(key, default)`, Rust's `unwrap_or`-like getters
    **dict.fromkeys(["getOrDefault", "get_or_default", "getOr"], (("get_or",), False, None)),
    # Scala's `headOption`, Kotlin's `firstOrNull`, Haskell's `head`: Flow's is an Option
    **dict.fromkeys(["head", "headOption", "head_option", "firstOrNull"], (("first",), False, None)),
    **dict.fromkeys(["lastOption", "last_option", "lastOrNull"], (("last",), False, None)),
    # C#'s LINQ (`Where`, `Select`, ...), Ruby's `select`/`detect`, Scala's `exists`/`forall`,
    # JavaScript's `some`/`every`, Swift's `hasPrefix`: the same arguments in the same order
    **dict.fromkeys(["Where", "where", "select", "filterWhere"], (("filter",), False, None)),
    **dict.fromkeys(["Select"], (("map",), False, None)),
    **dict.fromkeys(["SelectMany", "flatMap", "FlatMap", "flatmap"], (("flat_map",), False, None)),
    **dict.fromkeys(["Any", "some", "exists", "anyMatch"], (("any",), False, None)),
    **dict.fromkeys(["All", "every", "forall", "allMatch"], (("all",), False, None)),
    **dict.fromkeys(["OrderBy", "sortBy", "sortedBy", "sort_by_key", "orderBy"], (("sort_by",), False, None)),
    **dict.fromkeys(["FirstOrDefault", "findFirst", "First"], (("first",), False, None)),
    **dict.fromkeys(["LastOrDefault", "Last"], (("last",), False, None)),
    **dict.fromkeys(["detect", "Find", "find_first"], (("find",), False, None)),
    **dict.fromkeys(["Aggregate"], (("fold",), False, None)),
    **dict.fromkeys(["Contains"], (("contains",), False, None)),
    **dict.fromkeys(["Reverse", "reverse_list"], (("reverse",), False, None)),
    **dict.fromkeys(["Concat", "extend"], (("concat",), False, None)),
    **dict.fromkeys(["Zip"], (("zip",), False, None)),
    **dict.fromkeys(
        ["ToUpper", "ToUpperInvariant", "uppercased", "to_uppercase"], (("to_upper",), False, None)
    ),
    **dict.fromkeys(
        ["ToLower", "ToLowerInvariant", "lowercased", "to_lowercase"], (("to_lower",), False, None)
    ),
    **dict.fromkeys(["Trim", "trimmed"], (("trim",), False, None)),
    **dict.fromkeys(["StartsWith", "startsWith", "hasPrefix"], (("starts_with",), False, None)),
    **dict.fromkeys(["EndsWith", "endsWith", "hasSuffix"], (("ends_with",), False, None)),
    **dict.fromkeys(["Split"], (("split",), False, None)),
    **dict.fromkeys(["Replace"], (("replace",), False, None)),
    **dict.fromkeys(["IndexOf"], (("index_of",), False, None)),
    **dict.fromkeys(["isEmpty", "IsEmpty", "empty"], (("is_empty",), False, None)),
    **dict.fromkeys(["HasValue", "isDefined", "nonEmpty"], (("is_some",), False, None)),
    **dict.fromkeys(["keySet", "Keys"], (("keys",), False, None)),
    **dict.fromkeys(["Values"], (("values",), False, None)),
    **dict.fromkeys(["ForEach"], (("each",), False, None)),
    # JavaScript's `n.toFixed(2)`, Python's `round(x, 2)` as a method: a Decimal's `round(places)`
    **dict.fromkeys(["toFixed", "setScale", "Round"], (("round",), False, None)),
}


def method_property(name: str) -> list[str]:
    """Flow's functions for another language's property `name` read as a field (Swift's
    `xs.count`, `s.isEmpty`): the method habits' names, when they keep the arity."""
    h = _METHOD_HABITS.get(name)
    return list(h[0]) if h is not None and not h[1] else []


def habits(name: str, kind: str, cands) -> Suggestion | None:
    """What another language's spelling is in Flow, among `cands` where they say what exists
    (a habit naming a function the program cannot reach is dropped)."""
    by_text = {c.text: c for c in cands}
    if kind in (VALUE, CTOR):
        if name in _PRINTS:
            return Suggestion(name, (), _NO_PRINT.format(name=name))
        h = _VALUE_HABITS.get(name)
        if h is None:
            # a module's member spelled as another language's function (`text.strip`,
            # `json.stringify`): the method habits, among the module's exports
            m = _METHOD_HABITS.get(name)
            found = [by_text[t] for t in m[0] if t in by_text and t != name] if m else []
            return Suggestion(name, tuple(found)) if found and not m[1] else None
        texts, why = h
        why = why.format(name=name) if why else why
        found = []
        for t in texts:
            c = by_text.get(t)
            if c is None and t in ("true", "false"):
                c = Candidate(t, VALUE, exact=True)
            if c is not None:
                found.append(c)
        if not found:
            # what Flow writes is not possible here (`None` where a List is expected): still say
            # what Flow has instead, without a fix
            return Suggestion(name, (), why) if why else None
        if len(found) == 1 and why:
            found = [Candidate(**{**found[0].__dict__, "note": why})]
        return Suggestion(name, tuple(found), why if len(found) > 1 else None)
    if kind == TYPE:
        texts = _TYPE_HABITS.get(name)
        if texts is None:
            return None
        found = [by_text[t] for t in texts if t in by_text]
        return Suggestion(name, tuple(found)) if found else None
    if kind == METHOD:
        h = _METHOD_HABITS.get(name)
        if h is None:
            return None
        texts, arity, why = h
        found = [by_text[t] for t in texts if t in by_text and t != name]
        if not found:
            return Suggestion(name, (), why.format(name=name)) if why else None
        if arity:
            found = [Candidate(**{**c.__dict__, "fits": False}) for c in found]
        if why:
            found = [Candidate(**{**c.__dict__, "note": why.format(name=name)}) for c in found]
        return Suggestion(name, tuple(found))
    return None


# -- where a `use` goes ------------------------------------------------------------------


@dataclass(frozen=True)
class UseSite:
    """Where a module's missing `use` lines are inserted: after its last `use`, else at the top."""

    file: str
    offset: int  # where the text goes
    line: int
    column: int
    after_use: bool  # inserted after a `use` line (so a newline first)

    def edit(self, path: str) -> Edit:
        text = f'\nuse "{path}"' if self.after_use else f'use "{path}"\n\n'
        return Edit(
            Span(self.file, self.line, self.column, self.line, self.column, self.offset, self.offset), text
        )


def use_site(module) -> UseSite | None:
    """Where `module` (an ast.Module) takes a new `use`, or None when its text is not known."""
    src = module.source or ""
    uses = module.uses
    if uses:
        sp = uses[-1].span
        if sp.end <= sp.start or src[sp.start : sp.end].rstrip() == "":
            return None
        return UseSite(sp.file, sp.end, sp.end_line, sp.end_column, True)
    file = module.decls[0].span.file if module.decls else module.path
    return UseSite(file, 0, 1, 1, False)


def sub_span(span: Span, source: str, text: str) -> Span | None:
    """The part of `span` (on one line) where `text` starts it, when the source says so."""
    if span.end <= span.start or source[span.start : span.start + len(text)] != text:
        return None
    n = len(text)
    return Span(span.file, span.line, span.column, span.line, span.column + n, span.start, span.start + n)


# -- module paths (E103, E113) ------------------------------------------------------------


def path_candidates(path: str, std_version: str, std_names, local_names) -> list[str]:
    """What a `use` path that does not resolve most likely meant: `./planer` is `./planner`,
    a std path without its version and `list` are `std@v1/list`, `std@v2/list` is `std@v1/list`, a `.flow` suffix
    goes. `std_names`: std's module names; `local_names`: the `.flow` files beside the module,
    and those in the folders below it as `folder/name`."""
    STD_VERSION = std_version
    p = path.strip()
    if p.endswith(".flow"):
        p = p[: -len(".flow")]
    std = set(std_names)
    local = set(local_names)
    out: list[str] = []

    def near(name: str, names) -> list[str]:
        if name in names:
            return [name]
        lim = limit(name)
        ds = [(distance(name, n), n) for n in names]
        ds = [(d, n) for d, n in ds if d <= lim]
        if not ds:
            return []
        best = min(d for d, _ in ds)
        return sorted(n for d, n in ds if d == best)

    if p.startswith(("./", "../")):
        head, _, last = p.rpartition("/")
        if head in (".", ""):
            out += [f"./{n}" for n in near(last, {n for n in local if "/" not in n})]
        elif p.startswith("./"):
            # a path into a folder below: the whole path against the modules there (`./libs/x`
            # for `./lib/x`)
            out += [f"./{n}" for n in near(p[2:], {n for n in local if "/" in n})]
        if not out and last in std:
            out.append(f"{STD_VERSION}/{last}")
        return out if [path] != out else []
    if p.startswith("std"):
        _, _, rest = p.partition("/")
        if rest:
            out += [f"{STD_VERSION}/{n}" for n in near(rest, std)]
        return [x for x in out if x != path]
    if "/" not in p:
        out += [f"{STD_VERSION}/{n}" for n in near(p, std) if n == p]
        out += [f"./{n}" for n in near(p, local) if n == p]
        return out
    return []


# -- what a module can see (given the checker's Declarations and a module's ModEnv) ---------


def _decl_span(node) -> Span | None:
    if node is None:
        return None
    ns = getattr(node, "name_span", None)
    return ns if ns is not None and ns.line else node.span


def _ctor_span(info, name: str) -> Span | None:
    for c in getattr(info.node, "ctors", None) or ():
        if c.name == name:
            return c.span
    return _decl_span(info.node)


def _std_modules(decls, env):
    """(name, env) of each std module `env` has not imported under that name: what a missing
    `use "std@v1/name"` would bring."""
    prefix = "std@v1/"
    for key, menv in decls.envs.items():
        if not menv.is_std or not key.startswith(prefix) or menv is env:
            continue
        name = key[len(prefix) :]
        if "/" in name or name in env.lm.aliases:
            continue
        yield name, key, menv


def _imported(decls, env):
    for alias, key in env.lm.aliases.items():
        menv = decls.envs.get(key) if key else None
        if menv is not None and menv is not env:
            yield alias, menv


def value_candidates(decls, env, scopes=(), expected_decl: str | None = None) -> list[Candidate]:
    """Locals (`scopes`, innermost last), this module's functions and constructors, the prelude's
    constructors, imported modules' public ones (qualified) and std's not imported (with the
    `use`). A constructor of another type than `expected_decl` (when known) is left out."""
    out: list[Candidate] = []
    for scope in scopes:
        for n, b in scope.items():
            out.append(Candidate(n, VALUE, b.span, target=(("local", b),)))
    return out + _cached(
        decls, ("values", env.key, expected_decl), lambda: _module_values(decls, env, expected_decl)
    )


def _cached(decls, key, make) -> list[Candidate]:
    """What a module can see changes not while its bodies are checked: built once a module (a
    file with a thousand misspellings asks a thousand times)."""
    cache = decls.suggest_cache
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = make()
    return hit


def _module_values(decls, env, expected_decl) -> list[Candidate]:
    out: list[Candidate] = []
    for n, fn in env.cm.fns.items():
        out.append(Candidate(n, VALUE, _decl_span(fn.node), target=(("decl", fn.decl),)))

    def ctor(text, info, c, use_path=None, alias=None):
        if expected_decl is not None and info.decl != expected_decl:
            return
        tgt = (("decl", info.decl),) + ((("alias", alias),) if alias else ())
        out.append(Candidate(text, CTOR, _ctor_span(info, c.name), use_path, tgt))

    for n, (info, c) in env.ctors.items():
        ctor(n, info, c)
    for n, (info, c) in decls.prelude_ctors.items():
        if n not in env.ctors:
            ctor(n, info, c)
    for alias, menv in _imported(decls, env):
        for n, fn in menv.cm.fns.items():
            if fn.pub:
                tgt = (("decl", fn.decl), ("alias", alias))
                out.append(Candidate(f"{alias}.{n}", VALUE, _decl_span(fn.node), target=tgt))
        for n, (info, c) in menv.ctors.items():
            if info.pub and not info.opaque:
                ctor(f"{alias}.{n}", info, c, alias=alias)
    for name, key, menv in _std_modules(decls, env):
        for n, fn in menv.cm.fns.items():
            if fn.pub:
                out.append(Candidate(f"{name}.{n}", VALUE, _decl_span(fn.node), key, (("decl", fn.decl),)))
    return out


def type_candidates(decls, env) -> list[Candidate]:
    """This module's types, the prelude's, imported modules' public ones (qualified) and std's
    not imported (with the `use`)."""
    return _cached(decls, ("types", env.key), lambda: _module_types(decls, env))


def _module_types(decls, env) -> list[Candidate]:
    out = [
        Candidate(n, TYPE, _decl_span(i.node), target=(("decl", i.decl),)) for n, i in env.cm.types.items()
    ]
    for n, i in decls.prelude_types.items():
        if n not in env.cm.types:
            out.append(Candidate(n, TYPE, _decl_span(i.node), target=(("decl", i.decl),)))
    for alias, menv in _imported(decls, env):
        for n, i in menv.cm.types.items():
            if i.pub:
                tgt = (("decl", i.decl), ("alias", alias))
                out.append(Candidate(f"{alias}.{n}", TYPE, _decl_span(i.node), target=tgt))
    for name, key, menv in _std_modules(decls, env):
        for n, i in menv.cm.types.items():
            if i.pub and n not in decls.prelude_types:
                out.append(Candidate(f"{name}.{n}", TYPE, _decl_span(i.node), key, (("decl", i.decl),)))
    return out


def module_candidates(decls, env, member: str | None = None) -> list[Candidate]:
    """The module's aliases (where each is imported) and std's modules it has not imported (with
    the `use`; when `member` is given, only those that declare it)."""
    out = []
    for alias, key in env.lm.aliases.items():
        u = env.lm.alias_uses.get(alias)
        out.append(Candidate(alias, MODULE, u.span if u else None, target=(("alias", alias),)))
    for name, key, menv in _std_modules(decls, env):
        if member is None or member in menv.cm.fns or member in menv.cm.types or member in menv.ctors:
            out.append(Candidate(name, MODULE, None, key))
    std = {c.text for c in out if c.use_path}
    for name in _cached(decls, ("beside", env.key), lambda: _beside(env)):
        if name not in env.lm.aliases and name not in std:
            # a file beside this one, not imported: what it declares is not known, so not safe
            out.append(Candidate(name, MODULE, None, f"./{name}", fits=False))
    return out


def _beside(env) -> list[Candidate]:
    """The `.flow` files beside a module of the program's own (not std, not a repository's)."""
    lm = env.lm
    if lm.is_std or lm.repo is not None:
        return []
    try:
        names = os.listdir(os.path.dirname(os.path.abspath(lm.file)))
    except OSError:
        return []
    own = os.path.basename(lm.file)
    return sorted(
        n[:-5]
        for n in names
        if n.endswith(".flow") and n != own and re.match(r"^[a-z][A-Za-z0-9_]*\.flow$", n)
    )


def failed_alias_near(env, name: str) -> bool:
    """Whether `name` is (close to) the alias of a `use` that did not resolve (E103 said so: a
    use of it would only repeat that)."""
    for alias, key in env.lm.aliases.items():
        if key is None and distance(alias, name) <= max(limit(name), 1):
            return True
    return False


def count_as_used(decls, env, sugg: Suggestion, skip: str | None = None) -> None:
    """A misspelled use that has a suggestion counts as a use of what it suggests: the import,
    the declaration or the binding it meant is not also reported unused (E112, E405, E404)."""
    for c in sugg.cands:
        for kind, v in c.target:
            if kind == "local":
                v.used = True
            elif kind == "decl" and v != skip:
                decls.used.add(v)
            elif kind == "alias":
                env.used_aliases.add(v)


# -- `pub` in the other module (E109) -------------------------------------------------------


def _line_col(src: str, off: int) -> tuple[int, int]:
    return src.count("\n", 0, off) + 1, off - (src.rfind("\n", 0, off) + 1) + 1


def _insert(file: str, src: str, off: int, text: str) -> Edit:
    line, col = _line_col(src, off)
    return Edit(Span(file, line, col, line, col, off, off), text)


def pub_edit(lm, node, field: str | None = None) -> Edit | None:
    """The edit that writes `pub` on declaration `node` of module `lm` (or on its field
    `field`), or None when that module is not the author's to edit (std, a repository module
    from the cache) or its text does not say where."""
    if lm is None or lm.is_std or lm.repo is not None or node is None:
        return None
    src = lm.ast.source or ""
    if field is not None:
        for f in getattr(node, "fields", None) or ():
            if f.name == field and not f.pub:
                sp = f.span
                if sp.end > sp.start and src[sp.start : sp.start + len(field)] == field:
                    return _insert(sp.file, src, sp.start, "pub ")
        return None
    ns = getattr(node, "name_span", None)
    if ns is None or not ns.line or getattr(node, "pub", True):
        return None
    head = src[node.span.start : ns.start]
    m = re.search(r"(?:\bopaque\s+)?\b(?:flow|type)\s+$", head)
    if m is None:
        return None
    return _insert(ns.file, src, node.span.start + m.start(), "pub ")


def pub_fix(what: str, edits) -> list[Fix]:
    """A safe fix writing `pub` (in the other module's file) when every edit is known."""
    edits = tuple(edits)
    if not edits or any(e is None for e in edits):
        return []
    return [Fix(f"make {what} `pub` in its module", edits, True)]
