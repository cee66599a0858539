"""A run's record (its `runs` row): read strictly, shown as `RunInfo`, and its lease.

The record names what the run's Start names (program, std, entry, fork parent), how far its
chain reaches (`n`, `head`), its latest checkpoint and archive marker, its state, the host's JSON
(`meta`) and the lease (`owner`) of the one process that may append to it. A store file is anyone's
to edit, so a record is refused whole (`BrokenHistory`) when a column does not hold what the store
writes there, and a run whose record or Start names another data version is refused
(`UnsupportedDataVersion`) by every read but the listing (flowrt.history.host_records).

Leases: `owner_token()` names this process ("host:pid:token"); `owner_alive` tells whether the
process a lease names may still run (on another host: assumed so).
"""
from __future__ import annotations

import json
import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Optional

from flowrt.history import trace as T
from flowrt.history.store_errors import BrokenHistory, UnknownRun


@dataclass(frozen=True, slots=True)
class RunInfo:
    id: str
    created: float
    state: str  # running | paused | halted | completed | faulted | "unreadable (data version N)" | "corrupt (its run record)"
    program: str
    std: str
    data_version: int
    entry: str
    parent: Optional[str]
    from_checkpoint: Optional[int]
    facts: int  # number of the last fact
    head: str  # chain hash of the last fact (hex)
    latest_checkpoint: Optional[int]  # fact number
    archived_through: int
    open_calls: tuple[tuple[str, str], ...]  # (call id, tool id), in call order
    owner: Optional[str]
    meta: dict = field(default_factory=dict)


def corrupt_run_info(run_id) -> RunInfo:
    """How the listing shows a run whose record is corrupt (every other read of it is refused)."""
    return RunInfo(str(run_id), 0.0, "corrupt (its run record)", "", "", T.DATA_VERSION, "",
                   None, None, 0, "", None, 0, (), None)


def run_row(file, run_id: str, check_version: bool = True) -> dict:
    """The run's record as a dict of its columns, checked (`file`: the StoreFile; the caller holds
    its lock). UnknownRun when there is none; with `check_version`, a run of another data version
    (its record or its Start) is refused."""
    db = file.db
    cur = db.execute("SELECT * FROM runs WHERE id=?", (run_id,))
    row = cur.fetchone()
    if row is None:
        known = [r[0] for r in db.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 5")]
        hint = f" (recent runs: {', '.join(map(str, known))})" if known else " (the store has no runs)"
        raise UnknownRun(f"unknown run {run_id!r} in {file.path}{hint}")
    r = dict(zip([d[0] for d in cur.description], row))
    if type(r["data_version"]) is not int:
        raise BrokenHistory(f"run {run_id!r}: its run record is corrupt (data_version holds "
                            f"{type(r['data_version']).__name__}); refusing to use it")
    if r["data_version"] == T.DATA_VERSION:
        check_run_row(r)
    if not check_version:
        return r
    if r["data_version"] != T.DATA_VERSION:
        raise T.UnsupportedDataVersion(r["data_version"], where=f"run {run_id!r}")
    start = db.execute("SELECT data FROM facts WHERE run=? AND n=1", (run_id,)).fetchone()
    if start is not None:
        try:
            version = T.start_data_version(start[0])
        except T.TraceError as e:
            raise BrokenHistory(f"run {run_id!r}: fact 1 is corrupt: {e}; refusing to use its history") from None
        if version != T.DATA_VERSION:
            raise T.UnsupportedDataVersion(version, where=f"run {run_id!r}")
    return r


def run_info(db, r: dict) -> RunInfo:
    """The RunInfo of a run record `r` (from `run_row`), with its open calls (a host record)."""
    calls = tuple(db.execute(
        "SELECT call, tool_id FROM open_calls WHERE run=? ORDER BY n", (r["id"],)).fetchall())
    if any(type(c) is not str or type(t) is not str for c, t in calls):  # a host record is anyone's too
        raise BrokenHistory(f"run {r['id']!r}: its record of open calls is corrupt (a call or Tool "
                            f"id that is not text); refusing to use it")
    state = r["state"]
    if r["data_version"] != T.DATA_VERSION:
        state = f"unreadable (data version {r['data_version']})"
    elif state == "running" and (r["owner"] is None or not owner_alive(r["owner"])):
        state = "halted"  # the process ended without releasing the run (a crash)
    return RunInfo(
        r["id"], r["created"], state, r["program"], r["std"], r["data_version"], r["entry"],
        r["parent"], r["from_checkpoint"], r["n"], r["head"].hex(), r["latest_checkpoint"],
        r["archived_through"], calls, r["owner"], json.loads(r["meta"]),
    )


# The `runs` columns every reader relies on, and what each must hold (a store file is anyone's to
# edit: a record that does not fit is refused naming the run, never half-read).
_RUN_COLUMNS = (
    ("state", (str,)), ("program", (str,)), ("std", (str,)), ("entry", (str,)), ("n", (int,)),
    ("head", (bytes,)), ("archived_through", (int,)), ("created", (int, float)),
    ("parent", (str, type(None))), ("from_checkpoint", (int, type(None))),
    ("latest_checkpoint", (int, type(None))), ("archived_hash", (bytes, type(None))),
    ("owner", (str, type(None))), ("meta", (str,)),
)
_STATES = frozenset({"running", "paused", "halted", "completed", "faulted"})
_META_KEYS = {"entry_module": str, "entry_decl": str, "parent": str, "commits": dict}


def check_run_row(r: dict) -> None:
    """Refuse a run record (`runs` row) whose columns do not hold what the store writes there."""
    def corrupt(why: str) -> BrokenHistory:
        return BrokenHistory(f"run {r.get('id')!r}: its run record is corrupt ({why}); refusing to use it")

    for col, types in _RUN_COLUMNS:
        if type(r.get(col)) not in types:
            raise corrupt(f"{col} holds {type(r.get(col)).__name__}")
    if r["state"] not in _STATES:
        raise corrupt(f"state {r['state'][:20]!r}")
    if r["n"] < 1 or len(r["head"]) != 32 or (r["latest_checkpoint"] is not None and not 1 < r["latest_checkpoint"] <= r["n"]):
        raise corrupt("its fact count, head or latest checkpoint is out of range")
    try:
        meta = json.loads(r["meta"])
    except (ValueError, RecursionError):
        raise corrupt("meta is not JSON") from None
    if type(meta) is not dict or any(k in meta and type(meta[k]) is not t for k, t in _META_KEYS.items()):
        raise corrupt("meta is not the host's JSON object")


# ---- leases ---------------------------------------------------------------------------------------

def owner_token() -> str:
    """The lease token of this process: "host:pid:token"."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def owner_alive(owner: str) -> bool:
    """Whether the process named by a lease may still be running (other hosts: assume so)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_owner(owner: str) -> str:
    """A lease as a person reads it: "process 123 on host"."""
    host, _, rest = owner.partition(":")
    return f"process {rest.partition(':')[0]} on {host}"
