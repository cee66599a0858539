"""Rendering history: JSON Lines (the conformance export), the seed's text notation, HTML."""

from __future__ import annotations

import importlib.util
import json

import pytest

import flowrt as rt
from flowrt.history import trace as T
from flowrt.data.facts import (
    Call,
    Checkpoint,
    Choice,
    Closed,
    Completed,
    End,
    Faulted,
    ParkedTask,
    Reply,
    Start,
    Stop,
)
from flowrt.history.history_view import fact_text, to_html, to_json_objects, to_jsonl, to_text
from flowrt.history.store import SqliteRecorder, Store

from _driver_progs import Action, Ask, Done, Report, Resolved, Search  # the seed's support types
from repo_paths import CONFORMANCE


@rt.record("main::Note", fields=("who", "text"))
class Note(rt.Record):
    __slots__ = ("who", "text")


#: this module's program: its classes decode what the store holds
CLASSES = rt.class_table(Action, Report, Note)

TICKET = "Login fails on Safari"
HIT = "SameSite=None requires Secure ..."
ASK = "Which Safari version does the customer use?"
DONE = "Enable Secure on the session cookie; ..."


def support_facts():
    """The seed's support-ticket example, as the runtime would record it."""
    L = rt.list_of
    return [
        Start("3f8a" * 16, "std@v1", 1, "main", (TICKET,), ("ticket",)),
        Call("root#1", "planner.next", "planner::next", (TICKET, L([]))),
        Reply("root#1", rt.Ok(Search("safari login cookie"))),
        Call("root/1#1", "web.search", "web::search", ("safari login cookie",)),
        Call("root/2#1", "docs.search", "docs::search", ("safari login cookie",)),
        Reply("root/2#1", rt.Ok(HIT)),
        Choice("root", "root/2"),
        Stop("root/1", "running", None, (Closed("root/1#1"),)),
        Checkpoint(1, "main::work", (), (TICKET, L([HIT]), 2)),
        Call("c1:root#1", "planner.next", "planner::next", (TICKET, L([HIT]))),
        Reply("c1:root#1", rt.Ok(Ask(ASK))),
        Call("c1:root#2", "human.ask", "human::ask", (ASK,)),
        Reply("c1:root#2", rt.Ok("Safari 17.4")),
        Call("c1:root#3", "planner.next", "planner::next", (TICKET, L([HIT, "Safari 17.4"]))),
        Reply("c1:root#3", rt.Ok(Done(DONE))),
        End(Completed(Resolved(DONE))),
    ]


#: these two compare against the shared suite's own expected.jsonl; golden/history/support checks the
#: same history inside the project (test_history_golden.py)
NEEDS_SHARED_SUITE = pytest.mark.skipif(
    not (CONFORMANCE / "compare.py").exists(),
    reason=f"compares with the shared conformance suite, which is not beside this checkout: {CONFORMANCE}",
)


def _compare_module():
    spec = importlib.util.spec_from_file_location("conformance_compare", CONFORMANCE / "compare.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@NEEDS_SHARED_SUITE
def test_jsonl_export_of_the_seed_example_matches_the_conformance_file(tmp_path):
    out = tmp_path / "history.jsonl"
    out.write_text(to_jsonl(support_facts()), encoding="utf-8")
    assert _compare_module().main(str(CONFORMANCE / "support" / "expected.jsonl"), str(out)) is None


@NEEDS_SHARED_SUITE
def test_jsonl_export_from_the_store_matches_the_conformance_file(tmp_path):
    facts = support_facts()
    with Store(tmp_path / "runs.db") as store:
        store.history.create_run("support-1", facts[0], {"main": "..."})
        with SqliteRecorder(store, "support-1") as rec:
            for f in facts[1:]:
                rec.record(f)
                rec.sync()
        store.history.archive("support-1")  # facts 2-8 leave the hot table; the export still shows them
        out = tmp_path / "history.jsonl"
        out.write_text(to_jsonl(store.history.records("support-1", classes=CLASSES)), encoding="utf-8")
        assert to_jsonl(store.history.records("support-1", classes=CLASSES)) == to_jsonl(facts)
    assert _compare_module().main(str(CONFORMANCE / "support" / "expected.jsonl"), str(out)) is None


def test_jsonl_keys_per_kind():
    objs = to_json_objects(support_facts())
    assert objs[0] == {
        "n": 1,
        "kind": "Start",
        "hash": objs[0]["hash"],
        "prev": "00" * 32,
        "program": "3f8a" * 16,
        "std": "std@v1",
        "data_version": 1,
        "entry": "main",
        "input": '{ ticket: "Login fails on Safari" }',
        "values": [T.value_digest(TICKET)],
    }
    assert objs[1]["tool_id"] == "planner::next" and "type_args" not in objs[1]
    assert objs[8]["type_args"] == [] and objs[8]["function"] == "work"
    assert objs[15]["end"] == 'Completed(Resolved("Enable Secure on the session cookie; ..."))'
    assert all(len(o["hash"]) == 64 for o in objs)


def test_jsonl_renders_fork_stop_problems_generic_calls_and_faults():
    facts = [
        Start("ab" * 32, "std@v1", 1, "main", (), (), parent="run-7", from_checkpoint=3),
        Call("root#1", "store.get", "store::get", (1,), ("Int",)),
        Reply("root#1", rt.Err(rt.Failed(rt.Unknown("x")))),
        Reply("root#2", rt.Err(rt.Unknown("process ended while the call was out"))),
        Stop(
            "root/1", "finished", Note("ann", "hi"), (Closed("root/1#1", rt.Ok(3), True), Closed("root/1#2"))
        ),
        End(Faulted("integer division by zero", "main.flow", 12, 5)),
    ]
    objs = to_json_objects(facts)
    assert (objs[0]["parent"], objs[0]["from_checkpoint"], objs[0]["input"]) == ("run-7", 3, "{}")
    assert objs[1]["type_args"] == ["Int"]
    assert objs[2]["reply"] == 'Err(Failed(Unknown("x")))'
    assert objs[3]["reply"] == 'Err(Unknown("process ended while the call was out"))'
    assert objs[4]["value"] == 'Note { who: "ann", text: "hi" }'
    assert objs[4]["closed"] == [{"call": "root/1#1", "reply": "Ok(3)"}, {"call": "root/1#2", "reply": None}]
    assert objs[5]["end"] == "Faulted(main.flow:12:5: integer division by zero)"
    assert "values" not in objs[5]
    for line in to_jsonl(facts).splitlines():
        json.loads(line)


def test_text_follows_the_seed_notation():
    text = to_text(support_facts())
    lines = text.splitlines()
    assert len(lines) == 16
    assert lines[1] == ' 2  root#1     Call        planner.next("Login fails on Safari", [])'
    assert lines[6] == " 7  root       Choice      picked root/2"
    assert lines[7] == " 8  root/1     Stop        closed root/1#1 with no reply"
    assert (
        lines[8]
        == ' 9             Checkpoint  work("Login fails on Safari", ["SameSite=None requires Secure ..."], 2)'
    )
    assert lines[12] == '13  c1:root#2  Reply       Ok("Safari 17.4")'
    assert lines[15].startswith("16             End         Completed(Resolved(")
    assert lines[0].startswith(" 1             Start       program=3f8a3f8a3f8a  std@v1")
    assert 'input={ ticket: "Login fails on Safari" }' in lines[0]


def test_text_marks_archived_gaps_and_cuts_long_content(tmp_path):
    facts = support_facts()
    with Store(tmp_path / "runs.db") as store:
        store.history.create_run("r", facts[0], {})
        with SqliteRecorder(store, "r") as rec:
            for f in facts[1:12]:
                rec.record(f)
        store.history.archive("r", delete=True)
        text = to_text(store.history.records("r", classes=CLASSES), width=30)
    lines = text.splitlines()
    assert "… facts 2–8 archived" in lines[1]
    assert lines[2].startswith(" 9")
    assert all(len(line) < 60 for line in lines)


def test_holes_render_as_hole_with_their_hash(tmp_path):
    facts = support_facts()[:3]
    with Store(tmp_path / "runs.db") as store:
        store.history.create_run("r", facts[0], {})
        with SqliteRecorder(store, "r") as rec:
            for f in facts[1:]:
                rec.record(f)
        digest = T.value_digest(TICKET)
        assert store.history.redact("r", digest) == 2  # the input and the first argument
        recs = store.history.records("r", classes=CLASSES)
        assert store.history.verify("r")[0]
    objs = to_json_objects(recs)
    assert objs[0]["input"] == f"{{ ticket: <hole blake3:{digest}> }}"
    assert objs[1]["args"] == [f"<hole blake3:{digest}>", "[]"]
    assert objs[2]["reply"] == 'Ok(Search("safari login cookie"))'
    assert f"<hole blake3:{digest}>" in to_text(recs)


def test_parked_tasks_in_a_checkpoint_render_readably():
    cp = Checkpoint(
        2,
        "main::loop",
        (),
        (
            rt.list_of([ParkedTask("root/1", "c1:root/1#1", "Received", (3,))]),
            ParkedTask("root/2", "root/2#1", None),
        ),
    )
    assert (
        fact_text(cp) == "loop([<task root/1 on c1:root/1#1 as Received(3, …)>], <task root/2 on root/2#1>)"
    )


def test_html_is_self_contained_and_escaped():
    facts = [
        Start("ab" * 32, "std@v1", 1, "main", ("<script>alert('x')</script> & co",), ("t",)),
        End(Completed("</td><b>")),
    ]
    page = to_html(facts, title="run <1>")
    assert page.startswith("<!DOCTYPE html>") and "<script>" not in page and "</td><b>" not in page
    assert "&lt;script&gt;" in page and "run &lt;1&gt;" in page
    assert "http" not in page and "<link" not in page
    assert page.count("<tr class=") == 2
