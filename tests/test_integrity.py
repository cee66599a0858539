"""Integrity covers everything a run reads (docs/spec/trace.md, "Integrity: what is checked, what
is taken on trust"): blobs and module sources are checked against their content hashes on every
read, replay and resume check the chain over every fact they use (replies carried across a
checkpoint included), verify says which facts it checked and which it took on trust, and archive
stops at a checkpoint and never removes a fact a resume still reads. Each test tampers with the
SQLite store directly, as a hostile holder of the store would."""

from __future__ import annotations

import pytest

from flowrt.history import trace as T
from flowrt.data.facts import Reply, Start
from flowrt.data.values import Ok
from tests.history_e2e_helpers import Cli

SVC = """\
@tool pub flow big(n: Int) -> Result<Text, Text>
@tool pub flow ask(q: Text) -> Result<Text, Text>
@tool pub flow read() -> Result<Text, Text>
@tool pub flow step(n: Int) -> Result<Int, Text>
"""

TOOLS = """\
from flowrt import bind, pending


@bind("svc.big")
def big(n):
    return {"Ok": "x" * n}


@bind("svc.ask")
def ask(q):
    return pending


@bind("svc.read")
def read():
    return {"Ok": "hi"}


@bind("svc.step")
def step(r):
    return pending if r == 3 else {"Ok": r}
"""

# A large reply (a blob), then a question left pending.
BIG = """\
use "./svc"

pub flow main(n: Int) -> Text !tool = match svc.big(n) {
    Ok(t) => match svc.ask("q") { Ok(a) => t ++ a, Err(_) => "no answer" },
    Err(_) => "none",
}
"""

# A loop whose tail call is a checkpoint candidate every round.
LOOP = """\
use "./svc"

pub flow main(n: Int) -> Int !tool = work(n, 0)

flow work(n: Int, acc: Int) -> Int !tool = if n == 0 { acc } else {
    match svc.step(n + 10) {
        Ok(x) => work(n - 1, acc + x),
        Err(_) => -1,
    }
}
"""

# A read parked across checkpoints (answered early, seed 000 "Checkpoints"), the rounds paused on
# round 3's step. AWAIT returns the read's message; STOP never awaits it, so returning stops the
# finished read: a Stop found finished whose reply was recorded before the latest checkpoint.
PUMP = """\
use "std@v1/task"
use "./svc"

pub type Msg { Received(Result<Text, ToolProblem<Text>>) }

pub flow main(limit: Int) -> Text !tool = {
    let read = task.spawn(flow() = Received(svc.read()))
    pump(read, 1, limit)
}

flow pump(pending: task.Task<Msg>, round: Int, limit: Int) -> Text !tool = match svc.step(round) {
    Ok(n) => if n >= limit { END } else { pump(pending, round + 1, limit) },
    Err(_) => "step failed",
}
"""
AWAIT = PUMP.replace("END", 'match task.await(pending) { Received(Ok(m)) => m, Received(Err(_)) => "none" }')
STOP = PUMP.replace("END", '"done"')


_STORE: list = []  # this test's store (the `backend` fixture): a SQLite path or a PostgreSQL URL


@pytest.fixture(autouse=True)
def backend(store_url):
    """Every test here runs on both backends (tests/pg_helpers.py)."""
    _STORE.append(store_url)
    yield store_url
    _STORE.clear()


def _cli(tmp_path, main: str) -> Cli:
    (tmp_path / "main.flow").write_text(main)
    (tmp_path / "svc.flow").write_text(SVC)
    (tmp_path / "tools.py").write_text(TOOLS)
    return Cli(tmp_path, _STORE[-1])


def _facts(cli, run_id="a"):
    return {f["n"]: f for f in cli.facts(run_id)}


def _hot(cli, run_id="a"):
    with cli.db() as db:
        return [n for (n,) in db.execute("SELECT n FROM facts WHERE run=? ORDER BY n", (run_id,))]


def _pump(tmp_path, main=AWAIT):
    """The pump paused on c2:root#1 with the read's Reply recorded between its two checkpoints:
    (cli, number of that Reply, number of the latest checkpoint)."""
    cli = _cli(tmp_path, main)
    r = cli.run("a", '{"limit": 5}', "--checkpoint-every", "1")
    assert r.exit_code == 3 and "c2:root#1" in r.stdout, r.stdout + r.stderr
    facts = _facts(cli)
    read = next(n for n, f in facts.items() if f["kind"] == "Reply" and f["id"] == "root/1#1")
    cps = [n for n, f in facts.items() if f["kind"] == "Checkpoint"]
    assert cps[0] < read < cps[-1]  # answered after the first checkpoint, carried by the latest
    return cli, read, cps[-1]


# ---- blobs and module sources ----------------------------------------------------------------------


def test_a_changed_blob_is_refused_by_verify_replay_history_and_resume_naming_fact_and_blob(tmp_path):
    cli = _cli(tmp_path, BIG)
    assert cli.run("a", '{"n": 200000}').exit_code == 3
    facts = _facts(cli)
    head = facts[max(facts)]["hash"]
    reply = next(n for n, f in facts.items() if f["kind"] == "Reply")
    digest = facts[reply]["values"][0]
    with cli.db() as db:
        assert (
            db.execute("SELECT count(*) FROM blobs WHERE hash=?", (bytes.fromhex(digest),)).fetchone()[0] == 1
        )
        # same length, one byte changed: nothing but the content hash can tell
        (data,) = db.execute("SELECT data FROM blobs WHERE hash=?", (bytes.fromhex(digest),)).fetchone()
        changed = bytes(data).replace(b"xxxx", b"xxyx", 1)
        assert changed != bytes(data)
        db.execute("UPDATE blobs SET data=? WHERE hash=?", (changed, bytes.fromhex(digest)))
    named = f"fact {reply} refers to blob {digest}"
    r = cli("verify", "a", "--head", head)
    assert r.exit_code == 6 and r.stdout.startswith("broken: ") and named in r.stdout, r.stdout
    assert "were changed" in r.stdout
    r = cli("replay", "a")
    assert r.exit_code == 1 and named in r.stderr and r.stdout == "", r.stdout + r.stderr
    r = cli("history", "a")
    assert r.exit_code == 1 and named in r.stderr
    r = cli.resume("a", "--reply", 'root#2={"Ok": "!"}')
    assert r.exit_code == 1 and named in r.stderr
    assert _hot(cli) == sorted(facts)  # nothing recorded


def test_a_lost_blob_breaks_verify_and_is_never_served_as_a_value(tmp_path):
    cli = _cli(tmp_path, BIG)
    assert cli.run("a", '{"n": 5000}').exit_code == 3
    facts = _facts(cli)
    reply = next(n for n, f in facts.items() if f["kind"] == "Reply")
    digest = facts[reply]["values"][0]
    with cli.db() as db:
        db.execute("DELETE FROM blobs WHERE hash=?", (bytes.fromhex(digest),))
    r = cli("verify", "a")
    assert (
        r.exit_code == 6
        and f"fact {reply} refers to blob {digest}, which the store does not hold" in r.stdout
    )
    r = cli("replay", "a")  # the value reads as a hole: the verdict says so rather than invent one
    assert r.exit_code == 3 and r.stdout.startswith("Incomplete:") and "hole" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "damage, says",
    [
        (
            "UPDATE sources SET text = text || ' ' WHERE hash=(SELECT hash FROM run_sources WHERE run='a' "
            "AND module='main')",
            "was changed: its stored text does not hash to it",
        ),
        (
            "DELETE FROM sources WHERE hash=(SELECT hash FROM run_sources WHERE run='a' AND module='main')",
            "is missing from the store",
        ),
    ],
)
def test_a_changed_or_missing_module_source_is_refused_naming_module_and_hash(tmp_path, damage, says):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 2}').exit_code == 0
    with cli.db() as db:
        digest = db.execute("SELECT hash FROM run_sources WHERE run='a' AND module='main'").fetchone()[0]
        db.execute(damage)
    named = f"the source of module 'main' (blake3 {digest.hex()}) {says}"
    r = cli("verify", "a")
    assert r.exit_code == 6 and named in r.stdout, r.stdout
    for cmd in (("replay", "a"), ("history", "a")):
        r = cli(*cmd)
        assert r.exit_code == 1 and named in r.stderr, r.stderr


# ---- replay and resume check every fact they use ---------------------------------------------------


def test_resume_and_replay_refuse_a_tampered_carried_reply_naming_it_and_record_nothing(tmp_path):
    cli, read, latest = _pump(tmp_path)
    forged = T.encode_fact(Reply("root/1#1", Ok("forged"))).data
    with cli.db() as db:
        db.execute("UPDATE facts SET data=? WHERE run='a' AND n=?", (forged, read))
    before = _hot(cli)
    r = cli.resume("a", "--reply", 'c2:root#1={"Ok": 9}')
    assert r.exit_code == 1 and f"fact {read} was changed, removed or moved" in r.stderr, r.stdout + r.stderr
    assert "forged" not in r.stdout and _hot(cli) == before
    r = cli("replay", "a")
    assert r.exit_code == 1 and f"fact {read} was changed" in r.stderr
    assert cli("verify", "a").exit_code == 6


def test_a_carried_reply_rewritten_with_its_own_hash_breaks_the_chain_at_the_next_fact(tmp_path):
    cli, read, latest = _pump(tmp_path)
    with cli.db() as db:
        prev = db.execute("SELECT hash FROM facts WHERE run='a' AND n=?", (read - 1,)).fetchone()[0]
        forged = T.encode_fact(Reply("root/1#1", Ok("forged"))).data
        db.execute(
            "UPDATE facts SET data=?, hash=? WHERE run='a' AND n=?", (forged, T.fact_hash(prev, forged), read)
        )
    r = cli.resume("a", "--reply", 'c2:root#1={"Ok": 9}')
    assert r.exit_code == 1 and f"fact {read + 1} was changed, removed or moved" in r.stderr, r.stderr
    assert cli("replay", "a").exit_code == 1


def test_replay_from_a_checkpoint_checks_the_start_it_does_not_serve(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 3}', "--checkpoint-every", "1").exit_code == 0
    assert cli("replay", "a").stdout.startswith("Matched")
    forged = T.encode_fact(Start("0" * 64, "std@v1", T.DATA_VERSION, "main", (3,), ("n",))).data
    with cli.db() as db:
        db.execute("UPDATE facts SET data=? WHERE run='a' AND n=1", (forged,))
    r = cli("replay", "a")
    assert r.exit_code == 1 and "fact 1 was changed, removed or moved" in r.stderr, r.stdout + r.stderr


def test_fork_refuses_a_checkpoint_whose_chain_to_the_head_is_broken(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 3}', "--checkpoint-every", "1").exit_code == 0
    facts = _facts(cli)
    first_cp = min(n for n, f in facts.items() if f["kind"] == "Checkpoint")
    late = max(n for n, f in facts.items() if f["kind"] == "Reply")
    with cli.db() as db:
        db.execute(
            "UPDATE facts SET data=(SELECT data FROM facts WHERE run='a' AND n=?) WHERE run='a' AND n=?",
            (late - 2, late),
        )
    r = cli("fork", "a", "--checkpoint", 1, "--tools", cli.d / "tools.py", "--run-id", "f")
    assert r.exit_code == 1 and f"fact {late} was changed" in r.stderr, r.stdout + r.stderr
    assert first_cp < late and "f " not in cli("runs").stdout  # no fork recorded


# ---- verify: what was checked, what was taken on trust; the archive marker ------------------------------


def test_verify_names_the_facts_it_checked_and_those_it_took_on_trust(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 4}', "--checkpoint-every", "1").exit_code == 0
    facts = _facts(cli)
    last, head = max(facts), facts[max(facts)]["hash"]
    cps = [n for n, f in facts.items() if f["kind"] == "Checkpoint"]
    r = cli("verify", "a")
    assert r.exit_code == 0 and r.stdout.startswith(
        f"intact: facts 1-{last} checked against the chain from Start;"
    )
    assert r.stdout.strip().endswith(f"head {head}")
    assert cli("archive", "a").exit_code == 0
    r = cli("verify", "a")
    assert (
        f"facts 1-{last} checked against the chain from Start (facts 2-{cps[-1] - 1} read from the archive table)"
        in r.stdout
    )
    r = cli("archive", "a", "--delete")
    assert r.exit_code == 0 and r.stdout.startswith(f"deleted facts 2-{cps[-1] - 1} of run a"), r.stdout
    k = cps[-1] - 1
    with cli.db() as db:
        modules = db.execute("SELECT count(*) FROM run_sources WHERE run='a'").fetchone()[0]
    r = cli("verify", "a")
    assert r.exit_code == 0 and r.stdout == (
        f"intact: fact 1 (Start) checked from the zero hash and facts {k + 1}-{last} against the chain from the "
        f"kept hash of fact {k}; facts 2-{k} were archived and deleted: taken on trust from that kept hash; "
        f"{modules} module sources and 0 blobs match their content hashes; head {head}\n"
    ), r.stdout
    assert cli("replay", "a").stdout.startswith("Matched")


def test_deleting_facts_of_a_run_without_checkpoint_and_setting_the_marker_is_a_broken_history(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 8}').exit_code == 0
    r = cli("archive", "a")
    assert r.exit_code == 0 and "has no checkpoint; nothing archived" in r.stdout
    with cli.db() as db:
        kept = db.execute("SELECT hash FROM facts WHERE run='a' AND n=10").fetchone()[0]
        db.execute("DELETE FROM facts WHERE run='a' AND n BETWEEN 2 AND 10")
        db.execute("UPDATE runs SET archived_through=10, archived_hash=? WHERE id='a'", (kept,))
    says = "the archive marker ends at fact 10, but fact 11 is a Reply, not a Checkpoint"
    r = cli("verify", "a")
    assert r.exit_code == 6 and says in r.stdout, r.stdout
    r = cli("replay", "a")
    assert r.exit_code == 1 and says in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize(
    "damage, says",
    [
        # facts 2-5 all held, but the marker does not end just before a Checkpoint (fact 6 is a Reply)
        (
            "UPDATE runs SET archived_through=5, archived_hash=(SELECT hash FROM facts WHERE run='a' AND n=5) "
            "WHERE id='a'",
            "the archive marker ends at fact 5, but fact 6 is a Reply, not a Checkpoint",
        ),
        (
            "UPDATE runs SET archived_through=3, archived_hash=(SELECT hash FROM facts WHERE run='a' AND n=2) "
            "WHERE id='a'",
            "the kept hash of fact 3 (the archive marker) does not match the chain",
        ),
        (
            "UPDATE runs SET latest_checkpoint=10 WHERE id='a'",
            "the run's latest-checkpoint marker names fact 10, but its latest Checkpoint is fact 13",
        ),
        (
            "UPDATE runs SET entry='work' WHERE id='a'",
            "the run's record names entry 'work', but its Start (fact 1) names 'main'",
        ),
        (
            "UPDATE facts SET kind=2 WHERE run='a' AND n=3",
            "fact 3 is a Reply, but the store's index lists it as kind 2",
        ),
    ],
)
def test_verify_refuses_a_store_record_that_disagrees_with_the_chain(tmp_path, damage, says):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 4}', "--checkpoint-every", "1").exit_code == 0
    kinds = {n: f["kind"] for n, f in _facts(cli).items()}
    assert (kinds[3], kinds[4], kinds[6], max(n for n, k in kinds.items() if k == "Checkpoint")) == (
        "Reply",
        "Checkpoint",
        "Reply",
        13,
    )
    with cli.db() as db:
        db.execute(damage)
    r = cli("verify", "a")
    assert r.exit_code == 6 and says in r.stdout, r.stdout


def test_archive_refuses_a_broken_history_and_moves_nothing(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 4}', "--checkpoint-every", "1").exit_code == 0
    with cli.db() as db:
        db.execute(
            "UPDATE facts SET data=(SELECT data FROM facts WHERE run='a' AND n=5) WHERE run='a' AND n=3"
        )
    before = _hot(cli)
    r = cli("archive", "a", "--delete")
    assert r.exit_code == 1 and "fact 3 was changed" in r.stderr and "refusing to archive" in r.stderr
    assert _hot(cli) == before


# ---- archive never removes what a resume reads ----------------------------------------------------------


def test_a_stop_of_a_task_answered_before_the_checkpoint_survives_deleting_the_archive(tmp_path):
    cli, read, latest = _pump(tmp_path, STOP)
    first_cp = min(n for n, f in _facts(cli).items() if f["kind"] == "Checkpoint")
    r = cli("archive", "a", "--delete")
    assert (
        r.exit_code == 0
        and f"up to its checkpoint at fact {first_cp}, not its latest (fact {latest})" in r.stdout
    )
    assert f"carries the reply to root/1#1 (fact {read})" in r.stdout
    assert read in _hot(cli) and 2 not in _hot(cli)
    r = cli.resume("a", "--reply", 'c2:root#1={"Ok": 9}')
    assert r.exit_code == 0 and r.stdout.strip() == '"done"', r.stdout + r.stderr
    stop = [f for f in cli.facts("a") if f["kind"] == "Stop"]
    assert [(s["task"], s["found"]) for s in stop] == [("root/1", "finished")]
    assert cli("replay", "a").stdout.strip() == "Matched"
    r = cli("verify", "a")
    assert (
        r.exit_code == 0 and f"facts 2-{first_cp - 1} were archived and deleted: taken on trust" in r.stdout
    )


def test_a_carried_reply_deleted_with_the_archive_is_a_broken_history_not_a_divergence(tmp_path):
    # What `archive --delete` did before it stopped at the checkpoint a resume needs.
    cli, read, latest = _pump(tmp_path, STOP)
    assert cli.resume("a", "--reply", 'c2:root#1={"Ok": 9}').exit_code == 0
    with cli.db() as db:
        kept = db.execute("SELECT hash FROM facts WHERE run='a' AND n=?", (latest - 1,)).fetchone()[0]
        db.execute("DELETE FROM facts WHERE run='a' AND n>1 AND n<?", (latest,))
        db.execute("UPDATE runs SET archived_through=?, archived_hash=? WHERE id='a'", (latest - 1, kept))
    says = f"the checkpoint at fact {latest} carries call root/1#1, which is not open"
    r = cli("verify", "a")
    assert r.exit_code == 6 and says in r.stdout, r.stdout
    r = cli("replay", "a")
    assert r.exit_code == 1 and "carries call root/1#1" in r.stderr, r.stdout + r.stderr


def test_archive_without_delete_also_stops_where_a_resume_reads_and_resume_completes(tmp_path):
    cli, read, latest = _pump(tmp_path, AWAIT)
    first_cp = min(n for n, f in _facts(cli).items() if f["kind"] == "Checkpoint")
    r = cli("archive", "a")
    assert r.exit_code == 0 and r.stdout.startswith(f"archived {first_cp - 2} fact(s) of run a"), (
        r.stdout + r.stderr
    )
    with cli.db() as db:
        archived = [n for (n,) in db.execute("SELECT n FROM archived_facts WHERE run='a' ORDER BY n")]
    assert archived == list(range(2, first_cp))
    r = cli.resume("a", "--reply", 'c2:root#1={"Ok": 9}')
    assert r.exit_code == 0 and r.stdout.strip() == '"hi"', r.stdout + r.stderr
    assert cli("replay", "a").stdout.strip() == "Matched"


def test_archive_does_not_trust_a_latest_checkpoint_pointer_moved_past_the_facts(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 4}').exit_code == 0  # no checkpoint at all
    with cli.db() as db:
        db.execute("UPDATE runs SET latest_checkpoint=6 WHERE id='a'")  # fact 6: a Call
    before = _hot(cli)
    r = cli("archive", "a", "--delete")
    assert r.exit_code == 1 and "latest-checkpoint marker names fact 6" in r.stderr, r.stdout + r.stderr
    assert "refusing to archive" in r.stderr and _hot(cli) == before


def test_a_fact_row_holding_text_instead_of_bytes_is_a_broken_history_for_verify(tmp_path):
    cli = _cli(tmp_path, LOOP)
    assert cli.run("a", '{"n": 2}').exit_code == 0
    with cli.db() as db:
        db.execute("UPDATE facts SET data='not cbor' WHERE run='a' AND n=3")
    r = cli("verify", "a")
    assert r.exit_code == 6 and "fact 3 is corrupt" in r.stdout, r.stdout


def test_the_call_of_a_parked_task_shown_after_a_checkpoint_is_checked_against_the_chain(tmp_path):
    cli = _cli(tmp_path, STOP)
    (tmp_path / "pending_read.py").write_text(TOOLS.replace('return {"Ok": "hi"}', "return pending"))
    r = cli.run("a", '{"limit": 5}', "--checkpoint-every", "1", tools="pending_read.py")
    assert r.exit_code == 3 and "root/1#1  svc.read()" in r.stdout, r.stdout + r.stderr
    facts = _facts(cli)
    call = next(n for n, f in facts.items() if f["kind"] == "Call" and f["id"] == "root/1#1")
    assert call < max(n for n, f in facts.items() if f["kind"] == "Checkpoint")
    from flowrt.data.facts import Call

    forged = T.encode_fact(Call("root/1#1", "svc.big", "svc::big", (10**6,))).data
    with cli.db() as db:
        db.execute("UPDATE facts SET data=? WHERE run='a' AND n=?", (forged, call))
    r = cli.resume("a", "--reply", 'c2:root#1={"Ok": 1}', tools="pending_read.py")
    assert r.exit_code == 1 and f"fact {call} was changed" in r.stderr and "svc.big" not in r.stdout, (
        r.stdout + r.stderr
    )
