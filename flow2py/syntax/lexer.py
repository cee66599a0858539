"""Tokens for the parser: lark's lexer, then automatic separators.

Flow has no written semicolons. Like Go, a newline ends a statement when the token before it
can end one and the innermost open bracket is a `{` (or there is none). Inside `(` and `[` a
newline is only space. A line that begins with a continuation token (`else`, `.`, `=>`, a
binary operator, ...) continues the line before it, so `xs\n    .map(f)` is one expression.
An explicit `;` is a separator too.

The pass also tidies: no separator right after `{`, `,` or another separator, none right
before `}`, `)` or `]`, and none at the very start, so the grammar needs no optional slots.

A declaration keyword in column 1 (`@`, `use`, `type`, `opaque`, `pub flow`, `pub type`,
`pub opaque`, `flow name`) always starts a new declaration: the bracket stack is reset there,
so one unclosed bracket cannot swallow the rest of the file.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from lark import Token
from lark.lark import PostLex

# Tokens after which a newline ends a statement. `>` ends a type (`-> List<Text>` at the end
# of a bodyless declaration).
ENDERS = frozenset({
    "LOWER", "UPPER", "INT", "DECIMAL", "DURATION", "TEXT", "BYTES", "TRUE", "FALSE",
    "RPAR", "RSQB", "RBRACE", "QMARK", "UNDERSCORE", "RETURN", "MORETHAN",
})
# A line that starts with one of these continues the previous line.
CONTINUERS = frozenset({
    "ELSE", "DOT", "QMARK", "COMMA", "EQUAL", "FATARROW", "ARROW", "COLON",
    "OROR", "ANDAND", "PLUSPLUS", "PLUS", "STAR", "SLASH", "PERCENT", "VBAR",
    "EQEQ", "NOTEQ", "LESSTHAN", "LESSEQ", "MORETHAN", "MOREEQ",
})
OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
CLOSERS = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}
NO_SEP_AFTER = frozenset({"LBRACE", "COMMA", "_SEP"})
NO_SEP_BEFORE = frozenset({"RBRACE", "RPAR", "RSQB"})
DECL_KEYWORDS = frozenset({"AT", "USE", "TYPE", "OPAQUE"})


def separator_after(tok: Token, text: str = "") -> Token:
    """A `_SEP` token of zero width placed at the end of `tok`."""
    return Token("_SEP", text, tok.end_pos, tok.end_line, tok.end_column, tok.end_line, tok.end_column, tok.end_pos)


def starts_declaration(tok: Token, nxt: Token | None) -> bool:
    """Whether `tok` is a declaration start in column 1 (see the module docstring)."""
    if tok.column != 1:
        return False
    t = tok.type
    if t in DECL_KEYWORDS:
        return True
    if nxt is None:
        return False
    if t == "PUB":
        return nxt.type in ("FLOW", "TYPE", "OPAQUE")
    if t == "FLOW":
        return nxt.type == "LOWER"
    return False


class SeparatorPostLex(PostLex):
    """The lark postlexer: drops `NL` tokens and inserts `_SEP` where a statement ends."""

    always_accept = ("NL", "SEMICOLON")

    def process(self, stream: Iterable[Token]) -> Iterator[Token]:
        return iter(insert_separators(stream))


def insert_separators(stream: Iterable[Token]) -> list[Token]:
    """Go-style separator insertion over a token stream that still contains `NL` tokens."""
    # Pair each real token with whether a newline came before it.
    toks: list[Token] = []
    nls: list[bool] = []
    nl = False
    for t in stream:
        if t.type == "NL":
            nl = True
        else:
            toks.append(t)
            nls.append(nl)
            nl = False

    out: list[Token] = []
    append = out.append
    stack: list[str] = []
    n = len(toks)
    for i in range(n):
        tok = toks[i]
        typ = tok.type
        nxt = toks[i + 1] if i + 1 < n else None
        last = out[-1] if out else None
        if typ == "SEMICOLON":
            if last is not None and last.type not in NO_SEP_AFTER and (nxt is None or nxt.type not in NO_SEP_BEFORE):
                append(Token("_SEP", ";", tok.start_pos, tok.line, tok.column, tok.end_line, tok.end_column, tok.end_pos))
            continue
        if tok.column == 1 and starts_declaration(tok, nxt):
            stack.clear()
            if last is not None and last.type != "_SEP":
                append(separator_after(last))
        elif (
            nls[i]
            and last is not None
            and last.type in ENDERS
            and (not stack or stack[-1] == "LBRACE")
            and typ not in CONTINUERS
            and typ not in NO_SEP_BEFORE
        ):
            append(separator_after(last))
        if typ in OPENERS:
            stack.append(typ)
        elif typ in CLOSERS:
            # Pop to the matching opener if there is one; a stray closer leaves the stack alone.
            want = CLOSERS[typ]
            if want in stack:
                while stack.pop() != want:
                    pass
            if out and out[-1].type == "_SEP" and out[-1].value == ";":
                out.pop()  # `; }`: a written separator before a closer is dropped
        append(tok)
    return out
