"""The recorder's open_calls rows (the host's record of a run's calls with no reply yet) stay
exact while a run's replies close them in batches: a commit that closes every call with a row
deletes them in one statement, one that closes some deletes those only, and a later process's
recorder knows the rows an earlier one left."""

from __future__ import annotations

import flowrt as rt
from flowrt.data.facts import Call, Reply, Start
from flowrt.history.store import SqliteRecorder, Store


def _start():
    return Start("p" * 64, "std@v1", 1, "fan", (4,), ("n",))


def _rows(store, run="f"):
    return sorted(c for (c,) in store.file.db.execute("SELECT call FROM open_calls WHERE run=?", (run,)))


class _Deletes:
    """The DELETE statements run on open_calls (the connection's statement trace)."""

    def __init__(self, store):
        self.sql: list = []
        store.file.db.set_trace_callback(self._saw)

    def _saw(self, sql):
        if sql.lstrip().upper().startswith("DELETE FROM OPEN_CALLS"):
            self.sql.append(sql)


def _call(i):
    return Call(f"root/{i}#1", "t.echo", "t.echo", (i,), ())


def test_replies_closing_every_open_call_delete_the_rows_in_one_statement(tmp_path):
    store = Store(tmp_path / "runs.db")
    store.history.create_run("f", _start(), {})
    other = Store(tmp_path / "runs.db")  # a second run's rows must stay
    other.history.create_run("g", _start(), {})
    with SqliteRecorder(other, "g") as rec:
        rec.record(_call(9))
        rec.sync()
    other.close()
    with SqliteRecorder(store, "f") as rec:
        for i in range(4):
            rec.record(_call(i))
        rec.sync()
        assert _rows(store) == [f"root/{i}#1" for i in range(4)]
        deletes = _Deletes(store)
        for i in range(4):
            rec.record(Reply(f"root/{i}#1", rt.Ok(i)))
        rec.sync()
        assert _rows(store) == [] and _rows(store, "g") == ["root/9#1"]
        assert len(deletes.sql) == 1
    store.close()


def test_replies_closing_some_open_calls_leave_the_others_and_a_new_recorder_knows_them(tmp_path):
    path = tmp_path / "runs.db"
    store = Store(path)
    store.history.create_run("f", _start(), {})
    with SqliteRecorder(store, "f") as rec:
        for i in range(4):
            rec.record(_call(i))
        rec.sync()
        rec.record(Reply("root/1#1", rt.Ok(1)))
        rec.record(Reply("root/3#1", rt.Ok(3)))
        rec.sync()
        assert _rows(store) == ["root/0#1", "root/2#1"]
        # a Call and its Reply in one commit leave no row
        rec.record(_call(5))
        rec.record(Reply("root/5#1", rt.Ok(5)))
        rec.sync()
        assert _rows(store) == ["root/0#1", "root/2#1"]
    assert store.host_records.load_run("f").state == "paused"  # closed with calls open
    assert [c for c, _ in store.host_records.load_run("f").open_calls] == ["root/0#1", "root/2#1"]
    store.close()
    store = Store(path)  # another process's recorder: the rows the first one left
    with SqliteRecorder(store, "f") as rec:
        rec.record(_call(6))
        rec.record(Reply("root/0#1", rt.Ok(0)))
        rec.sync()
        assert _rows(store) == ["root/2#1", "root/6#1"]
        deletes = _Deletes(store)
        rec.record(Reply("root/2#1", rt.Ok(2)))
        rec.record(Reply("root/6#1", rt.Ok(6)))
        rec.sync()
        assert _rows(store) == [] and len(deletes.sql) == 1
    store.close()


def test_a_round_of_more_calls_than_a_chunk_has_a_row_each_with_its_fact_number(tmp_path):
    # 70 Calls in one commit: two chunks of 32 rows a statement, then 6 rows one at a time
    store = Store(tmp_path / "runs.db")
    store.history.create_run("f", _start(), {})
    with SqliteRecorder(store, "f") as rec:
        for i in range(70):
            rec.record(_call(i))
        rec.sync()
        rows = store.file.db.execute(
            "SELECT call, tool_id, n FROM open_calls WHERE run='f' ORDER BY n"
        ).fetchall()
        assert rows == [(f"root/{i}#1", "t.echo", i + 2) for i in range(70)]
        for i in range(0, 70, 2):
            rec.record(Reply(f"root/{i}#1", rt.Ok(i)))
        rec.sync()
        assert _rows(store) == sorted(f"root/{i}#1" for i in range(1, 70, 2))
    store.close()
