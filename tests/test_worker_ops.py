"""The worker's operations that need no worker running (flowrt.host.worker: submit, deliver,
cancel, status, runs): what each records, and each refusal with its one line."""

from __future__ import annotations

import pytest

import flowrt as rt
from flowrt.host import operations as rh
from flowrt.host.worker import (
    Conflict,
    DoesNotFit,
    NoSuchRun,
    Refused,
    cancel,
    deliver,
    runs,
    status,
    submit,
)

from tests.worker_helpers import ASK, program, support, support_bindings


@pytest.fixture
def store(store_url):
    """A store on each backend (tests/pg_helpers.py): the worker's records on SQLite and PostgreSQL."""
    with rt.Store(store_url) as s:
        yield s


def _paused_support(store, run_id="s1"):
    """A support run started in-process, paused on c1:root#2 human.ask."""
    rep = rh.start(
        store,
        support(),
        input={"ticket": "Login fails on Safari"},
        bindings=support_bindings(),
        run_id=run_id,
        checkpoint_every=5,
    )
    assert rep.exit_code == 3, rep.text
    return run_id


def test_submit_records_the_start_and_the_run_shows_submitted(store):
    run_id = submit(store, support(), program="support", input={"ticket": "t"}, run_id="r1")
    assert run_id == "r1"
    s = status(store, "r1")
    assert (s.state, s.program, s.entry, s.facts, s.open_calls) == ("submitted", "support", "main", 1, ())
    assert s.started is not None and s.result is None and s.fault is None


def test_submit_without_a_run_id_makes_one(store):
    a = submit(store, support(), program="support", input={"ticket": "t"})
    b = submit(store, support(), program="support", input={"ticket": "t"})
    assert a != b and a.startswith("run-")


def test_submit_refuses_a_duplicate_run_id(store):
    submit(store, support(), program="support", input={"ticket": "t"}, run_id="r1")
    with pytest.raises(Conflict, match="run 'r1' already exists"):
        submit(store, support(), program="support", input={"ticket": "t"}, run_id="r1")


def test_submit_refuses_input_that_does_not_fit_with_the_admission_message(store):
    with pytest.raises(DoesNotFit) as e:
        submit(store, support(), program="support", input={"ticket": 5})
    assert "$.ticket: expected Text, got 5" in str(e.value)
    assert isinstance(e.value, Refused) and "\n" not in str(e.value)
    assert runs(store) == []


def test_submit_refuses_an_unknown_entry(store):
    with pytest.raises(Refused, match="no entry function `nope`"):
        submit(store, support(), program="support", entry="nope", input={"ticket": "t"})


def test_status_of_a_paused_run_names_its_open_call_with_arguments_and_reply_type(store):
    _paused_support(store)
    s = status(store, "s1", support())
    assert s.state == "paused"
    (c,) = s.open_calls
    assert (c.id, c.tool, c.args, c.args_text) == ("c1:root#2", "human.ask", (ASK,), (f'"{ASK}"',))
    assert c.reply_type == "Result<Text, Text>" and c.since is not None
    assert s.paused_since == c.since


def test_deliver_keeps_an_admitted_reply_for_a_worker(store):
    _paused_support(store)
    deliver(store, "s1", "c1:root#2", {"Ok": "Safari 17.4"}, support())
    assert store.worker_records.replies("s1") == {"c1:root#2": b'{"Ok": "Safari 17.4"}'}


def test_deliver_refuses_a_reply_that_does_not_fit_the_tool(store):
    _paused_support(store)
    with pytest.raises(DoesNotFit) as e:
        deliver(store, "s1", "c1:root#2", {"Ok": 5}, support())
    assert e.value.message == "$.Ok: expected Text, got 5"
    assert store.worker_records.replies("s1") == {}


def test_deliver_refuses_an_unknown_run_and_a_call_that_is_not_open(store):
    _paused_support(store)
    with pytest.raises(NoSuchRun, match="unknown run 'nope'"):
        deliver(store, "nope", "c1:root#2", {"Ok": "x"})
    with pytest.raises(Conflict, match=r"call c1:root#3 is not open in run s1 \(open calls: c1:root#2\)"):
        deliver(store, "s1", "c1:root#3", {"Ok": "x"})


def test_a_second_reply_for_one_call_is_refused(store):
    _paused_support(store)
    deliver(store, "s1", "c1:root#2", {"Ok": "a"}, support())
    with pytest.raises(Conflict, match="already has a reply waiting"):
        deliver(store, "s1", "c1:root#2", {"Ok": "b"}, support())


def test_cancel_of_a_paused_run_halts_it_at_once_and_refuses_what_comes_after(store):
    _paused_support(store)
    n = store.host_records.load_run("s1").facts
    cancel(store, "s1")
    s = status(store, "s1")
    assert s.state == "halted" and s.facts == n  # no End, nothing recorded
    with pytest.raises(Conflict, match="has already ended"):
        cancel(store, "s1")
    with pytest.raises(Conflict, match="is not open"):
        deliver(store, "s1", "c1:root#2", {"Ok": "x"}, support())
    with pytest.raises(Refused, match="cancelled"):
        rh.resume(store, support(), "s1", replies={"c1:root#2": {"Ok": "x"}}, bindings=support_bindings())


def test_cancel_of_a_submitted_run_means_it_never_starts(store):
    submit(store, support(), program="support", input={"ticket": "t"}, run_id="r1")
    cancel(store, "r1")
    assert status(store, "r1").state == "halted"
    assert store.worker_records.runs_to_continue() == []


def test_cancel_refuses_an_unknown_run_and_an_ended_run(store):
    with pytest.raises(NoSuchRun):
        cancel(store, "nope")
    _paused_support(store)
    rh.resume(
        store, support(), "s1", replies={"c1:root#2": {"Ok": "Safari 17.4"}}, bindings=support_bindings()
    )
    assert status(store, "s1").state == "completed"
    with pytest.raises(Conflict, match=r"run s1 has already ended \(completed\)"):
        cancel(store, "s1")


def test_status_of_a_completed_run_gives_its_result_as_flow_text(store):
    _paused_support(store)
    rh.resume(
        store, support(), "s1", replies={"c1:root#2": {"Ok": "Safari 17.4"}}, bindings=support_bindings()
    )
    s = status(store, "s1", support())
    assert s.result == 'Resolved("Enable Secure on the session cookie; ...")' and s.fault is None
    assert s.facts == 16 and s.open_calls == ()


def test_runs_lists_newest_first_and_filters_by_state_and_program(store):
    submit(store, support(), program="support", input={"ticket": "t"}, run_id="r1")
    submit(store, program("asks"), program="asks", input={"q": "?"}, run_id="r2")
    _paused_support(store, "r3")
    assert [s.run_id for s in runs(store)] == ["r3", "r2", "r1"]
    assert [s.run_id for s in runs(store, state="submitted")] == ["r2", "r1"]
    assert [s.run_id for s in runs(store, program="asks")] == ["r2"]
    assert [s.run_id for s in runs(store, limit=1, offset=1)] == ["r2"]
    with pytest.raises(Refused, match="state 'nope'"):
        runs(store, state="nope")
