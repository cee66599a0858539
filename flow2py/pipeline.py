"""The pipeline on one screen: how a Flow program's text becomes Python a run can execute.

    ProgramText --read-->     Modules (every module found, read and parsed: check/modgraph.py)
                --check-->    CheckResult (every diagnostic, or the CheckedProgram; `checked`
                              takes the program or stops the pipeline at the diagnostics)
                --generate--> GeneratedPackage (the package's Python files, in memory)
                --load-->     LoadedProgram (the package executed; what the runtime drives)

    compile_program(text) = LoadedProgram(checked(check(read(text))), load(generate(checked)))
    compile_program(text, cache)  the same, or the entry of flow2py.cache that an earlier
                                  compile of the same text by the same compiler wrote
    write(checked, out_dir)  the generated package on disk instead (`flow2py build`)

`compile_program` calls the stages top-down; every caller that turns text into something it
runs or inspects goes through here: the CLI (check, build, tools, run, test), flow2py.host
(which adds the run operations around it), flow2py.testing and its pytest plugin, and the
compiles of a run's stored sources for resume, replay, history and fork.

A program's text comes from one of three places (`ProgramText`): the files on disk, starting at
an entry path; the module sources a run's history stores, with the repository commits it
started on; or a submitted bundle's module texts, with its pins (flow2py/bundles.py), read
like files but never from disk. A stored program is compiled from those sources alone, never from disk, and must
give back the program identity the run started on: a run continues on its own program or not
at all.

Errors follow the Elm compiler: inside a stage, independent parts keep reporting, so one check
lists every mistake (the checker's driver, flow2py/check/driver.py, says which parts those
are); between stages, the first failure stops the pipeline, because a later stage run over a
program that did not check would only report noise. A stopped pipeline is a `Refused` with the
rendered diagnostics (on disk) or their first line (a stored program), and records nothing.

The generated package is named by the program's identity, so a program already loaded in this
process is neither generated nor executed again: the load stage finds it in `sys.modules`.
Across processes, flow2py.cache keeps each compile beside the store; the checker and codegen are
imported only by the stages that use them, so a cache hit never loads lark, libcst or black.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import flowrt as rt
from flowrt.host import Refused, Runnable

from flow2py import cache as program_cache
from flow2py.diagnostics import render_text

if TYPE_CHECKING:  # the checker is imported where a stage runs: a cache hit never loads it
    from flow2py.check import CheckResult, Modules
    from flow2py.check.typed import CheckedProgram

__all__ = [
    "GeneratedPackage",
    "LoadedProgram",
    "ProgramText",
    "already_loaded",
    "cache_key",
    "check",
    "checked",
    "compile_program",
    "from_cache",
    "generate",
    "load",
    "package_program",
    "read",
    "read_and_check",
    "write",
]


@dataclass(frozen=True)
class ProgramText:
    """Where a program's text comes from: the files under `entry_path`, or (`sources`, module key
    -> text, with `commits`, repository -> commit) the sources a run stored, nothing from disk.
    `run_id` and `identity` name the run that stored them and the program it started on.
    `bundle` (module key -> text) and `pins` (flow.lock's `repos`): a submitted bundle's own
    modules and pins (flow2py/bundles.py); std and the module cache give the rest."""

    entry_path: str
    sources: dict[str, str] | None = None
    commits: dict[str, str] | None = None
    run_id: str | None = None
    identity: str | None = None
    bundle: dict[str, str] | None = None
    pins: dict | None = None

    @classmethod
    def stored(cls, run_id: str, identity: str, sources: dict[str, str], meta: dict | None) -> ProgramText:
        meta = meta or {}
        return cls(
            f"{meta.get('entry_module') or 'main'}.flow", sources, meta.get("commits"), run_id, identity
        )


@dataclass(frozen=True)
class GeneratedPackage:
    """A checked program's generated Python package, in memory: its import name (from the
    program's identity) and every file by relative path (`__init__.py`, `std_v1/task.py`)."""

    name: str
    files: dict[str, str]


class LoadedProgram(Runnable):
    """A checked program compiled to Python and loaded (flowrt.host.Runnable), with the checker's
    view of it: which Tools a given entry can reach, and what recompiling it needs."""

    def __init__(self, checked: CheckedProgram, program: rt.Program | None = None):
        super().__init__(program if program is not None else package_program(checked))
        self.checked = checked
        self._reachable: dict = {}

    def reachable(self, entry: str | None = None):
        """(tool_id, qualified name) of every Tool reachable from `entry` (default: the entry
        module's functions), as the runtime's binding check wants them. Kept per entry: the
        checker's walk over the program (~0.2 ms for a small one) was made again every run."""
        got = self._reachable.get(entry)
        if got is None:
            from flow2py.check.reach import entry_roots, reachable_tools

            wanted = set(reachable_tools(self.checked, entry_roots(self.checked, entry)))
            got = self._reachable[entry] = tuple(t for t in self.program.tools if t[0] in wanted)
        return got

    @property
    def tests(self) -> list[dict]:
        """The program's `@test` functions (flow2py.cache.test_cases)."""
        return program_cache.test_cases(self.checked)

    @property
    def fakes(self) -> list[tuple[str, str]]:
        """(tool id, function name) of every `@fake` function."""
        return program_cache.fakes(self.checked)

    def meta(self, path: str | None = None, **extra) -> dict:
        """The host's JSON kept with a run: what compiling its stored sources needs."""
        out = {"entry_module": self.checked.entry_module, "commits": self.checked.commits}
        if path:
            out["path"] = os.path.abspath(path)
        out.update(extra)
        return out


def compile_program(text: ProgramText, cache: program_cache.ProgramCache | None = None) -> Runnable:
    """The whole pipeline: text -> modules -> checked program -> generated package -> loaded.
    With a `cache` (flow2py.cache), a program compiled before is loaded from its entry instead
    (a `CachedProgram`, which runs the same), and a compile writes the entry it missed."""
    if cache is None:
        program = checked(read_and_check(text)[1], text)
        return LoadedProgram(program, package_program(program))
    key = cache_key(text)
    return from_cache(cache, key, text) or _compile_into(cache, key, text)


def from_cache(cache: program_cache.ProgramCache, key: program_cache.Key, text: ProgramText):
    """The program of a verified cache entry, or None (no entry, or one that is not trusted)."""
    body = cache.get(key)
    if body is None:
        return None
    if text.identity not in (None, body["program"]["identity"]):
        cache.ignored += 1  # keyed by the identity too: only a forged entry gets here
        return None
    try:
        return program_cache.CachedProgram(body["program"])
    except Exception:  # noqa: BLE001  (an entry whose package does not load is not trusted)
        cache.ignored += 1
        return None


def _compile_into(cache: program_cache.ProgramCache, key: program_cache.Key, text: ProgramText) -> Runnable:
    """Compile, and keep the result under `key` (a program already loaded in this process is not
    generated again, so it is not written either)."""
    modules, result = read_and_check(text)
    program = checked(result, text)
    earlier = already_loaded(program)
    if earlier is not None:
        return LoadedProgram(program, earlier)
    package = generate(program)
    loaded = LoadedProgram(program, load(package))
    deps = None if text.sources is not None else program_cache.path_deps(text.entry_path, modules, program)
    if text.sources is not None or deps is not None:
        cache.put(key, program_cache.summarize(program, package), deps)
    return loaded


def read_and_check(text: ProgramText) -> tuple[Modules, CheckResult]:
    """The first two stages under one pause of the cyclic collector (flow2py.check.driver's
    collection_paused: turned on between them, it would walk the whole parsed program once)."""
    from flow2py.check.driver import collection_paused

    with collection_paused():
        modules = read(text)
        return modules, check(modules)


def cache_key(text: ProgramText) -> program_cache.Key:
    """The cache key of a program's text: its path, or a run's stored sources and identity."""
    if text.bundle is not None:
        return program_cache.Key.for_bundle(text.entry_path, text.bundle, text.pins)
    if text.sources is None:
        return program_cache.Key.for_path(text.entry_path)
    return program_cache.Key.for_stored(text.entry_path, text.identity, text.sources, text.commits)


def package_program(program: CheckedProgram) -> rt.Program:
    """The generated package's `PROGRAM`, from this process's earlier load when there is one."""
    return already_loaded(program) or load(generate(program))


# ---- the stages ----------------------------------------------------------------------------------


def read(text: ProgramText) -> Modules:
    """Find, read and parse every module the entry module reaches (check/modgraph.py)."""
    from flow2py.check import read_modules

    if text.sources is None and text.bundle is None and not os.path.isfile(text.entry_path):
        raise Refused(f"{text.entry_path}: no such file")
    return read_modules(
        text.entry_path, sources=text.sources, commits=text.commits, bundle=text.bundle, pins=text.pins
    )


def check(modules: Modules) -> CheckResult:
    """Check the program the modules make: every independent diagnostic, or the checked program."""
    from flow2py.check import check_modules

    return check_modules(modules)


def checked(result: CheckResult, text: ProgramText) -> CheckedProgram:
    """The checked program, or the refusal that stops the pipeline at its diagnostics."""
    if text.run_id is None:
        if result.diagnostics:
            raise Refused(render_text(result.diagnostics, result.sources).rstrip("\n"), diagnostics=True)
        return result.program
    if result.diagnostics:
        first = render_text(result.diagnostics, result.sources).splitlines()[0]
        raise Refused(f"run {text.run_id}: its stored program no longer checks: {first}")
    if result.program.identity != text.identity:
        raise Refused(
            f"run {text.run_id}: the stored sources give program {result.program.identity[:12]}, "
            f"but the run started on {text.identity[:12]}; refusing to continue on another program"
        )
    return result.program


def package_name(program: CheckedProgram) -> str:
    return f"_flow_{program.identity[:16]}"


def generate(program: CheckedProgram) -> GeneratedPackage:
    """The program's Python package, every module lowered and formatted (flow2py.codegen)."""
    from flow2py.codegen import package_files  # here, not above: `check` never pays for black and libcst

    return GeneratedPackage(package_name(program), package_files(program))


def already_loaded(program: CheckedProgram) -> rt.Program | None:
    """The program's package if this process loaded it (the same identity): nothing to redo."""
    pkg = sys.modules.get(package_name(program))
    return getattr(pkg, "PROGRAM", None)


def load(package: GeneratedPackage) -> rt.Program:
    """Execute the package's files (flowrt's loader, Flow files and lines) and take its PROGRAM."""
    return rt.load_package(package.name, package.files).PROGRAM


def write(program: CheckedProgram, out_dir: str, name: str | None = None) -> str:
    """The generated package written to `out_dir/<name>` (default: the entry module's name), for a
    host to import normally; returns that folder."""
    from flow2py.codegen import build_package

    return str(build_package(program, out_dir, name))
