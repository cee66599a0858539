"""Code generation: golden output, and generated code that runs, loops and reports Flow lines."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback

import pytest

import flowrt as rt
from flow2py.check import check_program
from flow2py.codegen import build_package, generate, package_files
from repo_paths import SUPPORT_MAIN

HERE = os.path.dirname(__file__)
GOLDEN = os.path.join(HERE, "..", "golden", "codegen")
#: golden outputs whose Flow program lives elsewhere (stem -> entry file)
EXTERNAL = {"support": str(SUPPORT_MAIN)}
UPDATE = os.environ.get("FLOW2PY_UPDATE_GOLDEN") == "1"


def _checked(path: str):
    r = check_program(path)
    assert r.program is not None and not r.diagnostics, [d.message for d in r.diagnostics]
    return r.program


def _golden_programs() -> dict[str, str]:
    out = {f[:-5]: os.path.join(GOLDEN, f) for f in sorted(os.listdir(GOLDEN)) if f.endswith(".flow")}
    out.update(EXTERNAL)
    return out


_counter = [0]


def _load(source: str, name: str = "main.flow"):
    """Check and generate `source`, load it in memory; returns the package."""
    import tempfile

    d = tempfile.mkdtemp()
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(source)
    prog = _checked(path)
    _counter[0] += 1
    return rt.load_package(f"_flowtest{_counter[0]}", package_files(prog)), prog


@pytest.mark.parametrize("stem", sorted(_golden_programs()))
def test_generated_code_matches_golden(stem):
    prog = _checked(_golden_programs()[stem])
    got = generate(prog)[prog.entry_module].source
    expected_path = os.path.join(GOLDEN, stem + ".py")
    if UPDATE:
        with open(expected_path, "w") as f:
            f.write(got)
    with open(expected_path) as f:
        assert got == f.read(), f"regenerate with FLOW2PY_UPDATE_GOLDEN=1 and review {expected_path}"


def test_golden_outputs_have_programs():
    programs = _golden_programs()
    orphans = [f for f in os.listdir(GOLDEN) if f.endswith(".py") and f[:-3] not in programs]
    assert orphans == []
    missing = [s for s in programs if not os.path.exists(os.path.join(GOLDEN, s + ".py"))]
    assert missing == [] or UPDATE


def test_every_std_module_generates_valid_python():
    prog = _checked(os.path.join(GOLDEN, "poly_map.flow"))
    for key, m in generate(prog).items():
        compile(m.source, m.flow_file, "exec")  # black already parsed it; this checks Python
        assert "import flowrt as rt" in m.source, key


def test_pure_functions_run_in_generated_modules():
    pkg, _ = _load(
        """
pub type Point { x: Int, y: Int }
pub type Shape { Circle(Int), Rect { w: Int, h: Int }, Empty }

flow area(s: Shape) -> Int = match s {
    Circle(r) => 3 * r * r,
    Rect { w, h } => w * h,
    Empty => 0,
}

flow describe(xs: List<Int>) -> Text = match xs {
    [] => "none",
    [x] => "one",
    [_, ..rest] => "many",
}

pub flow main(n: Int) -> Int = {
    let p = Point { x: n, y: 2 }
    let q = Point { ..p, y: p.y + 1 }
    let label = describe([q.x, q.y])
    if label == "many" { area(Rect { w: q.x, h: q.y }) + area(Circle(1)) + area(Empty) } else { 0 }
}
""".replace("[x] =>", "[_] =>").replace("[_, ..rest]", "[_, .._rest]")
    )
    main = pkg[0].PROGRAM.module("main").main if False else pkg.PROGRAM.module("main").main
    assert main(4) == 4 * 3 + 3


def test_effectful_function_is_a_generator_yielding_tool_calls():
    pkg, _ = _load(
        """
@tool flow ask(q: Text) -> Result<Text, Text>

pub flow main(q: Text) -> Text !tool = match ask(q) {
    Ok(a) => a ++ "!",
    Err(_) => "no answer",
}
"""
    )
    main = pkg.PROGRAM.module("main").main
    assert inspect.isgeneratorfunction(main)
    gen = main("why?")
    request = next(gen)
    assert (
        isinstance(request, rt.ToolCall) and request.spec.tool_id == "main::ask" and request.args == ("why?",)
    )
    with pytest.raises(StopIteration) as stop:
        gen.send(rt.Ok("because"))
    assert stop.value.value == "because!"


def test_fault_traceback_names_flow_file_and_line():
    pkg, prog = _load("pub flow main(n: Int) -> Int = {\n    let a = n + 1\n    a / (n - n)\n}\n")
    main = pkg.PROGRAM.module("main").main
    with pytest.raises(rt.Fault) as info:
        main(3)
    frames = traceback.extract_tb(info.value.__traceback__)
    flow_frames = [f for f in frames if f.filename.endswith(".flow")]
    assert flow_frames, [f.filename for f in frames]
    assert flow_frames[-1].filename == "main.flow"
    assert flow_frames[-1].lineno == 3
    assert flow_frames[-1].line == "a / (n - n)"


def test_pure_self_tail_loop_runs_a_million_rounds_in_constant_stack():
    pkg, _ = _load(
        "pub flow main(n: Int) -> Int = count(n, 0)\n"
        "flow count(n: Int, acc: Int) -> Int = if n == 0 { acc } else { count(n - 1, acc + 2) }\n"
    )
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # any recursion per round would fail at once
    try:
        assert pkg.PROGRAM.module("main").main(1_000_000) == 2_000_000
    finally:
        sys.setrecursionlimit(limit)


def test_pure_mutual_tail_recursion_runs_a_million_rounds_in_constant_stack():
    pkg, _ = _load(
        "flow is_even(n: Int) -> Bool = if n == 0 { true } else { is_odd(n - 1) }\n"
        "flow is_odd(n: Int) -> Bool = if n == 0 { false } else { is_even(n - 1) }\n"
        "pub flow main(n: Int) -> Bool = is_even(n)\n"
    )
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        m = pkg.PROGRAM.module("main")
        assert m.main(1_000_000) is True
        assert m.is_odd(1_000_001) is True
    finally:
        sys.setrecursionlimit(limit)


def test_lambda_in_a_loop_keeps_the_values_of_its_round():
    pkg, _ = _load(
        """
flow go(n: Int, fs: List<() -> Int>) -> List<() -> Int> =
    if n == 0 { fs } else { go(n - 1, fs ++ [flow() = n]) }

pub flow main(n: Int) -> List<Int> = go(n, []).map(flow(f) = f())
"""
    )
    assert list(pkg.PROGRAM.module("main").main(3)) == [3, 2, 1]


def test_built_package_imports_and_describes_the_program(tmp_path):
    prog = _checked(EXTERNAL["support"])
    root = build_package(prog, str(tmp_path), "support_flow")
    sys.path.insert(0, str(tmp_path))
    try:
        pkg = importlib.import_module("support_flow")
        p = pkg.PROGRAM
        assert p.identity == prog.identity and p.entry_module == "main" and p.std == "std@v1"
        assert ("planner::next", "planner.next") in p.tools and ("human::ask", "human.ask") in p.tools
        fn, params = p.entry("main")
        assert fn is sys.modules["support_flow.main"].main
        assert params == (("ticket", rt.T.TEXT),)
        assert p.sources["main"].startswith('use "std@v1/task"')
        # the submodules were compiled under their Flow names
        assert fn.__code__.co_filename == "main.flow"
        assert os.path.exists(os.path.join(root, "std_v1", "task.py"))
    finally:
        sys.path.remove(str(tmp_path))
        for m in [m for m in sys.modules if m == "support_flow" or m.startswith("support_flow.")]:
            del sys.modules[m]


def test_std_marks_decide_which_lists_are_not_built():
    # list.range is marked "lazy:iter.range" and fold "iterates"; list.map is "lazy-all:iter.map",
    # which only text.join ("iterates-all") takes lazily: find may stop before calling f on all
    pkg, prog = _load(
        """
use "std@v1/list"
use "std@v1/text"
use "std@v1/int"

flow square(i: Int) -> Int = i * i

pub flow main(n: Int) -> Text = {
    let total = list.range(0, n).fold(0, flow(a, i) = a + i)
    let joined = text.join(list.map(list.range(0, n), flow(i) = int.to_text(i)), ",")
    let found = list.find(list.map(list.range(0, n), square), flow(x) = x > 3)
    let kept = list.range(0, n)
    let f = match found { Some(x) => int.to_text(x), None => "-" }
    int.to_text(total) ++ " " ++ joined ++ " " ++ int.to_text(kept.length()) ++ " " ++ f
}
"""
    )
    src = "".join(generate(prog)[prog.entry_module].source.split())  # black's line breaks aside
    assert "total=rt.lang.list_fold(rt.lang.iter_range(0,n)" in src
    assert "joined=rt.lang.text_join(rt.lang.iter_map(rt.lang.iter_range(0,n),rt.lang.int_to_text)" in src
    assert "found=rt.lang.list_find(rt.lang.list_map(rt.lang.iter_range(0,n),square)" in src
    assert "kept=rt.lang.list_range(0,n)" in src
    assert pkg.PROGRAM.module("main").main(5) == "10 0,1,2,3,4 5 4"
