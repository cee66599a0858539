"""Record literals and collections in a function body: the record or constructor a literal
names (through the expected type first), each field once and none missing, `..base` updates,
private fields across modules; list, dict and tuple literals, whose element types come from the
expected type when there is one. Part of `infer.BodyChecker`."""
from __future__ import annotations

from flow2py.check.declare import field_span, ordinal, suggest
from flow2py.check.infer_ctx import Why
from flow2py.check.typed import CtorRef, LocalRef, ModuleRef, TCon, TError, TTuple
from flow2py.check.typeterms import TVar, resolve, subst, unify
from flow2py.diagnostics import Related
from flow2py.syntax import ast


class DataMixin:
    def _record(self, e: ast.RecordLiteral, expected):
        target = self._record_target(e, expected)
        for fi in e.fields:
            pass
        if target is None:
            if e.base is not None:
                self.expr(e.base)
            for fi in e.fields:
                self._field_init(fi, None)
            return TError()
        info, ctor = target
        self._mark_used(info.decl)
        ok = self._ctor_access(info, e.ctor.span)
        tcon, mapping = self.fresh_tcon(info)
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon and exp.decl == info.decl:
            unify(tcon, exp)
        name = ctor.name if ctor else info.name
        self.refs[e.id] = CtorRef(info.decl, name)
        self.refs[e.ctor.id] = CtorRef(info.decl, name)
        self.types[e.ctor.id] = tcon
        if ctor is not None:
            if ctor.field_names is None:
                self.problems.add("E202", f"constructor `{ctor.name}` takes positional values: write `{ctor.name}(...)`", e.span)
                for fi in e.fields:
                    self._field_init(fi, None)
                return TError()
            declared = list(zip(ctor.field_names, ctor.params, [True] * len(ctor.params)))
        else:
            declared = [(f.name, f.type, f.pub) for f in info.fields]
        if e.base is not None:
            if ctor is not None:
                self.problems.add("E202", "`..base` works only for records", e.base.span)
                self.expr(e.base)
            else:
                self.expr(e.base, tcon, Why(f"the record `{name}` being updated"))
        by_name = {n: (t, pub) for n, t, pub in declared}
        given = set()
        private_reported = False
        for fi in e.fields:
            if fi.name in given:
                self.problems.add("E207", f"field `{fi.name}` is given twice", fi.span)
                self._field_init(fi, None)
                continue
            given.add(fi.name)
            if fi.name not in by_name:
                s = suggest(fi.name, list(by_name))
                related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", fi.span)] if s else []
                self.problems.add("E205", f"`{name}` has no field `{fi.name}`", fi.span, related=related)
                self._field_init(fi, None)
                continue
            t, pub = by_name[fi.name]
            if not pub and info.module != self.env.key and not private_reported and ok:
                private_reported = True
                self.problems.add("E109", f"field `{fi.name}` of `{name}` is private: `{name}` can be built only in its module", fi.span,
                                  related=[Related("declared here without `pub`", field_span(info, fi.name))])
            self._field_init(fi, subst(t, mapping), Why(f"the field `{fi.name}` of `{name}`"))
        if e.base is None:
            missing = [n for n, _, _ in declared if n not in given]
            if missing:
                self.problems.add("E206", f"`{name}` is missing field{'s' if len(missing) > 1 else ''} " + ", ".join(f"`{m}`" for m in missing), e.span)
        return tcon if ok else TError()

    def _field_init(self, fi: ast.FieldInit, t, why=None) -> None:
        if fi.value is not None:
            self.expr(fi.value, t, why)
            if t is not None:
                self._pure_slot(fi.value, t)
            return
        b = self._lookup(fi.name)
        if b is None:
            self.problems.add("E101", f"unknown name `{fi.name}` (the shorthand `{fi.name}` means `{fi.name}: {fi.name}`)", fi.span)
            self.types[fi.id] = TError()
            return
        self._use_local(b)
        self.refs[fi.id] = LocalRef(b.binder)
        self.types[fi.id] = b.type
        if t is not None and not unify(b.type, t):
            self.mismatch(b.type, t, fi.span, why)

    def _record_target(self, e: ast.RecordLiteral, expected):
        c = e.ctor
        if isinstance(c, ast.FieldAccess) and isinstance(c.target, ast.Name):
            menv = self.d.alias_env(self.env, c.target.name, c.target.span)
            self.types[c.target.id] = self.d.unit()
            if menv is None:
                return None
            self.refs[c.target.id] = ModuleRef(menv.key)
            info = menv.cm.types.get(c.name)
            if info is not None and info.kind == "record":
                return info, None
            hit = menv.ctors.get(c.name)
            if hit is not None:
                return hit[0], hit[1]
            self.problems.add("E110", f"module `{c.target.name}` declares no record or constructor `{c.name}`", c.span)
            return None
        if not isinstance(c, ast.Name):
            self.problems.add("E101", "a record literal starts with a record type or constructor name", c.span)
            return None
        name = c.name
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TCon:
            info = self.d.type_decls.get(exp.decl)
            if info is not None:
                if info.kind == "record" and info.name == name:
                    return info, None
                for ct in info.ctors:
                    if ct.name == name:
                        return info, ct
        info = self.env.cm.types.get(name) or self.d.prelude_types.get(name)
        if info is not None and info.kind == "record":
            self._mark_used(info.decl)
            return info, None
        hit = self.env.ctors.get(name) or self.d.prelude_ctors.get(name)
        if hit is not None:
            return hit[0], hit[1]
        cands = [n for n, i in self.env.cm.types.items() if i.kind == "record"] + list(self.env.ctors)
        s = suggest(name, cands)
        related = [Related("did you mean " + ", ".join(f"`{x}`" for x in s) + "?", c.span)] if s else []
        self.problems.add("E101", f"unknown record type or constructor `{name}`", c.span, related=related)
        return None

    def _list(self, e: ast.ListLiteral, expected):
        exp = resolve(expected) if expected is not None else None
        if self.d.is_lang(exp, "List") and len(exp.args) == 1:
            elem = exp.args[0]
        else:
            elem = TVar()
        t = self.d.lang_con("List", elem)
        for i, x in enumerate(e.items):
            self.expr(x, elem, Why("the elements of this list (the first one fixes their type)" if i else "the elements of this list"))
            if i == 0 and type(resolve(elem)) is TVar:
                pass
        return t

    def _dict(self, e: ast.DictLiteral, expected):
        exp = resolve(expected) if expected is not None else None
        if self.d.is_lang(exp, "Dict") and len(exp.args) == 2:
            k, v = exp.args
        else:
            k, v = TVar(), TVar()
        for kx, vx in e.entries:
            self.expr(kx, k, Why("the keys of this dict"))
            self.expr(vx, v, Why("the values of this dict"))
        self.data_reqs.append((k, e.span, "a Dict key", self.fn.decl))
        return self.d.lang_con("Dict", k, v)

    def _tuple(self, e: ast.TupleLiteral, expected):
        exp = resolve(expected) if expected is not None else None
        if type(exp) is TTuple and len(exp.items) == len(e.items):
            items = [self.expr(x, t, Why(f"the {ordinal(i)} item of this tuple")) for i, (x, t) in enumerate(zip(e.items, exp.items))]
        else:
            items = [self.expr(x) for x in e.items]
        return TTuple(tuple(items))
