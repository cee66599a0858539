"""Classes belong to a program: two programs sharing a declaration id with different shapes live
side by side in one process (a run and its fork on a newer version, a host embedding several
programs, this test suite). Each program's history decodes, resumes and replays with its own
classes (`Program.classes`); nothing is looked up in a process-wide table."""

from __future__ import annotations

import flowrt as rt
from flow2py import host
from flowrt.engine import drive as drv
from flowrt.data.facts import Checkpoint, ParkedTask, Start
from flowrt.history.store import SqliteRecorder, Store

from flow_run import flow_program

FEED = "@tool pub flow next() -> Result<Text, Text>\n"
WORK = "@tool pub flow step(round: Int) -> Result<Int, Text>\n"

# Version 1: `main::Msg.Received` takes the reply alone; `main::State` is { label, round }.
V1 = """\
use "std@v1/task"
use "./feed"
use "./work"

pub type Msg { Received(Result<Text, ToolProblem<Text>>) }
pub type State { label: Text, round: Int }

pub flow main(limit: Int) -> Text !tool = {
    let read = task.spawn(flow() = Received(feed.next()))
    pump(read, State { label: "v1", round: 1 }, limit)
}

flow pump(pending: task.Task<Msg>, st: State, limit: Int) -> Text !tool = {
    match work.step(st.round) {
        Ok(n) => if n >= limit {
            match task.await(pending) {
                Received(Ok(m)) => st.label ++ ":" ++ m,
                Received(Err(_)) => "no message",
            }
        } else {
            pump(pending, State { label: st.label ++ "+", round: st.round + 1 }, limit)
        },
        Err(_) => "step failed",
    }
}
"""

# Version 2: the same declaration ids, other shapes: `Received` carries data before the reply,
# `State` has other fields in another order.
V2 = """\
use "std@v1/task"
use "./feed"
use "./work"

pub type Msg { Received(Int, Result<Text, ToolProblem<Text>>) }
pub type State { round: Int, seen: List<Int>, tag: Text }

pub flow main(limit: Int) -> Text !tool = {
    let read = task.spawn(flow() = Received(7, feed.next()))
    pump(read, State { round: 1, seen: [], tag: "v2" }, limit)
}

flow pump(pending: task.Task<Msg>, st: State, limit: Int) -> Text !tool = {
    match work.step(st.round) {
        Ok(n) => if n >= limit {
            match task.await(pending) {
                Received(k, Ok(m)) => if k == 7 { st.tag ++ ":" ++ m } else { "wrong data" },
                Received(_, Err(_)) => "no message",
            }
        } else {
            pump(pending, State { round: st.round + 1, seen: [n], tag: st.tag }, limit)
        },
        Err(_) => "step failed",
    }
}
"""


def _program(tmp_path, name: str, main: str):
    d = tmp_path / name
    d.mkdir()
    return flow_program(d, {"main.flow": main, "feed.flow": FEED, "work.flow": WORK})


def _bindings(feed, step) -> rt.Bindings:
    b = rt.Bindings()
    b.bind("feed.next", feed)
    b.bind("work.step", step)
    return b


def _never(*a):
    raise AssertionError("a recorded call was sent again")


def _record_paused_run(store: Store, run_id: str, p) -> None:
    """A run of `p` paused with its read parked in every checkpoint, then the read's reply."""
    start = p.start("main", (3,))
    store.history.create_run(run_id, start, p.program.sources, p.loaded.meta())
    with SqliteRecorder(store, run_id) as rec:
        opts = drv.DriveOptions(
            recorder=rec,
            checkpoint_every=1,
            bindings=_bindings(lambda: rt.pending, lambda r: {"Ok": r}),
            resolve=p.loaded.resolve,
            classes=p.loaded.classes,
        )
        out = drv.drive(p.fn("main"), [start], opts)
    assert out == drv.RunPaused((drv.OpenCall("root/1#1", "feed.next"),))
    store.history.record_reply(run_id, "root/1#1", rt.Ok("hello"))


def _resume(store: Store, run_id: str, p):
    info = store.host_records.load_run(run_id)
    history = store.history.facts(
        run_id, info.latest_checkpoint, verify=True, whole=True, classes=p.loaded.classes
    )
    with SqliteRecorder(store, run_id) as rec:
        return drv.drive(
            p.fn("main"),
            history,
            drv.DriveOptions(
                first=info.latest_checkpoint,
                recorder=rec,
                bindings=_bindings(_never, _never),
                resolve=p.loaded.resolve,
                classes=p.loaded.classes,
            ),
        )


def test_two_programs_sharing_declaration_ids_live_side_by_side_in_one_process(tmp_path):
    v1 = _program(tmp_path, "v1", V1)
    v2 = _program(tmp_path, "v2", V2)
    assert v1.program.identity != v2.program.identity
    for key in (("main::Msg", "Received"), ("main::State", "State")):
        assert v1.program.classes[key] is not v2.program.classes[key]
        assert v1.program.classes[key].__module__.startswith(v1.program.package)
        assert v2.program.classes[key].__module__.startswith(v2.program.package)

    with Store(tmp_path / "runs.db") as store:
        _record_paused_run(store, "r1", v1)
        _record_paused_run(store, "r2", v2)
        # each resumes from its latest checkpoint: the parked read is rebuilt with its own
        # program's `Received`, the State argument decoded with its own `State`
        assert _resume(store, "r1", v1) == drv.RunCompleted("v1++:hello")
        assert _resume(store, "r2", v2) == drv.RunCompleted("v2:hello")

        cp1 = store.history.checkpoint("r1", 2, classes=v1.program.classes).fact
        cp2 = store.history.checkpoint("r2", 2, classes=v2.program.classes).fact
        assert cp1.args[0] == ParkedTask("root/1", "root/1#1", "main::Msg.Received", ())
        assert cp2.args[0] == ParkedTask("root/1", "root/1#1", "main::Msg.Received#1", (7,))
        assert type(cp1.args[1]) is v1.program.classes[("main::State", "State")]
        assert type(cp2.args[1]) is v2.program.classes[("main::State", "State")]

        # both histories read, render and replay (from Start and from the latest checkpoint)
        for run_id, p, state in (
            ("r1", v1, 'State { label: "v1+", round: 2 }'),
            ("r2", v2, 'State { round: 2, seen: [1], tag: "v2" }'),
        ):
            facts = store.history.facts(run_id, verify=True, whole=True, classes=p.loaded.classes)
            assert type(facts[0]) is Start and facts[0].program == p.program.identity
            assert state in rt.to_text(store.history.records(run_id, classes=p.loaded.classes))
            assert isinstance(p.replay(facts, begin=1), drv.Matched)
            assert isinstance(p.replay(facts, begin="latest"), drv.Matched)

    # the host compiles each run's stored program and reads it with that program's classes
    where = str(tmp_path / "runs.db")
    for run_id, state in (
        ("r1", 'State { label: "v1+", round: 2 }'),
        ("r2", 'State { round: 2, seen: [1], tag: "v2" }'),
    ):
        assert host.replay(run_id, store_path=where).text == "Matched"
        assert state in host.history(run_id, store_path=where)


def test_reading_a_history_with_another_programs_classes_never_borrows_a_class(tmp_path):
    v1 = _program(tmp_path, "v1", V1)
    with Store(tmp_path / "runs.db") as store:
        _record_paused_run(store, "r1", v1)
        try:
            store.history.facts("r1")  # no table: std's classes only
        except rt.MissingClass as e:
            assert e.decl in ("main::State", "main::Msg")
        else:
            raise AssertionError("a program's value decoded without its program's classes")


def test_a_hand_written_program_restores_its_own_parked_constructor_after_a_generated_one_is_loaded(tmp_path):
    # the order bug: a generated `main::Msg.Received` of another shape loaded first must not
    # replace the hand-written program's class (tests/_driver_progs.py, its own module's table)
    generated = _program(tmp_path, "v2", V2)
    assert generated.program.classes[("main::Msg", "Received")].__flow_fields__ == ("_0", "_1")
    from _driver_progs import Received, echo_bindings, reader

    rec = rt.MemoryRecorder()
    out = rt.start_run(
        reader, (), rt.DriveOptions(recorder=rec, bindings=echo_bindings(), checkpoint_every=2)
    )
    assert isinstance(out, rt.RunPaused)
    assert any(type(f) is Checkpoint for f in rec.facts)
    rec.record(rt.Reply("root/1#1", rt.Ok("hello")))
    history = list(rec.facts)
    out = rt.drive(
        reader, history, rt.DriveOptions(recorder=rec, bindings=echo_bindings(), checkpoint_every=2)
    )
    assert out == rt.RunCompleted(Received(rt.Ok("hello")))
    assert type(out.value) is Received
    assert rt.drive(reader, rec.facts, rt.DriveOptions(mode="replay")).line() == "Matched"
