"""Syntax diagnostic codes (E001-E099) and their typed classes, one per code. Imported by the
parser so the codes exist whenever it does. A class holds the data of one report (the offending
text, the tokens, the span); its message is rendered in flow2py/syntax/messages.py (`message`)."""

from __future__ import annotations

from dataclasses import dataclass
from flow2py.diagnostics import Data, register

BAD_CHARACTER = register("E001", "bad-character", "a character that cannot start any token")
UNTERMINATED_TEXT = register("E002", "unterminated-text", "a text or bytes literal is not closed on its line")
BAD_ESCAPE = register("E003", "bad-escape", "an unknown or malformed escape in a text or bytes literal")
UNEXPECTED_TOKEN = register("E004", "unexpected-token", "the parser expected something else at this place")
UNCLOSED_BRACKET = register("E005", "unclosed-bracket", "a `(`, `[` or `{` is never closed")
MIXED_TYPE_BODY = register("E006", "mixed-type-body", "a type body mixes record fields and enum constructors")
UNKNOWN_EFFECT = register("E007", "unknown-effect", "after `!` only `tool` or `pure` may follow")
BAD_REST = register(
    "E008", "misplaced-rest", "`..` in a pattern or record literal is written once, in its place"
)
TOO_DEEP = register("E009", "too-deeply-nested", "the program nests deeper than the parser can follow")
BAD_NUMBER = register("E010", "bad-number", "a number literal that is not well formed")
LONE_SURROGATE = register(
    "E011", "lone-surrogate", "the source holds a lone surrogate, which is not a Unicode scalar value"
)
FOREIGN_SYNTAX = register(
    "E012",
    "foreign-syntax",
    "a construct from another language (`elif`, `===`, a `for` loop); Flow writes it another way",
)


@dataclass(frozen=True)
class SyntaxData(Data):
    """A syntax diagnostic; messages rendered by flow2py/syntax/messages.py."""

    renderer = "flow2py.syntax.messages"


@dataclass(frozen=True)
class BadCharacter(SyntaxData):
    code = "E001"
    char: str  # the character no token starts with


@dataclass(frozen=True)
class UnterminatedText(SyntaxData):
    code = "E002"


@dataclass(frozen=True)
class BadEscape(SyntaxData):
    code = "E003"
    escape: str  # what follows the backslash ("u" for a malformed `\u{...}` in text)
    in_bytes: bool  # in a bytes literal (else a text literal)


@dataclass(frozen=True)
class Lexeme:
    """A token as a diagnostic names it: its terminal and its text (its place is the span's)."""

    type: str  # the terminal's name, e.g. "LOWER", "RPAR", "$END"
    value: str

    @classmethod
    def of(cls, tok) -> Lexeme:
        return cls(tok.type, str(tok.value))


@dataclass(frozen=True)
class UnexpectedToken(SyntaxData):
    """What the parser found where it expected something else; or (with `opener`) a closing
    bracket that closes nothing."""

    code = "E004"
    found: Lexeme
    expected: frozenset[str] = frozenset()  # the terminal names the parser would have accepted
    after: Lexeme | None = None  # the token before `found`, when it is worth naming
    opener: str = ""  # for a closer without its opening bracket: the bracket it lacks


@dataclass(frozen=True)
class UnclosedBracket(SyntaxData):
    code = "E005"
    opener: str  # the bracket left open
    closer: str  # the bracket that would close it


@dataclass(frozen=True)
class MixedTypeBody(SyntaxData):
    code = "E006"
    type_name: str
    field: str  # the first record field
    ctor: str  # the first enum constructor


@dataclass(frozen=True)
class UnknownEffect(SyntaxData):
    code = "E007"
    name: str  # what follows the `!`


@dataclass(frozen=True)
class MisplacedRest(SyntaxData):
    code = "E008"
    place: str  # "record" (`..base`), "constructor" or "list" (a `..` in that pattern)
    kept: bool = False  # the tree holds what was meant (a record's one base, not first)


@dataclass(frozen=True)
class TooDeep(SyntaxData):
    code = "E009"
    limit: int | None  # the bracket depth passed (None: the parser itself ran out of depth)


@dataclass(frozen=True)
class BadNumber(SyntaxData):
    code = "E010"
    text: str  # the literal as written


@dataclass(frozen=True)
class LoneSurrogate(SyntaxData):
    code = "E011"
    point: int  # the surrogate's code point


@dataclass(frozen=True)
class ForeignSyntax(SyntaxData):
    """A habit from another language, recognised by a rule of habits.py or habits_scanned.py; the
    answer (what Flow writes instead, and why) is rendered from `kind` and the texts."""

    code = "E012"
    # which answer (one `case` each in messages.py): "writes" (plainly another spelling),
    # "not-compound", "equality", "const", "mut", "assign", "update", "loop", "lambda",
    # "f-string", "f-string-plain", "fn-head", "type-head", "import", "import-path", "import-from",
    # "keyword-args", "let-else", "await", "new", "result-arrow", "dict-literal",
    # "path-type", "top-level-value",
    # "number", "type-name", "arm-arrow", "template", "template-plain", "single-quote",
    # "comment", "text-reference", "reference", "ternary", "chained-comparison", "index",
    # "format", "format-plain", "vec-macro", "type-args", "optional-type", "record-keywords",
    # "empty-value", "go-field", "membership", "power", "duration-unit", "slice",
    # "record-index" (reported by the checker, which knows the record),
    # "assign-new", "record-field-equals", "let-as-value", "comprehension",
    # "comprehension-filter", "go-results", "qualified-constructor", "async",
    # "or-pattern" (habits_values.py), "floor-division" (floor_division.py),
    # "trailing-lambda", "elvis", "throw" (habits_kotlin.py)
    kind: str
    habit: str  # what was written, as the answer quotes it: `elif`, `===`, `x =>`, `&mut`, `for`
    flow: str = ""  # what Flow writes instead, as quoted: `else if`, `==`, `flow(x) =`, `Text`
    name: str = ""  # a name the answer builds on: `x` of `x = 1`, the alias of `import m`
    op: str = ""  # the operator of an update `x += 1`: `+`
