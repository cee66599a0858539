"""What the language server answers, from one check of a document (no protocol here: server.py
turns these into LSP messages). Positions are character offsets into the document's real text;
spans are the checker's (flow2py/span.py), in real coordinates once `EditorCheck.to_real` mapped
them (docs/spec/editor.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from flow2py.check.typed import (
    CheckedProgram,
    CtorRef,
    Effect,
    FieldRef,
    FnInfo,
    FnRef,
    LocalRef,
    MethodRef,
    ModuleRef,
    TCon,
    TFun,
    TypeInfo,
)
from flow2py.check.typeterms import show
from flow2py.lsp.incremental import EditorCheck
from flow2py.syntax import ast

_SKIP = frozenset({"span", "id", "name_span", "source"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(n):
    names = _FIELDS.get(type(n))
    if names is None:
        names = _FIELDS[type(n)] = tuple(f.name for f in fields(n) if f.name not in _SKIP)
    out = []
    stack = [getattr(n, k) for k in names]
    while stack:
        x = stack.pop(0)
        if isinstance(x, ast.Node):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            stack[0:0] = list(x)
    return out


def _contains(s: ast.Span, off: int) -> bool:
    return s.line > 0 and s.start <= off <= s.end


def node_path(check: EditorCheck, offset: int) -> list[ast.Node]:
    """The nodes of the entry module around the real `offset`, outermost first."""
    mod = _entry_ast(check)
    if mod is None:
        return []
    v = check.to_virtual(offset)
    path: list[ast.Node] = []
    layer = [*mod.uses, *mod.decls]
    while True:
        inner = [n for n in layer if _contains(n.span, v)]
        if not inner:
            return path
        # a span's end is exclusive: the cursor on the `(` after `f` is on the call, not on `f`
        inner = [n for n in inner if v < n.span.end or n.span.start == n.span.end]
        if not inner:
            return path
        # the narrowest: a zero-width neighbour never hides the node the cursor is in
        n = min(inner, key=lambda n: n.span.end - n.span.start)
        path.append(n)
        layer = _children(n)


def _entry_ast(check: EditorCheck) -> ast.Module | None:
    for m in check.modules:
        if m.key == check.entry_key:
            return m.ast
    return None


def _on_name(n, v: int) -> bool:
    s = getattr(n, "name_span", None)
    return s is not None and _contains(s, v)


# -- hover ---------------------------------------------------------------------------------------


def signature(fn: FnInfo) -> str:
    tps = f"<{', '.join(fn.type_params)}>" if fn.type_params else ""
    params = ", ".join(f"{n}: {show(t)}" for n, t in fn.params)
    eff = " !tool" if fn.effect == Effect.TOOL else ""
    ann = "@tool " if fn.is_tool else ""
    return f"{ann}{'pub ' if fn.pub else ''}flow {fn.name}{tps}({params}) -> {show(fn.result)}{eff}"


def type_header(info: TypeInfo) -> str:
    tps = f"<{', '.join(info.type_params)}>" if info.type_params else ""
    return f"{'pub ' if info.pub else ''}type {info.name}{tps} ({info.kind}, {info.module})"


_EFFECT_WORDS = {
    Effect.PURE: "pure",
    Effect.TOOL: "tool: may reach a Tool",
    Effect.POLY: "poly: as effectful as the callbacks it is given",
}


def hover(check: EditorCheck, text: str, offset: int) -> str | None:
    """Markdown: the type (and effect) of what is under the cursor."""
    prog = check.program
    if prog is None:
        return None
    path = node_path(check, offset)
    v = check.to_virtual(offset)
    for n in reversed(path):
        if isinstance(n, ast.FnDecl) and _on_name(n, v):
            fn = _fn_of_node(prog, n)
            return _code(signature(fn)) if fn else None
        if isinstance(n, ast.TypeDecl) and _on_name(n, v):
            info = _type_of_node(prog, n)
            return _code(type_header(info)) if info else None
        if isinstance(n, ast.TypeName):
            info = resolve_type_name(check, n)
            if info is not None:
                return _code(type_header(info))
            continue
        ref = prog.refs.get(n.id)
        if isinstance(ref, ModuleRef):
            return _code(f'use "{_use_path(check, n, ref.key)}"') + f"\n\nmodule `{ref.key}`"
        t = prog.types.get(n.id)
        if t is None:
            continue
        if isinstance(ref, (FnRef, MethodRef)) and ref.decl in prog.fn_decls:
            fn = prog.fn_decls[ref.decl]
            lines = [_code(signature(fn))]
            if prog.type_args.get(n.id):
                lines.append("here: `" + show(t) + "`")
            return "\n\n".join(lines)
        label = _label(n, check, text)
        out = [_code(f"{label}: {show(t)}" if label else show(t))]
        eff = prog.effects.get(n.id)
        if eff is None and isinstance(t, TFun):
            eff = t.effect
        if eff is not None and isinstance(n, (ast.Call, ast.Lambda, ast.Try)) or isinstance(t, TFun):
            out.append("effect: " + _EFFECT_WORDS.get(eff, str(eff)))
        return "\n\n".join(out)
    return None


def _use_path(check: EditorCheck, n, key: str) -> str:
    for m in check.modules:
        if m.key == check.entry_key:
            for alias, use in m.alias_uses.items():
                if m.aliases.get(alias) == key:
                    return use.path
    return key


def _label(n, check: EditorCheck, text: str) -> str:
    if isinstance(n, (ast.Name, ast.BindPattern, ast.Param)):
        return n.name
    if isinstance(n, ast.FieldAccess):
        return n.name
    s = check.to_real(n.span)
    piece = text[s.start : s.end]
    return piece if len(piece) <= 40 and "\n" not in piece else ""


def _code(s: str) -> str:
    return f"```flow\n{s}\n```"


def _fn_of_node(prog: CheckedProgram, node) -> FnInfo | None:
    for fn in prog.fn_decls.values():
        if fn.node is node:
            return fn
    return None


def _type_of_node(prog: CheckedProgram, node) -> TypeInfo | None:
    for info in prog.type_decls.values():
        if info.node is node:
            return info
    return None


def resolve_type_name(check: EditorCheck, n: ast.TypeName) -> TypeInfo | None:
    prog = check.program
    cm = prog.modules.get(check.entry_key) if prog else None
    if cm is None:
        return None
    if n.module:
        key = cm.aliases.get(n.module)
        other = prog.modules.get(key) if key else None
        return other.types.get(n.name) if other else None
    if n.name in cm.types:
        return cm.types[n.name]
    for key, m in prog.modules.items():  # the prelude: std's `pub` types every module sees
        if key.startswith(prog.std_version + "/") and n.name in m.types and m.types[n.name].pub:
            return m.types[n.name]
    return None


# -- definition ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    file: str  # a path on disk
    span: ast.Span


def definition(check: EditorCheck, offset: int) -> Place | None:
    prog = check.program
    if prog is None:
        return None
    path = node_path(check, offset)
    for n in reversed(path):
        if isinstance(n, ast.TypeName):
            info = resolve_type_name(check, n)
            if info is not None and info.node is not None:
                return _place(check, info.module, info.node.name_span)
            continue
        if isinstance(n, ast.Use):
            cm = prog.modules.get(check.entry_key)
            alias = n.path.rstrip("/").rsplit("/", 1)[-1]
            key = cm.aliases.get(alias) if cm else None
            return _module_place(check, key) if key else None
        ref = prog.refs.get(n.id)
        if ref is None:
            continue
        if isinstance(ref, LocalRef):
            for decl in path[:1]:
                for b in ast.walk(decl):
                    if b.id == ref.binder:
                        s = getattr(b, "name_span", None)
                        return _place(check, check.entry_key, s if s is not None and s.line else b.span)
            return None
        if isinstance(ref, (FnRef, MethodRef)):
            fn = prog.fn_decls.get(ref.decl)
            if fn is not None and fn.node is not None:
                return _place(check, fn.module, fn.node.name_span)
        if isinstance(ref, CtorRef):
            info = prog.type_decls.get(ref.type_decl)
            if info is not None and info.node is not None:
                for c in info.node.ctors:
                    if c.name == ref.ctor:
                        return _place(check, info.module, c.span)
                return _place(check, info.module, info.node.name_span)
        if isinstance(ref, FieldRef):
            info = prog.type_decls.get(ref.type_decl)
            if info is not None and info.node is not None:
                for f in info.node.fields:
                    if f.name == ref.field:
                        return _place(check, info.module, f.span)
        if isinstance(ref, ModuleRef):
            return _module_place(check, ref.key)
        return None
    return None


def _module_file(check: EditorCheck, key: str):
    for m in check.modules:
        if m.key == key:
            return m
    return None


def _place(check: EditorCheck, key: str, span: ast.Span) -> Place | None:
    m = _module_file(check, key)
    if m is None:
        return None
    return Place(m.file, check.to_real(span) if key == check.entry_key else span)


def _module_place(check: EditorCheck, key: str) -> Place | None:
    m = _module_file(check, key)
    return Place(m.file, ast.Span(m.display, 1, 1, 1, 1, 0, 0)) if m else None


# -- document symbols ----------------------------------------------------------------------------


@dataclass
class Symbol:
    name: str
    kind: str  # function | record | enum | type | field | constructor
    span: ast.Span
    name_span: ast.Span
    detail: str = ""
    children: list = None


def symbols(check: EditorCheck) -> list[Symbol]:
    mod = _entry_ast(check)
    if mod is None:
        return []
    r = check.to_real
    prog = check.program
    out = []
    for d in mod.decls:
        ns = d.name_span if d.name_span.line else d.span
        if isinstance(d, ast.FnDecl):
            fn = _fn_of_node(prog, d) if prog else None
            out.append(Symbol(d.name, "function", r(d.span), r(ns), signature(fn) if fn else "", []))
            continue
        kind = d.kind if d.kind in ("record", "enum") else "type"
        kids = [Symbol(f.name, "field", r(f.span), r(f.span), "", []) for f in d.fields]
        for c in d.ctors:
            sub = [Symbol(f.name, "field", r(f.span), r(f.span), "", []) for f in c.named or ()]
            kids.append(Symbol(c.name, "constructor", r(c.span), r(c.span), "", sub))
        out.append(Symbol(d.name, kind, r(d.span), r(ns), "", kids))
    return out


# -- completion ----------------------------------------------------------------------------------

_CHAIN = re.compile(r"([a-z_][A-Za-z0-9_]*(?:\.[a-z_][A-Za-z0-9_]*)*)\.([A-Za-z0-9_]*)$")


@dataclass(frozen=True)
class Item:
    label: str
    kind: str  # function | type | constructor | field
    detail: str


def completion(check: EditorCheck, text: str, offset: int) -> list[Item]:
    """After `alias.`: what the module exports; after `value.`: the fields of its record type.
    `check` is the newest check with side tables (the text being typed rarely parses)."""
    prog = check.program
    if prog is None:
        return []
    line_start = text.rfind("\n", 0, offset) + 1
    m = _CHAIN.search(text[line_start:offset])
    if m is None:
        return []
    chain, prefix = m.group(1).split("."), m.group(2)
    cm = prog.modules.get(check.entry_key)
    items: list[Item] = []
    if len(chain) == 1 and cm is not None and chain[0] in cm.aliases:
        other = prog.modules.get(cm.aliases[chain[0]])
        if other is not None:
            items = _members(other)
    else:
        t = _local_type(check, chain[0], offset)
        for name in chain[1:]:
            t = _field_type(prog, t, name)
        if isinstance(t, TCon) and t.decl in prog.type_decls:
            info = prog.type_decls[t.decl]
            mine = info.module == check.entry_key
            items = [Item(f.name, "field", show(f.type)) for f in info.fields if f.pub or mine]
    return [i for i in items if i.label.startswith(prefix)]


def _members(cm) -> list[Item]:
    out = []
    for fn in cm.fns.values():
        if fn.pub:
            out.append(Item(fn.name, "function", signature(fn)))
    for info in cm.types.values():
        if not info.pub:
            continue
        out.append(Item(info.name, "type", type_header(info)))
        if not info.opaque:
            for c in info.ctors:
                out.append(Item(c.name, "constructor", f"{info.name}.{c.name}"))
    return sorted(out, key=lambda i: i.label)


def _local_type(check: EditorCheck, name: str, offset: int):
    """The type of the local `name` in scope at `offset`: its nearest binder before the cursor."""
    prog = check.program
    mod = _entry_ast(check)
    if mod is None:
        return None
    best = None
    around = None  # the function the cursor is in (or the nearest one above it)
    for d in mod.decls:
        if isinstance(d, ast.FnDecl):
            start = check.to_real(d.span).start
            if start <= offset and (around is None or start > around[0]):
                around = (start, d)
    if around is not None:
        for n in ast.walk(around[1]):
            if isinstance(n, (ast.Param, ast.BindPattern)) and n.name == name and n.id in prog.types:
                s = check.to_real(n.span).start
                if s <= offset and (best is None or s > best[0]):
                    best = (s, prog.types[n.id])
    return best[1] if best else None


def _field_type(prog: CheckedProgram, t, name: str):
    if isinstance(t, TCon) and t.decl in prog.type_decls:
        for f in prog.type_decls[t.decl].fields:
            if f.name == name:
                return f.type
    return None
