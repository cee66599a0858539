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
        case codes.UnknownName(name=n, kind="module-value"):
            return f"`{n}` is a module: name one of its declarations, e.g. `{n}.something`"
        case codes.UnknownName(name=n, kind="module", suggestion=s) if not s:
            return f'unknown module `{n}`: add `use "./{n}"` or `use "std@v1/{n}"`'
        case codes.UnknownName(name=n, kind="qualifier", suggestion=s) if s:
            return f"unknown name `{n}`: not a local, a declaration or an imported module" + _name_tail(s)
        case codes.UnknownName(name=n, kind="qualifier"):
            return f"unknown name `{n}`: not a local, a declaration or an imported module"
        case codes.UnknownName(name=n, kind="math"):
            return (
                f"unknown name `{n}`: Flow has no math module; a number's functions are its methods "
                "(`x.abs()`, `a.max(b)`, `d.floor()`)"
            )
        case codes.UnknownName(name=n, kind="type-qualifier", owner=c):
            return f"`{n}` is a type, not a module: Flow names its constructor alone, `{c}`"
        case codes.UnknownName(kind="record-head"):
            return "a record literal starts with a record type or constructor name"
        case codes.UnknownName(name=n, kind="constructor", owner=owner, suggestion=s) if owner:
            return f"`{owner}` has no constructor `{n}`" + _name_tail(s)
        case codes.UnknownName(name=n, kind="shorthand", suggestion=s):
            return f"unknown name `{n}` (the shorthand `{n}` means `{n}: {n}`)" + _name_tail(s)
        case codes.UnknownName(name=n, kind="record", suggestion=s):
            return f"unknown record type or constructor `{n}`" + _name_tail(s)
        case codes.UnknownName(name=n, kind=kind, suggestion=s):  # name, module, constructor
            return f"unknown {kind} `{n}`" + _name_tail(s)
        case codes.UnknownType(name=n, suggestion=s):
            return f"unknown type `{n}`" + _name_tail(s)
        case codes.ModuleNotFound(path=path, kind="file"):
            return f"cannot read `{path}`"
        case codes.ModuleNotFound(path=path, kind="tag", tag=tag, repo=repo, looked=looked):
            return (
                f"cannot find `{path}`: tag {tag} of {repo} is not in the module cache (looked for {looked})"
            )
        case codes.ModuleNotFound(path=path, looked=looked, candidates=cands):
            return f"cannot find module `{path}` (looked for {looked})" + _path_tail(cands)
        case codes.ImportCycle(cycle=cycle):
            return "import cycle: " + " -> ".join(cycle)
        case codes.MovedTag(repo=repo, tag=tag, pinned=pinned, commit=commit):
            return f"tag {tag} of {repo} moved: flow.lock pins commit {pinned}, the tag now names {commit}"
        case codes.TwoVersions(repo=repo, first=first, second=second):
            return f"{repo} is used at two versions, {first} and {second}: a program uses one version of each repository"
        case codes.DuplicateDeclaration(name=n, kind="binding"):
            return f"`{n}` is bound twice in this pattern"
        case codes.DuplicateDeclaration(name=n, kind="declaration"):
            return f"`{n}` is declared twice in this module"
        case codes.DuplicateDeclaration(name=n, kind="type" | "function" as kind):
            return f"{kind} `{n}` is declared twice in this module"
        case codes.DuplicateDeclaration(name=n, kind=kind):  # type parameter, field, constructor, parameter
            return f"{kind} `{n}` is declared twice"
        case _:
            return _names_more(d)


def _names_more(d: codes.CheckData) -> str | None:
    match d:
        case codes.PreludeNameRedeclared(name=n, ctor=False):
            return f"`{n}` is a prelude name and cannot be declared again"
        case codes.PreludeNameRedeclared(name=n, ctor=True):
            return f"`{n}` is a prelude constructor and cannot be declared again"
        case codes.PrivateName(name=n, kind="field", owner=owner, building=True):
            return f"field `{n}` of `{owner}` is private: `{owner}` can be built only in its module"
        case codes.PrivateName(name=n, kind="field", owner=owner):
            return f"field `{n}` of `{owner}` is private to its module"
        case codes.PrivateName(name=n, kind="type", module=module):
            return f"type `{module + '.' if module else ''}{n}` is private to its module"
        case codes.PrivateName(name=n, kind="function", module=module):
            return f"`{module}.{n}` is private to its module"
        case codes.PrivateName(name=n, kind="method", module=module):
            return f"`{n}` of module {module} is private to its module"
        case codes.UnknownMember(module=module, name=n, kind=kind, suggestion=s):
            return f"module `{module}` declares no {kind + ' ' if kind else ''}`{n}`" + _name_tail(s)
        case codes.DuplicateImport(alias=alias):
            return f"two `use` declarations with the alias `{alias}`"
        case codes.UnusedImport(alias=alias):
            return f"`{alias}` is imported but never used"
        case codes.BadUsePath(path=path, kind="alias", alias=alias, candidates=cands):
            return (
                f"`{path}`: the last path segment `{alias}` must be a lower-case name, used as the alias"
                + _path_tail(cands)
            )
        case codes.BadUsePath(path=path, kind="leaves-repo", repo=repo):
            return f"`{path}` leaves the repository {repo}"
        case codes.BadUsePath(kind="std-version", version=version, provided=provided, candidates=cands):
            return f"unknown std version `{version}` (this compiler provides {provided})" + _path_tail(cands)
        case codes.BadUsePath(path=path, kind="no-module"):
            return f"`{path}` names no module"
        case codes.BadUsePath(path=path, kind="not-a-path", candidates=cands):
            return (
                f"`{path}` is not a module path: write `./name`, `std@v1/name` or `host/owner/repo@tag/name`"
                + _path_tail(cands)
            )
        case codes.OpaqueConstruction(name=n, reading=False):
            return f"`{n}` is opaque: it can be built and taken apart only in its own module"
        case codes.OpaqueConstruction(name=n, reading=True):
            return f"`{n}` is opaque: its fields are read only in its own module"
    return None


def _name_tail(s) -> str:
    """What a name's message says after the mistake: its suggestion (flow2py/check/suggest.py),
    ` — did you mean `x`?`, or a habit's note."""
    if s is None:
        return ""
    cands = s.cands
    if len(cands) == 1 and cands[0].note:
        return " — " + cands[0].note
    if len(cands) == 1 and cands[0].text == s.name and cands[0].use_path:
        return f' — add `use "{cands[0].use_path}"`'
    if cands:
        names = [f"`{c.text}`" for c in cands]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        if s.note:
            return f" — {s.note} (or {listed})"
        return f" — did you mean {listed}?"
    if s.note:
        return " — " + s.note
    return ""


def _path_tail(cands: tuple[str, ...]) -> str:
    """The `use` paths a path that leads nowhere most likely meant."""
    return " — did you mean " + " or ".join(f'`"{c}"`' for c in cands) + "?" if cands else ""


# -- E2xx: types ------------------------------------------------------------------------------


def _swapped(d: codes.CheckData) -> str | None:
    """E201 of a constructor's values or of a receiver and an argument given in each other's
    place (the plain "swapped" of two arguments is in `_types`)."""
    match d:
        case codes.TypeMismatch(place="swapped-values", name=name, expected=exp, found=found, swapped=(i, j)):
            return (
                f"the {ordinal(i)} and {ordinal(j)} values of `{name}` look swapped: "
                f"the {ordinal(i)} takes `{exp}` and the {ordinal(j)} `{found}`, given the other way round"
            )
        case codes.TypeMismatch(
            place="swapped-receiver", name=label, expected=exp, found=found, swapped=(_, j)
        ):
            return (
                f"the receiver and the {ordinal(j)} argument of `{label}` look swapped: "
                f"the receiver takes `{exp}` and the {ordinal(j)} argument `{found}`, given the other way round"
            )
    return None


def _thunks(d: codes.CheckData) -> str | None:
    """A value where a function of no parameters is expected (E201 "thunk", "thunks")."""
    match d:
        case codes.TypeMismatch(place="value", expected=exp, found=found, because=because, hint="thunk"):
            why = f" (expected because of {because})" if because is not None else ""
            return (
                f"type mismatch: expected `{exp}`, found `{found}`{why} — a function is expected: "
                "write `flow() = ...` to pass the work, not its value"
            )
        case codes.TypeMismatch(
            place="value", expected=exp, found=found, because=because, hint="thunks", items=n
        ):
            why = f" (expected because of {because})" if because is not None else ""
            return (
                f"type mismatch: expected `{exp}` for each element{why}, found {n} values of type "
                f"`{found}` — functions are expected: write `flow() = ...` before each to pass the "
                "work, not its value"
            )
    return None


def _let_uses(d: codes.CheckData) -> str | None:
    """E201 of a `let` whose every use wants another type (check/missing_try.py)."""
    match d:
        case codes.TypeMismatch(place="int-division", name=name):
            return (
                f"`{name}` is an `Int`: `/` of two Ints is an Int (the fraction dropped), and its uses "
                "want a `Decimal`: divide Decimals (`decimal.from_int(a) / decimal.from_int(b)`)"
            )
        case codes.TypeMismatch(place="missing-try", name=name, expected=exp, found=found):
            return (
                f"`{name}` is a `{found}`, but its uses want the `{exp}` in it: "
                "`?` after the value takes it out (an `Err` returns from the function)"
            )
        case codes.TypeMismatch(place="unwrap-let", name=name, expected=exp, found=found):
            return (
                f"`{name}` is a `{found}`, but its uses want the `{exp}` in it: match it, or take "
                "the value out with `.unwrap_or(default)`"
            )
    return None


def _types(d: codes.CheckData) -> str | None:
    said = _swapped(d) or _thunks(d) or _let_uses(d)
    if said is not None:
        return said
    match d:
        case codes.TypeMismatch(place="swapped", name=label, expected=exp, found=found, swapped=(i, j)):
            return (
                f"the {ordinal(i)} and {ordinal(j)} arguments of `{label}` look swapped: "
                f"the {ordinal(i)} takes `{exp}` and the {ordinal(j)} `{found}`, given the other way round"
            )
        case codes.TypeMismatch(place="value", expected=exp, found=found, because=because, hint="unit"):
            why = f" (expected because of {because})" if because is not None else ""
            return (
                f"type mismatch: expected `{exp}`, found `{found}`{why} — a Duration has a unit: "
                "write a literal (`8h`, `30s`, `250ms`) or, for a computed number, `duration.seconds(n)` "
                "(`duration.millis`, `duration.minutes`, ...)"
            )
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
        case codes.WrongArity(form="unapplied", name=name, expected=n):
            return f"constructor `{name}` takes {n} value{'s' if n != 1 else ''}: write `{name}(...)`"
        case codes.WrongArity(form="unit", name=name):
            return f"constructor `{name}` takes no values: write `{name}` without `()`"
        case codes.WrongArity(form="unit-pattern", name=name):
            return f"constructor `{name}` takes no values: match it as `{name}`, without `()`"
        case codes.WrongArity(form="positional", name=name):
            return f"constructor `{name}` takes positional values: write `{name}(...)`"
        case codes.WrongArity(form="named-value", name=name):
            return f"constructor `{name}` has named fields: write `{name} {{ ... }}`"
        case codes.WrongArity(form="named-call" | "record-call", name=name, fields=fields, after_new=True):
            return f"Flow has no `new`, and `{name}` has its fields named: write `{name} {{ {', '.join(fields)} }}`"
        case codes.WrongArity(form="named-call", name=name, fields=fields):
            return f"constructor `{name}` has named fields: write `{name} {{ {', '.join(fields)} }}`"
        case codes.WrongArity(form="record-call", name=name, fields=fields):
            return (
                f"`{name}` is a record, built with its fields named: write `{name} {{ {', '.join(fields)} }}`"
            )
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
        case codes.UnknownField(owner=owner, field=name, call=True, method=method) if method:
            return f"`{owner}` has no field `{name}` — Flow's is the function `{method}`: write `.{method}()`"
        case codes.UnknownField(owner=owner, field=name, call=True):
            return f"`{owner}` has no field `{name}` — `{name}` is a function: write `.{name}()`"
        case codes.UnknownField(owner=owner, field=name, meant=meant):
            return f"`{owner}` has no field `{name}`" + _name_tail(meant)
        case codes.MissingField(missing=missing, name="", used=used) if used:
            listed = ", ".join(f"`{m}`" for m in used)
            fields = "fields" if len(used) > 1 else "field"
            said = (
                f"this pattern leaves out {fields} {listed}, which its arm uses: name {listed} in the pattern"
            )
            return said + (" (and end it with `..` for the others)" if len(missing) > len(used) else "")
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
        case codes.NoOperator(op=op, operand=t, formatting=True):
            return f"no `{op}` for `{t}` — Flow has no `%` formatting: join text with `++` (a value that is not Text with `.to_text()`)"
        case codes.NoOperator(op=op, operand=t, unary=False):
            return f"no `{op}` for `{t}`"
        case codes.NoOperator(op=op, operand=t, unary=True):
            return f"no unary `{op}` for `{t}`"
        case codes.UnknownMethod(name=name, copy=True):
            return f"Flow has no `.{name}()`: values never change, so a value is its own copy"
        case codes.UnknownMethod(name=name, receiver=t, getter=field) if field:
            return f"Flow has no getters: `{t}` has the field `{field}`, read as `.{field}`, not `.{name}()`"
        case codes.UnknownMethod(name=name, iterator=True, receiver=t):
            return (
                f"Flow has no `.{name}()`: a `{t}` is given to its functions (`map`, `filter`, ...) as it is"
            )
        case codes.UnknownMethod(name=name, equals=True):
            return f"Flow has no `.{name}(...)`: values are compared with `==` (and `!=`)"
        case codes.UnknownMethod(name=name, no_params=True):
            return f"`{name}` takes no arguments, so it cannot be called as a method"
        case codes.UnknownMethod(name=name, receiver=t, home=None, meant=meant):
            return (
                f"no function `{name}` for `{t}`: its type has no home module, "
                "so only generic std functions apply" + _name_tail(meant)
            )
        case codes.UnknownMethod(name=name, receiver=t, home=home, meant=meant):
            return f"no function `{name}` for `{t}` in its module {home}" + _name_tail(meant)
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
        case codes.UndeclaredEffect(name=name, pure=True):
            return f"`{name}` reaches a Tool, but is marked `!pure`"
        case codes.UndeclaredEffect(name=name):
            return f"`{name}` reaches a Tool, but is not marked `!tool`"
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
        case codes.UnusedBinding(name=name, no_value=True):
            return (
                f"`{name}` binds a new name here, never used: an `Option` without a value is `None` in Flow"
            )
        case codes.UnusedBinding(name=name):
            return f"`{name}` is never used: use it, or name it `_{name}` (or `_`)"
        case codes.UnusedDeclaration(kind=kind, name=name):
            return f"private {kind} `{name}` is never used: use it, make it `pub`, or remove it"
        case codes.GuardMustLeave(value=True):
            return "the `else` block of `guard` must leave, and this is its value: write `return` before it"
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
