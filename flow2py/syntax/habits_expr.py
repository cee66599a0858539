"""Habits from other languages inside an expression, answered in Flow (E012; habits.py has the
why and the rest): the C conditional `c ? a : b`, a chained comparison `0 <= x < 15`, indexing
`d["k"]` / `xs[0]`, `List[Int]` in a type, Rust's `format!(...)` and `vec![...]`, and a duration
with a unit word (`20min`)."""

from __future__ import annotations

import re

from flow2py.diagnostics import Edit
from flow2py.span import Span
from flow2py.syntax.broken import hole
from flow2py.syntax.engine.scanner import CLOSERS, OPENERS, Tok
from flow2py.syntax.habits import (
    _EXPR_START,
    _NAME,
    _TYPE_NAMES,
    Habit,
    _at,
    _delete_between,
    _diag,
    _insert_after,
    _innermost_open,
    _insert_before,
    _is,
    _like,
    _matching,
    _opening,
    _replace,
    _safe,
    _span,
    _text,
    _unsafe,
)
from flow2py.syntax import habits_heads, habits_kotlin, habits_values
from flow2py.syntax.habits import habit_at as _statement_habit_at

# Where a C-style conditional `c ? a : b` begins (its condition runs back to one of these, at
# its depth: `?:` binds looser than every operator but assignment) and ends.
_TERNARY_BEFORE = frozenset(
    {"LPAR", "LSQB", "LBRACE", "COMMA", "_SEP", "EQUAL", "RETURN", "FATARROW", "COLON"}
)
_TERNARY_AFTER = frozenset({"COMMA", "_SEP", "RPAR", "RSQB", "RBRACE"})


def _expression_start(seg, k, refuse) -> int | None:
    """Where the expression ending before `seg[k]` began, back at its depth to a token of
    `_TERNARY_BEFORE` (a bracketed group passed whole); None when it holds one of `refuse` at
    its depth (another construct's part: not the conditional's) or a bracket that is not opened."""
    start = k
    while start > 0 and seg[start - 1].type not in _TERNARY_BEFORE:
        if seg[start - 1].type in CLOSERS:
            o = _opening(seg, start - 1)
            if o is None:
                return None
            start = o
        else:
            start -= 1
        if seg[start].type in refuse:
            return None
    return start


def _as_if_else(seg, start, end, parts, then_at, else_at):
    """`seg[start:end]` as the tokens of `if COND { THEN } else { OTHER }` (`parts`), the braces
    placed at the conditional's own marks (`?` and `:`, or `if` and `else`)."""
    cond, then, other = parts
    return (
        seg[:start]
        + [_like("IF", "if", seg[start]), *cond, _like("LBRACE", "{", then_at), *then]
        + [_like("RBRACE", "}", else_at), _like("ELSE", "else", else_at), _like("LBRACE", "{", else_at)]
        + [*other, _like("RBRACE", "}", seg[end - 1])]
        + seg[end:]
    )


def _ternary(seg, i, expected, path):
    """`c ? a : b` (C, JavaScript, Java): Flow's `if` is an expression, `if c { a } else { b }`."""
    # the `?`: at the error or before it in this expression (`c ? (a) : b` reads as a call of
    # `c?` and fails at the `:`)
    q = i
    while q > 0 and seg[q].type != "QMARK":
        if seg[q].type in CLOSERS:
            o = _opening(seg, q)
            if o is None:
                return None
            q = o
        elif q < i and seg[q].type in _TERNARY_BEFORE:
            return None
        q -= 1
    if seg[q].type != "QMARK":
        return None
    # the condition: back from the `?` to where the expression began, at its depth
    start = _expression_start(seg, q, ("IF", "GUARD", "MATCH", "LET", "QMARK"))
    if start is None:
        return None
    colon = _depth0(seg, q + 1, {"COLON"} | _TERNARY_AFTER)
    if colon is None or seg[colon].type != "COLON" or colon == q + 1 or start == q or colon < i:
        return None
    end = _depth0(seg, colon + 1, _TERNARY_AFTER | {"COLON", "QMARK"})
    end = len(seg) if end is None else end
    if end == colon + 1 or (end < len(seg) and seg[end].type in ("COLON", "QMARK")):
        return None  # nested conditionals: which reading is meant is for the author to say
    cond, then, other = seg[start:q], seg[q + 1 : colon], seg[colon + 1 : end]
    qt, ct, last = seg[q], seg[colon], seg[end - 1]
    new = _as_if_else(seg, start, end, (cond, then, other), qt, ct)
    fix = _safe(
        "write `if c { a } else { b }`",
        _insert_before(path, seg[start], "if "),
        _replace(path, qt, qt, "{"),
        _replace(path, ct, ct, "} else {"),
        _insert_after(path, last, " }"),
    )
    flow = f"if {_text(cond)} {{ {_text(then)} }} else {{ {_text(other)} }}"
    if len(flow) > 60:
        flow = "if c { a } else { b }"
    return Habit(_diag(_span(path, qt, ct), fix, "ternary", "c ? a : b", flow), new)


def _python_conditional(seg, i, expected, path):
    """`a if c else b` (Python): Flow's `if` is an expression, `if c { a } else { b }`."""
    if seg[i].type != "IF" or i == 0 or "PLUS" not in expected:
        return None
    start = _expression_start(seg, i, ("IF", "GUARD", "MATCH", "LET", "QMARK", "ELSE"))
    if start is None:
        return None
    other = _depth0(seg, i + 1, {"ELSE"} | _TERNARY_AFTER)
    if other is None or seg[other].type != "ELSE" or other == i + 1 or start == i:
        return None
    end = _depth0(seg, other + 1, _TERNARY_AFTER | {"IF", "ELSE", "LBRACE"})
    end = len(seg) if end is None else end
    if end == other + 1 or (end < len(seg) and seg[end].type in ("IF", "ELSE", "LBRACE")):
        return None  # chained or braced: not the one-line form
    then, cond, rest = seg[start:i], seg[i + 1 : other], seg[other + 1 : end]
    it, et, last = seg[i], seg[other], seg[end - 1]
    new = _as_if_else(seg, start, end, (cond, then, rest), it, et)
    flow = f"if {_text(cond)} {{ {_text(then)} }} else {{ {_text(rest)} }}"
    fix = _safe(f"write `{flow}`", _replace(path, seg[start], last, flow))
    said = flow if len(flow) <= 60 else "if c { a } else { b }"
    return Habit(_diag(_span(path, it, et), fix, "ternary", "a if c else b", said), new)


_LOOSER = frozenset({"ANDAND", "OROR", "EQEQ", "NOTEQ", "LESSTHAN", "LESSEQ", "MORETHAN", "MOREEQ", "BANG"})
_POSTFIX = frozenset({"LOWER", "UPPER", "DOT", "INT", "DECIMAL", "TEXT"})


def _power(seg, i, expected, path):
    """`x ** 2` (Python, JavaScript): Flow has no power operator and std no power function; the
    product is written out (`x * x`) or a function written. No one Flow form: the expression is
    a hole, about which nothing else is said."""
    if not (_is(seg[i], "STAR") and _is(_at(seg, i - 1), "STAR")) or seg[i - 1].end_pos != seg[i].start_pos:
        return None
    start = i - 1
    while start > 0 and seg[start - 1].type in _POSTFIX | set(CLOSERS):
        if seg[start - 1].type in CLOSERS:
            o = _opening(seg, start - 1)
            if o is None:
                return None
            start = o
        else:
            start -= 1
    end = i + 1
    while end < len(seg) and seg[end].type in _POSTFIX | set(OPENERS):
        if seg[end].type in OPENERS:
            c = _matching(seg, end)
            if c is None:
                return None
            end = c
        end += 1
    if start == i - 1 or end == i + 1:
        return None
    new = seg[:start] + [hole(seg[start], seg[end - 1])] + seg[end:]
    diag = _diag(_span(path, seg[i - 1], seg[i]), None, "power", "**")
    return Habit(diag, new, region=seg[start:end])


def _depth0(seg, k, stops):
    """The index of the first token from `seg[k]` on whose type is in `stops`, outside brackets
    opened from `k` on (None: the segment ends first)."""
    depth = 0
    for j in range(k, len(seg)):
        t = seg[j].type
        if depth == 0 and t in stops:
            return j
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
    return None


_ORDERING = frozenset({"LESSTHAN", "LESSEQ", "MORETHAN", "MOREEQ"})
_PURE_OPERAND = frozenset({"LOWER", "UPPER", "DOT", "INT", "DECIMAL", "DURATION", "PLUS", "MINUS", "STAR"})


def _chained_comparison(seg, i, expected, path):
    """`0 <= x < 15` (Python; in C and JavaScript it compares a Bool): Flow compares two values
    at a time, `0 <= x && x < 15`."""
    op2 = seg[i]
    if op2.type not in _ORDERING or "ANDAND" not in expected:
        return None  # (not after an expression: `<`, `>` in a type)
    # the middle operand: back from the second comparison to the first, at this depth
    k = i - 1
    while k > 0 and seg[k].type not in _ORDERING:
        t = seg[k].type
        if t in CLOSERS:
            o = _opening(seg, k)
            if o is None:
                return None
            k = o
        elif t in OPENERS or t in _TERNARY_BEFORE or t in ("ANDAND", "OROR", "EQEQ", "NOTEQ"):
            return None
        k -= 1
    if k <= 0 or seg[k].type not in _ORDERING or k == i - 1:
        return None
    middle = seg[k + 1 : i]
    written = _text(middle)
    copy = [_like(t.type, t.value, op2) for t in middle]
    new = seg[:i] + [_like("ANDAND", "&&", op2), *copy] + seg[i:]
    edit = _insert_after(path, middle[-1], f" && {written}")
    if all(t.type in _PURE_OPERAND for t in middle):
        fix = _safe(f"write `&& {written}`", edit)
    else:
        # the middle holds a call: written twice, it runs twice (bind it with `let` first)
        fix = _unsafe(f"write `&& {written}` (or bind it with `let` first: it is computed twice)", edit)
    before, after = _text([seg[k]]), _text([op2])
    flow = f"a {before} {written} && {written} {after} b"
    return Habit(_diag(_span(path, seg[k], op2), fix, "chained-comparison", written, flow), new)


def _index(seg, i, expected, path):
    """`d["key"]`, `xs[0]` (most languages): Flow has no indexing; `d.get("key")` and `xs.get(0)`
    (dict.get, list.get) give an Option, since the key or index may be missing."""
    tok = seg[i]
    prev = _at(seg, i - 1)
    if tok.type != "LSQB" or prev is None or prev.type not in ("LOWER", "UPPER", "RPAR", "RSQB", "QMARK"):
        return None
    if prev.end_pos != tok.start_pos or "LSQB" in expected:
        return None
    close = _matching(seg, i)
    # `d[a, b]` (a tuple key) has no one answer; `xs[1:3]` is a slice (below)
    if close is None or close == i + 1:
        return None
    stop = _depth0(seg, i + 1, {"COMMA", "COLON", "RSQB"})  # None: no `]` at this depth before the end
    sliced = stop != close
    if sliced and (stop is None or seg[stop].type != "COLON"):
        return None
    if "PLUS" not in expected:
        if prev.type != "UPPER" or "LESSTHAN" not in expected:
            return None
        # a type `List[Text]` (Python): Flow writes type arguments in `<...>`
        args = _text(seg[i + 1 : close])
        new = seg[:i] + [_like("LESSTHAN", "<", tok), *seg[i + 1 : close], _like("MORETHAN", ">", seg[close])]
        close_edit = _replace(path, seg[close], seg[close], ">")
        if prev.value == "Optional":  # Python's `Optional[Text]` is one habit: `Option<Text>`
            new[i - 1] = _like("UPPER", "Option", prev)
            flow = f"Option<{args}>"
            fix = _safe(f"write `{flow}`", _replace(path, prev, tok, "Option<"), close_edit)
            diag = _diag(_span(path, prev, seg[close]), fix, "optional-type", f"Optional[{args}]", flow)
            return Habit(diag, new + seg[close + 1 :])
        fix = _safe("write `<...>`", _replace(path, tok, tok, "<"), close_edit)
        written, flow = f"{prev.value}[{args}]", f"{prev.value}<{args}>"
        diag = _diag(_span(path, tok, seg[close]), fix, "type-args", written, flow)
        return Habit(diag, new + seg[close + 1 :])
    # the indexed value: the postfix chain before the `[` (`cfg.values`, `load(x)`)
    start = i - 1
    while True:
        if seg[start].type in CLOSERS:
            o = _opening(seg, start)
            if o is None:
                return None
            start = o
        if start > 0 and seg[start - 1].type in ("DOT", "LOWER", "UPPER", "RPAR", "RSQB", "QMARK"):
            if seg[start - 1].type in ("LOWER", "UPPER") and seg[start].type in ("LOWER", "UPPER"):
                break
            start -= 1
            continue
        break
    if sliced:
        return _slice(seg, i, start, close, path)
    recv, key = _text(seg[start:i]), _text(seg[i + 1 : close])
    flow = f"{recv}.get({key})"
    fix = _unsafe(
        f"write `{flow}` (an Option: match on it)",
        _replace(path, tok, tok, ".get("),
        _replace(path, seg[close], seg[close], ")"),
    )
    # The value read would be an Option, not what `[]` gave: a hole keeps its uses quiet.
    new = seg[:start] + [hole(seg[start], seg[close])] + seg[close + 1 :]
    diag = _diag(_span(path, tok, seg[close]), fix, "index", f"{recv}[{key}]", flow)
    return Habit(diag, new, region=seg[start : close + 1])


def _slice(seg, i, start, close, path):
    """`words[n:]`, `xs[a:b]`, `t[:3]` (Python's slice): Flow's `.slice(start, end)` (list, text
    and bytes alike, both clamped as Python clamps). `xs[a:]` is `xs.slice(a, xs.length())`, so
    the value is written twice: safe when it is names and fields (reading it twice is reading
    it once) and no bound is negative (Python counts those from the end, Flow's slice does not)."""
    colon = _depth0(seg, i + 1, {"COLON"})
    if colon is None or colon > close:
        return None
    # one colon, and nothing after the bound but the `]` (a `,` of a later list is not this one's)
    if _depth0(seg, colon + 1, {"COLON", "COMMA", "RSQB"}) != close:
        return None
    recv, lo, hi = seg[start:i], seg[i + 1 : colon], seg[colon + 1 : close]
    at = seg[close]
    length_toks = [*recv, _like("DOT", ".", at), _like("LOWER", "length", at), _like("LPAR", "(", at)]
    length_toks.append(_like("RPAR", ")", at))

    def bound_toks(b, default):
        if b and b[0].type == "MINUS":
            return [*length_toks, *b]
        return b or default

    begin = bound_toks(lo, [_like("INT", "0", seg[colon])])
    end = bound_toks(hi, length_toks)
    length = _text(recv) + ".length()"

    def bound(b, default):
        if b and b[0].type == "MINUS":  # counted from the end
            return f"{length} - {_text(b[1:])}"
        return _text(b) if b else default

    written = f"{_text(recv)}.slice({bound(lo, '0')}, {bound(hi, length)})"
    plain = all(t.type in ("LOWER", "DOT") for t in recv)
    # `-n` of a negative n is not counted from the end in Python: only a literal is sure
    negative = any(b and b[0].type == "MINUS" and [t.type for t in b] != ["MINUS", "INT"] for b in (lo, hi))
    fix = (_safe if plain and not negative else _unsafe)(
        f"write `{written}`", _replace(path, seg[start], seg[close], written)
    )
    toks = [
        *recv,
        _like("DOT", ".", seg[i]),
        _like("LOWER", "slice", seg[i]),
        _like("LPAR", "(", seg[i]),
        *begin,
        _like("COMMA", ",", seg[colon]),
        *end,
        _like("RPAR", ")", seg[close]),
    ]
    habit = f"{_text(recv)}[{_text(lo)}:{_text(hi)}]"
    diag = _diag(_span(path, seg[i], seg[close]), fix, "slice", habit, written)
    return Habit(diag, seg[:start] + toks + seg[close + 1 :])


# Where `a in b` (Python's membership) may begin and end, at its depth.
_IN_BEFORE = frozenset(
    {"LPAR", "LSQB", "LBRACE", "COMMA", "_SEP", "EQUAL", "RETURN", "FATARROW", "COLON", "ANDAND", "OROR"}
    | {"BANG", "IF", "GUARD"}
)
_IN_AFTER = frozenset({"_SEP", "COMMA", "RPAR", "RSQB", "RBRACE", "ANDAND", "OROR", "LBRACE", "ELSE"})
_CHAIN = frozenset({"LOWER", "UPPER", "INT", "DECIMAL", "TEXT", "TRUE", "FALSE"})


def _chain_back(seg, k):
    """The start of the postfix chain (`a.b(c).d`, a literal, a bracketed group) ending at
    `seg[k]`, or None."""
    j = k
    while True:
        if seg[j].type in CLOSERS:
            o = _opening(seg, j)
            if o is None:
                return None
            j = o
        elif seg[j].type not in _CHAIN:
            return None
        prev = _at(seg, j - 1)
        if prev is not None and prev.type == "DOT" and j >= 2:
            j -= 2
        elif prev is not None and seg[j].type in OPENERS and prev.type in ("LOWER", "UPPER", "RPAR", "RSQB"):
            j -= 1
        else:
            return j


def _chain_forward(seg, k):
    """The last token of the postfix chain starting at `seg[k]`, or None."""
    if _at(seg, k) is None or (seg[k].type not in _CHAIN and seg[k].type not in ("LPAR", "LSQB")):
        return None
    j = _matching(seg, k) if seg[k].type in OPENERS else k
    while j is not None:
        nxt = _at(seg, j + 1)
        if nxt is not None and nxt.type == "DOT" and _is(_at(seg, j + 2), "LOWER"):
            j += 2
        elif nxt is not None and nxt.type == "LPAR" and nxt.start_pos == seg[j].end_pos:
            j = _matching(seg, j + 1)
        elif nxt is not None and nxt.type == "QMARK":
            j += 1
        else:
            return j
    return None


def _membership(seg, i, expected, path):
    """`x in xs` (Python's membership): Flow asks the collection, `xs.contains(x)` (list, set,
    dict keys and text alike); one answer, safe."""
    tok = seg[i]
    if not _is(tok, "LOWER", "in") or i == 0:
        return None
    a = _chain_back(seg, i - 1)
    z = _chain_forward(seg, i + 1)
    if a is None or z is None or (a > 0 and seg[a - 1].type not in _IN_BEFORE):
        return None
    if _at(seg, z + 1) is not None and seg[z + 1].type not in _IN_AFTER:
        return None
    item, coll = seg[a:i], seg[i + 1 : z + 1]
    written = f"{_text(coll)}.contains({_text(item)})"
    fix = _safe(f"write `{written}`", _replace(path, seg[a], seg[z], written))
    toks = [
        *coll,
        _like("DOT", ".", tok),
        _like("LOWER", "contains", tok),
        _like("LPAR", "(", tok),
        *item,
        _like("RPAR", ")", tok),
    ]
    diag = _diag(_span(path, seg[a], seg[z]), fix, "membership", _text(seg[a : z + 1]), written)
    return Habit(diag, seg[:a] + toks + seg[z + 1 :])


_NONE_WORDS = frozenset({"None", "null", "nil", "undefined"})


def _type_start(seg: list[Tok], k: int) -> int | None:
    """The index where the type ending at `seg[k]` starts (`Text`, `List<Int>`, `geo.Point`)."""
    j = k
    if seg[j].type == "MORETHAN":
        depth = 0
        while j >= 0:
            depth += seg[j].type == "MORETHAN"
            depth -= seg[j].type == "LESSTHAN"
            if depth == 0:
                break
            j -= 1
        j -= 1
    if j < 1 or seg[j].type != "UPPER":
        return None
    if j >= 3 and seg[j - 1].type == "DOT" and seg[j - 2].type == "LOWER":
        j -= 2
    return j


def _optional_type(seg, i, expected, path):
    """`Text | None`, `Text | null` (Python, TypeScript), `Text?` (Kotlin, Swift, C#) in a type:
    Flow writes a value that may be absent as `Option<Text>`."""
    tok = seg[i]
    if "PLUS" in expected or i < 2:
        return None
    if tok.type == "VBAR" and _at(seg, i + 1) is not None and seg[i + 1].value in _NONE_WORDS:
        end = i + 1
    elif tok.type == "QMARK" and seg[i - 1].end_pos == tok.start_pos:
        end = i
    else:
        return None
    start = _type_start(seg, i - 1)
    if start is None or seg[start - 1].type not in ("COLON", "ARROW", "LESSTHAN", "COMMA"):
        return None
    inner = _text(seg[start:i])
    flow = f"Option<{inner}>"
    opened = [_like("UPPER", "Option", seg[start]), _like("LESSTHAN", "<", seg[start])]
    new = seg[:start] + opened + seg[start:i] + [_like("MORETHAN", ">", seg[end])] + seg[end + 1 :]
    prev, last = seg[i - 1], seg[end]
    closing = Edit(
        Span(
            path, prev.end_line, prev.end_column, last.end_line, last.end_column, prev.end_pos, last.end_pos
        ),
        ">",
    )
    fix = _safe(f"write `{flow}`", _insert_before(path, seg[start], "Option<"), closing)
    written = _text(seg[start : end + 1])
    return Habit(_diag(_span(path, seg[start], last), fix, "optional-type", written, flow), new)


_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _rust_macro(seg, i, expected, path):
    """`format!("{} items", n)` (Rust): Flow joins text with `++`; `vec![1, 2]` is `[1, 2]`."""
    tok = seg[i]
    name = _at(seg, i - 1)
    if tok.type != "BANG" or not _is(name, "LOWER") or name.end_pos != tok.start_pos:
        return None
    opener = _at(seg, i + 1)
    if name.value == "vec" and _is(opener, "LSQB"):
        new = seg[: i - 1] + seg[i + 1 :]
        fix = _safe("write the list without `vec!`", _delete_between(path, name, opener))
        return Habit(_diag(_span(path, name, tok), fix, "vec-macro", "vec![...]", "[...]"), new)
    if name.value != "format" or not _is(opener, "LPAR"):
        return None
    close = _matching(seg, i + 1)
    text = _at(seg, i + 2)
    if close is None or not _is(text, "TEXT"):
        return None
    args = _split_args(seg[i + 3 : close])
    body = text.value[1:-1]
    parts = _PLACEHOLDER.findall(body.replace("{{", "").replace("}}", ""))
    if not parts and not args:
        plain = '"' + body.replace("{{", "{").replace("}}", "}") + '"'
        new = seg[: i - 1] + [_like("TEXT", plain, text)] + seg[close + 1 :]
        fix = _safe("write the text", _replace(path, name, seg[close], plain))
        return Habit(_diag(_span(path, name, seg[close]), fix, "format-plain", "format!", plain), new)
    joined = _format_joined(body, args)
    fix = _unsafe("join the parts with `++`", _replace(path, name, seg[close], joined)) if joined else None
    new = seg[: i - 1] + [hole(name, seg[close])] + seg[close + 1 :]
    named = [_like("LOWER", n, text) for p in parts for n in _NAME.findall(p)]
    diag = _diag(_span(path, name, seg[close]), fix, "format", "format!")
    return Habit(diag, new, region=[name, *named, *seg[i : close + 1]])


def _split_args(toks: list[Tok]) -> list[str]:
    """The texts of `, a, b` (the arguments after a format string), split at depth 0."""
    out: list[list[Tok]] = []
    depth = 0
    for t in toks:
        if t.type in OPENERS:
            depth += 1
        elif t.type in CLOSERS:
            depth -= 1
        if depth == 0 and t.type == "COMMA":
            out.append([])
            continue
        if out:
            out[-1].append(t)
    return [_text(a) for a in out if a]


def _format_joined(body: str, args: list[str]) -> str | None:
    """`"a" ++ x ++ "b"` for a Rust format string `a{}b` with arguments `args` (`{}` takes the
    next one, `{0}` one by position, `{name}` the name); None when a placeholder is of another
    kind (`{:?}`, `{:>8}`) or the arguments do not match."""
    out = []
    nxt = 0
    used = set()
    k = 0
    lit = ""
    while k < len(body):
        if body.startswith("{{", k) or body.startswith("}}", k):
            lit += body[k]
            k += 2
            continue
        if body[k] == "{":
            end = body.find("}", k)
            if end < 0:
                return None
            inner = body[k + 1 : end]
            if inner == "":
                if nxt >= len(args):
                    return None
                part = args[nxt]
                used.add(nxt)
                nxt += 1
            elif inner.isdigit() and int(inner) < len(args):
                part = args[int(inner)]
                used.add(int(inner))
            elif _NAME.fullmatch(inner):
                part = inner
            else:
                return None
            if lit:
                out.append('"' + lit + '"')
                lit = ""
            out.append(part)
            k = end + 1
            continue
        lit += body[k]
        k += 1
    if lit:
        out.append('"' + lit + '"')
    if len(used) != len(args):
        return None
    return " ++ ".join(out) if out else '""'


def _increment(seg, i, expected, path):
    """`n++` (C, JavaScript, Go) as a value: Flow values never change, so it is `n + 1`. Safe
    where the value is passed on (before `)`, `,`, `]` or `}`); the same answer at the end of a
    line, to review (a statement `n++` meant a new binding: `let n = n + 1`)."""
    op = _at(seg, i - 1)
    name = _at(seg, i - 2)
    if not _is(op, "PLUSPLUS") or not _is(name, "LOWER") or op.start_pos != name.end_pos:
        return None
    if seg[i].type not in ("RPAR", "COMMA", "RSQB", "RBRACE", "_SEP", "$END"):
        return None
    new = seg[: i - 1] + [_like("PLUS", "+", op), _like("INT", "1", op)] + seg[i:]
    make = _safe if seg[i].type in ("RPAR", "COMMA", "RSQB", "RBRACE") else _unsafe
    fix = make(f"write `{name.value} + 1`", _replace(path, op, op, " + 1"))
    return Habit(_diag(_span(path, op), fix, "increment", f"{name.value}++", f"{name.value} + 1"), new)


def _spread(seg, i, expected, path):
    """`[x, ...rest]`, `{ ...base, f: 1 }` (JavaScript's spread): Flow writes `..rest`, `..base`."""
    dots = _at(seg, i - 1)
    tok = seg[i]
    if not _is(tok, "DOT") or not _is(dots, "DOTDOT") or dots.end_pos != tok.start_pos:
        return None
    before = _at(seg, i - 2)
    if before is None or before.type not in ("LSQB", "COMMA", "LBRACE"):
        return None
    after = _at(seg, i + 1)
    if after is None or after.type not in ("LOWER", "UNDERSCORE", "RSQB", "RBRACE", "COMMA"):
        return None
    new = seg[:i] + seg[i + 1 :]
    fix = _safe("write `..`", _replace(path, dots, tok, ".."))
    return Habit(_diag(_span(path, dots, tok), fix, "spread", "...", ".."), new)


def _record_by_keyword(seg, i, expected, path):
    """`Invoice(number=1, total=2)` (Python's dataclasses, Kotlin's named arguments): Flow builds
    a record, or a constructor with named values, with its fields named in braces,
    `Invoice { number: 1, total: 2 }`."""
    if not _is(seg[i], "EQUAL") or not _is(_at(seg, i - 1), "LOWER"):
        return None
    o = _innermost_open(seg, i)
    if o is None or seg[o].type != "LPAR" or o == 0 or seg[o - 1].type != "UPPER":
        return None
    close = _matching(seg, o)
    if close is None or close == o + 1:
        return None
    eqs = []  # the `=` of each argument, every one `name=value` at the call's own depth
    k = o + 1
    while k < close:
        if not (_is(seg[k], "LOWER") and _is(_at(seg, k + 1), "EQUAL")) or k + 2 >= close:
            return None
        eqs.append(k + 1)
        end = _depth0(seg, k + 2, {"COMMA", "RPAR"})
        if end is None or end > close:
            return None
        k = end + 1
    new = list(seg)
    new[o] = _like("LBRACE", "{", seg[o])
    new[close] = _like("RBRACE", "}", seg[close])
    for q in eqs:
        new[q] = _like("COLON", ":", seg[q])
    edits = [_replace(path, seg[o], seg[o], " { "), _replace(path, seg[close], seg[close], " }")]
    parts = []
    for n, q in enumerate(eqs):
        name, value = seg[q - 1], seg[q + 1]
        sp = Span(
            path, name.end_line, name.end_column, value.line, value.column, name.end_pos, value.start_pos
        )
        edits.append(Edit(sp, ": "))
        parts.append(f"{name.value}: ...")
    flow = f"{seg[o - 1].value} {{ {', '.join(parts)} }}"
    said = flow if len(flow) <= 60 else f"{seg[o - 1].value} {{ {parts[0]}, ... }}"
    fix = _safe(f"write `{said}`", *edits)
    diag = _diag(
        _span(path, seg[o - 1], seg[close]), fix, "record-keywords", _text(seg[o - 1 : close + 1]), said
    )
    return Habit(diag, new)


def _keyword_args(seg, i, expected, path):
    """`agent(goal, history=[], budget=n)` (Python's keyword arguments): Flow passes arguments
    by position. One diagnostic for the call, naming every `name=`; the call is parsed with them
    dropped (the values in the order written). To review: the parameters' order may differ."""
    if not _is(seg[i], "EQUAL") or not _is(_at(seg, i - 1), "LOWER"):
        return None
    before = _at(seg, i - 2)
    if before is None or before.type not in ("LPAR", "COMMA"):
        return None
    o = _innermost_open(seg, i)
    if o is None or seg[o].type != "LPAR" or o == 0 or seg[o - 1].type not in ("LOWER", "UPPER", "RPAR"):
        return None
    if o >= 2 and (seg[o - 2].type == "FLOW" or seg[o - 2].value in ("def", "fn", "function", "func")):
        return None  # a declaration's parameters with defaults: not a call
    close = _matching(seg, o)
    if close is None:
        return None
    drop = []  # (name index, `=` index) of each keyword argument at the call's own depth
    depth = 0
    for k in range(o + 1, close):
        t = seg[k].type
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
        elif (
            depth == 0
            and t == "LOWER"
            and _is(_at(seg, k + 1), "EQUAL")
            and seg[k - 1].type in ("LPAR", "COMMA")
        ):
            drop.append(k)
    gone = {k for n in drop for k in (n, n + 1)}
    new = [t for k, t in enumerate(seg) if k not in gone]
    names = ", ".join(f"`{seg[n].value}=`" for n in drop)
    fix = _unsafe("pass the values by position", *(_delete_between(path, seg[n], seg[n + 2]) for n in drop))
    diag = _diag(_span(path, seg[drop[0]], seg[drop[-1] + 1]), fix, "keyword-args", names)
    return Habit(diag, new)


def _let_else(seg, i, expected, path):
    """`let Some(x) = e else { return ... }` (Rust's let-else): Flow's `guard let`."""
    if not _is(seg[i], "ELSE") or not _is(_at(seg, i + 1), "LBRACE"):
        return None
    o = _innermost_open(seg, i)
    k = 0 if o is None else o + 1  # the statement's start: after the last separator at this depth
    depth = 0
    for j in range(k, i):
        t = seg[j].type
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
        elif t == "_SEP" and depth == 0:
            k = j + 1
    if not _is(_at(seg, k), "LET"):
        return None
    let = seg[k]
    new = seg[:k] + [_like("GUARD", "guard", let)] + seg[k:]
    fix = _safe("write `guard let`", _insert_before(path, let, "guard "))
    return Habit(_diag(_span(path, let), fix, "let-else", "let ... else", "guard let ... else"), new)


# a word of another language before an expression, and what Flow writes in its place
_PREFIX_WORDS = {"await": None, "new": None, "switch": "match"}


_EMPTY_VALUES = {
    "Vec": ("[]", ("LSQB", "RSQB")),
    "VecDeque": ("[]", ("LSQB", "RSQB")),
    "Array": ("[]", ("LSQB", "RSQB")),
    "ArrayList": ("[]", ("LSQB", "RSQB")),
    "String": ('""', ("TEXT",)),
    "HashMap": ("[:]", ("LSQB", "COLON", "RSQB")),
    "BTreeMap": ("[:]", ("LSQB", "COLON", "RSQB")),
    "Map": ("[:]", ("LSQB", "COLON", "RSQB")),
}
_EMPTY_TEXTS = {"LSQB": "[", "RSQB": "]", "COLON": ":", "TEXT": '""'}


def _empty_value(seg, i, expected, path):
    """`Vec::new()`, `String::new()`, `HashMap::new()` (Rust), `new Map()`, `new Array()`
    (JavaScript, Java): Flow writes the empty value itself, `[]`, `""`, `[:]`."""
    tok = seg[i]
    if _is(tok, "COLON") and _is(_at(seg, i + 1), "COLON") and _is(_at(seg, i - 1), "UPPER"):
        first, ty, call = i - 1, seg[i - 1], i + 2  # `Vec` `:` `:` `new` `(` `)`
        if not (_is(_at(seg, call), "LOWER", "new") and _is(_at(seg, call + 1), "LPAR")):
            return None
        close = call + 2
    elif _is(tok, "UPPER") and _is(_at(seg, i - 1), "LOWER", "new") and _is(_at(seg, i + 1), "LPAR"):
        if i >= 2 and seg[i - 2].type in ("DOT", "LOWER", "UPPER", "RPAR", "RSQB"):
            return None
        first, ty, close = i - 1, tok, i + 2
    else:
        return None
    if ty.value not in _EMPTY_VALUES or not _is(_at(seg, close), "RPAR"):
        return None
    flow, kinds = _EMPTY_VALUES[ty.value]
    new = seg[:first] + [_like(k, _EMPTY_TEXTS[k], seg[first]) for k in kinds] + seg[close + 1 :]
    written = _text(seg[first : close + 1])
    fix = _safe(f"write `{flow}`", _replace(path, seg[first], seg[close], flow))
    return Habit(_diag(_span(path, seg[first], seg[close]), fix, "empty-value", written, flow), new)


def _go_field(seg, i, expected, path):
    """`name string` (Go's fields and parameters: the type after the name, no colon): Flow writes
    `name: Text`, in one diagnostic with the type's name."""
    tok, name = seg[i], _at(seg, i - 1)
    if expected != {"COLON"} or not _is(name, "LOWER") or tok.type not in ("LOWER", "UPPER"):
        return None
    flow_type = _TYPE_NAMES.get(tok.value) if tok.type == "LOWER" else tok.value
    if flow_type is None:
        return None
    new = seg[:i] + [_like("COLON", ":", tok), _like("UPPER", flow_type, tok)] + seg[i + 1 :]
    flow = f"{name.value}: {flow_type}"
    args = "<...>" if _is(_at(seg, i + 1), "LESSTHAN") else ""
    fix = _safe(f"write `{flow}{args}`", _replace(path, name, tok, flow))
    said = f"{name.value} {tok.value}{args}", f"{flow}{args}"
    return Habit(_diag(_span(path, name, tok), fix, "go-field", *said), new)


def _prefix_word(seg, i, expected, path):
    """`await warehouse.ship(id)` (JavaScript, Python, Rust): a Tool call in Flow is awaited by
    the runtime, so there is nothing to write; `new Order { ... }` (Java, JavaScript, Kotlin): a
    record or constructor is built by its name alone; `switch x {` (C, JavaScript, Go) is
    `match x {`."""
    word = _at(seg, i - 1)
    if not _is(word, "LOWER") or word.value not in _PREFIX_WORDS or seg[i].type not in _EXPR_START:
        return None
    if i >= 2 and seg[i - 2].type in ("DOT", "LOWER", "UPPER", "RPAR", "RSQB"):
        return None  # `x.await`, or the word as an operand: not the habit
    flow = _PREFIX_WORDS[word.value]
    if flow is None:
        if word.value == "new" and seg[i].type != "UPPER":
            return None  # `new Order {`, `new Order(...)`: only before a type's name
        if word.value == "await" and not _is_call_at(seg, i):
            return _await_task(seg, i, path)
        new = seg[: i - 1] + seg[i:]
        fix = _safe(f"remove `{word.value}`", _delete_between(path, word, seg[i]))
        return Habit(_diag(_span(path, word), fix, word.value, word.value), new)
    if not _opens_block_after(seg, i):
        return None
    new = seg[: i - 1] + [_like("MATCH", "match", word)] + seg[i:]
    fix = _safe(f"write `{flow}`", _replace(path, word, word, flow))
    return Habit(_diag(_span(path, word), fix, "writes", word.value, flow), new)


def _await_task(seg, i, path):
    """`await t` of a name (a task handle, most often): Flow waits for a task with
    `task.await(t)`; one equivalent, safe (a missing `use "std@v1/task"` is reported with its
    own fix)."""
    word, name = seg[i - 1], seg[i]
    after = _at(seg, i + 1)
    if name.type != "LOWER" or (
        after is not None and after.type not in ("_SEP", "RPAR", "RSQB", "RBRACE", "COMMA", "$END")
    ):
        return None
    new = (
        seg[: i - 1]
        + [_like("LOWER", "task", word), _like("DOT", ".", word), _like("LOWER", "await", word)]
        + [_like("LPAR", "(", name), name, _like("RPAR", ")", name)]
        + seg[i + 1 :]
    )
    fix = _safe(f"write `task.await({name.value})`", _replace(path, word, name, f"task.await({name.value})"))
    return Habit(
        _diag(_span(path, word), fix, "writes", f"await {name.value}", f"task.await({name.value})"), new
    )


def _is_call_at(seg, i) -> bool:
    """Whether `seg[i]` begins a call: `f(`, `m.f(`."""
    k = i
    while _is(_at(seg, k), "LOWER") and _is(_at(seg, k + 1), "DOT"):
        k += 2
    return seg[k].type in ("LOWER", "UPPER") and _is(_at(seg, k + 1), "LPAR")


def _path_separator(seg, i, expected, path):
    """`Diet::Vegetarian` (Rust, C++): a constructor is named alone in Flow (`Vegetarian`), and a
    module's member with a dot (`planner::next` -> `planner.next`)."""
    owner, sep, member = _at(seg, i - 1), seg[i], _at(seg, i + 1)
    if not _is(sep, "COLON") or not _is(_at(seg, i + 1), "COLON"):
        return None
    member = _at(seg, i + 2)
    if (
        owner is None
        or member is None
        or owner.type not in ("UPPER", "LOWER")
        or member.type not in ("UPPER", "LOWER")
    ):
        return None
    second = seg[i + 1]
    if (
        owner.end_pos != sep.start_pos
        or sep.end_pos != second.start_pos
        or second.end_pos != member.start_pos
    ):
        return None
    if owner.type == "UPPER":
        new = seg[: i - 1] + seg[i + 2 :]
        fix = _safe(f"write `{member.value}`", _delete_between(path, owner, member))
        return Habit(
            _diag(_span(path, owner, second), fix, "path-type", f"{owner.value}::", member.value), new
        )
    new = seg[:i] + [_like("DOT", ".", sep)] + seg[i + 2 :]
    fix = _safe("write `.`", _replace(path, sep, second, "."))
    return Habit(_diag(_span(path, sep, second), fix, "writes", "::", "."), new)


def _opens_block_after(seg, i) -> bool:
    """Whether a `{` follows on the line, at the depth of `seg[i]`: the body of `switch x {`."""
    depth = 0
    for k in range(i, len(seg)):
        t = seg[k].type
        if t == "LBRACE" and depth == 0:
            return True
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
            if depth < 0:
                return False
        elif t == "_SEP" and depth == 0:
            return False
    return False


def _short_declaration(seg, i, expected, path):
    """`p := probe(url)` (Go's short declaration): Flow's `let p = probe(url)`; `let p := ...`
    (the `:=` kept after a `let`) is `let p = ...`."""
    if _is(seg[i], "EQUAL") and _is(_at(seg, i - 1), "COLON") and seg[i - 1].end_pos == seg[i].start_pos:
        name = _at(seg, i - 2)
        if _is(name, "LOWER") and _is(_at(seg, i - 3), "LET"):
            fix = _safe(f"write `let {name.value} =`", _replace(path, seg[i - 1], seg[i], "="))
            diag = _diag(
                _span(path, seg[i - 1], seg[i]), fix, "writes", f"let {name.value} :=", f"let {name.value} ="
            )
            return Habit(diag, seg[: i - 1] + seg[i:])
    name, colon, eq = _at(seg, i - 1), seg[i], _at(seg, i + 1)
    if not _is(name, "LOWER") or not _is(colon, "COLON") or not _is(eq, "EQUAL"):
        return None
    if colon.end_pos != eq.start_pos or (i >= 2 and seg[i - 2].type not in ("LBRACE", "_SEP")):
        return None
    new = seg[: i - 1] + [_like("LET", "let", name), name, _like("EQUAL", "=", colon)] + seg[i + 2 :]
    fix = _safe(
        f"write `let {name.value} =`",
        _insert_before(path, name, "let "),
        _replace(path, colon, eq, "="),
    )
    return Habit(_diag(_span(path, colon, eq), fix, "writes", f"{name.value} :=", f"let {name.value} ="), new)


# another language's (or English's) duration unit -> Flow's one-letter (or two-letter) unit
_DURATION_UNITS = {
    **dict.fromkeys(["min", "mins", "minute", "minutes", "mn"], "m"),
    **dict.fromkeys(["sec", "secs", "second", "seconds"], "s"),
    **dict.fromkeys(["hr", "hrs", "hour", "hours"], "h"),
    **dict.fromkeys(["day", "days"], "d"),
    **dict.fromkeys(["msec", "msecs", "millis", "milliseconds"], "ms"),
    **dict.fromkeys(["usec", "micros", "microseconds"], "us"),
    **dict.fromkeys(["nsec", "nanos", "nanoseconds"], "ns"),
}


def _duration_unit(seg, i, expected, path):
    """`20min`, `5secs`, `2hours`: a number and a unit word, with no space between. Flow's
    duration literals take one unit (`ns us ms s m h d`): `20m`, `5s`, `2h`."""
    num, tok = _at(seg, i - 1), seg[i]
    if not _is(num, "INT") or not num.value[:1].isdigit() or num.value.startswith("0x"):
        return None
    if tok.type != "LOWER" or num.end_pos != tok.start_pos:
        return None
    unit = _DURATION_UNITS.get(tok.value)
    if unit is None:
        return None
    text = num.value + unit
    one = Tok(
        "DURATION", text, num.start_pos, num.line, num.column, tok.end_line, tok.end_column, tok.end_pos
    )
    fix = _safe(f"write `{text}`", _replace(path, num, tok, text))
    return Habit(
        _diag(_span(path, num, tok), fix, "duration-unit", num.value + tok.value, text),
        seg[: i - 1] + [one] + seg[i + 1 :],
    )


EXPRESSION_RULES = (
    _go_field,
    _empty_value,
    _duration_unit,
    _prefix_word,
    _path_separator,
    _short_declaration,
    _rust_macro,
    _optional_type,
    _ternary,
    _python_conditional,
    _power,
    _chained_comparison,
    _index,
    _membership,
    _increment,
    _spread,
    _record_by_keyword,
    _keyword_args,
    _let_else,
)


def habit_at(seg: list[Tok], i: int, expected: set[str], path: str) -> Habit | None:
    """The habit that explains the syntax error at `seg[i]` (habits.habit_at's rules, then these,
    then habits_values.py's; its record fields before them all: `Box { w = 1 }` is no assignment)."""
    for rule in habits_values.FIRST_RULES:
        h = rule(seg, i, expected, path)
        if h is not None:
            return h
    h = habits_heads.foreign_head(seg, i, expected, path) or _statement_habit_at(seg, i, expected, path)
    if h is not None:
        return h
    for rule in EXPRESSION_RULES + habits_values.RULES + habits_kotlin.RULES:
        h = rule(seg, i, expected, path)
        if h is not None:
            return h
    return None
