"""Comments for the formatter: found in the source, then attached to the lists they sit in.

The grammar ignores `//` comments, so the tree has none; the formatter finds them in the text
(engine/scanner.py's `comment_spans`) and gives each a place by where it lies. The places are
the items of the tree's *lists*: declarations, statements, match arms, type entries, record
fields, call arguments, list/tuple/dict items and parameters (`list_of` names each list with
the offsets of its brackets). A comment between two items of a list is

- *trailing* the item before it when it follows that item on the same line with nothing but
  `,`/`;` between (`x: Int, // why`);
- *opening* its list when it follows the list's opening bracket on the same line (`match t { //
  why`): printed there, after the bracket, as gofmt does;
- else *leading* the item after it (printed on the lines before it);
- else, after the last item, *dangling* (printed before the list's closing bracket).

A comment inside an item but in no gap of a nested list (`a + // why` inside an expression)
has no list place of its own; it becomes a leading comment of the innermost item holding it,
so it moves to the line before that statement, argument or field. Nothing is ever dropped.

Every list with a comment attached is printed broken (one item per line), since a `//`
comment runs to the end of its line.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache

from flow2py.syntax import ast
from flow2py.syntax.engine.lark_tables import terminals
from flow2py.syntax.engine.scanner import Scanner, comment_spans


@dataclass(frozen=True)
class Comment:
    start: int
    end: int
    text: str  # as written, trailing spaces removed
    inside: bool = False  # found inside its item (moved before it), not in a gap of a list


@dataclass(frozen=True)
class Item:
    key: int  # the id of the node that stands for the item (a dict entry: its key)
    node: object  # the node, or (key, value) for a dict entry
    start: int
    end: int


@dataclass
class Attached:
    leading: dict[int, list[Comment]] = field(default_factory=dict)
    trailing: dict[int, Comment] = field(default_factory=dict)
    dangling: dict[int, list[Comment]] = field(default_factory=dict)
    opening: dict[int, Comment] = field(default_factory=dict)  # list owner id -> after its bracket
    owners: set[int] = field(default_factory=set)  # lists that hold a comment: never flat


@lru_cache(maxsize=1)
def _scanner() -> Scanner:
    return Scanner(*terminals())


def find_comments(source: str) -> list[Comment]:
    return [Comment(a, b, source[a:b].rstrip()) for a, b in comment_spans(_scanner(), source)]


class Source:
    """The text with what the lists need of it: brackets found outside comments, line numbers."""

    def __init__(self, text: str, comments: list[Comment]):
        self.text = text
        self.comments = comments
        self._starts = [c.start for c in comments]
        self._nls = [m.start() for m in re.finditer("\n", text)]

    def find(self, ch: str, pos: int) -> int:
        """The offset of the first `ch` at or after `pos` that is not in a comment."""
        while True:
            i = self.text.find(ch, pos)
            if i < 0:
                return len(self.text)
            k = bisect.bisect_right(self._starts, i) - 1
            if k >= 0 and self.comments[k].start <= i < self.comments[k].end:
                pos = self.comments[k].end
                continue
            return i

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self._nls, pos)

    def blank_between(self, a: int, b: int) -> bool:
        """Whether an empty line lies between offsets a and b (nothing but space between)."""
        return self.text.count("\n", a, b) >= 2


def list_of(node, src: Source) -> tuple[int, int, list[Item]] | None:
    """The list `node` owns, as (offset after its opening bracket, offset of its closing
    bracket, items in source order), or None."""
    if isinstance(node, ast.Module):
        items = sorted(node.uses + node.decls, key=lambda d: d.span.start)
        return 0, len(src.text) + 1, [_item(d) for d in items]
    if isinstance(node, ast.Block):
        return node.span.start + 1, node.span.end - 1, [_item(s) for s in node.stmts]
    if isinstance(node, ast.Match):
        return src.find("{", node.scrutinee.span.end) + 1, node.span.end - 1, [_item(a) for a in node.arms]
    if isinstance(node, ast.TypeDecl) and node.kind in ("record", "enum"):
        entries = sorted([*node.fields, *node.ctors], key=lambda e: e.span.start)
        return src.find("{", node.name_span.end) + 1, node.span.end - 1, [_item(e) for e in entries]
    if isinstance(node, ast.CtorDecl) and node.named is not None:
        return src.find("{", node.span.start) + 1, node.span.end - 1, [_item(f) for f in node.named]
    if isinstance(node, ast.RecordLiteral):
        entries = ([node.base] if node.base is not None else []) + list(node.fields)
        return src.find("{", node.ctor.span.end) + 1, node.span.end - 1, [_item(e) for e in entries]
    if isinstance(node, ast.Call):
        return src.find("(", node.callee.span.end) + 1, node.span.end - 1, [_item(a) for a in node.args]
    if isinstance(node, (ast.ListLiteral, ast.TupleLiteral)):
        return node.span.start + 1, node.span.end - 1, [_item(x) for x in node.items]
    if isinstance(node, ast.DictLiteral):
        items = [Item(k.id, (k, v), k.span.start, v.span.end) for k, v in node.entries]
        return node.span.start + 1, node.span.end - 1, items
    if isinstance(node, ast.FnDecl):
        open_ = src.find("(", node.name_span.end) + 1
        last = node.params[-1].span.end if node.params else open_
        return open_, src.find(")", last), [_item(p) for p in node.params]
    return None


def _item(node) -> Item:
    return Item(node.id, node, node.span.start, node.span.end)


def attach(module: ast.Module, src: Source) -> Attached:
    """Every comment of `src` given its place (see the module docstring)."""
    out = Attached()
    if not src.comments:
        return out
    # Intervals: each gap of each list, and each item. They nest properly, so a sweep with a
    # stack finds, for each comment, the innermost interval holding it.
    ivs: list[tuple[int, int, int, object, int]] = []  # (start, end, kind 0 gap / 1 item, owner, k)
    for node in _holding_comments(module, src):
        got = list_of(node, src)
        if got is None:
            continue
        open_, close, items = got
        bounds = [open_] + [x for it in items for x in (it.start, it.end)] + [close]
        for k in range(len(items) + 1):
            a, b = bounds[2 * k], bounds[2 * k + 1]
            if b > a:
                ivs.append((a, b, 0, (node, items), k))
        for k, it in enumerate(items):
            if it.end > it.start:
                ivs.append((it.start, it.end, 1, (node, items), k))
    ivs.sort(key=lambda iv: (iv[0], -iv[1], iv[2]))
    stack: list = []
    j = 0
    for c in src.comments:
        p = c.start
        while j < len(ivs) and ivs[j][0] <= p:
            iv = ivs[j]
            j += 1
            while stack and stack[-1][1] <= iv[0]:
                stack.pop()
            stack.append(iv)
        while stack and stack[-1][1] <= p:
            stack.pop()
        _, _, kind, (owner, items), k = stack[-1]
        out.owners.add(owner.id)
        if kind == 1:
            inside = Comment(c.start, c.end, c.text, inside=True)
            out.leading.setdefault(items[k].key, []).append(inside)
            continue
        if k == 0 and not isinstance(owner, ast.Module) and owner.id not in out.opening:
            before = src.text[stack[-1][0] : c.start]
            if not before.strip(" \t\r\f\ufeff"):  # right after the bracket, on its line
                out.opening[owner.id] = c
                continue
        if k > 0:
            prev = items[k - 1]
            between = src.text[prev.end : c.start]
            if prev.key not in out.trailing and "\n" not in between and not between.strip(" \t\r\f\ufeff,;"):
                out.trailing[prev.key] = c
                continue
        if k < len(items):
            out.leading.setdefault(items[k].key, []).append(c)
        else:
            out.dangling.setdefault(owner.id, []).append(c)
    return out


_CHILDREN: dict[type, tuple[str, ...]] = {}


def _holding_comments(module: ast.Module, src: Source):
    """The nodes whose span holds a comment (their lists are the only ones a comment can be
    attached to), depth first: the rest of the tree is never visited."""
    starts = src._starts
    stack: list = [module]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Node):
            if n is not module:
                k = bisect.bisect_left(starts, n.span.start)
                if k == len(starts) or starts[k] >= n.span.end:
                    continue
            yield n
            names = _CHILDREN.get(type(n))
            if names is None:
                skip = ("span", "id", "name_span", "source")
                names = _CHILDREN[type(n)] = tuple(f.name for f in fields(n) if f.name not in skip)
            stack.extend(getattr(n, name) for name in names)
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
