"""Declaration heads in another language's style (E012), found at the top of a declaration:
`fn f(`, `def f(`, `function f(p: T): R {`, `struct P {`, `enum E {`, `const X = 1`,
`import ...` (habits_expr.habit_at tries these first, after record fields)."""

from __future__ import annotations

from flow2py.diagnostics import Edit
from flow2py.span import Span
from flow2py.syntax.habits import (
    _TYPE_NAMES,
    Habit,
    _diag,
    _is,
    _like,
    _matching,
    _replace,
    _safe,
    _span,
    _unsafe,
)


_FOREIGN_FN = {"fn": "Rust", "def": "Python", "func": "Go", "function": "JavaScript", "fun": "Kotlin"}
_FOREIGN_TYPE = frozenset({"struct", "enum"})


def foreign_head(seg, i, expected, path):
    """A declaration head in another language's style at the top of a declaration: `fn f(`,
    `def f(`, `function f(` (Flow writes `flow`), `struct P {`, `enum E {` (Flow writes `type`),
    `const X = 1` (Flow has no top-level values: a function with no parameters is one)."""
    h = 1 if seg and seg[0].type == "PUB" else 0  # `pub fn f(`, `pub struct P {`
    if i != h or len(seg) < h + 2:
        return None
    tok = seg[h]
    if tok.type not in ("LOWER", "LET") or (
        h and tok.value not in _FOREIGN_FN and tok.value not in _FOREIGN_TYPE
    ):
        return None
    name = seg[h + 1]
    if tok.type == "LOWER" and tok.value in _FOREIGN_FN and name.type == "LOWER":
        return _fn_head(seg, h, path)
    if tok.type == "LOWER" and tok.value in _FOREIGN_TYPE and name.type == "UPPER":
        new = seg[:h] + [_like("TYPE", "type", tok)] + seg[h + 1 :]
        fix = _safe("write `type`", _replace(path, tok, tok, "type"))
        return Habit(_diag(_span(path, tok), fix, "type-head", tok.value, "type"), new)
    if tok.value == "import":
        got = _import_path(seg, h, path)
        if got is not None:
            return got
    if tok.value in ("import", "from", "require") and name.type == "LOWER":
        return Habit(_diag(_span(path, tok), None, "import", tok.value, "use", name=name.value), None)
    if (tok.type == "LET" or tok.value in ("const", "var", "static", "val")) and name.type in (
        "LOWER",
        "UPPER",
    ):
        diag = _diag(_span(path, tok), None, "top-level-value", tok.value, name=name.value.lower())
        return Habit(diag, None)
    return None


def _import_path(seg, h, path):
    """`import "std@v1/task"` (Go, Python's spelling of a path) and `import task from "..."`
    (JavaScript): Flow's `use "path"`, whose alias is the path's last part. Safe for the first,
    and for the second when its name is that alias (the body's `task.x` then resolve)."""
    tok, nxt = seg[h], seg[h + 1]
    if nxt.type == "TEXT":
        new = seg[:h] + [_like("USE", "use", tok)] + seg[h + 1 :]
        fix = _safe("write `use`", _replace(path, tok, tok, "use"))
        return Habit(_diag(_span(path, tok), fix, "import-path", tok.value, "use"), new)
    if len(seg) < h + 4 or nxt.type not in ("LOWER", "UPPER") or not _is(seg[h + 2], "LOWER", "from"):
        return None
    text = seg[h + 3]
    if text.type != "TEXT":
        return None
    alias = text.value.strip("\"'").rstrip("/").rsplit("/", 1)[-1].removesuffix(".flow")
    new = seg[:h] + [_like("USE", "use", tok)] + seg[h + 3 :]
    edit = Edit(
        Span(path, tok.line, tok.column, text.line, text.column, tok.start_pos, text.start_pos), "use "
    )
    fix = (_safe if alias == nxt.value else _unsafe)(f"write `use {text.value}`", edit)
    diag = _diag(_span(path, tok, seg[h + 2]), fix, "import-from", tok.value, "use", name=alias)
    return Habit(diag, new)


def _fn_head(seg, h, path):
    """`fn f(`, `def f(` ... after an optional `pub` (at `seg[h]`): Flow writes `flow`; and a
    Python `def f(x) -> T: return e` on one line is one habit, its `:` (and `return`) Flow's `=`."""
    tok = seg[h]
    colon = _python_body_colon(seg, h) if tok.value == "def" else None
    typed = _typed_head(seg, h, path) if colon is None and tok.value != "def" else None
    if typed is not None:
        return typed
    if colon is None:
        new = seg[:h] + [_like("FLOW", "flow", tok)] + seg[h + 1 :]
        fix = _safe("write `flow`", _replace(path, tok, tok, "flow"))
        return Habit(_diag(_span(path, tok), fix, "fn-head", tok.value, "flow"), new)
    c, upto = colon
    new = (
        seg[:h]
        + [_like("FLOW", "flow", tok)]
        + seg[h + 1 : c]
        + [_like("EQUAL", "=", seg[c])]
        + seg[upto + 1 :]
    )
    fix = _safe(
        "write `flow` and `=`", _replace(path, tok, tok, "flow"), _replace(path, seg[c], seg[upto], " =")
    )
    said = "return" if upto > c else ""
    return Habit(_diag(_span(path, tok), fix, "def-colon", tok.value, "flow", name=said), new)


def _typed_head(seg, h, path):
    """`function f(p: Progress): string {` (TypeScript, Kotlin's `fun f(): String`): the head's
    keyword, the `:` before its result type and the result's lower-case type name (`string`)
    are one habit, Flow's `flow f(p: Progress) -> Text {`; None for any other shape."""
    if len(seg) < h + 6 or seg[h + 2].type != "LPAR":
        return None
    close = _matching(seg, h + 2)
    if close is None or close + 2 >= len(seg) or seg[close + 1].type != "COLON":
        return None
    res = seg[close + 2]
    if res.line != seg[close + 1].line or res.type not in ("LOWER", "UPPER"):
        return None
    tok = seg[h]
    edits = [_replace(path, tok, tok, "flow"), _replace(path, seg[close + 1], seg[close + 1], " ->")]
    new = (
        seg[:h]
        + [_like("FLOW", "flow", tok)]
        + seg[h + 1 : close + 1]
        + [_like("ARROW", "->", seg[close + 1])]
    )
    flow = _TYPE_NAMES.get(res.value) if res.type == "LOWER" else None
    if flow is not None:
        edits.append(_replace(path, res, res, flow))
        new.append(_like("UPPER", flow, res))
    else:
        new.append(res)
    new += seg[close + 3 :]
    written = f"`flow` and `-> {flow or res.value}`"
    fix = _safe(f"write {written}", *edits)
    return Habit(_diag(_span(path, tok, res), fix, "typed-head", tok.value, flow or res.value), new)


def _python_body_colon(seg, h=0):
    """In `def f(x) -> T: return e` (one line): the index of the `:` ending the head and of the
    last token Flow's `=` replaces (`return`, or the `:` itself); None for any other shape."""
    if len(seg) < h + 4 or seg[h + 2].type != "LPAR":
        return None
    close = _matching(seg, h + 2)
    if close is None:
        return None
    c = close + 1
    while c < len(seg) and seg[c].type not in ("COLON", "EQUAL", "LBRACE", "_SEP", "$END"):
        c += 1
    if c + 1 >= len(seg) or seg[c].type != "COLON" or seg[c + 1].line != seg[c].line:
        return None
    if seg[c + 1].type in ("_SEP", "$END"):
        return None  # a body on the lines below, by indentation: Flow's needs braces (a choice)
    if seg[c + 1].type == "RETURN":
        return (c, c + 1) if c + 2 < len(seg) and seg[c + 2].type not in ("_SEP", "$END") else None
    return (c, c)
