"""Every dotted `flowrt.` or `flow2py.` name that docs/, README.md or a source file of flow2py/ and
runtime/ cites exists: its module imports, and each further part is an attribute of it. A module is
cited by its own name: `flowrt.lang` (flowrt.data.lang re-exported as flowrt.abi's `lang`) is
not a module path, `flowrt.data.lang` is. Every file path they cite exists (`flowrt/` is
runtime/). And no page or docstring sends a reader to ../shared for a rule: the repository's own
docs/spec is what it cites."""

from __future__ import annotations

import importlib
import re
import types

import pytest
from import_graph import ROOT

NAME = re.compile(r"(?<![\w./-])((?:flowrt|flow2py)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
PATH = re.compile(
    r"(?<![\w./~-])((?:flowrt|flow2py|runtime|tests|bench|golden|examples|std|docs)/[\w./-]*\w)(?![\w<*])"
)
#: the two pages that say where the project's normative inputs (the seeds) come from
PROVENANCE = ("README.md", "docs/spec/README.md")
FILE_SUFFIXES = (".py", ".md", ".flow", ".lark", ".toml", ".txt", ".json", ".db")


def cited_files() -> list:
    return sorted(
        [
            *ROOT.glob("docs/**/*.md"),
            ROOT / "README.md",
            *ROOT.glob("flow2py/**/*.py"),
            *ROOT.glob("runtime/**/*.py"),
        ]
    )


def cited_names(text: str) -> set[str]:
    """The dotted names in `text`, without file names (`flow2py/check/driver.py` is no module
    path; `flowrt.abi.py` would be a file name too)."""
    return {m.group(1) for m in NAME.finditer(text) if not m.group(1).endswith(FILE_SUFFIXES)}


def problem(name: str) -> str | None:
    """Why `name` names nothing (None when it does)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        path = ".".join(parts[:i])
        for part in parts[i:]:
            if not hasattr(obj, part):
                return f"{path} has no {part}"
            obj, path = getattr(obj, part), f"{path}.{part}"
            if isinstance(obj, types.ModuleType) and obj.__name__ != path:
                return f"{path} is the module {obj.__name__}: cite it by that name"
        return None
    return "no such module"


def test_every_cited_name_exists():
    cited = {}
    for f in cited_files():
        for name in cited_names(f.read_text(encoding="utf-8")):
            cited.setdefault(name, f.relative_to(ROOT).as_posix())
    assert "flowrt.data.lang.list_map" in cited and "flowrt.host" in cited  # the scan sees the docs
    wrong = {name: f"{where}: {problem(name)}" for name, where in sorted(cited.items()) if problem(name)}
    assert wrong == {}


@pytest.mark.parametrize(
    "name, why",
    [
        ("flowrt.data.lang.list_map", None),
        ("flowrt.host.nested.flow_tool", None),
        ("flowrt.lang.list_map", "flowrt.lang is the module flowrt.data.lang: cite it by that name"),
        ("flowrt.data.lang.no_such_fn", "flowrt.data.lang has no no_such_fn"),
        ("flowrt.jsontext", "flowrt has no jsontext"),
    ],
)
def test_a_name_is_true_only_under_its_own_module_path(name, why):
    assert problem(name) == why


def test_file_names_are_not_taken_for_module_paths():
    assert cited_names("see flow2py/check/driver.py, flowrt.abi and flowrt.data.lang.int_add.") == {
        "flowrt.abi",
        "flowrt.data.lang.int_add",
    }


def test_every_cited_file_exists():
    missing = []
    for f in cited_files():
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for path in PATH.findall(line):
                on_disk = "runtime/" + path.removeprefix("flowrt/") if path.startswith("flowrt/") else path
                if "..." not in path and not (ROOT / on_disk).exists():
                    missing.append(f"{f.relative_to(ROOT).as_posix()}:{n}: {path}")
    assert missing == []


def test_a_file_path_is_told_from_a_cache_folder_or_a_glob():
    line = (
        "see flowrt/host/nested.py, ~/.cache/flow2py/repos, golden/codegen/*.py and golden/x/E1_<name>.flow"
    )
    assert PATH.findall(line) == ["flowrt/host/nested.py", "golden/codegen", "golden/x"]


def test_nothing_cites_the_shared_folder_beside_the_repository():
    citing = [
        f"{f.relative_to(ROOT).as_posix()}:{n}"
        for f in cited_files()
        if f.relative_to(ROOT).as_posix() not in PROVENANCE
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if "../shared" in line or "DESIGN.md" in line
    ]
    assert citing == []
