"""The small records of the body walk (infer.py): what a name resolves to, a local's binding,
the function (or lambda) being walked, why an expected type is expected (`Why`, or `LazyWhy`
when its text is only worth building if a mismatch reports it), and what the walk leaves for
later: matches, `let` patterns and tail positions for post.py, data requirements and
instantiations of generic functions for the driver."""

from __future__ import annotations

from dataclasses import dataclass, field

from flow2py.check.typed import PURE, CtorInfo, Effect, FnInfo, TypeInfo
from flow2py.syntax import ast

# What a top-level value name resolves to (infer_names.resolve_value, .qualified). These records
# are made at every name, so they are slotted but not frozen (a frozen __init__ is slower).


@dataclass(slots=True)
class FnHit:
    """A function."""

    fn: FnInfo


@dataclass(slots=True)
class CtorHit:
    """A constructor of a type."""

    info: TypeInfo
    ctor: CtorInfo


@dataclass(slots=True)
class QualifiedError:
    """`alias.name` named a module but no usable declaration of it; already reported."""


QUALIFIED_ERROR = QualifiedError()


@dataclass(slots=True)
class RecordTarget:
    """What a record literal names: a record type (`ctor` None) or a constructor with fields."""

    info: TypeInfo
    ctor: CtorInfo | None


@dataclass(slots=True)
class Instantiation:
    """A use of a generic function at fresh type variables (`type_args`), whose requirements
    (data type parameters) the driver checks once the whole program is solved."""

    callee: str  # declaration id
    type_args: tuple
    span: ast.Span
    owner: str  # declaration id of the function the use is in
    name: str  # how the use is named in a diagnostic: the function's name, or an operator


@dataclass(slots=True)
class DataReq:
    """A type that must be data (a Dict key), checked once the whole program is solved."""

    type: object
    span: ast.Span
    why: str | None  # what needs it, for the diagnostic ("a Dict key"); None: a callee needs it
    owner: str  # declaration id of the function it is in


@dataclass(slots=True)
class Binding:
    """A local: a parameter or a name a pattern binds."""

    binder: int  # node id of the parameter or BindPattern (LocalRef.binder)
    type: object
    depth: int  # len(fn_stack) where it is bound: the lambdas past it capture it
    name: str
    span: ast.Span
    node: object
    used: bool = False
    uses: int = 0  # how many times it is read
    silent: bool = False  # never reported unused (or-pattern alternatives)


@dataclass(slots=True)
class PendingTry:
    """`x?` (no conversion) in a lambda whose result was not known yet, settled once the body
    gave the result (infer_control._settle_tries)."""

    node: ast.Try
    err: object  # the error type of the Result `?` was applied to


@dataclass(slots=True)
class FnCtx:
    """A function or lambda being walked."""

    node: object  # FnDecl or Lambda
    result: object  # its result type
    name: str  # for diagnostics: the function's name, or "this function" for a lambda
    result_span: ast.Span
    effect: Effect = PURE  # what its body may do, so far
    tool_uses: list = field(default_factory=list)  # the spans of the calls that reach a Tool (E301)
    # the calls reaching a Tool in the lambdas walked inside it, not yet part of a call of its own
    lambda_tool_uses: list = field(default_factory=list)
    captures: list = field(default_factory=list)  # binders of enclosing locals it uses, in order
    captured: set = field(default_factory=set)  # the same, as a set
    pending_tries: list[PendingTry] = field(default_factory=list)


@dataclass(slots=True)
class MatchSite:
    """A match, whose exhaustiveness post.py decides once the function is walked."""

    node: ast.Match
    scrutinee: object  # the scrutinee's type


@dataclass(slots=True)
class LetSite:
    """A `let` pattern, which post.py checks matches every value."""

    pattern: ast.Pattern
    type: object  # the type of the value bound


@dataclass(slots=True)
class TailRoot:
    """An expression whose tail positions are tail calls (post.py): a body or a `return` value."""

    expr: ast.Expr
    top: bool  # in the top-level function itself, not in a lambda (checkpoint sites)


@dataclass(slots=True)
class Why:
    text: str
    span: ast.Span | None = None
    note: str | None = None  # the note's words at `span`, when not `text` (a declaration's)


class LazyWhy:
    """A `Why` whose text is only put together when a mismatch reports it (most never are):
    `make(*args)` gives the text. Only for texts built from values that cannot change meanwhile."""

    __slots__ = ("args", "make", "note", "span")

    def __init__(self, make, args: tuple, span: ast.Span | None = None, note: str | None = None) -> None:
        self.make = make
        self.args = args
        self.span = span
        self.note = note

    @property
    def text(self) -> str:
        return self.make(*self.args)
