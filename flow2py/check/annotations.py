"""Annotations (@lang, @tool, @test, @fake): reading them, and checking every type's and every
function's once the declarations are resolved (declare.py calls these with its Declarations,
`decls`, and a module's environment, `env`): unknown names, `@lang` outside std, a Tool's
signature (a Result of data), a `@test` with parameters or naming what is not a fake, a `@fake`
and the Tool it stands in for, and two fakes for one Tool in one scope (`check_fake_scopes`).
"""

from __future__ import annotations

from flow2py.check import codes
from flow2py.check.typed import FnInfo, TCon, TError, TFun, TParam, TTuple, TypeInfo
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.syntax import ast

ANNOTATIONS = ("lang", "tool", "test", "fake")


def lang_args(annotations: list[ast.Annotation]) -> list[str] | None:
    """The text arguments of `@lang(...)`, or None when there is no @lang."""
    for a in annotations:
        if a.name == "lang":
            out = []
            for x in a.args:
                if isinstance(x, ast.Literal) and x.kind == "text":
                    out.append(x.value)
                else:
                    out.append(None)
            return out
    return None


def name_span(node) -> ast.Span:
    """Where a declaration's name stands, or the whole node when the name has no place."""
    return node.name_span if node.name_span.line else node.span


def has_ann(annotations, name: str) -> bool:
    return any(a.name == name for a in annotations)


def _unknown_or_lang(decls, env, a: ast.Annotation) -> bool:
    """The checks every annotation gets, on a type or a function: an unknown name, and `@lang`
    outside std or with bad arguments. True when `a` is one of those (nothing more to check)."""
    if a.name not in ANNOTATIONS:
        decls.problems.report(codes.UnknownAnnotation(a.span, a.name))
        return True
    if a.name == "lang":
        if not env.is_std:
            decls.problems.report(codes.LangOutsideStd(a.span))
        else:
            _check_lang_args(decls, a)
        return True
    return False


def check_type_annotations(decls, env, info: TypeInfo) -> None:
    d = info.node
    span = name_span(d)
    for a in d.annotations:
        if _unknown_or_lang(decls, env, a):
            continue
        if a.name == "tool":
            if d.kind != "abstract":
                decls.problems.report(codes.ToolWithBody(a.span, "type", d.name))
            if a.args:
                decls.problems.report(codes.BadAnnotation(a.span, "tool-args"))
        else:
            decls.problems.report(codes.BadAnnotation(a.span, "on-type", annotation=a.name))
    if d.kind == "abstract" and not has_ann(d.annotations, "tool") and not has_ann(d.annotations, "lang"):
        decls.problems.report(codes.MissingBody(span, "type", d.name))


def _check_lang_args(decls, a: ast.Annotation) -> None:
    if not a.args or not all(isinstance(x, ast.Literal) and x.kind == "text" for x in a.args):
        decls.problems.report(codes.BadAnnotation(a.span, "lang-args"))


def check_fn_annotations(decls, env, fn: FnInfo) -> None:
    d = fn.node
    span = name_span(d)
    for a in d.annotations:
        if _unknown_or_lang(decls, env, a):
            continue
        if a.name == "tool":
            if d.body is not None:
                decls.problems.report(codes.ToolWithBody(a.span, "function", d.name))
            _check_tool_signature(decls, fn)
        elif a.name == "test":
            if d.params:
                decls.problems.report(codes.TestWithParams(span, d.name, len(d.params)))
            fn.test_fakes = _test_fakes(decls, env, a)
        elif a.name == "fake":
            _check_fake(decls, env, fn, a)
    if d.body is None and not fn.is_tool and not has_ann(d.annotations, "lang"):  # outside std: E502 said it
        decls.problems.report(codes.MissingBody(span, "function", d.name), fixes=_as_tool(decls, fn))


def _as_tool(decls, fn: FnInfo) -> list[Fix]:
    """A function without a body whose signature is a Tool's (a Result of data, data parameters):
    `@tool` before it, to review (a body may be what is missing, and a Tool's call gives its error
    as a ToolProblem, which its callers may not take)."""
    d = fn.node
    if not decls.is_lang(fn.result, "Result") or fn.type_params or not d.span.line:
        return []
    types = [t for _, t in fn.params] + list(fn.result.args)
    if not all(decls.is_data(t, tokens=True) for t in types):
        return []
    at = ast.Span(
        d.span.file, d.span.line, d.span.column, d.span.line, d.span.column, d.span.start, d.span.start
    )
    return [Fix("mark it `@tool` (implemented by the host)", (Edit(at, "@tool "),), False)]


def _test_fakes(decls, env, a: ast.Annotation) -> list[str]:
    """`@test(f, g)`: the names of the `@fake` functions of this module the test uses instead of
    the file's fakes for their Tools (testing.md, "Fakes per test")."""
    out = []
    for x in a.args:
        target = env.cm.fns.get(x.name) if isinstance(x, ast.Name) else None
        if target is None or target.node is None or not has_ann(target.node.annotations, "fake"):
            arg = x.name if isinstance(x, ast.Name) else None
            decls.problems.report(codes.BadAnnotation(x.span, "test-arg", arg=arg))
            continue
        out.append(x.name)
    return out


def check_fake_scopes(decls, env) -> None:
    """E511: two fakes for one Tool in one scope. A `@fake` function named by no `@test(...)` is
    the file's fake for its Tool; one named by a `@test(...)` serves only the tests naming it."""
    fns = env.cm.fns
    named = {n for fn in fns.values() for n in fn.test_fakes}

    def dup(first: FnInfo, second: FnInfo, where: ast.Span, test: str | None) -> None:
        tool = _fake_target(second) or decls.fn_decls[second.fake_of].name
        decls.problems.report(
            codes.DuplicateFake(where, second.name, first.name, tool, test),
            related=[Related(f"`{first.name}` fakes `{tool}` here", _fake_span(first))],
        )

    seen: dict[str, FnInfo] = {}
    for fn in fns.values():
        if fn.fake_of and not fn.fake_misfit and fn.name not in named:
            if fn.fake_of in seen:
                dup(
                    seen[fn.fake_of],
                    fn,
                    _fake_span(fn),
                    None,
                )
            else:
                seen[fn.fake_of] = fn
    for test in fns.values():
        mine: dict[str, FnInfo] = {}
        for name, x in zip(test.test_fakes, _test_args(test)):
            fake = fns[name]
            if fake.fake_of is None or fake.fake_misfit:
                continue
            if fake.fake_of in mine:
                if mine[fake.fake_of] is not fake:
                    dup(
                        mine[fake.fake_of],
                        fake,
                        x.span,
                        test.name,
                    )
            else:
                mine[fake.fake_of] = fake


def _test_args(fn: FnInfo) -> list:
    for a in fn.node.annotations if fn.node is not None else ():
        if a.name == "test":
            return [x for x in a.args if isinstance(x, ast.Name) and x.name in fn.test_fakes]
    return []


def _fake_target(fn: FnInfo) -> str | None:
    """The Tool as the `@fake(...)` writes it: `svc.fetch`."""
    for a in fn.node.annotations:
        if a.name == "fake" and len(a.args) == 1:
            x = a.args[0]
            if isinstance(x, ast.FieldAccess) and isinstance(x.target, ast.Name):
                return f"{x.target.name}.{x.name}"
            if isinstance(x, ast.Name):
                return x.name
    return None


def _fake_span(fn: FnInfo) -> ast.Span:
    for a in fn.node.annotations:
        if a.name == "fake":
            return a.span
    return name_span(fn.node)


def _check_tool_signature(decls, fn: FnInfo) -> None:
    d = fn.node
    if not decls.is_lang(fn.result, "Result"):
        if type(fn.result) is not TError:
            decls.problems.report(
                codes.ToolWithoutResult(d.result.span, d.name),
                related=[Related("a call of a Tool returns Result<T, ToolProblem<E>>", d.span)],
            )
        return
    for (pname, t), p in zip(fn.params, d.params):
        if not decls.is_data(t, tokens=True):
            decls.problems.report(codes.ToolTypeNotData(p.span, d.name, pname))
    for t, what in zip(fn.result.args, ("result", "error")):
        if not decls.is_data(t, tokens=True):
            decls.problems.report(codes.ToolTypeNotData(d.result.span, d.name, None, what))


def _check_fake(decls, env, fn: FnInfo, a: ast.Annotation) -> None:
    target = None
    if len(a.args) == 1:
        x = a.args[0]
        if isinstance(x, ast.FieldAccess) and isinstance(x.target, ast.Name):
            menv = decls.alias_env(env, x.target.name, x.span)
            if menv is None:
                return
            target = menv.cm.fns.get(x.name)
        elif isinstance(x, ast.Name):
            target = env.cm.fns.get(x.name)
    if target is None or not target.is_tool:
        named = target.name if target is not None else None
        decls.problems.report(
            codes.BadFake(a.span, named=named or None),
            related=[Related(f"`{named}` is declared here without `@tool`", target.node.span)]
            if named
            else [],
        )
        return
    fn.fake_of = target.decl
    decls.used.add(target.decl)

    def norm(t):
        return _norm_params(t)

    mine = [norm(t) for _, t in fn.params]
    theirs = [norm(t) for _, t in target.params]
    if mine != theirs or norm(fn.result) != norm(target.result):
        fn.fake_misfit = True  # one diagnostic per mistake: no E511 for it as well
        decls.problems.report(
            codes.BadFake(
                name_span(fn.node),
                fake=fn.name,
                tool=target.name,
                params=tuple(decls.show(t) for _, t in target.params),
                result=decls.show(target.result),
            ),
            related=[Related("the Tool is declared here", target.node.span)],
        )


def _norm_params(t):
    k = type(t)
    if k is TParam:
        return TParam(t.name, "")
    if k is TCon:
        return TCon(t.decl, tuple(_norm_params(a) for a in t.args))
    if k is TTuple:
        return TTuple(tuple(_norm_params(a) for a in t.items))
    if k is TFun:
        return TFun(tuple(_norm_params(a) for a in t.params), _norm_params(t.result), t.effect)
    return t
