"""Tasks belong to function calls: ownership, hand-over, stop, first (docs/spec/concurrency.md)."""

import flowrt as rt
from flowrt.engine.drive import describe
from _driver_progs import (
    ECHO,
    echo_bindings,
    fan,
    first_of_finished,
    handed_over,
    owner_returns,
    race,
    tail_keeps,
)


def run(prog, *args, bindings=None):
    rec = rt.MemoryRecorder()
    out = rt.start_run(prog, args, rt.DriveOptions(recorder=rec, bindings=bindings or echo_bindings()))
    return out, [describe(f) for f in rec.facts], rec


def test_owning_call_return_stops_its_running_tasks():
    out, facts, _ = run(owner_returns)
    assert out == rt.RunCompleted(2)
    assert facts == [
        "Start owner_returns",
        "Call root#1 t.echo(2)",
        "Call root/1#1 t.slow(1)",
        "Reply root#1 Ok(2)",
        "Stop root/1 found running closed root/1#1",
        "Call root#2 t.echo(2)",
        "Reply root#2 Ok(2)",
        "End Completed(2)",
    ]


def test_tail_call_keeps_the_frames_tasks():
    out, facts, _ = run(tail_keeps)
    assert out == rt.RunCompleted(7)
    assert not any(f.startswith("Stop") for f in facts)


def test_returned_task_is_handed_to_the_caller():
    out, facts, _ = run(handed_over)
    assert out == rt.RunCompleted(5)
    assert not any(f.startswith("Stop") for f in facts)


def test_first_picks_the_earliest_finished_and_records_the_choice():
    outs = [run(first_of_finished) for _ in range(3)]
    for out, facts, _ in outs:
        assert out == rt.RunCompleted((0, 0))
        assert "Choice root picked root/1" in facts
        # the two unpicked finished tasks are stopped when the call returns, found finished
        assert facts[-3:-1] == ["Stop root/2 found finished with 10", "Stop root/3 found finished with 20"]
    assert outs[0][1] == outs[1][1] == outs[2][1]


def test_replay_follows_a_recorded_choice_among_finished_tasks():
    _, _, rec = run(first_of_finished)
    facts = list(rec.facts)
    i = next(i for i, f in enumerate(facts) if type(f) is rt.Choice)
    facts[i] = rt.Choice("root", "root/3")
    # the program now gets (2, 20); root/1 is stopped instead of root/3
    facts[i + 1 :] = [
        rt.Stop("root/1", "finished", 0),
        rt.Stop("root/2", "finished", 10),
        rt.End(rt.Completed((2, 20))),
    ]
    assert rt.drive(first_of_finished, facts, rt.DriveOptions(mode="replay")).line() == "Matched"


def test_choice_of_a_task_that_cannot_be_picked_diverges():
    _, _, rec = run(first_of_finished)
    facts = list(rec.facts)
    i = next(i for i, f in enumerate(facts) if type(f) is rt.Choice)
    facts[i] = rt.Choice("root", "root/9")
    v = rt.drive(first_of_finished, facts, rt.DriveOptions(mode="replay"))
    assert isinstance(v, rt.Diverged) and v.fact == i + 1


def test_explicit_stop_records_stop_and_await_of_a_stopped_task_faults():
    @rt.fn("t::stopper", params=())
    def stopper():
        def child():
            return (yield rt.ToolCall(ECHO, (1,)))

        t = yield rt.Spawn(child)
        _ = yield rt.ToolCall(ECHO, (0,))
        yield rt.StopTask(t)
        yield rt.StopTask(t)  # a second stop does nothing
        return (yield rt.Await(t))

    out, facts, _ = run(
        stopper, bindings=rt.Bindings({"t.echo": lambda x: {"Ok": x} if x == 0 else rt.pending})
    )
    assert facts.count("Stop root/1 found running closed root/1#1") == 1
    assert isinstance(out, rt.RunFaulted) and out.fault.message == "task.await: task root/1 was stopped"


def test_fault_inside_a_task_ends_the_run_and_stops_the_others_first():
    @rt.fn("t::task_fault", params=())
    def task_fault():
        def sleeper():
            return (yield rt.ToolCall(ECHO, (1,)))

        def crasher():
            r = yield rt.ToolCall(ECHO, (0,))
            return rt.int_div(1, r._0)

        yield rt.Spawn(sleeper)
        c = yield rt.Spawn(crasher)
        return (yield rt.Await(c))

    b = rt.Bindings({"t.echo": lambda x: {"Ok": x} if x == 0 else rt.pending})
    out, facts, rec = run(task_fault, bindings=b)
    assert isinstance(out, rt.RunFaulted)
    assert out.fault.message == "integer division by zero" and out.fault.file == __file__
    assert facts[-2:] == ["Stop root/1 found running closed root/1#1", describe(rt.End(out.fault))]
    assert rt.drive(task_fault, rec.facts, rt.DriveOptions(mode="replay")).line() == "Matched"


def test_race_of_a_pure_and_a_slow_task_stops_the_loser():
    @rt.fn("t::racer", params=())
    def racer():
        def slow():
            return (yield rt.ToolCall(ECHO, (1,)))

        return (yield race(rt.list_of([slow, rt.lift(lambda: rt.Ok(9))])))

    b = rt.Bindings({"t.echo": lambda x: rt.pending})
    out, facts, _ = run(racer, bindings=b)
    assert out == rt.RunCompleted(rt.Ok(9))
    assert facts[1:] == [
        "Call root/1#1 t.echo(1)",
        "Choice root picked root/2",
        "Stop root/1 found running closed root/1#1",
        "End Completed(Ok(9))",
    ]


def test_fan_out_of_1000_tasks_completes_with_every_value():
    out, facts, rec = run(fan, 1000)
    assert out == rt.RunCompleted(sum(range(1000)))
    assert len(facts) == 2 + 2 * 1000
    assert rt.drive(fan, rec.facts, rt.DriveOptions(mode="replay")).line() == "Matched"


def test_lang_task_functions_are_the_same_operations():
    @rt.fn("t::via_lang", params=())
    def via_lang():
        t = yield rt.task_spawn(rt.lift(lambda: 4))
        u = yield rt.task_spawn(rt.lift(lambda: 5))
        i, v = yield rt.task_first(rt.list_of([u, t]))
        w = yield rt.task_await(t)
        yield rt.task_stop(u)
        return (i, v, w)

    out, facts, _ = run(via_lang)
    # first blocks (neither child has run yet); root/1 finishes first
    assert out == rt.RunCompleted((1, 4, 4))
    assert facts[1:] == [
        "Choice root picked root/1",
        "Stop root/2 found finished with 5",
        "End Completed((1, 4, 4))",
    ]
