"""Python names for Flow things: module paths, top-level names, locals.

Names come from the Flow source. They change only where Python would misread them: a Python
keyword (`from` -> `from_`), a builtin the generated code itself uses (`isinstance`), `rt` (the
runtime), or a second binding of the same Flow name in one function (`x`, then `x_1`): Python
closures capture variables, not values, so every Flow binding gets its own Python variable.
"""
from __future__ import annotations

import keyword
import re

#: names generated code reads itself; a Flow name equal to one of these is renamed
RESERVED = frozenset({"rt", "isinstance", "len"}) | frozenset(keyword.kwlist)


def python_module(key: str) -> str:
    """Dotted Python module path (relative to the generated package) for a Flow module key.

    `main` -> `main`; `std@v1/task` -> `std_v1.task`;
    `github.com/acme/tools@v1.2/catalog` -> `repo.github_com.acme.tools_v1_2.catalog`.
    """
    segments = key.split("/")
    if "." in segments[0] and "@" not in segments[0] and len(segments) > 1:
        segments = ["repo"] + segments  # a repository host (github.com/...)
    out = []
    for s in segments:
        if s == "..":
            s = "up"
        s = re.sub(r"[^0-9A-Za-z_]", "_", s)
        if not s or s[0].isdigit():
            s = "m_" + s
        if keyword.iskeyword(s):
            s += "_"
        out.append(s)
    return ".".join(out)


def safe(n: str) -> str:
    """A Flow identifier as a Python identifier: a reserved name, or a reserved name followed by
    underscores, gets one more `_` (`from` -> `from_`, `from_` -> `from__`), so that two Flow
    names never meet in one Python name (fields `from` and `from_` of one record)."""
    return n + "_" if n.rstrip("_") in RESERVED else n


class Namer:
    """Hands out unique Python names in one scope (a module's globals or one function tree)."""

    def __init__(self, taken: set[str] | None = None):
        self.taken: set[str] = set(taken or ())

    def fresh(self, base: str) -> str:
        base = safe(base)
        if base not in self.taken:
            self.taken.add(base)
            return base
        return self._numbered(base + "_")

    def temp(self) -> str:
        return self._numbered("_t")

    def _numbered(self, prefix: str) -> str:
        """Take the first free `prefix1`, `prefix2`, ..."""
        i = 1
        while f"{prefix}{i}" in self.taken:
            i += 1
        n = f"{prefix}{i}"
        self.taken.add(n)
        return n
