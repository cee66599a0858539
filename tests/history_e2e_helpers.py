"""Small Flow programs, Tools files and CLI helpers for the end-to-end history tests."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner

from flow2py.cli import main as cli_main

SVC = """\
@tool pub flow step(n: Int) -> Result<Text, Text>
@tool pub flow ask(q: Text) -> Result<Text, Text>
@tool pub flow slow(q: Text) -> Result<Text, Text>
"""

# A loop with a checkpoint candidate each round (`work`, `finish` are top-level tail calls), then
# a question that pauses.
LOOP = """\
use "./svc"

pub flow main(ticket: Text) -> Text !tool = work(ticket, "", 1)

flow work(ticket: Text, acc: Text, round: Int) -> Text !tool = if round > 3 {
    finish(acc)
} else {
    match svc.step(round) {
        Ok(s) => work(ticket, acc ++ s, round + 1),
        Err(_) => "step failed",
    }
}

flow finish(acc: Text) -> Text !tool = match svc.ask(acc) {
    Ok(a) => acc ++ "|" ++ a,
    Err(_) => acc ++ "|no answer",
}
"""

# A background question (answered `pending`) while the root makes a slow call.
CRASH = """\
use "std@v1/task"
use "./svc"

pub flow main(q: Text) -> Text !tool = {
    let t = task.spawn(flow() = svc.ask(q))
    match svc.slow(q) {
        Ok(s) => finish(s, t),
        Err(Unknown(why)) => finish("unknown: " ++ why, t),
        Err(_) => finish("error", t),
    }
}

flow finish(s: Text, t: task.Task<Result<Text, ToolProblem<Text>>>) -> Text !tool = match task.await(t) {
    Ok(a) => s ++ " + " ++ a,
    Err(_) => s ++ " + no answer",
}
"""

# Tools: `step` answers "s<n>" (counted in calls.txt); `ask` is left pending; `slow` writes
# slow.marker and, while block.flag exists, sleeps its seconds (or, holding "hold", waits until the
# flag is removed), then answers "fast" (each call counted).
TOOLS = """\
import os, time
from flowrt import bind, pending

HERE = os.path.dirname(os.path.abspath(__file__))


def _count(name):
    with open(os.path.join(HERE, "calls.txt"), "a") as f:
        f.write(name + "\\n")


@bind("svc.step")
def step(n):
    _count("step")
    return {"Ok": f"s{n}"}


@bind("svc.ask")
def ask(q):
    _count("ask")
    return pending


@bind("svc.slow")
def slow(q):
    _count("slow")
    flag = os.path.join(HERE, "block.flag")
    if os.path.exists(flag):
        open(os.path.join(HERE, "slow.marker"), "w").close()
        hold = open(flag).read()
        if hold == "hold":  # hold the call (and the run's lease) until the test removes the flag
            deadline = time.time() + 60
            while os.path.exists(flag) and time.time() < deadline:
                time.sleep(0.02)
        else:
            time.sleep(float(hold or "60"))
    return {"Ok": "fast"}
"""


def project(tmp: Path, main: str = LOOP, sub: str = "") -> Path:
    d = tmp / sub if sub else tmp
    d.mkdir(parents=True, exist_ok=True)
    (d / "main.flow").write_text(main)
    (d / "svc.flow").write_text(SVC)
    (d / "tools.py").write_text(TOOLS)
    return d


def calls(d: Path, name: str) -> int:
    p = d / "calls.txt"
    return p.read_text().split().count(name) if p.exists() else 0


@contextmanager
def _pg_tables(url: str):
    from flowrt.history.store import Store

    with Store(url) as store:
        yield store.file.db


class Cli:
    """`flow2py` in this process (click's runner): fast, for everything that needs no second process."""

    def __init__(self, d: Path, store: str | None = None):
        """`store`: a SQLite path or a PostgreSQL URL (tests/pg_helpers.py); default d/runs.db."""
        self.d = d
        self.store = store or str(d / "runs.db")
        self.runner = CliRunner()

    def __call__(self, *args, store=True):
        args = [str(a) for a in args]
        if store:
            args += ["--store", self.store]
        r = self.runner.invoke(cli_main, args, catch_exceptions=False)
        assert "Traceback" not in r.output and "Traceback" not in r.stderr, r.output + r.stderr
        return r

    def run(self, run_id, input_json='{"ticket": "t"}', *extra, main="main.flow", tools="tools.py"):
        return self(
            "run", self.d / main, "--input", input_json, "--tools", self.d / tools, "--run-id", run_id, *extra
        )

    def resume(self, run_id, *extra, tools="tools.py"):
        return self("resume", run_id, "--tools", self.d / tools, *extra)

    def facts(self, run_id):
        out = self("history", run_id, "--format", "json")
        assert out.exit_code == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]

    def db(self):
        """The store's tables, to tamper with (a context manager; each statement commits)."""
        if self.store.startswith("postgresql://"):
            return _pg_tables(self.store)
        return sqlite3.connect(self.store, isolation_level=None)


def flow2py_process(d: Path, *args, **kw) -> subprocess.Popen:
    """`flow2py` in a process of its own (crashes, concurrent resumes)."""
    return subprocess.Popen(
        [sys.executable, "-m", "flow2py.cli", *map(str, args)],
        cwd=d,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def wait_for(predicate, timeout=60.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# Two races of two steps each round (each pick a Choice), then two questions left pending: the
# run pauses on two open calls, with a checkpoint candidate each round.
RACE = """\
use "std@v1/task"
use "./svc"

pub flow main(ticket: Text) -> Text !tool = work(ticket, "", 1)

flow work(ticket: Text, acc: Text, round: Int) -> Text !tool = if round > 2 {
    finish(acc)
} else {
    match task.race([flow() = svc.step(round), flow() = svc.step(round + 10)]) {
        Ok(s) => work(ticket, acc ++ s, round + 1),
        Err(_) => "step failed",
    }
}

flow finish(acc: Text) -> Text !tool = {
    let a = task.spawn(flow() = svc.ask(acc))
    let b = task.spawn(flow() = svc.ask(acc ++ "2"))
    match (task.await(a), task.await(b)) {
        (Ok(x), Ok(y)) => acc ++ "|" ++ x ++ "|" ++ y,
        _ => acc ++ "|no answer",
    }
}
"""


def run_until_paused(cli: Cli, run_id: str = "a") -> list[str]:
    """Run RACE's project with a checkpoint each round until it pauses; the ids of its open calls."""
    r = cli.run(run_id, '{"ticket": "t"}', "--checkpoint-every", "1")
    assert r.exit_code == 3, r.stdout + r.stderr
    return paused_call_ids(r.stdout)


def paused_call_ids(report: str) -> list[str]:
    """The open call ids a paused report lists: one line each, indented by two spaces (the lines
    under it, indented further, say how to answer it)."""
    return [line.split()[0] for line in report.splitlines()[1:] if line.startswith("  ") and line[2] != " "]


def ok_reply(call: str, text: str) -> str:
    """A `--reply` argument answering `call` with Ok(text)."""
    return f'{call}={{"Ok": "{text}"}}'
