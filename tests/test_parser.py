"""The parser: every construct of docs/spec/grammar.md, the seed programs, spans, and identity."""

from __future__ import annotations

import glob
import os

import pytest

from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module
from repo_paths import SUPPORT_DIR

SUPPORT = str(SUPPORT_DIR)


def parse_ok(src: str) -> ast.Module:
    module, diags = parse_module(src, "t.flow")
    assert diags == [], [d.message for d in diags]
    return module


def body(src: str):
    """The body of the single function in `flow f() -> T = <src>`."""
    return parse_ok(f"flow f() -> T = {src}").decls[0].body


def data(node):
    return ast.to_data(node)


# --- seed programs -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(SUPPORT, "*.flow"))), ids=os.path.basename)
def test_conformance_support_files_parse(path):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    module = parse_ok(src)
    assert module.decls


def test_support_main_has_uses_report_enum_and_two_functions():
    with open(os.path.join(SUPPORT, "main.flow"), encoding="utf-8") as f:
        m = parse_ok(f.read())
    assert [u.path for u in m.uses] == ["std@v1/task", "./planner", "./web", "./docs", "./human"]
    report, main, work = m.decls
    assert report.kind == "enum" and [c.name for c in report.ctors] == ["Resolved", "GaveUp", "Unanswered"]
    assert main.effect == "tool" and isinstance(main.body, ast.Call)
    guard = work.body.stmts[0]
    assert isinstance(guard, ast.Guard) and isinstance(guard.else_.stmts[0].expr, ast.Return)
    match = work.body.stmts[1].expr
    assert isinstance(match, ast.Match) and len(match.arms) == 4


SEED_SNIPPETS = [
    "@tool pub flow chat(prompt: Text) -> Result<Text, ChatError>",
    "@tool pub type Page\n@tool pub flow open(url: Text) -> Result<Page, BrowseError>\n"
    "@tool pub flow click(page: Page, selector: Text) -> Result<Unit, PageError>",
    "flow describe(item: Item) -> View = render(item)",
    "flow read_batch(refs: List<Text>) -> Batch !tool =\n    refs.map(flow(r) = catalog.read(r))",
    "flow f() -> T !tool = task.spawn(flow() = Received(feed.next()))",
    "flow f() -> T = Arrived { index, reply: research.search(item) }",
    "flow f() -> T = {\n    let _ = x\n    x ? f\n}",
    "flow f(round: Int) -> T = {\n    guard round <= 10 else { return GaveUp(notes) }\n    1\n}",
    "flow f() -> T = g(a, b,)",
]


@pytest.mark.parametrize("src", SEED_SNIPPETS)
def test_seed_snippets_parse(src):
    assert parse_ok(src).decls


def test_tool_declarations_have_no_body_and_abstract_type():
    m = parse_ok("@tool pub type Page\n@tool pub flow chat(prompt: Text) -> Result<Text, ChatError>")
    page, chat = m.decls
    assert page.kind == "abstract" and page.pub and page.annotations[0].name == "tool"
    assert chat.body is None and chat.effect is None
    assert data(chat.result) == [
        "TypeName",
        None,
        "Result",
        [["TypeName", None, "Text", []], ["TypeName", None, "ChatError", []]],
    ]


def test_body_on_next_line_after_equals():
    m = parse_ok(
        "flow read_batch(refs: List<Text>) -> Batch !tool =\n    refs.map(flow(r) = catalog.read(r))"
    )
    fn = m.decls[0]
    assert fn.effect == "tool"
    lam = fn.body.args[0]
    assert isinstance(lam, ast.Lambda) and lam.params[0].name == "r" and lam.params[0].type is None


# --- declarations --------------------------------------------------------------------------------


def test_type_declaration_kinds():
    m = parse_ok(
        "pub opaque type P { pub a: Int, b: Text }\n"
        "type E<T> { A, B(T,), C { x: Int } }\n"
        "type R {}\n"
        "type F<T> = (T, Int) -> T !pure\n"
        '@lang("int") pub type Int'
    )
    p, e, r, f, i = m.decls
    assert (p.kind, p.pub, p.opaque, [x.pub for x in p.fields]) == ("record", True, True, [True, False])
    assert e.kind == "enum" and e.type_params == ["T"]
    assert [c.positional is None and c.named is None for c in e.ctors] == [True, False, False]
    assert e.ctors[2].named[0].name == "x"
    assert r.kind == "record" and r.fields == [] and r.ctors == []
    assert f.kind == "alias" and isinstance(f.alias, ast.FunctionType) and f.alias.effect == "pure"
    assert i.kind == "abstract" and i.annotations[0].args[0].value == "int"


def test_type_body_over_several_lines_without_commas():
    m = parse_ok("type Shape {\n    Circle(Decimal)\n    Square { side: Int }\n    Empty\n}")
    assert [c.name for c in m.decls[0].ctors] == ["Circle", "Square", "Empty"]


def test_function_forms():
    m = parse_ok(
        "pub flow map<T, U>(xs: List<T>, f: (T) -> U,) -> List<U>\n"
        "flow g() -> Int { 1 }\n"
        "flow h() -> ((Int) -> Int) = flow(x) = x + 1\n"
        'flow k() -> (Int, Text) = (1, "a")\n'
        "flow u() -> () = ()\n"
    )
    mp, g, h, k, u = m.decls
    assert (
        mp.type_params == ["T", "U"] and mp.body is None and isinstance(mp.params[1].type, ast.FunctionType)
    )
    assert isinstance(g.body, ast.Block)
    assert isinstance(h.result, ast.FunctionType)
    assert isinstance(k.result, ast.TupleType) and len(k.result.items) == 2
    assert data(u.result) == ["TupleType", []] and data(u.body) == ["Literal", "unit", None]


def test_annotations_with_arguments_on_their_own_lines():
    m = parse_ok('@test\nflow t() -> Unit = ()\n@fake(web.search)\n@lang("x")\nflow fk(q: Text) -> Text = q')
    t, fk = m.decls
    assert [a.name for a in t.annotations] == ["test"]
    assert [a.name for a in fk.annotations] == ["fake", "lang"]
    assert data(fk.annotations[0].args[0]) == ["FieldAccess", ["Name", "web"], "search"]


def test_effect_after_result_marks_the_function_not_a_type():
    fn = parse_ok("flow main(ticket: Text) -> Report !tool = work(ticket, [], 1)").decls[0]
    assert fn.effect == "tool" and isinstance(fn.result, ast.TypeName)


def test_function_typed_parameter_with_effects():
    fn = parse_ok("flow f(g: (Int) -> Int !pure, h: () -> Text !tool) -> Int = 1").decls[0]
    assert [p.type.effect for p in fn.params] == ["pure", "tool"]
    assert fn.params[1].type.params == []


def test_qualified_and_generic_types():
    fn = parse_ok("flow f(a: planner.Action, b: Result<List<Text>, E>) -> Dict<Text, Int>").decls[0]
    assert data(fn.params[0].type) == ["TypeName", "planner", "Action", []]
    assert data(fn.params[1].type.args[0]) == ["TypeName", None, "List", [["TypeName", None, "Text", []]]]


# --- expressions ---------------------------------------------------------------------------------


def test_literals():
    cases = {
        "42": ("int", 42),
        "1_000": ("int", 1000),
        "0xff": ("int", 255),
        "3.14": ("decimal", "3.14"),
        "0.5": ("decimal", "0.5"),
        "1_000.25": ("decimal", "1000.25"),
        '"a\\n\\t\\"\\\\\\0\\u{1F600}"': ("text", 'a\n\t"\\\0\U0001f600'),
        'b"\\x00\\xffA"': ("bytes", b"\x00\xffA"),
        "true": ("bool", True),
        "false": ("bool", False),
        "()": ("unit", None),
        "250ms": ("duration", 250_000_000),
        "5s": ("duration", 5 * 10**9),
        "2m": ("duration", 120 * 10**9),
        "1h": ("duration", 3600 * 10**9),
        "3d": ("duration", 3 * 86400 * 10**9),
        "7ns": ("duration", 7),
        "9us": ("duration", 9000),
    }
    for src, (kind, value) in cases.items():
        lit = body(src)
        assert isinstance(lit, ast.Literal) and (lit.kind, lit.value) == (kind, value), src


def test_precedence_ladder():
    e = body("a || b && c == d ++ e + f * -g")
    assert data(e) == [
        "Binary",
        "||",
        ["Name", "a"],
        [
            "Binary",
            "&&",
            ["Name", "b"],
            [
                "Binary",
                "==",
                ["Name", "c"],
                [
                    "Binary",
                    "++",
                    ["Name", "d"],
                    [
                        "Binary",
                        "+",
                        ["Name", "e"],
                        ["Binary", "*", ["Name", "f"], ["Unary", "-", ["Name", "g"]]],
                    ],
                ],
            ],
        ],
    ]


def test_left_associative_arithmetic():
    assert data(body("a - b - c")) == [
        "Binary",
        "-",
        ["Binary", "-", ["Name", "a"], ["Name", "b"]],
        ["Name", "c"],
    ]


def test_comparisons_are_not_associative():
    # still an error; the habit rule answers it with `a < b && b < c` (E012)
    _, diags = parse_module("flow f() -> T = a < b < c", "t.flow")
    assert [d.code for d in diags] == ["E012"]


def test_postfix_chain_try_and_method_calls():
    e = body("planner.next(t, n)?.items.map(f)")
    assert data(e) == [
        "Call",
        [
            "FieldAccess",
            [
                "FieldAccess",
                [
                    "Try",
                    ["Call", ["FieldAccess", ["Name", "planner"], "next"], [["Name", "t"], ["Name", "n"]]],
                    None,
                ],
                "items",
            ],
            "map",
        ],
        [["Name", "f"]],
    ]


def test_error_conversion_forms():
    assert data(body("x ? f")) == ["Try", ["Name", "x"], ["Name", "f"]]
    assert data(body("g(x) ? errors.wrap")) == [
        "Try",
        ["Call", ["Name", "g"], [["Name", "x"]]],
        ["FieldAccess", ["Name", "errors"], "wrap"],
    ]
    conv = body("x ? flow(e) = Wrapped(e)")
    assert isinstance(conv, ast.Try) and isinstance(conv.convert, ast.Lambda)
    assert isinstance(body("x? ? f").operand, ast.Try)


def test_collections_and_tuples():
    assert data(body("[1, 2,]")) == ["ListLiteral", [["Literal", "int", 1], ["Literal", "int", 2]]]
    assert data(body("[]")) == ["ListLiteral", []]
    assert data(body('["a": 1, "b": 2]')) == [
        "DictLiteral",
        [
            [["Literal", "text", "a"], ["Literal", "int", 1]],
            [["Literal", "text", "b"], ["Literal", "int", 2]],
        ],
    ]
    assert data(body("[:]")) == ["DictLiteral", []]
    assert data(body("(1, x)")) == ["TupleLiteral", [["Literal", "int", 1], ["Name", "x"]]]
    assert data(body("(x)")) == ["Name", "x"]


def test_record_literals():
    assert data(body("Point { x: 1, y }")) == [
        "RecordLiteral",
        ["Name", "Point"],
        [["FieldInit", "x", ["Literal", "int", 1]], ["FieldInit", "y", None]],
        None,
    ]
    assert data(body("geo.Point { ..p, x: 1, }")) == [
        "RecordLiteral",
        ["FieldAccess", ["Name", "geo"], "Point"],
        [["FieldInit", "x", ["Literal", "int", 1]]],
        ["Name", "p"],
    ]
    rec = body("Point {\n    x: 1\n    y: 2\n}")
    assert [f.name for f in rec.fields] == ["x", "y"]


def test_lowercase_name_before_brace_is_not_a_record():
    m = body("match x { _ => 1 }")
    assert isinstance(m, ast.Match) and data(m.scrutinee) == ["Name", "x"]
    m = body("if done { 1 } else { 2 }")
    assert isinstance(m, ast.If)


def test_if_else_chain_and_lambda_forms():
    e = body("if a { 1 } else if b { 2 } else { 3 }")
    assert isinstance(e.else_, ast.If) and isinstance(e.else_.else_, ast.Block)
    lam = body("flow(x: Int, y) -> Int !tool = x")
    assert (
        lam.effect == "tool"
        and data(lam.result) == ["TypeName", None, "Int", []]
        and lam.params[1].type is None
    )
    assert body("flow() = web.search(q)").params == []


def test_return_with_and_without_value():
    blk = body("{\n    guard ok else { return }\n    return 5\n}")
    assert blk.stmts[0].else_.stmts[0].expr.value is None
    assert data(blk.stmts[1].expr) == ["Return", ["Literal", "int", 5]]


# --- statements and separators -------------------------------------------------------------------


def test_statements():
    blk = body(
        "{\n    let x: Int = 1\n    let (a, b) = pair\n    guard let Ok(v) = g() else { return }\n    let _ = x\n    v\n}"
    )
    kinds = [type(s).__name__ for s in blk.stmts]
    assert kinds == ["Let", "Let", "GuardLet", "Let", "ExprStmt"]
    assert data(blk.stmts[0].type) == ["TypeName", None, "Int", []]
    assert isinstance(blk.stmts[3].pattern, ast.WildcardPattern)


def test_leading_dot_continues_the_previous_line():
    blk = body("{\n    xs\n        .map(f)\n        .filter(g)\n}")
    assert len(blk.stmts) == 1
    assert data(blk.stmts[0].expr)[1][2] == "filter"


def test_operator_and_else_at_line_start_continue():
    blk = body("{\n    let s = a\n        ++ b\n    if c { 1 }\n    else { 2 }\n}")
    assert len(blk.stmts) == 2 and isinstance(blk.stmts[1].expr.else_, ast.Block)


def test_newlines_inside_parentheses_and_brackets_are_space():
    e = body("f(\n    a,\n    b\n)")
    assert len(e.args) == 2
    assert len(body("[\n    1\n    , 2\n]").items) == 2


def test_newline_separates_statements_and_semicolons_are_accepted():
    blk = body("{ a; b\n c }")
    assert [data(s.expr) for s in blk.stmts] == [["Name", "a"], ["Name", "b"], ["Name", "c"]]
    assert len(body("{ a; }").stmts) == 1


def test_match_arms_separated_by_newlines_or_commas_with_guards():
    m = body("match v {\n    Ok(x) if x > 0 => x\n    Ok(_) => 0,\n    Err(e) => { log(e)\n        1 },\n}")
    assert len(m.arms) == 3 and m.arms[0].guard is not None


# --- patterns ----------------------------------------------------------------------------------


def arm_pattern(src: str):
    return body(f"match v {{ {src} => 1 }}").arms[0].pattern


def test_patterns():
    assert isinstance(arm_pattern("_"), ast.WildcardPattern)
    assert data(arm_pattern("n")) == ["BindPattern", "n"]
    assert data(arm_pattern("-5")) == ["LiteralPattern", ["Literal", "int", -5]]
    assert data(arm_pattern('"hi"')) == ["LiteralPattern", ["Literal", "text", "hi"]]
    assert data(arm_pattern("None")) == ["CtorPattern", None, "None", None, None, False]
    assert data(arm_pattern("Ok(a, _)")) == [
        "CtorPattern",
        None,
        "Ok",
        [["BindPattern", "a"], ["WildcardPattern"]],
        None,
        False,
    ]
    assert data(arm_pattern("planner.Search(q)")) == [
        "CtorPattern",
        "planner",
        "Search",
        [["BindPattern", "q"]],
        None,
        False,
    ]
    assert data(arm_pattern("P { a, b: 0, .. }")) == [
        "CtorPattern",
        None,
        "P",
        None,
        [["a", ["BindPattern", "a"]], ["b", ["LiteralPattern", ["Literal", "int", 0]]]],
        True,
    ]
    assert data(arm_pattern("(a, b)")) == ["TuplePattern", [["BindPattern", "a"], ["BindPattern", "b"]]]
    assert data(arm_pattern("[]")) == ["ListPattern", [], None, False]
    assert data(arm_pattern("[a, b]")) == [
        "ListPattern",
        [["BindPattern", "a"], ["BindPattern", "b"]],
        None,
        False,
    ]
    assert data(arm_pattern("[x, ..rest]")) == [
        "ListPattern",
        [["BindPattern", "x"]],
        ["BindPattern", "rest"],
        True,
    ]
    assert data(arm_pattern("[x, ..]")) == ["ListPattern", [["BindPattern", "x"]], None, True]
    assert data(arm_pattern("A | B(_)")) == [
        "OrPattern",
        [
            ["CtorPattern", None, "A", None, None, False],
            ["CtorPattern", None, "B", [["WildcardPattern"]], None, False],
        ],
    ]
    assert data(arm_pattern("()")) == ["LiteralPattern", ["Literal", "unit", None]]


# --- spans ---------------------------------------------------------------------------------------


def test_spans_are_one_based_with_exclusive_ends_and_offsets():
    src = "flow f(x: Int) -> Int = {\n    let y = g(x, 2)\n    y\n}"
    fn = parse_ok(src).decls[0]
    assert (fn.span.line, fn.span.column, fn.span.end_line, fn.span.end_column) == (1, 1, 4, 2)
    assert src[fn.name_span.start : fn.name_span.end] == "f"
    let = fn.body.stmts[0]
    call = let.value
    assert (call.span.line, call.span.column, call.span.end_column) == (2, 13, 20)
    assert src[call.span.start : call.span.end] == "g(x, 2)"
    assert src[let.span.start : let.span.end] == "let y = g(x, 2)"
    assert src[fn.params[0].span.start : fn.params[0].span.end] == "x: Int"


def test_every_node_span_covers_its_source_text():
    src = open(os.path.join(SUPPORT, "main.flow"), encoding="utf-8").read()
    m = parse_ok(src)
    for node in ast.walk(m):
        sp = node.span
        assert 0 <= sp.start <= sp.end <= len(src), node
        lines = src.split("\n")
        offset = sum(len(line) + 1 for line in lines[: sp.line - 1]) + sp.column - 1
        assert offset == sp.start, (type(node).__name__, sp)


def test_annotated_declaration_span_starts_at_annotation():
    fn = parse_ok("@tool\npub flow chat(p: Text) -> Text").decls[0]
    assert (fn.span.line, fn.span.column) == (1, 1) and fn.name_span.line == 2


# --- identity --------------------------------------------------------------------------------


def test_reformatting_and_comments_do_not_change_the_tree():
    a = open(os.path.join(SUPPORT, "main.flow"), encoding="utf-8").read()
    b = (
        '// support ticket\nuse "std@v1/task"   // tasks\nuse "./planner"\nuse "./web"\nuse "./docs"\nuse "./human"\n'
        "pub type Report {\n  Resolved(Text)\n  GaveUp(List<Text>,)\n  Unanswered(Text),\n}\n\n\n"
        "pub flow main(ticket: Text) -> Report !tool =\n  work(ticket, [], 1)\n"
        "flow work(\n  ticket: Text,\n  notes: List<Text>,\n  round: Int,\n) -> Report !tool = {\n"
        "  guard round <= 10 else {\n    return GaveUp(notes)   // give up\n  }\n"
        "  match planner.next(ticket, notes) {\n"
        "    Ok(Search(query)) => match task.race([flow() = web.search(query), flow() = docs.search(query)]) {\n"
        "      Ok(hit) => work(ticket, notes ++ [hit], round + 1)\n      Err(_) => work(ticket, notes, round + 1)\n    }\n"
        "    Ok(Ask(question)) => match human.ask(question) { Ok(answer) => work(ticket, notes ++ [answer], round + 1), Err(_) => Unanswered(question) }\n"
        "    Ok(Done(summary)) => Resolved(summary)\n    Err(_) => GaveUp(notes)\n  }\n}\n"
    )
    assert ast.to_data(parse_ok(a)) == ast.to_data(parse_ok(b))


def test_a_change_in_meaning_changes_the_tree():
    assert ast.to_data(parse_ok("flow f() -> Int = 1")) != ast.to_data(parse_ok("flow f() -> Int = 2"))
    assert ast.to_data(parse_ok('use "./a"')) != ast.to_data(parse_ok('use "./b"'))


def test_grammar_page_reproduces_the_grammar_file_exactly():
    """docs/spec/grammar.md is the reference: its grammar block must be grammar.lark, verbatim."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "spec" / "grammar.md").read_text()
    block = doc.split("```lark\n", 1)[1].split("```", 1)[0]
    assert block.strip() == (root / "flow2py" / "syntax" / "grammar.lark").read_text().strip()


def _let_names(fn) -> list[str]:
    return [s.pattern.name for s in fn.body.stmts if isinstance(s, ast.Let)]


def test_a_long_repetition_keeps_every_item_in_order():
    """The `x*` repetitions grow one list in place (parsing stays linear in their length)."""
    n = 3000
    body = "".join(f"    let x{i} = {i}\n" for i in range(n))
    params = ", ".join(f"p{i}: Int" for i in range(n))
    src = f"flow f({params}) -> Int = {{\n{body}    x0\n}}\ntype Big {{ {', '.join(f'C{i}' for i in range(n))} }}\n"
    mod, diags = parse_module(src, "m.flow")
    assert not diags
    fn = next(d for d in mod.decls if isinstance(d, ast.FnDecl))
    assert _let_names(fn) == [f"x{i}" for i in range(n)]
    assert [p.name for p in fn.params] == [f"p{i}" for i in range(n)]
    big = next(d for d in mod.decls if isinstance(d, ast.TypeDecl))
    assert [c.name for c in big.ctors] == [f"C{i}" for i in range(n)]


def test_feeding_a_copy_of_the_parser_state_leaves_the_original_as_it_was():
    """Recovery tries tokens on copies of the parser state, and a repetition's list grows in
    place: the copy holds its own list, so what the trial reduces never reaches the original."""
    from flow2py.syntax import parser as PS
    from flow2py.syntax.engine import lalr
    from flow2py.syntax.engine.lark_tables import table

    src = "flow f() -> Int = {\n    let a = 1\n    let b = 2\n    let c = 3\n    let d = 4\n    a\n}\n"
    diags: list = []
    [(seg, _)] = PS._split_declarations(PS.tokenize(PS._scanner(), src, "m.flow", diags))
    conf = lalr.Conf(table(), PS.Builder("m.flow", diags))
    k = next(i for i, t in enumerate(seg) if t.value == "3") + 1  # the `_SEP` after `let c = 3` is next
    original = lalr.State([conf.start], [])
    assert lalr.feed_run(conf, original, seg[:k], 0) == k
    trial = original.copy()
    assert lalr.feed_run(conf, trial, seg, k) == len(seg)  # reduces `let c = 3` into the list
    done = lalr.feed_run(conf, original, seg, k)
    assert done == len(seg)
    for ps in (trial, original):
        fn = lalr.feed_end(conf, ps, lalr.end_token(seg))
        assert _let_names(fn) == ["a", "b", "c", "d"]


def test_recovery_inside_a_long_repetition_does_not_change_what_was_parsed_before():
    """Error recovery tries tokens on copies of the parser state; the list a repetition grows in
    place is copied with them, so a rejected trial leaves the statements already parsed alone."""
    from flow2py.syntax import parser as PS
    from flow2py.syntax.engine import lalr
    from flow2py.syntax.engine.lark_tables import table

    lines = [f"    let x{i} = {i}\n" for i in range(200)]
    lines[120] = "    let = 3\n"  # a syntax error in the middle: skipped to the next separator
    src = "flow f() -> Int = {\n" + "".join(lines) + "    g(x0\n"  # and an unclosed `(` and `{`
    diags: list = []
    [(seg, _)] = PS._split_declarations(PS.tokenize(PS._scanner(), src, "m.flow", diags))
    conf = lalr.Conf(table(), PS.Builder("m.flow", diags))
    # the recovered tree, before the parser sets it aside for a hole (broken.py)
    fn = PS._parse_segment(conf, seg, src, "m.flow", diags, False, None)
    assert {d.code for d in diags} >= {"E004", "E005"}
    assert _let_names(fn) == [f"x{i}" for i in range(200) if i != 120]
