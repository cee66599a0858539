"""Python's floor division `a // b`, which Flow's scanner reads as a comment (E012; habits.py has
the why).

`(n + 9) // 10)` leaves the line's brackets open, the next line is read inside them, and the
error the parser meets there is far from the mistake. Before parsing, each `//` comment is looked
at: the token before it on its line ends an operand, the comment's text starts one, the line's
brackets are left open before the `//` and are all closed once the text up to the next `//` is
read as code. Then it was a division: the tokens are the source's with that `//` read as `/`
(Flow's Int `/` is floor division, semantics.md), and an E012 says so. The fix writes `/`, to
review: an Int's `/` is Python's `//`, a Decimal's is exact (check/habit_fixes.py settles it
once the operands' types are known).
"""

from __future__ import annotations

from flow2py.diagnostics import Diagnostic, Edit, Fix
from flow2py.span import Span
from flow2py.syntax import codes
from flow2py.syntax.engine.scanner import CLOSERS, OPENERS, Tok

_OPERAND_END = frozenset({"LOWER", "UPPER", "INT", "DECIMAL", "RPAR", "RSQB"})


def floor_divisions(tokens: list[Tok], diags: list, source: str, path: str, retokenize, comments):
    """The tokens with each `//` that is a floor division read as `/` (an E012 each added to
    `diags`); `retokenize(source, diags)` scans a source, `comments` are the `//` comments'
    (start, end) offsets."""
    for a, b in comments:
        first = source.rfind("\n", 0, a) + 1
        line = [t for t in tokens if first <= t.start_pos < a and t.type != "_SEP"]
        text = source[a + 2 : b].lstrip(" \t")
        if not line or line[-1].type not in _OPERAND_END or not text[:1].isalnum() and text[:1] != "(":
            continue
        if _open(line) <= 0:
            continue
        new_source = source[:a] + "/ " + source[a + 2 :]
        new_diags: list = []
        new_tokens = retokenize(new_source, new_diags)
        nl = new_source.find("\n", a)
        end = len(new_source) if nl < 0 else nl
        now = [t for t in new_tokens if first <= t.start_pos < end and t.type != "_SEP"]
        if _open(now) != 0 or len(new_diags) != sum(d.code in ("E001", "E002") for d in diags):
            continue
        span = Span(path, line[-1].line, a - first + 1, line[-1].line, a - first + 3, a, a + 2)
        fix = Fix("write `/`", (Edit(span, "/"),), False)
        diags.append(Diagnostic.of(codes.ForeignSyntax(span, "floor-division", "//", "/"), fixes=(fix,)))
        source, tokens = new_source, new_tokens
    return tokens


def _open(toks: list[Tok]) -> int:
    """How many brackets `toks` leave open (negative: more closed than opened)."""
    return sum(t.type in OPENERS for t in toks) - sum(t.type in CLOSERS for t in toks)
