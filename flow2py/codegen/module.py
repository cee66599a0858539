"""One Flow module -> one Python module (a libcst tree).

Order inside a generated module: imports; aliases of runtime classes (std's @lang enums);
data classes (records, enums and their constructors); Tool specs with the Tool's function value;
the functions. Classes come before anything that refers to them in a descriptor.
"""

from __future__ import annotations

import libcst as cst

from flow2py.check import typed as P
from flow2py.codegen import py
from flow2py.codegen.lower import new_body, to_sink
from flow2py.codegen.lower_base import RETURN, CodegenError, Loop, _generator_marker, bind
from flow2py.codegen.names import Namer, python_module, safe
from flow2py.codegen.tails import bouncing_functions, tail_callees, tail_groups
from flow2py.codegen.typeargs import TARGS, typed_functions

#: the runtime's class of a std @lang constructor, where its name is not the constructor's
RUNTIME_CLASS = {"None": "None_"}
SCALARS = {"Int", "Decimal", "Text", "Bytes", "Bool", "Unit", "Duration", "Instant"}


def runtime_namespace(lang: str) -> str:
    """Where the runtime keeps the classes of a std @lang enum: `rt.` for a lang name without a
    module (`Option`: `rt.Some`), `rt.<module>.` for `module.Type` (`json.Value`: `rt.json.Number`)."""
    return "rt." + (lang.rsplit(".", 1)[0] + "." if "." in lang else "")


#: the runtime's descriptor of each std @lang type with type parameters that has one
COLLECTIONS = {
    "List": "ListOf",
    "Dict": "DictOf",
    "Set": "SetOf",
    "Result": "ResultOf",
    "Option": "OptionOf",
    "ToolProblem": "ToolProblemOf",
}


class ProgramNames:
    """Python names of every top-level declaration, decided once for the whole program so that
    a module referring to another's declaration knows its name (names.py: Flow names through
    `safe`, generated ones through `Namer.generated`). Every module-level name of a module is
    taken here, before any function is lowered, so a function's temporaries never shadow one."""

    def __init__(self, prog: P.CheckedProgram):
        self.prog = prog
        self.module_path = {k: python_module(k) for k in prog.modules}
        self.globals: dict[str, Namer] = {}
        self.type_name: dict[str, str] = {}
        self.ctor_name: dict[tuple[str, str], str] = {}
        self.fn_name: dict[str, str] = {}
        self.tool_variant: dict[str, str] = {}  # a poly function's effectful variant
        self.spec_name: dict[str, str] = {}
        self.groups: dict[str, list[str]] = {}  # member decl -> the group's members (merged loop)
        self.group_name: dict[str, str] = {}
        self.aliases: dict[str, dict[str, str]] = {}  # module -> (module it refers to -> name)
        #: functions taking their type arguments at run time (`_targs`, codegen/typeargs.py)
        self.typed = typed_functions(prog)
        for key, m in prog.modules.items():
            namer = Namer()
            self.globals[key] = namer
            aliases = {k: namer.fresh(a) for a, k in sorted(m.aliases.items()) if k is not None}
            self.aliases[key] = aliases
            for t in _decl_order(m.types.values()):
                if t.kind == "record" and not t.lang:
                    self.type_name[t.decl] = namer.fresh(t.name)
                    self.ctor_name[(t.decl, t.name)] = self.type_name[t.decl]
                elif t.kind == "enum":  # std's @lang enums too: aliases of the runtime's classes
                    self.type_name[t.decl] = namer.fresh(t.name)
                    for c in t.ctors:
                        n = c.name if safe(c.name) not in namer.taken else f"{t.name}_{c.name}"
                        self.ctor_name[(t.decl, c.name)] = namer.fresh(n)
                elif t.is_tool_type:
                    self.type_name[t.decl] = namer.fresh(t.name)  # its descriptor, rt.T.Token
            for f in _decl_order(m.fns.values()):
                if f.is_tool:
                    self.fn_name[f.decl] = namer.fresh(f.name)
                    self.spec_name[f.decl] = namer.generated("_" + (f.name.lstrip("_").upper() or "SPEC"))
                elif f.node is not None and f.node.body is not None:
                    self.fn_name[f.decl] = namer.fresh(f.name)
                    if f.effect == "poly":
                        self.tool_variant[f.decl] = namer.generated("_" + self.fn_name[f.decl] + "__tool")
        for group in tail_groups(prog):
            if any(d in self.typed for d in group):
                continue  # a merged loop has no slot for `_targs`: these stay separate functions
            key = prog.fn_decls[group[0]].module
            n = self.globals[key].generated("_" + "__".join(self.fn_name[d] for d in group))
            for d in group:
                self.groups[d] = group
                self.group_name[d] = n
        for key in prog.modules:
            # any module may name another's declarations (a type in a descriptor, a method's
            # home module): an alias for each, used only where imported
            for other in sorted(prog.modules):
                if other != key and other not in self.aliases[key]:
                    last = self.module_path[other].rsplit(".", 1)[-1]
                    self.aliases[key][other] = self.globals[key].generated("_" + last)
        # the package's __init__: its own names, the top-level submodules, an alias per module
        init = Namer(
            {"rt", "SOURCES", "MODULES", "FILES", "PROGRAM"}
            | {p.split(".", 1)[0] for p in self.module_path.values()}
        )
        self.init_aliases = {
            k: init.generated("_" + self.module_path[k].rsplit(".", 1)[-1]) for k in sorted(prog.modules)
        }
        self.bouncing = bouncing_functions(prog, self.groups)


def _decl_order(infos):
    return sorted(infos, key=lambda i: i.node.span.start if i.node is not None else -1)


class ModuleGen:
    def __init__(self, names: ProgramNames, key: str):
        self.names = names
        self.prog = names.prog
        self.key = key
        self.mod = self.prog.modules[key]
        self.path = names.module_path[key]
        self.flow_file = key + ".flow"
        self.namer = names.globals[key]
        self.imports: dict[str, str] = {}  # module key -> local alias (the modules used)
        self.alias_table = names.aliases[key]  # module key -> its name here (ProgramNames)
        self.home: object = key  # declarations of this module are referred to unqualified

    # ---- references to declarations -----------------------------------------------------------

    def module_alias(self, key: str) -> str:
        if key not in self.imports:
            self.imports[key] = self.alias_table[key]
        return self.imports[key]

    def ref(self, decl_module: str, pyname: str) -> py.Expr:
        if decl_module == self.home:
            return py.name(pyname)
        return py.attr(py.name(self.module_alias(decl_module)), pyname)

    def type_info(self, decl: str) -> P.TypeInfo:
        return self.prog.type_decls[decl]

    def ctor_class(self, type_decl: str, ctor: str) -> py.Expr:
        info = self.type_info(type_decl)
        if info.lang:
            return py.dotted(runtime_namespace(info.lang) + RUNTIME_CLASS.get(ctor, ctor))
        return self.ref(info.module, self.names.ctor_name[(type_decl, ctor)])

    def ctor_value(self, type_decl: str, ctor: str) -> py.Expr:
        """A constructor used as a value: the class (callable), or the single instance of a
        constructor without payload."""
        info = self.type_info(type_decl)
        c = next((c for c in info.ctors if c.name == ctor), None)
        if c is not None and not c.params:
            if info.lang:
                return py.dotted(runtime_namespace(info.lang) + ctor.upper())
            return py.attr(self.ctor_class(type_decl, ctor), "INSTANCE")
        return self.ctor_class(type_decl, ctor)

    def ctor_fields(self, type_decl: str, ctor: str) -> list[str]:
        info = self.type_info(type_decl)
        if info.kind == "record":
            return [f.name for f in info.fields]
        c = next(c for c in info.ctors if c.name == ctor)
        return list(c.field_names or [])

    def ctor_attrs(self, type_decl: str, ctor: str) -> list[str]:
        """The Python attribute names of a constructor's fields, in declared order (`_0, _1, ...`
        for a positional payload)."""
        info = self.type_info(type_decl)
        if info.kind == "record":
            return [self.field_name(f.name) for f in info.fields]
        c = next(c for c in info.ctors if c.name == ctor)
        if c.field_names:
            return [self.field_name(n) for n in c.field_names]
        return [f"_{i}" for i in range(len(c.params))]

    def field_name(self, n: str) -> str:
        return safe(n)

    def fn_value(self, decl: str, variant: str) -> py.Expr:
        info = self.prog.fn_decls[decl]
        if info.node is None or info.node.body is None:
            if info.is_tool:
                return self.ref(info.module, self.names.fn_name[decl])
            n = "rt.lang." + (info.lang or info.name).replace(".", "_")
            return py.dotted(n + ("__tool" if info.effect == "poly" and variant == "tool" else ""))
        if info.effect == "poly" and variant == "tool":
            return self.ref(info.module, self.names.tool_variant[decl])
        return self.ref(info.module, self.names.fn_name[decl])

    def spec_ref(self, decl: str) -> py.Expr:
        info = self.prog.fn_decls[decl]
        return self.ref(info.module, self.names.spec_name[decl])

    # ---- type descriptors -----------------------------------------------------------------------

    def desc(self, t, targs: tuple[str, str] | None = None) -> py.Expr:
        """The type descriptor of `t`. `targs` is (owner decl, Python name) inside a function
        that takes its type arguments at run time: its own type parameters are read from them
        (`_targs[0]`); elsewhere a type parameter is `rt.T.Var(i)` of its declaration."""
        T = "rt.T."
        if isinstance(t, P.TCon):
            info = self.prog.type_decls.get(t.decl)
            args = [self.desc(a, targs) for a in t.args]
            if info is None:
                raise CodegenError(f"unknown type {t.decl}")
            if info.lang in SCALARS:
                return py.dotted(T + info.lang.upper())
            if info.lang in COLLECTIONS:
                return py.call(py.dotted(T + COLLECTIONS[info.lang]), args)
            if info.is_tool_type:
                return self.ref(info.module, self.names.type_name[info.decl])
            if info.kind == "alias" and info.alias is not None:
                from flow2py.check.typeterms import subst

                mapping = {P.TParam(n, info.decl): a for n, a in zip(info.type_params, t.args)}
                return self.desc(subst(info.alias, mapping), targs)
            if info.lang and info.kind == "abstract" and not info.is_data:
                return py.const(None)  # a bodyless type std does not mark "data" (Task<T>): no descriptor
            return py.call(
                py.dotted(T + "Named"), [self.ref(info.module, self.names.type_name[info.decl])] + args
            )
        if isinstance(t, P.TParam):
            owner = self.prog.type_decls.get(t.owner) or self.prog.fn_decls.get(t.owner)
            i = owner.type_params.index(t.name) if owner is not None and t.name in owner.type_params else 0
            if targs is not None and targs[0] == t.owner:
                return cst.Subscript(
                    value=py.name(targs[1]),
                    slice=[cst.SubscriptElement(slice=cst.Index(value=py.integer(i)))],
                )
            return py.call(py.dotted(T + "Var"), [py.integer(i)])
        if isinstance(t, P.TTuple):
            return py.call(py.dotted(T + "TupleOf"), [self.desc(a, targs) for a in t.items])
        return py.const(None)  # functions and tasks are not data: no descriptor

    # ---- the module -----------------------------------------------------------------------------

    def generate(self) -> cst.Module:
        body: list = []
        for t in _decl_order(self.mod.types.values()):
            body += self.type_decl(t)
        field_types: list = []
        for t in _decl_order(self.mod.types.values()):
            field_types += self.field_types(t)
        body += field_types
        for f in _decl_order(self.mod.fns.values()):
            if f.is_tool:
                body += self.tool_decl(f)
        for f in _decl_order(self.mod.fns.values()):
            if f.is_tool or f.node is None or f.node.body is None:
                continue
            body += self.function(f)
        head = [py.import_rt()]
        for key in sorted(self.imports, key=lambda k: self.names.module_path[k]):
            head.append(self.import_stmt(key, self.imports[key]))
        header = [
            f"# Generated by flow2py from {self.flow_file}; do not edit (rebuild instead).",
            "# `# flow: FILE:LINE` marks the Flow line each statement comes from; loaded with",
            "# flowrt.load_generated, tracebacks and pdb show those lines.",
        ]
        return py.module(head + body, header)

    def import_stmt(self, key: str, alias: str) -> cst.SimpleStatementLine:
        mine = self.path.split(".")[:-1]
        target = self.names.module_path[key].split(".")
        level = len(mine) + 1
        package = ".".join(target[:-1]) or None
        return py.from_import(level, package, target[-1], alias)

    # ---- data classes -----------------------------------------------------------------------------

    def type_decl(self, t: P.TypeInfo) -> list:
        mark = f"# flow: {self.flow_file}:{t.node.span.line}" if t.node is not None else None
        if t.lang and t.kind == "enum":
            # std's built-in enums are the runtime's classes
            ns = runtime_namespace(t.lang)
            out = [py.assign(py.name(self.names.type_name[t.decl]), py.dotted(ns + t.name), mark)]
            for c in t.ctors:
                out.append(
                    py.assign(
                        py.name(self.names.ctor_name[(t.decl, c.name)]),
                        py.dotted(ns + RUNTIME_CLASS.get(c.name, c.name)),
                        mark,
                    )
                )
            return out
        if t.kind == "record" and not t.lang:
            name = self.names.type_name[t.decl]
            fields = [self.field_name(f.name) for f in t.fields]
            kw = {"fields": py.tuple_([py.string(f) for f in fields])}
            kw.update(_names_kw([f.name for f in t.fields], fields))
            deco = py.call(py.dotted("rt.record"), [py.string(t.decl)], **kw)
            return [self._class(name, "rt.Record", fields, [deco], mark, opaque=t.opaque)]
        if t.kind == "enum":
            base = self.names.type_name[t.decl]
            out = [
                self._class(
                    base,
                    "rt.Enum",
                    [],
                    [],
                    mark,
                    opaque=t.opaque,
                    doc=f"The enum {t.name}: its constructors are the classes below.",
                )
            ]
            for c in t.ctors:
                cname = self.names.ctor_name[(t.decl, c.name)]
                fields = (
                    [self.field_name(n) for n in c.field_names]
                    if c.field_names
                    else [f"_{i}" for i in range(len(c.params))]
                )
                kw = {"tag": py.integer(c.tag), "fields": py.tuple_([py.string(f) for f in fields])}
                if c.field_names:
                    kw.update(_names_kw(list(c.field_names), fields))
                    if fields == [f"_{i}" for i in range(len(fields))]:
                        # declared with named fields that look positional (`Wrap { _0: Int }`):
                        # the runtime would take `_0, _1, ...` for a positional payload
                        kw["named"] = py.const(True)
                deco = py.call(py.dotted("rt.variant"), [py.string(t.decl), py.string(c.name)], **kw)
                out.append(self._class(cname, base, fields, [deco], mark))
            return out
        if t.is_tool_type:
            # a host token type has no class; its descriptor is named like the type, so that the
            # program's class table knows it by name (restoring type arguments, abi.md)
            name = self.names.type_name[t.decl]
            return [py.assign(py.name(name), py.call(py.dotted("rt.T.Token"), [py.string(t.decl)]), mark)]
        return []  # aliases are transparent; @lang types have no class

    def _class(self, name, base, fields, decorators, mark, doc=None, opaque=False) -> cst.ClassDef:
        slots = py.assign(py.name("__slots__"), py.tuple_([py.string(f) for f in fields]), None)
        body = [slots]
        if opaque:
            body.append(py.assign(py.name("__flow_opaque__"), py.const(True), None))
        if doc:
            body.insert(0, py.expr_stmt(py.string(doc), None))
        return cst.ClassDef(
            name=cst.Name(name),
            bases=[cst.Arg(value=py.dotted(base))],
            body=py.block(body, mark),
            decorators=[cst.Decorator(decorator=d) for d in decorators],
        )

    def field_types(self, t: P.TypeInfo) -> list:
        """`Cls.__flow_field_types__ = (desc, ...)` once every class of the module exists (a field
        may refer to a class declared later, or to its own class)."""
        if t.lang or t.kind not in ("record", "enum"):
            return []
        out = []
        if t.kind == "record":
            items = [(self.names.type_name[t.decl], [f.type for f in t.fields])]
        else:
            items = [(self.names.ctor_name[(t.decl, c.name)], list(c.params)) for c in t.ctors if c.params]
        for cname, types in items:
            descs = py.tuple_([self.desc(x) for x in types])
            out.append(py.assign(py.attr(py.name(cname), "__flow_field_types__"), descs, None))
        return out

    # ---- Tools ------------------------------------------------------------------------------------

    def tool_decl(self, f: P.FnInfo) -> list:
        mark = f"# flow: {self.flow_file}:{f.node.span.line}" if f.node is not None else None
        spec = self.names.spec_name[f.decl]
        qualified = self.key.rsplit("/", 1)[-1] + "." + f.name
        kw = {
            "params": py.tuple_([py.string(n) for n, _ in f.params]),
            "result": self.desc(f.result),
        }
        if f.type_params:
            kw["type_params"] = py.integer(len(f.type_params))
        out = [
            py.assign(
                py.name(spec),
                py.call(py.dotted("rt.ToolSpec"), [py.string(f.decl), py.string(qualified)], **kw),
                mark,
            )
        ]
        # the Tool as a function value (passed, stored, mapped over, spawned): a generator making
        # the call; its whole body is the call, so a task running it is parkable (abi.md)
        pnames = Namer(self.namer.taken)
        params = [pnames.fresh(n) for n, _ in f.params]
        kw = {}
        if f.decl in self.names.typed:  # a generic Tool's value is given its type arguments
            kw["type_args"] = py.name(TARGS)
        request = py.call(
            py.dotted("rt.ParkCall"), [py.name(spec), py.tuple_([py.name(p) for p in params])], **kw
        )
        body = [py.return_(py.yield_(request), mark)]
        if kw:
            params = [TARGS] + params
        out.append(
            py.def_(
                self.names.fn_name[f.decl],
                [py.param(p) for p in params],
                body,
                mark,
                decorators=[self._fn_decorator(f)],
            )
        )
        return out

    def _fn_decorator(self, f: P.FnInfo) -> py.Expr:
        # `types`: the parameters' descriptors, against which the runtime checks a stored Start
        # input or checkpoint's arguments before the function sees them (docs/spec/trace.md)
        kw = {
            "params": py.tuple_([py.string(n) for n, _ in f.params]),
            "types": py.tuple_([self.desc(t) for _, t in f.params]),
        }
        if f.decl in self.names.typed:
            kw["typed"] = py.const(True)
        return py.call(py.dotted("rt.fn"), [py.string(f.decl)], **kw)

    # ---- functions --------------------------------------------------------------------------------

    def function(self, f: P.FnInfo) -> list:
        if f.decl in self.names.groups:
            return self.group_member(f)
        variants = ["pure", "tool"] if f.effect == "poly" else [("tool" if f.effect == "tool" else "pure")]
        out = []
        for v in variants:
            name = (
                self.names.tool_variant[f.decl]
                if (f.effect == "poly" and v == "tool")
                else self.names.fn_name[f.decl]
            )
            out.append(self.function_variant(f, v, name))
            if v == "pure" and f.decl in self.names.bouncing:
                out.append(self._bouncing(name, f))
        return out

    def _bouncing(self, name: str, f: P.FnInfo):
        """`name = rt.bouncing(name)`: its `rt.Tail` returns run in one loop (codegen.md)."""
        mark = f"# flow: {self.flow_file}:{f.node.span.line}"
        return py.assign(py.name(name), py.call(py.dotted("rt.bouncing"), [py.name(name)]), mark)

    def _self_calls(self, f: P.FnInfo, variant: str) -> set[int]:
        """Tail calls of `f` to itself that become `continue` of a `while True:` loop. An effectful
        one stays a `rt.TailCall` at a site where a checkpoint can be taken: there the runtime
        must see the call."""
        eligible = {c.call for c in self.prog.checkpoints if c.eligible}
        out = set()
        for cid, callee in tail_callees(self.prog, f).items():
            if callee != f.decl:
                continue
            if variant == "tool" and cid in eligible:
                continue
            out.add(cid)
        return out

    def function_variant(self, f: P.FnInfo, variant: str, name: str) -> cst.FunctionDef:
        mark = f"# flow: {self.flow_file}:{f.node.span.line}"
        namer = Namer(self.namer.taken)
        body = new_body(self, namer, variant)
        body.ctx.bouncing = variant == "pure" and f.decl in self.names.bouncing
        params = [bind(body, p.id, p.name) for p in f.node.params]
        if f.decl in self.names.typed:
            namer.taken.add(TARGS)  # a generated name of its own (names.py): never handed out here
            body.targs = (f.decl, TARGS)
            params = [TARGS] + params
        self_calls = self._self_calls(f, variant)
        if self_calls:
            body.ctx.loop = Loop(decl=f.decl, params={f.decl: params}, index={}, self_calls=self_calls)
        stmts = to_sink(body, f.node.body, RETURN)
        if self_calls:
            stmts = [py.while_true(stmts, mark)]
        if body.ctx.generator and not body.ctx.has_yield:
            stmts.append(_generator_marker())
        return py.def_(name, [py.param(p) for p in params], stmts, mark, decorators=[self._fn_decorator(f)])

    def group_member(self, f: P.FnInfo) -> list:
        """A member of a merged tail-call group: a thin entry that starts the group's loop with
        this member selected; the loop function itself follows the first member."""
        group = self.names.groups[f.decl]
        loop_name = self.names.group_name[f.decl]
        mark = f"# flow: {self.flow_file}:{f.node.span.line}"
        namer = Namer(self.namer.taken)
        params = [namer.fresh(p.name) for p in f.node.params]
        idx = group.index(f.decl)
        args = [py.integer(idx)]
        for d in group:
            if d == f.decl:
                args += [py.name(p) for p in params]
            else:
                args += [py.const(None)] * len(self.prog.fn_decls[d].params)
        entry = py.def_(
            self.names.fn_name[f.decl],
            [py.param(p) for p in params],
            [py.return_(py.call(py.name(loop_name), args), mark)],
            mark,
            decorators=[self._fn_decorator(f)],
        )
        out = [entry]
        if f.decl in self.names.bouncing:
            out.append(self._bouncing(self.names.fn_name[f.decl], f))
        if idx == 0:
            out.append(self.group_loop(group, loop_name))
        return out

    def group_loop(self, group: list[str], loop_name: str) -> cst.FunctionDef:
        infos = [self.prog.fn_decls[d] for d in group]
        namer = Namer(self.namer.taken | {"_fn"})
        bodies = []
        all_params: list[str] = []
        member_params: dict[str, list[str]] = {}
        for info in infos:
            b = new_body(self, namer, "pure")
            b.ctx.bouncing = info.decl in self.names.bouncing
            ps = [bind(b, p.id, p.name) for p in info.node.params]
            member_params[info.decl] = ps
            all_params += ps
            bodies.append(b)
        index = {d: i for i, d in enumerate(group)}
        branches = []
        for info, b in zip(infos, bodies):
            calls = {cid for cid, callee in tail_callees(self.prog, info).items() if callee in index}
            b.ctx.loop = Loop(decl=info.decl, params=member_params, index=index, self_calls=calls, group=True)
            stmts = to_sink(b, info.node.body, RETURN)
            branches.append((info, stmts))
        chain: list = []
        for i in reversed(range(len(branches))):
            info, stmts = branches[i]
            mark = f"# flow: {self.flow_file}:{info.node.span.line}"
            if not chain:
                chain = stmts  # the last member needs no test: `_fn` can only select it here
            else:
                chain = [py.if_(py.binop("==", py.name("_fn"), py.integer(i)), stmts, chain, mark)]
        first = infos[0]
        mark = f"# flow: {self.flow_file}:{first.node.span.line}"
        doc = py.expr_stmt(
            py.string(
                "The tail calls among "
                + ", ".join(i.name for i in infos)
                + " run as one loop: `_fn` selects the function, its parameters are rebound."
            ),
            None,
        )
        return py.def_(
            loop_name,
            [py.param("_fn")] + [py.param(p) for p in all_params],
            [doc, py.while_true(chain, mark)],
            mark,
        )


def _names_kw(flow_names: list, attrs: list) -> dict:
    """`names=(...)` for `rt.record`/`rt.variant` whenever an attribute differs from its Flow
    field name, or a Flow name ends in `_` (the runtime's default strips the `_` of a renamed
    keyword, so `from_` alone would read as `from`)."""
    if all(a == n and not n.endswith("_") for a, n in zip(attrs, flow_names)):
        return {}
    return {"names": py.tuple_([py.string(n) for n in flow_names])}
