"""The runs page's filters and page taken in SQL on both backends (WorkerRecords.runs_page,
docs/spec/execution.md "Status"): on SQLite through Python functions, on PostgreSQL in its own
SQL (a lease's liveness read first, the host's JSON by a pg_temp function), the same ids in the
same order; checked against each run's own status, and the two backends against each other."""

from __future__ import annotations

import os
import socket


from flowrt.data.facts import Start
from flowrt.history import trace as T
from flowrt.host import worker_ops
from flowrt.host.worker import Worker
from http_helpers import support, support_bindings

TICKET = {"ticket": "Login fails on Safari"}
STATES = ("submitted", "running", "paused", "completed", "faulted", "halted")
#: the host's JSON of runs made outside a worker, and the name SQLite's page reads from each
METAS = (
    '{"path": "/somewhere/tool_run.flow"}',
    '{"path": "a.b.flow"}',
    '{"path": ".hidden"}',
    '{"path": "x/..flow"}',
    '{"path": "dir/"}',
    '{"path": "", "entry_module": "mod.main"}',
    '{"program": "named", "path": "p.flow"}',
    '{"program": 5, "path": "five.flow"}',
    '{"program": ""}',
)
#: host JSON no reader takes (the run is left out of a page once read): the SQL reads no name in it
CORRUPT = ("[1, 2]", "not json", '{"path": 3}')


def _store_of_every_state(store: str, corrupt: bool = False) -> Worker:
    """A worker (loop not running) over runs in every state a client sees: submitted, started,
    completed, faulted, paused, running under a live lease and under a dead one, cancelled, of two
    programs, and runs made outside a worker whose names come from the host's JSON."""
    w = Worker(store, {"support": support()}, support_bindings(), log=lambda _: None)
    for i in range(40):
        w.submit("support", input=TICKET, run_id=f"r{i:02d}")
    here = socket.gethostname()
    with w.store.file.transaction() as t:
        t.execute("UPDATE runs SET state='completed' WHERE id IN ('r01', 'r02', 'r03')")
        t.execute("UPDATE runs SET state='faulted' WHERE id='r04'")
        t.execute("UPDATE runs SET state='paused' WHERE id IN ('r05', 'r06')")
        t.execute("UPDATE runs SET state='running', owner=? WHERE id='r07'", (f"{here}:{os.getpid()}:x",))
        t.execute("UPDATE runs SET state='running', owner=? WHERE id='r08'", (f"{here}:999999999:x",))
        t.execute("UPDATE runs SET state='running', owner=? WHERE id='r15'", (f"{here}:999999999:y",))
        t.execute("UPDATE runs SET state='running', owner=? WHERE id='r16'", ("elsewhere:999999999:z",))
        t.execute("UPDATE runs SET state='running', owner=NULL WHERE id='r17'")
        t.execute("UPDATE worker_submissions SET started=1 WHERE run IN ('r09', 'r10', 'r08')")
        t.execute("INSERT INTO open_calls VALUES ('r09', 'root#1', 'human::ask', 2)")
        t.execute("INSERT INTO open_calls VALUES ('r08', 'root#1', 'human::ask', 2)")
        t.execute("UPDATE worker_submissions SET program='other' WHERE run IN ('r11', 'r12')")
    for i in (13, 14, 7):
        w.cancel(f"r{i:02d}")
    start = Start("p" * 64, "std@v1", T.DATA_VERSION, "main", (), ())
    for i, meta in enumerate(METAS + (CORRUPT if corrupt else ())):
        w.store.history.create_run(f"m{i:02d}", start, {}, {"path": "x.flow"})
        with w.store.file.transaction() as t:
            t.execute("UPDATE runs SET meta=? WHERE id=?", (meta, f"m{i:02d}"))
    # runs created at one instant: the page orders them by their ids' bytes ("B" before "a")
    for rid in ("ax", "Bx", "_x"):
        w.submit("support", input=TICKET, run_id=rid)
    with w.store.file.transaction() as t:
        t.execute(
            "UPDATE runs SET created=(SELECT created FROM runs WHERE id='r20') WHERE id IN ('ax', 'Bx', '_x')"
        )
    return w


def _pages(w: Worker) -> dict:
    """Every filter's page (the raw ids WorkerRecords.runs_page picks), at a few limits and offsets."""
    rec, out = w.store.worker_records, {}
    for state in (None, *STATES):
        for program in (None, "support", "other", "named", "tool_run", "a.b", ".hidden", "x/.", "mod.main"):
            for limit, offset in ((None, 0), (50, 0), (2, 1), (5, 30)):
                out[state, program, limit, offset] = rec.runs_page(state, program, limit, offset)
    return out


def test_the_filters_and_page_in_sql_pick_what_each_runs_status_says_on_both_backends(store_url, monkeypatch):
    w = _store_of_every_state(store_url)
    try:
        assert w.store.worker_records.runs_page(None, None, 1) is not None  # taken in SQL
        ids = [r for (r,) in w.store.file.db.execute("SELECT id FROM runs")]
        everyone = []
        for r in ids:
            everyone.append(worker_ops.status(w.store, r))
        by_created = dict(w.store.file.db.execute("SELECT id, created FROM runs").fetchall())
        newest = sorted(everyone, key=lambda st: (by_created[st.run_id], st.run_id.encode()), reverse=True)
        assert {st.state for st in everyone} == set(STATES)
        reads = []
        real = w.store.host_records.load_run
        monkeypatch.setattr(w.store.host_records, "load_run", lambda r: reads.append(r) or real(r))
        for state in STATES:
            want = [st.run_id for st in newest if st.state == state]
            for limit, offset in ((50, 0), (2, 1)):
                reads.clear()
                got = [st.run_id for st in worker_ops.runs(w.store, state=state, limit=limit, offset=offset)]
                assert got == want[offset : offset + limit], (state, limit, offset)
                assert reads == got  # only the page's records are read
        for program in ("support", "other", "tool_run", "a.b", ".hidden", "named", "mod.main"):
            want = [st.run_id for st in newest if st.program == program]
            got = [st.run_id for st in worker_ops.runs(w.store, program=program, limit=50)]
            assert want and got == want, program
        assert [st.run_id for st in worker_ops.runs(w.store)] == [st.run_id for st in newest]
    finally:
        w.store.close()


def test_postgresql_pages_exactly_what_sqlite_pages_from_the_same_runs(pg_store_url, tmp_path):
    """The same runs made on both backends (the corrupt and odd host JSON too): every filter, limit
    and offset gives the same ids, in the same order."""
    stores = [
        _store_of_every_state(str(tmp_path / "runs.db"), True),
        _store_of_every_state(pg_store_url, True),
    ]
    try:
        lite, pg = (_pages(w) for w in stores)
        assert lite == pg
        assert lite[None, None, None, 0][:3] == ["m11", "m10", "m09"]
        assert lite["running", None, None, 0] and lite["halted", None, None, 0]
        assert lite[None, "x/.", None, 0] == [] and lite[None, "a.b", None, 0] == ["m01"]
    finally:
        for w in stores:
            w.store.close()


def test_a_postgresql_store_made_before_the_runs_index_gets_it_from_its_first_writer(pg_store_url):
    from flowrt.history.store import Store

    def indexes(store) -> set:
        rows = store.file.db.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
        return {r[0] for r in rows}

    with Store(pg_store_url) as store:
        assert "runs_by_created" in indexes(store)
        store.file.db.execute("DROP INDEX runs_by_created")
    with Store(pg_store_url, readonly=True) as store:  # a reader changes nothing
        assert "runs_by_created" not in indexes(store)
    with Store(pg_store_url) as store:
        assert "runs_by_created" in indexes(store)
