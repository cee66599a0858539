"""The one place where the checker's diagnostics (the typed classes of flow2py/check/codes.py)
get their messages: `message(data)` renders the text from the object's fields."""

from __future__ import annotations

from flow2py.check import codes
from flow2py.check.declare import ordinal


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
        case codes.TypeMismatch(place="value", expected=exp, found=found, because=because):
            why = f" (expected because of {because})" if because is not None else ""
            return f"type mismatch: expected `{exp}`, found `{found}`{why}"
        case codes.TypeMismatch(place="tuple-pattern", items=n, found=found):
            return f"type mismatch: this pattern is a tuple of {n}, the value is `{found}`"
        case codes.TypeMismatch(place="list-pattern", found=found):
            return f"type mismatch: this pattern is a list, the value is `{found}`"
        case codes.TypeMismatch(place="ctor-pattern", name=name, expected=exp, found=found):
            return f"type mismatch: the pattern `{name}` is a `{exp}`, the value is `{found}`"
        case codes.TypeMismatch(place="alternative", name=n, expected=exp, found=found):
            return (
                f"type mismatch: `{n}` is `{exp}` in the first alternative "
                f"of `|`, `{found}` here; every alternative must bind it with one type"
            )
        case codes.TypeMismatch(place="alternative-names", names=names):
            return f"every alternative of `|` must bind the same names ({', '.join(names) or 'none'})"
        case codes.TypeMismatch(place="try", found=found):
            return f"`?` works on a Result, found `{found}`"
        case codes.WrongArity(form="arguments", name="", expected=n, given=k):
            return f"this function takes {n} argument{'s' if n != 1 else ''}, found {k}"
        case codes.WrongArity(form="arguments", name=name, expected=n, given=k):
            return f"`{name}` takes {n} argument{'s' if n != 1 else ''}, found {k}"
        case codes.WrongArity(form="values", name=name, expected=n, given=k):
            return f"constructor `{name}` takes {n} value{'s' if n != 1 else ''}, found {k}"
        case codes.WrongArity(form="pattern-values", name=name, expected=n, given=k):
            return f"constructor `{name}` takes {n} value{'s' if n != 1 else ''}, this pattern gives {k}"
        case codes.WrongArity(form="positional", name=name):
            return f"constructor `{name}` takes positional values: write `{name}(...)`"
        case codes.WrongArity(form="named-value", name=name):
            return f"constructor `{name}` has named fields: write `{name} {{ ... }}`"
        case codes.WrongArity(form="named-call", name=name, fields=fields):
            return f"constructor `{name}` has named fields: write `{name} {{ {', '.join(fields)} }}`"
        case codes.WrongArity(form="named-pattern", name=name):
            return f"`{name}` has named fields: write `{name} {{ ... }}`"
        case codes.WrongArity(form="bare-pattern", name=name):
            return f"`{name}` has fields: write `{name} {{ .. }}` to match any"
        case codes.WrongArity(form="base"):
            return "`..base` works only for records"
        case codes.WrongTypeArity(name=name, param=True):
            return f"type parameter `{name}` takes no type arguments"
        case codes.WrongTypeArity(name=name, expected=n, given=k):
            return f"`{name}` takes {n} type argument{'s' if n != 1 else ''}, found {k}"
        case codes.NotCallable(type=t):
            return f"a value of type `{t}` is not a function and cannot be called"
        case _:
            return _types_more(d)


def _types_more(d: codes.CheckData) -> str | None:
    """E205-E212 (a function of its own: one `match` for E2xx would be too long to read)."""
    match d:
        case codes.UnknownField(owner=owner, field=name, meant=meant):
            return f"`{owner}` has no field `{name}`" + meant.tail()
        case codes.MissingField(missing=missing, name=name):
            listed = ", ".join(f"`{m}`" for m in missing)
            fields = "fields" if len(missing) > 1 else "field"
            if not name:
                return f"this pattern leaves out {fields} {listed}: name them or end with `..`"
            return f"`{name}` is missing {fields} {listed}"
        case codes.DuplicateField(field=name):
            return f"field `{name}` is given twice"
        case codes.NotData(type=t, callee="", why=why):
            return f"`{t}` is not data, but {why} must be data"
        case codes.NotData(type=t, callee=callee, param=param):
            return (
                f"`{t}` is not data, but `{callee}` needs data for its type parameter `{param}` "
                "(it compares, orders, keys or sends such values)"
            )
        case codes.NoOperator(op=op, operand=t, unary=False):
            return f"no `{op}` for `{t}`"
        case codes.NoOperator(op=op, operand=t, unary=True):
            return f"no unary `{op}` for `{t}`"
        case codes.UnknownMethod(name=name, no_params=True):
            return f"`{name}` takes no arguments, so it cannot be called as a method"
        case codes.UnknownMethod(name=name, receiver=t, home=None, meant=meant):
            return (
                f"no function `{name}` for `{t}`: its type has no home module, "
                "so only generic std functions apply" + meant.tail()
            )
        case codes.UnknownMethod(name=name, receiver=t, home=home, meant=meant):
            return f"no function `{name}` for `{t}` in its module {home}" + meant.tail()
        case codes.AliasCycle(name=name):
            return f"type alias `{name}` refers to itself"
        case codes.CannotInfer(what="field", name=name):
            return f"the type of this value must be known to read `.{name}`: annotate it"
        case codes.CannotInfer(what="method", name=name):
            return f"the type of this value must be known to call `.{name}(...)`: annotate it"
        case codes.CannotInfer(what="binary", name=op):
            return f"the type of the operands of `{op}` must be known: annotate one of them"
        case codes.CannotInfer(what="unary", name=op):
            return f"the type of the operand of `{op}` must be known: annotate it"
        case codes.CannotInfer(what="nesting"):
            return "this program nests too deeply to be checked; split it into smaller functions"
        case _:
            return None


# -- E3xx: effects ----------------------------------------------------------------------------


def _effects(d: codes.CheckData) -> str | None:
    match d:
        case codes.UndeclaredEffect(name=name):
            return f"`{name}` may reach a Tool but is not marked `!tool`"
        case codes.EffectfulArgument(callee=""):
            return (
                "this function may reach a Tool, but the type it is stored as is pure: mark the type `!tool`"
            )
        case codes.EffectfulArgument(callee=callee, index=i):
            return (
                f"the {ordinal(i)} argument of `{callee}` must be pure (`!pure`), "
                "but this function may reach a Tool"
            )
        case _:
            return None


# -- E4xx: checks -----------------------------------------------------------------------------


def _checks(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E5xx: declarations and annotations -------------------------------------------------------


def _decls(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


_BY_RANGE = {"E1": _names, "E2": _types, "E3": _effects, "E4": _checks, "E5": _decls}
