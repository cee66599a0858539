"""Syntax diagnostic codes (E001-E099). Imported by the parser so the codes exist whenever it does."""

from flow2py.diagnostics import register

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
