"""Recovery inside a function body: a syntax error costs the smallest piece of it that it is in.

parser.py reports every syntax error of a declaration first; this module then finds, for each
error, the innermost piece of the body that holds it and can stand as a hole, replaces it, and
parses the declaration again, quietly, so that the rest of the body is in the tree and checked:

- a statement of a block (the tokens between two `_SEP`s of the block): the hole stands in its
  place, a value the checker knows nothing about (a poison type, so neither a type mismatch nor
  an unused value); a `let` keeps its pattern and only its right side is a hole, so its names
  stay bound (except as the last statement of a block, where the block's value would then be
  Unit: there the whole statement is the hole);
- a match arm: a hole for its body when the error is after its one `=>`; otherwise the arm is
  left out, and the match is recorded as missing an arm (`Piece.match`), so it is not reported
  non-exhaustive (E401);
- a field of a record literal or pattern, or an entry of a dictionary (`name: value`): a hole
  for the value;
- an argument of a call, an element of a list or a tuple, in an expression (not in a pattern,
  where a hole would be a name that matches everything, nor a lambda's parameters, whose
  number is part of its type): the hole stands in its place (a call holding one is not
  reported for its number of arguments, E202: a broken argument may have been several).

The smallest piece is tried first; a statement is the largest.

When the declaration still does not parse, the piece where the quiet parse stops is widened to
the next piece around it (or a new piece made where an error the first parse skipped over
shows up; a separator written twice after a statement goes with it), at most `MAX_TRIES` times; when nothing smaller than the whole body parses, the caller keeps today's
rule (the body is one hole). Each piece is a region (broken.py): nothing in it is reported by the
checker, and the names written in it may be used, or bound, there.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace

from flow2py.syntax.broken import hole
from flow2py.syntax.build import Builder
from flow2py.syntax.engine.lalr import Conf, State, end_token, feed_end, feed_run
from flow2py.syntax.engine.lark_tables import table
from flow2py.syntax.engine.scanner import CLOSERS, OPENERS, Tok

MAX_TRIES = 12  # quiet parses of one declaration before giving up on small holes
_SEPS = ("_SEP", "COMMA")


@dataclass(frozen=True)
class Piece:
    """Tokens `start..end` (inclusive) of the declaration, replaced by `new`."""

    start: int
    end: int
    new: tuple[Tok, ...]
    key: int  # the error token it was made for (widened together)
    region: tuple[Tok, ...]  # what the tree does not hold
    match: Tok | None = None  # the `match` whose arm was left out
    opener: int = -1  # the bracket it is an entry of


@dataclass(frozen=True)
class Recovered:
    node: object
    pieces: tuple[Piece, ...]


class _Shape:
    """Bracket structure of a declaration: depth before each token, the innermost opener
    around each token, the closer of each opener."""

    def __init__(self, seg: list[Tok]) -> None:
        n = len(seg)
        self.depth = [0] * n
        self.parent = [-1] * n
        self.closer: dict[int, int] = {}
        self.opener_of: dict[int, int] = {}  # each closer that closes an opener: that opener
        stack: list[int] = []
        for i, tok in enumerate(seg):
            self.depth[i] = len(stack)
            self.parent[i] = stack[-1] if stack else -1
            if tok.type in OPENERS:
                stack.append(i)
            elif tok.type in CLOSERS:
                # a closer that closes nothing open is a token of its statement, like any other
                want = CLOSERS[tok.type]
                for k in range(len(stack) - 1, -1, -1):
                    if seg[stack[k]].type == want:
                        self.closer[stack[k]] = i
                        self.opener_of[i] = stack[k]
                        del stack[k:]
                        break
        self.n = n

    def openers_around(self, i: int, body: int) -> list[int]:
        """The brackets open around token i, innermost first, from the body on."""
        out = []
        o = self.parent[i]
        while o >= body:
            out.append(o)
            o = self.parent[o]
        return out


def recover(seg: list[Tok], body: int, positions: list[int], path: str) -> Recovered | None:
    """The declaration `seg` (whose body starts at index `body`) parsed with a hole for the
    smallest piece around each place in `positions` (where a syntax error is, as source
    offsets), or None when only the whole body can be the hole."""
    shape = _Shape(seg)
    starts = [t.start_pos for t in seg]
    levels: dict[int, int] = {}
    moved: set[int] = set()  # errors at the separator or closer just after their token
    stray: dict[int, int] = {}  # a piece followed by separators up to this index: not an entry
    for p in positions:
        i = max(min(bisect_right(starts, p) - 1, len(seg) - 1), body)
        key, after = _reference(seg, shape, i)
        levels.setdefault(key, 0)
        if after:
            moved.add(key)
    for _ in range(MAX_TRIES):
        pieces = []
        for key, lvl in levels.items():
            p = _piece(seg, shape, key, lvl, body, key in moved)
            if p is None:
                return None
            if key in stray:  # separators written twice after it: all but the last go with it
                p = replace(
                    p, end=max(p.end, stray[key] - 1), region=p.region + tuple(seg[p.end + 1 : stray[key]])
                )
            pieces.append(p)
        pieces = _outermost(pieces)
        new, origin = _apply(seg, pieces)
        node, stop = _quiet(new, path)
        if stop is None:
            return Recovered(node, tuple(pieces))
        j = origin[min(stop, len(new) - 1)]
        touched = next((p for p in pieces if p.start <= j <= p.end + 1), None)
        after_seps = next(
            (p for p in pieces if p.end < j and all(seg[k].type in _SEPS for k in range(p.end + 1, j + 1))),
            None,
        )
        if touched is None and _statement(seg, after_seps) and stray.get(after_seps.key) != j:
            stray[after_seps.key] = j
        elif touched is not None:
            levels[touched.key] += 1
        else:
            key, after = _reference(seg, shape, j)
            if after:
                moved.add(key)
            if key in levels:
                levels[key] += 1
            else:
                levels[key] = 0
    return None


def _statement(seg: list[Tok], p: Piece | None) -> bool:
    """Whether `p` is a statement of a block or an arm of a match (where a separator written
    twice is only that: in a call, a list or a record, it would be an entry more)."""
    return p is not None and seg[p.opener].type == "LBRACE" and seg[p.opener - 1].type != "UPPER"


def _reference(seg: list[Tok], shape: _Shape, i: int) -> tuple[int, bool]:
    """The token whose piece an error at token i breaks, and whether the error is just after
    it: an error at a closer is at the end of what the bracket holds, one at a separator at the
    end of the statement before it (a bracket that ends it stands for it whole)."""
    moved = False
    if i in shape.opener_of and i > 0 and seg[i - 1].type not in OPENERS:
        i -= 1
        moved = True
    while i > 0 and seg[i].type in _SEPS and seg[i - 1].type not in OPENERS:
        i -= 1
        moved = True
    if moved and i in shape.opener_of:
        i = shape.opener_of[i]
    return i, moved


def _piece(seg: list[Tok], shape: _Shape, i: int, lvl: int, body: int, after: bool) -> Piece | None:
    """The piece for token i, `lvl` levels out from the smallest one that can be a hole
    (`after`: the error is just after token i, at the separator or closer that follows it)."""
    at = i + 0.5 if after else i
    openers = shape.openers_around(i, body)
    usable = 0
    for k, o in enumerate(openers):
        expression = _in_expression(seg, shape, o, openers[k + 1 :], body)
        if seg[o].type == "LBRACE":
            p = _piece_in(seg, shape, i, o, at, expression)
        elif expression:
            p = _element_in(seg, shape, i, o, at)
        else:
            p = None
        if p is not None:
            if usable == lvl:
                return replace(p, opener=o)
            usable += 1
    return None


def _entry(seg: list[Tok], shape: _Shape, i: int, o: int) -> tuple[int, int, int, int]:
    """The entry of the bracket opened at `o` that holds token i: its first and last token,
    the bracket's closer, and the depth of the entry."""
    d = shape.depth[o] + 1
    close = shape.closer.get(o, shape.n)
    a = i
    while a > o + 1 and not (shape.depth[a - 1] == d and seg[a - 1].type in _SEPS):
        a -= 1
    b = i
    while b + 1 < close and not (shape.depth[b + 1] == d and seg[b + 1].type in _SEPS):
        b += 1
    return a, b, close, d


def _piece_in(seg: list[Tok], shape: _Shape, i: int, o: int, at: float, expression: bool) -> Piece | None:
    """The piece of the brace body opened at `o` that holds token i, or None when that entry
    cannot stand as a hole (`expression`: the brace is in an expression, not in a pattern)."""
    a, b, close, d = _entry(seg, shape, i, o)
    if a > b or seg[a].type in _SEPS:
        return None
    if o > 0 and seg[o - 1].type == "UPPER":  # a record's entry: only its value can be a hole
        if expression and seg[a].type == "LOWER" and a + 1 <= b and seg[a + 1].type == "COLON":
            return _tail(seg, a, b, a + 1, i) if at > a + 1 else None
        return None
    match = _match_of(seg, shape, o)
    if match is not None:
        return _arm(seg, shape, o, a, b, i, at, match)
    top = [k for k in range(a, b + 1) if shape.depth[k] == d]
    if seg[a].type == "LET" and b + 1 < close:
        eq = next((k for k in top if seg[k].type == "EQUAL"), None)
        if eq is not None and at > eq:
            return _tail(seg, a, b, eq, i)
    return Piece(a, b, (hole(seg[a], seg[b]),), i, tuple(seg[a : b + 1]))


def _arm(seg: list[Tok], shape: _Shape, o: int, a: int, b: int, i: int, at: float, match: Tok) -> Piece:
    """The piece for an error in the arm `a..b` of a match: a hole for its body when the error
    is after its one `=>`, else the arm left out."""
    d = shape.depth[o] + 1
    close = shape.closer.get(o, shape.n)
    b = _whole_arm(seg, shape, a, b, close, d)
    arrows = [k for k in range(a, b + 1) if shape.depth[k] == d and seg[k].type == "FATARROW"]
    # with a second `=>`, which one ends the pattern is not known
    if len(arrows) == 1 and at > arrows[0]:
        return _tail(seg, a, b, arrows[0], i)
    if (
        (not arrows or at < arrows[0])
        and a - 1 > o + 1
        and seg[a - 1].type == "COMMA"
        and seg[a - 1].line == seg[a].line
    ):
        # an arm that does not begin as one, after a `,` on its line: a stray closer may have
        # ended the arm before it early, so that one goes too
        a -= 2
        while a > o + 1 and not (shape.depth[a - 1] == d and seg[a - 1].type in _SEPS):
            a -= 1
    # the arm is left out, with its separator
    end = b + 1 if b + 1 < close and seg[b + 1].type in _SEPS else b
    return Piece(a, end, (), i, tuple(seg[a : b + 1]), match)


def _element_in(seg: list[Tok], shape: _Shape, i: int, o: int, at: float) -> Piece | None:
    """The piece of the `(` or `[` opened at `o` (a call's arguments, a tuple's or a list's
    elements) that holds token i: the whole element, or the value of a dictionary entry."""
    a, b, _close, d = _entry(seg, shape, i, o)
    if a > b or seg[a].type in _SEPS:
        return None
    colon = next((k for k in range(a, b + 1) if shape.depth[k] == d and seg[k].type == "COLON"), None)
    if colon is not None:
        return _tail(seg, a, b, colon, i) if at > colon and seg[o].type == "LSQB" else None
    return Piece(a, b, (hole(seg[a], seg[b]),), i, tuple(seg[a : b + 1]))


def _in_expression(seg: list[Tok], shape: _Shape, o: int, outer: list[int], body: int) -> bool:
    """Whether the `(` or `[` at `o` is a bracket of an expression (not of a pattern, a lambda's
    parameters or a type), so that one of its elements can be a hole."""
    if o > 0 and seg[o - 1].type == "FLOW":
        return False
    brace = next((x for x in outer if seg[x].type == "LBRACE"), None)
    if brace is None:  # the body `= expr` itself
        return seg[body].type == "EQUAL" and o > body
    a, b, _close, d = _entry(seg, shape, o, brace)
    top = [k for k in range(a, b + 1) if shape.depth[k] == d]
    kinds = [seg[k].type for k in top]
    if "FATARROW" in kinds:
        start = top[kinds.index("FATARROW")] + 1
    elif seg[a].type in ("LET", "GUARD") and "EQUAL" in kinds:
        start = top[kinds.index("EQUAL")] + 1
    elif seg[a].type == "LOWER" and a + 1 <= b and seg[a + 1].type == "COLON":
        start = a + 2
    elif seg[a].type == "LET" or seg[brace - 1].type == "UPPER":
        return False  # a record pattern or literal entry without a value, or a `let` pattern
    else:
        start = a
    return o >= start


def _whole_arm(seg: list[Tok], shape: _Shape, a: int, b: int, close: int, d: int) -> int:
    """The last token of the arm that begins at `a`, from `b` on: a stray `,` may have cut it
    before its `=>` or right after it, so it goes on until it has an `=>` and a body."""

    def arrow_at(k: int) -> bool:
        return shape.depth[k] == d and seg[k].type == "FATARROW"

    while b + 1 < close:
        arrows = [k for k in range(a, b + 1) if arrow_at(k)]
        if arrows and any(
            shape.depth[k] >= d and seg[k].type not in _SEPS for k in range(arrows[-1] + 1, b + 1)
        ):
            break
        b += 1
        while b + 1 < close and not (shape.depth[b + 1] == d and seg[b + 1].type in _SEPS):
            b += 1
    return b


def _tail(seg: list[Tok], a: int, b: int, at: int, i: int) -> Piece:
    """A hole for what follows token `at` (`=`, `=>`, `:`) in the piece `a..b`."""
    if at == b:  # nothing after it: the hole stands at it, and the piece is it
        return Piece(at + 1, at, (hole(seg[at], seg[at]),), i, (seg[at],))
    return Piece(at + 1, b, (hole(seg[at + 1], seg[b]),), i, tuple(seg[at + 1 : b + 1]))


def _match_of(seg: list[Tok], shape: _Shape, o: int) -> Tok | None:
    """The `match` keyword whose arms the brace at `o` opens, or None."""
    d = shape.depth[o]
    for k in range(o - 1, -1, -1):
        if shape.depth[k] < d:
            return None
        if shape.depth[k] == d:
            t = seg[k].type
            if t == "MATCH":
                return seg[k]
            if t in _SEPS or t in ("LBRACE", "EQUAL", "FATARROW", "ELSE"):
                return None
    return None


def _outermost(pieces: list[Piece]) -> list[Piece]:
    """The pieces with those inside another dropped, in order."""
    pieces = sorted(pieces, key=lambda p: (p.start, -p.end))
    out: list[Piece] = []
    for p in pieces:
        if out and p.start <= out[-1].end:
            continue
        out.append(p)
    return out


def _apply(seg: list[Tok], pieces: list[Piece]) -> tuple[list[Tok], list[int]]:
    """The declaration with each piece replaced, and for each of its tokens the index of the
    token of `seg` it comes from (a hole: the piece's first token)."""
    new: list[Tok] = []
    origin: list[int] = []
    k = 0
    for p in pieces:
        new.extend(seg[k : p.start])
        origin.extend(range(k, p.start))
        new.extend(p.new)
        origin.extend([p.start] * len(p.new))
        k = max(k, p.end + 1)
    new.extend(seg[k:])
    origin.extend(range(k, len(seg)))
    return new, origin


def _quiet(seg: list[Tok], path: str):
    """(the node, None) when `seg` parses without an error, else (None, where it stopped)."""
    conf = Conf(table(), Builder(path, []))
    ps = State([conf.start], [])
    stop = feed_run(conf, ps, seg, 0)
    if stop < len(seg):
        return None, stop
    node = feed_end(conf, ps, end_token(seg))
    return (node, None) if node is not None else (None, len(seg))
