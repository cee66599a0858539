"""The flat forms of the formatter (layout.py): each construct on one line, or None where it
cannot be (a comment in it, a block of several statements, a match with arms); types and
patterns, which are always flat; and where parentheses go.

`Flat.flat(e)` is memoised per node: the layout asks for the flat form of a node at every
level above it, and the answer never depends on where the node is printed.
"""

from __future__ import annotations

import re

from flow2py.format.comments import Attached, Source
from flow2py.syntax import ast

_CMP = frozenset({"==", "!=", "<", "<=", ">", ">="})
LEVEL = {"||": 2, "&&": 3, "++": 5, "+": 6, "-": 6, "*": 7, "/": 7, "%": 7} | {op: 4 for op in _CMP}
_ENDS_UPPER = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Za-z0-9_]*$")


def prec(e) -> int:
    """How tightly `e` binds: 0 expr (return, lambda), 1 `x ? f`, 2..7 the binary levels,
    8 unary, 9 postfix, 10 atoms."""
    if isinstance(e, (ast.Return, ast.Lambda)):
        return 0
    if isinstance(e, ast.Try):
        return 1 if e.convert is not None else 9
    if isinstance(e, ast.Binary):
        return LEVEL[e.op]
    if isinstance(e, ast.Unary):
        return 8
    if isinstance(e, (ast.Call, ast.FieldAccess, ast.RecordLiteral)):
        return 9
    return 10


# ---------------------------------------------------------------------------------------------
# Types and patterns: always flat.


def type_text(t, atom: bool = False) -> str:
    if isinstance(t, ast.TypeName):
        head = f"{t.module}.{t.name}" if t.module else t.name
        return head + (f"<{', '.join(type_text(a) for a in t.args)}>" if t.args else "")
    if isinstance(t, ast.TupleType):
        if len(t.items) == 1:
            return f"({type_text(t.items[0])},)"
        return f"({', '.join(type_text(x) for x in t.items)})"
    assert isinstance(t, ast.FunctionType), t
    result = type_text(t.result)
    if isinstance(t.result, ast.FunctionType) and t.effect is not None:
        result = f"({result})"  # else the mark would belong to the inner function type
    text = f"({', '.join(type_text(p) for p in t.params)}) -> {result}"
    if t.effect is not None:
        text += f" !{t.effect}"
    return f"({text})" if atom else text


class Flat:
    def __init__(self, src: Source, att: Attached):
        self.src = src
        self.att = att
        self._flat: dict[int, str | None] = {}

    # -- literals and patterns ----------------------------------------------------------------

    def literal(self, lit: ast.Literal) -> str:
        if lit.kind == "unit":
            return "()"
        return self.src.text[lit.span.start : lit.span.end]

    def pattern(self, p, atom: bool = False) -> str:
        if isinstance(p, ast.WildcardPattern):
            return "_"
        if isinstance(p, ast.BindPattern):
            return p.name
        if isinstance(p, ast.LiteralPattern):
            if p.literal.kind == "unit":
                return "()"
            text = self.src.text[p.span.start : p.span.end]
            if text.startswith("-"):  # `- 5` (perhaps with a comment between) is `-5`
                text = "-" + text[1:].strip().rsplit("\n", 1)[-1].strip()
            return text
        if isinstance(p, ast.CtorPattern):
            head = f"{p.module}.{p.name}" if p.module else p.name
            if p.args is not None:
                return f"{head}({', '.join(self.pattern(a) for a in p.args)})"
            if p.fields is not None:
                parts = [
                    name
                    if isinstance(q, ast.BindPattern) and q.name == name
                    else f"{name}: {self.pattern(q)}"
                    for name, q in p.fields
                ]
                if p.rest:
                    parts.append("..")
                return f"{head} {{ {', '.join(parts)} }}" if parts else f"{head} {{}}"
            return head
        if isinstance(p, ast.TuplePattern):
            if len(p.items) == 1:
                return f"({self.pattern(p.items[0])},)"
            return f"({', '.join(self.pattern(x) for x in p.items)})"
        if isinstance(p, ast.ListPattern):
            parts = [self.pattern(x) for x in p.items]
            if p.has_rest:
                parts.append(".." + (self.pattern(p.rest) if p.rest is not None else ""))
            return f"[{', '.join(parts)}]"
        assert isinstance(p, ast.OrPattern), p
        text = " | ".join(self.pattern(a, atom=True) for a in p.alternatives)
        return f"({text})" if atom else text

    def param(self, p: ast.Param) -> str:
        return p.name if p.type is None else f"{p.name}: {type_text(p.type)}"

    # -- flat forms -----------------------------------------------------------------------------

    def flat(self, e) -> str | None:
        """`e` on one line, or None when it cannot be (a comment in it, a block of several
        statements, a match with arms)."""
        got = self._flat.get(e.id, ...)
        if got is ...:
            got = self._flat[e.id] = None if e.id in self.att.owners else self.flat_uncached(e)
        return got

    def sub_flat(self, e, min_prec: int, callee: bool = False) -> str | None:
        text = self.flat(e)
        if text is not None and (prec(e) < min_prec or (callee and isinstance(e, ast.Try))):
            text = f"({text})"
        return text

    def join(self, parts) -> str | None:
        parts = list(parts)
        return None if any(p is None for p in parts) else ", ".join(parts)

    def flat_uncached(self, e) -> str | None:
        if isinstance(e, ast.Literal):
            return self.literal(e)
        if isinstance(e, ast.Name):
            return e.name
        if isinstance(e, ast.FieldAccess):
            t = self.sub_flat(e.target, 9)
            return None if t is None else f"{t}.{e.name}"
        if isinstance(e, ast.Call):
            c = self.sub_flat(e.callee, 9, callee=True)
            args = self.join(self.flat(a) for a in e.args)
            return None if c is None or args is None else f"{c}({args})"
        if isinstance(e, ast.RecordLiteral):
            c = self.ctor(e)
            entries = self.join(self.entry_flat(x) for x in self.entries(e))
            if c is None or entries is None:
                return None
            return f"{c} {{ {entries} }}" if entries else f"{c} {{}}"
        if isinstance(e, ast.ListLiteral):
            items = self.join(self.flat(x) for x in e.items)
            return None if items is None else f"[{items}]"
        if isinstance(e, ast.DictLiteral):
            if not e.entries:
                return "[:]"
            items = self.join(self.dict_entry_flat(k, v) for k, v in e.entries)
            return None if items is None else f"[{items}]"
        if isinstance(e, ast.TupleLiteral):
            items = self.join(self.flat(x) for x in e.items)
            if items is None:
                return None
            return f"({items},)" if len(e.items) == 1 else f"({items})"
        if isinstance(e, ast.Unary):
            t = self.sub_flat(e.operand, 8)
            return None if t is None else e.op + (" " if e.op == "-" and t.startswith("-") else "") + t
        if isinstance(e, ast.Binary):
            lmin, rmin = self.operand_precs(e)
            a, b = self.sub_flat(e.left, lmin), self.sub_flat(e.right, rmin)
            return None if a is None or b is None else f"{a} {e.op} {b}"
        if isinstance(e, ast.Try):
            t = self.sub_flat(e.operand, 9)
            if t is None:
                return None
            if e.convert is None:
                return t + "?"
            c = self.conv_flat(e.convert)
            return None if c is None else f"{t} ? {c}"
        if isinstance(e, ast.Lambda):
            body = self.flat(e.body)
            return None if body is None else f"{self.lambda_head(e)} = {body}"
        if isinstance(e, ast.Block):
            if not e.stmts:
                return "{}"
            if len(e.stmts) > 1:
                return None
            s = self.stmt_flat(e.stmts[0])
            return None if s is None else f"{{ {s} }}"
        if isinstance(e, ast.If):
            cond, then = self.cond_flat(e.cond), self.flat(e.then)
            if cond is None or then is None:
                return None
            text = f"if {cond} {then}"
            if e.else_ is not None:
                other = self.flat(e.else_)
                if other is None:
                    return None
                text += f" else {other}"
            return text
        if isinstance(e, ast.Match):
            if e.arms:
                return None
            s = self.cond_flat(e.scrutinee)
            return None if s is None else f"match {s} {{}}"
        if isinstance(e, ast.Return):
            if e.value is None:
                return "return"
            v = self.flat(e.value)
            return None if v is None else f"return {v}"
        raise AssertionError(f"no layout for {type(e).__name__}")

    def operand_precs(self, e: ast.Binary) -> tuple[int, int]:
        level = LEVEL[e.op]
        if level == 4:  # comparisons do not chain
            return 5, 5
        return level, level + 1

    def ctor(self, e: ast.RecordLiteral) -> str | None:
        if isinstance(e.ctor, ast.Name):
            return e.ctor.name
        t = self.sub_flat(e.ctor.target, 9)
        return None if t is None else f"{t}.{e.ctor.name}"

    def entries(self, e: ast.RecordLiteral) -> list:
        return ([e.base] if e.base is not None else []) + list(e.fields)

    def entry_flat(self, x) -> str | None:
        if isinstance(x, ast.FieldInit):
            if x.value is None:
                return x.name
            v = self.flat(x.value)
            return None if v is None else f"{x.name}: {v}"
        v = self.flat(x)
        return None if v is None else ".." + v

    def dict_entry_flat(self, k, v) -> str | None:
        a, b = self.flat(k), self.flat(v)
        return None if a is None or b is None else f"{a}: {b}"

    def conv_flat(self, c) -> str | None:
        if self.is_path(c):
            return self.flat(c)
        text = self.flat(c)
        if text is None or isinstance(c, ast.Lambda):
            return text
        return f"({text})"

    def is_path(self, c) -> bool:
        while isinstance(c, ast.FieldAccess):
            c = c.target
        return isinstance(c, ast.Name)

    def lambda_head(self, e: ast.Lambda) -> str:
        head = f"flow({', '.join(self.param(p) for p in e.params)})"
        if e.result is not None:
            head += f" -> {type_text(e.result, atom=True)}"
            if e.effect is not None:
                head += f" !{e.effect}"
        return head

    def cond_flat(self, e) -> str | None:
        text = self.flat(e)
        return None if text is None else self.cond_wrap(e, text)

    def cond_wrap(self, e, text: str) -> str:
        """A condition or scrutinee is followed by `{`: an upper name before it would read as a
        record literal (`match (Mode) {`), a lambda or `return` would take in what follows, and an
        `if` would take the `else` of a `guard` (`guard (if x {}) else { ... }`) or the block."""
        if isinstance(e, (ast.Lambda, ast.Return, ast.If)) or _ENDS_UPPER.search(text):
            return f"({text})"
        return text

    def stmt_flat(self, s) -> str | None:
        if isinstance(s, ast.ExprStmt):
            return self.flat(s.expr)
        if isinstance(s, ast.Let):
            v = self.flat(s.value)
            return None if v is None else f"{self.let_head(s)} = {v}"
        if isinstance(s, ast.Guard):
            c, b = self.cond_flat(s.cond), self.flat(s.else_)
            return None if c is None or b is None else f"guard {c} else {b}"
        assert isinstance(s, ast.GuardLet), s
        v, b = self.cond_flat(s.value), self.flat(s.else_)
        return None if v is None or b is None else f"guard let {self.pattern(s.pattern)} = {v} else {b}"

    def let_head(self, s: ast.Let) -> str:
        head = f"let {self.pattern(s.pattern)}"
        return head + (f": {type_text(s.type)}" if s.type is not None else "")
