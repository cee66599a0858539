"""Suggestions that know the program (flow2py/check/suggest.py): a misspelling is one mistake,
not also an unused import, binding or function; "did you mean" searches what is in scope and
what modules export, qualified, with the missing `use`; other languages' spellings get Flow's;
the other place is shown; every safe fix, applied, leaves a program with that mistake gone and
nothing new."""

import json
import os

from click.testing import CliRunner

from check_helpers import check, codes, write_program
from flow2py.check import check_program, check_source
from flow2py.check import suggest as sg
from flow2py.cli import main
from flow2py.diagnostics import Fix, apply_fix

PLANNER = """
    pub type Action { Go(Int), Stop }
    pub flow next(n: Int) -> Action = Go(n)
"""


def _safe(d):
    fs = [f for f in d.fixes if f.safe]
    assert len(fs) == 1, d
    return fs[0]


def _apply_all(root, fix: Fix) -> None:
    by_file = {}
    for e in fix.edits:
        by_file.setdefault(e.span.file, []).append(e)
    for file, edits in by_file.items():
        path = file if os.path.isabs(file) else os.path.join(root, file)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(apply_fix(text, Fix(fix.message, tuple(edits), True)))


def _fixed_source(text: str, fix: Fix) -> str:
    return apply_fix(text, fix)


# -- no cascades ----------------------------------------------------------------------------


def test_misspelled_module_alias_is_one_mistake_and_its_fix_leaves_a_clean_program(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "planner.flow": PLANNER,
            "main.flow": """
            use "./planner"
            pub flow main(n: Int) -> planner.Action = plannr.next(n)
        """,
        },
    )
    r = check_program(entry)
    assert codes(r) == ["E101"]  # not also E112 with a fix deleting the import
    d = r.diagnostics[0]
    assert d.message == "unknown module `plannr` — did you mean `planner`?"
    assert d.related[0].span.line == 2  # where `planner` is imported
    _apply_all(tmp_path, _safe(d))
    assert codes(check_program(entry)) == []


def test_parameter_whose_only_use_is_misspelled_is_not_also_unused():
    text = "pub flow bump(count: Int) -> Int = cout + 1\n"
    r = check_source(text)
    assert codes(r) == ["E101"]
    d = r.diagnostics[0]
    assert not any("_count" in f.message for f in d.fixes)
    assert (d.related[0].span.line, d.related[0].span.column) == (1, 15)
    assert codes(check_source(_fixed_source(text, _safe(d)))) == []


def test_function_whose_only_call_is_misspelled_is_not_also_unused():
    r = check("""
        flow helper(n: Int) -> Int = n * 2
        pub flow main(n: Int) -> Int = helpr(n)
    """)
    assert codes(r) == ["E101"]
    assert "did you mean `helper`?" in r.diagnostics[0].message


def test_arms_of_a_match_over_an_unknown_value_are_not_errors():
    r = check("""
        pub type Shape { Circle(Int), Square(Int) }
        pub flow main() -> Int = match nothing_here {
            Circle(r) => r,
            Triangle => 0,
        }
    """)
    assert codes(r) == ["E101"]


def test_match_over_a_parameter_of_a_misspelled_type_is_not_also_missing_cases():
    r = check("""
        pub type Shape { Circle(Int), Square(Int) }
        pub flow area(s: Shapee) -> Int = match s {
            Circle(r) => r,
            Square(n) => n,
        }
    """)
    assert codes(r) == ["E102"]


def test_misspelled_field_is_not_also_a_missing_field():
    r = check("""
        pub type Point { pub x: Int, pub y: Int }
        pub flow main() -> Point = Point { x: 1, yy: 2 }
    """)
    assert codes(r) == ["E205"]
    assert r.diagnostics[0].fixes[0].safe


def test_a_use_that_did_not_resolve_is_not_reported_again_at_its_uses(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "planner.flow": PLANNER,
            "main.flow": """
            use "./planer"
            pub flow main(n: Int) -> planner.Action = planner.next(n)
        """,
        },
    )
    r = check_program(entry)
    assert codes(r) == ["E103"]
    d = r.diagnostics[0]
    assert 'did you mean `"./planner"`?' in d.message
    _apply_all(tmp_path, _safe(d))
    assert codes(check_program(entry)) == []


# -- suggestions that know the program -------------------------------------------------------


def test_names_another_module_exports_are_offered_qualified_never_an_unrelated_type(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "planner.flow": PLANNER,
            "main.flow": """
            use "./planner"
            pub flow main(n: Int) -> Action = next(n)
        """,
        },
    )
    r = check_program(entry)
    msgs = [d.message for d in r.diagnostics]
    assert msgs == [
        "unknown type `Action` — did you mean `planner.Action`?",
        "unknown name `next` — did you mean `planner.next`?",
    ]
    assert all(rel.span.file.endswith("planner.flow") for d in r.diagnostics for rel in d.related)


def test_true_and_false_are_flows_spelling_never_a_constructor():
    r = check("pub flow ready(n: Int) -> Bool = if n > 0 { True } else { False }\n")
    assert [d.message for d in r.diagnostics] == [
        "unknown name `True` — did you mean `true`?",
        "unknown name `False` — did you mean `false`?",
    ]
    assert all(_safe(d) for d in r.diagnostics)


def test_a_suggestion_whose_type_does_not_fit_is_offered_but_not_safe():
    r = check("pub flow n() -> Int = False\n")
    d = r.diagnostics[0]
    assert "`false`" in d.message and d.fixes and not d.fixes[0].safe


def test_a_constructor_of_another_type_than_the_expected_one_is_never_offered():
    r = check("""
        pub type Color { Red, Green }
        pub type Mode { Read, Write }
        pub flow m() -> Mode = Write
        pub flow c() -> Color = Rad
    """)
    d = r.diagnostics[0]
    assert d.message == "unknown name `Rad` — did you mean `Red`?"


def test_a_std_module_not_imported_gets_its_use_once_and_the_fix_adds_it():
    text = "pub flow main() -> Int !tool = {\n    let t = task.spawn(flow() = 1)\n    task.await(t)\n}\n"
    r = check_source(text)
    assert [d.message for d in r.diagnostics] == ['unknown module `task` — add `use "std@v1/task"`']
    fixed = _fixed_source(text, _safe(r.diagnostics[0]))
    assert fixed.startswith('use "std@v1/task"\n')
    assert codes(check_source(fixed)) == []


def test_an_unqualified_std_function_is_offered_qualified_with_its_use():
    text = 'use "std@v1/text"\n\npub flow go() -> Task<Int> !tool = spawn(flow() = text.length("a"))\n'
    r = check_source(text)
    d = r.diagnostics[0]
    assert d.message == "unknown name `spawn` — did you mean `task.spawn`?"
    fixed = _fixed_source(text, _safe(d))
    assert 'use "std@v1/text"\nuse "std@v1/task"\n' in fixed
    assert codes(check_source(fixed)) == []


def test_other_languages_type_names_and_methods_get_flows():
    r = check("""
        pub flow a(xs: Vec<Int>) -> Integer = xs.len()
        pub flow b(o: Option<Int>) -> Int = o.unwrap()
    """)
    msgs = [d.message for d in r.diagnostics]
    assert "unknown type `Vec` — did you mean `List`?" in msgs
    assert "unknown type `Integer` — did you mean `Int`?" in msgs
    unwrap = next(d for d in r.diagnostics if "unwrap" in d.message)
    assert "Flow has no `unwrap`" in unwrap.message and not any(f.safe for f in unwrap.fixes)


def test_print_says_what_flow_does_instead():
    r = check("pub flow say(t: Text) -> Text = print(t)\n")
    assert "Tool" in r.diagnostics[0].message and not r.diagnostics[0].fixes


def test_std_path_spellings_are_fixed_to_std_at_v1():
    text = 'use "std/list"\n\npub flow main() -> Int = list.length([1])\n'
    r = check_source(text)
    assert codes(r) == ["E113"]
    fixed = _fixed_source(text, _safe(r.diagnostics[0]))
    assert fixed.startswith('use "std@v1/list"')
    assert codes(check_source(fixed)) == []


# -- the other place -----------------------------------------------------------------------


def test_import_cycle_names_the_other_use(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "a.flow": 'use "./b"\npub flow f() -> Int = b.g()\n',
            "b.flow": 'use "./a"\npub flow g() -> Int = a.f()\n',
            "main.flow": 'use "./a"\npub flow main() -> Int = a.f()\n',
        },
    )
    r = check_program(entry)
    d = next(d for d in r.diagnostics if d.code == "E104")
    assert d.span.file.endswith("b.flow")
    assert [(x.message, os.path.basename(x.span.file)) for x in d.related] == [
        ("`a` uses `b` here", "a.flow")
    ]


def test_private_declaration_gets_pub_in_the_other_file_and_json_shows_where(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "shapes.flow": """
            type Secret { pub v: Int }
            pub type Point { pub x: Int, y: Int }
            pub flow origin() -> Point = Point { x: 0, y: 0 }
            pub flow reveal(s: Secret) -> Int = s.v
        """,
            "main.flow": """
            use "./shapes"
            pub flow a(s: shapes.Secret) -> Int = shapes.reveal(s)
            pub flow b() -> Int = shapes.origin().y
        """,
        },
    )
    out = CliRunner().invoke(main, ["check", "--format", "json", entry])
    diags = json.loads(out.stdout)
    assert [d["code"] for d in diags] == ["E109", "E109"]
    for d in diags:
        (fix,) = d["fixes"]
        assert fix["safe"] and fix["edits"][0]["file"].endswith("shapes.flow")
        assert fix["edits"][0]["text"] == "pub "
    for _ in range(2):  # one fix at a time: each moves the text the next one edits
        _apply_all(tmp_path, _safe(check_program(entry).diagnostics[0]))
    assert codes(check_program(entry)) == []


def test_opaque_type_and_record_declarations_are_the_other_place(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "money.flow": "pub opaque type Money { Cents(Int) }\npub flow zero() -> Money = Cents(0)\n",
            "main.flow": 'use "./money"\npub flow main() -> money.Money = money.Cents(5)\n',
        },
    )
    d = check_program(entry).diagnostics[0]
    assert d.code == "E114" and d.related[0].message == "`Money` is declared `opaque` here"
    r = check("""
        pub type Point { pub x: Int, pub y: Int }
        pub flow main() -> Point = Point { x: 1 }
    """)
    assert r.diagnostics[0].related[0].message == "`Point` is declared here"


def test_constructor_value_mismatch_points_at_the_declared_type():
    r = check("""
        pub type Shape { Circle(Int), Square(Int) }
        pub flow main() -> Shape = Circle("big")
    """)
    d = r.diagnostics[0]
    assert d.code == "E201" and (d.related[0].span.line, d.related[0].span.column) == (2, 25)


# -- ranking ------------------------------------------------------------------------------


def test_distance_counts_a_swap_as_one_edit_and_short_names_allow_one():
    assert sg.distance("lenght", "length") == 1
    assert sg.distance("Action", "Option") == 2
    assert sg.limit("Action") == 1 and sg.limit("x") == 0


def test_rank_prefers_the_exact_qualified_name_and_the_same_case():
    cands = [sg.Candidate("Option", sg.TYPE), sg.Candidate("planner.Action", sg.TYPE)]
    assert [c.text for c in sg.rank("Action", cands, sg.TYPE)] == ["planner.Action"]
    cands = [sg.Candidate("stop", sg.VALUE), sg.Candidate("Stop", sg.CTOR)]
    assert [c.text for c in sg.rank("stp", cands, sg.VALUE)] == ["stop"]
    assert sg.rank("isEmpty", [sg.Candidate("is_empty", sg.METHOD)], sg.METHOD)[0].text == "is_empty"


def test_a_module_beside_this_one_not_imported_is_offered_but_not_safe(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "planner.flow": PLANNER,
            "main.flow": "pub flow main(n: Int) -> Int = { let _a = planner.next(n)\n 1 }\n",
        },
    )
    r = check_program(entry)
    (d,) = r.diagnostics
    assert d.message == 'unknown module `planner` — add `use "./planner"`'
    assert [f.safe for f in d.fixes] == [False]


def test_other_languages_constructors_in_a_pattern_get_flows():
    r = check("""
        pub flow f(o: Option<Int>) -> Int = match o {
            Some(v) => v,
            Nothing => 0,
        }
    """)
    (d,) = r.diagnostics
    assert d.message == "`Option` has no constructor `Nothing` — did you mean `None`?"
    assert d.fixes[0].safe


def test_lambda_passed_to_an_unknown_function_is_not_also_cannot_infer():
    r = check("""
        pub flow a(xs: List<Text>) -> List<Int> = xs.mapp(flow(x) = x.length())
        pub flow b(xs: List<Text>) -> List<Int> = mapp(xs, flow(x) = x.length())
    """)
    assert codes(r) == ["E210", "E101"]


def test_a_local_close_to_a_habit_name_wins_over_the_habit():
    r = check("""
        pub flow f(counts: Int) -> Int = count + 1
    """)
    assert r.diagnostics[0].message == "unknown name `count` — did you mean `counts`?"
