"""Annotations (@lang, @tool, @test, @fake): reading them, and checking every type's and every
function's once the declarations are resolved (declare.py calls these with its Declarations,
`decls`, and a module's environment, `env`): unknown names, `@lang` outside std, a Tool's
signature (a Result of data), a `@test` with parameters or naming what is not a fake, a `@fake`
and the Tool it stands in for, and two fakes for one Tool in one scope (`check_fake_scopes`).
"""

from __future__ import annotations

from flow2py.check.typed import FnInfo, TCon, TError, TFun, TParam, TTuple, TypeInfo
from flow2py.diagnostics import Related
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
        decls.problems.add(
            "E507", f"unknown annotation `@{a.name}` (Flow has @lang, @tool, @test and @fake)", a.span
        )
        return True
    if a.name == "lang":
        if not env.is_std:
            decls.problems.add(
                "E502", "`@lang` is reserved for std: the compiler provides these declarations", a.span
            )
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
                decls.problems.add(
                    "E503",
                    f"a `@tool` type is made only by the host and has no body: remove the body of `{d.name}`",
                    a.span,
                )
            if a.args:
                decls.problems.add("E508", "`@tool` takes no arguments", a.span)
        else:
            decls.problems.add("E508", f"`@{a.name}` applies to functions, not types", a.span)
    if d.kind == "abstract" and not has_ann(d.annotations, "tool") and not has_ann(d.annotations, "lang"):
        decls.problems.add(
            "E506",
            f"type `{d.name}` has no body: declare its fields or constructors, or mark it `@tool` (made by the host)",
            span,
        )


def _check_lang_args(decls, a: ast.Annotation) -> None:
    if not a.args or not all(isinstance(x, ast.Literal) and x.kind == "text" for x in a.args):
        decls.problems.add("E508", "`@lang` takes text arguments: the name, then flags", a.span)


def check_fn_annotations(decls, env, fn: FnInfo) -> None:
    d = fn.node
    span = name_span(d)
    for a in d.annotations:
        if _unknown_or_lang(decls, env, a):
            continue
        if a.name == "tool":
            if d.body is not None:
                decls.problems.add(
                    "E503",
                    f"a Tool's body is outside Flow: remove the body of `{d.name}` or the `@tool`",
                    a.span,
                )
            _check_tool_signature(decls, fn)
        elif a.name == "test":
            if d.params:
                decls.problems.add(
                    "E504",
                    f"a `@test` function takes no parameters, `{d.name}` takes {len(d.params)}",
                    span,
                )
            fn.test_fakes = _test_fakes(decls, env, a)
        elif a.name == "fake":
            _check_fake(decls, env, fn, a)
    if d.body is None and not fn.is_tool and not has_ann(d.annotations, "lang"):  # outside std: E502 said it
        decls.problems.add(
            "E506",
            f"function `{d.name}` has no body: write one, or mark it `@tool` (implemented by the host)",
            span,
        )


def _test_fakes(decls, env, a: ast.Annotation) -> list[str]:
    """`@test(f, g)`: the names of the `@fake` functions of this module the test uses instead of
    the file's fakes for their Tools (testing.md, "Fakes per test")."""
    out = []
    for x in a.args:
        target = env.cm.fns.get(x.name) if isinstance(x, ast.Name) else None
        if target is None or target.node is None or not has_ann(target.node.annotations, "fake"):
            what = f"`{x.name}` is not" if isinstance(x, ast.Name) else "this is not"
            decls.problems.add(
                "E508",
                f"`@test(...)` names the `@fake` functions of this module the test uses: {what} one",
                x.span,
            )
            continue
        out.append(x.name)
    return out


def check_fake_scopes(decls, env) -> None:
    """E511: two fakes for one Tool in one scope. A `@fake` function named by no `@test(...)` is
    the file's fake for its Tool; one named by a `@test(...)` serves only the tests naming it."""
    fns = env.cm.fns
    named = {n for fn in fns.values() for n in fn.test_fakes}

    def dup(first: FnInfo, second: FnInfo, where: ast.Span, scope: str, fix: str) -> None:
        tool = _fake_target(second) or decls.fn_decls[second.fake_of].name
        decls.problems.add(
            "E511",
            f"`{second.name}` and `{first.name}` both fake Tool `{tool}` {scope}: {fix}",
            where,
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
                    "for the whole file",
                    "keep one, or name the other in the `@test(...)` of the tests that use it",
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
                        f"in test `{test.name}`",
                        "a test names one fake per Tool",
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
            decls.problems.add(
                "E501",
                f"a Tool returns `Result<T, E>`: `{d.name}` is declared to return something else",
                d.result.span,
                related=[Related("a call of a Tool returns Result<T, ToolProblem<E>>", d.span)],
            )
        return
    for (pname, t), p in zip(fn.params, d.params):
        if not decls.is_data(t, tokens=True):
            decls.problems.add(
                "E509", f"parameter `{pname}` of Tool `{d.name}` must be data or a @tool type", p.span
            )
    for t, what in zip(fn.result.args, ("result", "error")):
        if not decls.is_data(t, tokens=True):
            decls.problems.add(
                "E509", f"the {what} type of Tool `{d.name}` must be data or a @tool type", d.result.span
            )


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
        msg = (
            f"`{named}` is not a Tool: `@fake(...)` names the Tool it stands in for"
            if named
            else "`@fake(...)` names the Tool it stands in for, e.g. `@fake(web.search)`"
        )
        decls.problems.add(
            "E505",
            msg,
            a.span,
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
        decls.problems.add(
            "E505",
            f"fake `{fn.name}` must have the signature of Tool `{target.name}`: "
            f"({', '.join(decls.show(t) for _, t in target.params)}) -> {decls.show(target.result)}",
            name_span(fn.node),
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
