"""What an operator is shown about runs: each open call of a paused run (`CallView`: its Tool,
arguments, the reply type it waits for and a reply that fits it), each run of a store
(`RunView`: state, program, entry, when it started, since when it is paused and on which Tools),
and how far a live run has got (`Progress`).

Everything here is read from the store's history and the host's records (when a run started,
when it was last released paused: flowrt.history.host_records); nothing is written. The CLI's
wording of these views is flow2py/cli_output.py's; docs/spec/execution.md ("What the command
line prints") is the rule.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from flowrt.data.decoding import decode
from flowrt.data.typedesc import DecodeError, T, TypeTextError, fields_of, parse_type_text, subst, type_text
from flowrt.data.values import Enum, Option, Record, Result, show
from flowrt.history import trace as TR
from flowrt.history.history_view import iso_time  # re-exported: the CLI and the pages show times so
from flowrt.history.store import Store
from flowrt.host.operations import run_state, store_exists

__all__ = [
    "STATES",
    "CallView",
    "Progress",
    "RunView",
    "call_views",
    "iso_time",
    "progress",
    "program_name",
    "reply_sample",
    "runs_view",
    "tool_name",
]

#: The states a run can be in (DESIGN's worker API): `flow2py runs --state` accepts each, even one
#: the store does not hold yet (a run `submitted` for a worker).
STATES = ("submitted", "running", "paused", "completed", "faulted", "halted")


@dataclass(frozen=True, slots=True)
class CallView:
    """An open call as an operator answers it. `args`: the arguments as Flow text (None when its
    Call fact is not at hand); `reply_type`: the Tool's declared result as Flow type text
    (`Result<Text, AskError>`, a generic Tool's at the type its Call records); `sample`: a JSON
    reply that fits that type (for the printed command), or None when none is known."""

    id: str
    tool: str
    args: Optional[tuple[str, ...]]
    reply_type: str
    sample: Any = None

    def text(self) -> str:
        """`human.ask("Which browser?")`, as history shows the call."""
        return self.tool if self.args is None else f"{self.tool}({', '.join(self.args)})"


def call_views(store: Store, prog, run_id: str, open_calls: Iterable) -> tuple[CallView, ...]:
    """The views of a paused run's open calls (`open_calls`: the driver's `OpenCall`s), their
    Tools found by the store's record of open calls and `prog` (a flowrt.host.Runnable)."""
    open_calls = list(open_calls)
    tool_ids = dict(store.host_records.load_run(run_id).open_calls)
    generic = [
        c.id
        for c in open_calls
        if (s := prog.tool_spec(tool_ids.get(c.id, ""))) is not None and s.type_params
    ]
    facts = store.history.calls.open_call_facts(run_id, generic, classes=prog.classes) if generic else {}
    out = []
    for c in open_calls:
        spec = prog.tool_spec(tool_ids.get(c.id, ""))
        desc = None
        if spec is not None and spec.result is not None:
            desc = _concrete(spec, facts.get(c.id), prog.classes)
        args = None if c.args is None else tuple(show(a) for a in c.args)
        tool = c.tool or (spec.name if spec is not None else "?")
        out.append(
            CallView(c.id, tool, args, type_text(desc) if desc is not None else "?", reply_sample(desc))
        )
    return tuple(out)


def _concrete(spec, call, classes):
    """The Tool's result descriptor, a generic Tool's at the type arguments its Call records."""
    if not spec.type_params:
        return spec.result
    if call is None or len(call.type_args) != spec.type_params:
        return None
    try:
        return subst(spec.result, tuple(parse_type_text(t, classes) for t in call.type_args))
    except (TypeTextError, TypeError):
        return None


# ---- a reply that fits -----------------------------------------------------------------------------

_PRIM_SAMPLES = {
    T.TEXT: "...",
    T.INT: 0,
    T.DECIMAL: "0",
    T.BOOL: True,
    T.UNIT: None,
    T.BYTES: "",
    T.DURATION: "1s",
}


def reply_sample(desc) -> Any:
    """A JSON value of type `desc` for an operator to edit (`{"Ok": "..."}` for
    `Result<Text, E>`), checked by admitting it; None when none could be made (a host token, a
    type with no finite value in reach)."""
    if desc is None:
        return None
    try:
        value = _sample(desc, 0)
        decode(desc, value)
    except (_NoSample, DecodeError, TypeError, RecursionError):
        return None
    return value


class _NoSample(Exception):
    pass


def _sample(d, depth: int) -> Any:
    if depth > 12:
        raise _NoSample()
    if d in _PRIM_SAMPLES:
        return _PRIM_SAMPLES[d]
    kind = type(d).__name__
    if kind in ("ListOf", "SetOf"):
        return []
    if kind == "DictOf":
        return {} if d.key == T.TEXT else []
    if kind == "TupleOf":
        return [_sample(x, depth + 1) for x in d.items]
    if kind != "Named":
        raise _NoSample()  # an Instant, a host token, a type variable
    cls = d.cls
    if cls is Result:
        return {"Ok": _sample(d.args[0], depth + 1)}
    if cls is Option:
        return "None"
    if cls.__dict__.get("__flow_opaque__"):
        raise _NoSample()
    if issubclass(cls, Record):
        return _payload(cls, d.args, depth)
    variants = cls.__dict__.get("__flow_variants__") if issubclass(cls, Enum) else None
    if not variants:
        raise _NoSample()
    for ctor, vc in variants.items():  # a constructor without payload first: the shortest reply
        if not vc.__flow_fields__:
            return ctor
    ctor, vc = next(iter(variants.items()))
    return {ctor: _payload(vc, d.args, depth)}


def _payload(cls, args, depth: int) -> Any:
    """A record's or a constructor's fields in the JSON form: an object by their Flow names, one
    positional field as it is, several as an array."""
    names, types = cls.__flow_field_names__, fields_of(cls, args)
    if cls.__flow_named__:
        return {name: _sample(t, depth + 1) for name, t in zip(names, types)}
    if len(types) == 1:
        return _sample(types[0], depth + 1)
    return [_sample(t, depth + 1) for t in types]


# ---- the runs of a store ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunView:
    """One run as `flow2py runs` lists it. `state` is the run's state (flowrt.history.host_records
    `RunInfo.state`); `state_text` its longer form (`paused on c1:root#2`); `started` and
    `paused_since` are POSIX times from the host's records (`paused_since` only while paused);
    `open_tools` the Tools of its open calls, in call order; `facts` the number of its last fact."""

    run_id: str
    state: str
    state_text: str
    program: str
    identity: str
    entry: str
    started: Optional[float]
    paused_since: Optional[float]
    open_calls: tuple[str, ...]
    open_tools: tuple[str, ...]
    facts: int
    parent: Optional[str] = None
    from_checkpoint: Optional[int] = None
    nested_in: Optional[tuple[str, str]] = None

    def to_json(self) -> dict:
        """The JSON object `flow2py runs --format json` prints for the run."""
        return {
            "run_id": self.run_id,
            "state": self.state,
            "program": self.program,
            "entry": self.entry,
            "started": iso_time(self.started),
            "paused_since": iso_time(self.paused_since),
            "open_tools": list(self.open_tools),
            "facts": self.facts,
        }


def tool_name(tool_id: str) -> str:
    """A Tool's name as programs write it, from its declaration identity: `human::ask` ->
    `human.ask`, `std@v1/clock::sleep` -> `clock.sleep` (a module is named by its last segment)."""
    module, sep, name = tool_id.rpartition("::")
    return f"{module.rsplit('/', 1)[-1]}.{name}" if sep else tool_id


def program_name(info) -> str:
    """The name a run's program is known by: the name the host gave it (`meta["program"]`, a
    worker's `NAME=`), else its entry file's stem, else its entry module."""
    meta = info.meta or {}
    name = meta.get("program")
    if type(name) is str and name:
        return name
    path = meta.get("path")
    if type(path) is str and path:
        return os.path.splitext(os.path.basename(path))[0]
    module = meta.get("entry_module")
    return module if type(module) is str and module else info.program[:12]


def runs_view(store: Store, *, state: Optional[str] = None, program: Optional[str] = None) -> list[RunView]:
    """Every run of the store, oldest first, as RunViews; `state` keeps the runs in that state
    (one of STATES), `program` those whose program has that name or whose identity starts with it."""
    records = store.host_records
    paused = records.paused_times()
    out = []
    for info in records.runs():
        name = program_name(info)
        if state is not None and info.state != state:
            continue
        if (
            program is not None
            and program != name
            and not (len(program) >= 4 and info.program.startswith(program))
        ):
            continue
        is_paused = info.state == "paused"
        out.append(
            RunView(
                info.id,
                info.state,
                run_state(info),
                name,
                info.program,
                info.entry,
                info.created or None,
                paused.get(info.id) if is_paused else None,
                tuple(c for c, _ in info.open_calls),
                tuple(tool_name(t) for _, t in info.open_calls) if is_paused else (),
                info.facts,
                info.parent,
                info.from_checkpoint,
                records.outer_of(info.id),
            )
        )
    return out


# ---- a live run's progress -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Progress:
    """How far the run this process drives has got: its id, the Call facts it holds, its open
    calls (both as the store has committed them)."""

    run_id: str
    calls: int
    open: int


class ProgressReader:
    """Reads, from a store of its own (read-only), the progress of the run this process holds the
    lease of (the lease names the process: flowrt.history.host_records.owner_token). Call facts
    are counted once each: a read counts only the facts added since the one before."""

    def __init__(self, path: Optional[str]):
        self.path = path
        self.store: Optional[Store] = None
        self.prefix = f"{socket.gethostname()}:{os.getpid()}:"
        self.run_id: Optional[str] = None
        self.seen, self.calls = 0, 0

    def read(self) -> Optional[Progress]:
        """The progress now, or None while this process holds no run (or the store is not there)."""
        if self.store is None:
            if not store_exists(self.path):
                return None
            self.store = Store(self.path, readonly=True)
        with self.store.file.lock:
            if self.run_id is None:
                self.run_id = self._held(self.store.file.db)
            if self.run_id is not None:
                return self._progress(self.store.file.db)
        # No run yet: opened again next time, as the store may have been opened while the run's
        # writer was still making it (a reader then reads its tables as empty stand-ins).
        self.close()
        return None

    def _held(self, db) -> Optional[str]:
        """The run this process holds the lease of: the earliest, as a nested run that a Tool of
        it started is held by this process too."""
        row = db.execute(
            "SELECT id FROM runs WHERE owner LIKE ? ESCAPE '\\' ORDER BY created, id LIMIT 1",
            (_like_prefix(self.prefix),),
        ).fetchone()
        return None if row is None else row[0]

    def _progress(self, db) -> Progress:
        row = db.execute("SELECT n FROM runs WHERE id=?", (self.run_id,)).fetchone()
        n = row[0] if row else self.seen
        if n > self.seen:
            self.calls += db.execute(
                "SELECT count(*) FROM facts WHERE run=? AND n>? AND n<=? AND kind=?",
                (self.run_id, self.seen, n, TR.CALL),
            ).fetchone()[0]
            self.seen = n
        (open_n,) = db.execute("SELECT count(*) FROM open_calls WHERE run=?", (self.run_id,)).fetchone()
        return Progress(self.run_id, self.calls, open_n)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None


def progress(path: Optional[str]) -> ProgressReader:
    """A reader of the progress of the run this process drives on the store at `path`."""
    return ProgressReader(path)


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
