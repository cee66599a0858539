"""Run semantics with Tool calls: evaluation order, short-circuit, effectful callbacks,
`?` conversions, tasks and faults (docs/spec/semantics.md, concurrency.md). Each program records
the Tool calls it makes; the tests compare the value and the call order with the spec."""

from __future__ import annotations

import pytest

from flow_run import flow_program

TOOLS = """
@tool pub flow f(x: Int) -> Result<Int, Text>
@tool pub flow b(x: Int) -> Result<Bool, Text>
"""

MAIN = """
use "std@v1/task"
use "./t"

flow v(x: Int) -> Int !tool = match t.f(x) { Ok(n) => n, Err(_) => -1 }
flow bo(x: Int) -> Bool !tool = match t.b(x) { Ok(n) => n, Err(_) => false }

type R { a: Int, b: Int, c: Int }
flow add3(a: Int, b: Int, c: Int) -> Int = a + b + c
flow mk(x: Int) -> R !tool = R { a: v(x), b: 0, c: 0 }

pub flow order_args() -> Int !tool = add3(v(1), v(2) * v(3), v(4))
pub flow order_record() -> R !tool = R { c: v(1), a: v(2), b: v(3) }
pub flow order_update() -> R !tool = R { ..mk(1), c: v(2), b: v(3) }
pub flow order_dict() -> List<(Int, Int)> !tool = [v(2): v(1), v(4): v(3)].to_list()
pub flow short_circuit() -> (Bool, Bool, Bool, Bool) !tool =
    (bo(0) && bo(1), bo(2) || bo(3), bo(4) && bo(5), bo(6) || bo(7))
pub flow cond_chain() -> Text !tool =
    if bo(2) { "a" } else if v(3) == 3 && bo(4) { "b" } else if bo(5) { "c" } else { "d" }
pub flow eff_guard_list() -> List<Text> !tool = [[1], [2, 3], [4], []].map(flow(xs) = match xs {
    [x] if bo(x) => "odd1",
    [x, ..] if v(x) > 1 && bo(x + 1) => "v",
    [_, ..] => "some",
    [] => "none",
})
pub flow callbacks() -> (List<Int>, List<Int>, Int, Option<Int>, List<Int>) !tool =
    ([3, 1, 2].map(flow(x) = v(x)), [3, 1, 2, 4].filter(flow(x) = bo(x)),
     [1, 2].fold(0, flow(acc, x) = acc + v(x * 10)), [5, 6, 7].find(flow(x) = bo(x)),
     [2, 1].sort_by(flow(x) = v(x * 100)))

flow conv(_p: ToolProblem<Text>) -> Int !tool = v(100)
flow q(x: Int) -> Result<Int, Int> !tool {
    let g = flow(y: Int) -> Result<Int, Int> !tool = {
        let r = t.f(y) ? conv
        Ok(r * 2)
    }
    let a = g(x)?
    Ok(a + 1)
}
pub flow try_effectful() -> (Result<Int, Int>, Result<Int, Int>) !tool = (q(5), q(-5))

flow twice<T>(x: T, g: (T) -> T) -> T = g(g(x))
pub flow poly() -> (Int, Int) !tool = (twice(1, flow(x) = x * 3), twice(1, flow(x) = v(x) + 1))

flow edeep(n: Int) -> Int !tool = if n == 0 { v(0) } else { 1 + edeep(n - 1) }
pub flow deep() -> Int !tool = edeep(1000000)
flow ecount(n: Int, acc: Int) -> Int !tool = if n == 0 { acc + v(0) } else { ecount(n - 1, acc + n) }
pub flow tail() -> Int !tool = ecount(100000, 0)

flow keep() -> (() -> Int !tool) !tool {
    let t = task.spawn(flow() = v(1))
    flow() = task.await(t)
}
pub flow closure_keeps_task() -> Int !tool {
    let g = keep()
    g()
}
"""


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    return flow_program(tmp_path_factory.mktemp("evaluation_order"), {"t.flow": TOOLS, "main.flow": MAIN})


def run(prog, entry):
    log = []

    def f(x):
        log.append(("f", x))
        return {"Ok": x} if x >= 0 else {"Err": "neg"}

    def b(x):
        log.append(("b", x))
        return {"Ok": x % 2 == 1}

    out, rec = prog.run(entry, (), tools={"t.f": f, "t.b": b})
    return out, log, rec


def F(*xs):
    return [("f", x) for x in xs]


@pytest.mark.parametrize(
    "entry, shown, calls",
    [
        ("order_args", "11", F(1, 2, 3, 4)),
        ("order_record", "R { a: 2, b: 3, c: 1 }", F(1, 2, 3)),
        ("order_update", "R { a: 1, b: 3, c: 2 }", F(1, 2, 3)),
        ("order_dict", "[(2, 1), (4, 3)]", F(2, 1, 4, 3)),
        (
            "short_circuit",
            "(false, true, false, true)",
            [("b", 0), ("b", 2), ("b", 3), ("b", 4), ("b", 6), ("b", 7)],
        ),
        ("cond_chain", '"c"', [("b", 2), ("f", 3), ("b", 4), ("b", 5)]),
        (
            "eff_guard_list",
            '["odd1", "v", "v", "none"]',
            [("b", 1), ("f", 2), ("b", 3), ("b", 4), ("f", 4), ("b", 5)],
        ),
        (
            "callbacks",
            "([3, 1, 2], [3, 1], 30, Some(5), [1, 2])",
            F(3, 1, 2) + [("b", 3), ("b", 1), ("b", 2), ("b", 4)] + F(10, 20) + [("b", 5)] + F(200, 100),
        ),
        ("try_effectful", "(Ok(11), Err(100))", F(5, -5, 100)),
        ("poly", "(9, 3)", F(1, 2)),
        ("tail", "5000050000", F(0)),
        ("closure_keeps_task", "1", F(1)),
    ],
)
def test_value_and_tool_call_order_follow_the_source(prog, entry, shown, calls):
    import flowrt as rt

    out, log, _ = run(prog, entry)
    assert rt.show(out.value) == shown
    assert log == calls


def test_deep_effectful_recursion_faults_as_stack_exhausted_at_its_line(prog):
    out, log, _ = run(prog, "deep")
    assert out.fault.message == "stack exhausted"
    assert (out.fault.file, out.fault.line) == (
        "main.flow",
        MAIN.splitlines().index(
            "flow edeep(n: Int) -> Int !tool = if n == 0 { v(0) } else { 1 + edeep(n - 1) }"
        )
        + 1,
    )
    assert log == []
