"""Declarations: what every module declares, before any body is read.

Four passes over all modules, each needing only the ones before it:
1. register every type name (duplicates, prelude names taken again);
2. resolve type bodies (fields, constructors, aliases, expanding aliases with cycle detection),
   then decide which types are data (a greatest fixpoint, so recursive types are data);
3. resolve function signatures and check annotations (@lang, @tool, @test, @fake: annotations.py);
4. index what the compiler finds by mechanism, never by name: types std marks `@lang`, the
   prelude (types marked "prelude" and their constructors), and operator functions.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from flow2py.check.annotations import (
    check_fake_scopes,
    check_fn_annotations,
    check_type_annotations,
    has_ann,
    lang_args,
    name_span,
)
from flow2py.check import codes
from flow2py.check import suggest as sg
from flow2py.check.modgraph import LoadedModule
from flow2py.check.typed import (
    POLY,
    PURE,
    TOOL,
    CheckedModule,
    CtorInfo,
    FieldInfo,
    FnInfo,
    TCon,
    TError,
    TFun,
    TParam,
    TTuple,
    Type,
    TypeInfo,
)
from flow2py.check.typeterms import has_effect, subst
from flow2py.diagnostics import Problems, Related
from flow2py.syntax import ast

# The type each literal kind of the syntax builds, by the std mark (`@lang` name) of that type
# (docs/spec/stdlib.md). Listed, not derived from the names: a std type builds literals only when
# it is named here. (Not a flag on the std declaration: std's text is part of every program's
# identity, so a new flag would change every identity recorded so far.)
LITERAL_LANGS = {
    "int": "Int",
    "decimal": "Decimal",
    "text": "Text",
    "bytes": "Bytes",
    "bool": "Bool",
    "unit": "Unit",
    "duration": "Duration",
}
OPERATORS = {"+", "-", "*", "/", "%", "++", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "!"}


@dataclass
class ModEnv:
    key: str
    lm: LoadedModule
    cm: CheckedModule
    ctors: dict[str, tuple[TypeInfo, CtorInfo]] = field(default_factory=dict)
    used_aliases: set = field(default_factory=set)

    @property
    def is_std(self) -> bool:
        return self.lm.is_std


def ordinal(i: int) -> str:
    n = i + 1
    if 10 <= n % 100 <= 20:
        suf = "th"
    else:
        suf = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"


def suggest(name: str, candidates) -> list[str]:
    return difflib.get_close_matches(name, sorted(set(candidates)), n=3, cutoff=0.6)


def field_span(info, name: str):
    """Where field `name` of record type `info` is declared (the type's span if not found)."""
    for f in getattr(info.node, "fields", None) or ():
        if f.name == name:
            return f.span
    return info.node.span


class Declarations:
    """Every module's declarations and the global indexes built from them."""

    def __init__(self, modules: list[LoadedModule], problems: Problems) -> None:
        self.problems = problems
        self.envs: dict[str, ModEnv] = {}
        self.type_decls: dict[str, TypeInfo] = {}
        self.fn_decls: dict[str, FnInfo] = {}
        self.prelude_types: dict[str, TypeInfo] = {}
        self.prelude_ctors: dict[str, tuple[TypeInfo, CtorInfo]] = {}
        self.lang_types: dict[str, TypeInfo] = {}  # lang name -> type
        self.literal_types: dict[str, TypeInfo] = {}  # literal kind -> type
        self.home_ops: dict[tuple[str, str, int], FnInfo] = {}
        self.generic_ops: dict[tuple[str, int], FnInfo] = {}
        self.generic_fns: dict[
            str, FnInfo
        ] = {}  # name -> pub std fn whose first parameter is a type parameter
        self.data_params: dict[str, set[str]] = {}  # fn decl -> type params that must be data
        self.used: set[str] = set()  # declaration ids referenced from another declaration
        self.missing_uses: set[tuple[str, str]] = set()  # (module, alias) said to need a `use`
        self.suggest_cache: dict = {}  # what each module can see, for suggestions (suggest.py)
        self._alias_state: dict[str, int] = {}
        self._con0: dict[str, TCon] = {}
        for lm in modules:
            cm = CheckedModule(lm.key, lm.ast, {a: k for a, k in lm.aliases.items() if k is not None})
            self.envs[lm.key] = ModEnv(lm.key, lm, cm)

    # -- helpers --------------------------------------------------------------------------

    def name_of(self, decl: str) -> str:
        return decl.rsplit("::", 1)[-1]

    def unit(self) -> Type:
        info = self.lang_types.get("Unit")
        return self.con0(info.decl) if info else TError()

    def con0(self, decl: str) -> TCon:
        """`TCon(decl)`, one shared object per declaration (types are immutable values)."""
        t = self._con0.get(decl)
        if t is None:
            t = self._con0[decl] = TCon(decl)
        return t

    def lang_con(self, lang: str, *args: Type) -> Type:
        info = self.lang_types.get(lang)
        if info is None or len(info.type_params) != len(args):
            return TError()
        if not args:
            return self.con0(info.decl)
        return TCon(info.decl, tuple(args))

    def is_lang(self, t, lang: str) -> bool:
        info = self.lang_types.get(lang)
        return info is not None and type(t) is TCon and t.decl == info.decl

    # -- pass 1: type names ---------------------------------------------------------------

    def run(self) -> None:
        for env in self.envs.values():
            self._register_types(env)
        for info in self.type_decls.values():
            la = lang_args(info.node.annotations) if info.node else None
            if la and self.envs[info.module].is_std:
                info.lang = la[0]
                if la[0]:
                    self.lang_types[la[0]] = info
                if "prelude" in la[1:]:
                    self.prelude_types[info.name] = info
        for kind, lang in LITERAL_LANGS.items():
            if lang in self.lang_types:
                self.literal_types[kind] = self.lang_types[lang]
        for env in self.envs.values():
            self._check_prelude_clash(env)
        for info in self.type_decls.values():
            self._resolve_type_body(info)
        self._decide_data()
        for info in self.type_decls.values():
            if info.name in self.prelude_types and self.prelude_types[info.name] is info:
                for c in info.ctors:
                    self.prelude_ctors[c.name] = (info, c)
        for env in self.envs.values():
            for info in env.cm.types.values():
                for c in info.ctors:
                    if c.name in env.ctors or c.name in env.cm.fns:
                        self.problems.report(
                            codes.DuplicateDeclaration(self._ctor_span(info, c.name), c.name, "declaration")
                        )
                    else:
                        env.ctors[c.name] = (info, c)
        for env in self.envs.values():
            self._register_fns(env)
        self._index_ops()
        for env in self.envs.values():
            for fn in env.cm.fns.values():
                check_fn_annotations(self, env, fn)
            check_fake_scopes(self, env)

    def _ctor_span(self, info: TypeInfo, name: str) -> ast.Span:
        if info.node:
            for c in info.node.ctors:
                if c.name == name:
                    return c.span
            return name_span(info.node)
        return ast.NO_SPAN

    def _declared_twice(self, what: str, d, table: dict) -> bool:
        """E107 when a module declares `d`'s name a second time (the first one stays): True then."""
        if d.name not in table:
            return False
        self.problems.report(
            codes.DuplicateDeclaration(name_span(d), d.name, what),
            related=[Related("first declared here", name_span(table[d.name].node))],
        )
        return True

    def _register_types(self, env: ModEnv) -> None:
        for d in env.lm.ast.decls:
            if not isinstance(d, ast.TypeDecl):
                continue
            if self._declared_twice("type", d, env.cm.types):
                continue
            decl = f"{env.key}::{d.name}"
            info = TypeInfo(
                decl,
                env.key,
                d.name,
                d.kind,
                list(d.type_params),
                d.pub,
                d.opaque,
                True,
                is_tool_type=has_ann(d.annotations, "tool"),
                node=d,
            )
            env.cm.types[d.name] = info
            self.type_decls[decl] = info
            seen = set()
            for p in d.type_params:
                if p in seen:
                    self.problems.report(codes.DuplicateDeclaration(name_span(d), p, "type parameter"))
                seen.add(p)

    def _check_prelude_clash(self, env: ModEnv) -> None:
        if env.is_std:
            return
        prelude_ctor_names = set()
        for info in self.prelude_types.values():
            if info.node:
                prelude_ctor_names.update(c.name for c in info.node.ctors)
        for info in env.cm.types.values():
            d = info.node
            if d.name in self.prelude_types:
                self.problems.report(codes.PreludeNameRedeclared(name_span(d), d.name, ctor=False))
                self.used.add(info.decl)  # reported once: not also E405
            for c in d.ctors:
                if c.name in prelude_ctor_names:
                    self.problems.report(codes.PreludeNameRedeclared(c.span, c.name, ctor=True))

    # -- type expressions -----------------------------------------------------------------

    def resolve_texpr(
        self, te, env: ModEnv, tparams: dict[str, TParam], in_param: bool, user: str | None
    ) -> Type:
        if isinstance(te, ast.TypeName):
            return self._resolve_name(te, env, tparams, in_param, user)
        if isinstance(te, ast.TupleType):
            if not te.items:
                return self.unit()
            # `(T,)` is a one-element tuple (grammar.md); grouping `(T)` never reaches here
            return TTuple(tuple(self.resolve_texpr(x, env, tparams, in_param, user) for x in te.items))
        if isinstance(te, ast.FunctionType):
            eff = te.effect
            effect = TOOL if eff == "tool" else PURE if eff == "pure" else (POLY if in_param else PURE)
            return TFun(
                tuple(self.resolve_texpr(x, env, tparams, in_param, user) for x in te.params),
                self.resolve_texpr(te.result, env, tparams, in_param, user),
                effect,
            )
        return TError()

    def lookup_type(self, te: ast.TypeName, env: ModEnv, report: bool = True) -> TypeInfo | None:
        if te.module is not None:
            target = self.alias_env(env, te.module, te.span, report, member=te.name)
            if target is None:
                return None
            info = target.cm.types.get(te.name)
            if info is None:
                if report:
                    cands = [
                        sg.Candidate(n, sg.TYPE, sg._decl_span(i.node), target=(("decl", i.decl),))
                        for n, i in target.cm.types.items()
                        if i.pub or target is env
                    ]
                    sugg = sg.suggest(te.name, cands, sg.TYPE)
                    sg.count_as_used(self, env, sugg)
                    src = env.lm.ast.source or ""
                    head = sg.sub_span(te.span, src, te.module + ".")
                    at = None
                    if head is not None and src[head.end : head.end + len(te.name)] == te.name:
                        at = ast.Span(
                            te.span.file,
                            te.span.line,
                            head.end_column,
                            te.span.line,
                            head.end_column + len(te.name),
                            head.end,
                            head.end + len(te.name),
                        )
                    self.problems.report(
                        codes.UnknownMember(te.span, te.module, te.name, "type", sugg.said()),
                        related=sugg.related(),
                        fixes=sugg.fixes(at) if at is not None else [],
                    )
                return None
            if not info.pub and target is not env:
                if report:
                    self.problems.report(
                        codes.PrivateName(te.span, te.name, "type", module=te.module),
                        related=[Related("declared here without `pub`", name_span(info.node))],
                        fixes=sg.pub_fix(f"`{te.name}`", [sg.pub_edit(target.lm, info.node)]),
                    )
                    self.used.add(info.decl)  # reported once: not also E405 in its module
                return None
            return info
        info = env.cm.types.get(te.name) or self.prelude_types.get(te.name)
        if info is None and report:
            sugg = sg.suggest(te.name, sg.type_candidates(self, env), sg.TYPE)
            sg.count_as_used(self, env, sugg)
            src = env.lm.ast.source or ""
            at = sg.sub_span(te.span, src, te.name)
            self.problems.report(
                codes.UnknownType(te.span, te.name, sugg.said()),
                related=sugg.related(),
                fixes=sugg.fixes(at, sg.use_site(env.lm.ast)) if at is not None else [],
            )
        return info

    def alias_env(
        self, env: ModEnv, alias: str, span, report: bool = True, member: str | None = None
    ) -> ModEnv | None:
        """The module imported as `alias` (None: not imported, reported when `report`). `member`:
        the name used through it, which helps say which module a misspelled alias meant."""
        if alias in env.lm.aliases:
            env.used_aliases.add(alias)
            key = env.lm.aliases[alias]
            return self.envs.get(key) if key else None
        if report and not sg.failed_alias_near(env, alias):
            sugg = sg.suggest(alias, sg.module_candidates(self, env, member), sg.MODULE)
            if not self.first_missing_use(env, sugg):
                return None
            sg.count_as_used(self, env, sugg)
            src = env.lm.ast.source or ""
            at = sg.sub_span(span, src, alias)
            self.problems.report(
                codes.UnknownName(span, alias, "module", suggestion=sugg.said()),
                related=sugg.related(),
                fixes=sugg.fixes(at, sg.use_site(env.lm.ast)) if at is not None else [],
            )
        return None

    def first_missing_use(self, env: ModEnv, sugg) -> bool:
        """False when `sugg` says a module is not imported and that was said already in this
        module (a missing `use` is one mistake, however often the module is used)."""
        c = sugg.unique
        if c is None or c.text != sugg.name or c.use_path is None:
            return True
        key = (env.key, sugg.name)
        if key in self.missing_uses:
            return False
        self.missing_uses.add(key)
        return True

    def _resolve_name(self, te: ast.TypeName, env, tparams, in_param, user) -> Type:
        if te.module is None and te.name in tparams:
            if te.args:
                self.problems.report(codes.WrongTypeArity(te.span, te.name, given=len(te.args), param=True))
            return tparams[te.name]
        info = self.lookup_type(te, env)
        if info is None:
            for a in te.args:
                self.resolve_texpr(a, env, tparams, in_param, user)
            return TError()
        if user != info.decl:
            self.used.add(info.decl)
        args = [self.resolve_texpr(a, env, tparams, in_param, user) for a in te.args]
        n = len(info.type_params)
        if len(args) != n:
            self.problems.report(codes.WrongTypeArity(te.span, te.name, n, len(args)))
            args = (args + [TError()] * n)[:n]
        if info.kind == "alias":
            body = self._alias_body(info)
            return subst(body, {(info.decl, p): a for p, a in zip(info.type_params, args)})
        return TCon(info.decl, tuple(args))

    def _alias_body(self, info: TypeInfo) -> Type:
        state = self._alias_state.get(info.decl)
        if state == 2:
            return info.alias
        if state == 1:
            self.problems.report(codes.AliasCycle(name_span(info.node), info.name))
            info.alias = TError()
            self._alias_state[info.decl] = 2
            return info.alias
        self._alias_state[info.decl] = 1
        env = self.envs[info.module]
        tparams = {p: TParam(p, info.decl) for p in info.type_params}
        t = (
            self.resolve_texpr(info.node.alias, env, tparams, False, info.decl)
            if info.node.alias
            else TError()
        )
        if self._alias_state.get(info.decl) == 1:
            info.alias = t
            self._alias_state[info.decl] = 2
        return info.alias

    # -- pass 2: type bodies and data -----------------------------------------------------

    def _resolve_type_body(self, info: TypeInfo) -> None:
        d = info.node
        env = self.envs[info.module]
        tparams = {p: TParam(p, info.decl) for p in info.type_params}
        if d.kind == "alias":
            self._alias_body(info)
            return
        if d.kind == "record":
            seen = set()
            for f in d.fields:
                if f.name in seen:
                    self.problems.report(codes.DuplicateDeclaration(f.span, f.name, "field"))
                    continue
                seen.add(f.name)
                info.fields.append(
                    FieldInfo(f.name, self.resolve_texpr(f.type, env, tparams, False, info.decl), f.pub)
                )
        elif d.kind == "enum":
            seen = set()
            for i, c in enumerate(d.ctors):
                if c.name in seen:
                    self.problems.report(codes.DuplicateDeclaration(c.span, c.name, "constructor"))
                    continue
                seen.add(c.name)
                if c.named is not None:
                    names = []
                    params = []
                    for f in c.named:
                        if f.name in names:
                            self.problems.report(codes.DuplicateDeclaration(f.span, f.name, "field"))
                            continue
                        names.append(f.name)
                        params.append(self.resolve_texpr(f.type, env, tparams, False, info.decl))
                    info.ctors.append(CtorInfo(c.name, params, names, i))
                else:
                    params = [
                        self.resolve_texpr(t, env, tparams, False, info.decl) for t in (c.positional or [])
                    ]
                    info.ctors.append(CtorInfo(c.name, params, None, i))
        la = lang_args(d.annotations)
        if d.kind == "abstract":
            info.is_data = bool(la and "data" in la[1:] and env.is_std)
        check_type_annotations(self, env, info)

    def _decide_data(self) -> None:
        infos = [i for i in self.type_decls.values() if i.kind in ("record", "enum")]
        for i in self.type_decls.values():
            if i.kind == "alias":
                i.is_data = False  # never consulted: aliases are expanded
            if i.is_tool_type:
                i.is_data = False
        changed = True
        while changed:
            changed = False
            for i in infos:
                if not i.is_data:
                    continue
                types = [f.type for f in i.fields] + [p for c in i.ctors for p in c.params]
                if not all(self.is_data(t) for t in types):
                    i.is_data = False
                    changed = True

    def is_data(self, t, tokens: bool = False, params_ok: bool = True) -> bool:
        k = type(t)
        if k is TCon:
            info = self.type_decls.get(t.decl)
            if info is None:
                return True
            if not info.is_data and not (tokens and info.is_tool_type):
                return False
            return all(self.is_data(a, tokens, params_ok) for a in t.args)
        if k is TTuple:
            return all(self.is_data(a, tokens, params_ok) for a in t.items)
        if k is TFun:
            return False
        if k is TParam:
            return params_ok
        return True

    # -- pass 3: functions ----------------------------------------------------------------

    def _register_fns(self, env: ModEnv) -> None:
        for d in env.lm.ast.decls:
            if not isinstance(d, ast.FnDecl):
                continue
            if self._declared_twice("function", d, env.cm.fns):
                continue
            decl = f"{env.key}::{d.name}"
            tparams = {p: TParam(p, decl) for p in d.type_params}
            params = []
            seen = set()
            for p in d.params:
                if p.name in seen and p.name != "_":
                    self.problems.report(codes.DuplicateDeclaration(name_span(p), p.name, "parameter"))
                seen.add(p.name)
                t = self.resolve_texpr(p.type, env, tparams, True, decl) if p.type is not None else TError()
                params.append((p.name, t))
            result = self.resolve_texpr(d.result, env, tparams, False, decl)
            la = lang_args(d.annotations)
            is_tool = has_ann(d.annotations, "tool")
            poly = [i for i, (_, t) in enumerate(params) if has_effect(t, POLY)]
            if is_tool or d.effect == "tool":
                effect = TOOL
            elif poly:
                effect = POLY
            else:
                effect = PURE
            info = FnInfo(
                decl,
                env.key,
                d.name,
                list(d.type_params),
                params,
                result,
                effect,
                poly_params=poly if effect == POLY else [],
                pub=d.pub,
                is_tool=is_tool,
                lang=(la[0] if la and env.is_std else None),
                is_test=has_ann(d.annotations, "test"),
                node=d,
            )
            env.cm.fns[d.name] = info
            self.fn_decls[decl] = info
            req = set()
            if la and env.is_std:
                for flag in la[1:]:
                    if flag and flag.startswith("data:"):
                        req.add(flag[5:])
            if is_tool:
                req.update(d.type_params)
            if req:
                self.data_params[decl] = req
            if d.name in env.ctors:
                self.problems.report(codes.DuplicateDeclaration(name_span(d), d.name, "declaration"))

    def _index_ops(self) -> None:
        for fn in self.fn_decls.values():
            if not self.envs[fn.module].is_std:
                continue
            if fn.pub and fn.params and type(fn.params[0][1]) is TParam:
                # a generic method (std/data.flow): `x.f()` for any x whose home module has no `f`
                self.generic_fns.setdefault(fn.name, fn)
            la = lang_args(fn.node.annotations)
            if not la:
                continue
            for flag in la[1:]:
                if flag in OPERATORS:
                    arity = len(fn.params)
                    first = fn.params[0][1] if fn.params else None
                    if type(first) is TParam:
                        self.generic_ops[(flag, arity)] = fn
                    elif type(first) is TCon:
                        home = first.decl.split("::")[0]
                        self.home_ops[(home, flag, arity)] = fn

    def show(self, t) -> str:
        from flow2py.check.typeterms import show

        return show(t, self.name_of)
