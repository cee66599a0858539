"""`flow2py fix` and flow2py/fix.py: which fixes a pass applies, repeating until clean, the
arms E401's fix inserts, and the command line (dry run, writes, exit codes)."""

import os
import textwrap

import pytest
from click.testing import CliRunner

from flow2py.check import check_source
from flow2py.cli import main
from flow2py.diagnostics import Diagnostic, Edit, Fix
from flow2py.fix import apply_fixes, chosen_fix, fix_program, fixes_for, plan_fixes
from flow2py.span import Span

SEVERAL = """\
@tool pub flow search(query: Text) -> Result<Text, Text>

flow first_hit(q: Text) -> Text = match search(q) {
    Ok(hit) => hit,
    Err(_) => "",
}

pub flow main(q: Text) -> Text = {
    first_hit(q).length()
    let unused = 3
    first_hit(q) + "!"
}
"""

UNFIXABLE = """\
pub flow main(q: Text) -> Int = {
    q.length()
    q - 1
}
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def codes(text, path="main.flow"):
    return sorted(d.code for d in check_source(text, path).diagnostics)


# -- choosing ---------------------------------------------------------------------------------


def _diag(*fixes):
    return Diagnostic("E404", "x", Span("f.flow", 1, 1, 1, 2, 0, 1), fixes=tuple(fixes))


def _fix(start, end, text, safe=True):
    return Fix("f", (Edit(Span("f.flow", 1, 1, 1, 1, start, end), text),), safe)


def test_a_diagnostic_with_several_fixes_gets_one_only_when_exactly_one_is_safe():
    assert chosen_fix(_diag(_fix(0, 1, "a"), _fix(0, 1, "b"))) is None
    assert chosen_fix(_diag(_fix(0, 1, "a"), _fix(0, 1, "b", False))).edits[0].text == "a"
    assert chosen_fix(_diag(_fix(0, 1, "a", False), _fix(0, 1, "b", False)), unsafe=True) is None
    assert chosen_fix(_diag(_fix(0, 1, "a", False))) is None
    assert chosen_fix(_diag(_fix(0, 1, "a", False)), unsafe=True).edits[0].text == "a"


def test_one_pass_never_applies_two_overlapping_edits():
    sources = {"f.flow": "abcdef"}
    diags = [
        _diag(_fix(1, 3, "X")),
        _diag(_fix(2, 4, "Y")),  # overlaps the first: left for the next pass
        _diag(_fix(4, 4, "Z")),  # an insertion where nothing else edits
        _diag(_fix(4, 4, "W")),  # a second insertion at the same place: its order would be a choice
    ]
    assert [a.fix.edits[0].text for a in plan_fixes(diags, sources)] == ["X", "Z"]
    assert apply_fixes(sources, diags) == {"f.flow": "aXdZef"}


def test_fixes_outside_the_programs_own_files_are_not_applied():
    sources = {"f.flow": "abc", "std@v1/list.flow": "xyz"}
    d = Diagnostic("E404", "x", Span("std@v1/list.flow", 1, 1, 1, 2, 0, 1), fixes=(_fix(0, 1, "q"),))
    other = Fix("f", (Edit(Span("std@v1/list.flow", 1, 1, 1, 1, 0, 1), "q"),), True)
    d = Diagnostic("E404", "x", d.span, fixes=(other,))
    assert apply_fixes(sources, [d], editable={"f.flow"}) == {}


# -- the program ------------------------------------------------------------------------------


def test_fixing_repeats_until_the_callers_of_a_function_marked_tool_are_marked_too(tmp_path):
    p = write(tmp_path, "main.flow", SEVERAL)
    report = fix_program([str(p)])
    assert report.diagnostics == []
    fixed = report.texts[str(p)]
    assert "flow first_hit(q: Text) -> Text !tool = match" in fixed
    assert "pub flow main(q: Text) -> Text !tool = {" in fixed
    assert '    let _ = first_hit(q).length()\n    let _unused = 3\n    first_hit(q) ++ "!"\n' in fixed
    assert report.passes == 2  # main reaches a Tool only once first_hit is marked
    assert p.read_text() == SEVERAL  # fix_program writes nothing
    assert codes(fixed) == []


def test_the_arms_fix_inserts_every_missing_arm_and_then_only_the_bodies_are_left(tmp_path):
    p = write(
        tmp_path,
        "main.flow",
        """\
        type E { A, B }
        type T { X(E), Y, Z }
        pub flow main(t: T) -> Int = match t {
            X(A) => 1,
        }
        pub flow one(t: (E, Bool)) -> Int = match t { (A, true) => 1 }
        """,
    )
    assert fix_program([str(p)]).texts == {}  # not safe: nothing applied by default
    report = fix_program([str(p)], unsafe=True)
    text = report.texts[str(p)]
    assert "    X(A) => 1,\n    X(B) => todo,\n    Y => todo,\n    Z => todo,\n}" in text
    assert "match t { (A, true) => 1, (A, false) => todo, (B, _) => todo }" in text
    # what is left is one unknown name per body to write, never "fixed" into another name
    assert {d.code for d in report.diagnostics} == {"E101"}
    assert len(report.diagnostics) == 5
    # with the bodies written, the match is exhaustive and no inserted arm is unreachable
    assert codes(text.replace("todo", "0")) == []


@pytest.mark.parametrize(
    "arms, ty",
    [
        ("Ok(Some(true)) => 1, Err(_) if true => 2", "Result<Option<Bool>, Int>"),
        ("[] => 0, [true, ..] => 1, [false] => 2", "List<Bool>"),
        ("(0, true) => 0, (_, false) => 1", "(Int, Bool)"),
        ("(true, true, _) => 0, (false, _, false) => 1, (_, false, true) => 2", "(Bool, Bool, Bool)"),
        ("[_, _, x] => x, [] => 0", "List<Int>"),
    ],
)
def test_the_inserted_arms_cover_exactly_what_was_missing(arms, ty):
    src = f"pub flow main(v: {ty}) -> Int = match v {{ {arms} }}\n"
    (d,) = check_source(src).diagnostics
    assert d.code == "E401"
    (fix,) = d.fixes
    text = apply_fixes({"main.flow": src}, [d], unsafe=True)["main.flow"]
    assert codes(text.replace("todo", "0")) == []  # exhaustive, and no inserted arm unreachable
    # each inserted arm is needed: without any one of them the match is not exhaustive
    inserted = [x.strip(" ,") + " => 0" for x in fix.edits[0].text.split("=> todo")[:-1]]
    assert len(inserted) >= 1
    for i in range(len(inserted)):
        rest = "".join(", " + x for j, x in enumerate(inserted) if j != i)
        assert "E401" in codes(src.replace(" }\n", rest + " }\n"))


# -- the command line -------------------------------------------------------------------------


def test_fix_dry_run_prints_a_unified_diff_and_writes_nothing(tmp_path):
    p = write(tmp_path, "main.flow", SEVERAL)
    r = invoke("fix", "--dry-run", p)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"--- {p}\n+++ {p}\n@@ ")
    assert '\n-    first_hit(q) + "!"\n' in r.stdout and '\n+    first_hit(q) ++ "!"\n' in r.stdout
    assert "would fix 5 mistakes in 1 file; nothing left" in r.stderr
    assert p.read_text() == SEVERAL


def test_fix_writes_a_file_with_several_mistakes_until_it_checks_clean(tmp_path):
    p = write(tmp_path, "main.flow", SEVERAL)
    os.chmod(p, 0o640)
    r = invoke("fix", p)
    assert r.exit_code == 0, r.output
    # E301 is reported at the signature (the function's name), where the fix goes
    assert f"fixed {p}:3:6: [E301] mark it `!tool`" in r.stderr
    assert "fixed 5 mistakes in 1 file; nothing left" in r.stderr
    assert r.stdout == ""
    assert invoke("check", p).exit_code == 0
    assert os.stat(p).st_mode & 0o777 == 0o640
    assert [f.name for f in tmp_path.iterdir()] == ["main.flow"]  # no temporary file left
    again = invoke("fix", p)
    assert again.exit_code == 0 and "fixed 0 mistakes in 0 files; nothing left" in again.stderr


def test_fix_reports_what_it_cannot_fix_as_check_does_and_exits_1(tmp_path):
    p = write(tmp_path, "main.flow", UNFIXABLE)
    r = invoke("fix", p)
    assert r.exit_code == 1
    assert "fixed 1 mistake in 1 file; 1 left:" in r.stderr
    assert "error[E209]: no `-` for `Text`" in r.stderr
    left = r.stderr[r.stderr.index("error[") :]
    assert left == invoke("check", p).stderr
    assert p.read_text() == "pub flow main(q: Text) -> Int = {\n    let _ = q.length()\n    q - 1\n}\n"


def test_fix_edits_every_file_of_the_program_that_needs_it_and_keeps_crlf(tmp_path):
    (tmp_path / "helper.flow").write_bytes(
        b"@tool pub flow search(q: Text) -> Result<Text, Text>\r\n"
        b'pub flow first(q: Text) -> Text = match search(q) {\r\n    Ok(h) => h,\r\n    Err(_) => "",\r\n}\r\n'
    )
    p = write(tmp_path, "main.flow", 'use "./helper"\npub flow main(q: Text) -> Text = helper.first(q)\n')
    r = invoke("fix", p)
    assert r.exit_code == 0, r.output
    assert (
        b"pub flow first(q: Text) -> Text !tool = match search(q) {\r\n"
        in (tmp_path / "helper.flow").read_bytes()
    )
    assert "pub flow main(q: Text) -> Text !tool = helper.first(q)" in p.read_text()


def test_fix_refuses_a_missing_file_in_one_line(tmp_path):
    r = invoke("fix", tmp_path / "nope.flow")
    assert r.exit_code == 1
    assert r.stderr.strip() == f"flow2py: {tmp_path / 'nope.flow'}: no such file"


def test_fix_unsafe_applies_the_fix_that_needs_a_choice(tmp_path):
    p = write(
        tmp_path, "main.flow", "type E { A, B }\npub flow main(e: E) -> Int = match e {\n    A => 1,\n}\n"
    )
    assert invoke("fix", p).exit_code == 1
    r = invoke("fix", "--unsafe", p)
    assert r.exit_code == 1  # the body is still to be written
    assert "    B => todo,\n" in p.read_text()
    assert "error[E101]" in r.stderr


def test_fixes_for_gives_the_new_text_of_each_file_one_pass_changes(tmp_path):
    p = write(tmp_path, "main.flow", SEVERAL)
    texts = fixes_for(str(p))
    assert list(texts) == [str(p)]
    assert "flow first_hit(q: Text) -> Text !tool = match" in texts[str(p)]
    assert "pub flow main(q: Text) -> Text = {" in texts[str(p)]  # its caller: the next pass
    assert p.read_text() == SEVERAL


def test_fix_takes_several_programs_at_once(tmp_path):
    a = write(tmp_path, "a.flow", UNFIXABLE)
    b = write(tmp_path, "b.flow", SEVERAL)
    r = invoke("fix", a, b)
    assert r.exit_code == 1
    assert "fixed 6 mistakes in 2 files; 1 left:" in r.stderr
    assert invoke("check", b).exit_code == 0
