"""Real stored runs to attack, and the hostile holder of a store's tools: rewrite a fact (re-chained
or not), a run record or a blob, then try every command path on it.

The program has what a store holds: records in a checkpoint's arguments, a parked task (its reply
carried across checkpoints in one run, delivered after them in another), a value big enough to be
a blob, an Int reply and an End.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Optional

import flowrt as rt
from flow2py import host as fhost
from flowrt.host import operations as rh
from flowrt.history import trace as T
from flowrt.history.store import Store
from tests import history_e2e_helpers as E

SVC = E.SVC + "@tool pub flow size(t: Text) -> Result<Int, Text>\n"  # step, ask (slow unused), size

MAIN = """\
use "std@v1/task"
use "std@v1/int"
use "std@v1/list"
use "./svc"

type Note { text: Text, round: Int }

pub flow main(ticket: Text) -> Text !tool = {
    let t = task.spawn(flow() = svc.ask(ticket))
    work(ticket, [], 1, t)
}

flow work(ticket: Text, notes: List<Note>, round: Int, t: task.Task<Result<Text, ToolProblem<Text>>>) -> Text !tool = if round > 3 {
    finish(notes, t)
} else {
    match svc.step(round) {
        Ok(s) => work(ticket, notes ++ [Note { text: s, round: round }], round + 1, t),
        Err(_) => "step failed",
    }
}

flow finish(notes: List<Note>, t: task.Task<Result<Text, ToolProblem<Text>>>) -> Text !tool = match task.await(t) {
    Ok(a) => match svc.size(a) {
        Ok(k) => a ++ "/" ++ int.to_text(k + list.length(notes)),
        Err(_) => "no size",
    },
    Err(_) => "no answer",
}

pub flow count(n: Int) -> Int !tool = tally(n, 0)

flow tally(n: Int, acc: Int) -> Int !tool = if n == 0 {
    acc
} else {
    match svc.size("x") {
        Ok(k) => tally(n - 1, acc + k),
        Err(_) => acc,
    }
}
"""


def step(n):
    return {"Ok": ("s" * 1500) if n == 2 else f"s{n}"}  # round 2's reply is stored as a blob


def size(t):
    return {"Ok": len(t)}


def bindings(answer: bool) -> rt.Bindings:
    """`ask` answers at once (its reply is carried across the checkpoints) or is left pending."""
    b = rt.Bindings()
    b.bind("svc.step", step)
    b.bind("svc.size", size)
    b.bind("svc.ask", (lambda q: {"Ok": "yes"}) if answer else (lambda q: rt.pending))
    return b


#: The runs of the base store: (run id, checkpoint every, ask answers, reply delivered by resume)
RUNS = (
    ("parked", 1, False, None),  # paused on the parked task's call, checkpoints before it
    ("carried", 1, True, None),  # completed; the parked reply is recorded before a checkpoint
    ("plain", None, False, None),  # no checkpoint: history served from Start
    ("done", 1, False, {"root/1#1": {"Ok": "yes"}}),  # paused, then resumed to its End
    ("solo", 1, False, None),  # `count`: checkpoints with no task, so it can be forked
)


class Base:
    """A store holding the runs above, made once; `copy()` gives a test a store of its own."""

    def __init__(self, d: Path):
        self.d = d
        (d / "main.flow").write_text(MAIN)
        (d / "svc.flow").write_text(SVC)
        self.loaded = fhost.compile_path(str(d / "main.flow"))
        self.path = d / "base.db"
        store = Store(self.path)
        try:
            for run_id, every, answer, reply in RUNS:
                entry, given = ("count", {"n": 3}) if run_id == "solo" else ("main", {"ticket": "t"})
                rh.start(
                    store,
                    self.loaded,
                    entry=entry,
                    input=given,
                    bindings=bindings(answer),
                    run_id=run_id,
                    checkpoint_every=every,
                )
                if reply is not None:
                    rh.resume(store, self.loaded, run_id, replies=reply, bindings=bindings(True))
        finally:
            store.close()

    def copy(self, to: Path) -> Path:
        """A copy of the base store (the SQLite backup API: WAL contents included)."""
        to.parent.mkdir(parents=True, exist_ok=True)
        src = sqlite3.connect(self.path)
        dst = sqlite3.connect(to)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        return to


def db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def rows(con: sqlite3.Connection, run: str) -> list[tuple[int, int, bytes]]:
    return con.execute("SELECT n, kind, data FROM facts WHERE run=? ORDER BY n", (run,)).fetchall()


def rechain(con: sqlite3.Connection, run: str) -> None:
    """What a holder of the store who knows the format does after rewriting facts: recompute every
    hash and the head, so the chain is intact and only the content is hostile. A fact that no
    longer hashes keeps its old hash (the chain then breaks there)."""
    prev = T.ZERO_HASH
    for n, _kind, data in rows(con, run):
        try:
            prev = T.fact_hash(prev, data)
        except T.TraceError:
            continue
        con.execute("UPDATE facts SET hash=? WHERE run=? AND n=?", (prev, run, n))
    con.execute("UPDATE runs SET head=? WHERE id=?", (prev, run))


def set_fact(path: Path, run: str, n: int, data, *, chain: bool = True) -> None:
    con = db(path)
    try:
        con.execute("UPDATE facts SET data=? WHERE run=? AND n=?", (data, run, n))
        if chain:
            rechain(con, run)
    finally:
        con.close()


def fact_item(path: Path, run: str, kind: int, which: int = 0) -> tuple[int, list]:
    """(n, parsed stored form) of the run's `which`-th fact of `kind`."""
    con = db(path)
    try:
        n, _k, data = [r for r in rows(con, run) if r[1] == kind][which]
    finally:
        con.close()
    return n, T.parse_fact(data)


def fact_count(path: Path, run: str) -> int:
    con = db(path)
    try:
        return con.execute("SELECT count(*) FROM facts WHERE run=?", (run,)).fetchone()[0]
    finally:
        con.close()


# ---- every command path --------------------------------------------------------------------------


def every_command(path: Path, loaded, run_id: str) -> dict[str, tuple[int, str]]:
    """Run history (text, JSON Lines), replay, verify, fork (of checkpoint 1), resume and runs on
    the store at `path`, as the CLI runs them (flowrt.host, with the program already compiled):
    {command: (exit code, one-line text)}. A refusal is (its exit code, its message); anything
    else raised is a bug and propagates."""
    out: dict[str, tuple[int, str]] = {}
    store = rh.open_store(str(path), create=False)
    try:

        def attempt(name, op):
            try:
                out[name] = op()
            except rh.Refused as e:
                out[name] = (e.exit_code, str(e))

        attempt("history", lambda: (0, rh.history(store, loaded, run_id)))
        attempt("history-json", lambda: (0, rh.history(store, loaded, run_id, "json")))
        attempt("replay", lambda: _report(rh.replay(store, loaded, run_id)))
        attempt("verify", lambda: _verified(rh.read(store.history.verify, run_id)))
        attempt("runs", lambda: (0, "\n".join(rh.list_runs(store))))
        attempt(
            "fork",
            lambda: _report(
                rh.fork(
                    store, loaded, loaded, run_id, 1, bindings=bindings(True), new_run_id=f"fork-of-{run_id}"
                )
            ),
        )
        attempt("resume", lambda: _report(rh.resume(store, loaded, run_id, bindings=bindings(False))))
    finally:
        store.close()
    return out


def _report(r) -> tuple[int, str]:
    return r.exit_code, r.text


def _verified(result) -> tuple[int, str]:
    ok, message, _ = result
    return (0 if ok else 6), message


#: A Python exception in a program's fault: the program was served a value that did not fit.
PY_FAULT = (
    "TypeError",
    "AttributeError",
    "KeyError",
    "IndexError",
    "ValueError",
    "NameError",
    "UnboundLocalError",
    "OverflowError",
    "RecursionError",
)


def served_a_misfit(results: dict[str, tuple[int, str]]) -> Optional[str]:
    """The command whose outcome shows a stored value reached the program untyped, or None."""
    for name, (_code, text) in results.items():
        if name in ("replay", "resume", "fork") and any(f"{e}:" in text for e in PY_FAULT):
            return name
    return None
