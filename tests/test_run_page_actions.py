"""The run page's data as a worker serves it (GET /runs/{id}, flowrt.host.run_page; docs/spec/trace.md
"The run page", docs/spec/http.md): every call's host times and the Flow line that made it, linked
into the run's stored sources; the replay verdict on request with the diverging fact highlighted;
"fork from here" as a plain form that makes a new run for the worker, refusals in one line."""

from __future__ import annotations

import html
import json
import re
import sqlite3

import pytest
from starlette.testclient import TestClient

from flowrt.history import trace as T
from flowrt.history.store import Store
from flowrt.host import http_api
from http_helpers import running_worker, support, support_bindings, until

HTML = {"Accept": "text/html"}
TICKET = {"ticket": "Login fails on Safari"}
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def _api(worker, token=None):
    return TestClient(http_api.make_app(worker, token=token), raise_server_exceptions=False)


@pytest.fixture()
def worker(tmp_path):
    with running_worker(
        tmp_path / "runs.db", {"support": support()}, support_bindings(), checkpoint_every=5
    ) as w:
        yield w


@pytest.fixture()
def api(worker):
    with _api(worker) as c:
        yield c


def _paused(api, run_id: str = "s1", token=None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = api.post("/runs", json={"program": "support", "input": TICKET, "run_id": run_id}, headers=headers)
    assert r.status_code == 201, r.text
    until(lambda: api.get(f"/runs/{run_id}").json()["state"] == "paused", what=f"{run_id} to pause")


def _facts(api, run_id: str) -> list[dict]:
    return [json.loads(line) for line in api.get(f"/runs/{run_id}/history").text.splitlines()]


def _row(page: str, n: int) -> str:
    """The timeline row of fact `n`."""
    m = re.search(rf'<tr class="[^"]*" id="fact-{n}">.*?</tr>', page)
    assert m, f"no row for fact {n}"
    return m.group(0)


def test_every_call_shows_when_the_host_sent_it_and_its_reply_came_and_the_time_between(api):
    _paused(api)
    page = api.get("/runs/s1", headers=HTML).text
    assert "sent (host)" in page and "replied (host)" in page and "History itself records no times" in page
    for f in _facts(api, "s1"):
        if f["kind"] != "Call":
            continue
        cells = re.findall(r"<td>(.*?)</td>", _row(page, f["n"]))[-3:]
        assert re.fullmatch(ISO, cells[0]), (f["id"], cells)
        if f["id"] == "c1:root#2":  # open: sent, no reply yet
            assert cells[1:] == ["", ""]
        else:  # replied, or closed by the Stop of the race (root/1#1)
            assert re.fullmatch(ISO, cells[1]) and re.fullmatch(r"\d+ ms|\d+\.\d{3} s", cells[2]), cells


def test_the_worker_records_each_calls_times_and_site_in_the_hosts_records_not_in_history(api, worker):
    _paused(api)
    kept = worker.store.host_records.call_times("s1")
    calls = [f for f in _facts(api, "s1") if f["kind"] == "Call"]
    assert set(kept) == {f["id"] for f in calls}
    for f in calls:
        dispatched, replied, module, line = kept[f["id"]]
        assert module == "main" and type(line) is int and line > 0
        assert replied is None if f["id"] == "c1:root#2" else replied >= dispatched
    assert "dispatched" not in api.get("/runs/s1/history").text  # history itself holds no times


def test_each_call_links_to_the_flow_line_that_made_it_in_the_stored_sources(api, worker):
    _paused(api)
    page = api.get("/runs/s1", headers=HTML).text
    source = worker.store.history.sources("s1")["main"].splitlines()
    ask = next(f for f in _facts(api, "s1") if f.get("id") == "c1:root#2")
    link = re.search(r'<a class="mono" href="#(src-\d+-(\d+))">main\.flow:(\d+)</a>', _row(page, ask["n"]))
    assert link and link.group(2) == link.group(3)
    line = int(link.group(2))
    assert "human.ask(question)" in source[line - 1]
    target = re.search(
        rf'<span class="line called" id="{link.group(1)}"><span class="ln">{line}</span>(.*?)</span>', page
    )
    assert target and html.unescape(target.group(1)) == source[line - 1]
    assert page.index("<h2>Sources</h2>") > page.index("<h2>Checkpoints</h2>")
    assert len(re.findall(r'id="src-\d+-\d+"', page)) == len(source)  # only main.flow made calls


def test_the_replay_form_asks_for_the_verdict_and_the_page_shows_it_at_the_top(api):
    _paused(api)
    page = api.get("/runs/s1", headers=HTML).text
    assert '<form method="get" action=""><input type="hidden" name="replay" value="1">' in page
    page = api.get("/runs/s1?replay=1", headers=HTML).text
    verdict = re.search(r'<section class="verdict verdict-(\w+)" id="verdict">.*?<b>(.*?)</b>', page)
    assert verdict.groups() == (
        "Incomplete",
        "Incomplete: needs the reply to c1:root#2 (human.ask), which is not recorded",
    )
    assert page.index('id="verdict"') < page.index("<dl>")  # above the header
    assert ' diverged"' not in page


def _tamper_ask(path) -> int:
    """Make the recorded human.ask call ask another question, the chain re-hashed so it still
    verifies (as a changed program would leave it): the number of that Call."""
    store = Store(path)
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT n, kind, data FROM facts WHERE run='s1' ORDER BY n").fetchall()
        prev, at = T.ZERO_HASH, None
        for n, kind, data in rows:
            if kind == T.CALL:
                f = T.decode_fact(data, store.history.blob)
                if f.id == "c1:root#2":
                    at = n
                    data = T.encode_fact(T.Call(f.id, f.tool, f.tool_id, ("<b>Which browser?</b>",))).data
                    db.execute("UPDATE facts SET data=? WHERE run='s1' AND n=?", (data, n))
            prev = T.fact_hash(prev, data)
            db.execute("UPDATE facts SET hash=? WHERE run='s1' AND n=?", (prev, n))
        db.execute("UPDATE runs SET head=? WHERE id='s1'", (prev,))
        db.commit()
    finally:
        db.close()
        store.close()
    return at


def test_a_diverged_verdict_names_the_fact_and_the_timeline_highlights_it(api, worker):
    _paused(api)
    n = _tamper_ask(worker.store.path)
    page = api.get("/runs/s1?replay=1", headers=HTML).text
    verdict = re.search(
        r'<section class="verdict verdict-Diverged" id="verdict">.*?<b>(.*?)</b>(.*?)</p>', page
    )
    assert verdict, page[:2000]
    assert verdict.group(1).startswith(f"Diverged at fact {n}: ")
    assert f'<a href="#fact-{n}">see fact {n}</a>' in verdict.group(2)
    assert _row(page, n).startswith(f'<tr class="Call diverged" id="fact-{n}">')
    assert page.count(' diverged"') == 1
    assert "&lt;b&gt;Which browser?&lt;/b&gt;" in verdict.group(1) and "<b>Which" not in page


def test_each_checkpoint_has_a_fork_form_that_makes_a_run_for_the_worker_and_opens_its_page(api):
    _paused(api)
    page = api.get("/runs/s1", headers=HTML).text
    cps = [f for f in _facts(api, "s1") if f["kind"] == "Checkpoint"]
    assert cps
    n = cps[0]["checkpoint"]
    assert (
        f'<form class="inline" method="post" action="s1/fork"><input type="hidden" name="checkpoint" '
        f'value="{n}"><button type="submit">fork from here</button></form>' in page
    )
    r = api.post("/runs/s1/fork", data={"checkpoint": str(n)}, headers=HTML, follow_redirects=False)
    assert r.status_code == 303
    new = r.headers["location"].removeprefix("/runs/")
    assert r.headers["location"] == f"/runs/{new}" and new != "s1"
    start = _facts(api, new)[0]
    assert (start["parent"], start["from_checkpoint"]) == ("s1", n)
    until(lambda: api.get(f"/runs/{new}").json()["state"] == "paused", what="the worker to drive the fork")
    page = api.get(f"/runs/{new}", headers=HTML).text
    assert f"fork of s1 at checkpoint {n}" in html.unescape(page)


def test_a_fork_as_json_answers_201_with_the_new_run_and_a_refusal_as_one_line_error(api):
    _paused(api)
    r = api.post("/runs/s1/fork", json={"checkpoint": 1, "run_id": "f1"})
    assert r.status_code == 201 and r.json() == {"run_id": "f1", "parent": "s1", "checkpoint": 1}
    r = api.post("/runs/s1/fork", json={"checkpoint": 9})
    assert r.status_code == 400 and r.json() == {
        "error": "run 's1' has no checkpoint 9 (or it was archived away)"
    }
    r = api.post("/runs/s1/fork", json={"checkpoint": 1, "run_id": "f1"})
    assert r.status_code == 409 and "already exists" in r.json()["error"]
    assert api.post("/runs/nope/fork", json={"checkpoint": 1}).status_code == 404
    assert api.post("/runs/s1/fork", json={"checkpoint": "1"}).status_code == 400


def test_a_refused_fork_from_the_form_shows_the_page_again_with_the_refusal_in_one_line(api):
    _paused(api)
    r = api.post("/runs/s1/fork", data={"checkpoint": "9"}, headers=HTML, follow_redirects=False)
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    msg = re.findall(r'<p class="message" role="alert">(.*?)</p>', r.text)
    assert msg == ["run &#x27;s1&#x27; has no checkpoint 9 (or it was archived away)"]
    r = api.post("/runs/s1/fork", data={"checkpoint": "two"}, headers=HTML)
    assert r.status_code == 400 and "checkpoint" in r.json()["error"]


def test_with_a_token_the_fork_needs_it_as_a_header_or_the_forms_field(worker):
    with _api(worker, token="sesame") as api:
        _paused(api, token="sesame")
        page = api.get("/runs/s1", headers=HTML).text
        assert '<input type="password" name="token"' in page and "sesame" not in page
        assert api.post("/runs/s1/fork", data={"checkpoint": "1"}, headers=HTML).status_code == 401
        r = api.post("/runs/s1/fork", data={"checkpoint": "1", "token": "wrong"}, headers=HTML)
        assert r.status_code == 401
        r = api.post(
            "/runs/s1/fork", data={"checkpoint": "1", "token": "sesame"}, headers=HTML, follow_redirects=False
        )
        assert r.status_code == 303
        assert api.post("/runs/s1/fork", json={"checkpoint": 1}).status_code == 401
        r = api.post("/runs/s1/fork", json={"checkpoint": 1}, headers={"Authorization": "Bearer sesame"})
        assert r.status_code == 201


def test_the_static_export_has_the_sources_and_times_but_no_forms(api, worker, tmp_path):
    _paused(api)
    from flowrt.host.client import Client

    page = Client(worker)._history("s1", "html")
    assert "<form" not in page and "<h2>Sources</h2>" in page and 'href="#src-' in page
    assert re.search(ISO, _row(page, 2))


def test_a_checkpoint_holding_a_task_parked_on_an_unanswered_call_is_refused_in_one_line(tmp_path):
    from history_e2e_helpers import Cli, project
    from test_fork_rebuild import ROUNDS
    from worker_helpers import compiled

    from flowrt.host.worker import Conflict, Worker

    cli = Cli(project(tmp_path, ROUNDS))
    r = cli.run("a", '{"q": "why"}', "--checkpoint-every", "1")
    assert r.exit_code == 3, r.output
    w = Worker(cli.store, {"rounds": compiled(str(cli.d / "main.flow"))}, log=lambda _: None)
    before = [x.run_id for x in w.runs()]
    with pytest.raises(Conflict) as e:
        w.fork("a", 1)
    assert "\n" not in str(e.value) and "parked on a call with no reply" in str(e.value)
    with _api(w) as api:
        r = api.post("/runs/a/fork", data={"checkpoint": "1"}, headers=HTML, follow_redirects=False)
        assert r.status_code == 409
        msg = re.findall(r'<p class="message" role="alert">(.*?)</p>', r.text)
        assert len(msg) == 1 and html.unescape(msg[0]) == str(e.value)
        r = api.post("/runs/a/fork", json={"checkpoint": 1})
        assert r.status_code == 409 and r.json() == {"error": str(e.value)}
    assert [x.run_id for x in w.runs()] == before  # nothing recorded
