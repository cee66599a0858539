"""What the store's integrity checks check: `verify`'s audit of one run, the chain walks that
replay, resume and fork do over the facts they use before the ones they serve, and the rule for
how far `archive` may go.

docs/spec/trace.md ("Integrity: what is checked, what is taken on trust") is the description.
Nothing here decodes a value with a program's classes: facts are read as plain CBOR (their
skeletons, kinds and ids), blobs and module sources by their bytes. The functions take the
store's history (a `flowrt.history.history_store.HistoryStore`) and read it through its reads
(`run_row`, `rows`, `hash_of`, `blob`, `source_rows`) and its file's connection (the caller holds
the lock); they return the reason something is broken as text, and the store raises it as
`BrokenHistory`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import blake3
import cbor2

from flowrt.history import strict as S
from flowrt.history import trace as T


def _span(a: int, b: int) -> str:
    return f"facts {a}-{b}" if b > a else f"fact {a}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


# ---- single facts and records -------------------------------------------------------------------


def skeleton_parts(data: bytes) -> tuple[list, bytes, list[bytes]]:
    """(item, skeleton, blob digests) of a stored fact in one parse: `item` is the fact array
    with its value slots replaced by their digests, `skeleton` its encoding (what the chain
    covers), and the digests of the blobs its slots refer to."""
    item = T._raw(data)
    refs = []
    try:
        for c, i in T._slot_places(item):
            slot = c[i]
            if type(slot) is list and len(slot) == 2 and slot[0] == T.BLOB and type(slot[1]) is bytes:
                refs.append(slot[1])
            c[i] = T._digest(slot)
    except (IndexError, TypeError, KeyError) as e:
        raise T.TraceError(f"corrupt {T.KIND_NAMES[item[0]]} fact: {e}") from None
    return item, cbor2.dumps(item), refs


def marker_problem(r: dict) -> Optional[str]:
    """What is wrong with a run's archive marker on its own (None: no marker, or a sound one).
    Facts 2..archived_through left the hot table; archived_hash is the chain hash of the last."""
    k, kept = r["archived_through"], r["archived_hash"]
    if not k and kept is None:
        return None
    if type(k) is not int or k < 2:
        return f"the archive marker ends at fact {k!r}, which is not a fact after Start"
    if type(kept) is not bytes or len(kept) != 32:
        return f"the archive marker (facts 2-{k}) keeps no hash of fact {k}"
    if k >= r["n"]:
        return (
            f"the archive marker ends at fact {k}, but the run records {r['n']} facts: an archived "
            f"range ends just before a Checkpoint"
        )
    return None


def marker_not_at_checkpoint(r: dict, kind: str) -> str:
    k = r["archived_through"]
    return (
        f"the archive marker ends at fact {k}, but fact {k + 1} is a {kind}, not a Checkpoint: "
        f"facts are archived only up to a checkpoint"
    )


def start_mismatch(r: dict, item: Any) -> Optional[str]:
    """Whether the run's record names what its Start names (program, std, entry, fork parent);
    `item`: fact 1's raw array. The host compares programs with the record, so it must agree with
    the chain."""
    if type(item) is not list or len(item) < 9 or item[0] != T.START:
        return "fact 1 is not a Start"
    for name, i in (("program", 2), ("std", 3), ("entry", 4), ("parent", 7), ("from_checkpoint", 8)):
        if item[i] != r[name]:
            return f"the run's record names {name} {r[name]!r}, but its Start (fact 1) names {item[i]!r}"
    return None


def source_problem(module: str, digest: Any, text: Any) -> Optional[str]:
    """Why a stored module source cannot be served (None: its text hashes to its key)."""
    shown = digest.hex() if type(digest) is bytes else repr(digest)
    if text is None:
        return f"the source of module {module!r} (blake3 {shown}) is missing from the store"
    try:
        ok = type(text) is str and blake3.blake3(text.encode("utf-8")).digest() == digest
    except UnicodeEncodeError:
        ok = False
    if not ok:
        return f"the source of module {module!r} (blake3 {shown}) was changed: its stored text does not hash to it"
    return None


def blob_problem(history, digest: bytes, n: int) -> Optional[str]:
    row = history.file.db.execute("SELECT data FROM blobs WHERE hash=?", (digest,)).fetchone()
    if row is None:
        return (
            f"fact {n} refers to blob {digest.hex()}, which the store does not hold (lost: a "
            f"redaction replaces the reference by a hole)"
        )
    if type(row[0]) is not bytes or blake3.blake3(row[0]).digest() != digest:
        return f"fact {n} refers to blob {digest.hex()}, whose stored bytes were changed (they do not hash to it)"
    return None


def parked_calls(history, data: bytes) -> list[str]:
    """The call ids of the parked tasks a stored Checkpoint's arguments hold (read as plain CBOR,
    no class needed; a blob is read checked, ChangedBlob otherwise; a hole holds none)."""
    item = T._raw(data)
    out: list[str] = []
    if item[0] != T.CHECKPOINT or len(item) < 5 or type(item[4]) is not list:
        raise T.TraceError("corrupt history: not a Checkpoint fact")
    for slot in item[4]:
        if type(slot) is list and len(slot) == 2 and slot[0] == T.BLOB and type(slot[1]) is bytes:
            slot = history.blob(slot[1])
        if type(slot) is not bytes:
            continue  # a hole, or a blob lost
        try:
            stack = [S.loads(slot)]  # strictly: no tag decoded into a host object (flowrt.history.strict)
        except S.StrictError as e:
            raise T.TraceError(f"corrupt value encoding: {e}") from None
        while (
            stack
        ):  # every value is an array [code, ...] or a plain item; a parked task is [17, task, call, ...]
            x = stack.pop()
            if type(x) is list and x:
                if x[0] == T.PARKED:
                    if len(x) > 2 and type(x[2]) is str:
                        out.append(x[2])
                else:
                    stack.extend(x[1:])
    return out


def reply_rows(history, run_id: str, call_id: str, before_n: int) -> list[tuple[int, bytes]]:
    """(n, stored bytes) of the Replies to `call_id` recorded before fact `before_n`, hot or
    archived, latest first."""
    needle = cbor2.dumps(call_id)  # the id as the fact's CBOR holds it: a cheap pre-filter
    rows = history.file.db.execute(
        "SELECT n, data FROM archived_facts WHERE run=? AND n<? AND kind=? AND instr(data, ?) > 0 UNION ALL "
        "SELECT n, data FROM facts WHERE run=? AND n<? AND kind=? AND instr(data, ?) > 0 ORDER BY n DESC",
        (run_id, before_n, T.REPLY, needle, run_id, before_n, T.REPLY, needle),
    ).fetchall()
    out = []
    for n, data in rows:
        if type(data) is not bytes:
            continue
        try:
            item = T._raw(data)
        except T.TraceError:
            continue  # not a Reply to this call: the chain check of whoever uses it says more
        if item[0] == T.REPLY and len(item) > 1 and item[1] == call_id:
            out.append((n, data))
    return out


def walk(history, run_id: str, r: dict, lo: int, hi: int) -> Optional[str]:
    """Check the chain over facts lo..hi without decoding a value: each held once, in order,
    hashing on from the stored hash of fact lo - 1 to the stored hash of fact hi, which is where
    the caller's own check of the facts after hi begins. So a fact lo..hi that a read uses is
    covered by the same chain as the facts it serves. None when it holds, else why not."""
    if hi < lo:
        return None
    prev = history.hash_of(run_id, lo - 1, r)
    if prev is None:
        return f"the hash of fact {lo - 1}, before fact {lo}, is not kept"
    expected = lo
    for n, _kind, data, h in history.iter_rows(run_id, lo, hi):
        if type(n) is not int or type(data) is not bytes:
            return f"fact {n!r} is corrupt: its stored row does not hold a number and bytes"
        if n != expected:
            return f"fact {n} appears twice" if n < expected else f"fact {expected} is missing"
        try:
            prev = T.fact_hash(prev, data)
        except T.TraceError as e:
            return f"fact {n} is corrupt: {e}"
        if prev != h:
            return f"fact {n} was changed, removed or moved: its content and position do not match its hash"
        expected = n + 1
    if expected != hi + 1:
        return f"fact {expected} is missing"
    return None


# ---- verify ---------------------------------------------------------------------------------------


@dataclass
class Audit:
    ok: bool
    message: str
    head: str  # hex: the chain's hash as computed up to where the audit stopped
    run: dict = field(default_factory=dict)
    checkpoints: list[int] = field(default_factory=list)  # fact numbers of the Checkpoints held
    last: int = 0  # the number of the last fact walked
    longest_id: int = 0  # the longest call or task id a fact names (the text format's id column)


@dataclass
class _Walk:
    """How far `audit`'s walk over a run's facts got: the chain hash up to there (`prev`), the
    next fact number expected, whether it crossed a deleted archived range (`gap`), the
    Checkpoints seen, the blobs referred to (digest -> first fact), the longest call or task
    id, and, when a head is given (`target`), the number of the fact whose hash it is (`at`).
    What it keeps grows with the Checkpoints and the blobs, not with the facts."""

    prev: bytes = T.ZERO_HASH
    expected: int = 1
    gap: bool = False
    checkpoints: list[int] = field(default_factory=list)
    blobs: dict[bytes, int] = field(default_factory=dict)
    target: Optional[bytes] = None
    at: Optional[int] = None
    longest_id: int = 0


def audit(history, run_id: str, head: Optional[str] = None, *, batch: Optional[int] = None) -> Audit:
    """`Store.history.verify` of one run: every fact the store holds checked against the chain
    (from the zero hash, and across a deleted archived range from the kept hash, which must end
    just before a Checkpoint), the run's record against its facts, every blob a fact refers to
    and every module source against its content hash. The message says what was checked and
    what was taken on trust. The facts are read `batch` rows a query (`iter_rows`) and checked
    as they come: a run of any length is audited in the memory of one batch. The caller holds
    a snapshot of the store (`file.snapshot()`)."""
    r = history.run_row(run_id)
    rows = history.iter_rows(run_id, **({} if batch is None else {"batch": batch}))
    w = _Walk()
    if head is not None:
        try:
            w.target = bytes.fromhex(head.strip().lower())
        except ValueError:
            w.target = None
    sources = history.source_rows(run_id)
    why = (
        marker_problem(r)
        or _walk_chain(r, rows, w)
        or _record_problem(r, w)
        or _content_problem(history, w.blobs, sources)
    )
    if not why and w.gap and w.checkpoints:
        why = _lost_carried_reply(history, run_id, w.checkpoints[-1], batch)
    last = w.expected - 1
    if why:
        return Audit(False, why, w.prev.hex(), r, last=last, longest_id=w.longest_id)
    checked = _checked_text(history, run_id, last, r["archived_through"] if w.gap else 0)
    checked += f"; {_count(len(sources), 'module source')} and {_count(len(w.blobs), 'blob')} match their content hashes"
    message = f"intact: {checked}; head {w.prev.hex()}"
    if head is not None:
        at = w.at
        if at is None:
            return Audit(
                False,
                f"the given head {head.strip().lower()} is not in this history: facts were "
                f"changed, removed or reordered",
                w.prev.hex(),
                r,
                w.checkpoints,
                last,
                w.longest_id,
            )
        if at != last:
            message = (
                f"intact up to the given head (fact {at}); {last - at} facts recorded after it; "
                f"{checked}; head {w.prev.hex()}"
            )
    return Audit(True, message, w.prev.hex(), r, w.checkpoints, last, w.longest_id)


#: The kinds whose second field is the call or task id the text format's id column shows.
_ID_KINDS = frozenset((T.CALL, T.REPLY, T.CHOICE, T.STOP))


def _walk_chain(r: dict, rows, w: _Walk) -> Optional[str]:
    """Walk every fact held, in order, against the chain, noting in `w` how far it got and what
    it saw; None when every fact holds, else why not."""
    k, kept = r["archived_through"], r["archived_hash"]
    prev, expected, gap = w.prev, w.expected, False
    checkpoints, blobs, target, at, longest = w.checkpoints, w.blobs, w.target, w.at, w.longest_id
    b3 = blake3.blake3
    id_kinds = _ID_KINDS
    why = None
    for n, kind_col, data, h in rows:
        if type(n) is not int or type(data) is not bytes or type(h) is not bytes:
            why = f"fact {n!r} is corrupt: its stored row does not hold a number, bytes and a hash"
            break
        if n != expected:
            if n < expected:
                why = f"fact {n} appears twice"
                break
            if expected == 2 and k and n == k + 1:
                prev, gap = kept, True
            else:
                why = f"fact {expected} is missing"
                break
        try:
            item, skel, refs = skeleton_parts(data)
        except T.TraceError as e:
            why = f"fact {n} is corrupt: {e}"
            break
        kind = item[0]
        if b3(prev + skel).digest() != h:
            why = f"fact {n} was changed, removed or moved: its content and position do not match its hash"
            break
        if kind != kind_col or n == 1 or kind == T.START or (k and k <= n <= k + 1):  # else nothing to check
            why = _fact_problem(r, n, kind, kind_col, item, h)
            if why:
                break
        if kind == T.CHECKPOINT:
            checkpoints.append(n)
        elif kind in id_kinds and len(item[1]) > longest:
            longest = len(item[1])
        for d in refs:
            blobs.setdefault(d, n)
        prev, expected = h, n + 1
        if h == target:
            at = n
    w.prev, w.expected, w.gap, w.at, w.longest_id = prev, expected, gap, at, longest
    return why


def _fact_problem(r: dict, n: int, kind: int, kind_col: Any, item: list, h: bytes) -> Optional[str]:
    """What is wrong with fact `n` (of a chain that holds up to it) where it stands: its kind
    against the store's index, Start only first (and naming what the run's record names), the
    archive marker ending just before a Checkpoint on a kept hash that matches."""
    if kind != kind_col:
        return f"fact {n} is a {T.KIND_NAMES[kind]}, but the store's index lists it as kind {kind_col!r}"
    if n == 1:
        return start_mismatch(r, item)
    if kind == T.START:
        return f"fact {n} is a second Start"
    k = r["archived_through"]
    if k:
        if n == k + 1 and kind != T.CHECKPOINT:
            return marker_not_at_checkpoint(r, T.KIND_NAMES[kind])
        if n == k and h != r["archived_hash"]:
            return f"the kept hash of fact {k} (the archive marker) does not match the chain"
    return None


def _record_problem(r: dict, w: _Walk) -> Optional[str]:
    """The run's record against the facts walked: its fact count, head and latest checkpoint."""
    last = w.expected - 1
    if last != r["n"]:
        return f"facts {last + 1}-{r['n']} are missing (the run records {r['n']} facts)"
    if w.prev != r["head"]:
        return "the run's stored head does not match the chain"
    latest = w.checkpoints[-1] if w.checkpoints else None
    if r["latest_checkpoint"] != latest:
        return f"the run's latest-checkpoint marker names fact {r['latest_checkpoint']!r}, but its " + (
            f"latest Checkpoint is fact {latest}" if latest else "history holds no Checkpoint"
        )
    return None


def _content_problem(history, blobs: dict[bytes, int], sources: list) -> Optional[str]:
    """Every blob a fact refers to, and every module source, against its content hash."""
    for d, n in blobs.items():
        why = blob_problem(history, d, n)
        if why:
            return why
    for module, digest, text in sources:
        why = source_problem(module, digest, text)
        if why:
            return why
    return None


def _checked_text(history, run_id: str, last: int, deleted_through: int) -> str:
    """Which facts were checked against the chain, from where, and which were taken on trust."""
    held, lo, hi = history.file.db.execute(
        "SELECT count(*), min(n), max(n) FROM archived_facts WHERE run=?", (run_id,)
    ).fetchone()
    from_archive = f" ({_span(lo, hi)} read from the archive table)" if held else ""
    if not deleted_through:
        return f"{_span(1, last)} checked against the chain from Start{from_archive}"
    k = deleted_through
    return (
        f"fact 1 (Start) checked from the zero hash and {_span(k + 1, last)} against the chain from "
        f"the kept hash of fact {k}{from_archive}; facts 2-{k} were archived and deleted: taken on "
        f"trust from that kept hash"
    )


def _lost_carried_reply(history, run_id: str, latest: int, batch: Optional[int]) -> Optional[str]:
    """After a deleted archived range: a call the latest checkpoint carries that is neither open
    (the host's record) nor answered or closed by a fact the store holds had its reply deleted,
    and a resume could not finish its task. The facts are read again, in batches; only the
    calls the checkpoint carries are kept."""
    data = next(history.iter_rows(run_id, latest, latest))[2]
    try:
        calls = parked_calls(history, data)
    except T.TraceError as e:
        return f"fact {latest} is corrupt: {e}"
    if not calls:
        return None
    open_ = {c for (c,) in history.file.db.execute("SELECT call FROM open_calls WHERE run=?", (run_id,))}
    left = {c for c in calls if c not in open_}
    more = {} if batch is None else {"batch": batch}
    for _n, kind, d, _h in history.iter_rows(run_id, **more):
        if not left:
            break
        if kind == T.REPLY or kind == T.STOP:
            item = T._raw(d)
            if kind == T.REPLY:
                left.discard(item[1])
            elif len(item) > 4 and type(item[4]) is list:
                left.difference_update(c[0] for c in item[4] if type(c) is list and c)
    for c in calls:
        if c in left:
            return (
                f"the checkpoint at fact {latest} carries call {c}, which is not open, yet no fact the "
                f"store holds answers it: its reply was deleted with the archived facts"
            )
    return None


# ---- archive ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Archived:
    """What `Store.history.archive` did: how many facts left the hot table (`moved`; deleted with
    `deleted`), the archive marker after it (`through`: facts 2..through are archived), the
    checkpoint the archived range ends before (`checkpoint`, a fact number), the run's latest
    checkpoint (`latest`), and the replies (call id, fact) recorded before the latest checkpoint
    that it carries, which keep the archived range from reaching it (`held`)."""

    moved: int
    deleted: bool
    through: int
    checkpoint: Optional[int]
    latest: Optional[int]
    held: tuple[tuple[str, int], ...] = ()


def archive_limit(history, run_id: str, a: Audit) -> tuple[Optional[int], Optional[int], tuple]:
    """(checkpoint the archive may reach, latest checkpoint, held replies): the latest Checkpoint
    fact at or before every fact a resume from the latest checkpoint reads, so facts before it
    can go, even deleted, without a resume or replay ever needing one of them."""
    if not a.checkpoints:
        return None, None, ()
    latest = a.checkpoints[-1]
    data = next(history.iter_rows(run_id, latest, latest))[2]
    held = []
    for c in parked_calls(history, data):
        rows = reply_rows(history, run_id, c, latest)
        if rows:
            held.append((c, rows[0][0]))
    first_needed = min([n for _, n in held], default=latest)
    reach = [c for c in a.checkpoints if c <= first_needed]
    return (reach[-1] if reach else None), latest, tuple(sorted(held, key=lambda x: x[1]))
