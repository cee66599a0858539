"""The static import graph of flow2py/ and runtime/ (imported as flowrt), read with `ast`.

Every import statement counts, a lazy one in a function body too. What a statement imports:

* `import a.b.c` imports the module a.b.c, and its packages a.b and a (Python runs a package's
  `__init__` before any module in it);
* `from p import n` imports p.n when that is a module, and p itself when n is a name p defines
  (or `*`), and p's packages either way;
* a package the importer itself sits in is left out when it is only implied (it is imported
  before the importer anyway), but kept when the importer takes a name from it: a module that
  takes a name from its own package's `__init__`, which imports the module, is a cycle.
"""

from __future__ import annotations

import ast
import pathlib
from typing import Optional

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: import name -> folder: the runtime's folder is runtime/, installed as flowrt
TREES = {"flow2py": ROOT / "flow2py", "flowrt": ROOT / "runtime"}


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    parts = list(rel.with_suffix("").parts)
    if parts[0] == "runtime":
        parts[0] = "flowrt"
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    """Whether `name` is a module or package of the tree (a file under flow2py/ or runtime/)."""
    top, *rest = name.split(".")
    if top not in TREES:
        return False
    where = TREES[top].joinpath(*rest)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _packages(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imports_of(path: pathlib.Path, name: Optional[str] = None) -> set[str]:
    """Every module `path` (the module `name`, by default the one its place in the tree names)
    imports, wherever in the file the import is."""
    name = name or module_name(path)
    here = name.split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    mine = set(_packages(name)) | {name}
    explicit: set[str] = set()
    implied: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names]
            targets = [s for s in subs if is_module(s)]
            if len(targets) < len(subs):  # a name `base` defines: its __init__ is what is read
                targets.append(base)
        else:
            continue
        explicit.update(targets)
        for t in targets:
            implied.update(_packages(t))
    return (explicit - {name}) | (implied - mine)


def graph() -> dict[str, set[str]]:
    """Module -> the modules it imports, for every module under flow2py/ and runtime/."""
    files = [*TREES["flowrt"].rglob("*.py"), *TREES["flow2py"].rglob("*.py")]
    return {module_name(f): imports_of(f) for f in files}


def cycles(g: dict[str, set[str]]) -> list[str]:
    """One cycle of imports ("a -> b -> a") for each group of modules that import each other,
    through any number of steps; imports of modules outside `g` are ignored."""
    edges = {m: sorted(d for d in deps if d in g and d != m) for m, deps in g.items()}
    out = []
    for group in _strongly_connected(edges):
        if len(group) > 1:
            out.append(" -> ".join(_cycle_through(min(group), edges, group)))
    return sorted(out)


def _strongly_connected(edges: dict[str, list[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on a long chain of imports)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            step = next(todo, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        group.add(m)
                        if m == node:
                            break
                    groups.append(group)
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(edges[step])))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return groups


def _cycle_through(start: str, edges: dict[str, list[str]], group: set[str]) -> list[str]:
    """The shortest path of imports from `start` back to itself inside `group`."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for m in frontier:
            for d in edges[m]:
                if d not in group:
                    continue
                if d == start:
                    path = [m]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if d not in came_from:
                    came_from[d] = m
                    following.append(d)
        frontier = following
    raise AssertionError(f"{start} is in a group of mutual imports but no path returns to it")
