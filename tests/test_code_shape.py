"""The code's shape, as issue 8 set it: no class over 500 lines counting the classes it inherits
from in this tree, no function over 80 lines, no file over 1,000 lines, and the median file size
between 150 and 400 lines (docs/dev/architecture.md, "Habits")."""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES = ("flow2py", "runtime")
MAX_CLASS, MAX_FUNCTION, MAX_FILE = 500, 80, 1000


def _sources() -> dict[Path, ast.Module]:
    return {
        p: ast.parse(p.read_text(encoding="utf-8"), str(p))
        for tree in TREES
        for p in sorted((ROOT / tree).rglob("*.py"))
    }


def _span(node: ast.AST) -> int:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return node.end_lineno - first + 1


def oversized_functions(trees: dict[Path, ast.Module], limit: int = MAX_FUNCTION) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{n.lineno} {n.name} ({_span(n)} lines)"
        for p, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _span(n) > limit
    ]


def oversized_classes(trees: dict[Path, ast.Module], limit: int = MAX_CLASS) -> list[str]:
    """A class's size includes every class of the tree it inherits from (mixins share its state)."""
    classes = {n.name: n for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)}

    def size(c: ast.ClassDef, seen: frozenset = frozenset()) -> int:
        total = _span(c)
        for b in c.bases:
            name = b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else None
            if name in classes and name not in seen and classes[name] is not c:
                total += size(classes[name], seen | {c.name})
        return total

    return [
        f"{p.relative_to(ROOT)}:{n.lineno} {n.name} ({size(n)} lines)"
        for p, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, ast.ClassDef) and size(n) > limit
    ]


def test_no_function_is_over_80_lines():
    assert oversized_functions(_sources()) == []


def test_no_class_with_its_bases_is_over_500_lines():
    assert oversized_classes(_sources()) == []


def test_no_file_is_over_1000_lines_and_the_median_file_is_150_to_400():
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in _sources()}
    assert [str(p.relative_to(ROOT)) for p, n in sizes.items() if n > MAX_FILE] == []
    assert 150 <= statistics.median(sizes.values()) <= 400


def test_the_limits_catch_a_mixin_class_and_a_long_function():
    src = (
        "class A:\n" + "    x = 1\n" * 300 + "class B:\n" + "    y = 1\n" * 300 + "class C(A, B):\n    pass\n"
        "def f():\n" + "    pass\n" * 81
    )
    trees = {ROOT / "flow2py" / "fake.py": ast.parse(src)}
    assert [s.split()[1] for s in oversized_classes(trees)] == ["C"]
    assert [s.split()[1] for s in oversized_functions(trees)] == ["f"]
