"""Flow source text to an AST, with every syntax error reported as a diagnostic.

The pipeline: our scanner over grammar.lark's terminals, with separator insertion (lexer.py)
-> the token stream is cut into top-level declarations -> each declaration is fed to an LALR
loop over the parse table lark builds from grammar.lark -> reduce callbacks (build.py) turn
each rule into AST nodes as it is reduced.

Feeding tokens ourselves instead of calling `Lark.parse` is what makes error recovery simple:
on an unexpected token we report it in words, drop parser states until the parser can go on
from the next separator (or the offending closing bracket), and continue. Cutting the stream
into declarations first means an error costs at most the declaration it is in, and the other
declarations still reach the Module. An unclosed bracket at the end of a declaration is
closed for the parser (and offered as a fix when that makes the file parse cleanly).

The LALR loop is ours too (lark's `ParserState.feed_token` step by step, same order of
reductions and so the same callbacks): lark keys its table by Rule objects, whose hash is
computed in Python on every reduce, and it goes through a method call per token.
"""
from __future__ import annotations

import gc
import os
import re
from functools import lru_cache

import lark
from lark.parsers.lalr_analysis import Reduce, Shift

from flow2py.diagnostics import Diagnostic, Edit, Fix
from flow2py.syntax import ast
from flow2py.syntax import codes  # noqa: F401  (registers E001-E099)
from flow2py.syntax.build import Builder, span_of_token
from flow2py.syntax.reduce import Inline, make_callbacks, pass_up
from flow2py.syntax.lexer import CLOSERS, OPENERS, Scanner, SeparatorPostLex, Tok, starts_declaration, tokenize
from flow2py.syntax.messages import describe_expected, describe_token

_GRAMMAR = os.path.join(os.path.dirname(__file__), "grammar.lark")
MAX_ERRORS_PER_DECL = 5
# Later phases walk the tree recursively; the parser keeps trees within a depth they can walk.
MAX_DEPTH = 200


@lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    with open(_GRAMMAR, encoding="utf-8") as f:
        grammar = f.read()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="basic",
        start="item",
        propagate_positions=True,
        maybe_placeholders=False,
        postlex=SeparatorPostLex(),
        cache=True,
    )


class _Table:
    """lark's LALR table in a form the loop reads fast: `states[s][symbol]` is the next state
    for a shift (or a goto), `~r` for a reduce by `rules[r]`."""

    def __init__(self, table):
        self.rules: list = []
        index: dict = {}
        self.states: list[dict[str, int]] = [{} for _ in range(max(table.states) + 1)]
        for s, actions in table.states.items():
            row = self.states[s]
            for sym, (action, arg) in actions.items():
                if action is Shift:
                    row[sym] = arg
                else:
                    assert action is Reduce
                    if arg not in index:
                        index[arg] = len(self.rules)
                        self.rules.append(arg)
                    row[sym] = ~index[arg]
        self.sizes = [len(r.expansion) for r in self.rules]
        self.origins = [r.origin.name for r in self.rules]
        self.start = table.start_states["item"]
        self.end = table.end_states["item"]


@lru_cache(maxsize=1)
def _table() -> _Table:
    return _Table(_lark().parse_interactive(start="item").parser_state.parse_conf.parse_table)


@lru_cache(maxsize=1)
def _scanner() -> Scanner:
    lk = _lark()
    return Scanner(lk.lexer_conf.terminals, frozenset(lk.lexer_conf.ignore))


class _Conf:
    """The table with this parse's callbacks: `(size, origin, callback)` per rule."""

    __slots__ = ("states", "rules", "start", "end")

    def __init__(self, table: _Table, builder: Builder):
        self.states = table.states
        cbs = make_callbacks(table.rules, builder)
        self.rules = list(zip(table.sizes, table.origins, cbs))
        self.start = table.start
        self.end = table.end


class _State:
    """A parser state: the LALR state stack and the value built for each entry."""

    __slots__ = ("stack", "values")

    def __init__(self, stack: list[int], values: list):
        self.stack = stack
        self.values = values

    def copy(self) -> "_State":
        return _State(list(self.stack), [v.copied() if type(v) is Inline else v for v in self.values])


def parse_module(source: str, path: str) -> tuple[ast.Module, list[Diagnostic]]:
    """Parse one file. Never raises: syntax errors come back as diagnostics, with a Module
    holding every declaration that could be parsed."""
    # Parsing allocates many small objects that all stay alive; the cyclic collector would
    # only walk them again and again (a third of the time on a large file).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse(source, path, verify_fixes=True)
    finally:
        if enabled:
            gc.enable()


def _parse(source: str, path: str, verify_fixes: bool) -> tuple[ast.Module, list[Diagnostic]]:
    if not isinstance(source, str):
        source = str(source)
    diags: list[Diagnostic] = []
    source = _without_surrogates(source, path, diags)
    tokens = tokenize(_scanner(), source, path, diags)
    conf = _Conf(_table(), Builder(path, diags))
    uses: list[ast.Use] = []
    decls: list[ast.Decl] = []
    for segment, deepest in _split_declarations(tokens):
        try:
            node = _parse_declaration(conf, segment, deepest, source, path, diags, verify_fixes)
        except RecursionError:
            diags.append(Diagnostic(
                "E009",
                "this declaration nests too deeply to be parsed; split it into smaller functions",
                span_of_token(path, segment[0]),
            ))
            continue
        if isinstance(node, ast.Use):
            uses.append(node)
        elif node is not None:
            decls.append(node)
    end = len(source)
    lines = source.count("\n")
    last_col = end - (source.rfind("\n") + 1) + 1
    span = ast.Span(path, 1, 1, lines + 1, last_col, 0, end)
    module = ast.Module(path, uses, decls, source=source, span=span)
    diags.sort(key=lambda d: (d.span.start, d.span.line, d.span.column, d.code))
    return module, diags


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(source: str, path: str, diags: list) -> str:
    """The source with every lone surrogate reported (E011) and replaced by U+FFFD, one
    character for one so every span stays where it was. Flow text is Unicode scalar values: a
    surrogate has no UTF-8 form, so a literal holding one could be neither hashed into the
    program's identity, stored, printed nor sent to a Tool. Only a source handed over as a
    Python string (or a file whose bytes encode a surrogate, read as the loader reads) has one."""
    if _SURROGATE.search(source) is None:
        return source
    for m in _SURROGATE.finditer(source):
        at = m.start()
        line = source.count("\n", 0, at) + 1
        column = at - (source.rfind("\n", 0, at) + 1) + 1
        diags.append(Diagnostic(
            "E011",
            f"the source holds U+{ord(m.group()):04X}, a lone surrogate: not a Unicode scalar value, "
            f"so it cannot be Flow text (it has no UTF-8 form)",
            ast.Span(path, line, column, line, column + 1, at, at + 1),
        ))
    return _SURROGATE.sub("\ufffd", source)


# ---------------------------------------------------------------------------------------------
# Cutting the stream into declarations

_PREFIX = frozenset({"AT", "PUB", "OPAQUE", "_SEP"})
_HEAD_STARTS = frozenset({"AT", "USE", "TYPE", "OPAQUE", "PUB", "FLOW"})


def _is_decl_start(tok: Tok, nxt: Tok | None) -> bool:
    t = tok.type
    if t in ("AT", "USE", "TYPE", "OPAQUE"):
        return True
    if t == "PUB":
        return nxt is not None and nxt.type in ("FLOW", "TYPE", "OPAQUE")
    if t == "FLOW":
        return nxt is not None and nxt.type == "LOWER"
    return False


def _split_declarations(tokens: list[Tok]) -> list[tuple[list[Tok], int]]:
    """Cut at each declaration start that is at bracket depth 0 (or in column 1: see lexer.py),
    once the current piece is more than annotations and modifiers. Each piece comes with the
    deepest bracket depth before any of its tokens (a `_SEP` never changes the depth, so the
    maximum over the other tokens is the maximum over the piece once its trailing `_SEP`s go)."""
    segments: list[list] = []
    cur: list[Tok] = []
    depth = 0
    deepest = 0
    in_prefix = True  # the current piece holds only annotations / `pub` / `opaque` so far
    prev_type = None
    n = len(tokens)
    for i, tok in enumerate(tokens):
        typ = tok.type
        if typ in _HEAD_STARTS and not in_prefix:
            nxt = tokens[i + 1] if i + 1 < n else None
            if (depth == 0 or starts_declaration(tok, nxt)) and _is_decl_start(tok, nxt):
                segments.append([cur, deepest])
                cur, depth, deepest, in_prefix = [], 0, 0, True
        if typ == "_SEP":
            if depth == 0 and (not cur or in_prefix and prev_type == "_SEP"):
                prev_type = typ
                continue
        elif depth > deepest:
            deepest = depth
        if typ in OPENERS:
            depth += 1
        elif typ in CLOSERS:
            if depth:
                depth -= 1
        elif in_prefix and depth == 0 and typ not in _PREFIX:
            # `@name` keeps the prefix going; anything else is the head of the declaration
            if not (typ == "LOWER" and prev_type == "AT"):
                in_prefix = False
        cur.append(tok)
        prev_type = typ
    if cur:
        segments.append([cur, deepest])
    out = []
    for seg, d in segments:
        while seg and seg[-1].type == "_SEP":
            seg.pop()
        if seg:
            out.append((seg, d))
    return out


# ---------------------------------------------------------------------------------------------
# Parsing one declaration, with recovery


def _end_token(seg: list[Tok]) -> Tok:
    last = seg[-1]
    return Tok("$END", "", last.end_pos, last.end_line, last.end_column, last.end_line, last.end_column, last.end_pos)


def _depths(seg: list[Tok]) -> list[int]:
    """Bracket depth before each token of the declaration."""
    out = []
    d = 0
    for tok in seg:
        out.append(d)
        if tok.type in OPENERS:
            d += 1
        elif tok.type in CLOSERS:
            d = max(d - 1, 0)
    return out


def _unclosed(seg: list[Tok]) -> list[Tok]:
    stack: list[Tok] = []
    for tok in seg:
        if tok.type in OPENERS:
            stack.append(tok)
        elif tok.type in CLOSERS:
            want = CLOSERS[tok.type]
            for k in range(len(stack) - 1, -1, -1):
                if stack[k].type == want:
                    del stack[k:]
                    break
    return stack


def _feed_run(conf: _Conf, ps: _State, seg: list[Tok], i: int) -> int:
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


def _feed(conf: _Conf, ps: _State, token: Tok, is_end: bool):
    """One token, as lark's `ParserState.feed_token`: (True, the parse result when `is_end`)
    once accepted, (False, the state that rejected it) when not. Every declaration ends with
    `$END` going through here, which reduces everything still open: hence the same unit-rule
    shortcut as in `_feed_run`."""
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


def _try_feed(conf: _Conf, ps: _State, token: Tok) -> _State | None:
    """Feed `token` to a copy of the parser state; the copy when it was accepted, else None."""
    trial = ps.copy()
    ok, _ = _feed(conf, trial, token, token.type == "$END")
    return trial if ok else None


def _pop_until_accepts(conf: _Conf, ps: _State, token: Tok) -> _State | None:
    """Drop parser states from the top until one accepts `token`; the new state, or None."""
    states = conf.states
    work = ps.copy()
    while len(work.stack) > 1:
        if token.type in states[work.stack[-1]]:
            trial = _try_feed(conf, work, token)
            if trial is not None:
                return trial
        work.stack.pop()
        work.values.pop()
    return None


def _synthetic(kind: str, value: str, at: Tok) -> Tok:
    return Tok(kind, value, at.end_pos, at.end_line, at.end_column, at.end_line, at.end_column, at.end_pos)


def _expected(conf: _Conf, state: int) -> set[str]:
    return {t for t in conf.states[state] if t.isupper() or t == "_SEP"}


def _parse_declaration(conf, seg, deepest, source, path, diags, verify_fixes):
    """The AST node for one declaration (None when it could not be recovered); the callbacks
    in `conf` build nodes as the parser reduces."""
    ps = _State([conf.start], [])
    if deepest > MAX_DEPTH:
        at = seg[_depths(seg).index(MAX_DEPTH + 1)]
        diags.append(Diagnostic(
            "E009",
            f"this declaration nests brackets more than {MAX_DEPTH} deep; split it into smaller functions",
            span_of_token(path, at),
        ))
        return None
    depths = None  # computed on the first error: only recovery needs them
    errors = 0
    i = 0
    n = len(seg)
    resumed_at = -1
    while i < n:
        i = _feed_run(conf, ps, seg, i)
        if i >= n:
            break
        tok = seg[i]
        expected = _expected(conf, ps.stack[-1])
        prev = seg[i - 1] if i > 0 else None
        if i == resumed_at:
            return None  # recovery did not get past this token: give the declaration up
        errors += 1
        if tok.type in CLOSERS and not _has_opener(seg, i):
            diags.append(Diagnostic("E004", f"this `{tok.value}` has no matching opening `{_OPEN_TEXT[tok.type]}`",
                                    span_of_token(path, tok)))
            if errors >= MAX_ERRORS_PER_DECL:
                return None
            i += 1  # drop the stray closer and go on
            continue
        diags.append(_unexpected(path, tok, prev, expected, _innermost(seg, i)))
        if errors >= MAX_ERRORS_PER_DECL:
            return None
        # Recover: skip to the next separator at this depth, or to the closer that ends it.
        if depths is None:
            depths = _depths(seg)
        d = depths[i]
        target = None
        for j in range(i, n):
            if depths[j] == d and (seg[j].type == "_SEP" or seg[j].type in CLOSERS):
                target = j
                break
        if target is None:
            return None
        new = _pop_until_accepts(conf, ps, seg[target])
        if new is None:
            return None
        ps = new
        i = target + 1
        resumed_at = i
    # End of the declaration: close what is still open, then finish.
    end = _end_token(seg)
    result = _feed_end(conf, ps, end)
    if result is not None:
        return result
    unclosed = _unclosed(seg)
    if unclosed:
        closers = "".join(_CLOSE_TEXT[t.type] for t in reversed(unclosed))
        opener = unclosed[-1]
        fix = ()
        if verify_fixes:
            fixed = source[: seg[-1].end_pos] + "\n" + closers + source[seg[-1].end_pos:]
            _, again = _parse(fixed, path, verify_fixes=False)
            if not again:
                at = seg[-1]
                edit = Edit(ast.Span(path, at.end_line, at.end_column, at.end_line, at.end_column, at.end_pos, at.end_pos), "\n" + closers)
                fix = (Fix(f"insert `{closers}` to close what is open", (edit,), True),)
        diags.append(Diagnostic(
            "E005",
            f"this `{opener.value}` is never closed (expected `{_CLOSE_TEXT[opener.type]}` before the end of the declaration)",
            span_of_token(path, opener),
            fixes=fix,
        ))
        for opener in reversed(unclosed):
            closer = _synthetic(OPENERS[opener.type], _CLOSE_TEXT[opener.type], seg[-1])
            trial = _try_feed(conf, ps, closer)
            if trial is None:
                trial = _try_feed(conf, ps, _synthetic("_SEP", "", seg[-1]))
                trial = trial and _try_feed(conf, trial, closer)
            if trial is None:
                trial = _pop_until_accepts(conf, ps, closer)
            if trial is None:
                return None
            ps = trial
        return _feed_end(conf, ps, end)
    if errors == 0:
        ok, state = _feed(conf, ps.copy(), end, True)
        if not ok:
            expected = {t for t in conf.states[state] if t.isupper()}
            diags.append(_unexpected(path, end, seg[-1], expected, None))
    return None


_CLOSE_TEXT = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}
_OPEN_TEXT = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}


def _innermost(seg: list[Tok], i: int) -> str | None:
    """The type of the innermost bracket open before token i (None at depth 0)."""
    stack = _unclosed(seg[:i])
    return stack[-1].type if stack else None


def _has_opener(seg: list[Tok], i: int) -> bool:
    want = CLOSERS[seg[i].type]
    return any(t.type == want for t in _unclosed(seg[:i]))


def _feed_end(conf: _Conf, ps: _State, end: Tok):
    ok, value = _feed(conf, ps.copy(), end, True)
    return value if ok else None


def _unexpected(path: str, tok: Tok, prev: Tok | None, expected: set[str], opener: str | None) -> Diagnostic:
    # Only the closer of the innermost open bracket is worth naming.
    expected = {e for e in expected if e not in CLOSERS or (opener is not None and OPENERS[opener] == e)}
    if opener is not None and opener != "LBRACE":
        expected.discard("$END")
        expected.discard("_SEP")
    what = describe_expected(expected)
    after = f" after {describe_token(prev)}" if prev is not None and prev.type != "_SEP" else ""
    found = describe_token(tok)
    return Diagnostic("E004", f"expected {what}{after}, found {found}", span_of_token(path, tok))
