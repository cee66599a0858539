"""Code generation: a checked Flow program -> readable Python modules (docs/spec/codegen.md).

    generate(program)              -> {module key: GeneratedModule}   one per Flow module
    package_files(program)         -> {relative path: text}           what build_package writes
    build_package(program, out_dir, package_name=None) -> path of the package folder

The pipeline: names for every declaration (module.ProgramNames) -> one libcst tree per module
(module.ModuleGen, bodies by lower.py's functions over one lower_base.Body state) -> `black`. The package's `__init__.py` (package.py)
holds the `PROGRAM = rt.Program(...)` descriptor and loads its submodules through
`rt.load_generated`, so tracebacks and pdb show Flow files and lines.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import black

from flow2py.check.typed import CheckedProgram
from flow2py.codegen.lower import CodegenError
from flow2py.codegen.module import ModuleGen, ProgramNames

__all__ = ["CodegenError", "GeneratedModule", "build_package", "generate", "package_files"]


@dataclass
class GeneratedModule:
    key: str  # the Flow module key (`main`, `std@v1/task`)
    python_name: str  # dotted, relative to the generated package (`std_v1.task`)
    flow_file: str  # the name markers and tracebacks use (`main.flow`, `std@v1/task.flow`)
    source: str  # black-formatted Python

    @property
    def relpath(self) -> str:
        return self.python_name.replace(".", "/") + ".py"


@functools.lru_cache(maxsize=512)
def format_code(code: str) -> str:
    # black is deterministic and most of a build's time; std's modules come out the same text
    # for every program, so a process compiling several programs formats them once
    return black.format_str(code, mode=black.Mode())


def generate(program: CheckedProgram) -> dict[str, GeneratedModule]:
    names = ProgramNames(program)
    out: dict[str, GeneratedModule] = {}
    for key in program.modules:
        mg = ModuleGen(names, key)
        tree = mg.generate()
        out[key] = GeneratedModule(key, mg.path, mg.flow_file, format_code(tree.code))
    return out


def package_files(
    program: CheckedProgram, modules: dict[str, GeneratedModule] | None = None
) -> dict[str, str]:
    """Every file of the generated package by relative path (`__init__.py`, `std_v1/task.py`)."""
    from flow2py.codegen.package import init_source

    modules = modules if modules is not None else generate(program)
    files = {m.relpath: m.source for m in modules.values()}
    for m in modules.values():
        parts = m.python_name.split(".")[:-1]
        for i in range(1, len(parts) + 1):
            files.setdefault("/".join(parts[:i]) + "/__init__.py", "")
    files["__init__.py"] = format_code(init_source(program, modules))
    return files


def build_package(program: CheckedProgram, out_dir: str, package_name: str | None = None) -> str:
    """Write the package to `out_dir/<package_name>` (default: the entry module's name) and return
    that folder. A host imports it normally: `import <package_name>`; `<package>.PROGRAM`."""
    package_name = package_name or default_package_name(program)
    if not package_name.isidentifier():
        raise ValueError(f"package name {package_name!r} is not a Python identifier")
    root = os.path.join(out_dir, package_name)
    for rel, text in package_files(program).items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def default_package_name(program: CheckedProgram) -> str:
    from flow2py.codegen.names import python_module

    return python_module(program.entry_module).rsplit(".", 1)[-1] + "_flow"
