"""The small records of the body walk (infer.py): a local's binding, the function (or lambda)
being walked, and why an expected type is expected (`Why`, or `LazyWhy` when its text is only
worth building if a mismatch reports it)."""
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
class Instantiation:
    """A use of a generic function at fresh type variables (`type_args`), whose requirements
    (data type parameters) the driver checks once the whole program is solved."""

    callee: str  # declaration id
    type_args: tuple
    span: ast.Span
    owner: str  # declaration id of the function the use is in
    name: str  # how the use is named in a diagnostic: the function's name, or an operator


@dataclass
class Binding:
    binder: int
    type: object
    depth: int
    name: str
    span: ast.Span
    node: object
    used: bool = False
    silent: bool = False  # never reported unused (or-pattern alternatives, @lang params)


@dataclass
class FnCtx:
    node: object  # FnDecl or Lambda
    result: object
    name: str
    result_span: ast.Span
    effect: Effect = PURE
    first_tool: ast.Span | None = None
    captures: list = field(default_factory=list)
    captured: set = field(default_factory=set)
    # `x?` (no conversion) in a lambda whose result was not known yet: (Try node, its error
    # type), settled once the body gave the result (infer_control._settle_tries).
    pending_tries: list = field(default_factory=list)


@dataclass
class Why:
    text: str
    span: ast.Span | None = None


class LazyWhy:
    """A `Why` whose text is only put together when a mismatch reports it (most never are):
    `make(*args)` gives the text. Only for texts built from values that cannot change meanwhile."""

    __slots__ = ("args", "make", "span")

    def __init__(self, make, args: tuple, span: ast.Span | None = None) -> None:
        self.make = make
        self.args = args
        self.span = span

    @property
    def text(self) -> str:
        return self.make(*self.args)
