"""Habits from other languages where Flow wants a value, answered in Flow (E012; habits.py has
the why): a record literal's fields given with `=` or `let` (`Box { w = 1 }`: Python's and
Rust's assignment), a `let` written as an argument or a field's value, a Python list
comprehension `[f(x) for x in xs if p(x)]`, Go's several results `note, err := f()`; and
`async` before a declaration's `flow`; `||` between a pattern's alternatives; and where Flow
wants a pattern, an enum's constructor named through its type (`Role.User =>`) and Rust's rest
of a slice bound with `@` (`[e, rest @ ..]`); Go's `_ = f()`, a result type written without
`->` (`flow f(x: Int) Text {`), a Python dict in braces (`{"a": 1}`) and PHP's `["a" => 1]`."""

from __future__ import annotations

from flow2py.diagnostics import Edit
from flow2py.span import Span
from flow2py.syntax.broken import hole
from flow2py.syntax.engine.scanner import CLOSERS, OPENERS, Tok
from flow2py.syntax.habits import (
    _TYPE_NAMES,
    Habit,
    _at,
    _delete_between,
    _diag,
    _in_match_arms,
    _innermost_open,
    _insert_after,
    _insert_before,
    _is,
    _like,
    _matching,
    _replace,
    _safe,
    _span,
    _text,
    _unsafe,
)


def _depth0(seg: list[Tok], k: int, stops: set[str], end: int) -> int:
    """The index of the first token of `stops` from `seg[k]` on at its depth (before `end`), or
    `end`."""
    depth = 0
    for j in range(k, end):
        t = seg[j].type
        if depth == 0 and t in stops:
            return j
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
    return end


# -- `Box { w = 1, let h = 2 }` ---------------------------------------------------------------


def _record_open(seg: list[Tok], i: int) -> int | None:
    """The `{` of the record literal `seg[i]` is directly in (`Box {`, `shapes.Box {`), or None
    (a block: a function's body `-> Box {` is not a literal)."""
    o = _innermost_open(seg, i)
    if o is None or seg[o].type != "LBRACE" or o < 2 or seg[o - 1].type != "UPPER":
        return None
    k = o - 2
    if k >= 1 and seg[k].type == "DOT":
        k -= 2  # `shapes.Box {`
    before = seg[k].type if k >= 0 else "_SEP"
    return None if before in ("ARROW", "TYPE", "OPAQUE") else o


def record_fields(seg, i, expected, path):
    """`Box { w = n, h = n }`, `Box { let w = n; let h = n }`: a record literal gives each field
    its value with `:`, `Box { w: n, h: n }`; every field so written is answered at once."""
    tok = seg[i]
    if tok.type not in ("EQUAL", "LET"):
        return None
    o = _record_open(seg, i)
    if o is None:
        return None
    close = _matching(seg, o)
    if close is None:
        return None
    new, edits, k, bad, shown = list(seg[: o + 1]), [], o + 1, 0, None
    while k < close:
        let = seg[k] if _is(seg[k], "LET") else None
        n = k + (let is not None)
        name, eq = _at(seg, n), _at(seg, n + 1)
        if not _is(name, "LOWER") or eq is None or eq.type not in ("EQUAL", "COLON", "COMMA", "RBRACE"):
            return None
        if (let is not None and eq.type != "EQUAL") or (eq.type == "EQUAL" and n + 2 >= close):
            return None  # `let w: Int = 1`, `w =` with no value: not one plain edit
        end = _depth0(seg, n + 1, {"COMMA", "_SEP"}, close)
        if let is not None or eq.type == "EQUAL":
            shown = shown or name.value
            bad += 1
        if let is not None:
            edits.append(_delete_between(path, let, name))
        if eq.type == "EQUAL" and n + 2 < close:
            v = seg[n + 2]
            sp = Span(path, name.end_line, name.end_column, v.line, v.column, name.end_pos, v.start_pos)
            edits.append(Edit(sp, ": "))
        new += [name, _like("COLON", ":", eq)] if eq.type == "EQUAL" else [name]
        new += seg[n + 2 : end] if eq.type == "EQUAL" else seg[n + 1 : end]
        if end < close:
            sep = seg[end]
            if sep.type == "_SEP":
                if sep.value == ";":
                    edits.append(_replace(path, sep, sep, ","))
                else:
                    edits.append(_insert_before(path, sep, ","))
            new.append(_like("COMMA", ",", sep))
        k = end + 1
    if not bad:
        return None
    first = seg[o - 1]
    fix = _safe("give each field its value with `:`", *edits)
    said = f"{first.value} {{ {shown}: ... }}"
    diag = _diag(_span(path, tok), fix, "record-field-equals", _text([tok]), said)
    return Habit(diag, new + seg[close:])


# -- `f(let m = n + 1)` -------------------------------------------------------------------------


def let_as_value(seg, i, expected, path):
    """`twice(let m = n + 1; m)`, `Box { w: let d = 2 }`: `let` is a statement; a value that
    needs a name is a block, `{ let m = n + 1; m }`, or the `let` goes before the line."""
    tok = seg[i]
    if tok.type != "LET" or i == 0 or seg[i - 1].type not in ("LPAR", "COMMA", "COLON", "LSQB"):
        return None
    name = _at(seg, i + 1)
    if not _is(name, "LOWER"):
        return None
    o = _innermost_open(seg, i)
    if o is None:
        return None
    close = _matching(seg, o)
    if close is None:
        return None
    end = _depth0(seg, i, {"COMMA"}, close)
    last = seg[end - 1]
    diag = _diag(_span(path, tok), None, "let-as-value", "let", name=name.value)
    return Habit(diag, seg[:i] + [hole(tok, last)] + seg[end:], region=seg[i:end])


# -- `[f(x) for x in xs if p(x)]` ---------------------------------------------------------------

_PLAIN = frozenset({"LOWER", "UPPER", "DOT", "LPAR", "RPAR", "LSQB", "RSQB", "TEXT", "INT", "QMARK"})


def comprehension(seg, i, expected, path):
    """`[f(x) for x in xs]`, `[x for x in xs if p(x)]` (Python): Flow maps and filters with a
    function value, `xs.map(flow(x) = f(x))`, `xs.filter(flow(x) = p(x))`."""
    tok = seg[i]
    if not _is(tok, "LOWER", "for"):
        return None
    o = _innermost_open(seg, i)
    if o is None or seg[o].type != "LSQB" or o + 1 >= i:
        return None
    close = _matching(seg, o)
    name, in_ = _at(seg, i + 1), _at(seg, i + 2)
    if close is None or not _is(name, "LOWER") or not _is(in_, "LOWER", "in"):
        return None
    cond_at = _depth0(seg, i + 3, {"IF"}, close)
    elem, src, cond = seg[o + 1 : i], seg[i + 3 : cond_at], seg[cond_at + 1 : close]
    if not src or (cond_at < close and not cond) or _depth0(seg, o + 1, {"COMMA"}, close) < close:
        return None
    x = name.value
    src_text = _text(src) if all(t.type in _PLAIN for t in src) else f"({_text(src)})"
    written = src_text
    if cond:
        written += f".filter(flow({x}) = {_text(cond)})"
    if not (len(elem) == 1 and _is(elem[0], "LOWER", x)):
        written += f".map(flow({x}) = {_text(elem)})"
    fix = _safe(f"write `{written}`", _replace(path, seg[o], seg[close], written))
    kind = "comprehension" if not cond else "comprehension-filter"
    diag = _diag(_span(path, seg[o], seg[close]), fix, kind, "[... for ... in ...]", written)
    new = _comprehension_tokens(seg, o, close, src, name, elem, cond)
    return Habit(diag, new)


def _comprehension_tokens(seg, o, close, src, name, elem, cond) -> list[Tok]:
    """The tokens of `src.filter(flow(x) = cond).map(flow(x) = elem)`, at the brackets' places."""
    at, end = seg[o], seg[close]
    out = seg[:o] + [_like("LPAR", "(", at), *src, _like("RPAR", ")", at)]

    def call(method: str, body: list[Tok]) -> list[Tok]:
        return [_like("DOT", ".", end), _like("LOWER", method, end), _like("LPAR", "(", end)] + [
            _like("FLOW", "flow", end),
            _like("LPAR", "(", end),
            name,
            _like("RPAR", ")", end),
            _like("EQUAL", "=", end),
            *body,
            _like("RPAR", ")", end),
        ]

    if cond:
        out += call("filter", cond)
    if not (len(elem) == 1 and _is(elem[0], "LOWER", name.value)):
        out += call("map", elem)
    return out + seg[close + 1 :]


# -- `note, err := fetch(id)` -------------------------------------------------------------------

_ERROR_NAMES = frozenset({"err", "e", "error", "er", "problem"})


def go_results(seg, i, expected, path):
    """`note, err := fetch(id)` (Go's several results): a Flow call gives one value; a Tool's is
    a `Result`, taken apart with `?` (`let note = fetch(id)?`) or `match`. Other names than an
    error's are a tuple: `let (a, b) = f()`."""
    if not _is(seg[i], "COMMA") or i == 0 or (i >= 2 and seg[i - 2].type not in ("LBRACE", "_SEP")):
        return None
    names, k = [seg[i - 1]], i
    while _is(_at(seg, k), "COMMA") and _is(_at(seg, k + 1), "LOWER"):
        names.append(seg[k + 1])
        k += 2
    if not _is(names[0], "LOWER") or len(names) < 2:
        return None
    colon, eq = _at(seg, k), _at(seg, k + 1)
    if _is(colon, "COLON") and _is(eq, "EQUAL") and colon.end_pos == eq.start_pos:
        value_at = k + 2
    elif _is(colon, "EQUAL"):
        eq, value_at = colon, k + 1
    else:
        return None
    end = _depth0(seg, value_at, {"_SEP", "RBRACE"}, len(seg))
    if end == value_at:
        return None
    first, value = names[0], seg[value_at:end]
    if len(names) == 2 and names[1].value in _ERROR_NAMES:
        flow = f"let {first.value} = {_text(value)}?"
        fix = _unsafe(
            f"write `{flow}`",
            _replace(path, first, seg[value_at - 1], f"let {first.value} ="),
            _insert_after(path, seg[end - 1], "?"),
        )
        diag = _diag(
            _span(path, first, eq),
            fix,
            "go-results",
            ", ".join(n.value for n in names),
            flow,
            name=names[1].value,
        )
        tuple_ = [_like("LPAR", "(", first)]
        for n in names:
            tuple_ += [n, _like("COMMA", ",", n)]
        lhs = [_like("LET", "let", first), *tuple_[:-1], _like("RPAR", ")", eq), _like("EQUAL", "=", eq)]
        new = seg[: i - 1] + lhs + [hole(value[0], value[-1])] + seg[end:]
        return Habit(diag, new, region=[*names, *value])
    pattern = "(" + ", ".join(n.value for n in names) + ")"
    flow = f"let {pattern} ="
    fix = _safe(f"write `{flow}`", _replace(path, first, seg[value_at - 1], flow))
    diag = _diag(_span(path, first, eq), fix, "writes", f"{', '.join(n.value for n in names)} :=", flow)
    tuple_ = [_like("LPAR", "(", first)]
    for n in names:
        tuple_ += [n, _like("COMMA", ",", n)]
    lhs = [_like("LET", "let", first), *tuple_[:-1], _like("RPAR", ")", eq), _like("EQUAL", "=", eq)]
    return Habit(diag, seg[: i - 1] + lhs + value + seg[end:])


# -- `Role.User =>` -------------------------------------------------------------------------------


def qualified_constructor(seg, i, expected, path):
    """`Role.User => ...` in a pattern (Java's, TypeScript's, Python's enums): Flow names a
    constructor alone, `User` (`shapes.User` of another module). Only a pattern fails to parse
    there: as a value, `Role.User` is the checker's (E101, the same answer)."""
    tok, ty, ctor = seg[i], _at(seg, i - 1), _at(seg, i + 1)
    if not _is(tok, "DOT") or not _is(ty, "UPPER") or not _is(ctor, "UPPER") or ty.end_pos != tok.start_pos:
        return None
    fix = _safe(f"write `{ctor.value}`", _delete_between(path, ty, ctor))
    diag = _diag(_span(path, ty, ctor), fix, "qualified-constructor", f"{ty.value}.{ctor.value}", ctor.value)
    return Habit(diag, seg[: i - 1] + seg[i + 1 :])


# -- `async flow f(` ----------------------------------------------------------------------------


def async_head(seg, i, expected, path):
    """`async flow f(...)` (JavaScript's, Python's, Rust's `async`), after an optional `pub`: a
    Flow function needs no mark to run concurrently (`task.spawn(flow() = f(x))` does), so the
    word goes (safe; the parser cuts a declaration at it, parser.py)."""
    h = 1 if _is(_at(seg, 0), "PUB") else 0
    tok, nxt = _at(seg, h), _at(seg, h + 1)
    if i != h or not _is(tok, "LOWER", "async") or not _is(nxt, "FLOW") or nxt.line != tok.line:
        return None
    name = _at(seg, h + 2)
    fix = _safe("remove `async`", _delete_between(path, tok, nxt))
    diag = _diag(_span(path, tok), fix, "async", "async", name=name.value if _is(name, "LOWER") else "f")
    return Habit(diag, seg[:h] + seg[h + 1 :])


# -- `0 || 1 =>` -----------------------------------------------------------------------------


def or_in_pattern(seg, i, expected, path):
    """`0 || 1 => ...`, `0 or 1 => ...` in a match arm's pattern (the boolean `||`, Python's
    `or`): Flow's alternatives are `|` (safe: only a pattern fails to parse there)."""
    tok = seg[i]
    if not (_is(tok, "OROR") or _is(tok, "LOWER", "or")) or "VBAR" not in expected:
        return None
    if not _in_match_arms(seg, i):
        return None
    fix = _safe("write `|`", _replace(path, tok, tok, "|"))
    diag = _diag(_span(path, tok), fix, "or-pattern", tok.value, "|")
    return Habit(diag, seg[:i] + [_like("VBAR", "|", tok)] + seg[i + 1 :])


# -- `[e, rest @ ..]` ---------------------------------------------------------------------------


def rest_binding(seg, i, expected, path):
    """`[e, rest @ ..]` (Rust's slice pattern, the rest bound with `@`): Flow binds the rest of a
    list with `..rest`. Flow has no `@`, so only a name bound to `..` is rewritten; `n @ 1` is
    left to the parser's message."""
    at, name, dots, after = seg[i], _at(seg, i - 1), _at(seg, i + 1), _at(seg, i + 2)
    if not _is(at, "AT") or not _is(name, "LOWER") or not _is(dots, "DOTDOT"):
        return None
    if (
        after is None
        or after.type not in ("COMMA", "RSQB")
        or i < 2
        or seg[i - 2].type not in ("LSQB", "COMMA")
    ):
        return None
    flow = ".." + name.value
    fix = _safe(f"write `{flow}`", _replace(path, name, dots, flow))
    diag = _diag(_span(path, name, dots), fix, "rest-binding", f"{name.value} @ ..", flow)
    return Habit(diag, seg[: i - 1] + [_like("DOTDOT", "..", name), name] + seg[i + 2 :])


# -- `_ = f()`, `flow f() Text`, `{"a": 1}`, `["a" => 1]` ---------------------------------------


def blank_assignment(seg, i, expected, path):
    """Go's `_ = send(x)` (a result dropped): Flow writes `let _ = send(x)`."""
    tok, eq = seg[i], _at(seg, i + 1)
    if (
        not _is(tok, "UNDERSCORE")
        or not _is(eq, "EQUAL")
        or not (i == 0 or seg[i - 1].type in ("LBRACE", "_SEP"))
    ):
        return None
    if _is(_at(seg, i + 2), "EQUAL") and seg[i + 2].start_pos == eq.end_pos:
        return None  # `_ == x`
    fix = _safe("write `let _ =`", _insert_before(path, tok, "let "))
    return Habit(
        _diag(_span(path, tok, eq), fix, "writes", "_ =", "let _ ="),
        seg[:i] + [_like("LET", "let", tok)] + seg[i:],
    )


def result_without_arrow(seg, i, expected, path):
    """`flow main(bugs: List<Bug>) Triage !tool {` (Go's and Kotlin-less heads: the result type
    after the parameters, no arrow): Flow writes `) -> Triage`."""
    tok, close = seg[i], _at(seg, i - 1)
    if "ARROW" not in expected or not _is(close, "RPAR") or tok.type not in ("UPPER", "LPAR"):
        return None
    if not any(t.type == "FLOW" for t in seg[:i]):
        return None
    fix = _safe("write `->` before the result type", _insert_before(path, tok, "-> "))
    return Habit(
        _diag(_span(path, tok), fix, "result-arrow", _text([tok]), "-> " + tok.value),
        seg[:i] + [_like("ARROW", "->", tok)] + seg[i:],
    )


def _dict_items(seg, o: int, close: int, sep: str) -> list[int] | None:
    """The positions of the key-value separators (`sep`: COLON or FATARROW) at depth 0 inside
    seg[o..close], when every item is `key SEP value`; else None."""
    at, j, stops = [], o + 1, {sep, "COMMA"}
    while j < close:
        k = _depth0(seg, j, stops, close)  # the item's separator, then the comma after its value
        if k == close or seg[k].type != sep or k == j:
            return None
        at.append(k)
        j = _depth0(seg, k + 1, stops, close)
        if j < close and seg[j].type != "COMMA":
            return None  # a second separator in one item
        j += 1
    return at or None


#: what a value's `{` follows (`let d = {`, `f({`, `[{`, `, {`, a field's `x: {`, an arm's `=> {`)
_VALUE_BEFORE = frozenset({"EQUAL", "LPAR", "COMMA", "LSQB", "COLON", "FATARROW"})


def dict_in_braces(seg, i, expected, path):
    """Python's and JavaScript's `{"canary": 5, "full": 100}` where a value is wanted: Flow's
    Dict literal is `["canary": 5, "full": 100]` (a safe fix); PHP's `["DE" => "dhl"]` is
    `["DE": "dhl"]`."""
    tok = seg[i]
    if tok.type == "COLON" and i >= 2 and _is(seg[i - 2], "LBRACE") and seg[i - 1].type in ("TEXT", "INT"):
        o, sep, flow_sep = i - 2, "COLON", None
        if o == 0 or seg[o - 1].type not in _VALUE_BEFORE:
            return None  # a record literal's or a declaration's brace, not a value's
    elif tok.type == "FATARROW" and i >= 2 and seg[i - 1].type in ("TEXT", "INT"):
        o = _innermost_open(seg, i)
        if o is None or seg[o].type != "LSQB":
            return None
        sep, flow_sep = "FATARROW", ":"
    else:
        return None
    close = _matching(seg, o)
    if close is None:
        return None
    seps = _dict_items(seg, o, close, sep)
    if seps is None:
        return None
    first, last = seg[o], seg[close]
    if flow_sep is None:  # the braces become brackets
        edits = [_replace(path, first, first, "["), _replace(path, last, last, "]")]
        new = (
            seg[:o]
            + [_like("LSQB", "[", first)]
            + seg[o + 1 : close]
            + [_like("RSQB", "]", last)]
            + seg[close + 1 :]
        )
        said, flow = "{k: v}", "[k: v]"
    else:
        edits = [_replace(path, seg[j], seg[j], ":") for j in seps]
        new = [(_like("COLON", ":", t) if j in seps else t) for j, t in enumerate(seg)]
        said, flow = "[k => v]", "[k: v]"
    fix = _safe(f"write the Dict as `{flow}`", *edits)
    return Habit(_diag(_span(path, first, last), fix, "dict-literal", said, flow), new)


def go_slice_type(seg, i, expected, path):
    """Go's slice type `[]Entry` (`[]string`) where a type is wanted: Flow writes `List<Entry>`
    (`List<Text>`), a safe fix."""
    tok, close, elem = seg[i], _at(seg, i + 1), _at(seg, i + 2)
    if not _is(tok, "LSQB") or not _is(close, "RSQB") or "UPPER" not in expected or elem is None:
        return None
    name = (
        elem.value if elem.type == "UPPER" else _TYPE_NAMES.get(elem.value) if elem.type == "LOWER" else None
    )
    if name is None or _is(_at(seg, i + 3), "LESSTHAN") or _is(_at(seg, i + 3), "DOT"):
        return None  # `[]Pair<A, B>`, `[]pkg.T`: not one name
    flow = f"List<{name}>"
    new = (
        seg[:i]
        + [
            _like("UPPER", "List", tok),
            _like("LESSTHAN", "<", tok),
            _like("UPPER", name, elem),
            _like("MORETHAN", ">", elem),
        ]
        + seg[i + 3 :]
    )
    fix = _safe(f"write `{flow}`", _replace(path, tok, elem, flow))
    return Habit(_diag(_span(path, tok, elem), fix, "writes", f"[]{elem.value}", flow), new)


FIRST_RULES = (record_fields,)
RULES = (
    go_slice_type,
    blank_assignment,
    result_without_arrow,
    dict_in_braces,
    let_as_value,
    comprehension,
    go_results,
    qualified_constructor,
    async_head,
    or_in_pattern,
    rest_binding,
)
