"""The evidence of failed Tool calls, as `flow2py history --details` and the run page show it.

A call whose implementation raised gets `Err(Unknown("Type: message"))` (or `NotRun(reason)`)
in history: the program sees the reason, nothing more (seed 000 keeps the host's reasons out of
meaning). The exception's type, message and traceback are the host's record
(`HostRecords.failures`, the store's `call_failures`; docs/spec/trace.md "Store"). Here they are
placed under the fact that closed the call: its Reply, or the Stop that closed it with the reply
that had arrived (a failure no fact closes, the run halted first, is listed at the end).
"""

from __future__ import annotations

from typing import Any, Sequence

from flowrt.data.facts import Reply, Stop
from flowrt.history.history_view import iso_time

__all__ = ["closing_facts", "details_text", "failure_lines"]


def closing_facts(facts: Sequence[Any]) -> dict[str, int]:
    """call id -> the number of the fact that closed it with a reply (`records`: StoredFact-likes
    with `.n` and `.fact`)."""
    out: dict[str, int] = {}
    for r in facts:
        f = r.fact
        if type(f) is Reply:
            out.setdefault(f.id, r.n)
        elif type(f) is Stop:
            for c in f.closed:
                if c.has_reply:
                    out.setdefault(c.call, r.n)
    return out


def failure_lines(failure) -> list[str]:
    """One failure's evidence as lines: what was raised and when, then its traceback."""
    when = iso_time(failure.at) or "an unknown time"
    again = f", attempt {failure.attempt}" if failure.attempt > 1 else ""
    head = f"{failure.exc_type}: {failure.message}" if failure.message else failure.exc_type
    return [f"raised {head} (at {when}{again}; the host's record, not history)"] + [
        line for line in failure.traceback.rstrip("\n").split("\n")
    ]


def details_text(text: str, records: Sequence[Any], failures: dict[str, list]) -> str:
    """The text form of a history (`to_text(records)`) with each failed call's evidence indented
    under the fact that closed it."""
    if not failures:
        return text
    closers = closing_facts(records)
    under: dict[int, list] = {}
    left = []
    for call, fs in failures.items():
        n = closers.get(call)
        if n is None:
            left += fs
        else:
            under.setdefault(n, []).extend(fs)
    lines = text.rstrip("\n").split("\n") if text else []
    width = len(str(records[-1].n)) if records else 1
    pad = " " * (width + 2) + "│ "
    out = []
    for line in lines:
        out.append(line)
        first = line.split(None, 1)[0] if line.strip() else ""
        if first.isdigit() and int(first) in under:
            for fl in under.pop(int(first)):
                out += [pad + x for x in failure_lines(fl)]
    for fl in left + [f for fs in under.values() for f in fs]:
        out.append(f"{fl.call}: no fact closed it")
        out += [pad + x for x in failure_lines(fl)]
    return "\n".join(out) + "\n"
