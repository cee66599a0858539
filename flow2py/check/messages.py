"""The one place where the checker's diagnostics (the typed classes of flow2py/check/codes.py)
get their messages: `message(data)` renders the text from the object's fields."""

from __future__ import annotations

from flow2py.check import codes


def message(d: codes.CheckData) -> str:
    """The text of one checker diagnostic, from its typed object."""
    render = _BY_RANGE.get(d.code[:2])
    text = render(d) if render is not None else None
    if text is None:
        raise TypeError(f"no message for {type(d).__name__}")
    return text


# -- E1xx: modules and names -----------------------------------------------------------------


def _names(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E2xx: types ------------------------------------------------------------------------------


def _types(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E3xx: effects ----------------------------------------------------------------------------


def _effects(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E4xx: checks -----------------------------------------------------------------------------


#: how many missing patterns a message names (the fix inserts them all)
NAMED = 8


def _name_missing(missing, truncated: bool) -> str:
    named = ", ".join(f"`{w}`" for w in missing[:NAMED])
    more = len(missing) - NAMED
    if more > 0:
        named += f" and {'more than ' if truncated else ''}{more} more"
    elif truncated:
        named += " and more"
    return named


def _who(fn: str | None) -> str:
    return f"`{fn}`" if fn is not None else "this function"


def _checks(d: codes.CheckData) -> str | None:
    match d:
        case codes.NonExhaustiveMatch(missing=missing, truncated=truncated):
            return "this match does not cover every value: missing " + _name_missing(missing, truncated)
        case codes.UnreachableArm():
            return "this arm can never be reached: the arms before it match every value it matches"
        case codes.NonUnitStatement(found=found):
            return f"this statement's value is `{found}`, not Unit: use it, or discard it with `let _ = `"
        case codes.UnusedBinding(name=name):
            return f"`{name}` is never used: use it, or name it `_{name}` (or `_`)"
        case codes.UnusedDeclaration(kind=kind, name=name):
            return f"private {kind} `{name}` is never used: use it, make it `pub`, or remove it"
        case codes.GuardMustLeave():
            return "the `else` block of `guard` must leave: end it with `return ...`"
        case codes.IfWithoutElse(found=found):
            return f"an `if` without `else` must be Unit, but this block's value is `{found}`: add an `else`"
        case codes.TryOutsideResult(fn=fn, result=result):
            return f"`?` returns early with an error, but {_who(fn)} returns `{result}`, not a Result"
        case codes.TryErrorType(fn=fn, error=error, expected=expected):
            return (
                f"`?` here would return the error `{error}`, but {_who(fn)} returns errors of type "
                f"`{expected}`: convert it with `? f`"
            )
        case codes.RefutableLet(missing=missing, truncated=truncated):
            return (
                "this `let` pattern does not match every value: missing "
                + _name_missing(missing, truncated)
                + "; use `match` or `guard let ... else`"
            )
        case _:
            return None


# -- E5xx: declarations and annotations -------------------------------------------------------


def _decls(d: codes.CheckData) -> str | None:
    match d:
        case codes.ToolWithoutResult(name=name):
            return f"a Tool returns `Result<T, E>`: `{name}` is declared to return something else"
        case codes.LangOutsideStd():
            return "`@lang` is reserved for std: the compiler provides these declarations"
        case codes.ToolWithBody(kind="type", name=name):
            return f"a `@tool` type is made only by the host and has no body: remove the body of `{name}`"
        case codes.ToolWithBody(name=name):
            return f"a Tool's body is outside Flow: remove the body of `{name}` or the `@tool`"
        case codes.TestWithParams(name=name, count=count):
            return f"a `@test` function takes no parameters, `{name}` takes {count}"
        case codes.BadFake(fake=None, named=None):
            return "`@fake(...)` names the Tool it stands in for, e.g. `@fake(web.search)`"
        case codes.BadFake(fake=None, named=named):
            return f"`{named}` is not a Tool: `@fake(...)` names the Tool it stands in for"
        case codes.BadFake(fake=fake, tool=tool, params=params, result=result):
            return (
                f"fake `{fake}` must have the signature of Tool `{tool}`: ({', '.join(params)}) -> {result}"
            )
        case codes.MissingBody(kind="type", name=name):
            return (
                f"type `{name}` has no body: declare its fields or constructors, or mark it `@tool` "
                "(made by the host)"
            )
        case codes.MissingBody(name=name):
            return f"function `{name}` has no body: write one, or mark it `@tool` (implemented by the host)"
        case codes.UnknownAnnotation(name=name):
            return f"unknown annotation `@{name}` (Flow has @lang, @tool, @test and @fake)"
        case codes.BadAnnotation(problem="tool-args"):
            return "`@tool` takes no arguments"
        case codes.BadAnnotation(problem="on-type", annotation=annotation):
            return f"`@{annotation}` applies to functions, not types"
        case codes.BadAnnotation(problem="lang-args"):
            return "`@lang` takes text arguments: the name, then flags"
        case codes.BadAnnotation(problem="test-arg", arg=arg):
            what = f"`{arg}` is not" if arg is not None else "this is not"
            return f"`@test(...)` names the `@fake` functions of this module the test uses: {what} one"
        case codes.ToolTypeNotData(tool=tool, param=None, what=what):
            return f"the {what} type of Tool `{tool}` must be data or a @tool type"
        case codes.ToolTypeNotData(tool=tool, param=param):
            return f"parameter `{param}` of Tool `{tool}` must be data or a @tool type"
        case codes.EntryNotData(param=None, type=t):
            return f"the entry function's result `{t}` is not data: a run's result is data"
        case codes.EntryNotData(param=param, type=t):
            return (
                f"the entry function's parameter `{param}` is `{t}`, which is not data: a run's input is data"
            )
        case codes.DuplicateFake(fake=fake, first=first, tool=tool, test=None):
            return (
                f"`{fake}` and `{first}` both fake Tool `{tool}` for the whole file: "
                "keep one, or name the other in the `@test(...)` of the tests that use it"
            )
        case codes.DuplicateFake(fake=fake, first=first, tool=tool, test=test):
            return (
                f"`{fake}` and `{first}` both fake Tool `{tool}` in test `{test}`: "
                "a test names one fake per Tool"
            )
        case _:
            return None


_BY_RANGE = {"E1": _names, "E2": _types, "E3": _effects, "E4": _checks, "E5": _decls}
