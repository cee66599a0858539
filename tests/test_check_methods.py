"""Method syntax `x.f(args)`: the home module of x's type first, then the generic std functions
(std/data.flow), the same rule the operators follow."""

from check_helpers import check, codes, write_program
from flow2py.check import check_program

from flow2py.check.typed import MethodRef
from flow2py.syntax import ast


def method_decls(result, module_key: str) -> dict[str, str]:
    """Method name -> the declaration its call resolved to, for every `x.f(...)` in the module."""
    prog = result.program
    out = {}
    for n in ast.walk(prog.modules[module_key].ast):
        if isinstance(n, ast.Call) and isinstance(n.callee, ast.FieldAccess):
            ref = prog.refs.get(n.callee.id)
            if isinstance(ref, MethodRef):
                out[n.callee.name] = ref.decl
    return out


def entry_key(result) -> str:
    return next(k for k in result.program.modules if not k.startswith("std@"))


def test_unit_to_text_is_the_generic_data_function():
    r = check("pub flow main() -> Text = ().to_text()\n")
    assert codes(r) == []
    assert method_decls(r, entry_key(r)) == {"to_text": "std@v1/data::to_text"}


def test_tuple_to_text_is_the_generic_data_function():
    r = check('pub flow main() -> Text = (1, "a").to_text()\n')
    assert codes(r) == []
    assert method_decls(r, entry_key(r)) == {"to_text": "std@v1/data::to_text"}


def test_every_generic_data_function_works_as_a_method_on_a_tuple():
    r = check("""
        pub flow main() -> (Int, (Int, Int), (Int, Int), Bool) =
            ((1, 2).compare((1, 3)), (1, 2).min((0, 9)), (1, 2).max((0, 9)), (1, 2).eq((1, 2)))
    """)
    assert codes(r) == []
    assert method_decls(r, entry_key(r)) == {
        "compare": "std@v1/data::compare",
        "min": "std@v1/data::min",
        "max": "std@v1/data::max",
        "eq": "std@v1/data::eq",
    }


def test_user_record_and_enum_get_to_text_from_data():
    r = check("""
        type Point { x: Int, y: Int }
        type Shape { Dot, Circle(Int) }
        pub flow main() -> (Text, Text) = (Point { x: 1, y: 2 }.to_text(), Circle(3).to_text())
    """)
    assert codes(r) == []
    assert method_decls(r, entry_key(r)) == {"to_text": "std@v1/data::to_text"}


def test_home_module_function_of_the_same_name_wins(tmp_path):
    path = write_program(
        tmp_path,
        {
            "point.flow": """
            use "std@v1/data"
            pub type Point { pub x: Int, pub y: Int }
            pub flow to_text(p: Point) -> Text = "point " ++ data.to_text(p.x)
        """,
            "main.flow": """
            use "./point"
            pub flow main() -> Text = point.Point { x: 1, y: 2 }.to_text()
        """,
        },
    )
    r = check_program(path)
    assert codes(r) == []
    key = next(k for k in r.program.modules if k.endswith("main.flow") or k.endswith("main"))
    assert method_decls(r, key)["to_text"].endswith("point::to_text")


def test_std_home_module_still_wins_over_data():
    # bytes.to_text decodes UTF-8 and gives Option<Text>, not the Flow text of the value
    r = check('pub flow main() -> Option<Text> = b"hi".to_text()\n')
    assert codes(r) == []
    assert method_decls(r, entry_key(r)) == {"to_text": "std@v1/bytes::to_text"}


def test_private_home_function_is_not_bypassed_by_the_generic_one(tmp_path):
    path = write_program(
        tmp_path,
        {
            "point.flow": """
            use "std@v1/data"
            pub type Point { pub x: Int, pub y: Int }
            flow to_text(p: Point) -> Text = "point " ++ data.to_text(p.x)
            pub flow show(p: Point) -> Text = p.to_text()
        """,
            "main.flow": """
            use "./point"
            pub flow main() -> Text = point.Point { x: 1, y: 2 }.to_text()
        """,
        },
    )
    assert codes(check_program(path)) == ["E109"]


def test_generic_method_on_a_function_needs_data():
    r = check("pub flow main() -> Text = (flow(x: Int) = x).to_text()\n")
    assert codes(r) == ["E208"]


def test_unknown_method_on_a_tuple_is_still_e210_and_suggests():
    r = check("pub flow main() -> Text = (1, 2).to_txt()\n")
    assert codes(r) == ["E210"]
    d = r.diagnostics[0]
    assert "`(Int, Int)`" in d.message
    assert any("`to_text`" in rel.message for rel in d.related)


def test_unknown_method_on_a_std_type_keeps_its_message():
    r = check("pub flow main(xs: List<Int>) -> Int = xs.lenght()\n")
    assert codes(r) == ["E210"]
    assert r.diagnostics[0].message.startswith(
        "no function `lenght` for `List<Int>` in its module std@v1/list"
    )
