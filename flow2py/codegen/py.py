"""Small constructors for libcst nodes, so the lowering reads as Python rather than as CST.

Every statement constructor takes `mark`: the `# flow: file:line` comment that ties the Python
statement to its Flow source (the loader reads these markers back, see runtime/data/generated.py).
For a compound statement the marker sits on its header line.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

Expr = cst.BaseExpression
Stmt = cst.BaseStatement


# ---- expressions ------------------------------------------------------------------------------


def name(n: str) -> cst.Name:
    return cst.Name(n)


def dotted(path: str) -> Expr:
    """`rt.lang.int_div` -> nested Attribute nodes."""
    parts = path.split(".")
    node: Expr = cst.Name(parts[0])
    for p in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(p))
    return node


def attr(value: Expr, a: str) -> cst.Attribute:
    return cst.Attribute(value=value, attr=cst.Name(a))


def call(func: Expr, args: Sequence[Expr] = (), **kwargs: Expr) -> cst.Call:
    cargs = [cst.Arg(value=a) for a in args]
    cargs += [cst.Arg(value=v, keyword=cst.Name(k), equal=_eq()) for k, v in kwargs.items()]
    return cst.Call(func=func, args=cargs)


def _eq() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )


def tuple_(items: Sequence[Expr]) -> cst.Tuple:
    """A parenthesised tuple; one element gets its trailing comma."""
    elements = [cst.Element(value=v) for v in items]
    if len(elements) == 1:
        elements = [cst.Element(value=items[0], comma=cst.Comma())]
    return cst.Tuple(elements=elements)


def dict_(pairs: Sequence[tuple[Expr, Expr]]) -> cst.Dict:
    return cst.Dict(elements=[cst.DictElement(key=k, value=v) for k, v in pairs])


def integer(v: int) -> Expr:
    """An int literal: decimal, or hexadecimal for one of more than 600 digits. Python refuses a
    decimal literal (and `str()`) beyond its int/str conversion limit, 4,300 digits by default and
    640 at the least a host may set; a hexadecimal literal of any length compiles and loads, in
    linear time, under every setting (docs/spec/codegen.md, "Expressions": literals)."""
    if v < 0:
        return cst.UnaryOperation(operator=cst.Minus(), expression=integer(-v))
    return cst.Integer(hex(v) if v.bit_length() > 1993 else str(v))  # 2**1993 < 10**600


def string(s: str) -> cst.SimpleString:
    return cst.SimpleString(_quote(s))


def _quote(s: str) -> str:
    r = repr(s)
    if r.startswith("'") and '"' not in s:
        r = '"' + r[1:-1].replace("\\'", "'") + '"'
    return r


def bytes_(b: bytes) -> cst.SimpleString:
    return cst.SimpleString(repr(b))


def const(v: object) -> Expr:
    if v is None:
        return cst.Name("None")
    if v is True:
        return cst.Name("True")
    if v is False:
        return cst.Name("False")
    if isinstance(v, int):
        return integer(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, bytes):
        return bytes_(v)
    raise TypeError(f"no Python constant for {v!r}")


def yield_(value: Expr) -> cst.Yield:
    return cst.Yield(value=value)


def paren(e: Expr) -> Expr:
    return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


_BINOPS = {
    "+": cst.Add,
    "-": cst.Subtract,
    "*": cst.Multiply,
    "//": cst.FloorDivide,
    "%": cst.Modulo,
}
_CMPOPS = {
    "==": cst.Equal,
    "!=": cst.NotEqual,
    "<": cst.LessThan,
    "<=": cst.LessThanEqual,
    ">": cst.GreaterThan,
    ">=": cst.GreaterThanEqual,
}


def binop(op: str, left: Expr, right: Expr) -> Expr:
    """A Python operator; operands are parenthesised as needed so precedence is explicit."""
    if op in _CMPOPS:
        return cst.Comparison(
            left=_wrap(left),
            comparisons=[cst.ComparisonTarget(operator=_CMPOPS[op](), comparator=_wrap(right))],
        )
    if op in ("and", "or"):
        node = cst.And() if op == "and" else cst.Or()
        return cst.BooleanOperation(left=_wrap(left), operator=node, right=_wrap(right))
    return cst.BinaryOperation(
        left=_wrap(left, _PREC[op], False), operator=_BINOPS[op](), right=_wrap(right, _PREC[op], True)
    )


_PREC = {"+": 2, "-": 2, "*": 3, "//": 3, "%": 3}


def _prec(e: Expr) -> int:
    if isinstance(e, cst.BinaryOperation) and not e.lpar:
        return 3 if isinstance(e.operator, (cst.Multiply, cst.FloorDivide, cst.Modulo)) else 2
    if isinstance(
        e, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Yield, cst.IfExp, cst.Lambda)
    ):
        return 0
    return 9


def unop(op: str, operand: Expr) -> Expr:
    if op == "not":
        return cst.UnaryOperation(operator=cst.Not(), expression=_wrap(operand))
    return cst.UnaryOperation(operator=cst.Minus(), expression=_wrap(operand))


def _wrap(e: Expr, prec: int = -1, right: bool = False) -> Expr:
    if prec >= 0 and not isinstance(e, cst.UnaryOperation):
        p = _prec(e)
        return paren(e) if (p < prec or (right and p == prec)) else e
    if isinstance(
        e,
        (
            cst.BinaryOperation,
            cst.Comparison,
            cst.BooleanOperation,
            cst.UnaryOperation,
            cst.Yield,
            cst.IfExp,
            cst.Lambda,
        ),
    ):
        return paren(e)
    return e


def not_(e: Expr) -> Expr:
    return cst.UnaryOperation(operator=cst.Not(), expression=_wrap(e))


def isinstance_(value: Expr, cls: Expr) -> Expr:
    return call(name("isinstance"), [value, cls])


# ---- statements -------------------------------------------------------------------------------


def _trailing(mark: str | None) -> cst.TrailingWhitespace:
    if mark is None:
        return cst.TrailingWhitespace()
    return cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(mark))


def simple(small: cst.BaseSmallStatement, mark: str | None) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[small], trailing_whitespace=_trailing(mark))


def assign(target: Expr, value: Expr, mark: str | None) -> cst.SimpleStatementLine:
    return simple(cst.Assign(targets=[cst.AssignTarget(target=target)], value=value), mark)


def expr_stmt(value: Expr, mark: str | None) -> cst.SimpleStatementLine:
    return simple(cst.Expr(value=value), mark)


def return_(value: Expr | None, mark: str | None) -> cst.SimpleStatementLine:
    if isinstance(value, cst.Yield):
        value = paren(value)
    return simple(cst.Return(value=value), mark)


def continue_(mark: str | None) -> cst.SimpleStatementLine:
    return simple(cst.Continue(), mark)


def pass_(mark: str | None = None) -> cst.SimpleStatementLine:
    return simple(cst.Pass(), mark)


def block(body: Sequence[Stmt], mark: str | None = None) -> cst.IndentedBlock:
    return cst.IndentedBlock(body=list(body) or [pass_()], header=_trailing(mark))


def if_(test: Expr, body: Sequence[Stmt], orelse: Sequence[Stmt] | None, mark: str | None) -> cst.If:
    else_node = None
    if orelse:
        if len(orelse) == 1 and isinstance(orelse[0], cst.If):
            else_node = orelse[0]  # `elif`
        else:
            else_node = cst.Else(body=block(orelse))
    return cst.If(test=test, body=block(body, mark), orelse=else_node)


def while_true(body: Sequence[Stmt], mark: str | None) -> cst.While:
    return cst.While(test=cst.Name("True"), body=block(body, mark))


def match(subject: Expr, cases: Sequence[cst.MatchCase], mark: str | None) -> cst.Match:
    return cst.Match(subject=subject, cases=list(cases), whitespace_after_colon=_trailing(mark))


def case(
    pattern: cst.MatchPattern, guard: Expr | None, body: Sequence[Stmt], mark: str | None
) -> cst.MatchCase:
    return cst.MatchCase(
        pattern=pattern,
        guard=guard,
        body=block(body, mark),
        whitespace_before_if=cst.SimpleWhitespace(" "),
        whitespace_after_if=cst.SimpleWhitespace(" "),
    )


def param(n: str, default: Expr | None = None) -> cst.Param:
    if default is None:
        return cst.Param(name=cst.Name(n))
    return cst.Param(name=cst.Name(n), default=default, equal=_eq())


def def_(
    fname: str,
    params: Sequence[cst.Param],
    body: Sequence[Stmt],
    mark: str | None,
    decorators: Sequence[Expr] = (),
    kwonly: Sequence[cst.Param] = (),
    leading: Sequence[cst.EmptyLine] = (),
) -> cst.FunctionDef:
    ps = cst.Parameters(
        params=list(params),
        star_arg=cst.ParamStar() if kwonly else cst.MaybeSentinel.DEFAULT,
        kwonly_params=list(kwonly),
    )
    return cst.FunctionDef(
        name=cst.Name(fname),
        params=ps,
        body=block(body, mark),
        decorators=[cst.Decorator(decorator=d) for d in decorators],
        leading_lines=list(leading),
    )


def comment_line(text: str) -> cst.EmptyLine:
    return cst.EmptyLine(comment=cst.Comment("# " + text))


# ---- patterns ---------------------------------------------------------------------------------


def p_capture(n: str) -> cst.MatchAs:
    return cst.MatchAs(name=cst.Name(n))


def p_wild() -> cst.MatchAs:
    return cst.MatchAs()


def p_as(pattern: cst.MatchPattern, n: str) -> cst.MatchAs:
    return cst.MatchAs(pattern=pattern, name=cst.Name(n))


def p_value(e: Expr) -> cst.MatchPattern:
    if isinstance(e, cst.Name) and e.value in ("None", "True", "False"):
        return cst.MatchSingleton(value=e)
    return cst.MatchValue(value=e)


def p_class(
    cls: Expr, args: Sequence[cst.MatchPattern], kwds: Sequence[tuple[str, cst.MatchPattern]] = ()
) -> cst.MatchClass:
    return cst.MatchClass(
        cls=cls,
        patterns=[cst.MatchSequenceElement(value=a) for a in args],
        kwds=[
            cst.MatchKeywordElement(
                key=cst.Name(k),
                pattern=p,
                whitespace_before_equal=cst.SimpleWhitespace(""),
                whitespace_after_equal=cst.SimpleWhitespace(""),
            )
            for k, p in kwds
        ],
    )


def p_tuple(items: Sequence[cst.MatchPattern]) -> cst.MatchTuple:
    elements = [cst.MatchSequenceElement(value=p) for p in items]
    if len(elements) == 1:
        elements = [cst.MatchSequenceElement(value=items[0], comma=cst.Comma())]
    return cst.MatchTuple(patterns=elements)


def p_list(items: Sequence[cst.MatchPattern], star: str | bool | None) -> cst.MatchList:
    """`[a, b]`; `star` adds `*_` (True) or `*name` (a string) at the end."""
    elements: list = [cst.MatchSequenceElement(value=p) for p in items]
    if star:
        elements.append(cst.MatchStar(name=cst.Name(star) if isinstance(star, str) else None))
    return cst.MatchList(
        patterns=elements, lbracket=cst.LeftSquareBracket(), rbracket=cst.RightSquareBracket()
    )


def p_or(alts: Sequence[cst.MatchPattern]) -> cst.MatchOr:
    return cst.MatchOr(patterns=[cst.MatchOrElement(pattern=p) for p in alts])


# ---- modules ----------------------------------------------------------------------------------


def module(body: Sequence[Stmt], header: Sequence[str] = ()) -> cst.Module:
    return cst.Module(body=list(body), header=[cst.EmptyLine(comment=cst.Comment(h)) for h in header])


def import_rt() -> cst.SimpleStatementLine:
    return simple(
        cst.Import(names=[cst.ImportAlias(name=cst.Name("flowrt"), asname=cst.AsName(name=cst.Name("rt")))]),
        None,
    )


def from_import(level: int, package: str | None, what: str, asname: str | None) -> cst.SimpleStatementLine:
    """`from .std_v1 import task` / `from .. import planner as planner_`."""
    mod = dotted(package) if package else None
    alias = cst.ImportAlias(
        name=cst.Name(what), asname=cst.AsName(name=cst.Name(asname)) if asname and asname != what else None
    )
    return simple(
        cst.ImportFrom(module=mod, names=[alias], relative=[cst.Dot()] * level),
        None,
    )
