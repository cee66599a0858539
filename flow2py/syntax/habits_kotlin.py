"""Habits of Kotlin, Java, C# and JavaScript around functions and failures, answered in Flow
(E012; habits.py has the why): Kotlin's trailing lambda `xs.filter { it.active }`, the elvis
operator `a ?: b` (Kotlin, C#'s `??` in spirit), `throw e` (Java, Kotlin, JavaScript; Python's
`raise e`) and C#'s switch expression `v switch { ... }`."""

from __future__ import annotations

from flow2py.diagnostics import Edit
from flow2py.span import Span
from flow2py.syntax.broken import hole
from flow2py.syntax.engine.scanner import CLOSERS, OPENERS, Tok
from flow2py.syntax.habits import (
    _EXPR_START,
    Habit,
    _at,
    _diag,
    _insert_after,
    _insert_before,
    _is,
    _like,
    _matching,
    _opening,
    _span,
    _text,
    _unsafe,
    _safe,
)


def _between(path: str, first: Tok, upto: Tok, text: str) -> Edit:
    """Replace what lies between `first`'s end and `upto`'s start by `text`."""
    return Edit(
        Span(path, first.end_line, first.end_column, upto.line, upto.column, first.end_pos, upto.start_pos),
        text,
    )


def _through(path: str, first: Tok, last: Tok, text: str) -> Edit:
    """Replace from `first`'s end through `last` (its end) by `text`."""
    return Edit(
        Span(
            path,
            first.end_line,
            first.end_column,
            last.end_line,
            last.end_column,
            first.end_pos,
            last.end_pos,
        ),
        text,
    )


def _chain_start(seg: list[Tok], k: int) -> int | None:
    """Where the postfix chain ending at `seg[k]` begins (`people`, `cfg.values`, `load(x).items`:
    names, dots and the brackets of calls), or None when `seg[k]` ends none."""
    j = k
    while True:
        if seg[j].type in CLOSERS:
            if seg[j].type == "RBRACE":
                return None
            o = _opening(seg, j)
            if o is None:
                return None
            if o == 0 or seg[o - 1].type not in ("LOWER", "UPPER", "RPAR", "QMARK"):
                return o if seg[o].type == "LPAR" else None  # a group `(a + b)` begins the chain
            j = o - 1
            continue
        if seg[j].type not in ("LOWER", "UPPER", "QMARK"):
            return None
        if j >= 2 and seg[j - 1].type == "DOT":
            j -= 2
            continue
        if seg[j].type == "QMARK" and j >= 1:
            j -= 1
            continue
        return j


# -- `people.filter { it.active }` ------------------------------------------------------------


def trailing_lambda(seg, i, expected, path):
    """`people.filter { it.active }`, `xs.map() { it.name }` (Kotlin's trailing lambda, its
    parameter the implicit `it`): Flow passes a function in the parentheses and names its
    parameter, `people.filter(flow(it) = it.active)`. Safe when the braces hold one expression
    and no function inside them (whose `it` would then be a choice)."""
    brace = seg[i]
    if brace.type != "LBRACE":
        return None
    k = i - 1
    empty = _is(_at(seg, k), "RPAR") and _is(_at(seg, k - 1), "LPAR")  # `xs.filter() {`
    method_at = k - 2 if empty else k
    method, dot = _at(seg, method_at), _at(seg, method_at - 1)
    if not _is(method, "LOWER") or not _is(dot, "DOT") or method_at < 2:
        return None
    close = _matching(seg, i)
    if close is None:
        return None
    b, e = i + 1, close
    while b < e and seg[b].type == "_SEP":
        b += 1
    while e > b and seg[e - 1].type == "_SEP":
        e -= 1
    body = seg[b:e]
    its = [j for j in range(b, e) if _is(seg[j], "LOWER", "it") and not _is(_at(seg, j - 1), "DOT")]
    if not body or not its or any(t.type in ("ARROW", "FATARROW") for t in body[:3]):
        return None
    depth, block = 0, False
    for t in body:
        if t.type in OPENERS:
            depth += 1
        elif t.type in CLOSERS:
            depth -= 1
        elif depth == 0 and t.type in ("_SEP", "LET"):
            block = True  # statements: the lambda's body is the block, braces kept
    start = _chain_start(seg, method_at - 2)
    if start is None:
        return None
    recv, name = _text(seg[start : method_at - 1]), method.value
    flow = f"{recv}.{name}(flow(it) = {_text(body)})"
    said = flow if len(flow) <= 60 else f"{recv}.{name}(flow(it) = ...)"
    if block:
        body, said = seg[i : close + 1], f"{recv}.{name}(flow(it) = {{ ... }})"
    inner = block or any(t.type in ("LBRACE", "FLOW", "VBAR") for t in body)
    edits = (
        _between(path, seg[k - 1], body[0], "flow(it) = ")
        if empty
        else _between(path, method, body[0], "(flow(it) = "),
        _through(path, body[-1], seg[close], ")"),
    )
    fix = (_unsafe if inner else _safe)(f"write `{name}(flow(it) = ...)`", *edits)
    habit = f"{name} {{ ... }}" if not empty else f"{name}() {{ ... }}"
    diag = _diag(_span(path, brace, seg[close]), fix, "trailing-lambda", habit, said)
    lam = [_like("FLOW", "flow", brace), _like("LPAR", "(", brace), _like("LOWER", "it", brace)]
    lam += [_like("RPAR", ")", brace), _like("EQUAL", "=", brace)]
    head = seg[: method_at + 1] + [_like("LPAR", "(", brace)]
    new = head + lam + body + [_like("RPAR", ")", seg[close])] + seg[close + 1 :]
    return Habit(diag, new)


# -- `a ?: b` ---------------------------------------------------------------------------------

# What ends the operands of `?:` (it binds tighter than comparison, looser than arithmetic)
_ELVIS_BEFORE = frozenset(
    {"LPAR", "LSQB", "LBRACE", "COMMA", "_SEP", "EQUAL", "RETURN", "FATARROW", "COLON", "ARROW"}
    | {"EQEQ", "NOTEQ", "LESSTHAN", "LESSEQ", "MORETHAN", "MOREEQ", "ANDAND", "OROR"}
    | {"IF", "GUARD", "MATCH", "LET", "ELSE"}
)
_ELVIS_AFTER = frozenset(
    {"COMMA", "_SEP", "RPAR", "RSQB", "RBRACE", "LBRACE", "QMARK", "COLON", "ELSE", "FATARROW", "$END"}
    | {"EQEQ", "NOTEQ", "LESSTHAN", "LESSEQ", "MORETHAN", "MOREEQ", "ANDAND", "OROR"}
)


def elvis(seg, i, expected, path):
    """`a ?: b` (Kotlin's elvis): Flow's Option and Result have `unwrap_or`, `a.unwrap_or(b)`
    (`(x + y).unwrap_or(b)` when `a` is not a chain of names, fields and calls). To review here:
    whether `a` is an Option or a Result is the checked program's to say (check/habit_fixes.py
    settles it)."""
    q, colon = _at(seg, i - 1), seg[i]
    if not _is(colon, "COLON") or not _is(q, "QMARK") or q.end_pos != colon.start_pos or i < 2:
        return None
    start = i - 1
    while start > 0 and seg[start - 1].type not in _ELVIS_BEFORE:
        if seg[start - 1].type in CLOSERS:
            o = _opening(seg, start - 1)
            if o is None:
                return None
            start = o
        else:
            start -= 1
    end = i + 1
    while end < len(seg) and seg[end].type not in _ELVIS_AFTER:
        if seg[end].type in OPENERS:
            c = _matching(seg, end)
            if c is None:
                return None
            end = c
        end += 1
    left, right = seg[start : i - 1], seg[i + 1 : end]
    if not left or not right or right[0].type not in _EXPR_START | {"LPAR"}:
        return None
    if end < len(seg) and seg[end].type in ("QMARK", "COLON"):
        return None  # `a ?: b ?: c`, or a conditional around it: which reading is the author's
    plain = _chain_start(seg, i - 2) == start
    a, b = _text(left), _text(right)
    flow = f"{a}.unwrap_or({b})" if plain else f"({a}).unwrap_or({b})"
    said = flow if len(flow) <= 60 else "a.unwrap_or(b)"
    edits = [_between(path, left[-1], right[0], ".unwrap_or(" if plain else ").unwrap_or(")]
    if not plain:
        edits.insert(0, _insert_before(path, left[0], "("))
    edits.append(_insert_after(path, right[-1], ")"))
    fix = _unsafe(f"write `{said}`", *edits)
    diag = _diag(_span(path, q, colon), fix, "elvis", "?:", said)
    call = [_like("DOT", ".", q), _like("LOWER", "unwrap_or", q), _like("LPAR", "(", colon)]
    recv = left if plain else [_like("LPAR", "(", left[0]), *left, _like("RPAR", ")", left[-1])]
    new = seg[:start] + recv + call + right + [_like("RPAR", ")", right[-1])] + seg[end:]
    return Habit(diag, new)


# -- `throw e` --------------------------------------------------------------------------------

_THROW_WORDS = frozenset({"throw", "raise"})
_THROW_BEFORE = frozenset({"LBRACE", "_SEP", "EQUAL", "FATARROW"})
_THROW_END = frozenset({"_SEP", "RBRACE", "COMMA", "$END"})


def throw(seg, i, expected, path):
    """`throw e` (Java, Kotlin, JavaScript), `raise e` (Python): Flow has no exceptions; a
    failure is a value, `Err(e)`, the function's result a Result. To review (the function's
    result type, and whether the `Err` is returned from where it stands, are the author's); the
    statement is a hole."""
    word = _at(seg, i - 1)
    if not _is(word, "LOWER") or word.value not in _THROW_WORDS or seg[i].type not in _EXPR_START:
        return None
    if i >= 2 and seg[i - 2].type not in _THROW_BEFORE:
        return None
    end = i
    while end < len(seg) and seg[end].type not in _THROW_END:
        if seg[end].type in OPENERS:
            c = _matching(seg, end)
            if c is None:
                return None
            end = c
        end += 1
    value = seg[i:end]
    if _is(value[0], "LOWER", "new") and len(value) > 1 and _is(value[1], "UPPER"):
        value = value[1:]  # `throw new Error("x")`: Flow has no `new` either
    flow = f"Err({_text(value)})"
    said = flow if len(flow) <= 40 else "Err(e)"
    fix = _unsafe(f"write `{said}`", Edit(_span(path, word, seg[end - 1]), flow))
    diag = _diag(_span(path, word), fix, "throw", word.value, said)
    return Habit(diag, seg[: i - 1] + [hole(word, seg[end - 1])] + seg[end:], region=seg[i - 1 : end])


# -- `v switch { A => 1, _ => 2 }` -------------------------------------------------------------


def switch_expression(seg, i, expected, path):
    """C#'s switch expression `v switch { Broken(_) => true, _ => false }`: Flow writes
    `match v { ... }`, whose arms are written so already (a safe fix)."""
    word = seg[i]
    if not _is(word, "LOWER", "switch") or not _is(_at(seg, i + 1), "LBRACE") or i == 0:
        return None
    j = _chain_start(seg, i - 1)
    if j is None or (j > 0 and seg[j - 1].type in ("DOT", "LOWER", "UPPER", "RPAR", "RSQB")):
        return None
    first, subject = seg[j], _text(seg[j:i])
    new = seg[:j] + [_like("MATCH", "match", first)] + seg[j:i] + seg[i + 1 :]
    flow = f"match {subject}"
    fix = _safe(f"write `{flow}`", Edit(_span(path, first, word), flow))
    return Habit(_diag(_span(path, first, word), fix, "writes", f"{subject} switch", flow), new)


RULES = (trailing_lambda, elvis, throw, switch_expression)
