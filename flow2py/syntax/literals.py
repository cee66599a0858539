"""Literal tokens to values: Int (any number of digits), Decimal, Duration, Text and Bytes with
their escapes, Bool. A malformed literal is reported through `error(data)` (a class of codes.py), the
Builder's (build.py), and still gives a value, so that parsing goes on."""

from __future__ import annotations

import re
from typing import Callable

from flow2py.syntax import ast, codes
from flow2py.syntax.engine.scanner import Tok

Report = Callable[[codes.SyntaxData], None]


def decimal_int(digits: str) -> int:
    """`int(digits)` for a literal's decimal digits, however many. A Flow Int is unbounded, but
    Python's `int()` refuses text of more than 4,300 digits (its conversion limit, which the
    compiler leaves as the process set it): a longer literal is read in halves, joined by one
    multiplication each, which also keeps reading it subquadratic."""
    if len(digits) <= 600:  # under the smallest limit Python allows
        return int(digits)
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(digits)
    low = len(digits) // 2
    return decimal_int(digits[:-low]) * 10**low + decimal_int(digits[-low:])


_DURATION = re.compile(r"([0-9_]+)(ns|us|ms|s|m|h|d)$")
_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
    "d": 86400 * 10**9,
}
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


def literal(tok: Tok, span: ast.Span, path: str, error: Report) -> ast.Literal:
    """The literal node of token `tok` (an INT, DECIMAL, DURATION, TEXT, BYTES or TRUE/FALSE)."""
    t = tok.type
    s = str(tok)
    if t == "INT":
        digits = s.replace("_", "")
        try:
            value = int(digits, 16) if digits.startswith(("0x", "0X")) else decimal_int(digits)
        except ValueError:
            error(codes.BadNumber(span, s))
            value = 0
        return ast.Literal("int", value, span=span)
    if t == "DECIMAL":
        return ast.Literal("decimal", s.replace("_", ""), span=span)
    if t == "DURATION":
        m = _DURATION.match(s)
        return ast.Literal(
            "duration", decimal_int(m.group(1).replace("_", "")) * _UNIT_NS[m.group(2)], span=span
        )
    if t == "TEXT":
        return ast.Literal("text", text_value(tok, path, error), span=span)
    if t == "BYTES":
        return ast.Literal("bytes", _bytes(tok, path, error), span=span)
    return ast.Literal("bool", t == "TRUE", span=span)


def _escape_error(
    tok: Tok, at: int, length: int, escape: str, in_bytes: bool, path: str, error: Report
) -> None:
    start = tok.start_pos + at
    col = tok.column + at
    span = ast.Span(path, tok.line, col, tok.line, col + length, start, start + length)
    error(codes.BadEscape(span, escape, in_bytes))


def text_value(tok: Tok, path: str, error: Report) -> str:
    """The text a TEXT token writes, its escapes decoded (a bad one reported as E003)."""
    s = str(tok)
    body_at = 1
    body = s[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1] if i + 1 < n else ""
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 2
        elif e == "u":
            m = re.compile(r"\{([0-9a-fA-F]{1,6})\}").match(body, i + 2)
            if m and int(m.group(1), 16) <= 0x10FFFF and not 0xD800 <= int(m.group(1), 16) <= 0xDFFF:
                out.append(chr(int(m.group(1), 16)))
                i = m.end()
            else:
                length = (m.end() - i) if m else 2
                _escape_error(
                    tok,
                    body_at + i,
                    length,
                    "u",
                    False,
                    path,
                    error,
                )
                i = m.end() if m else i + 2
        else:
            _escape_error(
                tok,
                body_at + i,
                2,
                e,
                False,
                path,
                error,
            )
            i += 2
    return "".join(out)


def _bytes(tok: Tok, path: str, error: Report) -> bytes:
    s = str(tok)
    body_at = 2
    body = s[2:-1]
    out = bytearray()
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1] if i + 1 < n else ""
        if e in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[e].encode()
            i += 2
        elif e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", body[i + 2 : i + 4]):
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        else:
            _escape_error(
                tok,
                body_at + i,
                2,
                e,
                True,
                path,
                error,
            )
            i += 2
    return bytes(out)
