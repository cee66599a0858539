"""Golden diagnostics: golden/diagnostics/NAME.flow (or NAME/main.flow for a multi-module case,
with an optional NAME/cache/ module cache) next to NAME.expected, the exact `render_text` output.

Set FLOW2PY_UPDATE_GOLDEN=1 to rewrite the expected files."""

import os
from collections import Counter

import pytest

from check_helpers import ROOT
from flow2py.check import check_program
from flow2py.diagnostics import render_text
from flow2py.fix import Applied, apply_planned, check_with, chosen_fix

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


#: golden cases whose mistakes have safe fixes (so the property above is not vacuous for them)
WITH_SAFE_FIXES = {
    "E101_constructor_the_other_arms_leave",
    "E101_other_language_values",
    "E103_path_into_a_folder",
    "E112_unused_import",
    "E201_value_where_a_function_is_expected",
    "E205_function_read_as_field",
    "E209_text_concat",
    "E209_one_join",
    "E012_record_fields_with_equals",
    "E012_list_comprehension",
    "E012_go_results",
    "E012_qualified_constructor_pattern",
    "E012_update_parenthesised",
    "E112_unused_import_between_blank_lines",
    "E109_private_used_at_several_places",
    "E301_at_the_signature",
    "E301_fix_marks_the_signature",
    "E301_undeclared_effect",
    "E403_discard_with_let",
    "E403_non_unit_statement",
    "E404_unused_binding",
}


def _counts(diags):
    return Counter((d.code, d.message) for d in diags)


def _callers_reported(diags, fixed_fn: str, texts) -> bool:
    """Whether each diagnostic is E301 on a function that calls `fixed_fn`: the one consequence
    a safe fix may have (marking a function `!tool` makes its unmarked callers reach a Tool),
    itself reported with a safe fix. E301 is at the caller's signature, the calls that reach a
    Tool its notes "this reaches a Tool" and "this also reaches a Tool"."""
    for d in diags:
        if d.code != "E301" or not any(f.safe for f in d.fixes):
            return False
        source = texts.get(d.span.file, "")
        uses = [r.span for r in d.related if r.message in ("this reaches a Tool", "this also reaches a Tool")]
        if not any(fixed_fn in source[u.start : u.end] for u in uses):
            return False
    return True


@pytest.mark.parametrize("name", cases())
def test_safe_fixes_remove_their_diagnostic_and_add_none(name, monkeypatch):
    """Every safe fix of every golden case, applied alone (in whichever of the program's files
    it edits), removes its diagnostic and adds none; the only thing re-checking may add is E301
    on a caller of a function the fix marked `!tool`, which has its own safe fix."""
    monkeypatch.chdir(ROOT)
    entry, cache = _entry(name)
    r, own = check_with(entry, {}, cache)
    before = _counts(r.diagnostics)
    tried = 0
    for d in r.diagnostics:
        fix = chosen_fix(d)
        if fix is None or not fix.safe:
            continue
        assert all(e.span.file in own for e in fix.edits), "a safe fix edits only the program's own files"
        tried += 1
        texts = apply_planned(r.sources, [Applied(d, fix)])
        assert texts, "a safe fix changes the text"
        after, _ = check_with(entry, texts, cache)
        now = _counts(after.diagnostics)
        assert now[(d.code, d.message)] == before[(d.code, d.message)] - 1, "its diagnostic is gone"
        added = [x for x in after.diagnostics if now[(x.code, x.message)] > before[(x.code, x.message)]]
        if added and d.code == "E301":
            fn = d.message.split("`")[1]
            assert _callers_reported(added, fn, after.sources), f"fix added {added}"
        else:
            assert not added, f"fix added {[(x.code, x.message) for x in added]}"
    if name in WITH_SAFE_FIXES:
        assert tried, "this golden case has a safe fix"
