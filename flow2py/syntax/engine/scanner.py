"""Tokens for the parser: one regex pass over the source, then automatic separators.

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

The terminals come from grammar.lark (through lark_tables.py, which also builds the parse
table), but the scanning is ours: lark's lexer spends most of its time in per-token Python
bookkeeping, and it reports a bad character by raising, which we would have to catch for every
one. The token classes below (ENDERS, CONTINUERS, ...) name grammar.lark's terminals: a new
terminal that can end a statement or continue a line is listed there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from flow2py.span import Span
from flow2py.syntax.engine.lark_tables import Terminal

# Tokens after which a newline ends a statement. `>` ends a type (`-> List<Text>` at the end
# of a bodyless declaration).
ENDERS = frozenset(
    {
        "LOWER",
        "UPPER",
        "INT",
        "DECIMAL",
        "DURATION",
        "TEXT",
        "BYTES",
        "TRUE",
        "FALSE",
        "RPAR",
        "RSQB",
        "RBRACE",
        "QMARK",
        "UNDERSCORE",
        "RETURN",
        "MORETHAN",
    }
)
# A line that starts with one of these continues the previous line.
CONTINUERS = frozenset(
    {
        "ELSE",
        "DOT",
        "QMARK",
        "COMMA",
        "EQUAL",
        "FATARROW",
        "ARROW",
        "COLON",
        "OROR",
        "ANDAND",
        "PLUSPLUS",
        "PLUS",
        "STAR",
        "SLASH",
        "PERCENT",
        "VBAR",
        "EQEQ",
        "NOTEQ",
        "LESSTHAN",
        "LESSEQ",
        "MORETHAN",
        "MOREEQ",
    }
)
OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
CLOSERS = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}
NO_SEP_AFTER = frozenset({"LBRACE", "COMMA", "_SEP"})
NO_SEP_BEFORE = frozenset({"RBRACE", "RPAR", "RSQB"})
DECL_KEYWORDS = frozenset({"AT", "USE", "TYPE", "OPAQUE"})
# No separator goes before these, whatever precedes them (see `_separate`).
_NO_NL_SEP = CONTINUERS | NO_SEP_BEFORE


class Tok:
    """A token: what lark's Token holds, without its cost (it is a str subclass built by a
    Python-level `__new__`, and the parser makes one per token)."""

    __slots__ = ("column", "end_column", "end_line", "end_pos", "line", "start_pos", "type", "value")

    def __init__(self, type, value, start_pos, line, column, end_line, end_column, end_pos):
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column
        self.end_pos = end_pos

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Tok({self.type!r}, {self.value!r}, {self.line}:{self.column})"


def separator_after(tok: Tok, text: str = "") -> Tok:
    """A `_SEP` token of zero width placed at the end of `tok`."""
    return Tok(
        "_SEP", text, tok.end_pos, tok.end_line, tok.end_column, tok.end_line, tok.end_column, tok.end_pos
    )


def starts_declaration(tok: Tok, nxt: Tok | None) -> bool:
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


# ---------------------------------------------------------------------------------------------
# Scanning


class Scanner:
    """One compiled alternation of every terminal, in lark's order and with lark's keyword rule,
    so it splits text exactly as lark's basic lexer would."""

    def __init__(self, terminals: Iterable[Terminal], ignore: Iterable[str]):
        terms = list(terminals)
        ignore = frozenset(ignore)
        # lark's order: higher priority, then longer possible match, then longer pattern text.
        terms.sort(key=lambda t: (-t.priority, -t.max_width, -len(t.value), t.name))
        regexes = [t for t in terms if not t.is_string]
        # A string terminal that some same-priority regex terminal matches whole (`flow` for
        # LOWER) is a keyword: the regex matches it and the value then picks the type.
        self.keywords: dict[str, dict[str, str]] = {}
        embedded = set()
        for rt in regexes:
            for st in terms:
                if st.is_string and st.priority == rt.priority:
                    s = st.value
                    m = re.match(rt.regexp, s)
                    if m and m.group(0) == s:
                        self.keywords.setdefault(rt.name, {})[s] = st.name
                        if st.flags <= rt.flags:
                            embedded.add(st.name)
        # tokenize() looks keywords up for LOWER only, which is all this grammar has.
        assert set(self.keywords) <= {"LOWER"}, self.keywords
        kept = [t for t in terms if t.name not in embedded and t.name not in ignore]
        for t in ignore:
            # Skipping ignored text as a prefix of every match (rather than as tokens of its
            # own) halves the number of matches. It relies on no terminal that lark tries
            # first matching where an ignored one does: none starts with a space, and at `//`
            # COMMENT comes before SLASH in lark's order.
            assert t in ("WS", "COMMENT"), t
        by_name = {t.name: t for t in terms}
        skip = "|".join(by_name[t].regexp for t in sorted(ignore))
        # Each alternative is the terminal's regex followed by an empty group named after it:
        # `lastgroup` still names the terminal, and as the alternative now starts with the
        # terminal's own first character (class), the regex engine rejects it from that one
        # character instead of entering a group first (twice as fast on this alternation).
        # Group 1 is the ignored text, so a token starts where group 1 ends.
        alts = "|".join(f"(?:{t.regexp})(?P<{t.name}>)" for t in kept)
        # `open_text`: a `"` where TEXT did not match is a literal left open up to the end of
        # the line. `bad`: anything else no terminal starts with. `eof`: the trailing ignored
        # text, so that matches are contiguous and nothing is skipped silently.
        self.regex = re.compile(f'((?:{skip})*+)(?:{alts}|"[^\\n]*(?P<open_text>)|.(?P<bad>)|(?P<eof>\\Z))')


def tokenize(scanner: Scanner, source: str, path: str, lexical: list[tuple[str, Span]]) -> list[Tok]:
    """The parser's tokens: no newlines, `_SEP` where a statement ends. A character no token
    can start is skipped, an unclosed text literal closed, and each appended to `lexical` as
    `("bad", span)` or `("open_text", span)`, in source order (the parser front reports them:
    the engine knows no diagnostic codes)."""
    toks: list[Tok] = []
    nls: list[bool] = []  # whether a newline came before toks[i]
    append = toks.append
    nl_append = nls.append
    lower_kw = scanner.keywords.get("LOWER", {}).get
    line = 1
    col0 = -1  # offset of the current line's first character, minus one
    nl = False
    for m in scanner.regex.finditer(source):
        kind = m.lastgroup
        if kind == "NL":
            line += 1
            col0 = m.end() - 1
            nl = True
            continue
        start = m.end(1)
        end = m.end()
        if kind == "LOWER":
            value = source[start:end]
            kind = lower_kw(value, "LOWER")
        elif kind == "eof":
            break
        elif kind == "bad":
            span = Span(path, line, start - col0, line, start - col0 + 1, start, start + 1)
            lexical.append(("bad", span))
            continue
        elif kind == "open_text":
            span = Span(path, line, start - col0, line, end - col0, start, end)
            lexical.append(("open_text", span))
            # Stand in a closed literal so that the parser can go on with the line.
            value = source[start:end] + '"'
            if value.endswith('\\"') and not value.endswith('\\\\"'):
                value = value[:-2] + '"'
            kind = "TEXT"
        else:
            value = source[start:end]
        append(Tok(kind, value, start, line, start - col0, line, end - col0, end))
        nl_append(nl)
        nl = False
    return _separate(toks, nls)


def _separate(toks: list, nls: list[bool]) -> list:
    out: list = []
    append = out.append
    stack: list[str] = []
    n = len(toks)
    last_type = None  # type of out[-1]
    for i in range(n):
        tok = toks[i]
        typ = tok.type
        if typ == "SEMICOLON":
            if (
                last_type is not None
                and last_type not in NO_SEP_AFTER
                and (i + 1 == n or toks[i + 1].type not in NO_SEP_BEFORE)
            ):
                append(
                    Tok(
                        "_SEP",
                        ";",
                        tok.start_pos,
                        tok.line,
                        tok.column,
                        tok.end_line,
                        tok.end_column,
                        tok.end_pos,
                    )
                )
                last_type = "_SEP"
            continue
        if tok.column == 1 and starts_declaration(tok, toks[i + 1] if i + 1 < n else None):
            stack.clear()
            if last_type is not None and last_type != "_SEP":
                append(separator_after(out[-1]))
        elif (
            nls[i] and last_type in ENDERS and (not stack or stack[-1] == "LBRACE") and typ not in _NO_NL_SEP
        ):
            append(separator_after(out[-1]))
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
        last_type = typ
    return out


_COMMENT = re.compile(r"//[^\n]*")


def comment_spans(scanner: Scanner, source: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of every `//` comment, in order. The parser ignores comments;
    the formatter (flow2py/format/) keeps them. A comment is found only where the scanner skips
    ignored text, so `//` inside a text literal is never one."""
    out: list[tuple[int, int]] = []
    for m in scanner.regex.finditer(source):
        a, b = m.span(1)
        if b > a:
            out += [c.span() for c in _COMMENT.finditer(source, a, b)]
        if m.lastgroup == "eof":
            break
    return out
