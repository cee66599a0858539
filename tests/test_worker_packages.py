"""`flow2py worker NAME=PACKAGE`: a package built by `flow2py build` is served like a `.flow` file.
A run submitted for it pauses on the support example's `human.ask`, a reply delivered with
`flow2py reply` completes it, and the worker compiled nothing (it logs `program_compiled` when it
compiles a run's stored sources)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from flow2py.cli import main
from flowrt.host import operations as rh

from tests.worker_helpers import wait_for, wait_state

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "support"


def test_a_built_package_is_served_by_name_and_its_runs_pause_and_complete(tmp_path):
    cli = CliRunner()
    built = cli.invoke(main, ["build", str(EXAMPLE / "main.flow"), "-o", str(tmp_path / "out")])
    assert built.exit_code == 0, built.output
    (package,) = (tmp_path / "out").iterdir()
    store = str(tmp_path / "runs.db")
    err = tmp_path / "worker.err"
    worker = subprocess.Popen(
        [sys.executable, "-m", "flow2py.cli", "worker", f"support={package}", "--tools",
         str(EXAMPLE / "tools.py"), "--store", store, "--checkpoint-every", "5", "--grace", "0.5"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=open(err, "w"),
    )  # fmt: skip
    try:
        wait_for(lambda: "event=worker_started" in err.read_text(), what="the worker to start")
        sub = cli.invoke(
            main,
            ["submit", f"support={EXAMPLE / 'main.flow'}", "--input", '{"ticket": "Login fails on Safari"}',
             "--run-id", "p1", "--store", store],
        )  # fmt: skip
        assert sub.exit_code == 0 and sub.output.strip() == "p1", sub.output
        paused = wait_state(rh.open_store(store), "p1", "paused")
        assert [c.id for c in paused.open_calls] == ["c1:root#2"]
        reply = cli.invoke(main, ["reply", "p1", 'c1:root#2={"Ok": "Safari 17.4"}', "--store", store])
        assert reply.exit_code == 0, reply.output
        done = wait_state(rh.open_store(store), "p1", "completed")
        assert done.facts == 16
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
    log = err.read_text()
    assert "run=p1 event=started program=support" in log and "run=p1 event=completed" in log
    assert "event=program_compiled" not in log
