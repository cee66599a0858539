"""Flow source text to an AST, with every syntax error reported as a diagnostic.

The pipeline: lark's lexer (grammar.lark) -> separator insertion (lexer.py) -> the token stream
is cut into top-level declarations -> each declaration is fed to lark's LALR parser through
its interactive interface -> a Transformer (build.py) turns each parse tree into AST nodes.

Feeding tokens ourselves instead of calling `Lark.parse` is what makes error recovery simple:
on an unexpected token we report it in words, drop parser states until the parser can go on
from the next separator (or the offending closing bracket), and continue. Cutting the stream
into declarations first means an error costs at most the declaration it is in, and the other
declarations still reach the Module. An unclosed bracket at the end of a declaration is
closed for the parser (and offered as a fix when that makes the file parse cleanly).
"""
from __future__ import annotations

import gc
import os
from functools import lru_cache

import lark
from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from lark.parsers.lalr_analysis import Reduce, Shift
from lark.parsers.lalr_parser_state import ParseConf, ParserState

from flow2py.diagnostics import Diagnostic, Edit, Fix
from flow2py.syntax import ast
from flow2py.syntax import codes  # noqa: F401  (registers E001-E099)
from flow2py.syntax.build import Builder, make_callbacks, span_of_token
from flow2py.syntax.lexer import CLOSERS, OPENERS, SeparatorPostLex, insert_separators, starts_declaration
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


@lru_cache(maxsize=1)
def _table():
    """The LALR table and every rule it reduces by."""
    table = _lark().parse_interactive(start="item").parser_state.parse_conf.parse_table
    rules = {arg for actions in table.states.values() for action, arg in actions.values() if action is Reduce}
    return table, rules


@lru_cache(maxsize=1)
def _lexer():
    # The plain lexer (no postlexer): we recover from bad characters ourselves.
    return _lark()._build_lexer()


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
    tokens = insert_separators(_tokenize(source, path, diags))
    builder = Builder(path, diags)
    table, rules = _table()
    conf = ParseConf(table, make_callbacks(rules, builder), "item")
    uses: list[ast.Use] = []
    decls: list[ast.Decl] = []
    for segment in _split_declarations(tokens):
        try:
            node = _parse_declaration(conf, segment, source, path, diags, verify_fixes)
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


# ---------------------------------------------------------------------------------------------
# Lexing


def _tokenize(source: str, path: str, diags: list[Diagnostic]) -> list[Token]:
    """All tokens (NL included); a character no token can start is reported and skipped."""
    lexer = _lexer()
    state = lark.lexer.LexerThread.from_text(lexer, source).state
    line_ctr = state.line_ctr
    out: list[Token] = []
    append = out.append
    next_token = lexer.next_token
    while True:
        try:
            append(next_token(state))
        except EOFError:
            break
        except UnexpectedCharacters as e:
            pos = e.pos_in_stream
            ch = source[pos]
            if ch == '"' or source.startswith('b"', pos):
                eol = source.find("\n", pos)
                eol = len(source) if eol < 0 else eol
                span = ast.Span(path, e.line, e.column, e.line, e.column + (eol - pos), pos, eol)
                kind = "bytes" if ch == "b" else "text"
                diags.append(Diagnostic(
                    "E002",
                    f"this {kind} literal is not closed: add `\"` before the end of the line",
                    span,
                ))
                line_ctr.feed(source[pos:eol])
                # Stand in a closed literal so that the parser can go on with the line.
                closed = source[pos:eol] + '"'
                if closed.endswith('\\"') and not closed.endswith('\\\\"'):
                    closed = closed[:-2] + '"'
                append(Token("BYTES" if kind == "bytes" else "TEXT", closed, pos, e.line, e.column,
                             e.line, e.column + (eol - pos), eol))
            else:
                span = ast.Span(path, e.line, e.column, e.line, e.column + 1, pos, pos + 1)
                shown = ch if ch.isprintable() else repr(ch)[1:-1]
                diags.append(Diagnostic("E001", f"unexpected character `{shown}`: no Flow token starts with it", span))
                line_ctr.feed(ch)
    return out


# ---------------------------------------------------------------------------------------------
# Cutting the stream into declarations

_PREFIX = frozenset({"AT", "PUB", "OPAQUE", "_SEP"})
_HEAD_STARTS = frozenset({"AT", "USE", "TYPE", "OPAQUE", "PUB", "FLOW"})


def _is_decl_start(tok: Token, nxt: Token | None) -> bool:
    t = tok.type
    if t in ("AT", "USE", "TYPE", "OPAQUE"):
        return True
    if t == "PUB":
        return nxt is not None and nxt.type in ("FLOW", "TYPE", "OPAQUE")
    if t == "FLOW":
        return nxt is not None and nxt.type == "LOWER"
    return False


def _split_declarations(tokens: list[Token]) -> list[list[Token]]:
    """Cut at each declaration start that is at bracket depth 0 (or in column 1: see lexer.py),
    once the current piece is more than annotations and modifiers."""
    segments: list[list[Token]] = []
    cur: list[Token] = []
    depth = 0
    in_prefix = True  # the current piece holds only annotations / `pub` / `opaque` so far
    prev: Token | None = None
    n = len(tokens)
    for i, tok in enumerate(tokens):
        typ = tok.type
        nxt = tokens[i + 1] if i + 1 < n else None
        if typ in _HEAD_STARTS and not in_prefix and (depth == 0 or starts_declaration(tok, nxt)) and _is_decl_start(tok, nxt):
            segments.append(cur)
            cur, depth, in_prefix = [], 0, True
        if typ == "_SEP" and depth == 0 and (not cur or in_prefix and prev is not None and prev.type == "_SEP"):
            prev = tok
            continue
        if typ in OPENERS:
            depth += 1
        elif typ in CLOSERS:
            depth = max(depth - 1, 0)
        if in_prefix and depth == 0 and typ not in _PREFIX and typ not in CLOSERS:
            # `@name` keeps the prefix going; anything else is the head of the declaration
            if not (typ == "LOWER" and prev is not None and prev.type == "AT"):
                in_prefix = False
        cur.append(tok)
        prev = tok
    if cur:
        segments.append(cur)
    out = []
    for seg in segments:
        while seg and seg[-1].type == "_SEP":
            seg.pop()
        if seg:
            out.append(seg)
    return out


# ---------------------------------------------------------------------------------------------
# Parsing one declaration, with recovery


def _end_token(seg: list[Token]) -> Token:
    last = seg[-1]
    return Token("$END", "", last.end_pos, last.end_line, last.end_column, last.end_line, last.end_column, last.end_pos)


def _depths(seg: list[Token]) -> list[int]:
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


def _unclosed(seg: list[Token]) -> list[Token]:
    stack: list[Token] = []
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


_RULE_INFO: dict = {}


def _feed_run(ps, seg: list[Token], i: int) -> int:
    """Feed tokens from index i until one is not accepted; its index (len(seg) when all were).

    The same steps as lark's `ParserState.feed_token`, inlined: this loop is the parser's hot
    path (one iteration per shift or reduce)."""
    states = ps.parse_conf.states
    callbacks = ps.parse_conf.callbacks
    state_stack = ps.state_stack
    value_stack = ps.value_stack
    info = _RULE_INFO
    n = len(seg)
    while i < n:
        tok = seg[i]
        typ = tok.type
        while True:
            actions = states[state_stack[-1]]
            if typ not in actions:
                return i
            action, arg = actions[typ]
            if action is Shift:
                state_stack.append(arg)
                value_stack.append(tok)
                break
            ri = info.get(arg)
            if ri is None:
                ri = info[arg] = (len(arg.expansion), arg.origin.name)
            size, origin = ri
            if size:
                s = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                s = []
            value_stack.append(callbacks[arg](s))
            state_stack.append(states[state_stack[-1]][origin][1])
        i += 1
    return i


def _try_feed(ps, token: Token):
    """Feed `token` to a copy of the parser state; the copy when it was accepted, else None."""
    trial = ps.copy(deepcopy_values=False)
    try:
        trial.feed_token(token, token.type == "$END")
    except UnexpectedToken:
        return None
    return trial


def _pop_until_accepts(ps, token: Token):
    """Drop parser states from the top until one accepts `token`; the new state, or None."""
    states = ps.parse_conf.states
    work = ps.copy(deepcopy_values=False)
    while len(work.state_stack) > 1:
        if token.type in states[work.state_stack[-1]]:
            trial = _try_feed(work, token)
            if trial is not None:
                return trial
        work.state_stack.pop()
        work.value_stack.pop()
    return None


def _synthetic(kind: str, value: str, at: Token) -> Token:
    return Token(kind, value, at.end_pos, at.end_line, at.end_column, at.end_line, at.end_column, at.end_pos)


def _parse_declaration(conf, seg, source, path, diags, verify_fixes):
    """The AST node for one declaration (None when it could not be recovered); the callbacks
    in `conf` build nodes as the parser reduces."""
    ps = ParserState(conf, None)
    depths = _depths(seg)
    deepest = max(depths)
    if deepest > MAX_DEPTH:
        at = seg[depths.index(MAX_DEPTH + 1)]
        diags.append(Diagnostic(
            "E009",
            f"this declaration nests brackets more than {MAX_DEPTH} deep; split it into smaller functions",
            span_of_token(path, at),
        ))
        return None
    errors = 0
    i = 0
    n = len(seg)
    resumed_at = -1
    while i < n:
        i = _feed_run(ps, seg, i)
        if i >= n:
            break
        tok = seg[i]
        expected = {t for t in ps.parse_conf.states[ps.state_stack[-1]] if t.isupper() or t == "_SEP"}
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
        d = depths[i]
        target = None
        for j in range(i, n):
            if depths[j] == d and (seg[j].type == "_SEP" or seg[j].type in CLOSERS):
                target = j
                break
        if target is None:
            return None
        new = _pop_until_accepts(ps, seg[target])
        if new is None:
            return None
        ps = new
        i = target + 1
        resumed_at = i
    # End of the declaration: close what is still open, then finish.
    end = _end_token(seg)
    result = _feed_end(ps, end)
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
            trial = _try_feed(ps, closer)
            if trial is None:
                trial = _try_feed(ps, _synthetic("_SEP", "", seg[-1]))
                trial = trial and _try_feed(trial, closer)
            if trial is None:
                trial = _pop_until_accepts(ps, closer)
            if trial is None:
                return None
            ps = trial
        return _feed_end(ps, end)
    if errors == 0:
        try:
            ps.copy(deepcopy_values=False).feed_token(end, True)
        except UnexpectedToken as e:
            diags.append(_unexpected(path, end, seg[-1], e.expected, None))
    return None


_CLOSE_TEXT = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}
_OPEN_TEXT = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}


def _innermost(seg: list[Token], i: int) -> str | None:
    """The type of the innermost bracket open before token i (None at depth 0)."""
    stack = _unclosed(seg[:i])
    return stack[-1].type if stack else None


def _has_opener(seg: list[Token], i: int) -> bool:
    want = CLOSERS[seg[i].type]
    return any(t.type == want for t in _unclosed(seg[:i]))


def _feed_end(ps, end: Token):
    try:
        return ps.copy(deepcopy_values=False).feed_token(end, True)
    except UnexpectedToken:
        return None


def _unexpected(path: str, tok: Token, prev: Token | None, expected: set[str], opener: str | None) -> Diagnostic:
    # Only the closer of the innermost open bracket is worth naming.
    expected = {e for e in expected if e not in CLOSERS or (opener is not None and OPENERS[opener] == e)}
    if opener is not None and opener != "LBRACE":
        expected.discard("$END")
        expected.discard("_SEP")
    what = describe_expected(expected)
    after = f" after {describe_token(prev)}" if prev is not None and prev.type != "_SEP" else ""
    found = describe_token(tok)
    return Diagnostic("E004", f"expected {what}{after}, found {found}", span_of_token(path, tok))
