"""Golden diagnostics: golden/diagnostics/NAME.flow (or NAME/main.flow for a multi-module case,
with an optional NAME/cache/ module cache) next to NAME.expected, the exact `render_text` output.

Set FLOW2PY_UPDATE_GOLDEN=1 to rewrite the expected files."""

import os
import shutil

import pytest

from check_helpers import ROOT
from flow2py.check import check_program
from flow2py.diagnostics import Fix, apply_fix, render_text

GOLDEN = os.path.join(ROOT, "golden", "diagnostics")


def cases():
    out = []
    for name in sorted(os.listdir(GOLDEN)):
        full = os.path.join(GOLDEN, name)
        if name.endswith(".flow"):
            out.append(name[:-5])
        elif os.path.isdir(full):
            out.append(name)
    return out


def _entry(name):
    folder = os.path.join("golden", "diagnostics", name)
    if os.path.isdir(os.path.join(ROOT, folder)):
        cache = os.path.join(ROOT, folder, "cache")
        return os.path.join(folder, "main.flow"), (cache if os.path.isdir(cache) else None)
    return folder + ".flow", None


def _run(name):
    entry, cache = _entry(name)
    return check_program(entry, cache_dir=cache)


@pytest.mark.parametrize("name", cases())
def test_golden_diagnostics(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = _run(name)
    text = render_text(r.diagnostics, r.sources)
    expected_path = os.path.join(GOLDEN, name + ".expected")
    if os.environ.get("FLOW2PY_UPDATE_GOLDEN"):
        with open(expected_path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(expected_path, encoding="utf-8") as f:
        assert text == f.read()
    code = name.split("_", 1)[0]
    assert code in {d.code for d in r.diagnostics}


def test_no_orphaned_expected_files():
    names = set(cases())
    for f in os.listdir(GOLDEN):
        if f.endswith(".expected"):
            assert f[:-9] in names, f"orphaned golden file {f}"


def _copy_case(name, dest):
    """The golden case `name` copied under `dest` at the same relative path (so diagnostics
    name the same files)."""
    src = os.path.join(GOLDEN, name)
    rel = os.path.join("golden", "diagnostics", name)
    if os.path.isdir(src):
        shutil.copytree(src, os.path.join(dest, rel))
    else:
        os.makedirs(os.path.join(dest, "golden", "diagnostics"), exist_ok=True)
        shutil.copy(src + ".flow", os.path.join(dest, rel + ".flow"))


def _apply_everywhere(root, fix):
    """Apply `fix` to the files it edits under `root` (a fix may edit another module's file:
    `pub` on a declaration used from here)."""
    by_file = {}
    for e in fix.edits:
        by_file.setdefault(e.span.file, []).append(e)
    for file, edits in by_file.items():
        path = os.path.join(root, file)
        assert os.path.isfile(path), f"a safe fix edits {file}, which is not the program's own"
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(apply_fix(text, Fix(fix.message, tuple(edits), fix.safe)))


@pytest.mark.parametrize("name", cases())
def test_safe_fixes_remove_their_diagnostic_and_add_none(name, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    r = _run(name)
    before = {(x.code, x.message) for x in r.diagnostics}
    n = 0
    for d in r.diagnostics:
        for fix in d.fixes:
            if not fix.safe:
                continue
            n += 1
            root = tmp_path / str(n)
            _copy_case(name, root)
            _apply_everywhere(root, fix)
            monkeypatch.chdir(root)
            entry, cache = _entry(name)
            after = check_program(entry, cache_dir=cache)
            monkeypatch.chdir(ROOT)
            now = {(x.code, x.message) for x in after.diagnostics}
            assert (d.code, d.message) not in now, fix.message
            assert now <= before, f"{fix.message} added {now - before}"
