"""Replay verdicts (seed 000, "Replay"): Matched, Incomplete, Diverged at fact N."""

import flowrt as rt
from _driver_progs import echo_bindings, main, pause_then_add, support_bindings


def recorded_support():
    rec = rt.MemoryRecorder()
    rt.start_run(
        main,
        ("Login fails on Safari",),
        rt.DriveOptions(recorder=rec, bindings=support_bindings(), checkpoint_every=5),
    )
    rec.record(rt.Reply("c1:root#2", rt.Ok("Safari 17.4")))
    rt.drive(main, rec.facts, rt.DriveOptions(recorder=rec, bindings=support_bindings(), checkpoint_every=5))
    return list(rec.facts)


def replay(facts, begin=1):
    return rt.drive(main, facts, rt.DriveOptions(mode="replay", begin=begin))


def test_replay_of_a_recorded_run_matches_from_start_and_from_the_checkpoint():
    facts = recorded_support()
    assert len(facts) == 16
    assert replay(facts).line() == "Matched"
    assert replay(facts, begin="latest").line() == "Matched"


def test_replay_binds_nothing_and_dispatches_nothing(monkeypatch):
    facts = recorded_support()

    def refuse(*a, **k):
        raise AssertionError("replay dispatched a call")

    monkeypatch.setattr(rt.Dispatcher, "submit", refuse)
    monkeypatch.setattr(rt.Dispatcher, "run_inline", refuse)
    monkeypatch.setattr(rt.Bindings, "lookup", refuse)
    assert replay(facts) == rt.Matched(facts[-1])


def test_truncated_history_is_incomplete():
    facts = recorded_support()
    assert replay(facts[:12]) == rt.Incomplete(
        "needs the reply to c1:root#2 (human.ask), which is not recorded"
    )
    assert replay(facts[:13]).line().startswith("Incomplete: history ends before the program does")
    assert replay(facts[:15]) == rt.Incomplete(
        'history ends before the program does (it completes with Resolved("Enable Secure on the '
        'session cookie; ..."))'
    )


def test_tampered_call_argument_diverges_at_that_fact():
    facts = recorded_support()
    call = facts[4]
    facts[4] = rt.Call(call.id, call.tool, call.tool_id, ("safari cookies",))
    v = replay(facts)
    assert v.fact == 5
    assert v.line() == (
        'Diverged at fact 5: the program calls docs.search("safari login cookie") as '
        'root/2#1, but the history records Call root/2#1 docs.search("safari cookies")'
    )


def test_tampered_reply_diverges_where_the_program_then_differs():
    facts = recorded_support()
    facts[2] = rt.Reply("root#1", rt.Ok(__import__("_driver_progs").Done("x")))
    v = replay(facts)
    assert isinstance(v, rt.Diverged) and v.fact == 4


def test_an_extra_unused_fact_diverges():
    facts = recorded_support() + [rt.Reply("c1:root#9", rt.Ok("late"))]
    v = replay(facts)
    assert v.fact == 17 and "left unused" in v.reason


def test_a_tampered_checkpoint_diverges():
    facts = recorded_support()
    cp = facts[8]
    facts[8] = rt.Checkpoint(1, cp.function, (), (cp.args[0], cp.args[1], 3))
    v = replay(facts)
    assert v.fact == 9


def test_a_hole_in_a_needed_reply_is_incomplete():
    facts = recorded_support()
    facts[10] = rt.Reply("c1:root#1", rt.Hole("ab12"))
    assert replay(facts) == rt.Incomplete("needs the reply to c1:root#1 (planner.next), which is a hole")


def test_a_hole_in_a_recorded_argument_still_matches():
    facts = recorded_support()
    c = facts[1]
    facts[1] = rt.Call(c.id, c.tool, c.tool_id, (rt.Hole("ab12"), c.args[1]))
    assert replay(facts).line() == "Matched"


def test_replay_of_a_paused_run_is_incomplete():
    rec = rt.MemoryRecorder()
    rt.start_run(pause_then_add, (1,), rt.DriveOptions(recorder=rec, bindings=echo_bindings()))
    v = rt.drive(pause_then_add, rec.facts, rt.DriveOptions(mode="replay"))
    assert v == rt.Incomplete("needs the reply to root#2 (t.slow), which is not recorded")
    assert v.exit_code == 3
