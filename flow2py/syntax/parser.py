"""Flow source text to an AST, with every syntax error reported as a diagnostic.

The pipeline: the engine's scanner over grammar.lark's terminals, with separator insertion
(engine/scanner.py) -> the token stream is cut into top-level declarations (here) -> each
declaration is fed to the engine's LALR loop over the parse table lark builds from grammar.lark
(engine/lalr.py) -> reduce callbacks (engine/reduce.py) hand each rule to the Builder
(build.py), which turns it into AST nodes as it is reduced.

Feeding tokens ourselves instead of calling `Lark.parse` is what makes error recovery simple:
on an unexpected token we report it in words (messages.py), drop parser states until the
parser can go on from the next separator (or the offending closing bracket), and continue.
Cutting the stream into declarations first means an error costs at most the declaration it is
in, and the other declarations still reach the Module; inside a function's body it costs only
the statement it is in (recover.py puts a hole there and parses the declaration again). An unclosed bracket at the end of a
declaration is closed for the parser (and offered as a fix when that makes the file parse
cleanly).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

from flow2py.diagnostics import Diagnostic, Edit, Fix, Related
from flow2py.syntax import (
    ast,
    codes,  # registers E001-E099 and their classes
)
from flow2py.syntax.broken import (
    NOTHING_BROKEN,
    Broken,
    hole,
    Region,
    declared_names,
    mentions,
    token_span,
)
from flow2py.syntax.build import Builder, span_of_token
from flow2py.syntax.engine.lalr import (
    Conf,
    State,
    acceptable,
    end_token,
    feed,
    feed_end,
    feed_run,
    gc_paused,
    pop_until_accepts,
    synthetic,
    try_feed,
)
from flow2py.syntax.engine.lark_tables import table, terminals
from flow2py.syntax.engine.scanner import (
    CLOSERS,
    OPENERS,
    Scanner,
    Tok,
    starts_declaration,
)
from flow2py.syntax.engine.scanner import comment_spans
from flow2py.syntax.engine.scanner import tokenize as scan
from flow2py.syntax.floor_division import floor_divisions
from flow2py.syntax.habits import Habit
from flow2py.syntax.habits_expr import habit_at
from flow2py.syntax.habits_scanned import scanned
from flow2py.syntax.recover import recover

MAX_ERRORS_PER_DECL = 5
MAX_HABITS = 20  # habits reported in one declaration (each costs a parse of it)
# Errors after which the tree does not hold what was written (a literal with a bad escape or an
# unknown effect name still does; a text literal left open swallowed the rest of its line).
_BREAKING = frozenset({"E001", "E002", "E004", "E005", "E006", "E008", "E009"})
# Later phases walk the tree recursively; the parser keeps trees within a depth they can walk.
MAX_DEPTH = 200


@lru_cache(maxsize=1)
def _scanner() -> Scanner:
    return Scanner(*terminals())


@dataclass(frozen=True)
class Parsed:
    """One file parsed: the Module (every declaration that could be parsed), the syntax
    diagnostics, and what the errors took out of the tree (broken.py), for the checker."""

    module: ast.Module
    diagnostics: list[Diagnostic]
    broken: Broken


def parse_module(source: str, path: str) -> tuple[ast.Module, list[Diagnostic]]:
    """Parse one file. Never raises: syntax errors come back as diagnostics, with a Module
    holding every declaration that could be parsed."""
    p = parse(source, path)
    return p.module, p.diagnostics


def parse(source: str, path: str) -> Parsed:
    """`parse_module`, with the record of what the syntax errors took out (broken.py)."""
    with gc_paused():
        return _parse(source, path, verify_fixes=True)


def tokenize(scanner: Scanner, source: str, path: str, diags: list[Diagnostic]) -> list[Tok]:
    """The scanner's tokens, a character no token starts reported (E001), and a text literal
    left open (E002)."""
    lexical: list[tuple[str, ast.Span]] = []
    tokens = scan(scanner, source, path, lexical)
    for kind, span in lexical:
        if kind == "bad":
            diags.append(Diagnostic.of(codes.BadCharacter(span, source[span.start])))
        else:
            diags.append(Diagnostic.of(codes.UnterminatedText(span)))
    return tokens


def _parse(source: str, path: str, verify_fixes: bool) -> Parsed:
    if not isinstance(source, str):
        source = str(source)
    diags: list[Diagnostic] = []
    source = _without_surrogates(source, path, diags)
    tokens = tokenize(_scanner(), source, path, diags)
    if "//" in source:
        again = lambda text, ds: tokenize(_scanner(), text, path, ds)  # noqa: E731
        tokens = floor_divisions(tokens, diags, source, path, again, comment_spans(_scanner(), source))
    tokens, scanned_regions = scanned(tokens, diags, source, path)
    # where a character was dropped (E001) or a text literal closed for the parser (E002): a
    # declaration holding one parsed as something other than what was written
    dropped = sorted(d.span.start for d in diags if d.code in ("E001", "E002"))
    conf = Conf(table(), Builder(path, diags, source))
    uses: list[ast.Use] = []
    decls: list[ast.Decl] = []
    sink = _BrokenSink(path)
    for toks in scanned_regions:
        sink.part(toks)
    for segment, deepest in _split_declarations(tokens):
        try:
            node = _parse_declaration(
                conf, segment, deepest, source, path, diags, verify_fixes, dropped, sink
            )
        except RecursionError:
            diags.append(Diagnostic.of(codes.TooDeep(span_of_token(path, segment[0]), None)))
            sink.whole(segment)
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
    return Parsed(module, diags, sink.result())


class _BrokenSink:
    """Collects broken.py's record while the declarations are parsed."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.names: set[str] = set()
        self.regions: list[Region] = []
        self.matches: list[int] = []

    def whole(self, seg: list[Tok]) -> None:
        """The declaration `seg` is not in the tree."""
        self.names |= declared_names(seg)
        self.regions.append(Region(token_span(self.path, seg[0], seg[-1]), frozenset(mentions(seg))))

    def part(self, toks: list[Tok]) -> None:
        """`toks` (part of a declaration in the tree) are not faithfully held by it."""
        if toks:
            self.regions.append(Region(token_span(self.path, toks[0], toks[-1]), frozenset(mentions(toks))))

    def pieces(self, pieces) -> None:
        """The holes recovery left in a body (recover.py); a match it left an arm out of."""
        for p in pieces:
            self.part(list(p.region))
            if p.match is not None:
                self.matches.append(p.match.start_pos)

    def result(self) -> Broken:
        if not self.names and not self.regions:
            return NOTHING_BROKEN
        return Broken(frozenset(self.names), tuple(self.regions), frozenset(self.matches))


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
        span = ast.Span(path, line, column, line, column + 1, at, at + 1)
        diags.append(Diagnostic.of(codes.LoneSurrogate(span, ord(m.group()))))
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
        # `pub fn f(`, `pub struct P {`: another language's head (habits.py names it), cut at
        # like Flow's own so that it does not break the declaration above it
        return nxt is not None and (
            nxt.type in ("FLOW", "TYPE", "OPAQUE") or nxt.type == "LOWER" and nxt.value in _FOREIGN_HEADS
        )
    if t == "FLOW":
        return nxt is not None and nxt.type == "LOWER"
    return False


def _foreign_head(tok: Tok, nxt: Tok | None) -> bool:
    """A column-1 head in another language's style (`fn name`, `def name`, `const NAME`,
    `struct Name`, a top-level `let`): never Flow at bracket depth 0 (two names side by side, or
    a statement outside a block), so it begins a declaration of its own, which fails to parse
    alone (habits.py names it), instead of breaking the declaration above it."""
    if tok.column != 1 or nxt is None or nxt.line != tok.line:
        return False
    if tok.type == "LET":
        return True
    if tok.type == "LOWER" and tok.value == "import" and nxt.type == "TEXT":
        return True  # `import "std@v1/task"`
    if tok.type == "LOWER" and tok.value == "async" and nxt.type == "FLOW":
        return True  # `async flow f(`
    return tok.type == "LOWER" and tok.value in _FOREIGN_HEADS and nxt.type in ("LOWER", "UPPER")


# Words that begin a declaration in another language (an `elif` in column 1 continues the `if`
# above it, so only these are cut at).
_FOREIGN_HEADS = frozenset(
    {"fn", "def", "func", "function", "fun", "const", "var", "val", "static", "struct", "enum", "class"}
    | {"interface", "import", "from", "async"}
)


def _split_declarations(tokens: list[Tok]) -> list[tuple[list[Tok], int]]:
    """Cut at each declaration start that is at bracket depth 0 (or in column 1: see engine/scanner.py),
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
        elif (
            depth == 0 and cur and not in_prefix and _foreign_head(tok, tokens[i + 1] if i + 1 < n else None)
        ):
            segments.append([cur, deepest])
            cur, deepest, in_prefix = [], 0, True
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
        elif in_prefix and depth == 0 and typ not in _PREFIX and not (typ == "LOWER" and prev_type == "AT"):
            # `@name` keeps the prefix going, and `async` before `flow` (habits_values.py names
            # it); anything else is the head of the declaration
            in_prefix = tok.value == "async" and i + 1 < n and tokens[i + 1].type == "FLOW"
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


def _parse_declaration(conf, seg, deepest, source, path, diags, verify_fixes, dropped, sink):
    """The AST node for one declaration (None when it is not in the tree: then `sink` records
    what it would have declared). A habit from another language (habits.py) is reported once
    and the declaration parsed again as Flow would write it (or with a hole where Flow has no
    one equivalent), so the mistakes after it are still found. A syntax error in a function's
    body costs the smallest statement around it (recover.py: a hole, and the declaration parsed
    again); where no statement can be the hole, the declaration keeps its signature in the
    tree, with a hole for the whole body."""
    if deepest > MAX_DEPTH:
        at = seg[_depths(seg).index(MAX_DEPTH + 1)]
        diags.append(Diagnostic.of(codes.TooDeep(span_of_token(path, at), MAX_DEPTH)))
        sink.whole(seg)
        return None
    found: list[Diagnostic] = []  # the habits, each reported once
    regions: list[list[Tok]] = []  # what the habits' rewrites do not hold faithfully
    mark = len(diags)
    while True:
        try:
            allowed = found if len(found) < MAX_HABITS else None
            node = _parse_segment(conf, seg, source, path, diags, verify_fixes, allowed)
        except _Rewrite as r:
            del diags[mark:]
            found.append(r.habit.diagnostic)
            if r.habit.tokens is None:  # no Flow form to parse it as: it stays out of the tree
                node = None
                break
            if r.habit.region is not None:
                regions.append(r.habit.region)
            seg = r.habit.tokens
            continue
        break
    broke = node is None or any(_breaks(d) for d in diags[mark:])
    first = min((d.span.start for d in diags[mark:] if _breaks(d)), default=None)
    k = bisect_left(dropped, seg[0].start_pos)
    if k < len(dropped) and dropped[k] <= seg[-1].end_pos:
        broke = True
        first = dropped[k] if first is None else min(first, dropped[k])
    diags.extend(_one_per_line(found))
    for toks in regions:
        sink.part(toks)
    if not broke:
        return node
    body = _body_start(seg)
    if body is not None and first is not None and first >= seg[body].start_pos:
        recovered = _recover_body(seg, body, diags[mark:], dropped, path)
        if recovered is not None:
            sink.pieces(recovered.pieces)
            return recovered.node
        stand_in = [synthetic("EQUAL", "=", seg[body - 1]), hole(seg[body], seg[-1])]
        header = _parse_quiet(seg[:body] + stand_in, path)
        if isinstance(header, ast.FnDecl):
            sink.part(seg[body:])
            return header
    sink.whole(seg)
    return None


def _breaks(d: Diagnostic) -> bool:
    """Whether the tree does not hold what the error's place meant (see _BREAKING)."""
    return d.code in _BREAKING and not getattr(d.data, "kept", False)


def _one_per_line(found: list[Diagnostic]) -> list[Diagnostic]:
    """The habits of one declaration, the same habit written several times on one line (nested
    arrow lambdas, `a and b and c`) as one diagnostic: at the first, a note at each other, one
    fix holding every edit (safe when each was). A line is one mistake to its author."""
    groups: dict[tuple, list[Diagnostic]] = {}
    for d in found:
        kind = getattr(d.data, "kind", None)
        one_fix = len(d.fixes) == 1
        key = (kind, d.span.file, d.span.line) if kind and one_fix else (id(d),)
        groups.setdefault(key, []).append(d)
    out = []
    for group in groups.values():
        group.sort(key=lambda d: d.span.start)
        first, rest = group[0], group[1:]
        if not rest:
            out.append(first)
            continue
        fixes = [d.fixes[0] for d in group]
        edits = tuple(e for f in fixes for e in f.edits)
        words = "; ".join(dict.fromkeys(f.message for f in fixes))
        related = first.related + tuple(Related(f"also `{d.data.habit}` here", d.span) for d in rest)
        fix = Fix(words, edits, all(f.safe for f in fixes))
        out.append(Diagnostic.of(first.data, related, (fix,)))
    return out


def _recover_body(seg, body, found, dropped, path):
    """The declaration with a hole for the smallest piece around each syntax error of its body
    (recover.py), or None (an unclosed bracket or too deep a nesting: the body is one hole)."""
    if any(d.code in ("E005", "E009") for d in found):
        return None
    positions = [d.span.start for d in found if _breaks(d)]
    lo = bisect_left(dropped, seg[0].start_pos)
    hi = bisect_left(dropped, seg[-1].end_pos + 1)
    positions.extend(dropped[lo:hi])
    if not positions:
        return None
    return recover(seg, body, positions, path)


class _Rewrite(Exception):
    """Raised where a habit explains a syntax error: the declaration is parsed again, rewritten."""

    def __init__(self, habit: Habit) -> None:
        self.habit = habit


def _parse_segment(conf, seg, source, path, diags, verify_fixes, habits_allowed):
    """One parse of the declaration `seg`, reporting into `diags` (raises _Rewrite at a habit)."""
    fed = _feed_with_recovery(conf, seg, path, diags, habits_allowed)
    if fed is None:
        return None
    ps, errors = fed
    # End of the declaration: close what is still open, then finish.
    end = end_token(seg)
    result = feed_end(conf, ps, end)
    if result is not None:
        return result
    unclosed = _unclosed(seg)
    if unclosed:
        diags.append(_unclosed_diagnostic(unclosed, seg, source, path, verify_fixes))
        ps = _close_for_the_parser(conf, ps, unclosed, seg[-1])
        return None if ps is None else feed_end(conf, ps, end)
    if errors == 0:
        ok, state = feed(conf, ps.copy(), end, True)
        if not ok:
            expected = {t for t in conf.states[state] if t.isupper()}
            diags.append(_unexpected(path, end, seg[-1], expected, None))
    return None


def _parse_quiet(seg, path):
    """The node `seg` parses to when it parses without an error, else None; reports nothing."""
    quiet = Conf(table(), Builder(path, []))
    ps = State([quiet.start], [])
    if feed_run(quiet, ps, seg, 0) < len(seg):
        return None
    return feed_end(quiet, ps, end_token(seg))


def _body_start(seg: list[Tok]) -> int | None:
    """The index of a function declaration's body (its `=` or `{` after the result type), or
    None when `seg` is not one or its head does not get that far."""
    depth = 0
    seen_flow = seen_arrow = False
    for i, tok in enumerate(seg):
        t = tok.type
        if depth == 0:
            if t == "FLOW":
                seen_flow = True
            elif t == "ARROW" and seen_flow:
                seen_arrow = True
            elif seen_arrow and t in ("EQUAL", "LBRACE"):
                return i if i > 0 else None
            elif t in ("TYPE", "USE"):
                return None
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS and depth:
            depth -= 1
    return None


def _feed_with_recovery(conf, seg, path, diags, habits_allowed=None) -> tuple[State, int] | None:
    """Every token of the declaration fed, each error reported and recovered from: the parser
    state after the last token and the number of errors; None when the declaration is given up
    (too many errors, or recovery could not get past a token)."""
    ps = State([conf.start], [])
    depths = None  # computed on the first error: only recovery needs them
    errors = 0
    i = 0
    n = len(seg)
    resumed_at = -1
    while i < n:
        i = feed_run(conf, ps, seg, i)
        if i >= n:
            break
        tok = seg[i]
        expected = acceptable(conf, ps.stack[-1])
        prev = seg[i - 1] if i > 0 else None
        if habits_allowed is not None:
            habit = habit_at(seg, i, expected, path)
            # a habit whose rewrite did not get past it is not reported twice
            if habit is not None and habit.diagnostic not in habits_allowed:
                raise _Rewrite(habit)
        if i == resumed_at:
            return None  # recovery did not get past this token: give the declaration up
        errors += 1
        if tok.type in CLOSERS and not _has_opener(seg, i):
            diags.append(
                Diagnostic.of(
                    codes.UnexpectedToken(
                        span_of_token(path, tok), codes.Lexeme.of(tok), opener=_OPEN_TEXT[tok.type]
                    )
                )
            )
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
        target = _resume_point(seg, depths, i)
        if target is None:
            return None
        new = pop_until_accepts(conf, ps, seg[target])
        if new is None:
            return None
        ps = new
        i = target + 1
        resumed_at = i
    return ps, errors


def _resume_point(seg: list[Tok], depths: list[int], i: int) -> int | None:
    """The index of the next separator at token i's depth, or of the closer that ends it."""
    d = depths[i]
    for j in range(i, len(seg)):
        if depths[j] == d and (seg[j].type == "_SEP" or seg[j].type in CLOSERS):
            return j
    return None


def _unclosed_diagnostic(
    unclosed: list[Tok], seg: list[Tok], source: str, path: str, verify_fixes: bool
) -> Diagnostic:
    """E005 for the innermost bracket left open, with the closers as a fix when inserting them
    makes the whole file parse cleanly (checked only when `verify_fixes`)."""
    closers = "".join(_CLOSE_TEXT[t.type] for t in reversed(unclosed))
    opener = unclosed[-1]
    fix = ()
    if verify_fixes:
        fixed = source[: seg[-1].end_pos] + "\n" + closers + source[seg[-1].end_pos :]
        if not _parse(fixed, path, verify_fixes=False).diagnostics:
            at = seg[-1]
            edit = Edit(
                ast.Span(
                    path, at.end_line, at.end_column, at.end_line, at.end_column, at.end_pos, at.end_pos
                ),
                "\n" + closers,
            )
            fix = (Fix(f"insert `{closers}` to close what is open", (edit,), True),)
    return Diagnostic.of(
        codes.UnclosedBracket(span_of_token(path, opener), opener.value, _CLOSE_TEXT[opener.type]), fixes=fix
    )


def _close_for_the_parser(conf: Conf, ps: State, unclosed: list[Tok], last: Tok) -> State | None:
    """The parser state once a closer for each bracket in `unclosed` is fed after `last` (with a
    separator before it, or after dropping states, where the closer alone is not accepted)."""
    for opener in reversed(unclosed):
        closer = synthetic(OPENERS[opener.type], _CLOSE_TEXT[opener.type], last)
        trial = try_feed(conf, ps, closer)
        if trial is None:
            trial = try_feed(conf, ps, synthetic("_SEP", "", last))
            trial = trial and try_feed(conf, trial, closer)
        if trial is None:
            trial = pop_until_accepts(conf, ps, closer)
        if trial is None:
            return None
        ps = trial
    return ps


_CLOSE_TEXT = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}
_OPEN_TEXT = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}


def _innermost(seg: list[Tok], i: int) -> str | None:
    """The type of the innermost bracket open before token i (None at depth 0)."""
    stack = _unclosed(seg[:i])
    return stack[-1].type if stack else None


def _has_opener(seg: list[Tok], i: int) -> bool:
    want = CLOSERS[seg[i].type]
    return any(t.type == want for t in _unclosed(seg[:i]))


def _unexpected(path: str, tok: Tok, prev: Tok | None, expected: set[str], opener: str | None) -> Diagnostic:
    # Only the closer of the innermost open bracket is worth naming.
    expected = {e for e in expected if e not in CLOSERS or (opener is not None and OPENERS[opener] == e)}
    if opener is not None and opener != "LBRACE":
        expected.discard("$END")
        expected.discard("_SEP")
    after = codes.Lexeme.of(prev) if prev is not None and prev.type != "_SEP" else None
    found = codes.Lexeme.of(tok)
    return Diagnostic.of(codes.UnexpectedToken(span_of_token(path, tok), found, frozenset(expected), after))
