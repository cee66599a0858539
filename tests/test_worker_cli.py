"""The worker as a process (`flow2py worker`) and the commands around it (`submit`, `reply`,
`cancel`): a worker killed with SIGKILL during a sleep or while a call is out is recovered by the
next one (the cut call closed Unknown, or sent again under its id for `on_crash="resend"`), SIGTERM
stops it cleanly, and every refusal is one line with exit code 1. Each wait is on the store's
state with a deadline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import flowrt as rt
from flow2py.cli import main
from flowrt.host import operations as rh
from flowrt.host.worker import status, submit

from tests.worker_helpers import PROGRAMS, kinds, program, support, wait_for, wait_state

TOOLS = """\
import os, time
import flowrt

LOG = os.environ["SIDE_LOG"]


@flowrt.bind("svc.step", on_crash=os.environ.get("ON_CRASH", "unknown"))
def step(n):
    call = flowrt.current_call().call_id
    with open(LOG, "a") as f:
        f.write(call + "\\n")
    block = os.environ.get("BLOCK_ONCE")
    if block and not os.path.exists(block):  # the first process to get here stays in the call
        open(block, "w").close()
        time.sleep(3600)
    return {"Ok": n + 1}
"""


class Proc:
    """A `flow2py worker` process, its stderr in a file."""

    def __init__(self, tmp: Path, name: str, prog: str, **env):
        self.err = tmp / f"{name}.err"
        e = dict(os.environ, SIDE_LOG=str(tmp / "side.log"), **env)
        self.p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flow2py.cli",
                "worker",
                f"w={PROGRAMS / prog / 'main.flow'}",
                "--tools",
                str(tmp / "tools.py"),
                "--store",
                _STORES[tmp],
                "--grace",
                "0.5",
            ],
            cwd=tmp,
            stdout=subprocess.DEVNULL,
            stderr=open(self.err, "w"),
            env=e,
        )

    def log(self) -> str:
        return self.err.read_text(encoding="utf-8")

    def kill(self) -> None:
        self.p.kill()
        self.p.wait(30)

    def __del__(self):
        if self.p.poll() is None:
            self.p.kill()


_STORES: dict = {}  # the test's folder -> its store (a SQLite path or a PostgreSQL URL)


@pytest.fixture
def here(tmp_path, request):
    """The test's folder with tools.py and a store: SQLite, or PostgreSQL for a test parametrised
    with backend="postgresql" (worker processes are slow to start: one such test runs on both)."""
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    backend = getattr(request.node, "callspec", None) and request.node.callspec.params.get("backend")
    store_url = (
        request.getfixturevalue("pg_store_url") if backend == "postgresql" else str(tmp_path / "runs.db")
    )
    _STORES[tmp_path] = store_url
    rt.Store(store_url).close()
    yield tmp_path
    del _STORES[tmp_path]


def _store(here):
    return rt.Store(_STORES[here])


def _side(here) -> list[str]:
    p = here / "side.log"
    return p.read_text(encoding="utf-8").split() if p.exists() else []


def test_a_worker_killed_during_a_sleep_is_followed_by_one_that_completes_the_run(here):
    w1 = Proc(here, "w1", "sleepy")
    with _store(here) as store:
        run_id = submit(store, program("sleepy"), program="w", input={"n": 1})
        wait_for(lambda: store.worker_records.timers(run_id), what="the sleep's timer")
        wait_state(store, run_id, "paused")
        w1.kill()
        w2 = Proc(here, "w2", "sleepy")
        s = wait_state(store, run_id, "completed", timeout=60)
        w2.p.send_signal(signal.SIGTERM)
        assert w2.p.wait(30) == 0
        assert s.result == "3"
        text = rh.history(store, program("sleepy"), run_id)
    assert [k for k in kinds(text) if k[0] == "root#2"] == [("root#2", "Call"), ("root#2", "Reply")]
    assert "event=timer_fired" in w2.log()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill_9_while_a_call_is_out_the_next_worker_closes_it_unknown(here, backend):
    w1 = Proc(here, "w1", "two_steps", BLOCK_ONCE=str(here / "blocked"))
    with _store(here) as store:
        run_id = submit(store, program("two_steps"), program="w", input={"n": 1})
        wait_for(lambda: _side(here) == ["root#1"], what="root#1 sent")
        w1.kill()
        w2 = Proc(here, "w2", "two_steps", BLOCK_ONCE=str(here / "blocked"))
        s = wait_state(store, run_id, "completed", timeout=60, prog=program("two_steps"))
        w2.kill()
        text = rh.history(store, program("two_steps"), run_id)
    assert s.result == "-99"  # root#1 closed Err(Unknown(...)), then step(-100)
    assert 'Reply       Err(Unknown("process ended while the call was out"))' in text
    assert _side(here) == ["root#1", "root#2"]  # nothing sent twice
    assert "event=recovering cut=root#1" in w2.log()


def test_kill_9_while_a_call_is_out_resends_it_under_its_id_for_on_crash_resend(here):
    env = dict(BLOCK_ONCE=str(here / "blocked"), ON_CRASH="resend")
    w1 = Proc(here, "w1", "two_steps", **env)
    with _store(here) as store:
        run_id = submit(store, program("two_steps"), program="w", input={"n": 1})
        wait_for(lambda: _side(here) == ["root#1"], what="root#1 sent")
        w1.kill()
        w2 = Proc(here, "w2", "two_steps", **env)
        s = wait_state(store, run_id, "completed", timeout=60, prog=program("two_steps"))
        w2.kill()
        text = rh.history(store, program("two_steps"), run_id)
    assert s.result == "3"
    assert _side(here) == ["root#1", "root#1", "root#2"]  # root#1 again, under its id; no other twice
    assert [k for k in kinds(text) if k[0] == "root#1"] == [("root#1", "Call"), ("root#1", "Reply")]
    assert "resend=root#1" in w2.log()


def test_sigterm_stops_the_worker_cleanly_leaving_the_call_open_and_no_lease(here):
    w1 = Proc(here, "w1", "two_steps", BLOCK_ONCE=str(here / "blocked"))
    with _store(here) as store:
        run_id = submit(store, program("two_steps"), program="w", input={"n": 1})
        wait_for(lambda: _side(here) == ["root#1"], what="root#1 sent")
        w1.p.send_signal(signal.SIGTERM)
        assert w1.p.wait(30) == 0
        info = store.host_records.load_run(run_id)
        assert (info.facts, info.owner, info.state) == (2, None, "halted")  # nothing half-recorded
        assert [c for c, _ in info.open_calls] == ["root#1"]
        assert store.worker_records.lease(run_id) is None
    log = w1.log()
    assert f"run={run_id} event=halting" in log and "event=worker_stopped" in log


# ---- the commands' refusals: one line, exit 1 ----------------------------------------------------


def _cli(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, (r.stdout if r.exit_code == 0 else r.stderr).strip()


@pytest.fixture
def paused(store_url):
    """A store holding support run s1, paused on c1:root#2 (started in-process)."""
    from tests.worker_helpers import support_bindings

    db = store_url
    with rt.Store(db) as store:
        rh.start(
            store,
            support(),
            input={"ticket": "t"},
            bindings=support_bindings(),
            run_id="s1",
            checkpoint_every=5,
        )
    return db


SUPPORT = f"support={Path(__file__).resolve().parent.parent / 'examples' / 'support' / 'main.flow'}"


def test_submit_prints_the_run_id_and_the_run_waits_for_a_worker(tmp_path):
    code, out = _cli(
        "submit", SUPPORT, "--input", '{"ticket": "t"}', "--run-id", "r1", "--store", tmp_path / "db"
    )
    assert (code, out) == (0, "r1")
    with rt.Store(tmp_path / "db") as store:
        assert status(store, "r1").state == "submitted"


@pytest.mark.parametrize(
    "args, message",
    [
        (("--input", '{"ticket": 5}'), "flow2py: input: $.ticket: expected Text, got 5"),
        (
            ("--input", '{"ticket": '),
            "flow2py: --input: not valid JSON: Expecting value: line 1 column 12 (char 11)",
        ),
        (
            ("--input", '{"ticket": "t"}', "--run-id", "s1"),
            "flow2py: run 's1' already exists; choose another run id",
        ),
        (
            ("--input", '{"ticket": "t"}', "--entry", "nope"),
            "flow2py: main.flow has no entry function `nope`",
        ),
    ],
)
def test_submit_refusals(paused, args, message):
    assert _cli("submit", SUPPORT, *args, "--store", paused) == (1, message)


def test_reply_keeps_an_admitted_reply(paused):
    assert _cli("reply", "s1", 'c1:root#2={"Ok": "Safari 17.4"}', "--store", paused) == (
        0,
        "delivered c1:root#2 to run s1",
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (("nope", 'c1:root#2={"Ok": "x"}'), "flow2py: unknown run 'nope'"),
        (
            ("s1", 'c1:root#7={"Ok": "x"}'),
            "flow2py: call c1:root#7 is not open in run s1 (open calls: c1:root#2)",
        ),
        (("s1", 'c1:root#2={"Ok": 5}'), "flow2py: $.Ok: expected Text, got 5"),
        (
            ("s1", 'c1:root#2={"Ok": '),
            "flow2py: reply c1:root#2: not valid JSON: Expecting value: line 1 column 8 (char 7)",
        ),
        (("s1", "c1:root#2"), "flow2py: reply 'c1:root#2': expected CALL_ID=JSON"),
    ],
)
def test_reply_refusals(paused, args, message):
    assert _cli("reply", *args, "--store", paused) == (1, message)


def test_cancel_and_its_refusals(paused):
    assert _cli("cancel", "nope", "--store", paused) == (1, "flow2py: unknown run 'nope'")
    assert _cli("cancel", "s1", "--store", paused) == (0, "cancelled run s1 (halted; no End is recorded)")
    assert _cli("cancel", "s1", "--store", paused) == (
        1,
        "flow2py: run s1 has already ended (halted: cancelled)",
    )
    assert _cli("reply", "s1", 'c1:root#2={"Ok": "x"}', "--store", paused)[0] == 1


def test_the_worker_refuses_a_program_that_does_not_exist_and_an_http_api_it_lacks(tmp_path):
    code, out = _cli("worker", tmp_path / "nope.flow", "--store", tmp_path / "db")
    assert (code, out) == (1, f"flow2py: {tmp_path / 'nope.flow'}: no such file")
    code, out = _cli("worker", SUPPORT, "--http", "nope", "--store", tmp_path / "db")
    assert (code, out) == (1, "flow2py: --http 'nope': expected HOST:PORT (e.g. 127.0.0.1:8080)")
