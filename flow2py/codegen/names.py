"""Python names for Flow things: the one mapping every Flow identifier goes through
(docs/spec/codegen.md, "Names and markers").

Generated Python holds two kinds of names, kept apart so that neither can reach the other:

* **Flow names** (modules, types, constructors, fields, functions, parameters, locals, lambdas,
  pattern bindings) go through `safe`. A name is kept as written when it is *plain*: it does not
  start with `_` or with the escape prefix `f_`, and it is not in `RESERVED` (Python's keywords
  and soft keywords, `dir(builtins)`, and the few unprefixed names generated code and the
  package use: `rt`, `INSTANCE`, `PROGRAM`, `SOURCES`, `MODULES`, `FILES`, `std_v1`, `repo`,
  `up`). Any other name gets the prefix: `from` -> `f_from`, `__init__` -> `f___init__`,
  `f_x` -> `f_f_x`. Plain names never start with `f_` and escaped ones always do, so two Flow
  names never meet in one Python name; and no mapped name starts with `_`, so none is a dunder,
  none is mangled in a class body (`__x`, `__slots__` strings included), none is private to the
  runtime (`_flow_values`, `_set_0`), and none is a keyword, a builtin or a reserved name.
* **Generated names** (temporaries `_t1`, lambdas `_flow5`, the group selector `_fn`, module
  aliases `_task`, Tool specs `_NEXT`, poly variants `_map__tool`, merged loops `_a__b`) all start
  with one `_` (never two), or are one of `RESERVED`'s own names: no mapped Flow name can be one.
  `Namer` keeps them unique among themselves, scope by scope.

A function binding the same Flow name twice gets `x`, then `x_1` (Python closures capture
variables, not values, so every Flow binding gets its own Python variable); `Namer` never hands
out a name twice in one scope, whatever the Flow names.
"""

from __future__ import annotations

import builtins
import keyword
import re

#: the escape prefix: an unsafe Flow name `n` is `f_` + n in Python
PREFIX = "f_"

#: names of the Python namespace that are not "plain" for a Flow name. Builtins are the running
#: interpreter's plus those newer Pythons add, so that generated code does not depend on the
#: Python version it was generated with (where it can be helped).
RESERVED = (
    frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | frozenset({"type", "match", "case"})  # soft keywords of Python 3.12 on 3.11 too
    | frozenset(dir(builtins))
    | frozenset({"PythonFinalizationError"})  # 3.13's builtin
    # what generated code and the runtime use unprefixed: the runtime alias, the payload-less
    # constructor's instance, the package's descriptor and tables, generated module folders
    | frozenset({"rt", "INSTANCE", "PROGRAM", "SOURCES", "MODULES", "FILES", "std_v1", "repo", "up"})
)

_FLOW_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def plain(n: str) -> bool:
    """A Flow name that is its own Python name."""
    return not n.startswith("_") and not n.startswith(PREFIX) and n not in RESERVED


def safe(n: str) -> str:
    """A Flow identifier as a Python identifier: itself when plain, else `f_` + itself."""
    if not _FLOW_NAME.match(n):
        raise ValueError(f"not a Flow identifier: {n!r}")
    return n if plain(n) else PREFIX + n


def python_segment(s: str) -> str:
    """One segment of a module key (a folder or file name) as a Python module name.

    A segment that is a Flow-like identifier goes through `safe`; any other (`my-lib`,
    `github.com`, `tools@v1.2`) becomes `f_0` + its characters with `_` doubled and every
    character outside `[A-Za-z0-9_]` written `_<hex code>_` (`my-lib` -> `f_0my_2d_lib`). No
    identifier starts with a digit, so `f_0...` is never `safe` of one, and the encoding reads
    back: the mapping stays injective."""
    if _FLOW_NAME.match(s):
        return safe(s)
    out = []
    for c in s:
        if c == "_":
            out.append("__")
        elif c.isascii() and c.isalnum():
            out.append(c)
        else:
            out.append(f"_{ord(c):x}_")
    return PREFIX + "0" + "".join(out)


def python_module(key: str) -> str:
    """Dotted Python module path (relative to the generated package) for a Flow module key.

    `main` -> `main`; `std@v1/task` -> `std_v1.task`; `../x` -> `up.x`; `rt` -> `f_rt`;
    `github.com/acme/tools@v1.2/catalog` -> `repo.f_0github_2e_com.acme.f_0tools_40_v1_2e_2.catalog`.
    The generated folders (`std_v1`, `repo`, `up`) are reserved, so no module segment maps to one.
    """
    segments = key.split("/")
    head: list[str] = []
    if segments[0] == "std@v1":
        head, segments = ["std_v1"], segments[1:]
    elif "." in segments[0] and segments[0] != ".." and "@" not in segments[0] and len(segments) > 1:
        head = ["repo"]  # a repository host (github.com/...)
    return ".".join(head + ["up" if s == ".." else python_segment(s) for s in segments])


class Namer:
    """Hands out unique Python names in one scope (a module's globals or one function tree):
    `fresh` for a Flow name (mapped by `safe`), `generated`/`temp` for the generator's own."""

    def __init__(self, taken: set[str] | None = None):
        self.taken: set[str] = set(taken or ())

    def fresh(self, flow_name: str) -> str:
        base = safe(flow_name)
        if base not in self.taken:
            self.taken.add(base)
            return base
        return self._numbered(base + "_")

    def generated(self, base: str) -> str:
        """A name of the generator's own: `base` starts with exactly one `_`."""
        if not base.startswith("_") or base.startswith("__") or not base.isidentifier():
            raise ValueError(f"a generated name starts with one `_`: {base!r}")
        if base not in self.taken:
            self.taken.add(base)
            return base
        return self._numbered(base + "_")

    def temp(self) -> str:
        return self._numbered("_t")

    def _numbered(self, prefix: str) -> str:
        """Take the first free `prefix1`, `prefix2`, ... (never a reserved name)."""
        i = 1
        while f"{prefix}{i}" in self.taken or f"{prefix}{i}" in RESERVED:
            i += 1
        n = f"{prefix}{i}"
        self.taken.add(n)
        return n
