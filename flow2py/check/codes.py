"""The checker's diagnostic codes (E1xx modules and names, E2xx types, E3xx effects, E4xx checks,
E5xx declarations and annotations). Every code has a page entry in docs/spec/diagnostics.md and a
golden case under golden/diagnostics/ (tests/test_diagnostics_registry.py enforces both).

Each code has one typed class below (a frozen dataclass deriving from `CheckData`): its fields
hold what the report is about (the offending name, the types, the places), never message text.
Every message of the checker is rendered from those fields in flow2py/check/messages.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from flow2py.diagnostics import CODES, Data, register

if TYPE_CHECKING:
    from flow2py.check.suggest import Suggestion

_ALL = [
    # modules and names
    ("E101", "unknown-name", "a name that is not a local, a declaration in scope or a prelude name"),
    ("E102", "unknown-type", "a type name that is not declared in scope"),
    ("E103", "module-not-found", "a `use` path whose module cannot be loaded"),
    ("E104", "import-cycle", "modules that use each other in a cycle"),
    ("E105", "moved-tag", "a repository tag that now names another commit than the one pinned in flow.lock"),
    ("E106", "two-versions", "one repository used at two different tags in one program"),
    ("E107", "duplicate-declaration", "a name declared twice in one scope"),
    ("E108", "prelude-name-redeclared", "a declaration reusing a name the prelude exports"),
    ("E109", "private-name", "a declaration, constructor or field used outside its module without `pub`"),
    ("E110", "unknown-member", "a qualified name that the module does not declare"),
    ("E111", "duplicate-import", "two `use` declarations with the same alias"),
    ("E112", "unused-import", "a `use` whose alias is never used"),
    ("E113", "bad-use-path", "a `use` path that is not a relative, std or repository path"),
    ("E114", "opaque-construction", "building, matching or reading an opaque type outside its module"),
    # types
    ("E201", "type-mismatch", "a value whose type is not the type expected there"),
    ("E202", "wrong-arity", "a call, constructor or pattern with the wrong number of arguments"),
    ("E203", "wrong-type-arity", "a type applied to the wrong number of type arguments"),
    ("E204", "not-callable", "a call of a value that is not a function"),
    ("E205", "unknown-field", "a field the record (or named payload) does not declare"),
    ("E206", "missing-field", "a record literal or pattern that leaves out a declared field"),
    ("E207", "duplicate-field", "a field given twice"),
    (
        "E208",
        "not-data",
        "a type that must be data (equality, ordering, keys, Tool boundary, entry) but is not",
    ),
    ("E209", "no-operator", "an operator with no function declared for its operand type"),
    (
        "E210",
        "unknown-method",
        "method syntax naming a function neither the home module of the type nor the generic std functions (std/data.flow) declare",
    ),
    ("E211", "alias-cycle", "a type alias that refers to itself"),
    ("E212", "cannot-infer", "a value whose type cannot be known where it is needed"),
    # effects
    ("E301", "undeclared-effect", "a function without `!tool` whose body may reach a Tool"),
    ("E302", "effectful-argument", "an effectful function passed where a pure one is required"),
    # checks
    ("E401", "non-exhaustive-match", "a match (or a let pattern) that does not cover every value"),
    ("E402", "unreachable-arm", "a match arm that no value can reach"),
    ("E403", "non-unit-statement", "a statement whose value is not Unit (discard it with `let _ =`)"),
    ("E404", "unused-binding", "a binding that is never used"),
    ("E405", "unused-declaration", "a private function or type that is never used"),
    ("E406", "guard-must-leave", "a `guard ... else` block that can finish without leaving"),
    ("E407", "if-without-else", "an `if` without `else` whose block is not Unit"),
    ("E408", "try-outside-result", "`?` in a function that does not return a Result"),
    ("E409", "try-error-type", "`?` on a Result whose error type differs from the function's"),
    ("E410", "refutable-let", "a `let` pattern that does not match every value"),
    # declarations and annotations
    ("E501", "tool-without-result", "a Tool whose declared result is not a Result"),
    ("E502", "lang-outside-std", "`@lang` used outside std"),
    ("E503", "tool-with-body", "`@tool` on a function or type that has a body"),
    ("E504", "test-with-params", "a `@test` function that takes parameters"),
    ("E505", "bad-fake", "`@fake` that does not name a Tool with the same signature"),
    ("E506", "missing-body", "a function or type without a body that is neither `@tool` nor `@lang`"),
    ("E507", "unknown-annotation", "an annotation other than @lang, @tool, @test, @fake"),
    ("E508", "bad-annotation", "an annotation with the wrong arguments or in the wrong place"),
    ("E509", "tool-type-not-data", "a Tool parameter or result that is neither data nor a @tool type"),
    ("E510", "entry-not-data", "an entry function `main` whose parameters or result are not data"),
    ("E511", "duplicate-fake", "two `@fake` functions for one Tool in one scope (the file, or one `@test`)"),
]

for _code, _name, _summary in _ALL:
    if _code not in CODES:
        register(_code, _name, _summary)

CHECK_CODES = [c for c, _, _ in _ALL]


@dataclass(frozen=True)
class CheckData(Data):
    """A checker diagnostic; its message is rendered by flow2py/check/messages.py."""

    renderer = "flow2py.check.messages"


# -- E1xx: modules and names -----------------------------------------------------------------


@dataclass(frozen=True)
class UnknownName(CheckData):
    """A name that resolves to nothing; `kind` says what the place wanted."""

    code = "E101"
    name: str  # as written ("" for "record-head")
    # "name" | "module" | "constructor" | "record" (a record type or constructor) | "shorthand"
    # (a record field `f` meaning `f: f`) | "module-value" (an alias used as a value) |
    # "qualifier" (`x` of `x.y`, nothing close) | "record-head" (a record literal's head) |
    # "math" (`Math` of JavaScript's `Math.abs(x)`) |
    # "type-qualifier" (a type `Role` of `Role.User`, its constructor `owner`)
    kind: str
    owner: str = ""  # for "constructor": the type expected, which has no such constructor
    # what it most likely meant (`Suggestion.said`: no places); its `tail` ends the message
    suggestion: Suggestion | None = None


@dataclass(frozen=True)
class UnknownType(CheckData):
    code = "E102"
    name: str
    suggestion: Suggestion | None = None


@dataclass(frozen=True)
class ModuleNotFound(CheckData):
    code = "E103"
    path: str  # the `use` path; for "file", the file as displayed
    kind: str  # "module" (a `use` that leads nowhere) | "file" (unreadable) | "tag" (not in the cache)
    looked: str = ""  # where it was looked for
    tag: str = ""  # for "tag": the tag and the repository it is of
    repo: str = ""
    candidates: tuple[str, ...] = ()  # the paths it most likely meant


@dataclass(frozen=True)
class ImportCycle(CheckData):
    code = "E104"
    cycle: tuple[str, ...]  # the modules, the first one again last


@dataclass(frozen=True)
class MovedTag(CheckData):
    code = "E105"
    repo: str
    tag: str
    pinned: str  # the commit flow.lock pins
    commit: str  # the commit the tag names now


@dataclass(frozen=True)
class TwoVersions(CheckData):
    code = "E106"
    repo: str
    first: str  # the tag used first
    second: str  # the other tag


@dataclass(frozen=True)
class DuplicateDeclaration(CheckData):
    code = "E107"
    name: str
    # "binding" (in one pattern) | "declaration" | "type" | "function" (in one module) |
    # "type parameter" | "field" | "constructor" | "parameter" (in one declaration)
    kind: str


@dataclass(frozen=True)
class PreludeNameRedeclared(CheckData):
    code = "E108"
    name: str
    ctor: bool  # a constructor (else a type)


@dataclass(frozen=True)
class PrivateName(CheckData):
    code = "E109"
    name: str
    kind: str  # "field" | "type" | "function" (qualified) | "method"
    owner: str = ""  # for "field": the record or constructor it is of
    module: str = ""  # the alias it is named through ("" when unqualified); for "method": the home module
    building: bool = False  # for "field": the record literal building `owner`


@dataclass(frozen=True)
class UnknownMember(CheckData):
    code = "E110"
    module: str  # the alias
    name: str
    kind: str = ""  # "" (any) | "type" | "constructor" | "record or constructor"
    suggestion: Suggestion | None = None


@dataclass(frozen=True)
class DuplicateImport(CheckData):
    code = "E111"
    alias: str


@dataclass(frozen=True)
class UnusedImport(CheckData):
    code = "E112"
    alias: str


@dataclass(frozen=True)
class BadUsePath(CheckData):
    code = "E113"
    path: str
    # "alias" (the last segment is not a lower-case name) | "leaves-repo" | "std-version" |
    # "no-module" (a std path without a module) | "not-a-path"
    kind: str
    alias: str = ""  # for "alias": the last segment
    repo: str = ""  # for "leaves-repo"
    version: str = ""  # for "std-version": the one written and the one this compiler provides
    provided: str = ""
    candidates: tuple[str, ...] = ()  # the paths it most likely meant


@dataclass(frozen=True)
class OpaqueConstruction(CheckData):
    code = "E114"
    name: str  # the opaque type
    reading: bool  # reading a field (else building or taking apart a value)


# -- E2xx: types ------------------------------------------------------------------------------

# A type in these classes is held as its text (`show`, flow2py/check/typeterms.py): how a declared
# type is named depends on the module the report is shown from.


@dataclass(frozen=True)
class TypeMismatch(CheckData):
    """A value, a pattern or an alternative of `|` whose type is not the one expected there."""

    code = "E201"
    found: str  # the type of the value (text)
    expected: str = ""  # the type expected there (text); for "ctor-pattern" the pattern's type name
    # what is mismatched: "value" | "tuple-pattern" | "list-pattern" | "ctor-pattern"
    # | "alternative" (a name bound at two types) | "alternative-names" (other names bound) | "try"
    # | "swapped" (two arguments of a call, each of the type the other's parameter takes)
    # | "swapped-receiver" (a method call's receiver and an argument, the same way)
    # | "swapped-values" (two values of a constructor, the same way)
    # | "missing-try" (a `let` of `name` to a Result whose uses want its Ok value: `expected`)
    # | "int-division" (a `let` of `name` to an Int `/` whose uses want a Decimal)
    # | "unwrap-let" (a `let` of `name` to an Option or Result whose uses want its value: `expected`)
    place: str = "value"
    because: str | None = None  # for a "value": what fixed the expected type (a signature, ...)
    name: str = ""  # the pattern's constructor ("ctor-pattern"), the name bound ("alternative")
    items: int = 0  # the items of a "tuple-pattern"
    names: tuple[str, ...] = ()  # the names the first alternative binds ("alternative-names")
    # what the mistake most likely was, for a "value": "thunk" (a value where a function of no
    # parameters returning it is expected) | "thunks" (`items` elements of a list, each so) |
    # "unit" (an Int where a Duration is expected)
    hint: str = ""
    # for "swapped": the two arguments (0-based) of the call `name` given in each other's place
    # (`expected`: what the first's parameter takes; `found`: what it was given); for
    # "swapped-receiver": (0, j), the receiver and the argument j
    swapped: tuple[int, int] = ()


@dataclass(frozen=True)
class WrongArity(CheckData):
    """A call, constructor or pattern given the wrong number (or the wrong form) of values."""

    code = "E202"
    # "arguments" (a function call; `name` "" for a function value), "values" (a constructor
    # call), "pattern-values" (a constructor pattern), "positional" (a positional constructor
    # given named fields), "named-value" / "named-call" / "named-pattern" (a constructor with
    # named fields used as a value, called, matched positionally), "unit" / "unit-pattern" (a
    # constructor without values written `Name()`), "record-call" (a record type called like a
    # function: `fields` its fields), "unapplied" (a constructor with values written bare
    # where its type is expected), "bare-pattern" (a record or
    # named constructor matched without its fields), "base" (`..base` for a constructor)
    form: str
    name: str = ""  # the function as called (`f`, `m.f`, `.f`) or the constructor
    expected: int = 0
    given: int = 0
    fields: tuple[str, ...] = ()  # a "named-call" constructor's fields
    after_new: bool = False  # "record-call" / "named-call" written `new T(...)` (E012 folded in)


@dataclass(frozen=True)
class WrongTypeArity(CheckData):
    code = "E203"
    name: str  # the type (or type parameter) as written
    expected: int = 0
    given: int = 0
    param: bool = False  # `name` is a type parameter (which takes no type arguments)


@dataclass(frozen=True)
class NotCallable(CheckData):
    code = "E204"
    type: str  # the type of the called value (text)


@dataclass(frozen=True)
class UnknownField(CheckData):
    code = "E205"
    owner: str  # the record or constructor (its name), or the type of the value read (text)
    field: str
    meant: Suggestion  # what the misspelling most likely meant (empty: nothing close), `said()`
    call: bool = False  # `name` is a function of the type's module taking the value alone: `.name()`
    method: str = ""  # another language's property (Swift's `.count`) that is that function: `.length()`


@dataclass(frozen=True)
class MissingField(CheckData):
    code = "E206"
    missing: tuple[str, ...]
    name: str = ""  # the record (or constructor) of a literal; "" for a pattern
    used: tuple[str, ...] = ()  # of a pattern: the fields left out that its arm uses


@dataclass(frozen=True)
class DuplicateField(CheckData):
    code = "E207"
    field: str


@dataclass(frozen=True)
class NotData(CheckData):
    """A type that must be data, because of what uses it (`why`) or of a generic function
    whose type parameter it instantiates (`callee`, `param`)."""

    code = "E208"
    type: str  # text
    why: str = ""  # what must be data, e.g. "a Dict key"
    callee: str = ""
    param: str = ""


@dataclass(frozen=True)
class NoOperator(CheckData):
    code = "E209"
    op: str
    operand: str  # the type of the (left) operand (text)
    unary: bool = False
    formatting: bool = False  # `"..%s.." % x`: Python's text formatting


@dataclass(frozen=True)
class UnknownMethod(CheckData):
    """`x.name(...)` naming no function of the home module of x's type (`home`, None when the
    type has none) nor a generic one; or (`no_params`) a function that takes no arguments."""

    code = "E210"
    name: str
    receiver: str = ""  # the type of x (text)
    home: str | None = None
    no_params: bool = False
    meant: Suggestion | None = None  # what the misspelling most likely meant (None: `no_params`)
    copy: bool = False  # `.clone()`, `.copy()`: values never change, the value is its own copy
    equals: bool = False  # `a.equals(b)`: Flow compares values with `==`
    iterator: bool = False  # `xs.iter()`, `.collect()`: Flow's list functions take the list itself
    getter: str = ""  # Java's `t.getAssignee()` of a record with that field: the field read


@dataclass(frozen=True)
class AliasCycle(CheckData):
    code = "E211"
    name: str


@dataclass(frozen=True)
class CannotInfer(CheckData):
    code = "E212"
    # what needs the type: "field" (reading `.name`), "method" (calling `.name(...)`), "binary" /
    # "unary" (operator `name`), "nesting" (the program nests too deeply to be checked at all)
    what: str
    name: str = ""


# -- E3xx: effects ----------------------------------------------------------------------------


@dataclass(frozen=True)
class UndeclaredEffect(CheckData):
    """At the signature of a function whose body may reach a Tool, not marked `!tool`."""

    code = "E301"
    name: str  # the function
    pure: bool = False  # marked `!pure`


@dataclass(frozen=True)
class EffectfulArgument(CheckData):
    """A function that may reach a Tool given as the `index`th argument of `callee` where it
    must be pure; or (`callee` "") stored in data as a pure function type."""

    code = "E302"
    callee: str = ""  # as called (`f`, `m.f`, `.f`)
    index: int = 0  # from 0


# -- E4xx: checks -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NonExhaustiveMatch(CheckData):
    code = "E401"
    missing: tuple[str, ...]  # the patterns no arm matches, as written (exhaust.Verdict.missing)
    truncated: bool  # the search stopped: there are more missing values than `missing` covers


@dataclass(frozen=True)
class UnreachableArm(CheckData):
    code = "E402"


@dataclass(frozen=True)
class NonUnitStatement(CheckData):
    code = "E403"
    found: str  # the statement's type, rendered from its module (names depend on it)


@dataclass(frozen=True)
class UnusedBinding(CheckData):
    code = "E404"
    name: str
    no_value: bool = False  # `null`/`nil`/`undefined`/`none` bound where an Option is matched


@dataclass(frozen=True)
class UnusedDeclaration(CheckData):
    code = "E405"
    kind: str  # "function" | "type"
    name: str


@dataclass(frozen=True)
class GuardMustLeave(CheckData):
    code = "E406"
    value: bool = False  # reported at the block's value, which is of the function's result type


@dataclass(frozen=True)
class IfWithoutElse(CheckData):
    code = "E407"
    found: str  # the block's type, rendered from its module


@dataclass(frozen=True)
class TryOutsideResult(CheckData):
    code = "E408"
    fn: str | None  # the enclosing function's name; None for a lambda ("this function")
    result: str  # its result type, rendered from its module


@dataclass(frozen=True)
class TryErrorType(CheckData):
    code = "E409"
    fn: str | None  # the enclosing function's name; None for a lambda ("this function")
    error: str  # the error type `?` would return, rendered from its module
    expected: str  # the function's error type, rendered from its module


@dataclass(frozen=True)
class RefutableLet(CheckData):
    code = "E410"
    missing: tuple[str, ...]  # the patterns the `let` pattern does not match, as written
    truncated: bool  # the search stopped: there are more missing values than `missing` covers


# -- E5xx: declarations and annotations -------------------------------------------------------


@dataclass(frozen=True)
class ToolWithoutResult(CheckData):
    code = "E501"
    name: str  # the Tool


@dataclass(frozen=True)
class LangOutsideStd(CheckData):
    code = "E502"


@dataclass(frozen=True)
class ToolWithBody(CheckData):
    code = "E503"
    kind: str  # "function" | "type"
    name: str


@dataclass(frozen=True)
class TestWithParams(CheckData):
    code = "E504"
    name: str  # the test
    count: int  # how many parameters it takes


@dataclass(frozen=True)
class BadFake(CheckData):
    """`@fake` naming no Tool (`named`: what it names instead, if a function), or a fake whose
    signature is not its Tool's (`fake` set, with the Tool's signature)."""

    code = "E505"
    named: str | None = None  # the function `@fake(...)` names, which is not a Tool
    fake: str | None = None  # the fake function whose signature differs from the Tool's
    tool: str = ""  # that Tool's name
    params: tuple[str, ...] = ()  # the Tool's parameter types, rendered from the fake's module
    result: str = ""  # the Tool's result type, rendered from the fake's module


@dataclass(frozen=True)
class MissingBody(CheckData):
    code = "E506"
    kind: str  # "function" | "type"
    name: str


@dataclass(frozen=True)
class UnknownAnnotation(CheckData):
    code = "E507"
    name: str  # the annotation, without `@`


@dataclass(frozen=True)
class BadAnnotation(CheckData):
    """An annotation with the wrong arguments or in the wrong place."""

    code = "E508"
    # "tool-args": `@tool(...)`; "on-type": a function annotation on a type; "lang-args": `@lang`
    # without text arguments; "test-arg": a `@test(...)` argument that is not a `@fake` function
    problem: str
    annotation: str = ""  # "on-type": the annotation's name
    arg: str | None = None  # "test-arg": the name given, None when it is not a name


@dataclass(frozen=True)
class ToolTypeNotData(CheckData):
    code = "E509"
    tool: str
    param: str | None  # the parameter that is not data; None for the result or error type
    what: str = ""  # "result" | "error" when `param` is None


@dataclass(frozen=True)
class EntryNotData(CheckData):
    code = "E510"
    param: str | None  # the parameter of `main` that is not data; None for its result
    type: str  # its type, rendered from the entry module


@dataclass(frozen=True)
class DuplicateFake(CheckData):
    code = "E511"
    fake: str  # the second fake
    first: str  # the fake before it
    tool: str  # the Tool, as the `@fake(...)` writes it
    test: str | None  # the `@test` whose fakes these are; None for the file's fakes
