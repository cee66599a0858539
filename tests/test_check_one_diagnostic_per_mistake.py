"""Programs a user writes: valid ones that must check, and wrong ones that must give one clear
diagnostic (no cascade, the right place, the right 'related' note)."""

from check_helpers import check, codes, write_program
from flow2py.check import check_program
from flow2py.syntax.parser import parse_module


def test_or_pattern_binding_a_name_at_two_types_is_a_mismatch():
    r = check("""
        pub type C { R(Int), G(Text), B }
        pub flow main(c: C) -> Text = match c {
            R(x) | G(x) => data.to_text(x),
            B => "",
        }
    """)
    assert "E201" in codes(r)
    d = next(d for d in r.diagnostics if d.code == "E201")
    assert "`x` is `Int` in the first alternative" in d.message and "`Text` here" in d.message
    assert d.span.line == 4 and d.related and d.related[0].span.line == 4


def test_or_pattern_binding_a_name_at_one_type_checks():
    r = check("""
        pub type C { R(Int), G(Int), B }
        pub flow main(c: C) -> Int = match c { R(x) | G(x) => x, B => 0 }
    """)
    assert codes(r) == []


def test_constructor_pattern_with_wrong_arity_is_not_also_a_missing_case():
    r = check("""
        pub type P { Pt(Int, Int), Z }
        pub flow main(p: P) -> Int = match p { Pt(x) => x, Z => 0 }
    """)
    assert codes(r) == ["E202"]


def test_unknown_constructor_in_let_is_not_also_a_refutable_let():
    r = check("""
        pub flow main() -> Int = {
            let T2 = 3
            0
        }
    """)
    assert codes(r) == ["E101"]


def test_wildcard_parameters_parse_in_lambdas_and_functions():
    r = check("""
        pub flow f(_: Int, _: Text) -> Int = 0
        pub flow g(xs: List<Int>) -> Int = xs.fold(0, flow(_, _) = 1)
        pub flow h(xs: List<Int>) -> List<Int> = xs.map(flow(_: Int) = 1)
    """)
    assert codes(r) == []
    m, diags = parse_module("pub flow g(xs: List<Int>) -> List<Int> = xs.map(flow(_) = 1)\n", "x.flow")
    assert not diags


def test_duplicate_parameter_is_reported_once_and_the_first_stays():
    r = check("""
        pub flow f(a: Int, a: Text) -> Int = a
    """)
    assert codes(r) == ["E107"]


def test_duplicate_lambda_parameter_is_e107():
    r = check("""
        pub flow g(xs: List<Int>) -> Int = xs.fold(0, flow(a, a) = a)
    """)
    assert codes(r) == ["E107"]


def test_lang_outside_std_is_not_also_a_missing_body():
    r = check("""
        @lang("int.add")
        flow add(a: Int, b: Int) -> Int
        pub flow main() -> Int = add(1, 2)
    """)
    assert codes(r) == ["E502"]


def test_fake_of_a_non_tool_names_it_and_is_not_an_unused_function():
    r = check("""
        flow notool(q: Text) -> Result<Text, Text> = Ok(q)
        @fake(notool) flow fake_fetch(q: Text) -> Result<Text, Text> = Ok(q)
        pub flow main() -> Result<Text, Text> = notool("a")
    """)
    assert codes(r) == ["E505"]
    d = r.diagnostics[0]
    assert "`notool` is not a Tool" in d.message
    assert d.related and d.related[0].span.line == 2


def test_redeclared_prelude_type_is_not_also_unused():
    r = check("""
        type Option<T> { Yes(T), No }
        pub flow main() -> Int = 0
    """)
    assert codes(r) == ["E108"]


def test_private_field_note_points_at_the_field(tmp_path):
    entry = write_program(
        tmp_path,
        {
            "main.flow": """
            use "./lib/money"
            pub flow main() -> Int = money.mk().a
        """,
            "lib/money.flow": """
            pub type Rec { a: Int, pub b: Int }
            pub flow mk() -> Rec = Rec { a: 1, b: 2 }
        """,
        },
    )
    r = check_program(entry)
    assert codes(r) == ["E109"]
    rel = r.diagnostics[0].related[0]
    assert rel.span.file.endswith("money.flow") and (rel.span.line, rel.span.column) == (2, 16)


def test_missing_repository_module_names_the_cache_file(tmp_path):
    cache = tmp_path / "cache" / "github.com" / "acme" / "tools"
    (cache / "tags").mkdir(parents=True)
    (cache / "tags" / "v1").write_text("abc\n")
    (cache / "commits" / "abc").mkdir(parents=True)
    entry = write_program(
        tmp_path,
        {
            "main.flow": """
        use "github.com/acme/tools@v1/cat"
        pub flow main() -> Int = cat.f()
    """
        },
    )
    r = check_program(entry, cache_dir=str(tmp_path / "cache"))
    assert codes(r) == ["E103"]
    assert str(cache / "commits" / "abc" / "cat.flow") in r.diagnostics[0].message


def test_try_in_a_lambda_that_returns_no_result_is_one_e408():
    r = check("""
        pub type E { Bad }
        flow get(n: Int) -> Result<Int, E> = if n > 0 { Ok(n) } else { Err(Bad) }
        pub flow main(xs: List<Int>) -> List<Int> = xs.map(flow(x) = get(x)? + 1)
    """)
    assert codes(r) == ["E408"]
    assert "this function returns `Int`" in r.diagnostics[0].message


def test_try_in_a_lambda_whose_result_comes_from_its_body_checks():
    r = check("""
        pub type E { Bad }
        flow get(n: Int) -> Result<Int, E> = if n > 0 { Ok(n) } else { Err(Bad) }
        pub flow main(xs: List<Int>) -> List<Result<Int, E>> = {
            let f = flow(x: Int) = {
                let a = get(x)?
                Ok(a + 1)
            }
            xs.map(f)
        }
    """)
    assert codes(r) == []


def test_try_in_a_lambda_with_another_error_type_is_e409():
    r = check("""
        pub type E { Bad }
        flow get(n: Int) -> Result<Int, E> = if n > 0 { Ok(n) } else { Err(Bad) }
        pub flow main(xs: List<Int>) -> List<Result<Int, Text>> = {
            let f = flow(x: Int) = {
                let a = get(x)?
                if a > 0 { Ok(a) } else { Err("neg") }
            }
            xs.map(f)
        }
    """)
    assert codes(r) == ["E409"]


def test_a_test_with_parameters_is_e504_only_not_also_unused_parameters():
    from check_helpers import check_source

    r = check_source("@test flow adds(x: Int) -> Bool = 1 + 1 == 2\n")
    assert [d.code for d in r.diagnostics] == ["E504"]


def test_a_later_arm_of_an_unrelated_type_is_the_mistake_not_the_arms_before_it():
    r = check("""
        pub type S { A, B }
        pub flow main(s: S) -> Int = {
            let _x = match s { A => "a", B => 2 }
            0
        }
    """)
    (d,) = r.diagnostics
    assert d.code == "E201" and d.span.line == 4 and "the first arm of this match" in d.message
    assert d.span.column == d.span.end_column - 1  # at the `2`, not at `"a"`


def test_an_arm_lacking_its_wrapper_is_one_mistake_and_the_value_is_the_wrapped_type():
    r = check("""
        pub type S { A, B }
        pub flow main(s: S, n: Option<Int>) -> Int = {
            let x = match s { A => 1, B => n }
            match x { Some(v) => v, None => 0 }
        }
    """)
    (d,) = r.diagnostics
    assert d.code == "E201" and "a later arm of this match" in d.message
    assert [(f.message, f.safe) for f in d.fixes] == [("wrap it in `Some(...)`", True)]


def test_unwrap_where_the_result_type_is_not_yet_known_gets_no_try_fix():
    r = check("""
        @tool flow fetch(u: Text) -> Result<Text, Text>
        pub flow main(us: List<Text>) -> List<Int> !tool = us.map(flow(u) = fetch(u).unwrap().length())
    """)
    (d,) = [d for d in r.diagnostics if d.code == "E210"]
    assert not any(f.safe for f in d.fixes)
