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
        case codes.UnknownName(name=n, kind="module-value"):
            return f"`{n}` is a module: name one of its declarations, e.g. `{n}.something`"
        case codes.UnknownName(name=n, kind="module", suggestion=s) if not s:
            return f'unknown module `{n}`: add `use "./{n}"` or `use "std@v1/{n}"`'
        case codes.UnknownName(name=n, kind="qualifier"):
            return f"unknown name `{n}`: not a local, a declaration or an imported module"
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
        case codes.DuplicateDeclaration(name=n, kind="binding"):
            return f"`{n}` is bound twice in this pattern"
        case codes.DuplicateDeclaration(name=n, kind="declaration"):
            return f"`{n}` is declared twice in this module"
        case codes.DuplicateDeclaration(name=n, kind="type" | "function" as kind):
            return f"{kind} `{n}` is declared twice in this module"
        case codes.DuplicateDeclaration(name=n, kind=kind):  # type parameter, field, constructor, parameter
            return f"{kind} `{n}` is declared twice"
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
        case codes.OpaqueConstruction(name=n, reading=False):
            return f"`{n}` is opaque: it can be built and taken apart only in its own module"
        case codes.OpaqueConstruction(name=n, reading=True):
            return f"`{n}` is opaque: its fields are read only in its own module"
    return _module_paths(d)


def _module_paths(d: codes.CheckData) -> str | None:
    """The messages about `use` paths, the modules they lead to and the repositories (E103-E106, E113)."""
    match d:
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
    return None


def _name_tail(s) -> str:
    """What a name's message says after the mistake: its suggestion (flow2py/check/suggest.py)."""
    return s.tail() if s is not None else ""


def _path_tail(cands: tuple[str, ...]) -> str:
    """The `use` paths a path that leads nowhere most likely meant."""
    return " — did you mean " + " or ".join(f'`"{c}"`' for c in cands) + "?" if cands else ""


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
