"""The driver live: the seed's example, pause and resume, checkpoints, faults, Tools, memory."""

import asyncio
import gc
import tracemalloc

import pytest

import flowrt as rt
from flowrt.engine.drive import describe
from _driver_progs import (
    ECHO,
    LIST_TOOL,
    SUPPORT_TOOLS,
    Arrived,
    Received,
    Resolved,
    echo_bindings,
    echo_loop,
    indexed,
    main,
    pause_then_add,
    reader,
    support_bindings,
)

SEED = [
    "Start main",
    'Call root#1 planner.next("Login fails on Safari", [])',
    'Reply root#1 Ok(Search("safari login cookie"))',
    'Call root/1#1 web.search("safari login cookie")',
    'Call root/2#1 docs.search("safari login cookie")',
    'Reply root/2#1 Ok("SameSite=None requires Secure ...")',
    "Choice root picked root/2",
    "Stop root/1 found running closed root/1#1",
    'Checkpoint 1 main::work("Login fails on Safari", ["SameSite=None requires Secure ..."], 2)',
    'Call c1:root#1 planner.next("Login fails on Safari", ["SameSite=None requires Secure ..."])',
    'Reply c1:root#1 Ok(Ask("Which Safari version does the customer use?"))',
    'Call c1:root#2 human.ask("Which Safari version does the customer use?")',
    'Reply c1:root#2 Ok("Safari 17.4")',
    'Call c1:root#3 planner.next("Login fails on Safari", ["SameSite=None requires Secure ...", "Safari 17.4"])',
    'Reply c1:root#3 Ok(Done("Enable Secure on the session cookie; ..."))',
    'End Completed(Resolved("Enable Secure on the session cookie; ..."))',
]


def run_support(rec, **kw):
    return rt.start_run(
        main,
        ("Login fails on Safari",),
        rt.DriveOptions(
            recorder=rec, bindings=support_bindings(), reachable=SUPPORT_TOOLS, checkpoint_every=5, **kw
        ),
    )


def deliver(rec, call_id, reply):
    fact = rt.Reply(call_id, reply)
    rec.record(fact)
    return list(rec.facts)


def test_race_records_choice_and_stops_loser_as_in_the_seed():
    rec = rt.MemoryRecorder()
    out = run_support(rec)
    assert [describe(f) for f in rec.facts[:8]] == SEED[:8]
    stop = rec.facts[7]
    assert stop == rt.Stop("root/1", "running", None, (rt.Closed("root/1#1"),))
    assert out == rt.RunPaused((rt.OpenCall("c1:root#2", "human.ask"),))


def test_seed_example_pauses_resumes_and_gives_the_seed_history():
    rec = rt.MemoryRecorder()
    run_support(rec)
    assert [describe(f) for f in rec.facts] == SEED[:12]
    history = deliver(rec, "c1:root#2", rt.Ok("Safari 17.4"))
    out = rt.drive(
        main, history, rt.DriveOptions(recorder=rec, bindings=support_bindings(), checkpoint_every=5)
    )
    assert out == rt.RunCompleted(Resolved("Enable Secure on the session cookie; ..."))
    assert [describe(f) for f in rec.facts] == SEED


class _LoggingRecorder(rt.MemoryRecorder):
    """A MemoryRecorder that logs ("record", fact) and ("sync",) in one list with the calls sent."""

    def __init__(self, log):
        super().__init__()
        self.log = log

    def record(self, fact):
        super().record(fact)
        self.log.append(("record", fact))

    def sync(self):
        super().sync()
        self.log.append(("sync",))


class _LoggingBindings(rt.Bindings):
    """`base`'s implementations, each logging ("sent", call id) as it is called."""

    def __init__(self, base, log):
        super().__init__()
        self.update(base)
        self.log = log

    def lookup(self, spec):
        impl = super().lookup(spec)

        def sent(*args):
            self.log.append(("sent", rt.current_call().call_id))
            return impl(*args)

        return sent


def test_every_call_and_reply_is_synced_before_its_consequence():
    log = []
    rec = _LoggingRecorder(log)
    rt.start_run(
        main,
        ("Login fails on Safari",),
        rt.DriveOptions(
            recorder=rec,
            bindings=_LoggingBindings(support_bindings(), log),
            reachable=SUPPORT_TOOLS,
            checkpoint_every=5,
        ),
    )
    where = {("call", e[1].id): i for i, e in enumerate(log) if e[0] == "record" and type(e[1]) is rt.Call}
    syncs = [i for i, e in enumerate(log) if e[0] == "sync"]
    sent = [(i, e[1]) for i, e in enumerate(log) if e[0] == "sent"]
    assert len(sent) == 5
    for i, cid in sent:  # its Call recorded, then a sync, then the call sent
        assert any(where[("call", cid)] < s < i for s in syncs), cid
    for i, e in enumerate(log):  # a Reply is synced before the next fact is recorded
        if e[0] == "record" and type(e[1]) is rt.Reply:
            assert log[i + 1] == ("sync",), (e, log[i + 1])


def test_resume_after_pause_gives_the_same_facts_as_a_run_that_got_the_reply():
    paused = rt.MemoryRecorder()
    out = rt.start_run(pause_then_add, (1,), rt.DriveOptions(recorder=paused, bindings=echo_bindings()))
    assert out == rt.RunPaused((rt.OpenCall("root#2", "t.slow"),))
    history = deliver(paused, "root#2", rt.Ok(41))
    out = rt.drive(pause_then_add, history, rt.DriveOptions(recorder=paused, bindings=echo_bindings()))
    assert out == rt.RunCompleted(42)

    direct = rt.MemoryRecorder()
    out = rt.start_run(
        pause_then_add,
        (1,),
        rt.DriveOptions(recorder=direct, bindings=echo_bindings(slow=lambda x: {"Ok": 41})),
    )
    assert out == rt.RunCompleted(42)
    assert paused.facts == direct.facts


def test_resume_refuses_a_history_the_program_does_not_make():
    rec = rt.MemoryRecorder()
    rt.start_run(pause_then_add, (1,), rt.DriveOptions(recorder=rec, bindings=echo_bindings()))
    history = list(rec.facts)
    history[1] = rt.Call("root#1", "t.echo", "t::echo", (99,))
    history.append(rt.Reply("root#2", rt.Ok(41)))
    with pytest.raises(rt.ResumeRefused) as e:
        rt.drive(
            pause_then_add, history, rt.DriveOptions(recorder=rt.MemoryRecorder(), bindings=echo_bindings())
        )
    assert e.value.verdict.fact == 2


def test_checkpoint_every_takes_a_checkpoint_and_resume_starts_from_it():
    rec = rt.MemoryRecorder()
    out = rt.start_run(
        echo_loop, (6, 0), rt.DriveOptions(recorder=rec, bindings=echo_bindings(), checkpoint_every=4)
    )
    assert out == rt.RunCompleted(21)
    cps = [f for f in rec.facts if type(f) is rt.Checkpoint]
    assert [(c.checkpoint, c.function, c.args) for c in cps] == [
        (1, "t::echo_loop", (4, 11)),
        (2, "t::echo_loop", (2, 18)),
        (3, "t::echo_loop", (0, 21)),
    ]
    # ids restart under each checkpoint
    calls = [f.id for f in rec.facts if type(f) is rt.Call]
    assert calls == ["root#1", "root#2", "c1:root#1", "c1:root#2", "c2:root#1", "c2:root#2"]
    # resuming from the latest checkpoint serves the facts after it and needs nothing else
    assert rt.drive(echo_loop, rec.facts, rt.DriveOptions(mode="replay")) == rt.Matched(rec.facts[-1])


def test_parked_task_is_recorded_in_a_checkpoint_and_restored_on_resume():
    rec = rt.MemoryRecorder()
    out = rt.start_run(
        reader, (), rt.DriveOptions(recorder=rec, bindings=echo_bindings(), checkpoint_every=2)
    )
    assert out == rt.RunPaused((rt.OpenCall("root/1#1", "feed.next"),))
    cps = [f for f in rec.facts if type(f) is rt.Checkpoint]
    assert cps and cps[0].args[0] == rt.ParkedTask("root/1", "root/1#1", "main::Msg.Received", ())
    history = deliver(rec, "root/1#1", rt.Ok("hello"))
    out = rt.drive(
        reader, history, rt.DriveOptions(recorder=rec, bindings=echo_bindings(), checkpoint_every=2)
    )
    assert out == rt.RunCompleted(Received(rt.Ok("hello")))
    assert rt.drive(reader, rec.facts, rt.DriveOptions(mode="replay", begin=1)).line() == "Matched"
    assert rt.drive(reader, rec.facts, rt.DriveOptions(mode="replay")).line() == "Matched"


def test_parked_record_constructor_keeps_its_data_and_reply_position():
    rec = rt.MemoryRecorder()
    rt.start_run(indexed, (), rt.DriveOptions(recorder=rec, bindings=echo_bindings(), checkpoint_every=2))
    cp = next(f for f in rec.facts if type(f) is rt.Checkpoint)
    assert cp.args[0][0] == rt.ParkedTask("root/1", "root/1#1", "main::Arrived#1", (3,))
    history = deliver(rec, "root/1#1", rt.Ok("x"))
    out = rt.drive(
        indexed, history, rt.DriveOptions(recorder=rec, bindings=echo_bindings(), checkpoint_every=2)
    )
    assert out == rt.RunCompleted(Arrived(3, rt.Ok("x")))
    assert rt.drive(indexed, rec.facts, rt.DriveOptions(mode="replay", begin=1)).line() == "Matched"


def test_missing_binding_refuses_the_run_before_anything_is_recorded():
    rec = rt.MemoryRecorder()
    b = support_bindings()
    b._impls.pop("web.search")
    with pytest.raises(rt.MissingBindings) as e:
        rt.drive(
            main,
            [rt.Start("p", "std@v1", 1, "main", ("x",))],
            rt.DriveOptions(recorder=rec, bindings=b, reachable=SUPPORT_TOOLS),
        )
    assert e.value.missing == ["web.search"]
    assert rec.facts == []


def one_call(spec, *args):
    @rt.fn("t::one_call", params=())
    def prog():
        return (yield rt.ToolCall(spec, args))

    return prog


def reply_of(impl, spec=ECHO, args=(1,)):
    b = rt.Bindings()
    b.bind(spec.name, impl)
    out = rt.start_run(one_call(spec, *args), (), rt.DriveOptions(recorder=rt.MemoryRecorder(), bindings=b))
    return out.value


def test_malformed_reply_is_err_malformed_with_the_path():
    assert reply_of(lambda x: {"Ok": "three"}) == rt.Err(rt.Malformed('$.Ok: expected Int, got "three"'))
    assert reply_of(lambda: {"Ok": ["a", 3]}, LIST_TOOL, ()) == rt.Err(
        rt.Malformed("$.Ok[1]: expected Text, got 3")
    )


def test_declared_error_is_failed_and_runtime_values_are_admitted():
    assert reply_of(lambda x: {"Err": "nope"}) == rt.Err(rt.Failed("nope"))
    assert reply_of(lambda x: rt.Ok(x + 1)) == rt.Ok(2)


def test_notrun_and_other_exceptions_map_to_tool_problems():
    def not_run(x):
        raise rt.NotRun("service down")

    def broken(x):
        raise ValueError("bad gateway")

    assert reply_of(not_run) == rt.Err(rt.NotRun("service down"))
    assert reply_of(broken) == rt.Err(rt.Unknown("ValueError: bad gateway"))


def test_async_implementations_run_on_the_event_loop():
    async def echo(x):
        await asyncio.sleep(0.001)
        return {"Ok": x * 2}

    assert reply_of(echo, ECHO, (21,)) == rt.Ok(42)


def test_implementations_really_run_concurrently():
    import threading

    barrier = threading.Barrier(2, timeout=5)

    def meet(x):  # each call only returns once the other one is running too
        barrier.wait()
        return {"Ok": x}

    @rt.fn("t::two", params=())
    def two():
        def child(i):
            return lambda: (yield rt.ToolCall(ECHO, (i,)))

        a = yield rt.Spawn(child(1))
        b = yield rt.Spawn(child(2))
        ra = yield rt.Await(a)
        rb = yield rt.Await(b)
        return ra._0 + rb._0

    b = rt.Bindings()
    b.bind("t.echo", meet)
    assert rt.start_run(
        two, (), rt.DriveOptions(recorder=rt.MemoryRecorder(), bindings=b)
    ) == rt.RunCompleted(3)


def test_fault_in_pure_code_ends_the_run_with_the_flow_location():
    src = "def boom(x):\n    y = 1\n    return rt.int_div(x, 0)\n"
    ns = {"rt": rt}
    exec(compile(src, "prog.flow", "exec"), ns)

    @rt.fn("t::faulty", params=())
    def faulty():
        r = yield rt.ToolCall(ECHO, (1,))
        return ns["boom"](r._0)

    rec = rt.MemoryRecorder()
    out = rt.start_run(faulty, (), rt.DriveOptions(recorder=rec, bindings=echo_bindings()))
    assert out == rt.RunFaulted(rt.Faulted("integer division by zero", "prog.flow", 3))
    assert rec.facts[-1] == rt.End(out.fault)
    assert rt.drive(faulty, rec.facts, rt.DriveOptions(mode="replay")).line() == "Matched"


def test_unexpected_python_exception_is_a_fault_naming_its_type():
    @rt.fn("t::bad", params=())
    def bad():
        r = yield rt.ToolCall(ECHO, (1,))
        return r.nothing

    out = rt.start_run(bad, (), rt.DriveOptions(recorder=rt.MemoryRecorder(), bindings=echo_bindings()))
    assert isinstance(out, rt.RunFaulted)
    assert out.fault.message.startswith("AttributeError:")
    assert out.fault.file == __file__


def test_depth_limit_is_the_fault_stack_exhausted():
    def deep(n):
        x = yield deep(n + 1)
        return x

    @rt.fn("t::deep", params=())
    def prog():
        return (yield deep(0))

    out = rt.start_run(prog, (), rt.DriveOptions(recorder=rt.MemoryRecorder(), bindings=echo_bindings()))
    assert isinstance(out, rt.RunFaulted) and out.fault.message == "stack exhausted"
    assert out.fault.file == __file__


def test_python_recursion_in_pure_code_is_stack_exhausted_not_recursion_error():
    def pure(n):
        return 0 if n == 0 else 1 + pure(n - 1)

    @rt.fn("t::rec", params=())
    def prog():
        yield rt.ToolCall(ECHO, (1,))
        return pure(10**6)

    out = rt.start_run(prog, (), rt.DriveOptions(recorder=rt.MemoryRecorder(), bindings=echo_bindings()))
    assert out.fault.message == "stack exhausted"


def test_effectful_tail_loop_runs_in_constant_memory():
    """tracemalloc's peak is the same for 1,000 and 20,000 rounds (tracemalloc makes every
    allocation slow, so 100,000 rounds are checked by counting live objects instead)."""

    def peak(n):
        gc.collect()
        tracemalloc.start()
        out = rt.start_run(
            echo_loop,
            (n, 0),
            rt.DriveOptions(recorder=rt.MemoryRecorder(keep=False), bindings=echo_bindings()),
        )
        _, p = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert out == rt.RunCompleted(n * (n + 1) // 2)
        return p

    small, big = peak(1_000), peak(20_000)
    assert big < small + 64 * 1024, (small, big)


def test_effectful_tail_loop_of_100k_rounds_leaves_no_objects_behind():
    def objects_after(n):
        out = rt.start_run(
            echo_loop,
            (n, 0),
            rt.DriveOptions(recorder=rt.MemoryRecorder(keep=False), bindings=echo_bindings()),
        )
        assert out == rt.RunCompleted(n * (n + 1) // 2)
        gc.collect()
        return len(gc.get_objects())

    objects_after(10)
    base = objects_after(10)
    assert objects_after(100_000) - base < 100
