"""What syntax errors took out of a module: the record that lets checking go on without noise.

A syntax error costs at most the declaration it is in (parser.py cuts the file at declaration
starts). The checker still checks every declaration that parsed; what it must not report is
what only looks wrong because part of the source is missing from the tree. Two things say what
that is:

- `names`: what the declarations that failed to parse would have declared (`flow NAME`,
  `type NAME` and its constructors, a `use`'s alias, `fn NAME`/`def NAME`/`const NAME` heads
  written in another language's style). A use of one of them is not "unknown".
- `regions`: the stretches of source the tree does not hold faithfully: a declaration that
  failed to parse, the statement (or match arm, or right side of a `let`) of a function body
  that a syntax error broke (recover.py: the tree holds a hole in its place), the body of a
  function where no smaller piece could be the hole (the tree holds the signature and a hole
  for the body), and the holes the parser leaves for a habit from another language that has no
  one Flow equivalent (a `for` loop, a template literal). Nothing inside a region is reported
  by the checker; a binding, import or private declaration whose name is written in a region
  may be used there, so it is not reported as unused either, and a name written in a region
  may be bound there, so it is not reported unknown later in the same declaration
  (`Region.mentions`).
- `matches`: where a `match` begins that recovery left a broken arm out of; it is not
  reported non-exhaustive.

The checker reads these per module (`LoadedModule.broken`, flow2py/check/modgraph.py) and drops
what they explain (flow2py/check/driver.py). A module with any syntax error never compiles:
its diagnostics always include the syntax errors themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flow2py.span import Span
from flow2py.syntax.engine.scanner import CLOSERS, OPENERS, Tok

# The name a hole stands under in the tree: no Flow source can write it, so the checker treats
# it as an unknown name (a poison type that unifies with everything) inside a region.
HOLE = "<hole>"


@dataclass(frozen=True)
class Region:
    span: Span
    mentions: frozenset[str]  # every name written in the region: what it might use


@dataclass(frozen=True)
class Broken:
    names: frozenset[str] = frozenset()
    regions: tuple[Region, ...] = ()
    # where a `match` begins that recovery left a broken arm out of: it is not reported
    # non-exhaustive (E401), as the arm may be what covers the rest
    matches: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.names or self.regions)

    def covers(self, span: Span) -> bool:
        """Whether `span` lies inside a region (same file)."""
        return any(
            r.span.file == span.file and r.span.start <= span.start and span.end <= r.span.end
            for r in self.regions
        )

    def mentioned(self, name: str, within: Span | None = None) -> bool:
        """Whether a region (inside `within`, when given) writes `name`."""
        for r in self.regions:
            if name in r.mentions and (
                within is None or (within.start <= r.span.start and r.span.end <= within.end)
            ):
                return True
        return False

    def mentioned_before(self, name: str, within: Span | None, at: Span) -> bool:
        """Whether a region inside `within` and ending before `at` writes `name`."""
        return within is not None and any(
            name in r.mentions and within.start <= r.span.start and r.span.end <= at.start
            for r in self.regions
        )


NOTHING_BROKEN = Broken()


def hole(first: Tok, last: Tok) -> Tok:
    """A token standing, from `first` to `last`, for source the tree cannot hold (a `for` loop,
    a template literal, a broken body): the parser sees the name `<hole>`."""
    return Tok(
        "LOWER", HOLE, first.start_pos, first.line, first.column, last.end_line, last.end_column, last.end_pos
    )


def token_span(path: str, first: Tok, last: Tok) -> Span:
    return Span(path, first.line, first.column, last.end_line, last.end_column, first.start_pos, last.end_pos)


def mentions(toks) -> set[str]:
    """The names written in `toks` (and in their text literals: one left open swallowed the rest
    of its line, which may be code)."""
    out = {t.value for t in toks if t.type in ("LOWER", "UPPER") and t.value != HOLE}
    for t in toks:
        if t.type == "TEXT":
            out.update(_WORD.findall(t.value))
    return out


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def declared_names(seg: list[Tok]) -> set[str]:
    """What the declaration `seg` would have declared, read from its tokens: the name after
    `flow` or `type` (and, for a type, every constructor-looking entry of its body), a `use`'s
    alias, or the second word of a head in another language's style (`fn NAME`, `const NAME`)."""
    depth = 0
    n = len(seg)
    for i, tok in enumerate(seg):
        t = tok.type
        nxt = seg[i + 1] if i + 1 < n else None
        if depth == 0 and nxt is not None:
            if t == "FLOW" and nxt.type == "LOWER":
                return {nxt.value}
            if t == "TYPE" and nxt.type == "UPPER":
                return {nxt.value} | _constructors(seg, i + 2)
            if t == "USE" and nxt.type == "TEXT":
                alias = nxt.value.strip('"').rstrip("/").rsplit("/", 1)[-1]
                return {alias} if alias else set()
            if t == "USE" and nxt.type == "LOWER":  # `use planner`: the alias, unquoted
                return {nxt.value}
            if t in ("LOWER", "LET") and nxt.type in ("LOWER", "UPPER") and i == 0:
                names = {nxt.value}
                if nxt.type == "UPPER":
                    names |= _constructors(seg, i + 2)
                return names
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS and depth:
            depth -= 1
    return set()


def _constructors(seg: list[Tok], start: int) -> set[str]:
    """Upper names that begin an entry of the first brace body from `start` on (`Circle` in
    `{ Circle(Decimal), Square }`)."""
    out: set[str] = set()
    depth = 0
    prev = None
    for tok in seg[start:]:
        t = tok.type
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
            if depth <= 0 and t == "RBRACE":
                break
        elif t == "UPPER" and depth == 1 and prev in ("LBRACE", "COMMA", "_SEP"):
            out.add(tok.value)
        prev = t
    return out
