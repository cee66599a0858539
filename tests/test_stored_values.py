"""A hostile holder of the store: a stored value that does not fit the type the program expects,
or a malformed row, is a corrupt history. Replay and resume refuse it naming the fact (exit 1),
verify reports it broken (exit 6), the other commands refuse it (exit 1); never an internal
error, and nothing is recorded (docs/spec/trace.md "Stored values fit their types", "Exit codes")."""

from __future__ import annotations

import json

import cbor2
import pytest
from click.testing import CliRunner

import flowrt as rt
from flow2py.cli import main as cli_main
from flowrt.history import trace as T
from flowrt.data.facts import Checkpoint, ParkedTask, Reply, Start
from flowrt.history.store import Store
from flowrt.history.stored import CorruptHistory
from tests import stored_helpers as H
from tests.flow_run import flow_program


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return H.Base(tmp_path_factory.mktemp("stored"))


@pytest.fixture
def store(base, tmp_path):
    return base.copy(tmp_path / "runs.db")


def _reply_n(store, run, call):
    for n, kind, data in H.rows(H.db(store), run):
        if kind == T.REPLY and T.parse_fact(data)[1] == call:
            return n
    raise AssertionError(f"no reply to {call}")


def _set_reply(store, run, call, value):
    n = _reply_n(store, run, call)
    H.set_fact(store, run, n, T.encode_fact(Reply(call, value), threshold=1 << 30).data)  # inline
    return n


def _assert_refused(results, names, n, code=1):
    for name in names:
        got, text = results[name]
        assert got == code and f"fact {n} is corrupt" in text, (name, results[name])
        assert "\n" not in text and "internal error" not in text


def _note(base, text, round_):
    cls = base.loaded.classes.lookup(("main::Note", "Note"))
    return cls(text, round_)


@pytest.mark.parametrize(
    "value",
    [
        rt.Ok(rt.HostToken("web::Page", "forged")),
        rt.Ok(5),
        rt.Ok(rt.Some("s1")),
        rt.Err(rt.Failed(5)),
        rt.Err(rt.Malformed(5)),
        rt.Ok(("s", 1)),
        rt.Ok(b"s1"),
        5,
        "Ok",
    ],
    ids=[
        "forged-token",
        "int",
        "option",
        "failed-int",
        "malformed-int",
        "tuple",
        "bytes",
        "bare-int",
        "bare-text",
    ],
)
def test_a_reply_that_does_not_fit_its_tool_is_refused_naming_the_fact_and_nothing_is_recorded(
    store, base, value
):
    n = _set_reply(store, "plain", "root#1", value)
    before = H.fact_count(store, "plain")
    results = H.every_command(store, base.loaded, "plain")
    _assert_refused(results, ("replay", "resume"), n)
    assert "svc.step" in results["replay"][1] and "Result<Text, ToolProblem<Text>>" in results["replay"][1]
    assert results["verify"][0] == 0  # re-chained: the chain is intact, the content is not
    assert H.fact_count(store, "plain") == before


def test_a_record_of_the_wrong_type_in_a_reply_is_refused(store, base):
    n = _set_reply(store, "plain", "root#1", rt.Ok(_note(base, "s1", 1)))
    _assert_refused(H.every_command(store, base.loaded, "plain"), ("replay", "resume"), n)


def test_a_parked_task_in_a_reply_is_refused_by_every_command(store, base):
    n = _reply_n(store, "plain", "root#1")
    data = cbor2.dumps([T.REPLY, "root#1", cbor2.dumps([T.OK, [T.PARKED, "root/1", "root/1#1", None]])])
    H.set_fact(store, "plain", n, data)
    results = H.every_command(store, base.loaded, "plain")
    _assert_refused(results, ("replay", "resume", "history", "history-json"), n)
    assert results["verify"][0] == 0  # the chain covers the value's digest, and holds


def test_a_reply_to_a_parked_call_after_the_checkpoint_is_checked_against_its_tool(store, base):
    # `done`: the parked task's call root/1#1 was made before the checkpoints, its reply after them
    n = _set_reply(store, "done", "root/1#1", rt.Ok(5))
    results = H.every_command(store, base.loaded, "done")
    _assert_refused(results, ("replay",), n)
    assert "root/1#1 (svc.ask)" in results["replay"][1]


def test_a_reply_carried_across_checkpoints_that_does_not_fit_is_refused(store, base):
    # `carried`: the parked task's reply is recorded before the checkpoints and carried by them
    _set_reply(store, "carried", "root/1#1", rt.Ok(rt.HostToken("web::Page", "forged")))
    code, text = H.every_command(store, base.loaded, "carried")["replay"]
    assert code == 1 and "is corrupt" in text and "before checkpoint" in text and "root/1#1" in text


def _rewrite_checkpoint(store, base, run, change):
    n = H.db(store).execute("SELECT latest_checkpoint FROM runs WHERE id=?", (run,)).fetchone()[0]
    with Store(store) as st:
        cp = st.history.records(run, n, classes=base.loaded.classes)[0].fact
    H.set_fact(
        store,
        run,
        n,
        T.encode_fact(Checkpoint(cp.checkpoint, cp.function, cp.type_args, change(cp.args))).data,
    )
    return n


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda a: ("t", a[1], "three", a[3]), "$.round: expected Int"),
        (lambda a: ("t", rt.list_of([1, 2]), a[2], a[3]), "$.notes[0]: expected Note"),
        (lambda a: ("t", a[1], a[2], "a task"), "$.t: expected a task"),
        (lambda a: (ParkedTask("root/1", "root/1#1", None, ()), a[1], a[2], a[3]), "$.ticket: expected Text"),
        (lambda a: a[:3], "3 argument(s) for 4 parameter(s)"),
    ],
)
def test_checkpoint_arguments_that_do_not_fit_the_function_are_refused(store, base, change, why):
    n = _rewrite_checkpoint(store, base, "parked", change)
    results = H.every_command(store, base.loaded, "parked")
    _assert_refused(results, ("replay", "resume"), n)
    assert why in results["replay"][1], results["replay"]


def test_a_checkpoint_naming_a_function_the_program_lacks_is_refused(store, base):
    n = H.db(store).execute("SELECT latest_checkpoint FROM runs WHERE id='solo'").fetchone()[0]
    with Store(store) as st:
        cp = st.history.records("solo", n, classes=base.loaded.classes)[0].fact
    H.set_fact(
        store, "solo", n, T.encode_fact(Checkpoint(cp.checkpoint, "main::nope", cp.type_args, cp.args)).data
    )
    results = H.every_command(store, base.loaded, "solo")
    _assert_refused(results, ("replay",), n)
    assert "names function 'main::nope', which the program does not have" in results["replay"][1]


@pytest.mark.parametrize(
    "parked, why",
    [
        (ParkedTask("root/1", "root/1#1", "main::Nope", ()), "constructor 'main::Nope'"),
        (ParkedTask("root/1", "root/1#1", None, ("extra",)), "data but no constructor"),
        (ParkedTask("root/1", "root/1#1", "main::Note", ()), "takes 2 value(s), not 1"),
        (ParkedTask("root/1", "root/1#1", "main::Note#1", (5,)), "$.root/1[0]: expected Text, got 5"),
    ],
)
def test_a_parked_task_its_program_cannot_rebuild_is_refused(store, base, parked, why):
    n = _rewrite_checkpoint(store, base, "parked", lambda a: a[:3] + (parked,))
    results = H.every_command(store, base.loaded, "parked")
    _assert_refused(results, ("replay", "resume"), n)
    assert why in results["replay"][1], results["replay"]


TWO = """\
use "std@v1/task"
use "./svc"

pub flow main(q: Text) -> Text !tool = {
    let a = task.spawn(flow() = svc.ask(q))
    let b = task.spawn(flow() = svc.ask(q))
    match svc.step(1) {
        Ok(_) => both(a, b),
        Err(_) => "no",
    }
}

flow both(a: task.Task<Result<Text, ToolProblem<Text>>>, b: task.Task<Result<Text, ToolProblem<Text>>>) -> Text !tool =
    match (task.await(a), task.await(b)) {
        (Ok(x), Ok(y)) => x ++ y,
        _ => "no",
    }
"""


def test_two_tasks_parked_on_one_call_are_refused(tmp_path):
    prog = flow_program(tmp_path, {"main.flow": TWO, "svc.flow": H.SVC})
    out, rec = prog.run(
        "main", ("q",), tools={"svc.ask": lambda q: rt.pending, "svc.step": H.step}, checkpoint_every=1
    )
    cp = next(f for f in rec.facts if type(f) is Checkpoint)
    a, b = cp.args
    assert a.call != b.call
    forged = Checkpoint(cp.checkpoint, cp.function, cp.type_args, (a, ParkedTask(b.task, a.call, None, ())))
    history = [forged if f is cp else f for f in rec.facts]
    n = history.index(forged) + 1
    with pytest.raises(
        CorruptHistory, match=f"fact {n} is corrupt: checkpoint 1 parks two tasks on call {a.call}"
    ):
        prog.replay(history, begin=n)


def test_a_start_input_that_does_not_fit_the_entry_is_refused(store, base):
    data = dict((r[0], r[2]) for r in H.rows(H.db(store), "plain"))[1]
    start = T.decode_fact(data)
    H.set_fact(
        store,
        "plain",
        1,
        T.encode_fact(
            Start(start.program, start.std, start.data_version, start.entry, (5,), start.param_names)
        ).data,
    )
    results = H.every_command(store, base.loaded, "plain")
    _assert_refused(results, ("replay", "resume"), 1)
    assert "$.ticket: expected Text, got 5" in results["replay"][1]


# ---- malformed rows --------------------------------------------------------------------------------


def _kind_99(con):
    con.execute("UPDATE facts SET kind=99 WHERE run='plain' AND n=2")


def _body_of_one(con):
    con.execute("UPDATE facts SET data=? WHERE run='plain' AND n=2", (cbor2.dumps([3]),))
    H.rechain(con, "plain")


def _text_body(con):
    con.execute("UPDATE facts SET data='not bytes' WHERE run='plain' AND n=2")


def _reply_value(item):
    def mutate(con):
        value = cbor2.dumps([T.OK, item])
        con.execute(
            "UPDATE facts SET data=? WHERE run='plain' AND n=4", (cbor2.dumps([T.REPLY, "root#1", value]),)
        )
        H.rechain(con, "plain")

    return mutate


@pytest.mark.parametrize(
    "mutate, n, verify",
    [
        (_kind_99, 2, 6),
        (_body_of_one, 2, 6),
        (_text_body, 2, 6),
        (_reply_value([T.DECIMAL, 10**30, 1]), 4, 0),
        (_reply_value(cbor2.CBORTag(2, b"\xff" * 200_000)), 4, 0),
        (_reply_value(cbor2.CBORTag(35, "a+")), 4, 0),
        (_reply_value([T.DURATION, 1.5]), 4, 0),
    ],
    ids=["kind-99", "body-[3]", "text-body", "decimal-exponent", "huge-bignum", "regex-tag", "float"],
)
def test_a_malformed_fact_row_is_refused_by_every_command_naming_the_fact(store, base, mutate, n, verify):
    con = H.db(store)
    mutate(con)
    con.close()
    results = H.every_command(store, base.loaded, "plain")
    _assert_refused(results, ("replay", "resume"), n)
    for name in ("history", "history-json"):
        assert results[name][0] == 1 and f"fact {n}" in results[name][1], results[name]
    # verify checks the chain over each fact's stored form, whose values it does not decode: a
    # malformed fact is broken (6); a well-chained fact holding a value no reader takes is intact
    # there, and refused by every command that reads the value
    assert results["verify"][0] == verify, results["verify"]
    if verify:
        assert f"fact {n}" in results["verify"][1], results["verify"]


def test_a_latest_checkpoint_record_pointing_at_a_call_is_refused(store, base):
    con = H.db(store)
    con.execute("UPDATE runs SET latest_checkpoint=2 WHERE id='parked'")
    con.close()
    results = H.every_command(store, base.loaded, "parked")
    for name in ("replay", "resume"):
        code, text = results[name]
        assert code == 1 and "latest checkpoint (fact 2) is corrupt: fact 2 is a Call" in text, results[name]


@pytest.mark.parametrize(
    "column, value",
    [
        ("head", "not a hash"),
        ("head", b"\x00" * 5),
        ("meta", "{"),
        ("meta", "[1]"),
        ("n", "many"),
        ("latest_checkpoint", 999),
        ("state", "sleeping"),
        ("meta", json.dumps({"entry_decl": 5})),
    ],
)
def test_a_corrupt_run_record_is_refused_and_verify_reports_it_broken(store, base, column, value):
    con = H.db(store)
    con.execute(f"UPDATE runs SET {column}=? WHERE id='plain'", (value,))
    con.close()
    results = H.every_command(store, base.loaded, "plain")
    for name in ("history", "replay", "resume", "fork"):
        code, text = results[name]
        assert code == 1 and "run record is corrupt" in text, (name, results[name])
    assert results["verify"][0] == 6 and "run record is corrupt" in results["verify"][1]
    assert results["runs"][0] == 0 and "plain  corrupt (its run record)" in results["runs"][1]


def test_a_corrupt_open_call_record_is_refused(store, base):
    con = H.db(store)
    con.execute("UPDATE open_calls SET call=X'07' WHERE run='plain'")  # a blob: no text affinity
    con.close()
    results = H.every_command(store, base.loaded, "plain")
    for name in ("history", "replay", "resume"):
        code, text = results[name]
        assert code == 1 and "record of open calls is corrupt" in text, (name, results[name])


def test_a_5000_digit_int_is_shown_by_history_and_replay_diverges_as_usual(store, base):
    big = 10**5000
    n = _set_reply(store, "done", "c3:root#1", rt.Ok(big))
    results = H.every_command(store, base.loaded, "done")
    assert results["history"][0] == 0 and f"Reply       Ok({rt.show(big)})" in results["history"][1]
    code, text = results["replay"]
    assert code == 5 and text.startswith("Diverged at fact"), results["replay"]
    assert n < int(text.split()[3].rstrip(":"))


def test_the_cli_refuses_every_malformed_row_in_one_line_with_its_exit_code(store, base):
    con = H.db(store)
    _kind_99(con)
    con.close()
    runner = CliRunner()
    expect = {"history": 1, "replay": 1, "verify": 6, "resume": 1}
    for cmd, code in expect.items():
        r = runner.invoke(cli_main, [cmd, "plain", "--store", str(store)], catch_exceptions=False)
        out = (r.stdout + r.stderr).strip()
        assert r.exit_code == code, (cmd, out)
        assert "internal error" not in out and "Traceback" not in out and "fact 2" in out, (cmd, out)
