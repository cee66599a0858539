"""Every ```flow block of docs/spec/*.md is checked by the real checker.

The convention (docs/spec/README.md, "Examples"): the last non-blank line before a block may be a
marker `<!-- example: ... -->`:

- no marker: the block is a whole module and checks clean;
- `error E201 [E202 ...]`: the block checks with diagnostics whose codes are exactly those listed;
- `in DIR` (alone or after `error ...`): the block is checked as DIR/main.flow, next to the modules
  in DIR (and with DIR/cache/ as the module cache when it exists); DIR is relative to the project;
- `skip (reason)`: not checked, the reason is required (a block that needs modules nobody wrote);
- `fragment`: not a module (an expression, a few statements); not checked.

A trailing `(note)` is allowed after any marker. A block whose paragraph names a golden source file
(`golden/.../x.flow`) must also be that file, byte for byte.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import Optional

import pytest

from check_helpers import ROOT
from flow2py.check import check_source

SPEC = os.path.join(ROOT, "docs", "spec")
MARKER = re.compile(r"^<!--\s*example:(?P<body>.*?)-->\s*$")
CODE = re.compile(r"^E\d{3}$")


@dataclass(frozen=True)
class Block:
    page: str  # file name, e.g. "types.md"
    line: int  # 1-based line of the opening fence
    text: str
    marker: Optional[str]  # the marker's body, or None
    golden: Optional[str]  # a golden source file named just above the block

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Expect:
    kind: str  # "clean", "error", "skip", "fragment"
    codes: frozenset = frozenset()
    folder: Optional[str] = None
    note: str = ""


def extract(path: str) -> list[Block]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```flow":
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if j == len(lines):
                raise AssertionError(f"{os.path.basename(path)}:{i + 1}: ```flow block is never closed")
            before = [x.strip() for x in lines[max(0, i - 4) : i] if x.strip()]
            m = MARKER.match(before[-1]) if before else None
            golden = None
            for x in before:
                g = re.search(r"`(golden/[^`]+\.flow)`", x)
                if g:
                    golden = g.group(1)
            text = "\n".join(lines[i + 1 : j]) + "\n"
            out.append(
                Block(os.path.basename(path), i + 1, text, m.group("body").strip() if m else None, golden)
            )
            i = j
        i += 1
    return out


def parse_marker(body: Optional[str]) -> Expect:
    if body is None:
        return Expect("clean")
    note = ""
    m = re.search(r"\((.*)\)\s*$", body)
    if m:
        note, body = m.group(1).strip(), body[: m.start()].strip()
    words = body.split()
    if words == ["fragment"]:
        return Expect("fragment", note=note)
    if words == ["skip"]:
        if not note:
            raise ValueError("`skip` needs a reason in parentheses")
        return Expect("skip", note=note)
    kind, codes, folder = "clean", [], None
    if words and words[0] == "error":
        kind, words = "error", words[1:]
        while words and CODE.match(words[0]):
            codes.append(words.pop(0))
        if not codes:
            raise ValueError("`error` needs at least one code (E123)")
    if words[:1] == ["in"] and len(words) == 2:
        folder, words = words[1], []
    if words:
        raise ValueError(f"unknown example marker `{body}`")
    return Expect(kind, frozenset(codes), folder, note)


def all_blocks() -> list[Block]:
    out: list[Block] = []
    for path in sorted(glob.glob(os.path.join(SPEC, "*.md"))):
        out.extend(extract(path))
    return out


BLOCKS = all_blocks()


def test_the_spec_has_flow_examples_and_every_marker_belongs_to_a_block():
    assert len(BLOCKS) > 50
    used = {(b.page, b.line) for b in BLOCKS if b.marker is not None}
    for path in sorted(glob.glob(os.path.join(SPEC, "*.md"))):
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for n, x in enumerate(lines, 1):
            if MARKER.match(x.strip()):
                nxt = next(k for k in range(n, len(lines)) if lines[k].strip())
                page = os.path.basename(path)
                assert lines[nxt].strip() == "```flow" and (page, nxt + 1) in used, (
                    f"{page}:{n}: example marker not followed by a ```flow block"
                )


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_spec_example_checks_as_marked(block: Block):
    expect = parse_marker(block.marker)
    if expect.kind in ("skip", "fragment"):
        pytest.skip(f"{expect.kind}: {expect.note}" if expect.note else expect.kind)
    if expect.folder:
        folder = os.path.join(ROOT, expect.folder)
        assert os.path.isdir(folder), f"{block.name}: no folder {expect.folder}"
        cache = os.path.join(folder, "cache")
        result = check_source(
            block.text, os.path.join(folder, "main.flow"), cache_dir=cache if os.path.isdir(cache) else None
        )
    else:
        # a folder with nothing in it: `use "./x"` finds nothing by accident
        result = check_source(block.text, os.path.join(SPEC, "__example__", "main.flow"))
    got = sorted({d.code for d in result.diagnostics})
    shown = "\n".join(f"  {d.code} {d.message}" for d in result.diagnostics)
    if expect.kind == "clean":
        assert not result.diagnostics, f"{block.name}: expected to check clean, got:\n{shown}"
        assert result.program is not None
    else:
        assert got == sorted(expect.codes), f"{block.name}: expected {sorted(expect.codes)}, got:\n{shown}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.golden], ids=lambda b: b.name)
def test_spec_example_is_the_golden_source_it_names(block: Block):
    with open(os.path.join(ROOT, block.golden), encoding="utf-8") as f:
        assert block.text == f.read(), f"{block.name} differs from {block.golden}"


@pytest.mark.parametrize(
    "body, expect",
    [
        (None, Expect("clean")),
        ("error E201", Expect("error", frozenset({"E201"}))),
        ("error E001 E004", Expect("error", frozenset({"E001", "E004"}))),
        (
            "error E104 in golden/diagnostics/E104_import_cycle",
            Expect("error", frozenset({"E104"}), "golden/diagnostics/E104_import_cycle"),
        ),
        (
            "in tests/std_flow (svc.flow is there)",
            Expect("clean", folder="tests/std_flow", note="svc.flow is there"),
        ),
        ("skip (needs module planner)", Expect("skip", note="needs module planner")),
        ("fragment", Expect("fragment")),
    ],
)
def test_marker_forms_parse(body, expect):
    assert parse_marker(body) == expect


@pytest.mark.parametrize("body", ["skip", "error", "error E1", "wrapped", "in", "error E201 and more"])
def test_malformed_markers_are_refused(body):
    with pytest.raises(ValueError):
        parse_marker(body)
