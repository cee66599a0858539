"""Pure tail calls through function values run in constant stack (issue: "every call in tail
position, pure or !tool, runs in constant stack"): continuation-passing code and callbacks that
tail-call the next callback, hundreds of thousands deep, with Python's recursion limit untouched."""

import flowrt as rt
from flow_run import flow_program


CPS = """
flow go(n: Int, k: (Int) -> Int) -> Int = if n == 0 { k(0) } else { go(n - 1, flow(x) = k(x + 1)) }

pub flow main(n: Int) -> Int = go(n, flow(x) = x)
"""

PING_PONG = """
// a lambda and a top-level function tail-calling each other through values
flow ping(n: Int, pong: (Int, Int) -> Int) -> Int = if n == 0 { 0 } else { pong(n - 1, n) }

flow count(n: Int, acc: Int) -> Int = ping(n, flow(m, x) = count_on(m, acc + x))

flow count_on(n: Int, acc: Int) -> Int = if n == 0 { acc } else { count(n, acc) }

pub flow main(n: Int) -> Int = count(n, 0)
"""


def test_continuation_passing_far_beyond_the_python_stack_runs_in_constant_stack(tmp_path):
    prog = flow_program(tmp_path, {"main.flow": CPS})
    out, _ = prog.run("main", (200_000,))
    assert out == rt.RunCompleted(200_000)


def test_tail_calls_between_a_lambda_and_top_level_functions_through_values(tmp_path):
    prog = flow_program(tmp_path, {"main.flow": PING_PONG})
    out, _ = prog.run("main", (300_000,))
    assert out == rt.RunCompleted(300_000 * 300_001 // 2)
