"""The Python client of a worker and its run handles (flowrt.Client, flowrt.host.client): start,
status, open calls, reply, result (a value, or an exception on fault, halt and timeout), cancel,
history, their async twins, listing runs, and the same handles on the in-process Host."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

import flowrt
import flowrt as rt
from flowrt.data.values import show
from flowrt.host import Host, Refused
from flowrt.host.client import RunFaultedError, RunHaltedError, RunHandle
from http_helpers import ASK, DONE, FAULT, SUPPORT_MAIN, compiled, running_worker, support, support_bindings

TICKET = {"ticket": "Login fails on Safari"}


def _fault_program():
    return compiled(str(FAULT))


def _bindings() -> rt.Bindings:
    b = support_bindings()
    b.bind("calc.divisor", lambda n: {"Ok": 0})
    return b


@pytest.fixture()
def worker(tmp_path):
    programs = {"support": support(), "fault": _fault_program()}
    with running_worker(tmp_path / "runs.db", programs, _bindings(), checkpoint_every=5) as w:
        yield w


@pytest.fixture()
def client(worker):
    return flowrt.Client(worker, programs={"support": support(), "fault": _fault_program()})


def _paused(run: RunHandle, timeout: float = 10.0):
    import time

    deadline = time.monotonic() + timeout
    while (st := run.status()).state != "paused":
        assert time.monotonic() < deadline, f"run {run.run_id} did not pause: {st.state}"
        run._owner._wait(run.run_id, st.facts, 0.5)
    return st


def test_flowrt_exports_the_client_without_import_flowrt_loading_the_host():
    assert flowrt.Client is flowrt.host.client.Client and "Client" in flowrt.__all__
    code = "import sys, flowrt; assert 'flowrt.host' not in sys.modules, sorted(sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_handle_sees_the_pause_replies_and_gets_the_result_as_a_value(client):
    run = client.start("support", input=TICKET, run_id="s1")
    assert run.run_id == "s1" and isinstance(run, RunHandle)
    st = _paused(run)
    assert st.program == "support" and st.entry == "main" and st.facts == 12
    (call,) = run.open_calls()
    assert (call.id, call.tool, call.args, call.args_text) == (
        "c1:root#2",
        "human.ask",
        (ASK,),
        (f'"{ASK}"',),
    )
    assert isinstance(call.since, float)
    run.reply("c1:root#2", {"Ok": "Safari 17.4"})
    value = run.result(timeout=10)
    assert show(value) == f'Resolved("{DONE}")'
    facts = run.history()
    assert len(facts) == 16 and facts[0]["kind"] == "Start" and facts[-1]["kind"] == "End"
    assert "Completed(Resolved(" in run.history("text")


def test_result_raises_with_the_faults_location_when_the_run_faults(client):
    run = client.start("fault", input={"n": 7})
    with pytest.raises(RunFaultedError) as e:
        run.result(timeout=10)
    assert "main.flow:5" in e.value.fault and "integer division by zero" in str(e.value)


def test_result_raises_when_the_run_is_halted_and_on_timeout(client):
    run = client.start("support", input=TICKET)
    _paused(run)
    with pytest.raises(TimeoutError):
        run.result(timeout=0.05)
    run.cancel()
    with pytest.raises(RunHaltedError):
        run.result(timeout=10)
    assert run.status().state == "halted"


def test_a_reply_that_does_not_fit_or_to_a_call_not_open_is_refused(client):
    from flowrt.host.worker import Conflict, DoesNotFit

    run = client.start("support", input=TICKET)
    _paused(run)
    with pytest.raises(DoesNotFit) as e:
        run.reply("c1:root#2", {"Ok": 5})
    assert str(e.value) == "$.Ok: expected Text, got 5"
    with pytest.raises(Conflict):
        run.reply("c1:root#7", {"Ok": "x"})


def test_input_that_does_not_fit_is_refused_before_anything_is_recorded(client):
    with pytest.raises(Refused) as e:
        client.start("support", input={"ticket": 5})
    assert "$.ticket: expected Text, got 5" in str(e.value)
    assert client.runs() == []


def test_the_async_twins_do_what_the_sync_methods_do(client):
    async def scenario():
        run = client.start("support", input=TICKET, run_id="a1")
        while (await run.status_async()).state != "paused":
            await asyncio.to_thread(run._owner._wait, "a1", (await run.status_async()).facts, 0.5)
        (call,) = await run.open_calls_async()
        await run.reply_async(call.id, {"Ok": "Safari 17.4"})
        value = await run.result_async(timeout=10)
        facts = await run.history_async()
        other = client.start("support", input=TICKET, run_id="a2")
        _paused(other)
        await other.cancel_async()
        with pytest.raises(RunHaltedError):
            await other.result_async(timeout=10)
        return value, facts

    value, facts = asyncio.run(scenario())
    assert show(value) == f'Resolved("{DONE}")' and len(facts) == 16


def test_runs_are_listed_as_status_objects_filtered_by_state_and_program(client):
    a = client.start("support", input=TICKET, run_id="l1")
    client.start("fault", input={"n": 7}, run_id="l2")
    _paused(a)
    with pytest.raises(RunFaultedError):
        client.handle("l2").result(timeout=10)
    every = client.runs()
    assert [r.run_id for r in every] == ["l2", "l1"]  # newest first
    assert [r.run_id for r in client.runs(state="paused")] == ["l1"]
    assert [r.run_id for r in client.runs(program="fault")] == ["l2"]
    assert every[0].state == "faulted" and "main.flow:5" in every[0].fault
    assert every[1].state == "paused" and every[1].open_calls[0].id == "c1:root#2"


def test_a_client_over_the_store_compiles_a_path_and_a_worker_serving_the_store_runs_it(worker):
    client = flowrt.Client(worker.store)  # the store, not the worker: nothing wakes it directly
    run = client.start(f"support={SUPPORT_MAIN}", input=TICKET)
    assert run.status().program == "support"
    _paused(run, timeout=20)
    run.reply("c1:root#2", {"Ok": "Safari 17.4"})
    assert show(run.result(timeout=20)) == f'Resolved("{DONE}")'
    # a client that knows no program reads the run with the program compiled from its stored sources
    other = flowrt.Client(worker.store).handle(run.run_id)
    assert [f["kind"] for f in other.history()][-1] == "End"
    assert show(other.result(timeout=0)) == f'Resolved("{DONE}")'


def test_an_unknown_program_name_or_path_is_refused(client):
    with pytest.raises(Refused) as e:
        client.start("nosuch", input=TICKET)
    assert "nosuch" in str(e.value)
    with pytest.raises(Refused):
        client.handle("no-such-run")


def test_the_in_process_host_has_the_same_handles(tmp_path):
    host = Host(str(tmp_path / "runs.db"), bindings=support_bindings())
    run = host.submit(support(), input=TICKET, run_id="h1", checkpoint_every=5)
    assert run.status().state == "paused"  # driven here until it paused
    assert [c.id for c in run.open_calls()] == ["c1:root#2"]
    run.reply("c1:root#2", {"Ok": "Safari 17.4"})  # continued here, to its end
    assert show(run.result(timeout=0)) == f'Resolved("{DONE}")'
    assert [f["kind"] for f in host.handle("h1").history()][-1] == "End"
    again = host.submit(support(), input=TICKET, checkpoint_every=5)
    again.cancel()
    with pytest.raises(RunHaltedError):
        again.result(timeout=5)
