"""The checked program: what the checker hands to codegen, the CLI and the host.

The AST is never mutated. Everything the checker learns is kept in side tables keyed by
`node.id` (flow2py/syntax/ast.py). This module defines those tables and the semantic types;
flow2py/check/ fills them; flow2py/codegen/ reads them.

Identities
- A module key: `main`, `planner` (local files: the path relative to the entry file's folder,
  without `.flow`, `/`-separated), `std@v1/task`, `github.com/acme/tools@v1.2/catalog`.
- A declaration id: `<module key>::<name>`, e.g. `planner::next`, `std@v1/list::List`.
  A Tool's declaration id is its `tool_id` in history and the key a host binds it by.
- A constructor is named by (type declaration id, constructor name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from flow2py.syntax import ast

if TYPE_CHECKING:
    from flow2py.check.pattern_form import Pattern


class Effect(StrEnum):
    """What calling a function may do. POLY: a callback parameter written without a mark, whose
    effect passes through to the call that receives it; a function with one is POLY too. Ordered
    PURE < POLY < TOOL by `typeterms.join`. A `StrEnum`: each member equals (and hashes as) its
    text ('pure', 'poly', 'tool'), so readers of the side tables may compare with either."""

    PURE = "pure"
    POLY = "poly"
    TOOL = "tool"


# The members as plain names: the checker reads them on hot paths, and `Effect.PURE` goes through
# the enum class's attribute lookup (several times slower than a global).
PURE, POLY, TOOL = Effect.PURE, Effect.POLY, Effect.TOOL

# ---------------------------------------------------------------------------------------------
# Semantic types


@dataclass(frozen=True, slots=True)
class TCon:
    """A named type applied to arguments: Int is TCon('std@v1/int::Int', ()),
    List<Text> is TCon('std@v1/list::List', (TCon('std@v1/text::Text', ()),))."""

    decl: str
    args: tuple[Type, ...] = ()


@dataclass(frozen=True, slots=True)
class TParam:
    """A declared type parameter of a generic declaration, rigid inside its body."""

    name: str
    owner: str  # the declaration id that declares it


@dataclass(frozen=True, slots=True)
class TTuple:
    """A tuple; the empty tuple is never used (Unit is a TCon)."""

    items: tuple[Type, ...]


@dataclass(frozen=True, slots=True)
class TFun:
    """A function type. effect: see Effect (POLY: a parameter written without a
    mark; its effect passes through to the call that receives it)."""

    params: tuple[Type, ...]
    result: Type
    effect: Effect = PURE


@dataclass(frozen=True, slots=True)
class TNever:
    """The type of `return`: fits every expected type."""


@dataclass(frozen=True, slots=True)
class TError:
    """The poison type: unifies with everything, so one mistake does not cascade."""


Type = TCon | TParam | TTuple | TFun | TNever | TError


# ---------------------------------------------------------------------------------------------
# Resolutions: what a name, a field access, a constructor or an operator refers to


@dataclass(frozen=True, slots=True)
class LocalRef:
    """A local binding: `binder` is the node id of the Param or BindPattern that introduced it."""

    binder: int


@dataclass(frozen=True, slots=True)
class FnRef:
    """A top-level function (Flow-bodied, @tool or @lang) by declaration id."""

    decl: str


@dataclass(frozen=True, slots=True)
class CtorRef:
    """An enum constructor, or a record type's own constructor (ctor == type name)."""

    type_decl: str
    ctor: str


@dataclass(frozen=True, slots=True)
class FieldRef:
    """`x.name` reading a record field (or a named enum payload field is never read this way)."""

    type_decl: str
    field: str


@dataclass(frozen=True, slots=True)
class MethodRef:
    """`x.f(args)` resolved to the function `decl` of the home module of x's type, or else to the
    generic std function `f` (std/data.flow): f(x, args)."""

    decl: str


@dataclass(frozen=True, slots=True)
class ModuleRef:
    key: str


Ref = LocalRef | FnRef | CtorRef | FieldRef | MethodRef | ModuleRef


# ---------------------------------------------------------------------------------------------
# Declarations as the checker understood them


@dataclass
class FieldInfo:
    name: str
    type: Type
    pub: bool


@dataclass
class CtorInfo:
    name: str
    # positional payload types, in order; for a named payload, the field types in declared order
    params: list[Type]
    field_names: list[str] | None = None  # set for a named payload `Moved { from, to }`
    tag: int = 0  # position in the enum; ordering of values follows it


@dataclass
class TypeInfo:
    decl: str  # declaration id
    module: str
    name: str
    kind: str  # record | enum | alias | abstract
    type_params: list[str]
    pub: bool
    opaque: bool
    is_data: bool  # equality, ordering, text and schema exist
    is_tool_type: bool = False  # `@tool type`: a host token
    lang: str | None = None  # @lang("...") name for std built-ins (e.g. "Int", "List")
    fields: list[FieldInfo] = field(default_factory=list)  # record
    ctors: list[CtorInfo] = field(default_factory=list)  # enum
    alias: Type | None = None
    node: ast.TypeDecl | None = None


@dataclass
class FnInfo:
    decl: str
    module: str
    name: str
    type_params: list[str]
    params: list[tuple[str, Type]]
    result: Type
    effect: Effect  # POLY: the effect follows the callback parameters in poly_params)
    poly_params: list[int] = field(default_factory=list)  # indexes of pass-through callback params
    pub: bool = False
    is_tool: bool = False  # @tool: the body is outside Flow; calls return Result<T, ToolProblem<E>>
    lang: str | None = None  # @lang("...") name: the compiler provides the body
    is_test: bool = False
    fake_of: str | None = None  # @fake(x.y): the Tool declaration id this function fakes
    fake_misfit: bool = False  # its signature is not the Tool's (E505 said so)
    test_fakes: list[str] = field(default_factory=list)  # @test(f, g): the fakes this test uses
    node: ast.FnDecl | None = None


@dataclass
class CheckpointSite:
    """A tail call and whether a checkpoint can be taken there (`flow2py check --checkpoints`)."""

    call: int  # Call node id
    caller: str  # declaration id of the enclosing top-level function
    callee: str | None  # declaration id when the callee is a top-level function
    eligible: bool
    reason: str  # why it is (or is not) eligible, in words
    span: ast.Span = ast.NO_SPAN


@dataclass
class CheckedModule:
    key: str
    ast: ast.Module
    aliases: dict[str, str]  # use alias (last path segment) -> module key
    types: dict[str, TypeInfo] = field(default_factory=dict)  # local name -> info
    fns: dict[str, FnInfo] = field(default_factory=dict)  # local name -> info


@dataclass
class CheckedProgram:
    modules: dict[str, CheckedModule]  # dependency order: every module after what it uses
    entry_module: str
    identity: str  # blake3 hex of the parsed modules, resolved commits and std version
    std_version: str  # "std@v1"
    commits: dict[str, str] = field(default_factory=dict)  # repository -> resolved commit (pinned)
    type_decls: dict[str, TypeInfo] = field(default_factory=dict)  # by declaration id
    fn_decls: dict[str, FnInfo] = field(default_factory=dict)  # by declaration id

    # --- side tables keyed by ast node id -----------------------------------------------------
    types: dict[int, Type] = field(default_factory=dict)
    """Every Expr and Pattern node, and every Param and BindPattern, after solving (no unification
    variables left; an unconstrained one defaults to Unit)."""

    refs: dict[int, Ref] = field(default_factory=dict)
    """Name, FieldAccess (when it is a qualified name, a field read or a method callee), CtorPattern
    and RecordLiteral node ids -> what they refer to. Binary and Unary node ids -> FnRef of the
    operator function declared for the operand type."""

    effects: dict[int, Effect] = field(default_factory=dict)
    """FnDecl and Lambda ids -> 'pure' | 'tool' | 'poly': whether the body may reach a Tool (a
    generator). Call ids -> the effect of this call as instantiated at this site. 'poly' means
    "effectful exactly when the enclosing function's pass-through callbacks are": codegen emits a
    pure and a generator variant of a poly function, and reads 'poly' as 'pure' in the first and
    as 'tool' in the second."""

    type_args: dict[int, tuple[Type, ...]] = field(default_factory=dict)
    """Call ids (and Name/FieldAccess ids used as function values) of generic functions ->
    the instantiated type arguments, in the order of the declaration's type parameters."""

    tail_calls: set[int] = field(default_factory=set)
    """Call ids in tail position of their enclosing function or lambda body."""

    captures: dict[int, list[int]] = field(default_factory=dict)
    """Lambda ids -> binder ids of the locals it captures, in first-use order."""

    checkpoints: list[CheckpointSite] = field(default_factory=list)

    patterns: dict[int, Pattern] = field(default_factory=dict)
    """The node id of every pattern site's whole pattern (a `match` arm's, a `let`'s, a `guard
    let`'s) -> its checked form (check/pattern_form.py), which exhaustiveness and codegen read."""

    def fn(self, decl: str) -> FnInfo:
        return self.fn_decls[decl]

    def type_info(self, decl: str) -> TypeInfo:
        return self.type_decls[decl]
