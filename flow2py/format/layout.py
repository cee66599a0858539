"""The canonical layout of a Flow module, printed from its tree.

The layout depends on the tree, the comments and the blank lines between declarations and
statements, never on how the input was laid out. The rule, for every construct that has both
forms, is *flat if it fits, else broken*:

- flat is the construct on one line (`f(a, b)`, `[1, 2]`, `P { x: 1 }`, `{ x }`, `if c { a }
  else { b }`); it is used when it fits within WIDTH columns, counting what follows it on
  the line (a `,`, ` {`), and when no comment sits in it;
- broken puts one item per line, indented 4 more, each followed by `,` (a trailing comma
  everywhere, so a later item added is a one-line change), the closer on a line of its own.
  Statements of a block and arms of a match are always one per line (a match is never flat;
  a block is flat only with at most one statement).
- a call whose last argument is a list, dict, record, block, match or a lambda with such a
  body keeps the other arguments on its line and breaks only that last one
  (`task.race([` ... `])`), when that first line fits;
- after `=`, `=>` or a record field's `:`, a value that does not fit goes on the same line
  broken when it can break itself (a call, a record, a block, `if`, `match`, ...), else on
  the next line, indented, when it fits there;
- a binary chain that does not fit breaks after each operator (never before: a line starting
  with `-` would begin a new statement), continuation lines indented 4 more.

Every line break the layout makes is one that the separator rule (docs/spec/grammar.md)
ignores: after `(`, `[`, `{`, `,`, `=`, `=>`, `:` or an operator. Parentheses are printed
where precedence (or a record-literal reading such as `match (Mode) {`) needs them, and only
there. Literals are printed as written (`0xff`, `1_000`, escapes), since their spelling is
the author's.
"""

from __future__ import annotations

import re

from flow2py.format.comments import Attached, Item, Source, list_of
from flow2py.format.flat import LEVEL, Flat, prec, type_text
from flow2py.syntax import ast

WIDTH = 100
INDENT = 4


def _end_col(text: str, col: int) -> int:
    nl = text.rfind("\n")
    return col + len(text) if nl < 0 else len(text) - nl - 1


def _first_line(text: str) -> str:
    nl = text.find("\n")
    return text if nl < 0 else text[:nl]


class Printer:
    def __init__(self, src: Source, att: Attached):
        self.src = src
        self.att = att
        self.f = Flat(src, att)
        self._broken: dict[tuple, str] = {}

    def annotation(self, a: ast.Annotation) -> str:
        if not a.args:
            return f"@{a.name}"
        args = [self.f.flat(x) for x in a.args]
        if any(x is None for x in args):
            args = [self.expr(x, 0, 0, 0) for x in a.args]
        return f"@{a.name}({', '.join(args)})"

    # -- laid out -------------------------------------------------------------------------------
    # `col` is the column the text starts at, `ind` the indentation of the line it starts on,
    # `tail` the width of what follows it on its last line.

    def expr(self, e, col: int, ind: int, tail: int) -> str:
        text = self.f.flat(e)
        if text is not None and col + len(text) + tail <= WIDTH:
            return text
        return self.broken(e, col, ind, tail)

    def sub(self, e, min_prec: int, col: int, ind: int, tail: int, callee: bool = False) -> str:
        if prec(e) < min_prec or (callee and isinstance(e, ast.Try)):
            return f"({self.expr(e, col + 1, ind, tail + 1)})"
        return self.expr(e, col, ind, tail)

    def broken(self, e, col: int, ind: int, tail: int) -> str:
        key = (e.id, col, ind, tail)
        got = self._broken.get(key)
        if got is None:
            got = self._broken[key] = self._broken_uncached(e, col, ind, tail)
        return got

    def _broken_uncached(self, e, col: int, ind: int, tail: int) -> str:
        if isinstance(e, ast.Call):
            return self._call(e, col, ind, tail)
        if isinstance(e, ast.RecordLiteral):
            head = self.f.ctor(e)
            if head is None:
                head = self.sub(e.ctor.target, 9, col, ind, 0) + "." + e.ctor.name
            return head + " " + self.items(e, "{", "}", ind, self._entry)
        if isinstance(e, ast.ListLiteral):
            return self.items(e, "[", "]", ind, self._item)
        if isinstance(e, ast.TupleLiteral):
            return self.items(e, "(", ")", ind, self._item)
        if isinstance(e, ast.DictLiteral):
            return self.items(e, "[" if e.entries else "[:", "]", ind, self._dict_entry)
        if isinstance(e, ast.Block):
            return self.items(e, "{", "}", ind, self._stmt, comma=False, blanks=True)
        if isinstance(e, ast.Match):
            s = self._cond(e.scrutinee, col + 6, ind, 2)
            return f"match {s} " + self.items(e, "{", "}", ind, self._arm)
        if isinstance(e, ast.If):
            return self._if(e, col, ind)
        if isinstance(e, ast.Binary):
            return self._binary(e, col, ind, tail)
        if isinstance(e, ast.Unary):
            t = self.sub(e.operand, 8, col + 2, ind, tail)
            return e.op + (" " if e.op == "-" and t.startswith("-") else "") + t
        if isinstance(e, ast.FieldAccess):
            return self.sub(e.target, 9, col, ind, tail + 1 + len(e.name)) + "." + e.name
        if isinstance(e, ast.Try):
            if e.convert is None:
                return self.sub(e.operand, 9, col, ind, tail + 1) + "?"
            conv = self.f.conv_flat(e.convert)
            if conv is None:  # a conversion that cannot be flat: a lambda with a block, say
                conv = self.expr(e.convert, 0, ind, tail)
                if not (self.f.is_path(e.convert) or isinstance(e.convert, ast.Lambda)):
                    conv = f"({conv})"
            return self.sub(e.operand, 9, col, ind, len(conv) + 3) + " ? " + conv
        if isinstance(e, ast.Lambda):
            head = self.f.lambda_head(e)
            return head + " =" + self.assign(e.body, col + len(head) + 2, ind, tail)
        if isinstance(e, ast.Return):
            return "return" if e.value is None else "return " + self.expr(e.value, col + 7, ind, tail)
        text = self.f.flat(e)
        assert text is not None, e
        return text  # a name or a literal: nothing to break

    def _item(self, x, col: int, ind: int, tail: int) -> str:
        return self.expr(x, col, ind, tail)

    def _entry(self, x, col: int, ind: int, tail: int) -> str:
        if isinstance(x, ast.FieldInit):
            if x.value is None:
                return x.name
            return x.name + ":" + self.assign(x.value, col + len(x.name) + 1, ind, tail)
        return ".." + self.expr(x, col + 2, ind, tail)

    def _dict_entry(self, kv, col: int, ind: int, tail: int) -> str:
        k, v = kv
        key = self.expr(k, col, ind, 1)
        return key + ":" + self.assign(v, _end_col(key, col) + 1, ind, tail)

    def _cond(self, e, col: int, ind: int, tail: int) -> str:
        text = self.expr(e, col, ind, tail)
        if self.f.cond_wrap(e, text) != text:
            text = "(" + self.expr(e, col + 1, ind, tail + 1) + ")"
        return text

    def assign(self, e, col: int, ind: int, tail: int) -> str:
        """`e` after `=`, `=>` or `:` (col is just after it): the text from the space or line
        break that follows the operator."""
        text = self.f.flat(e)
        if text is not None and col + 1 + len(text) + tail <= WIDTH:
            return " " + text
        nxt = ind + INDENT
        opens = self._opens_block(e)
        if not opens and text is not None and nxt + len(text) + tail <= WIDTH:
            return "\n" + " " * nxt + text
        if opens or self._breaks_itself(e):
            same = self.broken(e, col + 1, ind, tail)
            first = _first_line(same)
            if col + 1 + len(first) <= WIDTH and (not opens or first.endswith(self._open_end(e))):
                return " " + same
            below = self.expr(e, nxt, nxt, tail)
            if nxt + len(_first_line(below)) <= WIDTH:
                return "\n" + " " * nxt + below
            return " " + same
        same = self.expr(e, col + 1, ind, tail)
        below = self.expr(e, nxt, nxt, tail)
        if below.count("\n") < same.count("\n"):
            return "\n" + " " * nxt + below
        return " " + same

    def _open_end(self, e) -> str:
        """How the first line of `e` (a block, match or record, maybe a lambda's body) ends when
        broken: its `{`, and the comment that follows it there, if any."""
        while isinstance(e, ast.Lambda):
            e = e.body
        opening = self.att.opening.get(e.id)
        return "{" if opening is None else "{ " + opening.text

    def _opens_block(self, e) -> bool:
        """A value whose first line ends in `{` when broken: it stays on the operator's line."""
        if isinstance(e, ast.Lambda):
            return self._opens_block(e.body)
        return isinstance(e, (ast.Block, ast.Match, ast.RecordLiteral))

    def _breaks_itself(self, e) -> bool:
        if isinstance(e, ast.Try) and e.convert is None:
            return self._breaks_itself(e.operand)
        return isinstance(
            e,
            (
                ast.Call,
                ast.RecordLiteral,
                ast.ListLiteral,
                ast.DictLiteral,
                ast.TupleLiteral,
                ast.Block,
                ast.If,
                ast.Match,
                ast.Lambda,
            ),
        )

    def _huggable(self, e) -> bool:
        if isinstance(e, ast.Lambda):
            return isinstance(e.body, (ast.Block, ast.Match, ast.If)) or (
                isinstance(e.body, (ast.Call, ast.RecordLiteral, ast.ListLiteral))
                and self.f.flat(e.body) is None
            )
        if isinstance(e, (ast.ListLiteral, ast.RecordLiteral)):
            return bool(e.items if isinstance(e, ast.ListLiteral) else self.f.entries(e))
        if isinstance(e, ast.DictLiteral):
            return bool(e.entries)
        return isinstance(e, (ast.Block, ast.Match))

    def _call(self, e: ast.Call, col: int, ind: int, tail: int) -> str:
        head = self.sub(e.callee, 9, col, ind, 1, callee=True)
        hcol = _end_col(head, col)
        args = self.f.join(self.f.flat(a) for a in e.args)
        if args is not None and e.id not in self.att.owners and hcol + len(args) + 2 + tail <= WIDTH:
            return f"{head}({args})"  # only the callee had to break: `[ ... ].map(f)`
        if e.args and e.id not in self.att.owners and self._huggable(e.args[-1]):
            others = [self.f.flat(a) for a in e.args[:-1]]
            if all(o is not None for o in others):
                prefix = "(" + "".join(o + ", " for o in others)
                pcol = hcol + len(prefix)
                last = self.broken(e.args[-1], pcol, ind, tail + 1)
                if pcol + len(_first_line(last)) <= WIDTH and "\n" in last:
                    return head + prefix + last + ")"
        if not e.args and e.id not in self.att.owners:
            return head + "()"
        return head + self.items(e, "(", ")", ind, self._item)

    def _binary(self, e: ast.Binary, col: int, ind: int, tail: int) -> str:
        level = LEVEL[e.op]
        operands, ops = [e.right], [e.op]
        left = e.left
        if level != 4:
            while isinstance(left, ast.Binary) and LEVEL[left.op] == level:
                operands.append(left.right)
                ops.append(left.op)
                left = left.left
        operands.append(left)
        operands.reverse()
        ops.reverse()
        lmin, rmin = self.f.operand_precs(e)
        nxt = ind + INDENT
        out = self.sub(operands[0], lmin, col, ind, len(ops[0]) + 1)
        for k, (op, x) in enumerate(zip(ops, operands[1:], strict=True)):
            last = k == len(ops) - 1
            out += f" {op}\n" + " " * nxt
            out += self.sub(x, rmin, nxt, nxt, tail if last else len(ops[k + 1]) + 1)
        return out

    def _if(self, e: ast.If, col: int, ind: int) -> str:
        cond = self._cond(e.cond, col + 3, ind, 2)
        out = f"if {cond} " + self.block_broken(e.then, ind)
        other = e.else_
        while isinstance(other, ast.If):
            c = _end_col(out, col)
            cond = self._cond(other.cond, c + 9, ind, 2)
            out += f" else if {cond} " + self.block_broken(other.then, ind)
            other = other.else_
        if other is not None:
            out += " else " + self.block_broken(other, ind)
        return out

    def block_broken(self, b: ast.Block, ind: int) -> str:
        return self.items(b, "{", "}", ind, self._stmt, comma=False, blanks=True)

    def block(self, b: ast.Block, col: int, ind: int, tail: int) -> str:
        text = self.f.flat(b)
        if text is not None and col + len(text) + tail <= WIDTH:
            return text
        return self.block_broken(b, ind)

    def _arm(self, a: ast.MatchArm, col: int, ind: int, tail: int) -> str:
        head = self.f.pattern(a.pattern)
        if a.guard is not None:
            head += " if " + self._cond(a.guard, col + len(head) + 4, ind, 3)
        return head + " =>" + self.assign(a.body, _end_col(head, col) + 3, ind, tail)

    def _stmt(self, s, col: int, ind: int, tail: int) -> str:
        if isinstance(s, ast.ExprStmt):
            return self.expr(s.expr, col, ind, tail)
        if isinstance(s, ast.Let):
            head = self.f.let_head(s)
            return head + " =" + self.assign(s.value, col + len(head) + 2, ind, tail)
        if isinstance(s, ast.Guard):
            cond = self._cond(s.cond, col + 6, ind, 6)
            return f"guard {cond} else " + self.block(s.else_, _end_col(cond, col + 6) + 6, ind, tail)
        assert isinstance(s, ast.GuardLet), s
        head = f"guard let {self.f.pattern(s.pattern)} = "
        value = self._cond(s.value, col + len(head), ind, 6)
        return head + value + " else " + self.block(s.else_, _end_col(value, col + len(head)) + 6, ind, tail)

    # -- lists ----------------------------------------------------------------------------------

    def items(self, owner, open_: str, close: str, ind: int, render, comma=True, blanks=False) -> str:
        """The list `owner` holds, broken: each item on its own line(s), with its comments."""
        _, _, items = list_of(owner, self.src)
        body = self.lines(owner, items, ind + INDENT, render, comma, blanks)
        opening = self.att.opening.get(owner.id)
        if opening is not None:
            open_ += " " + opening.text
        if not body:
            return open_ + ("\n" + " " * ind if opening is not None else "") + close
        return open_ + "\n" + "\n".join(body) + "\n" + " " * ind + close

    def lines(self, owner, items: list[Item], ind: int, render, comma: bool, blanks: bool) -> list[str]:
        pad = " " * ind
        out: list[str] = []
        prev = None  # where the unit before ended (None: nothing before in this list)

        def blank_before(start: int) -> None:
            if blanks and prev is not None and self.src.blank_between(prev, start):
                out.append("")

        for it in items:
            leading = self.att.leading.get(it.key, ())
            for c in leading:
                if not c.inside:
                    blank_before(c.start)
                    prev = c.end
                    out.append(pad + c.text)
            blank_before(it.start)
            out += [pad + c.text for c in leading if c.inside]
            text = pad + render(it.node, ind, ind, 1 if comma else 0) + ("," if comma else "")
            prev = it.end
            trailing = self.att.trailing.get(it.key)
            if trailing is not None:
                text += " " + trailing.text
                prev = trailing.end
            out.append(text)
        for c in self.att.dangling.get(owner.id, ()):
            blank_before(c.start)
            prev = c.end
            out.append(pad + c.text)
        return out

    # -- declarations ---------------------------------------------------------------------------

    def module(self, m: ast.Module) -> str:
        _, _, items = list_of(m, self.src)
        body = self.lines(m, items, 0, self._decl, comma=False, blanks=True)
        return "\n".join(body) + "\n" if body else ""

    def _decl(self, d, col: int, ind: int, tail: int) -> str:
        if isinstance(d, ast.Use):
            text = self.src.text[d.span.start : d.span.end]
            return "use " + re.search(r'"(?:[^"\\\n]|\\.)*"$', text).group()
        if isinstance(d, ast.TypeDecl):
            return self._type_decl(d)
        return self._fn_decl(d)

    def _with_annotations(self, anns: list[str], header: str, opener: str) -> str | None:
        """Annotations before the header on its line when all fit, else each on its own line."""
        if anns and len(" ".join(anns)) + 1 + len(header) + len(opener) <= WIDTH:
            return " ".join(anns) + " " + header
        return None

    def _fn_decl(self, d: ast.FnDecl) -> str:
        anns = [self.annotation(a) for a in d.annotations]
        head = ("pub " if d.pub else "") + "flow " + d.name
        if d.type_params:
            head += f"<{', '.join(d.type_params)}>"
        result = " -> " + type_text(d.result, atom=True) + (f" !{d.effect}" if d.effect else "")
        opener = "" if d.body is None else " {" if isinstance(d.body, ast.Block) else " ="
        flat = head + f"({', '.join(self.f.param(p) for p in d.params)})" + result
        prefix = "\n".join(anns) + "\n" if anns else ""
        if d.id not in self.att.owners and len(flat) + len(opener) <= WIDTH:
            header = self._with_annotations(anns, flat, opener) or prefix + flat
        else:
            params = self.items(d, "(", ")", 0, lambda p, col, ind, tail: self.f.param(p))
            header = prefix + head + params + result
        if d.body is None:
            return header
        col = _end_col(header, 0)
        if isinstance(d.body, ast.Block):
            return header + " " + self.block(d.body, col + 1, 0, 0)
        return header + " =" + self.assign(d.body, col + 2, 0, 0)

    def _type_decl(self, d: ast.TypeDecl) -> str:
        anns = [self.annotation(a) for a in d.annotations]
        head = ("pub " if d.pub else "") + ("opaque " if d.opaque else "") + "type " + d.name
        if d.type_params:
            head += f"<{', '.join(d.type_params)}>"
        prefix = "\n".join(anns) + "\n" if anns else ""
        if d.kind == "alias":
            head += " = " + type_text(d.alias)
        if d.kind in ("alias", "abstract"):
            return self._with_annotations(anns, head, "") or prefix + head
        _, _, items = list_of(d, self.src)
        if d.id not in self.att.owners:
            entries = [self._type_entry_flat(it.node) for it in items]
            if all(x is not None for x in entries):
                flat = head + (f" {{ {', '.join(entries)} }}" if entries else " {}")
                if len(flat) <= WIDTH:
                    return self._with_annotations(anns, flat, "") or prefix + flat
        return prefix + head + " " + self.items(d, "{", "}", 0, self._type_entry)

    def _type_entry_flat(self, x) -> str | None:
        if isinstance(x, ast.FieldDecl):
            return ("pub " if x.pub else "") + f"{x.name}: {type_text(x.type)}"
        if x.positional is not None:
            return f"{x.name}({', '.join(type_text(t) for t in x.positional)})"
        if x.named is not None:
            if x.id in self.att.owners:
                return None
            fields = ", ".join(self._type_entry_flat(f) for f in x.named)
            return f"{x.name} {{ {fields} }}" if fields else f"{x.name} {{}}"
        return x.name

    def _type_entry(self, x, col: int, ind: int, tail: int) -> str:
        text = self._type_entry_flat(x)
        if text is not None and col + len(text) + tail <= WIDTH:
            return text
        if isinstance(x, ast.CtorDecl) and x.named is not None:
            return x.name + " " + self.items(x, "{", "}", ind, self._type_entry)
        return text
