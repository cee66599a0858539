"""Text with interpolated parts (f-strings, template literals) as Flow's `++` join: the text of
the join, for a fix, and its tokens, each part at its place in the source, so that the checker
reads the join as the fix will write it (syntax/habits.py, habits_scanned.py, check/habit_fixes.py)."""

from __future__ import annotations

import re

from flow2py.syntax.engine.scanner import Tok


_PART = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\(\))?)*)\s*$")
_PART_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\.|\(|\)")


def joined_tokens(
    body: str, base: int, at: Tok, open_: str, close: str, quote=lambda s: s
) -> list[Tok] | None:
    """The tokens of `_joined(body, ...)` (`"a" ++ x ++ "b"`), each part's at its own place in
    the source (`body` starts at offset `base`, on `at`'s line), so that the checker sees the
    joined text as the fix writes it: a part that is not Text is then reported at the part.
    Only parts that are a name, fields and calls without arguments (`n`, `o.total`,
    `xs.length()`); None for any other."""
    toks: list[Tok] = []

    def tok(kind: str, value: str, a: int, b: int) -> Tok:
        col = at.column + (a - at.start_pos)
        return Tok(kind, value, a, at.line, col, at.line, col + (b - a), b)

    def piece(t: Tok) -> None:
        if toks:
            toks.append(tok("PLUSPLUS", "++", t.start_pos, t.start_pos))
        toks.append(t)

    k, lit_at = 0, 0
    while k <= len(body):
        start = body.find(open_, k)
        stop = len(body) if start < 0 else start
        if stop > lit_at:
            piece(tok("TEXT", '"' + quote(body[lit_at:stop]) + '"', base + lit_at, base + stop))
        if start < 0:
            break
        end = body.find(close, start + len(open_))
        inner = body[start + len(open_) : end] if end >= 0 else ""
        m = _PART.match(inner)
        if end < 0 or m is None:
            return None
        off = base + start + len(open_)
        parts = [(x.group(), off + x.start()) for x in _PART_TOKEN.finditer(inner) if x.group().strip()]
        kinds = {".": "DOT", "(": "LPAR", ")": "RPAR"}
        first = True
        for text, o in parts:
            kind = kinds.get(text) or ("UPPER" if text[0].isupper() else "LOWER")
            t = tok(kind, text, o, o + len(text))
            if first:
                piece(t)
                first = False
            else:
                toks.append(t)
        k = lit_at = end + len(close)
    if not toks:
        toks.append(tok("TEXT", '""', base, base))
    return toks


def _joined(body: str, open_: str, close: str) -> str:
    """`"a" ++ x ++ "b"` for the interpolated text `body` (`a{x}b`); parts that are not Text
    need `.to_text()`, which is why the fix is not safe."""
    out = []
    lit = ""
    k = 0
    while k < len(body):
        if body.startswith(open_, k):
            end = body.find(close, k + len(open_))
            if end < 0:
                break
            if lit:
                out.append('"' + lit + '"')
                lit = ""
            out.append(body[k + len(open_) : end].strip())
            k = end + len(close)
            continue
        lit += body[k]
        k += 1
    lit += body[k:]
    if lit:
        out.append('"' + lit + '"')
    return " ++ ".join(out) if out else '""'
