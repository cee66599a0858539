"""The worker in-process (flowrt.host.worker.Worker): it starts submitted runs, continues a run
when a reply is delivered, fires timers (late ones too, saying how late), retries inside one
call, and halts cancelled runs whatever they were doing. Each test waits on the store's state
with a deadline, never on a sleep."""

from __future__ import annotations

import threading
import time

import pytest

import flowrt as rt
from flowrt.host import operations as rh
from flowrt.host.worker import Conflict, Worker, cancel, status, submit

from tests.worker_helpers import (
    golden_support_facts,
    kinds,
    program,
    seed_text,
    support,
    support_bindings,
    wait_for,
    wait_state,
)


@pytest.fixture
def store(tmp_path):
    with rt.Store(tmp_path / "runs.db") as s:
        yield s


def _worker(store, programs, bindings, **kw):
    kw.setdefault("poll_seconds", 0.02)
    lines: list[str] = []
    w = Worker(store, programs, bindings, log=lines.append, **kw)
    w.lines = lines
    return w


def _steps(fn=lambda n: {"Ok": n + 1}) -> rt.Bindings:
    b = rt.Bindings()
    b.bind("svc.step", fn)
    return b


def _facts(store, prog, run_id) -> str:
    return rh.history(store, prog, run_id)


def test_a_submitted_run_is_started_and_completes(store):
    with _worker(store, {"two": program("two_steps")}, _steps()) as w:
        run_id = w.submit("two", input={"n": 1})
        s = wait_state(store, run_id, "completed")
    assert s.result == "3" and s.facts == 6
    assert any("event=started" in ln for ln in w.lines)
    assert any(f"run={run_id} event=completed result=3" in ln for ln in w.lines)
    calls = [ln for ln in w.lines if " call=root#1 " in ln]
    assert calls == [
        f"run={run_id} call=root#1 event=call_sent tool=svc.step",
        f"run={run_id} call=root#1 event=call_returned tool=svc.step",
    ]


def test_the_support_example_pauses_on_human_ask_and_a_delivered_reply_completes_it(store):
    with _worker(store, {"support": support()}, support_bindings(), checkpoint_every=5) as w:
        run_id = w.submit("support", input={"ticket": "Login fails on Safari"}, run_id="s1")
        s = wait_state(store, run_id, "paused")
        (c,) = w.status(run_id).open_calls
        assert (c.id, c.tool, c.args) == (
            "c1:root#2",
            "human.ask",
            ("Which Safari version does the customer use?",),
        )
        w.deliver(run_id, "c1:root#2", {"Ok": "Safari 17.4"})
        s = wait_state(store, run_id, "completed", prog=support())
    assert s.result == 'Resolved("Enable Secure on the session cookie; ...")'
    assert s.facts == 16
    assert seed_text(_facts(store, support(), run_id)) == golden_support_facts()
    assert rh.replay(store, support(), run_id).text == "Matched"


def test_a_reply_for_a_call_that_is_not_open_yet_is_refused(store):
    gate = threading.Event()
    with _worker(store, {"two": program("two_steps")}, _steps(lambda n: gate.wait(30) and {"Ok": n})) as w:
        run_id = w.submit("two", input={"n": 1})
        wait_for(lambda: store.host_records.load_run(run_id).open_calls, what="root#1 out")
        with pytest.raises(Conflict, match="call root#2 is not open"):
            w.deliver(run_id, "root#2", {"Ok": 5})
        gate.set()
        wait_state(store, run_id, "completed")


def test_a_sleep_is_a_timer_the_worker_fires_and_the_run_completes_by_itself(store):
    with _worker(store, {"sleepy": program("sleepy")}, _steps()) as w:
        run_id = w.submit("sleepy", input={"n": 1})
        s = wait_state(store, run_id, "completed", timeout=30)
    assert s.result == "3"
    ((call, due, set_at, fired),) = store.worker_records.timers(run_id)
    assert call == "root#2" and due - set_at == pytest.approx(2.0, abs=0.05)
    assert fired >= due
    text = _facts(store, program("sleepy"), run_id)
    assert "clock.sleep(2s)" in text
    assert [k for k in kinds(text) if k[0] == "root#2"] == [("root#2", "Call"), ("root#2", "Reply")]


def test_a_timer_that_fell_due_while_no_worker_ran_fires_at_start_and_says_how_late(store):
    w = _worker(store, {"sleepy": program("sleepy")}, _steps()).start()
    run_id = w.submit("sleepy", input={"n": 1})
    wait_for(lambda: store.worker_records.timers(run_id), what="the timer")
    wait_state(store, run_id, "paused")
    w.stop()
    ((_, due, _, fired),) = store.worker_records.timers(run_id)
    assert fired is None
    wait_for(lambda: time.time() > due + 0.5, timeout=10, what="the timer to fall due")
    with _worker(store, {"sleepy": program("sleepy")}, _steps()) as w2:
        wait_state(store, run_id, "completed")
    ((_, due, _, fired),) = store.worker_records.timers(run_id)
    assert fired - due >= 0.5
    assert any("event=timer_fired" in ln and "late=" in ln for ln in w2.lines)


def test_clock_now_is_answered_with_the_hosts_time_as_a_recorded_reply(store, tmp_path):
    d = tmp_path / "now"
    d.mkdir()
    (d / "main.flow").write_text(
        'use "std@v1/clock"\nuse "std@v1/instant"\n\n'
        "pub flow main() -> Int !tool = match clock.now() { Ok(t) => instant.to_unix_nanos(t), Err(_) => 0 }\n",
        encoding="utf-8",
    )
    from flow2py.host import compile_path

    prog = compile_path(str(d / "main.flow"))
    before = time.time_ns()
    with _worker(store, {"now": prog}, rt.Bindings()) as w:
        run_id = w.submit("now")
        s = wait_state(store, run_id, "completed")
    assert before <= int(s.result) <= time.time_ns()
    assert "Reply       Ok(" in _facts(store, prog, run_id)


def test_retries_inside_one_call_are_invisible_to_history_and_kept_in_the_host_records(store):
    tries = []

    def flaky(n):
        tries.append(n)
        if len(tries) < 3:
            raise OSError("connection reset")
        return {"Ok": n + 1}

    b = rt.Bindings()
    b.bind("svc.step", flaky, retry=rt.Retry(attempts=3, backoff=0, on=(OSError,)))
    with _worker(store, {"two": program("two_steps")}, b):
        run_id = submit(store, program("two_steps"), program="two", input={"n": 1})
        s = wait_state(store, run_id, "completed")
    assert s.result == "3" and s.facts == 6  # one Call and one Reply per call
    attempts = store.worker_records.attempts(run_id, "root#1")
    assert [(a, o) for a, _, o in attempts] == [
        (1, "raised OSError: connection reset"),
        (2, "raised OSError: connection reset"),
        (3, "returned"),
    ]


def test_many_runs_at_once_all_complete(store):
    with _worker(store, {"two": program("two_steps")}, _steps(), concurrency=4) as w:
        ids = [w.submit("two", input={"n": i}) for i in range(20)]
        done = [wait_state(store, r, "completed") for r in ids]
    assert [int(s.result) for s in done] == [i + 2 for i in range(20)]


def test_cancel_of_a_paused_run_halts_it_with_no_end(store):
    b = rt.Bindings()
    b.bind("svc.ask", lambda q: rt.pending)
    with _worker(store, {"asks": program("asks")}, b) as w:
        run_id = w.submit("asks", input={"q": "ok?"})
        s = wait_state(store, run_id, "paused")
        w.cancel(run_id)
        after = wait_state(store, run_id, "halted")
    assert after.facts == s.facts and "End" not in _facts(store, program("asks"), run_id)


def test_cancel_of_a_running_run_halts_its_drive_while_a_call_is_out(store):
    gate = threading.Event()
    b = _steps(lambda n: gate.wait(30) and {"Ok": n})
    with _worker(store, {"two": program("two_steps")}, b) as w:
        run_id = w.submit("two", input={"n": 1})
        wait_for(lambda: store.host_records.load_run(run_id).open_calls, what="root#1 out")
        n = store.host_records.load_run(run_id).facts
        w.cancel(run_id)
        s = wait_state(store, run_id, "halted")
        gate.set()
    assert s.facts == n == 2  # Start and root#1's Call: no Reply, no End
    assert store.host_records.load_run(run_id).owner is None


def test_cancel_from_another_process_halts_a_run_the_worker_holds(store, tmp_path):
    gate = threading.Event()
    b = _steps(lambda n: gate.wait(30) and {"Ok": n})
    with _worker(store, {"two": program("two_steps")}, b):
        run_id = submit(store, program("two_steps"), program="two", input={"n": 1})
        wait_for(lambda: store.host_records.load_run(run_id).open_calls, what="root#1 out")
        with rt.Store(tmp_path / "runs.db") as other:  # as `flow2py cancel` would
            cancel(other, run_id)
        s = wait_state(store, run_id, "halted")
        gate.set()
    assert s.facts == 2


def test_cancel_of_a_submitted_run_means_it_never_starts(store):
    run_id = submit(store, program("two_steps"), program="two", input={"n": 1})
    cancel(store, run_id)
    with _worker(store, {"two": program("two_steps")}, _steps()) as w:
        later = w.submit("two", input={"n": 5})  # taken after the cancelled one would have been
        wait_state(store, later, "completed")
    s = status(store, run_id)
    assert (s.state, s.facts) == ("halted", 1)
    assert store.worker_records.submission(run_id)[3] is None


@pytest.mark.parametrize("when", range(10))
def test_cancel_racing_the_drive_always_ends_halted_or_refused_as_ended(store, when):
    """Cancel at any moment of a run that never pauses: either it halts (no End) or the cancel is
    refused because the run had completed; never both, never neither."""
    with _worker(store, {"two": program("two_steps")}, _steps()) as w:
        run_id = w.submit("two", input={"n": 1})
        time.sleep(when * 0.002)  # a spread of moments; the outcome is checked, not the timing
        try:
            w.cancel(run_id)
            refused = False
        except Conflict:
            refused = True
        s = wait_state(store, run_id, "halted", "completed")
    text = _facts(store, program("two_steps"), run_id)
    if refused:
        assert s.state == "completed" and "End" in text
    else:
        assert s.state == "halted" and "End" not in text


def _approval():
    from tests.worker_helpers import compiled
    from tests.repo_paths import ROOT

    return compiled(str(ROOT / "examples" / "approval" / "main.flow"))


def _approval_bindings(ledger: list) -> rt.Bindings:
    b = rt.Bindings()
    b.bind("approvals.request", lambda order, amount: rt.pending)

    def capture(order, amount):
        ledger.append(order)
        return {"Ok": f"receipt-{order}-{amount}"}

    b.bind("payments.capture", capture, on_crash="resend")
    return b


@pytest.mark.parametrize(
    "reply, result",
    [
        ({"Ok": {"Approved": "alice"}}, 'Paid("receipt-A-17-250")'),
        ({"Ok": {"Rejected": "over budget"}}, 'Declined("over budget")'),
    ],
)
def test_the_approval_example_waits_for_a_person_and_the_reply_decides(store, reply, result):
    ledger: list = []
    with _worker(store, {"approval": _approval()}, _approval_bindings(ledger)) as w:
        run_id = w.submit("approval", input={"order": "A-17", "amount": 250})
        s = wait_state(store, run_id, "paused")
        assert [(c.id, c.tool) for c in w.status(run_id).open_calls] == [
            ("root/1#1", "approvals.request"),
            ("root/2#1", "clock.sleep"),
        ]
        w.deliver(run_id, "root/1#1", reply)
        s = wait_state(store, run_id, "completed", prog=_approval())
    assert s.result == result
    assert ledger == (["A-17"] if "Paid" in result else [])


def test_the_approval_example_expires_when_its_deadline_fires_first(store):
    with _worker(store, {"approval": _approval()}, _approval_bindings([])) as w:
        run_id = w.submit("approval", input={"order": "A-18", "amount": 250})
        wait_for(lambda: store.worker_records.timers(run_id), what="the deadline's timer")
        wait_state(store, run_id, "paused")
        with store.file.transaction() as db:  # 24 hours later
            db.execute("UPDATE worker_timers SET due=due-86400 WHERE run=?", (run_id,))
        w.wake()
        s = wait_state(store, run_id, "completed", prog=_approval())
    assert s.result == "Expired"


def test_a_run_of_a_program_the_worker_was_not_given_is_served_from_its_stored_sources(store):
    from flow2py.host import compile_stored

    run_id = submit(store, program("two_steps"), program="two", input={"n": 1})
    w = _worker(store, {"support": support()}, _steps(), stored=lambda r: compile_stored(store, r))
    with w:
        s = wait_state(store, run_id, "completed")
    assert s.result == "3" and any("event=program_compiled program=two" in ln for ln in w.lines)


def test_a_run_of_a_program_the_worker_cannot_get_is_left_alone(store):
    run_id = submit(store, program("two_steps"), program="two", input={"n": 1})
    with _worker(store, {"support": support()}, _steps()) as w:
        wait_for(lambda: any("event=not_served" in ln for ln in w.lines), what="the worker to pass it over")
    assert status(store, run_id).state == "submitted"


def test_a_lease_is_taken_over_only_after_it_expired(store):
    run_id = submit(store, program("two_steps"), program="two", input={"n": 1})
    records = store.worker_records
    assert records.claim(run_id, "worker-a", 0.3)
    assert records.claim(run_id, "worker-a", 0.3)  # its own: renewed
    assert not records.claim(run_id, "worker-b", 0.3)  # held by a live process
    expires = records.lease(run_id)[4]
    wait_for(lambda: time.time() > expires, timeout=10, what="the lease to expire")
    assert records.claim(run_id, "worker-b", 30)
    assert records.lease(run_id)[0] == "worker-b"


def test_a_worker_renews_the_leases_of_the_runs_it_holds(store):
    gate = threading.Event()
    with _worker(
        store, {"two": program("two_steps")}, _steps(lambda n: gate.wait(30) and {"Ok": n}), lease_seconds=0.3
    ) as w:
        run_id = w.submit("two", input={"n": 1})
        wait_for(lambda: store.worker_records.lease(run_id), what="the lease")
        first = store.worker_records.lease(run_id)
        assert first[0] == w.owner
        wait_for(lambda: store.worker_records.lease(run_id)[3] > first[3], what="a heartbeat")
        gate.set()
        wait_state(store, run_id, "completed")
    assert store.worker_records.lease(run_id) is None  # released
