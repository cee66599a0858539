"""Flow programs run end to end: real parser, checker, codegen and driver (tests/flow_run.py).

The driver's own tests (test_driver.py, test_tasks.py) use hand-written generators; these check
that generated code meets the same rules: parkable tasks and checkpoints, lifting pure function
values, task ownership, faults, constant stack, Tools, and Flow lines in tracebacks.
"""

from __future__ import annotations

import inspect

import pytest

import flowrt as rt
from flowrt import pending
from flowrt.engine.drive import (
    Matched,
    RunCompleted,
    RunFaulted,
    RunPaused,
)
from flowrt.data.facts import Call, Checkpoint, Choice, End, Faulted, ParkedTask, Reply, Stop

from flow_run import facts_of, flow_program, flow_program_dir


# ---- 1. parkable tasks and checkpoints -----------------------------------------------------------


def _step(r):
    return {"Ok": r}


def test_pending_read_passed_round_to_round_is_parked_and_checkpoints_every_round():
    p = flow_program_dir("pump")
    out, rec = p.run(
        "main", (3,), tools={"feed.next": lambda: pending, "work.step": _step}, checkpoint_every=1
    )
    assert out == RunPaused((rt.engine.drive.OpenCall("root/1#1", "feed.next"),))
    cps = facts_of(rec, Checkpoint)
    assert [c.checkpoint for c in cps] == [1, 2]
    parked = ParkedTask("root/1", "root/1#1", "main::Msg.Received", ())
    assert cps[0] == Checkpoint(1, "main::pump", (), (parked, 2, 3))
    assert cps[1] == Checkpoint(2, "main::pump", (), (parked, 3, 3))
    # the read keeps the id it was made with; calls after checkpoint n are prefixed cn:
    calls = [c.id for c in facts_of(rec, Call)]
    assert calls == ["root#1", "root/1#1", "c1:root#1", "c2:root#1"]


def test_paused_pump_resumes_in_a_fresh_driver_from_its_latest_checkpoint():
    p = flow_program_dir("pump")
    out, rec = p.run(
        "main", (3,), tools={"feed.next": lambda: pending, "work.step": _step}, checkpoint_every=1
    )
    assert isinstance(out, RunPaused)
    history = rec.facts + [Reply("root/1#1", rt.Ok("hello"))]
    # facts before the latest checkpoint are archived: the resume needs only what follows it
    cp = max(i for i, f in enumerate(history) if type(f) is Checkpoint)

    def never(*a):
        raise AssertionError("a recorded call was sent again")

    out2, rec2 = p.resume(
        history[cp:], first=cp + 1, tools={"feed.next": never, "work.step": never}, checkpoint_every=1
    )
    assert out2 == RunCompleted("hello")
    assert rec2.facts[-1] == End(rt.Completed("hello"))
    # the whole history replays from Start and from the latest checkpoint
    full = history + rec2.facts[len(history) - cp :]
    assert isinstance(p.replay(full, begin=1), Matched)
    assert isinstance(p.replay(full, begin="latest"), Matched)


def test_pump_whose_read_answers_completes_and_replays():
    p = flow_program_dir("pump")
    out, rec = p.run(
        "main", (4,), tools={"feed.next": lambda: {"Ok": "hi"}, "work.step": _step}, checkpoint_every=1
    )
    assert out == RunCompleted("hi")
    assert isinstance(p.replay(rec.facts), Matched)


def test_parked_read_whose_reply_arrived_still_allows_checkpoints():
    p = flow_program_dir("pump")
    out, rec = p.run(
        "main", (4,), tools={"feed.next": lambda: {"Ok": "hi"}, "work.step": _step}, checkpoint_every=1
    )
    assert out == RunCompleted("hi")
    cps = facts_of(rec, Checkpoint)
    assert [c.checkpoint for c in cps] == [1, 2, 3]
    # recorded as it was while parked: its call id, the constructor, the data
    parked = ParkedTask("root/1", "root/1#1", "main::Msg.Received", ())
    assert [c.args for c in cps] == [(parked, 2, 4), (parked, 3, 4), (parked, 4, 4)]
    assert isinstance(p.replay(rec.facts), Matched)
    assert isinstance(p.replay(rec.facts, begin="latest"), Matched)


def _pump_answered_then_paused():
    """pump whose read is answered at once, paused on round 3's step: (program, facts)."""
    p = flow_program_dir("pump")
    out, rec = p.run(
        "main",
        (5,),
        tools={"feed.next": lambda: {"Ok": "hi"}, "work.step": lambda r: pending if r == 3 else _step(r)},
        checkpoint_every=1,
    )
    assert out == RunPaused((rt.engine.drive.OpenCall("c2:root#1", "work.step"),))
    return p, rec.facts


def _never(*a):
    raise AssertionError("a recorded call was sent again")


def test_task_finished_from_its_parked_call_is_restored_finished_on_resume():
    p, facts = _pump_answered_then_paused()
    read_reply = next(f for f in facts if type(f) is Reply and f.id == "root/1#1")
    cp = max(i for i, f in enumerate(facts) if type(f) is Checkpoint)
    assert facts.index(read_reply) < cp  # the read's reply lies before the latest checkpoint
    history = facts + [Reply("c2:root#1", rt.Ok(9))]
    tools = {"feed.next": _never, "work.step": _never}
    # the whole history: the reply is found before the checkpoint
    out, rec = p.resume(history, tools=tools)
    assert out == RunCompleted("hi")
    # from the checkpoint on (earlier facts archived): the host hands over the carried reply
    out2, rec2 = p.resume(
        history[cp:], first=cp + 1, tools=tools, carried_replies={"root/1#1": read_reply.reply}
    )
    assert out2 == RunCompleted("hi")
    assert rec2.facts[-1] == rec.facts[-1] == End(rt.Completed("hi"))
    full = history + rec.facts[len(history) :]
    assert isinstance(p.replay(full, begin=1), Matched)
    assert isinstance(p.replay(full, begin="latest"), Matched)
    # replay from the checkpoint alone needs the carried reply too
    from_cp = dict(
        first=cp + 1, begin=cp + 1, mode="replay", resolve=p.loaded.resolve, classes=p.loaded.classes
    )
    with_reply = rt.DriveOptions(carried_replies={"root/1#1": read_reply.reply}, **from_cp)
    assert isinstance(rt.engine.drive.drive(None, full[cp:], with_reply), Matched)
    # the read waits again, and End comes instead
    without = rt.engine.drive.drive(None, full[cp:], rt.DriveOptions(**from_cp))
    assert type(without) is rt.engine.drive.Diverged and "open calls: root/1#1" in without.reason


BACKGROUND = {
    "main.flow": """
use "std@v1/task"
use "./clock"
use "./work"

pub flow main(limit: Int) -> Int !tool = {
    let bg = task.spawn(flow() = tick(0))
    pump(bg, 1, limit)
}

flow tick(n: Int) -> Int !tool = match clock.tick(n) {
    Ok(_) => if n >= 3 { n } else { tick(n + 1) },
    Err(_) => n,
}

flow pump(bg: task.Task<Int>, round: Int, limit: Int) -> Int !tool = match work.step(round) {
    Ok(n) => if n >= limit { task.await(bg) } else { pump(bg, round + 1, limit) },
    Err(_) => 0,
}
""",
    "clock.flow": "@tool pub flow tick(n: Int) -> Result<Int, Text>\n",
    "work.flow": "@tool pub flow step(round: Int) -> Result<Int, Text>\n",
}


def test_background_task_in_its_own_loop_prevents_every_checkpoint(tmp_path):
    p = flow_program(tmp_path, BACKGROUND)
    out, rec = p.run(
        "main", (5,), tools={"clock.tick": lambda n: pending, "work.step": _step}, checkpoint_every=1
    )
    assert isinstance(out, RunPaused)
    assert facts_of(rec, Checkpoint) == []
    # the same loop without the background task still checkpoints (the rule is about the task)
    out, rec = p.run("main", (5,), tools={"clock.tick": _step, "work.step": _step}, checkpoint_every=1)
    assert out == RunCompleted(3)
    assert facts_of(rec, Checkpoint) == []  # tick finished but unobserved: not parked either


RECORD_PARK = {
    "main.flow": """
use "std@v1/task"
use "./research"

pub type Arrived { index: Int, reply: Result<Text, ToolProblem<Text>>, tag: Text }

pub flow main(item: Text) -> Text !tool = {
    let index = 7
    let t = task.spawn(flow() = Arrived { index, reply: research.search(item), tag: "r" })
    wait(t, 0)
}

flow wait(t: task.Task<Arrived>, round: Int) -> Text !tool = match research.ping(round) {
    Ok(_) => if round >= 2 {
        let a = task.await(t)
        match a.reply { Ok(text) => text ++ a.tag, Err(_) => "none" }
    } else { wait(t, round + 1) },
    Err(_) => "ping failed",
}
""",
    "research.flow": (
        "@tool pub flow search(item: Text) -> Result<Text, Text>\n"
        "@tool pub flow ping(n: Int) -> Result<Int, Text>\n"
    ),
}


def test_record_constructor_around_the_call_is_parked_with_its_data(tmp_path):
    p = flow_program(tmp_path, RECORD_PARK)
    out, rec = p.run(
        "main",
        ("x",),
        tools={"research.search": lambda i: pending, "research.ping": _step},
        checkpoint_every=1,
    )
    assert isinstance(out, RunPaused)
    cp = facts_of(rec, Checkpoint)[0]
    assert cp.args[0] == ParkedTask("root/1", "root/1#1", "main::Arrived#1", (7, "r"))
    history = rec.facts + [Reply("root/1#1", rt.Ok("found"))]
    out2, rec2 = p.resume(history, tools={"research.ping": _step})
    assert out2 == RunCompleted("foundr")
    assert isinstance(p.replay(rec2.facts, begin=1), Matched)


# ---- 2. pure function values in effectful slots ----------------------------------------------------

LIFT = {
    "main.flow": """
use "std@v1/task"
use "./web"

pub type Job { run: () -> Int !tool }

pub flow main(q: Text) -> (Text, Int, Int, List<Int>, List<Int>) !tool = {
    let r = task.race([flow() = Ok("fast"), flow() = web.search(q)])
    let j = Job { run: flow() = 5 }
    let a = j.run()
    let f = maker()
    let b = f()
    let fs: List<() -> Int !tool> = [flow() = 1, flow() = 2]
    let xs = fs.map(flow(g) = g())
    let all = task.all([flow() = 10, flow() = 20])
    let t = match r { Ok(t) => t, Err(_) => "err" }
    (t, a, b, xs, all)
}

flow maker() -> (() -> Int !tool) = flow() = 3
""",
    "web.flow": "@tool pub flow search(q: Text) -> Result<Text, Text>\n",
}


def test_pure_function_values_work_in_every_effectful_slot(tmp_path):
    p = flow_program(tmp_path, LIFT)
    out, rec = p.run("main", ("q",), tools={"web.search": lambda q: pending})
    assert out == RunCompleted(("fast", 5, 3, rt.list_of((1, 2)), rt.list_of((10, 20))))
    # the pure lambda won the race; the search was stopped with its call closed, no reply
    assert facts_of(rec, Choice) == [Choice("root", "root/1")]
    stop = facts_of(rec, Stop)[0]
    assert (stop.task, stop.found, [(c.call, c.has_reply) for c in stop.closed]) == (
        "root/2",
        "running",
        [("root/2#1", False)],
    )
    assert isinstance(p.replay(rec.facts), Matched)


REQUESTING = {
    "main.flow": """
use "std@v1/task"
use "./web"

// Each of the lambdas `flow(...) = task.await(...)` is one task operation: generated as a plain
// function returning the request (abi.md, "Requests"), which the driver runs as a task's body, a
// tail call's target and a `map` callback; `flow() = n(q)` returns its tail call. The `spawn` of
// a lambda needs a statement (its def): a generator, as before.
pub flow main(q: Text) -> (Int, Int, List<Int>) !tool = {
    let t = task.spawn(flow() = n(q))
    let waiter = task.spawn(flow() = task.await(t))
    let a = task.await(waiter)
    let await_it = flow(x: task.Task<Int>) = task.await(x)
    let b = tail(await_it, task.spawn(flow() = n("ab")))
    let ts = [q, "a"].map(flow(s) = task.spawn(flow() = n(s)))
    (a, b, ts.map(flow(x) = task.await(x)))
}

flow n(q: Text) -> Int !tool = match web.len(q) {
    Ok(k) => k,
    Err(_) => 0,
}

flow tail(f: (task.Task<Int>) -> Int !tool, t: task.Task<Int>) -> Int !tool = f(t)
""",
    "web.flow": "@tool pub flow len(q: Text) -> Result<Int, Text>\n",
}


def test_a_lambda_that_is_one_task_operation_runs_as_a_task_body_a_tail_call_and_a_callback(tmp_path):
    p = flow_program(tmp_path, REQUESTING)
    out, rec = p.run("main", ("abc",), tools={"web.len": lambda q: {"Ok": len(q)}})
    assert out == RunCompleted((3, 2, rt.list_of((3, 1))))
    assert isinstance(p.replay(rec.facts), Matched)
    defs = [c for c in p.fn("main").__code__.co_consts if inspect.iscode(c)]
    generators = sorted(c.co_name for c in defs if c.co_flags & inspect.CO_GENERATOR)
    # only the lambda that defines one yields: the others return their request or tail call
    assert generators == ["_flow15"] and len(defs) == 6, [(c.co_name, c.co_flags) for c in defs]


# ---- 3. task rules through Flow ----------------------------------------------------------------------

TASKS = {
    "main.flow": """
use "std@v1/task"
use "./svc"

pub flow race_seed(q: Text) -> Text !tool = match task.race([
    flow() = svc.web(q),
    flow() = svc.docs(q),
]) {
    Ok(hit) => hit,
    Err(_) => "none",
}

flow helper() -> Int !tool = {
    let _t = task.spawn(flow() = svc.web("background"))
    match svc.tick(0) { Ok(_) => 1, Err(_) => 0 }
}

pub flow owner_returns() -> Int !tool = {
    let n = helper()
    match svc.tick(n) { Ok(m) => m, Err(_) => 0 }
}

pub flow loop_keeps() -> Text !tool = go(1, None)

flow go(round: Int, held: Option<task.Task<Result<Text, ToolProblem<Text>>>>) -> Text !tool = match held {
    None => go(2, Some(task.spawn(flow() = svc.docs("kept")))),
    Some(t) => if round < 3 {
        match svc.tick(round) { Ok(_) => go(round + 1, held), Err(_) => "tick failed" }
    } else {
        match task.await(t) { Ok(text) => text, Err(_) => "none" }
    },
}

flow starter() -> task.Task<Result<Text, ToolProblem<Text>>> !tool = {
    let t = task.spawn(flow() = svc.docs("handed"))
    t
}

pub flow handed_over() -> Text !tool = {
    let t = starter()
    let _ = svc.tick(1)
    match task.await(t) { Ok(text) => text, Err(_) => "none" }
}

pub flow all_in_order() -> List<Result<Text, ToolProblem<Text>>> !tool =
    task.all([flow() = svc.docs("slow"), flow() = svc.docs("fast")])

pub flow first_of_finished() -> (Int, Int) !tool = {
    let a = task.spawn(flow() = 1)
    let b = task.spawn(flow() = 2)
    let _ = svc.tick(0)
    task.first([b, a])
}

pub flow stop_finished() -> Int !tool = {
    let t = task.spawn(flow() = 42)
    let _ = svc.tick(0)
    task.stop(t)
    7
}
""",
    "svc.flow": (
        "@tool pub flow web(q: Text) -> Result<Text, Text>\n"
        "@tool pub flow docs(q: Text) -> Result<Text, Text>\n"
        "@tool pub flow tick(n: Int) -> Result<Int, Text>\n"
    ),
}

SVC = {"svc.web": lambda q: pending, "svc.docs": lambda q: {"Ok": "doc:" + q}, "svc.tick": _step}


@pytest.fixture
def tasks_prog(tmp_path):
    return flow_program(tmp_path, TASKS)


def test_race_records_choice_and_stops_the_loser_with_its_call_closed(tasks_prog):
    out, rec = tasks_prog.run("race_seed", ("safari",), tools=SVC)
    assert out == RunCompleted("doc:safari")
    kinds = [type(f).__name__ for f in rec.facts]
    assert kinds == ["Start", "Call", "Call", "Reply", "Choice", "Stop", "End"]
    assert facts_of(rec, Choice) == [Choice("root", "root/2")]
    stop = facts_of(rec, Stop)[0]
    assert stop.task == "root/1" and stop.found == "running"
    assert [(c.call, c.has_reply) for c in stop.closed] == [("root/1#1", False)]
    assert isinstance(tasks_prog.replay(rec.facts), Matched)


def test_owning_call_returning_stops_its_running_task(tasks_prog):
    out, rec = tasks_prog.run("owner_returns", tools=SVC)
    assert out == RunCompleted(1)
    kinds = [(type(f).__name__, getattr(f, "id", getattr(f, "task", None))) for f in rec.facts[1:]]
    # helper's task is stopped when helper returns, before main's next call
    assert kinds == [
        ("Call", "root#1"),
        ("Call", "root/1#1"),
        ("Reply", "root#1"),
        ("Stop", "root/1"),
        ("Call", "root#2"),
        ("Reply", "root#2"),
        ("End", None),
    ]
    stop = facts_of(rec, Stop)[0]
    assert stop.found == "running" and [(c.call, c.has_reply) for c in stop.closed] == [("root/1#1", False)]
    assert isinstance(tasks_prog.replay(rec.facts), Matched)


def test_tail_call_keeps_the_loops_task_from_round_to_round(tasks_prog):
    out, rec = tasks_prog.run("loop_keeps", tools=SVC)
    assert out == RunCompleted("doc:kept")
    assert facts_of(rec, Stop) == []
    assert isinstance(tasks_prog.replay(rec.facts), Matched)


def test_returning_a_task_hands_it_to_the_caller(tasks_prog):
    out, rec = tasks_prog.run("handed_over", tools=SVC)
    assert out == RunCompleted("doc:handed")
    assert facts_of(rec, Stop) == []


def test_task_all_awaits_in_the_order_of_the_functions(tasks_prog):
    import threading

    fast_done = threading.Event()

    def docs(q):
        if q == "slow":
            assert fast_done.wait(5)
        else:
            fast_done.set()
        return {"Ok": q}

    out, rec = tasks_prog.run("all_in_order", tools={**SVC, "svc.docs": docs})
    assert out == RunCompleted(rt.list_of((rt.Ok("slow"), rt.Ok("fast"))))
    assert [f.id for f in facts_of(rec, Reply)] == ["root/2#1", "root/1#1"]
    assert facts_of(rec, Choice) == []
    assert isinstance(tasks_prog.replay(rec.facts), Matched)


def test_first_of_finished_tasks_picks_the_earliest_and_records_choice(tasks_prog):
    outs = set()
    for _ in range(3):
        out, rec = tasks_prog.run("first_of_finished", tools=SVC)
        outs.add(out)
        assert facts_of(rec, Choice) == [Choice("root", "root/1")]
        assert isinstance(tasks_prog.replay(rec.facts), Matched)
    assert outs == {RunCompleted((1, 1))}  # root/1 finished first; it is at index 1 in [b, a]


def test_stopping_a_finished_unobserved_task_records_its_value(tasks_prog):
    out, rec = tasks_prog.run("stop_finished", tools=SVC)
    assert out == RunCompleted(7)
    assert facts_of(rec, Stop) == [Stop("root/1", "finished", 42)]
    assert isinstance(tasks_prog.replay(rec.facts), Matched)


# ---- 4. faults end to end ------------------------------------------------------------------------------

FAULTS = {
    "main.flow": """use "std@v1/task"
use "./svc"

pub flow divide(a: Int, b: Int) -> Int =
    a / b

pub flow depth(n: Int) -> Int = if n == 0 { 0 } else { 1 + depth(n - 1) }

pub flow deep_tool(n: Int) -> Int !tool = if n == 0 {
    match svc.tick(0) { Ok(m) => m, Err(_) => 0 }
} else {
    1 + deep_tool(n - 1)
}

pub flow task_faults(b: Int) -> Int !tool = {
    let _other = task.spawn(flow() = svc.web("open"))
    let t = task.spawn(flow() = 10 / b)
    task.await(t)
}

pub flow first_empty() -> Int !tool = {
    let none: List<task.Task<Int>> = []
    let (_, v) = task.first(none)
    v
}
""",
    "svc.flow": (
        "@tool pub flow web(q: Text) -> Result<Text, Text>\n"
        "@tool pub flow tick(n: Int) -> Result<Int, Text>\n"
    ),
}


@pytest.fixture
def faults_prog(tmp_path):
    return flow_program(tmp_path, FAULTS)


def _faulted(out) -> Faulted:
    assert isinstance(out, RunFaulted), out
    return out.fault


def test_division_by_zero_faults_at_the_flow_line_of_the_division(faults_prog):
    out, rec = faults_prog.run("divide", (1, 0))
    f = _faulted(out)
    assert f.message == "integer division by zero"
    assert f.file.endswith("main.flow") and f.line == 5
    assert rec.facts[-1] == End(f)
    assert isinstance(faults_prog.replay(rec.facts), Matched)


def test_deep_pure_recursion_faults_stack_exhausted_with_a_flow_location(faults_prog):
    out, rec = faults_prog.run("depth", (1_000_000,))
    f = _faulted(out)
    assert f.message == "stack exhausted"
    assert f.file.endswith("main.flow") and f.line == 7
    assert isinstance(faults_prog.replay(rec.facts), Matched)


def test_deep_effectful_recursion_faults_stack_exhausted_with_a_flow_location(faults_prog):
    out, rec = faults_prog.run("deep_tool", (200_000,), tools={"svc.tick": _step})
    f = _faulted(out)
    assert f.message == "stack exhausted"
    assert f.file.endswith("main.flow") and f.line == 12
    assert facts_of(rec, Call) == []


def test_fault_inside_a_spawned_task_ends_the_run_and_stops_the_others(faults_prog):
    out, rec = faults_prog.run("task_faults", (0,), tools={"svc.web": lambda q: pending})
    f = _faulted(out)
    assert (f.message, f.file.endswith("main.flow"), f.line) == ("integer division by zero", True, 17)
    stops = facts_of(rec, Stop)
    assert [(s.task, s.found) for s in stops] == [("root/1", "running")]
    assert [c.call for c in stops[0].closed] == ["root/1#1"]
    assert isinstance(faults_prog.replay(rec.facts), Matched)


def test_first_of_an_empty_list_faults_where_it_is_called(faults_prog):
    out, rec = faults_prog.run("first_empty")
    f = _faulted(out)
    assert f.message == "task.first of an empty list"
    assert f.file.endswith("main.flow") and f.line == 23


# ---- 5. constant stack -----------------------------------------------------------------------------------

LOOPS = {
    "main.flow": """use "./svc"

pub flow count(n: Int, acc: Int) -> Int = if n == 0 { acc } else { count(n - 1, acc + 1) }

pub flow is_even(n: Int) -> Bool = if n == 0 { true } else { is_odd(n - 1) }
pub flow is_odd(n: Int) -> Bool = if n == 0 { false } else { is_even(n - 1) }

pub flow rounds(n: Int, acc: Int) -> Int !tool = if n == 0 { acc } else {
    match svc.tick(n) { Ok(m) => rounds(n - 1, acc + m), Err(_) => acc }
}
""",
    "svc.flow": "@tool pub flow tick(n: Int) -> Result<Int, Text>\n",
}


def test_million_round_pure_tail_loops_run_in_constant_stack(tmp_path):
    p = flow_program(tmp_path, LOOPS)
    assert p.run("count", (1_000_000, 0))[0] == RunCompleted(1_000_000)
    assert p.run("is_even", (1_000_000,))[0] == RunCompleted(True)
    assert p.run("is_odd", (1_000_001,))[0] == RunCompleted(True)


def test_hundred_thousand_round_effectful_tail_loop_with_a_tool_call_a_round(tmp_path):
    p = flow_program(tmp_path, LOOPS)
    rec = rt.engine.drive.MemoryRecorder(keep=False)
    start = p.start("rounds", (100_000, 0))
    rec.record(start)
    opts = rt.DriveOptions(
        recorder=rec,
        bindings=p.bindings({"svc.tick": lambda n: {"Ok": 1}}),
        resolve=p.loaded.resolve,
        checkpoint_every=1000,
    )
    out = rt.engine.drive.drive(p.fn("rounds"), [start], opts)
    assert out == RunCompleted(100_000)
    # Start, a Call and a Reply a round, a checkpoint every 1,000 facts (500 rounds), End
    assert rec.count == 1 + 2 * 100_000 + 200 + 1


# ---- 6. Tools through Flow -----------------------------------------------------------------------------

TOOLS = {
    "main.flow": """use "std@v1/task"
use "./kv"
use "./browser"

pub flow generic() -> (Result<Int, ToolProblem<Text>>, Result<Text, ToolProblem<Text>>) !tool =
    (kv.get("n"), kv.get("s"))

pub flow token(url: Text) -> Result<Text, ToolProblem<Text>> !tool = match browser.open(url) {
    Ok(page) => browser.read(page),
    Err(e) => Err(e),
}

pub flow both() -> (Result<Text, ToolProblem<Text>>, Result<Text, ToolProblem<Text>>) !tool = {
    let a = task.spawn(flow() = browser.sync_side("a"))
    let b = task.spawn(flow() = browser.async_side("b"))
    (task.await(a), task.await(b))
}
""",
    "kv.flow": "@tool pub flow get<T>(key: Text) -> Result<T, Text>\n",
    "browser.flow": (
        "@tool pub type Page\n"
        "@tool pub flow open(url: Text) -> Result<Page, Text>\n"
        "@tool pub flow read(page: Page) -> Result<Text, Text>\n"
        "@tool pub flow sync_side(x: Text) -> Result<Text, Text>\n"
        "@tool pub flow async_side(x: Text) -> Result<Text, Text>\n"
    ),
}


@pytest.fixture
def tools_prog(tmp_path):
    return flow_program(tmp_path, TOOLS)


def test_generic_tool_records_type_args_and_admits_replies_against_them(tools_prog):
    out, rec = tools_prog.run("generic", tools={"kv.get": lambda k: {"Ok": 5 if k == "n" else "five"}})
    assert out == RunCompleted((rt.Ok(5), rt.Ok("five")))
    assert [c.type_args for c in facts_of(rec, Call)] == [("Int",), ("Text",)]
    assert isinstance(tools_prog.replay(rec.facts), Matched)
    out, rec = tools_prog.run("generic", tools={"kv.get": lambda k: {"Ok": "five"}})
    first = out.value[0]
    assert isinstance(first, rt.Err) and isinstance(first._0, rt.Malformed)
    assert first._0._0.startswith("$.Ok: expected Int")
    assert out.value[1] == rt.Ok("five")


def test_host_token_from_one_tool_reaches_another(tools_prog):
    seen = []

    def read(page):
        seen.append(page)
        return {"Ok": "contents of " + page["$token"]}

    out, rec = tools_prog.run(
        "token", ("u",), tools={"browser.open": lambda u: {"Ok": {"$token": "tab-1"}}, "browser.read": read}
    )
    assert out == RunCompleted(rt.Ok("contents of tab-1"))
    assert seen == [{"$token": "tab-1"}]
    assert facts_of(rec, Call)[1].args == (rt.HostToken("browser::Page", "tab-1"),)
    assert isinstance(tools_prog.replay(rec.facts), Matched)


def test_not_run_and_other_exceptions_become_tool_problems(tools_prog):
    def not_run(u):
        raise rt.NotRun("browser is down")

    def broken(u):
        raise ValueError("boom")

    out, _ = tools_prog.run("token", ("u",), tools={"browser.open": not_run, "browser.read": not_run})
    assert out == RunCompleted(rt.Err(rt.NotRun("browser is down")))
    out, _ = tools_prog.run("token", ("u",), tools={"browser.open": broken, "browser.read": broken})
    assert out == RunCompleted(rt.Err(rt.Unknown("ValueError: boom")))


def test_async_implementation_serves_a_call(tools_prog):
    async def open_(u):
        return {"Ok": {"$token": "t"}}

    async def read(p):
        return {"Err": "empty page"}

    out, _ = tools_prog.run("token", ("u",), tools={"browser.open": open_, "browser.read": read})
    assert out == RunCompleted(rt.Err(rt.Failed("empty page")))


def test_sync_and_async_implementations_run_at_once(tools_prog):
    import threading

    barrier = threading.Barrier(2, timeout=5)

    def sync_side(x):
        barrier.wait()
        return {"Ok": "sync " + x}

    async def async_side(x):
        barrier.wait()  # blocks the event loop thread until the sync side arrives too
        return {"Ok": "async " + x}

    out, _ = tools_prog.run("both", tools={"browser.sync_side": sync_side, "browser.async_side": async_side})
    assert out == RunCompleted((rt.Ok("sync a"), rt.Ok("async b")))


# ---- 7. Flow lines in tracebacks and debuggers -----------------------------------------------------------

LINES = {
    "main.flow": """pub flow add(a: Int, b: Int) -> Int = {
    let c = a + b
    let d = c * 2
    d - 1
}
""",
}


def test_stepping_generated_code_shows_flow_files_lines_and_source(tmp_path):
    import linecache
    import sys

    p = flow_program(tmp_path, LINES)
    add = p.loaded.resolve("main::add")
    seen = []

    def tracer(frame, event, arg):
        if frame.f_code is add.__code__:
            if event == "line":
                seen.append((frame.f_code.co_filename, frame.f_lineno))
            return tracer
        return None

    sys.settrace(tracer)
    try:
        assert add(2, 3) == 9
    finally:
        sys.settrace(None)
    files = {f for f, _ in seen}
    assert len(files) == 1 and next(iter(files)).endswith("main.flow")
    assert [line for _, line in seen] == [2, 3, 4]
    flow_file = next(iter(files))
    assert [linecache.getline(flow_file, n).strip() for n in (2, 3, 4)] == [
        "let c = a + b",
        "let d = c * 2",
        "d - 1",
    ]


PUMP_TOOLS = """
from flowrt import bind, pending


@bind("feed.next")
def next_():
    return {"Ok": "hi"}


@bind("work.step")
def step(r):
    return pending if r == 3 else {"Ok": r}
"""


def test_task_finished_from_its_parked_call_survives_archive_between_pause_and_resume(tmp_path):
    from flow2py import host
    from flow_run import PROGRAMS

    tools = tmp_path / "tools.py"
    tools.write_text(PUMP_TOOLS)
    db = str(tmp_path / "runs.db")
    r = host.start(
        f"{PROGRAMS}/pump/main.flow",
        input_json='{"limit": 5}',
        tools=[str(tools)],
        store_path=db,
        run_id="p",
        checkpoint_every=1,
    )
    assert r.exit_code == 3 and "c2:root#1" in r.text, r.text
    # the read's Reply (fact 7) lies before the latest checkpoint (fact 9): archive stops at the
    # checkpoint before it (fact 5), and even deleting what it archived keeps the reply
    assert host.archive("p", delete=True, store_path=db) == (
        "deleted facts 2-4 of run p (3 fact(s) dropped); its chain now resumes from the kept hash of fact 4: "
        "up to its checkpoint at fact 5, not its latest (fact 9), which carries the reply to root/1#1 (fact 7), "
        "recorded before it: facts 5-8 stay for resume and replay"
    )
    r = host.resume("p", replies=['c2:root#1={"Ok": 9}'], tools=[str(tools)], store_path=db)
    assert r.exit_code == 0 and r.text.strip() == '"hi"', r.text
    assert host.replay("p", store_path=db).text.strip() == "Matched"
