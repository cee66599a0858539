"""Effects: `!tool`, pass-through callbacks, `!pure`."""

from check_helpers import check, codes


def test_pure_function_calling_a_tool_is_refused_with_a_safe_fix():
    r = check("""
        @tool pub flow ping() -> Result<Unit, Text>
        pub flow main() -> Unit = {
            let _ = ping()
        }
    """)
    assert codes(r) == ["E301"]
    fix = r.diagnostics[0].fixes[0]
    assert fix.safe and fix.edits[0].text == " !tool"


def test_tool_marked_function_without_tool_calls_is_fine():
    assert codes(check("pub flow main() -> Int !tool = 1")) == []


def test_callback_effect_passes_through_to_the_call():
    r = check("""
        @tool pub flow read(r: Text) -> Result<Text, Text>
        pub flow pure_map(xs: List<Text>) -> List<Text> = xs.map(flow(x) = x ++ "!")
        pub flow tool_map(xs: List<Text>) -> List<Result<Text, ToolProblem<Text>>> = xs.map(flow(x) = read(x))
    """)
    assert codes(r) == ["E301"]
    assert "tool_map" in r.diagnostics[0].message


def test_function_calling_its_callback_is_poly():
    r = check("""
        pub flow twice(f: (Int) -> Int, x: Int) -> Int = f(f(x))
        @tool pub flow read(r: Int) -> Result<Int, Text>
        pub flow main() -> Int !tool = twice(flow(x) = match read(x) { Ok(v) => v, Err(_) => 0 }, 1)
        pub flow calm() -> Int = twice(flow(x) = x + 1, 1)
    """)
    assert codes(r) == []
    p = r.program
    assert p.fn("main::twice").effect == "poly"
    assert p.effects[p.fn("main::twice").node.id] == "poly"


def test_pure_marked_parameter_refuses_an_effectful_argument():
    r = check("""
        pub flow apply(f: (Int) -> Int !pure, x: Int) -> Int = f(x)
        @tool pub flow read(r: Int) -> Result<Int, Text>
        pub flow main() -> Int !tool = apply(flow(x) = match read(x) { Ok(v) => v, Err(_) => 0 }, 1)
    """)
    assert codes(r) == ["E302"]


def test_effects_in_the_checked_program_are_effect_members_that_equal_their_text():
    from flow2py.check.typed import Effect

    r = check("""
        @tool pub flow ping() -> Result<Unit, Text>
        pub flow twice(f: () -> Int) -> Int = f() + f()
        pub flow main() -> Int !tool = {
            let _ = ping()
            twice(flow() = 1)
        }
    """)
    assert codes(r) == []
    fns = {fn.name: fn for fn in r.program.fn_decls.values() if fn.module == "main"}
    assert (fns["ping"].effect, fns["twice"].effect, fns["main"].effect) == (
        Effect.TOOL,
        Effect.POLY,
        Effect.TOOL,
    )
    assert {type(e) for e in r.program.effects.values()} == {Effect}
    # codegen reads these as text: each member is its old string, in comparisons, keys and f-strings
    assert Effect.POLY == "poly" and {"tool": 1}[Effect.TOOL] == 1 and f"{Effect.PURE}" == "pure"
