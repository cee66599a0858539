"""The checked form of a pattern: what a pattern means once the checker has resolved its
constructors. It is built once for every pattern site (a `match` arm, a `let`, a `guard let`) by
post.py (`checked_pattern`), after the function was checked, and stored in `CheckedProgram.patterns` under the node
id of the site's whole pattern. Exhaustiveness (exhaust.py) derives its matrix rows from it and
codegen (codegen/lower_match.py) lowers it; neither reads an AST pattern or `prog.refs` for one.

The cases (every one carries `span`, the pattern's place in the source):

* `Wild`: `_`; also what a bare `..` in a list pattern stands for. Matches anything.
* `Bind(name, binder)`: a name. Matches anything and binds it; `binder` is the BindPattern's
  node id, the id a `LocalRef` names and the key of the local's type in `prog.types`.
* `Lit(kind, value)`: a literal; `kind` and `value` as in `ast.Literal` (a decimal's value is
  its digits as written).
* `Tuple(items)`: a tuple of `len(items)` values.
* `List(items, rest)`: a list. `rest` is None without `..` (exactly `len(items)` elements);
  with `..` it is the pattern after it (`Wild` for a bare `..`), matched against the list of
  the elements after `items`. Only `Wild` and `Bind` are supported there: exhaustiveness does
  not count any other as covering, and codegen refuses it.
* `Ctor(decl, name, args, fields)`: a constructor or record pattern. `decl` is the type
  declaration id, `name` the constructor's name (the record's own name for a record); `args`
  the positional sub-patterns as written, None when no `(...)` was written; `fields` the
  `(field name, sub-pattern)` pairs in source order, None when no `{...}` was written (fields
  left out with `..` match anything).
* `Or(alts)`: `a | b | ...`, the alternatives in order; each binds the same names.
* `Unchecked`: a constructor pattern the checker could not resolve (it reported why). It never
  covers a value; a program holding one is not generated.
"""

from __future__ import annotations

from dataclasses import dataclass

from flow2py.syntax import ast


@dataclass(frozen=True, slots=True)
class Wild:
    span: ast.Span


@dataclass(frozen=True, slots=True)
class Bind:
    name: str
    binder: int  # the BindPattern's node id
    span: ast.Span


@dataclass(frozen=True, slots=True)
class Lit:
    kind: str  # int | decimal | text | bytes | bool | unit | duration
    value: object  # as in ast.Literal
    span: ast.Span


@dataclass(frozen=True, slots=True)
class Tuple:
    items: tuple[Pattern, ...]
    span: ast.Span


@dataclass(frozen=True, slots=True)
class List:
    items: tuple[Pattern, ...]
    rest: Pattern | None  # None: no `..`; Wild for a bare `..`
    span: ast.Span


@dataclass(frozen=True, slots=True)
class Ctor:
    decl: str  # the type declaration id
    name: str  # the constructor's name; a record's own name
    args: tuple[Pattern, ...] | None  # positional, as written; None: no `(...)`
    fields: tuple[tuple[str, Pattern], ...] | None  # in source order; None: no `{...}`
    span: ast.Span


@dataclass(frozen=True, slots=True)
class Or:
    alts: tuple[Pattern, ...]
    span: ast.Span


@dataclass(frozen=True, slots=True)
class Unchecked:
    span: ast.Span


Pattern = Wild | Bind | Lit | Tuple | List | Ctor | Or | Unchecked

#: the literal kinds whose values are Python constants a `case` can compare directly
CONSTANT_KINDS = frozenset(("int", "text", "bytes", "bool", "unit"))


def irrefutable_names(p: Pattern) -> bool:
    """A `_` or a name: matches every value without a test."""
    return type(p) is Wild or type(p) is Bind


def sub_patterns(p: Pattern) -> list[Pattern]:
    """The patterns directly inside `p`, in source order."""
    k = type(p)
    if k is Tuple:
        return list(p.items)
    if k is List:
        return list(p.items) + ([p.rest] if p.rest is not None else [])
    if k is Ctor:
        return list(p.args or ()) + [fp for _, fp in (p.fields or ())]
    if k is Or:
        return list(p.alts)
    return []


def walk(p: Pattern):
    """`p` and every pattern inside it, depth first, in source order."""
    stack = [p]
    while stack:
        q = stack.pop()
        yield q
        stack.extend(reversed(sub_patterns(q)))
