"""Expressions other than calls and lambdas: names, literals, field access, tuple/list/dict and
record literals (evaluated in source order, passed in declared order), unary and binary
operators (Python's own operator where it means the same, else the @lang function), `&&`/`||`,
and `?`. Control forms used as values go through a temporary's sink. Part of `lower.Body`."""
from __future__ import annotations

from flow2py.check import typed as P
from flow2py.codegen import py
from flow2py.codegen.lower_base import RETURN, Sink, _atomic
from flow2py.syntax import ast as A

#: @lang operator functions whose meaning is exactly Python's operator on the runtime values
PY_BINOPS = {
    "int.add": "+", "int.sub": "-", "int.mul": "*", "text.concat": "+",
    "data.eq": "==", "data.ne": "!=", "data.lt": "<", "data.le": "<=", "data.gt": ">", "data.ge": ">=",
}
PY_UNOPS = {"int.neg": "-", "bool.not": "not"}
SHORT_CIRCUIT = {"&&": "and", "||": "or"}


class ExprsMixin:
    def expr(self, e: A.Expr) -> tuple[list, py.Expr]:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise self.error(e, f"unknown expression {type(e).__name__}")
        return method(e)

    def via_sink(self, e: A.Expr) -> tuple[list, py.Expr]:
        t = self.temp()
        return self.to_sink(e, Sink("assign", t)), py.name(t)

    e_Block = e_If = e_Match = via_sink

    def e_Return(self, e: A.Return):
        if e.value is None:
            return [py.return_(None, self.mark(e))], py.const(None)
        return self.to_sink(e.value, RETURN), py.const(None)

    def literal_value(self, kind: str, value) -> py.Expr:
        if kind == "decimal":
            return py.call(py.dotted("rt.Decimal"), [py.string(str(value))])
        if kind == "duration":
            return py.call(py.dotted("rt.Duration"), [py.integer(value)])
        return py.const(value)

    def e_Literal(self, e: A.Literal):
        return [], self.literal_value(e.kind, e.value)

    def e_Name(self, e: A.Name):
        ref = self.prog.refs.get(e.id)
        if isinstance(ref, P.LocalRef):
            if ref.binder not in self.locals:
                raise self.error(e, f"local {e.name} is not bound")
            return [], py.name(self.locals[ref.binder])
        if ref is None:
            return [], py.name(self.lookup(e.name))
        return [], self.global_value(e, ref)

    def global_value(self, e: A.Expr, ref) -> py.Expr:
        if isinstance(ref, P.FnRef):
            t = self.prog.types.get(e.id)
            variant = self.fun_effect(t) if isinstance(t, P.TFun) else "pure"
            f = self.mg.fn_value(ref.decl, variant)
            if ref.decl in self.mg.names.typed:  # the value carries its type arguments
                return py.call(py.dotted("rt.with_type_args"), [f, self.type_args_of(e)])
            return f
        if isinstance(ref, P.CtorRef):
            return self.mg.ctor_value(ref.type_decl, ref.ctor)
        raise self.error(e, f"{type(ref).__name__} used as a value")

    def e_FieldAccess(self, e: A.FieldAccess):
        ref = self.prog.refs.get(e.id)
        if isinstance(ref, (P.FnRef, P.CtorRef)):
            return [], self.global_value(e, ref)
        s, x = self.expr(e.target)
        return s, py.attr(x, self.mg.field_name(e.name))

    def e_TupleLiteral(self, e: A.TupleLiteral):
        s, xs = self.seq(e.items)
        return s, py.tuple_(xs)

    def e_ListLiteral(self, e: A.ListLiteral):
        if not e.items:
            return [], py.dotted("rt.EMPTY_LIST")
        s, xs = self.seq(e.items)
        return s, py.call(py.dotted("rt.list_of"), [py.tuple_(xs)])

    def e_DictLiteral(self, e: A.DictLiteral):
        if not e.entries:
            return [], py.dotted("rt.EMPTY_DICT")
        flat = [x for kv in e.entries for x in kv]
        s, xs = self.seq(flat)
        pairs = [py.tuple_([xs[i], xs[i + 1]]) for i in range(0, len(xs), 2)]
        return s, py.call(py.dotted("rt.dict_of"), [py.tuple_(pairs)])

    def e_RecordLiteral(self, e: A.RecordLiteral):
        ref = self.prog.refs.get(e.id)
        if not isinstance(ref, P.CtorRef):
            raise self.error(e, "record literal is not resolved")
        order = self.mg.ctor_fields(ref.type_decl, ref.ctor)
        nodes: list = []
        parts = []
        if e.base is not None:
            nodes.append(e.base)
            parts.append(self.expr(e.base))
        for fi in e.fields:
            if fi.value is None:
                r = self.prog.refs.get(fi.id)
                x = py.name(self.locals[r.binder]) if isinstance(r, P.LocalRef) else py.name(self.lookup(fi.name))
                nodes.append(fi)
                parts.append(([], x))
            else:
                nodes.append(fi.value)
                parts.append(self.expr(fi.value))
        given = [fi.name for fi in e.fields]
        reordered = [n for n in order if n in given] != given
        if reordered:
            # fields are evaluated in source order, passed in declared order
            parts = [(s, x) for (s, x) in parts]
            stmts: list = []
            xs = []
            for node, (s, x) in zip(nodes, parts):
                stmts += s
                xs.append(x if _atomic(x) else self.hoist(x, self.mark(node), stmts))
        else:
            stmts, xs = self._seq(parts, nodes)
        base = None
        if e.base is not None:
            base = xs.pop(0)
            if not _atomic(base):
                base = self.hoist(base, self.mark(e.base), stmts)
        values = dict(zip(given, xs))
        args = [values[f] if f in values else py.attr(base, self.mg.field_name(f)) for f in order]
        return stmts, py.call(self.mg.ctor_class(ref.type_decl, ref.ctor), args)

    def e_Unary(self, e: A.Unary):
        s, x = self.expr(e.operand)
        ref = self.prog.refs.get(e.id)
        info = self.prog.fn_decls.get(ref.decl) if isinstance(ref, P.FnRef) else None
        if info is None:
            return s, py.unop("not" if e.op == "!" else "-", x)
        if info.lang in PY_UNOPS:
            return s, py.unop(PY_UNOPS[info.lang], x)
        return self.apply(e, info, [x], s, tail=False)

    def e_Binary(self, e: A.Binary):
        ref = self.prog.refs.get(e.id)
        info = self.prog.fn_decls.get(ref.decl) if isinstance(ref, P.FnRef) else None
        if e.op in SHORT_CIRCUIT:
            return self.short_circuit(e)
        s, (a, b) = self.seq([e.left, e.right])
        if (info is None or info.lang in PY_BINOPS) and not self._unit_ordering(e, info):
            op = PY_BINOPS[info.lang] if info is not None else e.op.replace("++", "+")
            return s, py.binop(op, a, b)
        return self.apply(e, info, [a, b], s, tail=False)

    def _unit_ordering(self, e: A.Binary, info) -> bool:
        """Unit is Python's None, which has no `<`: order it through rt.lang (() <= () holds)."""
        if info is None or info.lang not in ("data.lt", "data.le", "data.gt", "data.ge"):
            return False
        t = self.prog.types.get(e.left.id)
        ti = self.prog.type_decls.get(t.decl) if isinstance(t, P.TCon) else None
        return ti is not None and ti.lang == "Unit"

    def short_circuit(self, e: A.Binary):
        op = SHORT_CIRCUIT[e.op]
        s, a = self.expr(e.left)
        rs, b = self.expr(e.right)
        if not rs:
            return s, py.binop(op, a, b)
        # the right operand has statements: they run only when the left does not decide
        t = self.temp()
        s.append(py.assign(py.name(t), a, self.mark(e.left)))
        test = py.name(t) if op == "and" else py.not_(py.name(t))
        s.append(py.if_(test, rs + [py.assign(py.name(t), b, self.mark(e.right))], None, self.mark(e)))
        return s, py.name(t)

    def e_Try(self, e: A.Try):
        s, x = self.expr(e.operand)
        x = self.hoist(x, self.mark(e), s)
        err_payload = py.attr(x, "_0")
        if e.convert is None:
            leave = [py.return_(x, self.mark(e))]
        else:
            cs, f = self.expr(e.convert)
            converted = py.call(f, [err_payload])
            if self.fun_effect(self.prog.types.get(e.convert.id)) == "tool":
                t = self.temp()
                cs.append(py.assign(py.name(t), self.yield_(converted), self.mark(e.convert)))
                converted = py.name(t)
            leave = cs + [py.return_(py.call(py.dotted("rt.Err"), [converted]), self.mark(e))]
        s.append(py.if_(py.isinstance_(x, py.dotted("rt.Err")), leave, None, self.mark(e)))
        return s, py.attr(x, "_0")
