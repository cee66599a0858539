"""Parse trees to AST nodes: one small method per grammar rule, each giving its node a Span.

Rules that stand for several written forms return a small private wrapper (`_Paren` for a
parenthesised type list, `_Effect`, ...) that the rule above turns into AST nodes.
Literal tokens are decoded by literals.py, which reports malformed ones (bad escapes, bad numbers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flow2py.diagnostics import Diagnostic, Edit, Fix
from flow2py.syntax import ast, codes
from flow2py.syntax.engine.reduce import make_span
from flow2py.syntax.engine.scanner import Tok
from flow2py.syntax.literals import literal, text_value


def span_of_token(path: str, tok: Tok) -> ast.Span:
    return make_span(path, tok.line, tok.column, tok.end_line, tok.end_column, tok.start_pos, tok.end_pos)


@dataclass
class _Paren:
    """`()`, `(T)` or `(A, B)` in a type: a parameter list or a type, decided by the user."""

    items: list
    grouped: bool  # exactly one item and no trailing comma
    span: ast.Span

    def as_type(self):
        if self.grouped:
            return self.items[0]
        return ast.TupleType(self.items, span=self.span)


@dataclass
class _Effect:
    name: str
    span: ast.Span


@dataclass
class _TypeParams:
    names: list[str]
    span: ast.Span


@dataclass
class _Args:
    items: list
    span: ast.Span


@dataclass
class _Entry:
    key: Any
    value: Any
    span: ast.Span


@dataclass
class _Path:
    module: str | None
    name: str
    span: ast.Span


@dataclass
class _PField:
    name: str
    pattern: Any
    span: ast.Span


@dataclass
class _Body:
    expr: Any
    span: ast.Span


@dataclass
class _Base:
    expr: Any
    span: ast.Span


@dataclass
class _Rest:
    pattern: Any  # the pattern after `..`, or None
    span: ast.Span


@dataclass
class _AliasBody:
    type: Any
    span: ast.Span


@dataclass
class _BraceBody:
    entries: list
    span: ast.Span


_TYPES = (ast.TypeName, ast.TupleType, ast.FunctionType, _Paren)


def _ty(x):
    return x.as_type() if isinstance(x, _Paren) else x


class Builder:
    """Rule methods take the span of everything the rule matched and its kept children.
    A child that the grammar makes a token is a `Tok`: its text is `tok.value` (= `str(tok)`)."""

    def __init__(self, path: str, diags: list[Diagnostic], source: str = ""):
        self.path = path
        self.diags = diags
        self.source = source  # the file's text, for the edits of a fix (empty: no fix offered)

    # -- helpers ----------------------------------------------------------------------------

    def _tspan(self, tok: Tok) -> ast.Span:
        return span_of_token(self.path, tok)

    def _error(self, data: codes.SyntaxData) -> None:
        self.diags.append(Diagnostic.of(data))

    # -- declarations -------------------------------------------------------------------------

    def item(self, span, children):
        anns = [c for c in children if isinstance(c, ast.Annotation)]
        decl = children[-1]
        if isinstance(decl, (ast.TypeDecl, ast.FnDecl)):
            decl.annotations = anns
            decl.span = span
        return decl

    def annotation(self, span, ch):
        args = ch[1].items if len(ch) > 1 else []
        return ast.Annotation(str(ch[0]), args, span=span)

    def ann_args(self, span, ch):
        return _Args(list(ch), span)

    def use_decl(self, span, ch):
        return ast.Use(text_value(ch[0], self.path, self._error), span=span)

    def type_params(self, span, ch):
        return _TypeParams([str(t) for t in ch], span)

    def alias_body(self, span, ch):
        return _AliasBody(_ty(ch[0]), span)

    def brace_body(self, span, ch):
        return _BraceBody(list(ch), span)

    def type_decl(self, span, ch):
        pub = opaque = False
        name_tok = None
        params: list[str] = []
        body = None
        for c in ch:
            if isinstance(c, Tok):
                if c.type == "PUB":
                    pub = True
                elif c.type == "OPAQUE":
                    opaque = True
                else:
                    name_tok = c
            elif isinstance(c, _TypeParams):
                params = c.names
            else:
                body = c
        kind = "abstract"
        fields: list[ast.FieldDecl] = []
        ctors: list[ast.CtorDecl] = []
        alias = None
        if isinstance(body, _AliasBody):
            kind, alias = "alias", body.type
        elif isinstance(body, _BraceBody):
            fields = [e for e in body.entries if isinstance(e, ast.FieldDecl)]
            ctors = [e for e in body.entries if isinstance(e, ast.CtorDecl)]
            if fields and ctors:
                self._error(codes.MixedTypeBody(body.span, str(name_tok), fields[0].name, ctors[0].name))
            kind = "enum" if ctors and not fields else "record"
            if kind == "record":
                ctors = []
        return ast.TypeDecl(
            [],
            pub,
            opaque,
            str(name_tok),
            params,
            kind,
            fields,
            ctors,
            alias,
            span=span,
            name_span=self._tspan(name_tok),
        )

    def field_decl(self, span, ch):
        pub = isinstance(ch[0], Tok) and ch[0].type == "PUB"
        if pub:
            ch = ch[1:]
        return ast.FieldDecl(pub, str(ch[0]), _ty(ch[1]), span=span)

    def ctor_bare(self, span, ch):
        return ast.CtorDecl(str(ch[0]), span=span)

    def ctor_pos(self, span, ch):
        return ast.CtorDecl(str(ch[0]), positional=[_ty(c) for c in ch[1:]], span=span)

    def ctor_named(self, span, ch):
        return ast.CtorDecl(str(ch[0]), named=list(ch[1:]), span=span)

    def fn_decl(self, span, ch):
        pub = False
        name_tok = None
        tparams: list[str] = []
        params: list[ast.Param] = []
        result = None
        effect = None
        body = None
        for c in ch:
            if isinstance(c, Tok):
                if c.type == "PUB":
                    pub = True
                else:
                    name_tok = c
            elif isinstance(c, _TypeParams):
                tparams = c.names
            elif isinstance(c, ast.Param):
                params.append(c)
            elif isinstance(c, _TYPES):
                result = _ty(c)
            elif isinstance(c, _Effect):
                effect = c.name
            elif isinstance(c, _Body):
                body = c.expr
        return ast.FnDecl(
            [],
            pub,
            str(name_tok),
            tparams,
            params,
            result,
            effect,
            body,
            span=span,
            name_span=self._tspan(name_tok),
        )

    def param(self, span, ch):
        return ast.Param(ch[0].value, _ty(ch[1]), span=span, name_span=self._tspan(ch[0]))

    def wild_param(self, span, ch):
        """`_: T`: a parameter that is never used."""
        return ast.Param("_", _ty(ch[0]), span=span, name_span=_first_char(span))

    def effect(self, span, ch):
        name = str(ch[0])
        if name not in ("tool", "pure"):
            self._error(codes.UnknownEffect(span, name))
        return _Effect(name, span)

    def fn_body(self, span, ch):
        return _Body(ch[0], span)

    # -- types --------------------------------------------------------------------------------

    def fn_type(self, span, ch):
        params = ch[0]
        effect = ch[2].name if len(ch) > 2 else None
        return ast.FunctionType(list(params.items), _ty(ch[1]), effect, span=span)

    def named_type(self, span, ch):
        module = None
        if len(ch) >= 2 and isinstance(ch[1], Tok):
            module = str(ch[0])
            ch = ch[1:]
        args = ch[1].items if len(ch) > 1 else []
        return ast.TypeName(module, str(ch[0]), args, span=span)

    def type_args(self, span, ch):
        return _Args([_ty(c) for c in ch], span)

    def unit_type(self, span, ch):
        return _Paren([], False, span)

    def group_type(self, span, ch):
        return _Paren([_ty(ch[0])], True, span)

    def tuple_type(self, span, ch):
        return _Paren([_ty(c) for c in ch], False, span)

    # -- statements -----------------------------------------------------------------------------

    def block(self, span, ch):
        return ast.Block(list(ch), span=span)

    def let_stmt(self, span, ch):
        if len(ch) == 3:
            return ast.Let(ch[0], _ty(ch[1]), ch[2], span=span)
        return ast.Let(ch[0], None, ch[1], span=span)

    def guard_stmt(self, span, ch):
        return ast.Guard(ch[0], ch[1], span=span)

    def guard_let(self, span, ch):
        return ast.GuardLet(ch[0], ch[1], ch[2], span=span)

    def expr_stmt(self, span, ch):
        return ast.ExprStmt(ch[0], span=span)

    # -- expressions ----------------------------------------------------------------------------

    def return_expr(self, span, ch):
        return ast.Return(ch[0] if ch else None, span=span)

    def lambda_(self, span, ch):
        params = [c for c in ch if isinstance(c, ast.Param)]
        result = next((_ty(c) for c in ch[:-1] if isinstance(c, _TYPES)), None)
        effect = next((c.name for c in ch if isinstance(c, _Effect)), None)
        return ast.Lambda(params, result, effect, ch[-1], span=span)

    def lparam(self, span, ch):
        return ast.Param(
            ch[0].value, _ty(ch[1]) if len(ch) > 1 else None, span=span, name_span=self._tspan(ch[0])
        )

    def wild_lparam(self, span, ch):
        return ast.Param("_", _ty(ch[0]) if ch else None, span=span, name_span=_first_char(span))

    def conv(self, span, ch):
        return ast.Try(ch[0], ch[1], span=span)

    def name(self, span, ch):
        return ast.Name(ch[0].value, span=span)

    def field(self, span, ch):
        tok = ch[1]
        return ast.FieldAccess(
            ch[0],
            tok.value,
            span=span,
            name_span=make_span(
                self.path, tok.line, tok.column, tok.end_line, tok.end_column, tok.start_pos, tok.end_pos
            ),
        )

    def binary(self, span, ch):
        return ast.Binary(ch[1].value, ch[0], ch[2], span=span)

    def unary(self, span, ch):
        return ast.Unary(ch[0].value, ch[1], span=span)

    def call(self, span, ch):
        return ast.Call(ch[0], list(ch[1:]), span=span)

    def try_(self, span, ch):
        return ast.Try(ch[0], None, span=span)

    def record(self, span, ch):
        ctor = ast.Name(str(ch[0]), span=self._tspan(ch[0]))
        return self._record(span, ctor, ch[1:])

    def qrecord(self, span, ch):
        target, name = ch[0], ch[1]
        ctor = ast.FieldAccess(
            target, str(name), span=target.span.merge(self._tspan(name)), name_span=self._tspan(name)
        )
        return self._record(span, ctor, ch[2:])

    def _record(self, span, ctor, entries):
        fields: list[ast.FieldInit] = []
        base = None
        bases = sum(isinstance(e, _Base) for e in entries)
        for k, e in enumerate(entries):
            if isinstance(e, _Base):
                if bases == 1 and k != 0:
                    self.diags.append(self._base_moved_first(entries, k))
                elif base is not None or k != 0:
                    self._error(codes.MisplacedRest(e.span, "record"))
                if base is None:
                    base = e.expr
            else:
                fields.append(e)
        return ast.RecordLiteral(ctor, fields, base, span=span)

    def _base_moved_first(self, entries, k) -> Diagnostic:
        """`Box { w: 1, ..b }` (Rust writes the base last): the one base, wherever it is, gives
        the fields not written, so the tree holds what was meant (`kept`) and the fix moves it
        first, safe when only a comma and spaces stand before it (a comment would be lost)."""
        e, prev, first = entries[k], entries[k - 1].span, entries[0].span
        data = codes.MisplacedRest(e.span, "record", kept=True)
        text, gap = self.source[e.span.start : e.span.end], self.source[prev.end : e.span.start]
        if not text.startswith("..") or gap.strip(", \t\n\r"):
            return Diagnostic.of(data)
        end = e.span
        cut = ast.Span(
            self.path, prev.end_line, prev.end_column, end.end_line, end.end_column, prev.end, end.end
        )
        at = ast.Span(self.path, first.line, first.column, first.line, first.column, first.start, first.start)
        fix = Fix(f"write `{text}` first", (Edit(at, text + ", "), Edit(cut, "")), True)
        return Diagnostic.of(data, fixes=(fix,))

    def field_init(self, span, ch):
        return ast.FieldInit(ch[0].value, ch[1], span=span)

    def field_short(self, span, ch):
        return ast.FieldInit(ch[0].value, None, span=span)

    def rec_base(self, span, ch):
        return _Base(ch[0], span)

    def unit(self, span, ch):
        return ast.Literal("unit", None, span=span)

    def tuple(self, span, ch):
        return ast.TupleLiteral(list(ch), span=span)

    def list(self, span, ch):
        return ast.ListLiteral(list(ch), span=span)

    def dict(self, span, ch):
        return ast.DictLiteral([(e.key, e.value) for e in ch], span=span)

    def dict_entry(self, span, ch):
        return _Entry(ch[0], ch[1], span)

    def if_expr(self, span, ch):
        return ast.If(ch[0], ch[1], ch[2] if len(ch) > 2 else None, span=span)

    def match_expr(self, span, ch):
        return ast.Match(ch[0], list(ch[1:]), span=span)

    def arm(self, span, ch):
        if len(ch) == 3:
            return ast.MatchArm(ch[0], ch[1], ch[2], span=span)
        return ast.MatchArm(ch[0], None, ch[1], span=span)

    def literal(self, span, ch):
        return literal(ch[0], span, self.path, self._error)

    # -- patterns -------------------------------------------------------------------------------

    def wild_pat(self, span, ch):
        return ast.WildcardPattern(span=span)

    def bind_pat(self, span, ch):
        return ast.BindPattern(ch[0].value, span=span)

    def lit_pat(self, span, ch):
        lit = literal(ch[-1], span, self.path, self._error)
        if len(ch) == 2:  # `-` INT / `-` DECIMAL
            lit.value = -lit.value if lit.kind == "int" else "-" + lit.value
        return ast.LiteralPattern(lit, span=span)

    def unit_pat(self, span, ch):
        return ast.LiteralPattern(ast.Literal("unit", None, span=span), span=span)

    def ctor_path(self, span, ch):
        if len(ch) == 2:
            return _Path(str(ch[0]), str(ch[1]), span)
        return _Path(None, str(ch[0]), span)

    def ctor_pat(self, span, ch):
        module, name = ch[0].module, ch[0].name
        return ast.CtorPattern(module, name, span=span)

    def ctor_args_pat(self, span, ch):
        module, name = ch[0].module, ch[0].name
        return ast.CtorPattern(module, name, args=list(ch[1:]), span=span)

    def ctor_fields_pat(self, span, ch):
        module, name = ch[0].module, ch[0].name
        fields: list[tuple[str, ast.Pattern]] = []
        rest = False
        entries = ch[1:]
        for k, e in enumerate(entries):
            if isinstance(e, _Rest):
                if k != len(entries) - 1 or rest:
                    self._error(codes.MisplacedRest(e.span, "constructor"))
                rest = True
            else:
                fields.append((e.name, e.pattern))
        return ast.CtorPattern(module, name, fields=fields, rest=rest, span=span)

    def pfield(self, span, ch):
        tok = ch[0]
        if tok.type == "DOTDOT":
            return _Rest(None, span)
        if len(ch) > 1:
            return _PField(str(tok), ch[1], span)
        return _PField(str(tok), ast.BindPattern(str(tok), span=self._tspan(tok)), span)

    def tuple_pat(self, span, ch):
        return ast.TuplePattern(list(ch), span=span)

    def pitem(self, span, ch):
        if isinstance(ch[0], Tok) and ch[0].type == "DOTDOT":
            return _Rest(ch[1] if len(ch) > 1 else None, span)
        return ch[0]

    def list_pat(self, span, ch):
        items = []
        rest = None
        has_rest = False
        for k, e in enumerate(ch):
            if isinstance(e, _Rest):
                if k != len(ch) - 1 or has_rest:
                    self._error(codes.MisplacedRest(e.span, "list"))
                has_rest = True
                rest = e.pattern
            else:
                items.append(e)
        return ast.ListPattern(items, rest, has_rest, span=span)

    def or_pat(self, span, ch):
        return ast.OrPattern(list(ch), span=span)


def _first_char(span):
    """The span of the first character of `span` (the `_` of a wildcard parameter)."""
    return ast.Span(span.file, span.line, span.column, span.line, span.column + 1, span.start, span.start + 1)
