"""std: every module checks clean, and every compiler-provided function is documented."""

import os

from check_helpers import ROOT, check

STD = os.path.join(ROOT, "std")


def test_std_checks_clean_with_every_node_typed():
    from check_helpers import untyped_nodes

    r = check("pub flow main() -> Int = 1\n")
    assert r.diagnostics == []
    std = [k for k in r.program.modules if k.startswith("std@v1/")]
    assert len(std) == len([n for n in os.listdir(STD) if n.endswith(".flow")])
    assert untyped_nodes(r.program) == []


def test_every_lang_function_is_listed_in_stdlib_doc():
    r = check("pub flow main() -> Int = 1\n")
    with open(os.path.join(ROOT, "docs", "spec", "stdlib.md"), encoding="utf-8") as f:
        doc = f.read()
    langs = [fn.lang for fn in r.program.fn_decls.values() if fn.lang and fn.node.body is None]
    assert len(langs) > 50
    for lang in langs:
        assert f"`flowrt.data.lang.{lang.replace('.', '_')}`" in doc, lang


def test_prelude_types_and_literals():
    r = check("""
        pub flow main() -> (Int, Decimal, Text, Bytes, Bool, Unit, Duration, List<Int>, Dict<Text, Int>) =
            (1, 1.5, "a", b"a", true, (), 5s, [1], ["a": 1])
    """)
    assert r.diagnostics == []


def test_std_functions_through_method_syntax():
    r = check("""
        pub flow main(xs: List<Int>, t: Text) -> (Int, Option<Int>, List<Text>, Bool) =
            (xs.length(), xs.get(0), t.split(","), xs.map(flow(x) = x * 2).contains(4))
    """)
    assert r.diagnostics == []


def test_task_and_clock_are_effectful():
    r = check("""
        use "std@v1/task"
        use "std@v1/clock"
        pub flow main() -> List<Int> !tool = {
            let _ = clock.sleep(1s)
            task.all([flow() = 1, flow() = 2])
        }
    """)
    assert r.diagnostics == []
    assert r.program.fn("std@v1/clock::now").is_tool
    assert not r.program.type_info("std@v1/task::Task").is_data


def test_task_is_a_prelude_type_named_unqualified_in_signatures():
    """`Task<T>` is std's, marked "prelude" in std/task.flow (the compiler knows no name of its
    own): a signature names it unqualified; its functions stay in std@v1/task."""
    r = check("""
        use "std@v1/task"

        flow start(f: () -> Int !tool) -> Task<Int> !tool = task.spawn(f)

        pub flow main() -> Int !tool = task.await(start(flow() = 1))
    """)
    assert r.diagnostics == []
    both = check("""
        use "std@v1/task"

        flow same(t: task.Task<Int>) -> Task<Int> = t

        pub flow main() -> Int !tool = task.await(same(task.spawn(flow() = 2)))
    """)
    assert both.diagnostics == []


def test_declaring_task_again_is_e108():
    r = check("pub type Task { A }\npub flow main() -> Int = 1\n")
    assert [d.code for d in r.diagnostics] == ["E108"]


def test_each_literal_kind_builds_the_std_type_listed_for_it_and_no_other_type_builds_literals():
    from flow2py.check.declare import LITERAL_LANGS
    from flow2py.syntax import ast

    r = check(
        'pub flow main() -> (Int, Decimal, Text, Bytes, Bool, Unit, Duration) = (1, 1.5, "a", b"a", true, (), 5s)\n'
    )
    assert r.diagnostics == []
    prog = r.program
    main = next(fn for fn in prog.fn_decls.values() if fn.name == "main" and fn.module == "main")
    lits = [n for n in ast.walk(main.node.body) if isinstance(n, ast.Literal)]
    kinds = {n.kind: prog.types[n.id].decl for n in lits}
    assert set(kinds) == set(LITERAL_LANGS)  # every kind the syntax has, and only those, is listed
    langs = {info.decl: info.lang for info in prog.type_decls.values()}
    assert {k: langs[d] for k, d in kinds.items()} == LITERAL_LANGS
