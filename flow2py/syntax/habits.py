"""Habits from other languages, answered in Flow (E012 foreign-syntax).

An author who has just written Python, JavaScript or Rust writes `elif`, `a and b`, `===`,
`let mut`, `(x) => x + 1` or a `for` loop. Each is a syntax error in Flow; what helps is one
diagnostic saying what Flow writes instead, at the place, with the edit when Flow has exactly one
equivalent (a safe fix) and without it when a choice is needed (a loop is a `map`, a `fold` or a
tail-recursive function).

Only a syntax error calls a habit up: the parser asks `habit_at` at the token it could not
accept, so a valid program (a function named `not`, a variable named `or`) is never read as one.
A habit gives back the declaration's tokens rewritten, and the parser parses the declaration
again from them: as Flow would write it where there is one equivalent (so the tree is the tree
of the fixed source, and checking goes on as if the fix were applied), or with a hole
(broken.py) where there is not (the loop is left out, and nothing that depends on it is
reported). Either way the parse goes on past it, and the mistakes after it are still found.

The habits that are not tokens of Flow at all (template literals, `'text'`, `# comments`,
`&str`) are answered right after scanning, in habits_scanned.py; some habits inside
expressions (`c ? a : b`, `d["k"]`, `format!`) are in habits_expr.py, whose `habit_at` (the
parser's) asks this module's rules first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flow2py.diagnostics import Diagnostic, Edit, Fix
from flow2py.span import Span
from flow2py.syntax import codes
from flow2py.syntax.broken import hole
from flow2py.syntax.joins import _joined, joined_tokens
from flow2py.syntax.engine.scanner import CLOSERS, OPENERS, Tok


@dataclass(frozen=True)
class Habit:
    diagnostic: Diagnostic
    tokens: list[Tok] | None  # the declaration, rewritten (None: it stays out of the tree)
    region: list[Tok] | None = None  # tokens the rewrite does not hold faithfully (checking skips them)


def habit_at(seg: list[Tok], i: int, expected: set[str], path: str) -> Habit | None:
    """The habit that explains the syntax error at `seg[i]` (`expected`: what the parser would
    have accepted there), or None."""
    for rule in _RULES:
        h = rule(seg, i, expected, path)
        if h is not None:
            return h
    return None


# ---------------------------------------------------------------------------------------------
# Helpers


def _like(kind: str, value: str, at: Tok) -> Tok:
    """A token of `kind` occupying `at`'s place (spans of what it builds point at `at`)."""
    return Tok(kind, value, at.start_pos, at.line, at.column, at.end_line, at.end_column, at.end_pos)


def _span(path: str, first: Tok, last: Tok | None = None) -> Span:
    last = last or first
    return Span(path, first.line, first.column, last.end_line, last.end_column, first.start_pos, last.end_pos)


def _replace(path: str, first: Tok, last: Tok, text: str) -> Edit:
    return Edit(_span(path, first, last), text)


def _insert_before(path: str, tok: Tok, text: str) -> Edit:
    return Edit(Span(path, tok.line, tok.column, tok.line, tok.column, tok.start_pos, tok.start_pos), text)


def _insert_after(path: str, tok: Tok, text: str) -> Edit:
    return Edit(
        Span(path, tok.end_line, tok.end_column, tok.end_line, tok.end_column, tok.end_pos, tok.end_pos), text
    )


def _delete_between(path: str, first: Tok, upto: Tok) -> Edit:
    """Delete from `first`'s start to `upto`'s start (a token and the space after it)."""
    return Edit(
        Span(path, first.line, first.column, upto.line, upto.column, first.start_pos, upto.start_pos), ""
    )


def _diag(span: Span, fix: Fix | None, kind: str, habit: str, flow: str = "", **more) -> Diagnostic:
    """The E012 at `span`: the answer `kind` to `habit` (codes.ForeignSyntax's fields)."""
    data = codes.ForeignSyntax(span, kind, habit, flow, **more)
    return Diagnostic.of(data, fixes=(fix,) if fix else ())


def _as_one(seg: list[Tok], i: int, type_: str, text: str) -> list[Tok]:
    """`seg` with its tokens i-1 and i read as one token `type_` of `text` (`=` `==` as `==`,
    `f` `"..."` as `"..."`), spanning both."""
    prev, tok = seg[i - 1], seg[i]
    one = Tok(type_, text, prev.start_pos, prev.line, prev.column, tok.end_line, tok.end_column, tok.end_pos)
    return seg[: i - 1] + [one] + seg[i + 1 :]


def _safe(message: str, *edits: Edit) -> Fix:
    return Fix(message, tuple(edits), True)


def _unsafe(message: str, *edits: Edit) -> Fix:
    return Fix(message, tuple(edits), False)


def _is(tok: Tok | None, kind: str, value: str | None = None) -> bool:
    return tok is not None and tok.type == kind and (value is None or tok.value == value)


def _at(seg: list[Tok], k: int) -> Tok | None:
    return seg[k] if 0 <= k < len(seg) else None


def _stmt_start(seg: list[Tok], k: int) -> bool:
    """Whether `seg[k]` begins a statement (or the declaration)."""
    return k == 0 or seg[k - 1].type in ("LBRACE", "_SEP")


def _matching(seg: list[Tok], k: int) -> int | None:
    """The index of the bracket closing the one opened at `seg[k]`."""
    depth = 0
    for j in range(k, len(seg)):
        t = seg[j].type
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
            if depth == 0:
                return j
    return None


def _opening(seg: list[Tok], k: int) -> int | None:
    """The index of the bracket opening the one closed at `seg[k]`."""
    depth = 0
    for j in range(k, -1, -1):
        t = seg[j].type
        if t in CLOSERS:
            depth += 1
        elif t in OPENERS:
            depth -= 1
            if depth == 0:
                return j
    return None


_EXPR_START = frozenset(
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
        "LSQB",
        "BANG",
        "MINUS",
    }
)


# ---------------------------------------------------------------------------------------------
# The habits, one function each: (seg, i, expected, path) -> Habit | None


def _elif(seg, i, expected, path):
    """`} elif c {` (Python): Flow writes `else if`."""
    for k in (i, i - 1, i + 1):  # i + 1: the separator after a `}` at the top level is the error
        tok = _at(seg, k)
        if not _is(tok, "LOWER", "elif"):
            continue
        before = k - 1
        if _is(_at(seg, before), "_SEP"):
            before -= 1
        if not _is(_at(seg, before), "RBRACE"):
            continue
        new = seg[: before + 1] + [_like("ELSE", "else", tok), _like("IF", "if", tok)] + seg[k + 1 :]
        fix = _safe("write `else if`", _replace(path, tok, tok, "else if"))
        return Habit(_diag(_span(path, tok), fix, "writes", "elif", "else if"), new)
    return None


_LOGIC = {"and": ("ANDAND", "&&"), "or": ("OROR", "||")}


def _and_or(seg, i, expected, path):
    """`a and b`, `a or b` (Python): Flow writes `&&` and `||`."""
    tok = seg[i]
    if tok.type == "LOWER" and tok.value in _LOGIC and _LOGIC[tok.value][0] in expected:
        new = seg[:i] + [_like(_LOGIC[tok.value][0], _LOGIC[tok.value][1], tok)] + seg[i + 1 :]
    else:
        # `and b` starting a line: a separator went before it, and the error is at the
        # separator (where the expression could not end) or at `b` (where a statement `and` did)
        for k in (i + 1, i - 1):
            tok = _at(seg, k)
            nxt = _at(seg, k + 1)
            if (
                _is(tok, "LOWER")
                and tok.value in _LOGIC
                and _is(_at(seg, k - 1), "_SEP")
                and nxt is not None
                and nxt.type in _EXPR_START | {"LPAR"}
            ):
                break
        else:
            return None
        new = seg[: k - 1] + [_like(_LOGIC[tok.value][0], _LOGIC[tok.value][1], tok)] + seg[k + 1 :]
    text = _LOGIC[tok.value][1]
    fix = _safe(f"write `{text}`", _replace(path, tok, tok, text))
    return Habit(_diag(_span(path, tok), fix, "writes", tok.value, text), new)


# Where a Python `not x` operand ends: `not` binds looser than comparison, tighter than `and`/`or`.
_NOT_ENDS = frozenset({"ANDAND", "OROR", "COMMA", "_SEP", "LBRACE", "FATARROW", "ELSE", "COLON", "EQUAL"})
_POSTFIX = frozenset({"LOWER", "UPPER", "DOT", "QMARK", "INT", "DECIMAL", "TEXT", "TRUE", "FALSE"})


def _not(seg, i, expected, path):
    """`not x` (Python): Flow writes `!x` (`!(a == b)` for `not a == b`)."""
    k = i - 1
    tok = _at(seg, k)
    if not _is(tok, "LOWER", "not") or seg[i].type not in _EXPR_START:
        return None
    prev = _at(seg, k - 1)
    if prev is not None and prev.type not in _OPERAND_BEFORE:
        return None
    # the operand: up to `and`/`or`/`&&`/`||` or what ends the expression, at this depth
    j = i
    simple = True
    while j < len(seg):
        t = seg[j]
        if t.type in _NOT_ENDS or t.type in CLOSERS or (t.type == "LOWER" and t.value in _LOGIC):
            break
        if t.type in OPENERS:
            if t.type == "LBRACE":
                break
            close = _matching(seg, j)
            if close is None:
                return None
            j = close + 1
            continue
        if t.type not in _POSTFIX:
            simple = False
        j += 1
    if j == i:
        return None
    last = seg[j - 1]
    if simple:
        new = seg[:k] + [_like("BANG", "!", tok)] + seg[i:]
        fix = _safe("write `!`", _delete_between(path, tok, seg[i]), _insert_before(path, seg[i], "!"))
        answer = ("writes", "not x", "!x")
    else:
        new = (
            seg[:k]
            + [_like("BANG", "!", tok), _like("LPAR", "(", tok)]
            + seg[i:j]
            + [_like("RPAR", ")", last)]
            + seg[j:]
        )
        fix = _safe(
            "write `!(...)`",
            _delete_between(path, tok, seg[i]),
            _insert_before(path, seg[i], "!("),
            _insert_after(path, last, ")"),
        )
        answer = ("not-compound", "not ...", "!(...)")
    return Habit(_diag(_span(path, tok), fix, *answer), new)


# Tokens after which an expression starts (so a `not` there is Python's operator).
_OPERAND_BEFORE = frozenset(
    {
        "LPAR",
        "LSQB",
        "LBRACE",
        "COMMA",
        "_SEP",
        "EQUAL",
        "IF",
        "GUARD",
        "RETURN",
        "ANDAND",
        "OROR",
        "EQEQ",
        "NOTEQ",
        "FATARROW",
        "COLON",
        "BANG",
        "ELSE",
        "MATCH",
    }
)


def _strict_equality(seg, i, expected, path):
    """`a === b`, `a !== b` (JavaScript): Flow's `==` and `!=` compare values, nothing looser."""
    tok = seg[i]
    prev = _at(seg, i - 1)
    if (
        tok.type != "EQUAL"
        or prev is None
        or prev.type not in ("EQEQ", "NOTEQ")
        or prev.end_pos != tok.start_pos
    ):
        return None
    text = prev.value
    new = _as_one(seg, i, prev.type, text)
    fix = _safe(f"write `{text}`", _replace(path, prev, tok, text))
    return Habit(_diag(_span(path, prev, tok), fix, "equality", text + "=", text), new)


def _const(seg, i, expected, path):
    """`const x = 1`, `var x = 1` (JavaScript) in a block: Flow writes `let`."""
    k = i - 1
    tok = _at(seg, k)
    if (
        tok is None
        or tok.type != "LOWER"
        or tok.value not in ("const", "var", "val")
        or not _stmt_start(seg, k)
        or k == 0
        or seg[i].type not in ("LOWER", "UNDERSCORE", "LPAR", "UPPER")
    ):
        return None
    new = seg[:k] + [_like("LET", "let", tok)] + seg[i:]
    fix = _safe("write `let`", _replace(path, tok, tok, "let"))
    return Habit(_diag(_span(path, tok), fix, "const", tok.value, "let"), new)


def _let_mut(seg, i, expected, path):
    """`let mut x = 1` (Rust): a Flow binding never changes, so there is no `mut`."""
    k = i - 1
    tok = _at(seg, k)
    if not _is(tok, "LOWER", "mut") or not _is(_at(seg, k - 1), "LET"):
        return None
    if seg[i].type not in ("LOWER", "UNDERSCORE", "LPAR", "UPPER"):
        return None
    new = seg[:k] + seg[i:]
    fix = _safe("remove `mut`", _delete_between(path, tok, seg[i]))
    return Habit(_diag(_span(path, tok), fix, "mut", "mut", "let"), new)


_OP_ASSIGN = {"PLUS": "+", "MINUS": "-", "STAR": "*", "SLASH": "/", "PERCENT": "%", "PLUSPLUS": "++"}


def _reassignment(seg, i, expected, path):
    """`x = 1`, `x += 1` (most languages) as a statement: Flow values never change."""
    tok = seg[i]
    if tok.type != "EQUAL":
        return None
    op = _at(seg, i - 1)
    if op is not None and op.type in _OP_ASSIGN and op.end_pos == tok.start_pos:
        k = i - 2
    else:
        op = None
        k = i - 1
    name = _at(seg, k)
    if not _is(name, "LOWER") or not _stmt_start(seg, k) or k == 0:
        return None
    if op is None:
        new = seg[:k] + [_like("LET", "let", name)] + seg[k:]
        message = f"bind a new `{name.value}` with `let` (it shadows the old one from here on)"
        # A name the declaration has not written before is no binding of it: the `let` is all
        # that is missing (no old value to shadow, so no choice), when the name is read after.
        new_name = not any(t.type == "LOWER" and t.value == name.value for t in seg[:k])
        read_after = _read_in_block(seg, i + 1, name.value)
        if new_name and read_after:
            fix = _safe(f"bind `{name.value}` with `let`", _insert_before(path, name, "let "))
        else:
            fix = _unsafe(message, _insert_before(path, name, "let "))
        kind = "assign-new" if fix.safe else "assign"
        diag = _diag(_span(path, name, tok), fix, kind, f"{name.value} =", "let", name=name.value)
    else:
        sym = _OP_ASSIGN[op.type]
        # In the body's own block the new binding shadows the old one for everything after it,
        # as the update would have changed it: no choice. In a nested block it would not reach
        # past the block's end, so which was meant is the author's to say.
        safe = _in_body_block(seg, k)
        # `x -= a + 1` is `x - (a + 1)`: the right side parenthesised when it has an operator
        end = None if _one_operand(seg, i + 1) else _statement_end(seg, i + 1)
        lhs = [_like("LET", "let", name), name, _like("EQUAL", "=", op), _like("LOWER", name.value, op)]
        new = seg[:k] + lhs + [_like(op.type, sym, op)] + seg[i + 1 :]
        edits = [_insert_before(path, name, "let "), _replace(path, op, tok, f"= {name.value} {sym}")]
        if end is not None:
            new = (
                new[: k + 5]
                + [_like("LPAR", "(", tok), *seg[i + 1 : end], _like("RPAR", ")", tok)]
                + seg[end:]
            )
            edits += [_insert_before(path, seg[i + 1], "("), _insert_after(path, seg[end - 1], ")")]
        said = f"bind a new `{name.value}`: `let {name.value} = {name.value} {sym} ...`"
        fix = Fix(said, tuple(edits), safe)
        diag = _diag(
            _span(path, name, tok), fix, "update", f"{name.value} {sym}=", "let", name=name.value, op=sym
        )
    # The rewritten `let` may bind a name nothing reads (the old binding was meant): not reported.
    return Habit(diag, new, region=[name, tok])


def _in_body_block(seg: list[Tok], k: int) -> bool:
    """Whether `seg[k]` is directly in the block that is a function's body (`-> T {`, `= {`)."""
    depth, o = 0, None
    for j in range(k - 1, -1, -1):
        t = seg[j].type
        if t in CLOSERS:
            depth += 1
        elif t in OPENERS:
            if depth == 0:
                o = j
                break
            depth -= 1
    if o is None or seg[o].type != "LBRACE" or _depth_at(seg, o) != 0:
        return False
    arrow = next((j for j in range(o) if seg[j].type == "ARROW"), None)
    if arrow is None:
        return False
    between = {t.type for t in seg[arrow + 1 : o]}
    return not between & {"IF", "MATCH", "ELSE", "FLOW", "FATARROW"} and (
        seg[o - 1].type == "EQUAL" or "EQUAL" not in between
    )


_BINARY = frozenset(
    {"PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "PLUSPLUS", "ANDAND", "OROR", "EQEQ", "NOTEQ"}
    | {"LESSTHAN", "LESSEQ", "MORETHAN", "MOREEQ", "QMARK"}
)


def _one_operand(seg: list[Tok], k: int) -> bool:
    """Whether the statement from `seg[k]` on has no operator outside brackets (`x -= a + b`
    written `x - a + b` would change its meaning)."""
    depth = 0
    for t in seg[k:]:
        if depth == 0 and t.type in ("_SEP", "RBRACE"):
            return True
        if depth == 0 and t.type in _BINARY:
            return False
        depth += t.type in OPENERS
        depth -= t.type in CLOSERS
    return True


def _statement_end(seg: list[Tok], k: int) -> int:
    """The index just past the statement from `seg[k]` on (its separator or the block's `}`)."""
    ends = [j for j in range(k, len(seg) + 1) if j == len(seg) or seg[j].type in ("_SEP", "RBRACE")]
    return next(j for j in ends if _depth_at(seg, j) == _depth_at(seg, k))


def _depth_at(seg: list[Tok], o: int) -> int:
    depth = 0
    for t in seg[:o]:
        depth += t.type in OPENERS
        depth -= t.type in CLOSERS
    return depth


def _unpacking(seg, i, expected, path):
    """`a, b = pair` (Python) as a statement: Flow takes a tuple apart with a `let` pattern,
    `let (a, b) = pair`. Safe when no name was written before in the declaration (each one new:
    no old binding the author may have meant to change)."""
    if seg[i].type != "COMMA":
        return None
    k = i - 1
    first = _at(seg, k)
    if not _is(first, "LOWER") or not _stmt_start(seg, k) or k == 0:
        return None
    names = [first]
    j = i
    while (
        _is(_at(seg, j), "COMMA")
        and _at(seg, j + 1) is not None
        and seg[j + 1].type in ("LOWER", "UNDERSCORE")
    ):
        names.append(seg[j + 1])
        j += 2
    last = names[-1]
    if len(names) < 2 or not _is(_at(seg, j), "EQUAL") or seg[j].line != first.line:
        return None
    new = (
        seg[:k]
        + [_like("LET", "let", first), _like("LPAR", "(", first)]
        + seg[k:j]
        + [_like("RPAR", ")", last)]
        + seg[j:]
    )
    written = {t.value for t in seg[:k] if t.type == "LOWER"}
    make = _unsafe if any(t.value in written for t in names if t.type == "LOWER") else _safe
    listed = ", ".join(t.value for t in names)
    fix = make(
        f"take the tuple apart with `let ({listed}) =`",
        _insert_before(path, first, "let ("),
        _insert_after(path, last, ")"),
    )
    diag = _diag(_span(path, first, seg[j]), fix, "unpack", f"{listed} =", f"let ({listed}) =")
    return Habit(diag, new, region=names + [seg[j]])


def _read_in_block(seg: list[Tok], k: int, name: str) -> bool:
    """Whether `name` is written from `seg[k]` to the end of the block holding it."""
    depth = 0
    for t in seg[k:]:
        if t.type in OPENERS:
            depth += 1
        elif t.type in CLOSERS:
            depth -= 1
            if depth < 0:
                return False
        elif t.type == "LOWER" and t.value == name:
            return True
    return False


_LOOPS = frozenset({"for", "while", "loop"})  # their answers: messages.py


def _loop(seg, i, expected, path):
    """`for x in xs { ... }`, `while c { ... }` (most languages): Flow has no loop statement."""
    for k in range(i, max(i - 12, -1), -1):
        tok = seg[k]
        if tok.type == "_SEP" and k < i:
            return None
        if tok.type != "LOWER" or tok.value not in _LOOPS or not _stmt_start(seg, k) or k == 0:
            continue
        # the loop's body: the first `{` after its head, at the head's depth
        j = k + 1
        while j < len(seg) and seg[j].type != "LBRACE":
            if seg[j].type in ("LPAR", "LSQB"):
                close = _matching(seg, j)
                if close is None:
                    return None
                j = close
            elif seg[j].type in ("_SEP", "RBRACE", "RPAR", "RSQB"):
                return None
            j += 1
        if j >= len(seg) or not k < i <= j:
            return None
        end = _matching(seg, j)
        if end is None:
            return None
        new = seg[:k] + [hole(tok, seg[end])] + seg[end + 1 :]
        return Habit(_diag(_span(path, tok), None, "loop", tok.value), new, region=seg[k : end + 1])
    return None


def _arrow_lambda(seg, i, expected, path):
    """`(x) => x + 1`, `x => x + 1` (JavaScript), `x -> x + 1` outside a match (Java, Kotlin):
    Flow writes `flow(x) = x + 1`."""
    tok = seg[i]
    if tok.type not in ("FATARROW", "ARROW") or i == 0 or (tok.type == "ARROW" and _in_match_arms(seg, i)):
        return None
    prev = seg[i - 1]
    eq = _like("EQUAL", "=", tok)
    if prev.type in ("LOWER", "UNDERSCORE"):
        before = _at(seg, i - 2)
        if before is not None and before.type not in _OPERAND_BEFORE:
            return None
        new = (
            seg[: i - 1]
            + [_like("FLOW", "flow", prev), _like("LPAR", "(", prev), prev, _like("RPAR", ")", prev), eq]
            + seg[i + 1 :]
        )
        params, written = prev.value, f"{prev.value} {tok.value}"
        fix = _safe(
            f"write `flow({prev.value}) =`",
            _insert_before(path, prev, "flow("),
            Edit(
                Span(
                    path,
                    prev.end_line,
                    prev.end_column,
                    tok.end_line,
                    tok.end_column,
                    prev.end_pos,
                    tok.end_pos,
                ),
                ") =",
            ),
        )
    elif prev.type == "RPAR":
        start = _opening(seg, i - 1)
        if start is None or not _params_like(seg[start + 1 : i - 1]):
            return None
        if _is(_at(seg, start - 1), "FLOW"):
            return None
        new = seg[:start] + [_like("FLOW", "flow", seg[start])] + seg[start:i] + [eq] + seg[i + 1 :]
        params = ", ".join(p.strip() for p in _text(seg[start + 1 : i - 1]).split(","))
        written = f"({params}) {tok.value}"
        fix = _safe(
            f"write `flow({params}) =`",
            _insert_before(path, seg[start], "flow"),
            _replace(path, tok, tok, "="),
        )
    else:
        return None
    return Habit(_diag(_span(path, tok), fix, "lambda", written, f"flow({params}) ="), new)


def _text(toks: list[Tok]) -> str:
    """The tokens as written, one space where the source had space between them."""
    out = ""
    for k, t in enumerate(toks):
        if k and toks[k - 1].end_pos != t.start_pos:
            out += " "
        out += t.value
    return out


def _params_like(toks: list[Tok]) -> bool:
    """Whether `toks` (between parentheses) read as lambda parameters: names, each with an
    optional `: Type`, separated by commas."""
    if not toks:
        return True
    start = True
    depth = 0
    for t in toks:
        if t.type in OPENERS:
            depth += 1
        elif t.type in CLOSERS:
            depth -= 1
        elif depth == 0 and t.type == "COMMA":
            start = True
            continue
        if start:
            if t.type not in ("LOWER", "UNDERSCORE"):
                return False
            start = False
    return True


_F_PREFIXES = frozenset({"f", "F", "rf", "fr", "s"})
_INTERPOLATION = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _f_string(seg, i, expected, path):
    """`f"Hello, {name}!"` (Python): Flow joins text with `++`."""
    tok = seg[i]
    prev = _at(seg, i - 1)
    if tok.type != "TEXT" or prev is None or prev.type != "LOWER" or prev.value not in _F_PREFIXES:
        return None
    if prev.end_pos != tok.start_pos:
        return None
    body = tok.value[1:-1]
    parts = _INTERPOLATION.findall(body.replace("{{", "").replace("}}", ""))
    if not parts:
        text = '"' + body.replace("{{", "{").replace("}}", "}") + '"'
        new = _as_one(seg, i, "TEXT", text)
        fix = _safe("remove the `f`", _replace(path, prev, tok, text))
        return Habit(_diag(_span(path, prev, tok), fix, "f-string-plain", prev.value, text), new)
    fix = _unsafe("join the parts with `++`", _replace(path, prev, tok, _joined(body, "{", "}")))
    diag = _diag(_span(path, prev, tok), fix, "f-string", prev.value)
    if "{{" not in body and "}}" not in body and "\\" not in body:
        # the parts checked as the fix writes them (check/habit_fixes.py settles the fix)
        joined = joined_tokens(body, tok.start_pos + 1, tok, "{", "}")
        if joined is not None:
            return Habit(diag, seg[: i - 1] + joined + seg[i + 1 :])
    named = [_like("LOWER", n, tok) for p in parts for n in _NAME.findall(p)]
    new = seg[: i - 1] + [hole(prev, tok)] + seg[i + 1 :]
    return Habit(diag, new, region=[prev, *named, tok])


_TYPE_NAMES = {
    "str": "Text",
    "string": "Text",
    "int": "Int",
    "integer": "Int",
    "usize": "Int",
    "isize": "Int",
    "i32": "Int",
    "i64": "Int",
    "u32": "Int",
    "u64": "Int",
    "u8": "Int",
    "bigint": "Int",
    "bool": "Bool",
    "boolean": "Bool",
    "float": "Decimal",
    "double": "Decimal",
    "f32": "Decimal",
    "f64": "Decimal",
    "void": "Unit",
}


def _type_name(seg, i, expected, path):
    """`s: string`, `n: usize`, `-> bool` (most languages): Flow's types are capitalised, and a
    lower-case name in a type is only ever a module alias (`planner.Action`)."""
    k = i - 1
    tok = _at(seg, k)
    if tok is None or tok.type != "LOWER" or expected - {"DOT"}:
        return None
    if tok.value == "number":
        # Int or Decimal: a choice. The hole type (an unknown name) keeps the rest quiet.
        new = seg[:k] + [_like("UPPER", "<number>", tok)] + seg[i:]
        fix = _unsafe("write `Int` (or `Decimal` for a fraction)", _replace(path, tok, tok, "Int"))
        return Habit(_diag(_span(path, tok), fix, "number", "number"), new, region=[tok])
    flow = _TYPE_NAMES.get(tok.value)
    if flow is None:
        return None
    new = seg[:k] + [_like("UPPER", flow, tok)] + seg[i:]
    fix = _safe(f"write `{flow}`", _replace(path, tok, tok, flow))
    return Habit(_diag(_span(path, tok), fix, "type-name", tok.value, flow), new)


def _arm_arrow(seg, i, expected, path):
    """`A -> 1` in a match arm (Haskell, Kotlin, Java): Flow writes `=>`."""
    tok = seg[i]
    if tok.type != "ARROW" or "FATARROW" not in expected or not _in_match_arms(seg, i):
        return None
    new = seg[:i] + [_like("FATARROW", "=>", tok)] + seg[i + 1 :]
    fix = _safe("write `=>`", _replace(path, tok, tok, "=>"))
    start = i
    depth = 0
    while start > 0:
        t = seg[start - 1].type
        if t in CLOSERS:
            depth += 1
        elif t in OPENERS:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and t in ("COMMA", "_SEP"):
            break
        start -= 1
    pattern = _text(seg[start:i])
    return Habit(_diag(_span(path, tok), fix, "arm-arrow", f"{pattern} ->", f"{pattern} =>"), new)


def _innermost_open(seg, i):
    """The index of the innermost bracket still open before `seg[i]`."""
    depth = 0
    for k in range(i - 1, -1, -1):
        t = seg[k].type
        if t in CLOSERS:
            depth += 1
        elif t in OPENERS:
            if depth == 0:
                return k
            depth -= 1
    return None


def _in_match_arms(seg: list[Tok], i: int) -> bool:
    """Whether `seg[i]` is directly inside the braces of a `match` (`->` there is an arm's; in a
    call's parentheses, Java's and Kotlin's lambda `x -> x + 1`)."""
    k = _innermost_open(seg, i)
    if k is None or seg[k].type != "LBRACE":
        return False
    depth = 0
    for j in range(k - 1, -1, -1):
        t = seg[j].type
        if t in CLOSERS:
            depth += 1
        elif t in OPENERS:
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and t == "MATCH":
            return True
        elif depth == 0 and t in ("_SEP", "COMMA", "EQUAL", "FATARROW", "LET"):
            return False
    return False


def _case_arm(seg, i, expected, path):
    """`case Pro: 12` as a match arm (Python's `match`, Swift, JavaScript's `switch`): Flow
    writes `Pro => 12`."""
    case = _at(seg, i - 1)
    if (
        not _is(case, "LOWER", "case")
        or _at(seg, i - 2) is None
        or seg[i - 2].type not in ("LBRACE", "COMMA", "_SEP")
    ):
        return None
    depth = 0
    c = i
    while c < len(seg):
        t = seg[c].type
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            if depth == 0:
                return None
            depth -= 1
        elif depth == 0 and t in ("COMMA", "_SEP", "FATARROW", "$END"):
            return None
        elif depth == 0 and t == "COLON":
            break
        c += 1
    if c >= len(seg) or c == i or c + 1 >= len(seg) or seg[c + 1].type in ("_SEP", "$END"):
        return None
    new = seg[: i - 1] + seg[i:c] + [_like("FATARROW", "=>", seg[c])] + seg[c + 1 :]
    fix = _safe(
        "write the arm with `=>`", _delete_between(path, case, seg[i]), _replace(path, seg[c], seg[c], " =>")
    )
    pattern = _text(seg[i:c])
    return Habit(_diag(_span(path, case, seg[c]), fix, "case-arm", f"case {pattern}:", f"{pattern} =>"), new)


def _else_arm(seg, i, expected, path):
    """`else => x` or `else -> x` as a match's last arm (Kotlin's `when`, Scala): Flow's
    catch-all arm is `_ => x`."""
    tok, arrow = seg[i], _at(seg, i + 1)
    if (
        tok.type != "ELSE"
        or "UNDERSCORE" not in expected
        or not (_is(arrow, "FATARROW") or _is(arrow, "ARROW"))
    ):
        return None
    if _at(seg, i - 1) is None or seg[i - 1].type not in ("LBRACE", "COMMA", "_SEP"):
        return None
    new = seg[:i] + [_like("UNDERSCORE", "_", tok), _like("FATARROW", "=>", arrow)] + seg[i + 2 :]
    edits = [_replace(path, tok, tok, "_")]
    if arrow.type == "ARROW":
        edits.append(_replace(path, arrow, arrow, "=>"))
    fix = _safe("write `_ =>`", *edits)
    return Habit(_diag(_span(path, tok, arrow), fix, "else-arm", f"else {arrow.value}", "_ =>"), new)


def _bar_lambda(seg, i, expected, path):
    """`|x| x + 1`, `|| 0` (Rust closures): Flow writes `flow(x) = x + 1`."""
    tok = seg[i]
    prev = _at(seg, i - 1)
    if prev is not None and prev.type not in _OPERAND_BEFORE:
        return None
    if tok.type == "OROR":
        params, close = [], i
    elif tok.type == "VBAR":
        close = next((j for j in range(i + 1, min(len(seg), i + 40)) if seg[j].type == "VBAR"), None)
        if close is None or not _params_like(seg[i + 1 : close]):
            return None
        params = seg[i + 1 : close]
    else:
        return None
    names = _text(params)
    new = seg[:i] + [_like("FLOW", "flow", tok), _like("LPAR", "(", tok)] + params
    new += [_like("RPAR", ")", seg[close]), _like("EQUAL", "=", seg[close])] + seg[close + 1 :]
    fix = _safe(f"write `flow({names}) =`", _replace(path, tok, seg[close], f"flow({names}) ="))
    written = _text(seg[i : close + 1])
    return Habit(_diag(_span(path, tok, seg[close]), fix, "lambda", written, f"flow({names}) ="), new)


def _python_lambda(seg, i, expected, path):
    """`lambda x: x + 1` (Python): Flow writes `flow(x) = x + 1`."""
    k = i - 1
    tok = _at(seg, k)
    if not _is(tok, "LOWER", "lambda"):
        return None
    colon = next((j for j in range(i, min(len(seg), i + 40)) if seg[j].type == "COLON"), None)
    if colon is None or not _params_like(seg[i:colon]) or any(t.type == "COLON" for t in seg[i:colon]):
        return None
    params = seg[i:colon]
    names = _text(params)
    new = seg[:k] + [_like("FLOW", "flow", tok), _like("LPAR", "(", tok)] + params
    new += [_like("RPAR", ")", seg[colon]), _like("EQUAL", "=", seg[colon])] + seg[colon + 1 :]
    fix = _safe(f"write `flow({names}) =`", _replace(path, tok, seg[colon], f"flow({names}) ="))
    return Habit(
        _diag(
            _span(path, tok), fix, "lambda", f"lambda {names}:" if names else "lambda:", f"flow({names}) ="
        ),
        new,
    )


_RULES = (
    _type_name,
    _elif,
    _and_or,
    _not,
    _strict_equality,
    _let_mut,
    _const,
    _arrow_lambda,
    _arm_arrow,
    _case_arm,
    _else_arm,
    _bar_lambda,
    _python_lambda,
    _f_string,
    _loop,
    _reassignment,
    _unpacking,
)
