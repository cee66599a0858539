"""The one module that touches lark: it compiles grammar.lark with lark and hands the rest of
the engine plain data (terminals, rules, the LALR table), so no other module imports lark or
knows the shape of its objects.

What is read here beyond lark's documented API, and would be the first thing to check on a new
lark version (pyproject.toml pins the range this was tested with):
- `lark.parsers.lalr_analysis.Shift` / `Reduce`, the action tags of lark's parse table, reached
  through `parse_interactive(...).parser_state.parse_conf.parse_table`;
- a Rule's `origin`, `expansion`, `alias` and `options.expand1` / `options.keep_all_tokens`, and
  a symbol's `is_term`, `name` and `filter_out`;
- a TerminalDef's `pattern` (`PatternRE` / `PatternStr`, `to_regexp()`, `max_width`, `flags`).
tests/test_parser_engine.py compares what the engine builds with lark's own LALR parser.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import lark
from lark.lark import PostLex
from lark.lexer import PatternRE, PatternStr
from lark.parsers.lalr_analysis import Reduce, Shift

GRAMMAR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "grammar.lark")
START = "item"
# Terminals the grammar never mentions but the scanner must produce; without them in a
# postlexer's `always_accept` lark would drop them from its terminal list.
ALWAYS_ACCEPT = ("NL", "SEMICOLON")


@dataclass(frozen=True, slots=True)
class Terminal:
    """A terminal of grammar.lark as the scanner needs it."""

    name: str
    priority: int
    is_string: bool  # a literal string ("flow"), else a regex
    value: str  # the string, or the regex's source text
    regexp: str  # a regex matching it
    max_width: int
    flags: frozenset[str]


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    is_term: bool
    filter_out: bool  # an anonymous token the tree drops ("(", "flow")


@dataclass(frozen=True, slots=True)
class Rule:
    """One alternative of a grammar rule: `origin: expansion`, with lark's tree-shaping options."""

    origin: str
    alias: str | None
    expansion: tuple[Symbol, ...]
    expand1: bool  # a `?rule`: one child is handed up instead of a node
    keep_all_tokens: bool  # a `!rule`


@dataclass(frozen=True, slots=True)
class Table:
    """The LALR table: `states[s][symbol]` is the next state for a shift (or a goto), `~r` for a
    reduce by `rules[r]`."""

    states: list[dict[str, int]]
    rules: list[Rule]
    start: int
    end: int


class _SeparatorDeclaringPostLex(PostLex):
    """Makes lark keep `NL` and `SEMICOLON` (see ALWAYS_ACCEPT); it passes tokens through, as
    the engine never lets lark scan."""

    always_accept = ALWAYS_ACCEPT

    def process(self, stream: Iterable) -> Iterator:
        return iter(stream)


def grammar_text() -> str:
    with open(GRAMMAR, encoding="utf-8") as f:
        return f.read()


@lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    return lark.Lark(
        grammar_text(),
        parser="lalr",
        lexer="basic",
        start=START,
        propagate_positions=True,
        maybe_placeholders=False,
        postlex=_SeparatorDeclaringPostLex(),
        cache=True,
    )


@lru_cache(maxsize=1)
def terminals() -> tuple[tuple[Terminal, ...], tuple[str, ...]]:
    """Every terminal, and the names of the ignored ones (`%ignore`)."""
    lk = _lark()
    out = []
    for t in lk.lexer_conf.terminals:
        p = t.pattern
        assert isinstance(p, (PatternRE, PatternStr)), p
        out.append(
            Terminal(
                t.name,
                t.priority,
                isinstance(p, PatternStr),
                p.value,
                p.to_regexp(),
                p.max_width,
                frozenset(p.flags),
            )
        )
    return tuple(out), tuple(lk.lexer_conf.ignore)


def _rule(r) -> Rule:
    syms = tuple(Symbol(s.name, s.is_term, bool(s.is_term and s.filter_out)) for s in r.expansion)
    return Rule(r.origin.name, r.alias, syms, bool(r.options.expand1), bool(r.options.keep_all_tokens))


@lru_cache(maxsize=1)
def table() -> Table:
    parse_table = _lark().parse_interactive(start=START).parser_state.parse_conf.parse_table
    rules: list[Rule] = []
    index: dict = {}
    states: list[dict[str, int]] = [{} for _ in range(max(parse_table.states) + 1)]
    for s, actions in parse_table.states.items():
        row = states[s]
        for sym, (action, arg) in actions.items():
            if action is Shift:
                row[sym] = arg
            else:
                assert action is Reduce
                if arg not in index:
                    index[arg] = len(rules)
                    rules.append(_rule(arg))
                row[sym] = ~index[arg]
    return Table(states, rules, parse_table.start_states[START], parse_table.end_states[START])
