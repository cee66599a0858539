"""Submitted bundles: a program given as module texts, checked and compiled from those texts alone
(docs/spec/modules.md, "Submitted bundles").

    {"entry": "main.flow",
     "modules": {"main.flow": "use \\"./lib\\"\\n...", "lib.flow": "..."},
     "pins": {"github.com/acme/tools": {"tag": "v1.2", "commit": "abc123"}},   optional
     "name": "planner-step"}                                                   optional

`parse_bundle(data)` holds the bundle to its shape and limits (`Limits`: module count, total
text, path shape: relative `/`-separated names ending `.flow`, no `..`, `.` or empty segment, no
absolute path) and refuses anything else in one line (`flowrt.host.bundles.BundleRefused`, no
diagnostics). Its modules are then read as if they were files in one folder, the entry's path
given as it is in the bundle: `use "./x"` finds `x.flow` in the bundle and nowhere else (a
module the bundle lacks is E103, whatever the working folder holds), `std@v1/...` comes from std,
and a repository `use` from the local module cache only, pinned by `pins` in place of
`flow.lock` (which is neither read nor written). So the diagnostics of a bundle (`diagnostics`,
`check_bundle`) are exactly what `flow2py check --format json ENTRY` prints for the same files
written to a folder and checked from it, with `pins` as its `flow.lock` (flow2py.diagnostics's
`to_json`, as data).

`compile_bundle(data)` gives the loaded program, through the program cache when one is given
(flow2py/cache.py, keyed by the texts and pins), or `BundleRefused` carrying the diagnostics. The
program's sources are those of any compiled program, so a run of it stores them in its history
and resume and replay compile them from the store (flow2py.host.compile_stored).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from flowrt.host.bundles import BundleRefused

from flow2py import pipeline
from flow2py import cache as program_cache
from flow2py.diagnostics import to_json
from flow2py.pipeline import LoadedProgram, ProgramText

__all__ = ["Bundle", "Limits", "LIMITS", "check_bundle", "compile_bundle", "diagnostics", "parse_bundle"]

_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")
_REPO = re.compile(r"^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_FIELDS = ("entry", "modules", "pins", "name")


@dataclass(frozen=True)
class Limits:
    """What a bundle may hold: modules, UTF-8 bytes of module text in all, characters of one path,
    folders deep, pins."""

    modules: int = 100
    total_bytes: int = 1 << 20
    path_chars: int = 200
    depth: int = 8
    pins: int = 50


LIMITS = Limits()


@dataclass(frozen=True)
class Bundle:
    """A bundle that passed its shape and limits: `entry` (its path in `modules`), `modules` (path
    -> text), `pins` (repository -> {"tag", "commit"}, as flow.lock's `repos`), `name`."""

    entry: str
    modules: dict[str, str]
    pins: dict
    name: str | None = None

    def keys(self) -> dict[str, str]:
        """Module key -> text: each path relative to the entry's folder, without `.flow`, as
        flow2py.check.modgraph keys a module on disk."""
        base = posixpath.dirname(self.entry) or "."
        return {posixpath.relpath(p, base).removesuffix(".flow"): t for p, t in self.modules.items()}

    def text(self) -> ProgramText:
        return ProgramText(self.entry, bundle=self.keys(), pins=self.pins)


def _refuse(message: str):
    raise BundleRefused(f"bundle: {message}")


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(v), "null" if v is None else "a number"
    )


def _path_problem(path: str, limits: Limits) -> str | None:
    """Why `path` is not a module path of a bundle, or None."""
    if not path:
        return "a module path is empty"
    shown = json.dumps(path[:80], ensure_ascii=True)
    if len(path) > limits.path_chars:
        return f"module path {shown}... is over {limits.path_chars} characters"
    if path.startswith("/") or "\\" in path or ":" in path:
        return f'module path {shown} is not relative: write a path inside the bundle, such as "lib/util.flow"'
    parts = path.split("/")
    if any(p in ("..", ".") for p in parts):
        return f"module path {shown} steps out of its folder (`..` or `.`): write a path inside the bundle"
    if not path.endswith(".flow") or len(parts[-1]) <= len(".flow"):
        return f"module path {shown} does not name a `.flow` file"
    if len(parts) > limits.depth:
        return f"module path {shown} is more than {limits.depth} folders deep"
    names = parts[:-1] + [parts[-1][: -len(".flow")]]
    if not all(_SEGMENT.match(n) for n in names):
        return f"module path {shown}: each name may hold only letters, digits, `_` and `-`"
    return None


def _pins(value: Any, limits: Limits) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        _refuse(f"`pins` must be an object (flow.lock's `repos`), got {_kind(value)}")
    if len(value) > limits.pins:
        _refuse(f"{len(value)} pins; at most {limits.pins} are accepted")
    for repo, pin in value.items():
        if not _REPO.match(repo):
            _refuse(f"pin {json.dumps(repo[:80])} does not name a repository (host/owner/repo)")
        if (
            not isinstance(pin, dict)
            or set(pin) != {"tag", "commit"}
            or not all(isinstance(pin[k], str) and pin[k] and len(pin[k]) <= 200 for k in pin)
        ):
            _refuse(f'pin {repo}: expected {{"tag": "...", "commit": "..."}}')
    return {repo: dict(pin) for repo, pin in value.items()}


def parse_bundle(data: Any, limits: Limits = LIMITS) -> Bundle:
    """The bundle `data` (JSON form) holds, or BundleRefused in one line (module docstring)."""
    if not isinstance(data, dict):
        _refuse(f"expected an object with `entry` and `modules`, got {_kind(data)}")
    unknown = [k for k in data if k not in _FIELDS]
    if unknown:
        _refuse(f"unknown field {json.dumps(str(unknown[0])[:80])}; expected {', '.join(_FIELDS)}")
    entry, modules = data.get("entry"), data.get("modules")
    if not isinstance(modules, dict) or not modules:
        _refuse(
            f"`modules` must be an object of module path -> text with at least one module, got {_kind(modules)}"
        )
    if len(modules) > limits.modules:
        _refuse(f"{len(modules)} modules; at most {limits.modules} are accepted")
    total = 0
    for path, text in modules.items():
        problem = _path_problem(path, limits)
        if problem:
            _refuse(problem)
        if not isinstance(text, str):
            _refuse(f"module {path}: its text must be a string, got {_kind(text)}")
        total += len(text.encode("utf-8", "surrogatepass"))
        if total > limits.total_bytes:
            _refuse(
                f"the modules hold over {limits.total_bytes} bytes of text; at most {limits.total_bytes} are accepted"
            )
    if not isinstance(entry, str) or entry not in modules:
        listed = ", ".join(sorted(modules)[:5]) + (", ..." if len(modules) > 5 else "")
        _refuse(f"`entry` must name one of the modules ({listed}), got {json.dumps(entry)[:80]}")
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or not 0 < len(name) <= 100):
        _refuse("`name` must be text of 1 to 100 characters")
    return Bundle(entry, dict(modules), _pins(data.get("pins"), limits), name)


def _checked(bundle: Bundle):
    text = bundle.text()
    modules, result = pipeline.read_and_check(text)
    return text, modules, result


def diagnostics(data: Any, limits: Limits = LIMITS) -> list[dict]:
    """The bundle's diagnostics, exactly `check --format json`'s array as data ([]: it checks)."""
    _, _, result = _checked(parse_bundle(data, limits))
    return json.loads(to_json(result.diagnostics))


check_bundle = diagnostics  # the name the runtime calls (flowrt.host.bundles.check_bundle)


def _refused(result) -> BundleRefused:
    diags = json.loads(to_json(result.diagnostics))
    first = diags[0]
    where = f"{first['file']}:{first['line']}:{first['column']}"
    more = f" (and {len(diags) - 1} more)" if len(diags) > 1 else ""
    return BundleRefused(
        f"the bundle does not check: {where}: {first['code']} {first['message']}{more}", diags
    )


def compile_bundle(
    data: Any, *, cache: program_cache.ProgramCache | None = None, limits: Limits = LIMITS
) -> pipeline.Runnable:
    """The bundle's program, loaded (from `cache` when this compiler compiled these texts before),
    or BundleRefused: its shape or a limit (no diagnostics) or its diagnostics."""
    bundle = parse_bundle(data, limits)
    text = bundle.text()
    key = pipeline.cache_key(text) if cache is not None else None
    if cache is not None:
        found = pipeline.from_cache(cache, key, text)
        if found is not None:
            return found
    _, modules, result = _checked(bundle)
    if result.diagnostics:
        raise _refused(result)
    program = result.program
    earlier = pipeline.already_loaded(program)
    if earlier is not None:
        return LoadedProgram(program, earlier)
    package = pipeline.generate(program)
    loaded = LoadedProgram(program, pipeline.load(package))
    if cache is not None:
        deps = program_cache.repository_deps(modules, program)
        if deps is not None:
            cache.put(key, program_cache.summarize(program, package), deps)
    return loaded
