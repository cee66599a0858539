"""What the command line prints about runs, worded for an operator: a paused run's open calls and
the commands that answer them, the run id of a finished run, `flow2py runs` as text or JSON.

The views come from flowrt.host.runs_view; this module only words them. docs/spec/execution.md
("What the command line prints") is the rule, and golden/cli/ holds the texts.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from typing import Iterable, Optional

from flowrt.host.runs_view import STATES, CallView, RunView, iso_time

__all__ = [
    "STATES",
    "Invocation",
    "paused_text",
    "resume_command",
    "reply_command",
    "finished_line",
    "runs_text",
    "runs_json",
]

DEFAULT_STORE = os.path.join(".flow", "runs.db")


@dataclass(frozen=True)
class Invocation:
    """What the command that paused a run was given and a resume needs again: `--tools` (each, in
    order), `--store` (None: the default) and `--checkpoint-every`."""

    tools: tuple[str, ...] = ()
    store: Optional[str] = None
    checkpoint_every: Optional[int] = None

    def store_words(self) -> list[str]:
        """`--store DB`, unless the store is the default one (`.flow/runs.db` here)."""
        if self.store is None or os.path.abspath(self.store) == os.path.abspath(DEFAULT_STORE):
            return []
        return ["--store", self.store]


def _reply_item(call: CallView) -> str:
    """`CALL_ID=JSON` with a reply that fits the call's Tool (`JSON` when none is known)."""
    sample = "JSON" if call.sample is None else json.dumps(call.sample)
    return f"{call.id}={sample}"


def _quoted(words: Iterable[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def resume_command(run_id: str, call: CallView, how: Invocation) -> str:
    """`flow2py resume RUN --reply 'ID=JSON' [--tools F]... [--store DB] [--checkpoint-every N]`."""
    words = ["flow2py", "resume", run_id, "--reply", _reply_item(call)]
    for t in how.tools:
        words += ["--tools", t]
    words += how.store_words()
    if how.checkpoint_every is not None:
        words += ["--checkpoint-every", str(how.checkpoint_every)]
    return _quoted(words)


def reply_command(run_id: str, call: CallView, how: Invocation) -> str:
    """`flow2py reply RUN 'ID=JSON' [--store DB]`: the same reply handed to a worker."""
    return _quoted(["flow2py", "reply", run_id, _reply_item(call), *how.store_words()])


def paused_text(run_id: str, calls: Iterable[CallView], how: Invocation) -> str:
    """A paused run's report: the run and how many calls it waits on, then per open call its id,
    Tool and arguments, the reply type it waits for, and the commands that answer it."""
    calls = list(calls)
    lines = [f"paused: run {run_id} waits on {len(calls)} open call(s)"]
    for c in calls:
        lines.append(f"  {c.id}  {c.text()}")
        lines.append(f"      reply type:  {c.reply_type}")
        lines.append(f"      resume:      {resume_command(run_id, c, how)}")
        lines.append(f"      or a worker: {reply_command(run_id, c, how)}")
    return "\n".join(lines)


def finished_line(state: str, run_id: str) -> str:
    """The stderr line naming a run that ended (`completed: run r1`): stdout holds the value only."""
    return f"{state}: run {run_id}"


# ---- flow2py runs ----------------------------------------------------------------------------------


def _when(t: Optional[float]) -> str:
    text = iso_time(t)
    return "?" if text is None else text[:-5] + "Z"  # to the second


def run_line(v: RunView) -> str:
    """`a  paused on c1:root#2  main  11 facts  program support  started 2026-12-01T15:00:11Z
    paused since 2026-12-01T15:00:12Z on human.ask` (forks and nested runs say so after the facts)."""
    extra = f"  fork of {v.parent} at checkpoint {v.from_checkpoint}" if v.parent else ""
    if v.nested_in:
        extra += f"  nested in {v.nested_in[0]} at {v.nested_in[1]}"
    line = f"{v.run_id}  {v.state_text}  {v.entry}  {v.facts} facts{extra}  program {v.program}  started {_when(v.started)}"
    if v.state == "paused":
        tools = ", ".join(dict.fromkeys(v.open_tools))
        line += f"  paused since {_when(v.paused_since)} on {tools}"
    return line


def runs_text(views: Iterable[RunView]) -> list[str]:
    return [run_line(v) for v in views]


def runs_json(views: Iterable[RunView]) -> str:
    """One JSON array of objects (`run_id, state, program, entry, started, paused_since,
    open_tools, facts`)."""
    return json.dumps([v.to_json() for v in views], indent=2)
