"""Habits from other languages that the scanner meets as characters no Flow token starts with
(E001), answered as one E012 each (habits.py has the rest and the why).

A template literal is one mistake, not a bad character at each end and a `$` in the middle; so
are `'text'`, a `# comment` and a `&` reference. After the scanner has made its tokens (and an
E001 for each such character), `scanned` puts in their place what Flow writes (a Text literal,
`Text` for `&str`), or a hole where a choice is needed (a template that interpolates), and takes
the E001s and what the scanner made of the inside away. The scanner itself stays free of any
Flow construct (engine/).
"""

from __future__ import annotations

import re

from flow2py.diagnostics import Diagnostic
from flow2py.syntax.broken import hole
from flow2py.syntax.engine.scanner import Tok, separator_after
from flow2py.syntax.joins import _joined, joined_tokens
from flow2py.syntax.habits import (
    _NAME,
    _at,
    _delete_between,
    _diag,
    _is,
    _like,
    _replace,
    _safe,
    _span,
    _unsafe,
)


def scanned(tokens: list[Tok], diags: list[Diagnostic], source: str, path: str):
    """The tokens with template literals (`` `..${x}..` ``), `'text'`, `# comments` and
    references (`&str`, `&x`) answered (E012 in place of their E001s): a template literal becomes
    the text it is (no interpolation) or a hole, `'text'` is `"text"`, a comment goes, a `&` goes
    and `&str` is `Text`. Also the regions the holes leave (token lists, for broken.py)."""
    bad = {
        d.span.start: d
        for d in diags
        if d.code == "E001" and source[d.span.start : d.span.start + 1] in "`&'#$"
    }
    if not bad:
        return tokens, []
    regions = []
    drop: set[int] = set()  # E001 diagnostics answered
    for p in sorted(bad):
        if p in drop:
            continue
        if source[p] == "`":
            tokens = _template(tokens, diags, source, path, p, bad, drop, regions)
        elif source[p] == "'":
            tokens = _single_quoted(tokens, diags, source, path, p, bad, drop)
        elif source[p] == "#":
            tokens = _hash_comment(tokens, diags, source, path, p, bad, drop)
        elif source[p] == "$":
            tokens = _interpolated(tokens, diags, source, path, p, drop)
        else:
            tokens = _reference(tokens, diags, source, path, p)
            drop.add(p)
    diags[:] = [d for d in diags if not (d.code == "E001" and d.span.start in drop)]
    return tokens, regions


def _template(tokens, diags, source, path, p, bad, drop, regions):
    q = source.find("`", p + 1)
    nl = source.find("\n", p + 1)
    if q < 0 or (0 <= nl < q):
        return tokens
    body = source[p + 1 : q]
    first, last = _pos_tok(source, path, p), _pos_tok(source, path, q)
    drop.update(x for x in bad if p <= x <= q)
    # what the scanner made of the inside goes (its E002 and E003 with it)
    diags[:] = [d for d in diags if not (d.code in ("E001", "E002", "E003") and p <= d.span.start <= q)]
    kept = [t for t in tokens if not (p <= t.start_pos <= q)]
    at = next((k for k, t in enumerate(kept) if t.start_pos > q), len(kept))
    ends = _ends_statement(tokens, p, q)
    if "${" not in body:
        text = '"' + body.replace("\\`", "`").replace('"', '\\"') + '"'
        tok = Tok("TEXT", text, p, first.line, first.column, last.end_line, last.end_column, q + 1)
        fix = _safe("write it as Text", _replace(path, first, last, text))
        kind = "template-plain"
    else:
        joined = None
        if "\\" not in body:
            # the parts checked as the fix writes them (check/habit_fixes.py settles the fix)
            joined = joined_tokens(body, p + 1, first, "${", "}", lambda s: s.replace('"', '\\"'))
        if joined is not None:
            fix = _unsafe("join the parts with `++`", _replace(path, first, last, joined_template(body)))
            diags.append(_diag(_span(path, first, last), fix, "template", "`"))
            return kept[:at] + [*joined, *_separator(joined[-1], ends)] + kept[at:]
        tok = hole(first, last)
        named = [
            _like("LOWER", n, first)
            for part in re.findall(r"\$\{([^}]*)\}", body)
            for n in _NAME.findall(part)
        ]
        regions.append([first, *named, last])
        fix = _unsafe("join the parts with `++`", _replace(path, first, last, joined_template(body)))
        kind = "template"
    diags.append(_diag(_span(path, first, last), fix, kind, "`"))
    return kept[:at] + [tok, *_separator(tok, ends)] + kept[at:]


def _interpolated(tokens, diags, source, path, p, drop):
    """C#'s `$"{name} has {n} items"` (and `$@"..."`): Flow joins text with `++`, as for Python's
    f-string (habits.py `_f_string`): the `$` goes, the parts are checked as the join writes them
    (check/habit_fixes.py settles the fix by their types); without a `{` it is plain text."""
    k = next((k for k, t in enumerate(tokens) if t.start_pos == p + 1 and t.type == "TEXT"), None)
    if k is None:
        return tokens
    drop.add(p)
    tok, first = tokens[k], _pos_tok(source, path, p)
    body = tok.value[1:-1]
    if "{" not in body:
        fix = _safe("remove the `$`", _replace(path, first, tok, tok.value))
        diags.append(_diag(_span(path, first, tok), fix, "f-string-plain", "$", tok.value))
        return tokens
    fix = _unsafe("join the parts with `++`", _replace(path, first, tok, _joined(body, "{", "}")))
    diags.append(_diag(_span(path, first, tok), fix, "f-string", "$"))
    if "{{" in body or "}}" in body or "\\" in body:
        return tokens[:k] + [hole(first, tok)] + tokens[k + 1 :]
    joined = joined_tokens(body, tok.start_pos + 1, tok, "{", "}")
    if joined is None:
        return tokens[:k] + [hole(first, tok)] + tokens[k + 1 :]
    return tokens[:k] + joined + tokens[k + 1 :]


def _inside(tokens, diags, p, q, bad, drop):
    """The tokens without what the scanner made of source[p..q] (its diagnostics go too)."""
    drop.update(x for x in bad if p <= x <= q)
    diags[:] = [d for d in diags if not (d.code in ("E001", "E002", "E003") and p <= d.span.start <= q)]
    return [t for t in tokens if not (p <= t.start_pos <= q)]


def _single_quoted(tokens, diags, source, path, p, bad, drop):
    """`'text'` (Python, JavaScript; a Rust character): Flow text is in double quotes."""
    q = source.find("'", p + 1)
    nl = source.find("\n", p + 1)
    if q < 0 or (0 <= nl < q):
        return tokens
    body = source[p + 1 : q]
    first, last = _pos_tok(source, path, p), _pos_tok(source, path, q)
    ends = _ends_statement(tokens, p, q)
    kept = _inside(tokens, diags, p, q, bad, drop)
    text = '"' + body.replace("\\'", "'").replace('"', '\\"') + '"'
    tok = Tok("TEXT", text, p, first.line, first.column, last.end_line, last.end_column, q + 1)
    fix = _safe("write it in double quotes", _replace(path, first, last, text))
    diags.append(_diag(_span(path, first, last), fix, "single-quote", "'", text))
    at = next((k for k, t in enumerate(kept) if t.start_pos > q), len(kept))
    return kept[:at] + [tok, *_separator(tok, ends)] + kept[at:]


def _ends_statement(tokens: list[Tok], p: int, q: int) -> bool:
    """Whether the scanner ended a statement inside source[p..q]: it put the `_SEP` of the line's
    end after the last token it read there (the literal's inside), so the `_SEP` goes with what
    replaces the literal, or the next line would read as part of this statement."""
    return any(t.type == "_SEP" and p <= t.start_pos <= q for t in tokens)


def _separator(tok: Tok, ends: bool) -> list[Tok]:
    return [separator_after(tok)] if ends else []


def _hash_comment(tokens, diags, source, path, p, bad, drop):
    """`# note` (Python, shell): a Flow comment starts with `//`."""
    eol = source.find("\n", p)
    eol = len(source) if eol < 0 else eol
    hash_tok = _pos_tok(source, path, p)
    drop.update(x for x in bad if p <= x < eol)
    diags[:] = [d for d in diags if not (d.code in ("E001", "E002", "E003") and p <= d.span.start < eol)]
    # the separator the scanner put at the end of the line stays; what the comment held goes
    kept = [t for t in tokens if not (p <= t.start_pos < eol and t.type != "_SEP")]
    fix = _safe("write `//`", _replace(path, hash_tok, hash_tok, "//"))
    note = source[p + 1 : eol].strip()
    note = note if len(note) <= 30 else note[:27] + "..."
    diags.append(_diag(_span(path, hash_tok), fix, "comment", "#", f"// {note}" if note else ""))
    return kept


def _reference(tokens, diags, source, path, p):
    amp = _pos_tok(source, path, p)
    k = next((k for k, t in enumerate(tokens) if t.start_pos > p), len(tokens))
    nxt = _at(tokens, k)
    upto = k  # tokens[k:upto] go with the `&`
    if _is(nxt, "LOWER", "mut"):
        upto += 1
        nxt = _at(tokens, upto)
    if nxt is not None and nxt.value in ("str", "String") and nxt.type in ("LOWER", "UPPER"):
        text = Tok("UPPER", "Text", p, amp.line, amp.column, nxt.end_line, nxt.end_column, nxt.end_pos)
        fix = _safe("write `Text`", _replace(path, amp, nxt, "Text"))
        written = f"&{nxt.value}" if upto == k else f"&mut {nxt.value}"
        diags.append(_diag(_span(path, amp, nxt), fix, "text-reference", written, "Text"))
        return tokens[:k] + [text] + tokens[upto + 1 :]
    if nxt is None:
        return tokens
    written = "&mut" if upto > k else "&"
    fix = _safe(f"remove `{written}`", _delete_between(path, amp, nxt))
    diags.append(_diag(_span(path, amp, tokens[k] if upto > k else amp), fix, "reference", written))
    return tokens[:k] + tokens[upto:]


def _pos_tok(source: str, path: str, p: int) -> Tok:
    """A one-character token at offset `p` (for spans)."""
    line = source.count("\n", 0, p) + 1
    col = p - (source.rfind("\n", 0, p) + 1) + 1
    return Tok("BAD", source[p], p, line, col, line, col + 1, p + 1)


def joined_template(body: str) -> str:
    """The `++` join for a JavaScript template literal's body (`a${x}b`)."""
    return _joined(body.replace('"', '\\"'), "${", "}")
