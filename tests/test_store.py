"""The store, on SQLite and on PostgreSQL: runs, appending under a lease, verify, redact, archive, host records."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import cbor2
import pytest

import flowrt as rt
from flowrt.history import trace as T
from flowrt.data.facts import Call, Checkpoint, Choice, Closed, Completed, End, Faulted, Reply, Start, Stop
from flowrt.history.store import (
    CallNotOpen,
    HistoryConflict,
    RunBusy,
    RunExists,
    SqliteRecorder,
    Store,
    StoreError,
    UnknownRun,
)

PROGRAM = "3f8a" * 16
SOURCES = {
    "main": "pub flow main(ticket: Text) -> Text !tool = planner.next(ticket)\n",
    "planner": "@tool pub flow next(t: Text) -> Result<Text, Text>\n",
}


def start(**kw):
    return Start(PROGRAM, "std@v1", 1, "main", ("Login fails",), ("ticket",), **kw)


@pytest.fixture
def store(store_url):
    """A store on each backend (tests/pg_helpers.py: SQLite, PostgreSQL)."""
    s = Store(store_url)
    yield s
    s.close()


def run_calls(store, run_id="r1", calls=3, checkpoint_at=None, end=True):
    store.history.create_run(run_id, start(), SOURCES, {"tools": "tools.py"})
    with SqliteRecorder(store, run_id) as rec:
        for i in range(1, calls + 1):
            if checkpoint_at == i:
                rec.record(Checkpoint(1, "main::work", (), ("Login fails", i)))
            cid = f"root#{i}" if checkpoint_at is None or i < checkpoint_at else f"c1:root#{i}"
            rec.record(Call(cid, "planner.next", "planner::next", ("Login fails", i)))
            rec.sync()
            rec.record(Reply(cid, rt.Ok(f"answer {i}")))
            rec.sync()
        if end:
            rec.record(End(Completed("done")))
            rec.sync()
    return store.history.records(run_id)


def test_default_store_is_dot_flow_runs_db_under_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Store() as s:
        assert s.path == tmp_path / ".flow" / "runs.db"
    assert (tmp_path / ".flow" / "runs.db").exists()


def test_a_run_records_its_facts_in_order_with_a_chain(store):
    recs = run_calls(store)
    assert [r.n for r in recs] == list(range(1, 9))
    assert [r.kind for r in recs] == ["Start"] + ["Call", "Reply"] * 3 + ["End"]
    assert recs[0].prev == "00" * 32
    assert all(b.prev == a.hash for a, b in zip(recs, recs[1:]))
    assert recs[3].fact == Call("root#2", "planner.next", "planner::next", ("Login fails", 2))
    info = store.host_records.load_run("r1")
    assert (info.state, info.facts, info.head, info.meta) == (
        "completed",
        8,
        recs[-1].hash,
        {"tools": "tools.py"},
    )
    assert store.history.verify("r1") == (
        True,
        "intact: facts 1-8 checked against the chain from Start; 2 module "
        f"sources and 0 blobs match their content hashes; head {recs[-1].hash}",
        recs[-1].hash,
    )


def test_sources_are_stored_by_content_and_read_back_per_run(store):
    store.history.create_run("a", start(), SOURCES)
    store.history.create_run("b", start(), SOURCES)
    assert store.history.sources("a") == SOURCES == store.history.sources("b")
    assert store.file.db.execute("SELECT count(*) FROM sources").fetchone()[0] == 2


def test_unknown_run_and_duplicate_run_are_refused_clearly(store):
    with pytest.raises(UnknownRun, match="unknown run 'nope'.*has no runs"):
        store.host_records.load_run("nope")
    store.history.create_run("r1", start(), {})
    with pytest.raises(UnknownRun, match="recent runs: r1"):
        store.history.facts("nope")
    with pytest.raises(RunExists, match="already exists"):
        store.history.create_run("r1", start(), {})


def test_run_states_paused_halted_completed_faulted_and_running(store):
    store.history.create_run("paused", start(), {})
    with SqliteRecorder(store, "paused") as rec:
        rec.record(Call("root#1", "human.ask", "human::ask", ("?",)))
        rec.sync()
        assert store.host_records.load_run("paused").state == "running"
    store.history.create_run("halted", start(), {})
    store.history.create_run("faulted", start(), {})
    with SqliteRecorder(store, "faulted") as rec:
        rec.record(End(Faulted("integer division by zero", "main.flow", 3, 7)))
    run_calls(store, "completed", calls=1)
    states = {r.id: (r.state, r.open_calls) for r in store.host_records.runs()}
    assert states == {
        "paused": ("paused", (("root#1", "human::ask"),)),
        "halted": ("halted", ()),
        "faulted": ("faulted", ()),
        "completed": ("completed", ()),
    }


def test_a_reply_waits_for_the_next_call_whose_fsynced_commit_carries_it(store, monkeypatch, store_url):
    store.history.create_run("r1", start(), {})
    other = Store(store_url)
    modes = []
    real = store.file.set_sync

    def spy(durable):
        modes.append(durable)
        return real(durable)

    monkeypatch.setattr(store.file, "set_sync", spy)
    with SqliteRecorder(store, "r1") as rec:
        modes.clear()
        rec.record(Choice("root", "root/1"))
        rec.record(Call("root#1", "a.b", "a::b", ()))
        rec.sync()
        assert (modes, other.host_records.load_run("r1").facts) == ([True], 3)
        rec.record(Reply("root#1", rt.Ok(1)))
        rec.sync()
        rec.record(Stop("root/1", "running", None, ()))
        rec.sync()
        rec.record(Checkpoint(1, "main::work", (), ()))
        rec.sync()
        assert (modes, other.host_records.load_run("r1").facts) == ([True], 3)  # buffered, nothing written
        rec.record(Call("root#2", "a.b", "a::b", ()))
        rec.sync()  # one fsynced commit carries the Reply, Stop and Checkpoint before the Call
        assert (modes, other.host_records.load_run("r1").facts) == ([True, True], 7)
        assert other.host_records.load_run("r1").open_calls == (("root#2", "a::b"),)
        rec.record(Reply("root#2", rt.Ok(2)))
        rec.record(End(Completed(1)))
        rec.sync()
        assert modes == [True, True, True]
    info = other.host_records.load_run("r1")
    assert (info.state, info.facts, info.open_calls, info.latest_checkpoint) == ("completed", 9, (), 6)
    assert store.history.verify("r1")[0]
    other.close()


def test_close_commits_what_waits_in_the_buffer_and_the_run_pauses(store, store_url):
    store.history.create_run("r1", start(), {})
    rec = SqliteRecorder(store, "r1")
    rec.record(Call("root#1", "a.b", "a::b", ()))
    rec.record(Call("root#2", "a.b", "a::b", ()))
    rec.sync()
    rec.record(Reply("root#1", rt.Ok(1)))
    rec.sync()
    assert store.host_records.load_run("r1").facts == 3
    rec.close()
    info = store.host_records.load_run("r1")
    assert (info.state, info.facts, info.open_calls) == ("paused", 4, (("root#2", "a::b"),))
    assert store.history.facts("r1", verify=True, whole=True)[-1] == Reply("root#1", rt.Ok(1))


def test_a_parked_call_commits_the_buffer_and_a_later_reply_clears_the_parked_record(store):
    store.history.create_run("r1", start(), {})
    with SqliteRecorder(store, "r1") as rec:
        rec.record(Call("root#1", "a.b", "a::b", ()))
        rec.record(Call("root#2", "a.b", "a::b", ()))
        rec.sync()
        rec.record(Reply("root#2", rt.Ok(2)))
        rec.call_pending("root#1")
        assert store.host_records.load_run("r1").facts == 4 and store.host_records.pending_calls("r1") == {
            "root#1"
        }
    with SqliteRecorder(store, "r1") as rec:  # another process, later: the parked call is answered
        rec.record(Reply("root#1", rt.Ok(1)))
    assert (
        store.host_records.pending_calls("r1") == set() and store.host_records.load_run("r1").open_calls == ()
    )


def test_lease_lost_under_the_writer_is_refused_by_the_guarded_update(store):
    store.history.create_run("r1", start(), {})
    rec = SqliteRecorder(store, "r1")
    store.file.db.execute("UPDATE runs SET owner='elsewhere:1:x' WHERE id='r1'")
    rec.record(Call("root#1", "a.b", "a::b", ()))
    with pytest.raises(RunBusy, match="no longer leased to this process"):
        rec.sync()
    assert store.file.db.execute("SELECT count(*) FROM facts").fetchone()[0] == 1


def test_group_commit_writes_nothing_until_sync(store, store_url):
    store.history.create_run("r1", start(), {})
    other = Store(store_url)
    with SqliteRecorder(store, "r1") as rec:
        rec.record(Call("root#1", "a.b", "a::b", ()))
        rec.record(Call("root#2", "a.b", "a::b", ()))
        assert other.host_records.load_run("r1").facts == 1
        rec.sync()
        assert other.host_records.load_run("r1").facts == 3
    other.close()


def test_verify_detects_a_changed_fact(store):
    run_calls(store)
    changed = T.encode_fact(Reply("root#2", rt.Ok("forged"))).data
    store.file.db.execute("UPDATE facts SET data=? WHERE run='r1' AND n=5", (changed,))
    ok, message, _ = store.history.verify("r1")
    assert not ok and message.startswith("fact 5 was changed")


def test_verify_detects_a_removed_fact(store):
    run_calls(store)
    store.file.db.execute("DELETE FROM facts WHERE run='r1' AND n=4")
    assert store.history.verify("r1")[:2] == (False, "fact 4 is missing")


def test_verify_detects_a_removed_last_fact(store):
    run_calls(store)
    store.file.db.execute("DELETE FROM facts WHERE run='r1' AND n=8")
    ok, message, _ = store.history.verify("r1")
    assert not ok and "facts 8-8 are missing" in message


def test_verify_detects_reordered_facts(store):
    run_calls(store)
    rows = dict(store.file.db.execute("SELECT n, data FROM facts WHERE run='r1'").fetchall())
    store.file.db.execute("UPDATE facts SET data=? WHERE run='r1' AND n=2", (rows[4],))
    store.file.db.execute("UPDATE facts SET data=? WHERE run='r1' AND n=4", (rows[2],))
    ok, message, _ = store.history.verify("r1")
    assert not ok and message.startswith("fact 2 was changed, removed or moved")


def test_verify_against_an_outside_head_detects_a_consistent_rewrite(store):
    recs = run_calls(store)
    outside_head = recs[-1].hash
    # Rewrite fact 3 and recompute every hash after it, stored head included.
    store.file.db.execute(
        "UPDATE facts SET data=? WHERE run='r1' AND n=3",
        (T.encode_fact(Reply("root#1", rt.Ok("forged"))).data,),
    )
    prev = bytes.fromhex(recs[1].hash)
    for n in range(3, 9):
        data = store.file.db.execute("SELECT data FROM facts WHERE run='r1' AND n=?", (n,)).fetchone()[0]
        prev = T.fact_hash(prev, data)
        store.file.db.execute("UPDATE facts SET hash=? WHERE run='r1' AND n=?", (prev, n))
    store.file.db.execute("UPDATE runs SET head=? WHERE id='r1'", (prev,))
    assert store.history.verify("r1")[0]  # internally consistent
    ok, message, _ = store.history.verify("r1", head=outside_head)
    assert not ok and "not in this history" in message


def test_verify_against_an_earlier_head_accepts_facts_recorded_after_it(store):
    recs = run_calls(store)
    ok, message, head = store.history.verify("r1", head=recs[4].hash.upper())
    assert ok and "fact 5" in message and "3 facts recorded after it" in message and head == recs[-1].hash


def test_a_store_or_run_of_an_unknown_data_version_is_refused_whole(store, store_url):
    run_calls(store)
    crafted = cbor2.dumps([T.START, 2, PROGRAM, "std@v2", "main", [], [], None, None])
    store.file.db.execute("UPDATE facts SET data=? WHERE run='r1' AND n=1", (crafted,))
    for read in (
        store.history.facts,
        store.history.records,
        store.history.verify,
        store.host_records.load_run,
        store.history.latest_checkpoint,
    ):
        with pytest.raises(T.UnsupportedDataVersion, match="run 'r1' was recorded with data version 2"):
            read("r1")
    store.file.db.execute("UPDATE runs SET data_version=2 WHERE id='r1'")
    assert [r.state for r in store.host_records.runs()] == ["unreadable (data version 2)"]
    with pytest.raises(T.UnsupportedDataVersion):
        SqliteRecorder(store, "r1")
    store.file.db.execute("UPDATE store_meta SET value='9' WHERE key='data_version'")
    with pytest.raises(T.UnsupportedDataVersion, match="store .* data version '9'"):
        Store(store_url)


def test_redact_replaces_a_value_with_a_hole_and_keeps_verify_intact(store, store_url):
    recs = run_calls(store)
    secret = recs[4]  # Reply root#2: Ok("answer 2")
    (digest,) = secret.values
    assert digest == T.value_digest(rt.Ok("answer 2"))
    assert store.history.redact("r1", digest) == 1
    after = store.history.records("r1")
    assert after[4].fact == Reply("root#2", rt.Hole(digest))
    assert after[3].fact == recs[3].fact and after[5].fact == recs[5].fact  # everything else shows
    assert [r.hash for r in after] == [r.hash for r in recs]
    assert store.history.verify("r1")[0]
    assert store.history.verify("r1", head=recs[-1].hash)[0]
    if store_url.startswith("postgresql://"):  # no live row holds it (old row versions: until VACUUM)
        rows = store.file.db.execute("SELECT data FROM facts UNION ALL SELECT data FROM blobs").fetchall()
        assert rows and not any(b"answer 2" in bytes(d) for (d,) in rows)
    else:
        assert b"answer 2" not in (store.path.read_bytes() + store.path.with_name("runs.db-wal").read_bytes())
    with pytest.raises(StoreError, match="holds no value with hash"):
        store.history.redact("r1", digest)


def test_large_values_are_stored_once(store):
    big = rt.list_of([f"line {i}" for i in range(400)])
    store.history.create_run("r1", start(), {})
    with SqliteRecorder(store, "r1") as rec:
        rec.record(Call("root#1", "a.b", "a::b", (big,)))
        rec.record(Call("root#2", "a.b", "a::b", (big, 1)))
    assert store.file.db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 1
    sizes = [len(d) for (d,) in store.file.db.execute("SELECT data FROM facts WHERE run='r1' AND n>1")]
    assert max(sizes) < 100
    assert store.history.facts("r1")[2].args == (big, 1)
    assert store.history.verify("r1")[0]


def test_redacting_a_large_value_drops_its_blob_only_when_unreferenced(store):
    big = "y" * 3000
    for run in ("a", "b"):
        store.history.create_run(run, start(), {})
        with SqliteRecorder(store, run) as rec:
            rec.record(Reply("root#1", rt.Ok(big)))
    digest = T.value_digest(rt.Ok(big))
    store.history.redact("a", digest)
    assert store.history.facts("b")[1].reply == rt.Ok(big)
    store.history.redact("b", digest)
    assert store.file.db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 0
    assert store.history.verify("a")[0] and store.history.verify("b")[0]


def test_archive_keeps_start_and_everything_from_the_latest_checkpoint(store):
    recs = run_calls(store, calls=4, checkpoint_at=3, end=False)
    cp = store.history.latest_checkpoint("r1")
    assert cp.n == 6 and cp.fact.function == "main::work"
    assert store.history.archive("r1").moved == 4  # facts 2..5
    hot = [n for (n,) in store.file.db.execute("SELECT n FROM facts WHERE run='r1' ORDER BY n")]
    assert hot == [1] + list(range(6, 11))
    assert [r.fact for r in store.history.records("r1")] == [r.fact for r in recs]  # still readable
    assert store.history.latest_checkpoint("r1").fact == cp.fact
    assert store.history.facts("r1", from_n=cp.n)[0] == cp.fact
    assert store.history.verify("r1")[0]
    # Deleting the archive: resume data and verify of the rest survive.
    assert store.history.archive("r1", delete=True).moved == 4
    assert [r.n for r in store.history.records("r1")] == [1] + list(range(6, 11))
    assert store.history.records("r1")[1].prev == recs[4].hash
    ok, message, _ = store.history.verify("r1")
    assert (
        ok
        and (
            "fact 1 (Start) checked from the zero hash and facts 6-10 against the chain from the kept "
            "hash of fact 5; facts 2-5 were archived and deleted: taken on trust from that kept hash"
        )
        in message
    )
    with SqliteRecorder(store, "r1") as rec:  # appending still chains on
        rec.record(End(Completed("done")))
    assert store.history.verify("r1")[0]


def test_a_second_writer_of_the_same_run_is_refused(store, store_url):
    store.history.create_run("r1", start(), {})
    other = Store(store_url)
    with SqliteRecorder(store, "r1"):
        with pytest.raises(RunBusy, match=r"run 'r1' is being run by process \d+"):
            SqliteRecorder(other, "r1")
    with SqliteRecorder(other, "r1") as rec:  # released: now it may
        rec.record(Call("root#1", "a.b", "a::b", ()))
    other.close()


def test_a_writer_in_another_live_process_is_refused_and_a_dead_ones_lease_taken_over(store, store_url):
    store.history.create_run("r1", start(), {})
    script = textwrap.dedent(f"""
        import os, sys
        from flowrt.history.store import Store, SqliteRecorder
        rec = SqliteRecorder(Store({store_url!r}), "r1")
        print("leased", flush=True)
        if sys.argv[1] == "die":
            os._exit(0)
        sys.stdin.readline()
    """)
    holder = subprocess.Popen(
        [sys.executable, "-c", script, "hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "leased"
        with pytest.raises(RunBusy, match=f"process {holder.pid}"):
            SqliteRecorder(store, "r1")
        assert store.host_records.load_run("r1").state == "running"
    finally:
        holder.communicate("\n")
    dead = subprocess.run([sys.executable, "-c", script, "die"], capture_output=True, text=True)
    assert dead.stdout.strip() == "leased"
    assert store.host_records.load_run("r1").state == "halted"
    with SqliteRecorder(store, "r1") as rec:
        rec.record(Call("root#1", "a.b", "a::b", ()))
    assert store.history.verify("r1")[0]


def test_appending_refuses_when_the_head_moved_under_the_writer(store):
    store.history.create_run("r1", start(), {})
    rec = SqliteRecorder(store, "r1")
    store.file.db.execute("UPDATE runs SET n=2, head=? WHERE id='r1'", (bytes(32),))
    rec.record(Call("root#1", "a.b", "a::b", ()))
    with pytest.raises(HistoryConflict, match="changed under this process"):
        rec.sync()
    assert store.file.db.execute("SELECT count(*) FROM facts").fetchone()[0] == 1


def test_nothing_recorded_is_ever_rewritten(store):
    run_calls(store, end=False)
    store.file.db.execute("UPDATE runs SET n=2 WHERE id='r1'")  # pretend the head were older
    store.file.db.execute(
        "UPDATE runs SET head=(SELECT hash FROM facts WHERE run='r1' AND n=2) WHERE id='r1'"
    )
    with SqliteRecorder(store, "r1") as rec:
        rec.record(Call("root#9", "a.b", "a::b", ()))  # a Call: sync() commits it at once
        with pytest.raises(HistoryConflict, match="refusing to rewrite recorded history"):
            rec.sync()
        with pytest.raises(StoreError, match="failed"):
            rec.record(Reply("root#10", rt.Ok(0)))
    assert store.history.facts("r1")[4] == Reply("root#2", rt.Ok("answer 2"))


def test_record_reply_delivers_to_an_open_call_only(store):
    store.history.create_run("r1", start(), {})
    with SqliteRecorder(store, "r1") as rec:
        rec.record(Call("c1:root#2", "human.ask", "human::ask", ("Which version?",)))
    assert store.host_records.load_run("r1").state == "paused"
    with pytest.raises(CallNotOpen, match="call root#7 is not open in run 'r1' \\(open calls: c1:root#2\\)"):
        store.history.record_reply("r1", "root#7", rt.Ok("x"))
    rec = store.history.record_reply("r1", "c1:root#2", rt.Ok("Safari 17.4"))
    assert (rec.n, rec.fact) == (3, Reply("c1:root#2", rt.Ok("Safari 17.4")))
    info = store.host_records.load_run("r1")
    assert info.open_calls == () and info.state == "halted"
    assert store.history.verify("r1")[0]


def test_stop_closes_open_calls(store):
    store.history.create_run("r1", start(), {})
    with SqliteRecorder(store, "r1") as rec:
        rec.record(Call("root/1#1", "web.search", "web::search", ("q",)))
        rec.record(Call("root/2#1", "docs.search", "docs::search", ("q",)))
        rec.record(Reply("root/2#1", rt.Ok("hit")))
        rec.record(Stop("root/1", "running", None, (Closed("root/1#1"),)))
    assert store.host_records.load_run("r1").open_calls == ()


def test_checkpoint_by_number_and_bindings_are_host_records(store):
    run_calls(store, calls=4, checkpoint_at=3)
    assert store.history.checkpoint("r1", 1).n == 6
    with pytest.raises(StoreError, match="no checkpoint 2"):
        store.history.checkpoint("r1", 2)
    store.host_records.record_binding("r1", "planner::next", "tools.py:next_step")
    assert store.host_records.bindings("r1") == {"planner::next": "tools.py:next_step"}
    assert all(r.kind != "Binding" for r in store.history.records("r1"))


def test_an_ended_run_is_not_written_again(store):
    run_calls(store, calls=1)
    with pytest.raises(StoreError, match="already ended \\(completed\\)"):
        SqliteRecorder(store, "r1")
