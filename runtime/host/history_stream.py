"""`flow2py history` as text or JSON Lines, written as it is read (docs/spec/trace.md, "Reading a
long history"): the facts in batches, the output in pieces, a history of any length in the memory
of one batch."""

from __future__ import annotations

import sqlite3
from typing import Iterator

from flowrt.history.history_store import BATCH
from flowrt.history.history_view import jsonl_lines, text_lines
from flowrt.history.store import Store, StoreError
from flowrt.history.trace import TraceError
from flowrt.host.refusal import fails_chain as _fails_chain, read, refused, same_program


def history_chunks(
    store: Store, prog, run_id: str, fmt: str = "text", *, batch: int = BATCH
) -> Iterator[str]:
    """`history` as text or JSON Lines, in pieces as it is read, so a history of any length is
    written in the memory of one batch (`batch` rows a query, `batch` lines a piece): the whole
    history is audited first (as `verify`: refused when its chain is broken, before anything is
    written), then read again and rendered, both in one snapshot of the store. The text
    format's columns come from the audit (the last fact's number, the longest id). A refusal
    raised part-way (the store unreadable after the audit) is a `Refused` like any other."""
    info = read(store.host_records.load_run, run_id)
    same_program(prog, info)
    it = _history_chunks(store, prog, run_id, fmt, batch)
    try:
        yield from it
    except (StoreError, TraceError, sqlite3.Error) as e:
        raise refused(e) from None
    finally:
        it.close()


def _history_chunks(store: Store, prog, run_id: str, fmt: str, batch: int) -> Iterator[str]:
    with store.history.reading():
        a = store.history.audit(run_id, batch=batch)
        if not a.ok:
            raise _fails_chain(run_id, a.message)
        records = store.history.iter_records(run_id, classes=prog.classes, batch=batch)
        if fmt == "json":
            lines = jsonl_lines(records)
        else:
            lines = text_lines(records, a.last, a.longest_id)
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) >= batch:
                yield "".join(chunk)
                chunk.clear()
        if chunk:
            yield "".join(chunk)
        elif fmt != "json" and not a.last:
            yield "\n"
