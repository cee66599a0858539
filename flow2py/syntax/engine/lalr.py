"""The LALR loop over the table lark builds from grammar.lark (lark_tables.py).

It is lark's `ParserState.feed_token` step by step (same order of reductions and so the same
callbacks), fed by the caller one token run at a time so that the caller can recover from an
error between runs. It is ours because lark keys its table by Rule objects, whose hash is
computed in Python on every reduce, and goes through a method call per token.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from flow2py.syntax.engine.lark_tables import Table
from flow2py.syntax.engine.reduce import Inline, make_callbacks, pass_up
from flow2py.syntax.engine.scanner import Tok


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the block, and back on afterwards (also on an exception)
    only if it was on before: parsing allocates many small objects that all stay alive, and
    the collector would only walk them again and again (a third of the time on a large file).
    A caller that turned the collector off itself finds it off afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Conf:
    """The table with one parse's callbacks: `(size, origin, callback)` per rule."""

    __slots__ = ("end", "rules", "start", "states")

    def __init__(self, table: Table, builder):
        self.states = table.states
        cbs = make_callbacks(table.rules, builder)
        self.rules = [(len(r.expansion), r.origin, cb) for r, cb in zip(table.rules, cbs)]
        self.start = table.start
        self.end = table.end


class State:
    """A parser state: the LALR state stack and the value built for each entry."""

    __slots__ = ("stack", "values")

    def __init__(self, stack: list[int], values: list):
        self.stack = stack
        self.values = values

    def copy(self) -> State:
        return State(list(self.stack), [v.copied() if type(v) is Inline else v for v in self.values])


def synthetic(kind: str, value: str, at: Tok) -> Tok:
    """A zero-width token of `kind` placed at the end of `at`."""
    return Tok(kind, value, at.end_pos, at.end_line, at.end_column, at.end_line, at.end_column, at.end_pos)


def end_token(seg: list[Tok]) -> Tok:
    return synthetic("$END", "", seg[-1])


def acceptable(conf: Conf, state: int) -> set[str]:
    """The terminals `state` accepts (`_SEP` included)."""
    return {t for t in conf.states[state] if t.isupper() or t == "_SEP"}


def feed_run(conf: Conf, ps: State, seg: list[Tok], i: int) -> int:
    """Feed tokens from index i until one is not accepted; its index (len(seg) when all were).

    This loop is the parser's hot path (one iteration per shift or reduce), hence the locals
    and the special case for rules that hand their one value on (`?or_expr: and_expr`,
    `_stmt: let_stmt`; most reductions): they keep the value and only swap the top state."""
    states = conf.states
    rules = conf.rules
    stack = ps.stack
    values = ps.values
    push = stack.append
    vpush = values.append
    passup = pass_up
    inline = Inline
    n = len(seg)
    state = stack[-1]
    while i < n:
        tok = seg[i]
        typ = tok.type
        while True:
            try:
                a = states[state][typ]
            except KeyError:
                return i
            if a >= 0:
                push(a)
                vpush(tok)
                state = a
                break
            size, origin, cb = rules[~a]
            if cb is passup:
                v = values[-1]
                if type(v) is inline and len(v) == 1:
                    values[-1] = v[0]
                state = states[stack[-2]][origin]
                stack[-1] = state
                continue
            if size:
                s = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                s = []
            vpush(cb(s))
            state = states[stack[-1]][origin]
            push(state)
        i += 1
    return i


def feed(conf: Conf, ps: State, token: Tok, is_end: bool):
    """One token, as lark's `ParserState.feed_token`: (True, the parse result when `is_end`)
    once accepted, (False, the state that rejected it) when not. Every declaration ends with
    `$END` going through here, which reduces everything still open: hence the same unit-rule
    shortcut as in `feed_run`."""
    states = conf.states
    rules = conf.rules
    stack = ps.stack
    values = ps.values
    typ = token.type
    end_state = conf.end
    while True:
        actions = states[stack[-1]]
        if typ not in actions:
            return False, stack[-1]
        a = actions[typ]
        if a >= 0:
            assert not is_end
            stack.append(a)
            values.append(token)
            return True, None
        size, origin, cb = rules[~a]
        if cb is pass_up:
            v = values[-1]
            if type(v) is Inline and len(v) == 1:
                values[-1] = v[0]
            stack[-1] = states[stack[-2]][origin]
        else:
            if size:
                s = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                s = []
            value = cb(s)
            stack.append(states[stack[-1]][origin])
            values.append(value)
        if is_end and stack[-1] == end_state:
            return True, values[-1]


def try_feed(conf: Conf, ps: State, token: Tok) -> State | None:
    """Feed `token` to a copy of the parser state; the copy when it was accepted, else None."""
    trial = ps.copy()
    ok, _ = feed(conf, trial, token, token.type == "$END")
    return trial if ok else None


def pop_until_accepts(conf: Conf, ps: State, token: Tok) -> State | None:
    """Drop parser states from the top until one accepts `token`; the new state, or None."""
    states = conf.states
    work = ps.copy()
    while len(work.stack) > 1:
        if token.type in states[work.stack[-1]]:
            trial = try_feed(conf, work, token)
            if trial is not None:
                return trial
        work.stack.pop()
        work.values.pop()
    return None


def feed_end(conf: Conf, ps: State, end: Tok):
    """The parse result once `end` (`$END`) is fed to a copy of `ps`; None when rejected."""
    ok, value = feed(conf, ps.copy(), end, True)
    return value if ok else None
