"""Diagnostics of the checker, one behaviour at a time."""

from check_helpers import check, codes


def test_four_independent_mistakes_are_all_reported_in_one_run():
    r = check("""
        @tool pub flow search(q: Text) -> Result<Text, Text>
        pub type Color { Red, Green, Blue }
        pub flow fetch(q: Text) -> Text = match search(q) {
            Ok(t) => t,
            Err(_) => "none",
        }
        pub flow name(c: Color) -> Text = match c {
            Red => "red",
            Green => "green",
        }
        pub flow add(a: Int, b: Int) -> Int = {
            let unused = 3
            a + b
        }
        pub flow bad() -> Int = "hello"
    """)
    assert sorted(codes(r)) == ["E201", "E301", "E401", "E404"]
    assert r.program is None


def test_missing_case_is_named_as_a_nested_pattern():
    r = check("""
        pub flow f(r: Result<Int, ToolProblem<Text>>) -> Int = match r {
            Ok(n) => n,
            Err(Failed(_)) => 0,
            Err(NotRun(_)) => 0,
            Err(Malformed(_)) => 0,
        }
    """)
    assert codes(r) == ["E401"]
    assert "`Err(Unknown(_))`" in r.diagnostics[0].message


def test_unreachable_arm_is_an_error():
    r = check("""
        pub flow f(x: Option<Int>) -> Int = match x {
            _ => 0,
            Some(n) => n,
        }
    """)
    assert codes(r) == ["E402"]


def test_literals_need_a_wildcard_and_bools_do_not():
    r = check("""
        pub flow f(x: Int) -> Int = match x {
            0 => 1,
        }
        pub flow g(b: Bool) -> Int = match b {
            true => 1,
            false => 0,
        }
    """)
    assert codes(r) == ["E401"]
    assert "`_`" in r.diagnostics[0].message


def test_list_patterns_by_length_and_rest():
    ok = check("""
        pub flow f(xs: List<Int>) -> Int = match xs {
            [] => 0,
            [x, ..rest] => x + rest.length(),
        }
    """)
    assert codes(ok) == []
    bad = check("""
        pub flow f(xs: List<Int>) -> Int = match xs {
            [] => 0,
            [x] => x,
        }
    """)
    assert codes(bad) == ["E401"]
    assert "[_, _, ..]" in bad.diagnostics[0].message


def test_statement_that_is_not_unit():
    r = check("""
        pub flow f(xs: List<Int>) -> Unit = {
            xs.length()
            ()
        }
    """)
    assert codes(r) == ["E403"]
    assert r.diagnostics[0].fixes[0].edits[0].text == "let _ = "


def test_unknown_name_suggests_a_close_one():
    r = check("""
        pub flow helper(x: Int) -> Int = x
        pub flow f(x: Int) -> Int = helpr(x)
    """)
    assert codes(r) == ["E101"]
    assert "helper" in r.diagnostics[0].related[0].message


def test_mismatch_names_the_argument_and_the_function():
    r = check("""
        pub flow g(a: Int, _b: Text) -> Int = a
        pub flow f() -> Int = g(1, 2)
    """)
    assert codes(r) == ["E201"]
    assert "the 2nd argument of `g`" in r.diagnostics[0].message


def test_wrong_arity():
    assert codes(check("pub flow g(a: Int) -> Int = a\npub flow f() -> Int = g(1, 2)")) == ["E202"]


def test_try_needs_matching_error_type_or_conversion():
    r = check("""
        pub flow f(r: Result<Int, Int>) -> Result<Int, Text> = {
            let x = r?
            Ok(x)
        }
        pub flow g(r: Result<Int, Int>) -> Result<Int, Text> = {
            let x = r ? int.to_text
            Ok(x)
        }
    """)
    assert codes(r) == ["E101", "E409"] or codes(r) == ["E409", "E101"] or "E409" in codes(r)


def test_try_conversion_through_a_function():
    r = check("""
        flow convert(e: Int) -> Text = "error"
        pub flow g(r: Result<Int, Int>) -> Result<Int, Text> = {
            let x = r ? convert
            Ok(x)
        }
    """)
    assert codes(r) == ["E404"]  # convert's `e` is unused
    r = check("""
        flow convert(_e: Int) -> Text = "error"
        pub flow g(r: Result<Int, Int>) -> Result<Int, Text> = {
            let x = r ? convert
            Ok(x)
        }
    """)
    assert codes(r) == []


def test_try_outside_a_result_function():
    assert codes(check("pub flow f(r: Result<Int, Text>) -> Int = r?")) == ["E408"]


def test_guard_else_must_leave():
    r = check("""
        pub flow f(x: Int) -> Int = {
            guard x > 0 else { () }
            x
        }
    """)
    assert codes(r) == ["E406"]


def test_if_without_else_must_be_unit():
    assert codes(check("pub flow f(x: Int) -> Unit = if x > 0 { 1 }")) == ["E407"]


def test_prelude_names_cannot_be_declared_again():
    assert codes(check("pub type Option { A }")) == ["E108"]


def test_duplicate_declaration():
    assert codes(check("pub flow f() -> Int = 1\npub flow f() -> Int = 2")) == ["E107"]


def test_unused_private_function():
    assert codes(check("flow f() -> Int = 1")) == ["E405"]


def test_opaque_type_outside_its_module(tmp_path):
    from check_helpers import write_program
    from flow2py.check import check_program

    path = write_program(
        tmp_path,
        {
            "money.flow": """
            pub opaque type Money { Cents(Int) }
            pub flow cents(n: Int) -> Money = Cents(n)
        """,
            "main.flow": """
            use "./money"
            pub flow main() -> money.Money = money.Cents(1)
        """,
        },
    )
    r = check_program(path)
    assert codes(r) == ["E114"]


def test_private_field_cannot_be_read_outside(tmp_path):
    from check_helpers import write_program
    from flow2py.check import check_program

    path = write_program(
        tmp_path,
        {
            "point.flow": """
            pub type Point { pub x: Int, y: Int }
            pub flow origin() -> Point = Point { x: 0, y: 0 }
        """,
            "main.flow": """
            use "./point"
            pub flow main() -> Int = point.origin().x + point.origin().y
        """,
        },
    )
    r = check_program(path)
    assert codes(r) == ["E109"]


def test_constructor_resolves_through_expected_type_across_modules(tmp_path):
    from check_helpers import write_program
    from flow2py.check import check_program

    path = write_program(
        tmp_path,
        {
            "shapes.flow": "pub type Shape { Circle(Int), Square(Int) }\n",
            "main.flow": """
            use "./shapes"
            pub flow area(s: shapes.Shape) -> Int = match s {
                Circle(r) => 3 * r * r,
                Square(a) => a * a,
            }
            pub flow main() -> Int = area(Circle(2))
        """,
        },
    )
    r = check_program(path)
    assert codes(r) == []


def test_not_data_in_dict_key():
    r = check("""
        pub flow f() -> Dict<(Int) -> Int, Int> = [flow(x: Int) -> Int = x: 1]
    """)
    assert "E208" in codes(r)


def test_generic_function_infers_data_requirement():
    r = check("""
        flow same<T>(a: T, b: T) -> Bool = a == b
        pub flow f() -> Bool = same(flow(x: Int) -> Int = x, flow(x: Int) -> Int = x)
    """)
    assert codes(r) == ["E208"]


def test_generic_operator_on_a_non_data_type_is_refused_naming_the_operator():
    r = check("""
        flow g(x: Int) -> Int = x
        pub flow f() -> Bool = g == g
    """)
    assert codes(r) == ["E208"]
    assert "but `==` needs data for its type parameter `T`" in r.diagnostics[0].message


def test_tool_must_return_a_result():
    assert codes(check("@tool pub flow t() -> Int")) == ["E501"]


def test_test_function_takes_no_parameters():
    assert codes(check("@test flow t(x: Int) -> Unit = ()")) == ["E504", "E404"] or "E504" in codes(
        check("@test flow t(x: Int) -> Unit = ()")
    )


def test_lang_is_reserved_for_std():
    assert "E502" in codes(check('@lang("x") pub flow f() -> Int'))


def test_fake_must_match_the_tool():
    r = check("""
        @tool pub flow search(q: Text) -> Result<Text, Text>
        @fake(search) flow fake_search(_q: Text) -> Result<Text, Text> = Ok("x")
        @fake(search) flow bad_fake(_q: Int) -> Result<Text, Text> = Ok("x")
    """)
    assert codes(r) == ["E505"]


def test_refutable_let():
    assert codes(check("pub flow f(x: Option<Int>) -> Int = {\n let Some(y) = x\n y\n}")) == ["E410"]


def test_a_one_element_tuple_is_a_type_and_a_value_and_neither_is_its_element():
    r = check("""
        pub flow one() -> (Int,) = (1,)
        pub flow first(p: (Int,)) -> Int = match p { (x,) => x }
        pub flow grouped() -> (Int) = 1
        pub flow nested() -> List<((Text,),)> = [(("a",),)]
    """)
    assert codes(r) == []
    r = check("""
        pub flow bare() -> (Int,) = 1
        pub flow wrapped() -> Int = (1,)
    """)
    assert codes(r) == ["E201", "E201"]
    assert "expected `(Int,)`, found `Int`" in r.diagnostics[0].message
    assert "expected `Int`, found `(Int,)`" in r.diagnostics[1].message
