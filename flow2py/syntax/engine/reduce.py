"""The LALR reduce callbacks: each turns the values of one reduced rule into what the rule
above it sees, calling the Builder (build.py) for every named rule.

They live apart from the Builder because they are about the parser's mechanics (spans,
inlined rules, `?rule`s) rather than about Flow, and because they are the hot path: the
shortcuts here (a value passed on without a call, a span reused, fields set without
`__init__`) are where parsing time goes.
"""

from __future__ import annotations

import dataclasses
from operator import itemgetter

from flow2py.span import Span as _SpanClass
from flow2py.syntax.engine.scanner import Tok


def _span_maker():
    """A constructor for ast.Span that is twice as fast as calling the class: a frozen
    dataclass's `__init__` sets each field through `object.__setattr__`, which costs about
    as much as the rest of a reduce. The instance is the same (same class, same slots);
    should Span ever change shape, this falls back to the class."""
    Span = _SpanClass
    names = ("file", "line", "column", "end_line", "end_column", "start", "end")
    if tuple(f.name for f in dataclasses.fields(Span)) != names or hasattr(Span, "__post_init__"):
        return Span
    new = object.__new__
    set_file, set_line, set_column, set_end_line, set_end_column, set_start, set_end = (
        Span.__dict__[n].__set__ for n in names
    )

    def make_span(file, line, column, end_line, end_column, start, end):
        sp = new(Span)
        set_file(sp, file)
        set_line(sp, line)
        set_column(sp, column)
        set_end_line(sp, end_line)
        set_end_column(sp, end_column)
        set_start(sp, start)
        set_end(sp, end)
        return sp

    return make_span


make_span = _span_maker()


class Inline(list):
    """Children of an inlined rule (`_rule` or an EBNF helper), spliced into the parent.
    `lo` / `hi`: where the first of them starts and the last ends, as (line, column, offset);
    None when the rule matched nothing. Plain tuples, as an Inline never reaches the AST."""

    __slots__ = ("hi", "lo")

    def copied(self) -> Inline:
        """A copy a parser-state copy holds: the reduce that extends an Inline in place (the
        accumulating `x*` helpers) must not change another state's value."""
        out = Inline(self)
        out.lo, out.hi = self.lo, self.hi
        return out


def pass_up(s):
    """The callback of a rule that hands its one value on: a unit rule of the precedence ladder
    (`?or_expr: and_expr`) or an inlined unit rule (`_stmt: let_stmt`). The parser loop
    recognises it and does the same in place, without the call."""
    v = s[0]
    if type(v) is Inline and len(v) == 1:
        return v[0]
    return v


def _analyse(rules):
    """What each nonterminal's values can be, for `make_callbacks` to skip needless work:
    the ones whose value can be an Inline ("makers"), the ones that can match nothing, and the
    inlined unit rules (`_stmt: let_stmt`) that can hand their child's value on as it is,
    since splicing a one-value Inline is the same as appending that value."""

    def unit_child(r):
        return r.expansion[0] if len(r.expansion) == 1 else None

    makers: set[str] = set()
    while True:
        more = set()
        for r in rules:
            child = unit_child(r)
            if _is_inline(r):
                if not (_keeps_one(r) and (child.is_term or child.name not in makers)):
                    more.add(r.origin)
            elif (
                r.expand1 and not r.alias and child is not None and not child.is_term and child.name in makers
            ):
                more.add(r.origin)
        if more <= makers:
            break
        makers |= more
    passing = {
        r
        for r in rules
        if _is_inline(r) and _keeps_one(r) and (unit_child(r).is_term or unit_child(r).name not in makers)
    }
    nullable: set[str] = set()
    while True:
        more = {
            r.origin for r in rules if all(not sym.is_term and sym.name in nullable for sym in r.expansion)
        } - nullable
        if not more:
            break
        nullable |= more
    return makers, nullable, passing


def _is_inline(rule) -> bool:
    return (rule.alias or rule.origin).startswith("_")


def _keeps_one(rule) -> bool:
    return len(rule.expansion) == 1 and (
        rule.keep_all_tokens or not (rule.expansion[0].is_term and rule.expansion[0].filter_out)
    )


def make_callbacks(rules, builder) -> list:
    """LALR reduce callbacks, one per rule in `rules`' order, that build AST nodes directly
    (no parse tree, no second pass).

    Each callback sees every value of its rule's expansion, tokens included, which gives the
    exact span; then it drops anonymous tokens, splices inlined rules and calls the builder.
    """
    makers, nullable, passing = _analyse(rules)
    return [_callback(rule, builder, makers, nullable, passing) for rule in rules]


def _callback(rule, builder, makers: set[str], nullable: set[str], passing: set):
    """The callback for one rule: what it keeps, whether it splices, where its span is found
    are worked out here, once, so that the callback itself only does what its rule needs."""
    name = rule.alias or rule.origin
    keep = tuple(rule.keep_all_tokens or not (sym.is_term and sym.filter_out) for sym in rule.expansion)
    inline = name.startswith("_")
    expand1 = rule.expand1 and not rule.alias
    method = (
        None if inline else getattr(builder, name, None)
    )  # None: a `?rule` that always passes its child up
    if expand1 and keep == (True,) or rule in passing:
        return pass_up  # most reductions are these
    kept = tuple(k for k, want in enumerate(keep) if want)
    # Splicing is only needed where an Inline can show up; elsewhere the kept values are
    # the children as they are (and, when every value is kept, `s` itself, a fresh list).
    splice = any(not rule.expansion[k].is_term and rule.expansion[k].name in makers for k in kept)
    everything = len(kept) == len(keep)
    # Where the span starts and ends is known without a search when the first (last)
    # symbol always has a position: a token, or a rule that cannot match nothing and
    # whose value is not an Inline.
    syms = rule.expansion
    sure = [sym.is_term or (sym.name not in makers and sym.name not in nullable) for sym in syms]
    first_at = 0 if syms and sure[0] else -1
    last_at = len(syms) - 1 if syms and sure[-1] else -1
    return _reducer(
        builder.path, keep, _taker(kept), splice, everything, inline, expand1, method, first_at, last_at
    )


def _taker(kept: tuple[int, ...]):
    """A function from a rule's values to the list of those at the indices `kept`."""
    if len(kept) == 1:
        pick = kept[0]
        return lambda s, k=pick: [s[k]]
    if len(kept) > 1:
        getter = itemgetter(*kept)
        return lambda s, g=getter: list(g(s))
    return lambda s: []


def _reducer(path, keep, take, splice, everything, inline, expand1, method, first_at, last_at):
    """The callback proper; its settings are default arguments, which the hot path reads as
    fast locals."""
    Span = make_span

    def cb(
        s,
        keep=keep,
        take=take,
        splice=splice,
        everything=everything,
        inline=inline,
        expand1=expand1,
        method=method,
        first_at=first_at,
        last_at=last_at,
    ):
        grown = None  # an inlined rule's first child, an Inline extended in place
        if splice:
            # lark's `x*` helpers are left-recursive (`_star: _star x | x`): copying the
            # accumulated Inline at every reduce made a list of n items cost O(n^2); it is
            # consumed here, so an inlined rule extends it instead.
            ch = []
            for k, v in zip(keep, s):
                if k:
                    if type(v) is Inline:
                        if inline and grown is None and not ch:
                            grown = ch = v
                        else:
                            ch.extend(v)
                    else:
                        ch.append(v)
        elif everything:
            ch = s
        else:
            ch = take(s)
        if expand1 and len(ch) == 1:
            return ch[0]
        # The span runs from the first value that has a position to the last one.
        first = s[0] if first_at == 0 else _placed(s)
        if last_at >= 0:
            last = s[last_at]
        else:
            last = None if first is None else _placed(reversed(s))
        if inline:
            lo = None if first is None else _lo(first)
            hi = None if last is None else _hi(last)
            out = ch if grown is not None else Inline(ch)
            out.lo, out.hi = lo, hi
            return out
        if first is None:
            return method(None, ch)
        t = type(first)
        if t is Tok:
            line, column, start = first.line, first.column, first.start_pos
        elif t is Inline:
            line, column, start = first.lo
        elif first is last:
            return method(first.span, ch)  # one child covers the rule: its (immutable) span is the same
        else:
            sp = first.span
            line, column, start = sp.line, sp.column, sp.start
        t = type(last)
        if t is Tok:
            return method(Span(path, line, column, last.end_line, last.end_column, start, last.end_pos), ch)
        if t is Inline:
            end_line, end_column, end = last.hi
            return method(Span(path, line, column, end_line, end_column, start, end), ch)
        sp = last.span
        return method(Span(path, line, column, sp.end_line, sp.end_column, start, sp.end), ch)

    return cb


def _placed(values):
    """The first of `values` that has a position (a token, an Inline that matched something, a
    node with a span), or None. Only rules whose first or last value may have none search."""
    for v in values:
        t = type(v)
        if t is Tok or (v.lo if t is Inline else v.span) is not None:
            return v
    return None


def _lo(v) -> tuple[int, int, int]:
    t = type(v)
    if t is Tok:
        return v.line, v.column, v.start_pos
    if t is Inline:
        return v.lo
    sp = v.span
    return sp.line, sp.column, sp.start


def _hi(v) -> tuple[int, int, int]:
    t = type(v)
    if t is Tok:
        return v.end_line, v.end_column, v.end_pos
    if t is Inline:
        return v.hi
    sp = v.span
    return sp.end_line, sp.end_column, sp.end
