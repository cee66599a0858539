"""Loading generated packages so that Python reports Flow files and lines.

Generated code marks every statement with the Flow line it comes from (`# flow: main.flow:12`).
`load_generated` compiles each generated module from its Python text after moving every node of
a statement to the Flow line of that statement's marker, with the Flow file as the file name,
and registers the Flow source with `linecache`. A traceback or pdb inside generated code then
shows `main.flow`, line 12, and that line's Flow text; the runtime locates faults the same way.

Two ways in, one mechanism:

* a built package on disk: its `__init__.py` calls `rt.load_generated(__name__, MODULES,
  SOURCES, FILES)`, which reads each submodule's `.py` file from the package folder;
* in memory (the host compiling stored sources for resume or replay):
  `rt.load_package(name, files)` with the texts `flow2py.codegen.package_files` produces.

No import hooks are installed: each module is compiled and executed here, then placed in
`sys.modules`, so a later `import pkg.main` finds it.
"""

from __future__ import annotations

import ast
import io
import linecache
import os
import re
import sys
import tokenize
import types
from typing import Callable, Optional

from flowrt.data.values import ClassTable, class_table

__all__ = ["Program", "load_generated", "load_package", "flow_lines", "compile_generated"]

_MARK = re.compile(r"#\s*flow:\s*(.+):(\d+)\s*$")


class Program:
    """The descriptor a generated package exposes as `PROGRAM` (docs/spec/abi.md, "Modules").

    identity      blake3 hex of the program (history's Start fact)
    std           std version, e.g. "std@v1"
    entry_module  the entry module's key
    sources       module key -> Flow source text (history stores them by content hash)
    modules       module key -> Python module name relative to the package (`std_v1.task`)
    files         module key -> Flow file name used in markers and tracebacks (`main.flow`)
    tools         every Tool the program can reach: ((tool_id, qualified name), ...)
    entries       function name -> (function, ((param name, type descriptor), ...)) for the entry
                  module's functions a run can start at
    package       the Python package name the modules were loaded under
    classes       the program's class table (`rt.ClassTable`): every generated record and variant
                  class of its modules by (declaration id, constructor), falling back to the
                  runtime's std classes; what decodes its history and restores its checkpoints.
                  Built from the loaded modules (`rt.class_table`) unless given.
    """

    def __init__(
        self,
        identity: str,
        std: str,
        entry_module: str,
        sources: dict,
        modules: dict,
        files: Optional[dict] = None,
        tools: tuple = (),
        entries: Optional[dict] = None,
        package: Optional[str] = None,
        classes: Optional[ClassTable] = None,
    ):
        self.identity = identity
        self.std = std
        self.entry_module = entry_module
        self.sources = dict(sources)
        self.modules = dict(modules)
        self.files = dict(files or {k: k + ".flow" for k in modules})
        self.tools = tuple(tuple(t) for t in tools)
        self.entries = dict(entries or {})
        self.package = package
        self._classes = classes
        if (
            classes is None
            and package is not None
            and all(f"{package}.{m}" in sys.modules for m in self.modules.values())
        ):
            # taken now, from the modules this package loaded: a later package loaded under the
            # same name (replacing them in sys.modules) does not change this program's classes
            self._classes = self._module_classes()

    @property
    def classes(self) -> ClassTable:
        """The program's class table (see the class docstring)."""
        if self._classes is None:
            self._classes = self._module_classes()
        return self._classes

    def _module_classes(self) -> ClassTable:
        if self.package is None:
            raise LookupError(f"{self!r} names no package to find its classes in; give classes=")
        return class_table(*(self.module(k) for k in self.modules))

    def entry(self, name: str = "main") -> tuple[Callable, tuple]:
        """The entry function `name` and its parameters `((name, descriptor), ...)`, the
        descriptors decoding a run's input (`rt.decode(desc, value)`)."""
        try:
            return self.entries[name]
        except KeyError:
            known = ", ".join(sorted(self.entries)) or "none"
            raise LookupError(
                f"no entry function {name!r} in module {self.entry_module!r} (entries: {known})"
            ) from None

    def module(self, key: str) -> types.ModuleType:
        """The loaded Python module of the Flow module `key`."""
        return sys.modules[f"{self.package}.{self.modules[key]}"]

    def __repr__(self):
        return f"Program({self.entry_module!r}, identity={self.identity[:12]!r})"


# ---- Flow lines ----------------------------------------------------------------------------------


def flow_lines(py_source: str) -> dict[int, tuple[str, int]]:
    """Python line -> (Flow file, Flow line) for every line carrying a `# flow:` marker."""
    out: dict[int, tuple[str, int]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(py_source).readline):
        if tok.type == tokenize.COMMENT:
            m = _MARK.match(tok.string)
            if m:
                out[tok.start[0]] = (m.group(1), int(m.group(2)))
    return out


_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.While,
    ast.For,
    ast.With,
    ast.Try,
    ast.Match,
)


def _header_end(node) -> int:
    """The last line of a statement's own text: its header for a compound statement."""
    if isinstance(node, ast.match_case):
        return node.body[0].lineno - 1 if node.body else node.pattern.end_lineno
    if isinstance(node, ast.Match):
        return node.cases[0].pattern.lineno - 1 if node.cases else node.end_lineno
    if isinstance(node, _COMPOUND):
        return max(node.body[0].lineno - 1, node.lineno)
    return node.end_lineno


def _relocate(tree: ast.Module, marks: dict[int, tuple[str, int]], default_line: int) -> None:
    """Move every node to the Flow line of the statement (or match case) that contains it."""

    def visit(node, line: int):
        if isinstance(node, (ast.stmt, ast.match_case)):
            start = node.lineno if isinstance(node, ast.stmt) else node.pattern.lineno
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.decorator_list:
                start = node.decorator_list[0].lineno
            for ln in range(start, _header_end(node) + 1):
                if ln in marks:
                    line = marks[ln][1]
                    break
        if hasattr(node, "lineno") and node.lineno is not None:
            node.lineno = line
            node.end_lineno = line
            node.col_offset = 0
            node.end_col_offset = 0
        for child in ast.iter_child_nodes(node):
            visit(child, line)

    for stmt in tree.body:
        visit(stmt, default_line)


def compile_generated(py_source: str, flow_file: str, flow_source: Optional[str] = None):
    """Compile generated Python so its code objects carry `flow_file` and Flow line numbers."""
    tree = ast.parse(py_source, filename=flow_file)
    _relocate(tree, flow_lines(py_source), 1)
    if flow_source is not None:
        # what tracebacks and pdb print for `flow_file`; mtime None keeps checkcache away
        linecache.cache[flow_file] = (len(flow_source), None, flow_source.splitlines(True), flow_file)
    return compile(tree, flow_file, "exec")


# ---- packages ------------------------------------------------------------------------------------


def _package(name: str, path: list[str]) -> types.ModuleType:
    mod = sys.modules.get(name)
    if mod is None:
        mod = types.ModuleType(name)
        mod.__path__ = path
        mod.__package__ = name
        sys.modules[name] = mod
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, mod)
    return mod


def _python_text(package: types.ModuleType, relpath: str) -> str:
    files = getattr(package, "__flow_files__", None)
    if files is not None:
        return files[relpath]
    with open(os.path.join(package.__path__[0], relpath), encoding="utf-8") as f:
        return f.read()


def load_generated(package: str, modules: dict, sources: dict, files: Optional[dict] = None) -> dict:
    """Compile and execute the generated submodules of `package` (already in `sys.modules`: the
    package's `__init__` calls this while it runs), in the order of `modules` (every module after
    what it uses). Returns module key -> Python module."""
    pkg = sys.modules[package]
    files = files or {k: k + ".flow" for k in modules}
    out = {}
    for key, pyname in modules.items():
        full = f"{package}.{pyname}"
        if full in sys.modules:
            out[key] = sys.modules[full]
            continue
        parts = pyname.split(".")
        for i in range(1, len(parts)):
            sub = ".".join(parts[:i])
            base = pkg.__path__[0] if pkg.__path__ else ""
            _package(f"{package}.{sub}", [os.path.join(base, *parts[:i])])
        text = _python_text(pkg, pyname.replace(".", "/") + ".py")
        code = compile_generated(text, files[key], sources.get(key))
        mod = types.ModuleType(full)
        mod.__file__ = files[key]
        mod.__package__ = full.rpartition(".")[0]
        mod.__flow_python__ = text  # the generated Python, for a reader who wants it
        sys.modules[full] = mod
        try:
            exec(code, mod.__dict__)
        except BaseException:
            del sys.modules[full]
            raise
        parent, _, child = full.rpartition(".")
        setattr(sys.modules[parent], child, mod)
        out[key] = mod
    return out


def load_package(name: str, files: dict[str, str]) -> types.ModuleType:
    """Create the generated package `name` from in-memory texts (relative path -> text, as
    `flow2py.codegen.package_files` gives them) and run its `__init__`; returns the package
    (`pkg.PROGRAM`). An already loaded package of that name is replaced."""
    for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[m]
    pkg = types.ModuleType(name)
    pkg.__path__ = []
    pkg.__package__ = name
    pkg.__file__ = f"<{name}>/__init__.py"
    pkg.__flow_files__ = dict(files)
    sys.modules[name] = pkg
    try:
        exec(compile(files["__init__.py"], pkg.__file__, "exec"), pkg.__dict__)
    except BaseException:
        for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[m]
        raise
    return pkg
