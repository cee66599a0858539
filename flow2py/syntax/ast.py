"""The Flow abstract syntax tree.

Every node carries a `span` (where it came from) and a unique integer `id`. Later phases never
mutate the tree: the checker keeps what it learns (types, resolutions, effects, tail positions)
in side tables keyed by `node.id` (see flow2py/check/typed.py). Nodes are plain dataclasses
so that a reader can print them, and `to_data` turns a tree into plain data without spans,
which is what program identity hashes (comments and layout never reach the tree).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields
from typing import Any

from flow2py.span import NO_SPAN, Span

_ids = itertools.count(1)


def _next_id() -> int:
    return next(_ids)


@dataclass(eq=False)
class Node:
    span: Span = field(default=NO_SPAN, kw_only=True, repr=False)
    id: int = field(default_factory=_next_id, kw_only=True, repr=False)


# ---------------------------------------------------------------------------------------------
# Type expressions (as written)


@dataclass(eq=False)
class TypeName(Node):
    """`Int`, `List<Text>`, `planner.Action`, `T` (a type parameter is also a TypeName)."""

    module: str | None  # the `use` alias when qualified: `planner` in `planner.Action`
    name: str
    args: list[TypeExpr] = field(default_factory=list)


@dataclass(eq=False)
class TupleType(Node):
    """`(A, B)`; `()` is the empty tuple, which is Unit."""

    items: list[TypeExpr]


@dataclass(eq=False)
class FunctionType(Node):
    """`(A, B) -> C`, optionally `!tool` or `!pure`. Unmarked in a parameter: the effect passes through."""

    params: list[TypeExpr]
    result: TypeExpr
    effect: str | None = None  # None | "tool" | "pure"


TypeExpr = TypeName | TupleType | FunctionType


# ---------------------------------------------------------------------------------------------
# Patterns


@dataclass(eq=False)
class WildcardPattern(Node):
    pass


@dataclass(eq=False)
class BindPattern(Node):
    name: str


@dataclass(eq=False)
class LiteralPattern(Node):
    literal: Literal


@dataclass(eq=False)
class CtorPattern(Node):
    """`None`, `Ok(x)`, `planner.Search(q)`, `Point { x, y: 0, .. }`.

    `args` is None when no parenthesised payload was written; `fields` is None when no braced
    payload was written. In `fields`, a shorthand `{ x }` is stored as ("x", BindPattern("x")).
    `rest` is True when the braced form ends with `..`.
    """

    module: str | None
    name: str
    args: list[Pattern] | None = None
    fields: list[tuple[str, Pattern]] | None = None
    rest: bool = False


@dataclass(eq=False)
class TuplePattern(Node):
    items: list[Pattern]


@dataclass(eq=False)
class ListPattern(Node):
    """`[]`, `[a, b]`, `[first, ..rest]`, `[_, ..]`: `rest` is the pattern after `..` (None if absent);
    `has_rest` says whether `..` was written at all."""

    items: list[Pattern]
    rest: Pattern | None = None
    has_rest: bool = False


@dataclass(eq=False)
class OrPattern(Node):
    alternatives: list[Pattern]


Pattern = (
    WildcardPattern | BindPattern | LiteralPattern | CtorPattern | TuplePattern | ListPattern | OrPattern
)


# ---------------------------------------------------------------------------------------------
# Expressions


@dataclass(eq=False)
class Literal(Node):
    """kind: int | decimal | text | bytes | bool | unit | duration.

    value: int (int), str of the exact digits (decimal), str (text), bytes (bytes), bool (bool),
    None (unit), int nanoseconds (duration).
    """

    kind: str
    value: Any


@dataclass(eq=False)
class Name(Node):
    """A bare identifier in expression position: a local, a top-level function, a constructor,
    or a module alias (only as the target of `.`)."""

    name: str


@dataclass(eq=False)
class FieldAccess(Node):
    """`target.name`: a qualified name (`planner.next`), a record field, or, as a callee, a method."""

    target: Expr
    name: str
    name_span: Span = field(default=NO_SPAN, kw_only=True, repr=False)


@dataclass(eq=False)
class Call(Node):
    callee: Expr
    args: list[Expr]


@dataclass(eq=False)
class FieldInit(Node):
    """`name: value` in a record literal; shorthand `name` has value None."""

    name: str
    value: Expr | None


@dataclass(eq=False)
class RecordLiteral(Node):
    """`Arrived { index, reply: research.search(item) }`, `Point { ..p, x: 1 }`.
    `ctor` is a Name or a FieldAccess (qualified)."""

    ctor: Expr
    fields: list[FieldInit]
    base: Expr | None = None


@dataclass(eq=False)
class ListLiteral(Node):
    items: list[Expr]


@dataclass(eq=False)
class DictLiteral(Node):
    """`["a": 1, "b": 2]`; `[:]` is the empty Dict."""

    entries: list[tuple[Expr, Expr]]


@dataclass(eq=False)
class TupleLiteral(Node):
    """`(a, b)`; the unit value `()` is a Literal of kind unit, never an empty TupleLiteral."""

    items: list[Expr]


@dataclass(eq=False)
class Unary(Node):
    op: str  # "-" | "!"
    operand: Expr


@dataclass(eq=False)
class Binary(Node):
    """op: || && == != < <= > >= ++ + - * / %"""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Try(Node):
    """`x?` (convert is None) or `x ? f` (the error converted through `f` before returning)."""

    operand: Expr
    convert: Expr | None = None


@dataclass(eq=False)
class Param(Node):
    name: str
    type: TypeExpr | None = None  # required on top-level functions, optional on lambdas
    name_span: Span = field(default=NO_SPAN, kw_only=True, repr=False)


@dataclass(eq=False)
class Lambda(Node):
    """`flow(r) = catalog.read(r)`, `flow(x: Int) -> Int = x + 1`."""

    params: list[Param]
    result: TypeExpr | None
    effect: str | None
    body: Expr


@dataclass(eq=False)
class Block(Node):
    """`{ stmt* }`: its value is the last statement when that is an ExprStmt, else Unit."""

    stmts: list[Stmt]


@dataclass(eq=False)
class If(Node):
    cond: Expr
    then: Block
    else_: Block | If | None = None


@dataclass(eq=False)
class MatchArm(Node):
    pattern: Pattern
    guard: Expr | None
    body: Expr


@dataclass(eq=False)
class Match(Node):
    scrutinee: Expr
    arms: list[MatchArm]


@dataclass(eq=False)
class Return(Node):
    value: Expr | None = None


Expr = (
    Literal
    | Name
    | FieldAccess
    | Call
    | RecordLiteral
    | ListLiteral
    | DictLiteral
    | TupleLiteral
    | Unary
    | Binary
    | Try
    | Lambda
    | Block
    | If
    | Match
    | Return
)


# ---------------------------------------------------------------------------------------------
# Statements


@dataclass(eq=False)
class Let(Node):
    pattern: Pattern
    type: TypeExpr | None
    value: Expr


@dataclass(eq=False)
class Guard(Node):
    """`guard cond else { ... }`: the else block must leave (return, or end in a Never value)."""

    cond: Expr
    else_: Block


@dataclass(eq=False)
class GuardLet(Node):
    """`guard let Ok(x) = e else { ... }`: binds the pattern's names for the rest of the block."""

    pattern: Pattern
    value: Expr
    else_: Block


@dataclass(eq=False)
class ExprStmt(Node):
    expr: Expr


Stmt = Let | Guard | GuardLet | ExprStmt


# ---------------------------------------------------------------------------------------------
# Declarations


@dataclass(eq=False)
class Annotation(Node):
    """`@tool`, `@test`, `@lang("list.map")`, `@fake(web.search)`. `args` are expressions."""

    name: str
    args: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class Use(Node):
    path: str


@dataclass(eq=False)
class FieldDecl(Node):
    pub: bool
    name: str
    type: TypeExpr


@dataclass(eq=False)
class CtorDecl(Node):
    """`Resolved(Text)` (positional), `Moved { from: Text, to: Text }` (named), `Empty` (neither)."""

    name: str
    positional: list[TypeExpr] | None = None
    named: list[FieldDecl] | None = None


@dataclass(eq=False)
class TypeDecl(Node):
    """kind: record | enum | alias | abstract (no body: @tool or @lang types)."""

    annotations: list[Annotation]
    pub: bool
    opaque: bool
    name: str
    type_params: list[str]
    kind: str
    fields: list[FieldDecl] = field(default_factory=list)
    ctors: list[CtorDecl] = field(default_factory=list)
    alias: TypeExpr | None = None
    name_span: Span = field(default=NO_SPAN, kw_only=True, repr=False)


@dataclass(eq=False)
class FnDecl(Node):
    """A top-level function. `body` is None for @tool and @lang functions."""

    annotations: list[Annotation]
    pub: bool
    name: str
    type_params: list[str]
    params: list[Param]
    result: TypeExpr
    effect: str | None  # None (pure) | "tool"
    body: Expr | None
    name_span: Span = field(default=NO_SPAN, kw_only=True, repr=False)


Decl = TypeDecl | FnDecl


@dataclass(eq=False)
class Module(Node):
    """One parsed file. `path` is the file path as given; `source` the text it was parsed from."""

    path: str
    uses: list[Use]
    decls: list[Decl]
    source: str = field(default="", repr=False)


# ---------------------------------------------------------------------------------------------


def to_data(node: Any) -> Any:
    """Plain data for a tree without spans, ids or source text: what program identity hashes."""
    if isinstance(node, Node):
        out: list[Any] = [type(node).__name__]
        for f in fields(node):
            if f.name in ("span", "id", "name_span", "source"):
                continue
            if f.name == "path" and isinstance(node, Module):
                continue  # where the file lies is not what it means; a `use` path is
            out.append(to_data(getattr(node, f.name)))
        return out
    if isinstance(node, (list, tuple)):
        return [to_data(x) for x in node]
    if isinstance(node, Span):
        return None
    return node


def walk(node: Any):
    """Every Node under `node` (itself included), depth first, in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Node):
            yield n
            children = []
            for f in fields(n):
                if f.name in ("span", "id", "name_span", "source"):
                    continue
                children.append(getattr(n, f.name))
            stack.extend(reversed(children))
        elif isinstance(n, (list, tuple)):
            stack.extend(reversed(n))
