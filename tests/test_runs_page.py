"""The runs page: the worker's `GET /` for a browser (flowrt.host.runs_page, docs/spec/http.md):
filtered by state and program, newest first, paged with previous/next links, every text escaped,
self-contained, and a bad query refused with a 400."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from starlette.testclient import TestClient

from flowrt.host import http_api, worker_ops
from flowrt.host.worker import Worker
from http_helpers import running_worker, support, support_bindings, until

HTML = {"Accept": "text/html"}
TICKET = {"ticket": "Login fails on Safari"}
HOSTILE = '<script>alert("x")</script>&\''


class _Tags(HTMLParser):
    """Every tag with its attributes, and the text, of a page."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Tags:
    p = _Tags()
    p.feed(page)
    return p


def _run_links(page: str) -> list[str]:
    return [a["href"] for t, a in _parse(page).tags if t == "a" and a.get("href", "").startswith("runs/")]


@pytest.fixture()
def store_of_runs(tmp_path):
    """A worker (its loop not running) over a store of 300 submitted runs of `support`, r000..r299
    in that order, r010..r019 cancelled (halted), and 5 of a program named HOSTILE."""
    prog = support()
    w = Worker(
        str(tmp_path / "runs.db"), {"support": prog, HOSTILE: prog}, support_bindings(), log=lambda _: None
    )
    for i in range(300):
        w.submit("support", input=TICKET, run_id=f"r{i:03d}")
    for i in range(10, 20):
        w.cancel(f"r{i:03d}")
    for i in range(5):
        w.submit(HOSTILE, input=TICKET, run_id=f"h{i}")
    with TestClient(http_api.make_app(w), raise_server_exceptions=False) as c:
        yield c


def test_a_page_holds_50_runs_newest_first_of_a_store_of_hundreds_with_a_next_link(store_of_runs):
    page = store_of_runs.get("/", headers=HTML)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    links = _run_links(page.text)
    assert links == [f"runs/h{i}" for i in range(4, -1, -1)] + [f"runs/r{i:03d}" for i in range(299, 254, -1)]
    tags = _parse(page.text).tags
    assert [a["href"] for t, a in tags if t == "a" and a.get("rel") == "next"] == ["?offset=50"]
    assert not [a for t, a in tags if t == "a" and a.get("rel") == "prev"]


def test_the_next_and_previous_links_walk_the_pages_and_keep_the_filters(store_of_runs):
    page = store_of_runs.get("/?program=support&limit=100&offset=100", headers=HTML).text
    assert _run_links(page) == [f"runs/r{i:03d}" for i in range(199, 99, -1)]
    tags = _parse(page).tags
    rel = {a["rel"]: a["href"] for t, a in tags if t == "a" and "rel" in a}
    assert rel == {"prev": "?program=support&limit=100", "next": "?program=support&limit=100&offset=200"}
    last = store_of_runs.get("/?" + rel["next"][1:], headers=HTML).text
    assert _run_links(last) == [f"runs/r{i:03d}" for i in range(99, -1, -1)]
    assert "next" not in {a.get("rel") for t, a in _parse(last).tags if t == "a"}
    beyond = store_of_runs.get("/?offset=5000", headers=HTML).text
    assert _run_links(beyond) == [] and "no runs" in beyond


def test_the_state_and_program_filters_pick_their_runs(store_of_runs):
    halted = store_of_runs.get("/?state=halted", headers=HTML).text
    assert _run_links(halted) == [f"runs/r{i:03d}" for i in range(19, 9, -1)]
    assert '<option value="halted" selected>' in halted
    submitted = store_of_runs.get("/?state=submitted&program=support&limit=5", headers=HTML).text
    assert _run_links(submitted) == [f"runs/r{i:03d}" for i in range(299, 294, -1)]
    assert _run_links(store_of_runs.get("/?state=completed", headers=HTML).text) == []
    assert _run_links(store_of_runs.get("/?program=nope", headers=HTML).text) == []


def test_hostile_program_names_are_escaped_in_rows_form_and_links(store_of_runs):
    page = store_of_runs.get("/", headers=HTML, params={"program": HOSTILE}).text
    assert _run_links(page) == [f"runs/h{i}" for i in range(4, -1, -1)]
    assert "<script" not in page and "&lt;script&gt;" in page
    assert HOSTILE in "".join(_parse(page).text)  # shown as text, in the rows
    form = [a for t, a in _parse(page).tags if t == "input" and a.get("name") == "program"]
    assert form == [{"name": "program", "value": HOSTILE}]


def test_a_hostile_run_id_is_escaped_and_linked_relatively_by_its_quoted_id(tmp_path):
    w = Worker(str(tmp_path / "runs.db"), {"support": support()}, support_bindings(), log=lambda _: None)
    run_id = '<img src=x onerror="alert(1)">/../?#&'
    w.submit("support", input=TICKET, run_id=run_id)
    with TestClient(http_api.make_app(w)) as c:
        page = c.get("/", headers=HTML).text
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert _run_links(page) == ["runs/%3Cimg%20src%3Dx%20onerror%3D%22alert%281%29%22%3E%2F..%2F%3F%23%26"]


def test_the_page_is_self_contained_with_no_script_and_no_external_reference(store_of_runs):
    page = store_of_runs.get("/", headers=HTML).text
    tags = _parse(page).tags
    assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe", "object", "embed")]
    refs = [v for _, a in tags for k, v in a.items() if k in ("href", "src", "action")]
    assert refs and all(not re.match(r"^([a-z]+:|//|/)", v or "") for v in refs), refs
    assert "url(" not in page and "@import" not in page and " on" + "click" not in page
    forms = [a for t, a in tags if t == "form"]
    assert forms == [{"method": "get", "action": ""}]


def test_a_paused_run_shows_the_tools_it_waits_on_and_since_when(tmp_path):
    with running_worker(tmp_path / "runs.db", {"support": support()}, support_bindings()) as w:
        w.submit("support", input=TICKET, run_id="s1")
        until(lambda: w.status("s1").state == "paused", what="run s1 to pause")
        with TestClient(http_api.make_app(w)) as c:
            page = c.get("/?state=paused", headers=HTML).text
    assert _run_links(page) == ["runs/s1"]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page)
    assert "paused on human.ask" in cells
    assert (
        sum(1 for x in cells if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d.*", x)) == 2
    )  # started, since


@pytest.mark.parametrize(
    "query, message",
    [
        ("state=asleep", "query parameter 'state' must be one of submitted, running, paused"),
        ("offset=-1", "query parameter 'offset' must be a whole number >= 0, got '-1'"),
        ("limit=ten", "query parameter 'limit' must be a whole number >= 0, got 'ten'"),
        ("limit=0", "query parameter 'limit' must be between 1 and 1000, got 0"),
        ("limit=100000", "query parameter 'limit' must be between 1 and 1000, got 100000"),
    ],
)
def test_a_bad_query_is_refused_with_a_400_in_the_apis_json_shape(store_of_runs, query, message):
    r = store_of_runs.get(f"/?{query}", headers=HTML)
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json")
    assert r.json()["error"].startswith(message) and "\n" not in r.json()["error"]


def test_an_unfiltered_page_taken_in_sql_is_the_slice_of_the_whole_listing(tmp_path):
    w = Worker(str(tmp_path / "runs.db"), {"support": support()}, support_bindings(), log=lambda _: None)
    for i in range(120):
        w.submit("support", input=TICKET, run_id=f"r{i:03d}")
    w.cancel("r100")
    whole = [st.run_id for st in worker_ops.runs(w.store)]
    assert whole == [f"r{i:03d}" for i in range(119, -1, -1)]
    for limit, offset in ((50, 0), (50, 7), (50, 100), (10, 200)):
        page = worker_ops.runs(w.store, limit=limit, offset=offset)
        assert [st.run_id for st in page] == whole[offset : offset + limit]
    assert [st.state for st in worker_ops.runs(w.store, limit=1, offset=19)] == ["halted"]


def test_the_state_and_program_filters_in_sql_pick_what_each_runs_status_says(tmp_path, monkeypatch):
    """Runs in every state a worker's client sees, the filters and the page taken in SQL, checked
    against each run's own status; only the runs of the page are read."""
    import os
    import socket

    from flowrt.data.facts import Start
    from flowrt.history import trace as T

    w = Worker(str(tmp_path / "runs.db"), {"support": support()}, support_bindings(), log=lambda _: None)
    for i in range(40):
        w.submit("support", input=TICKET, run_id=f"r{i:02d}")
    db = w.store.file.db
    here = socket.gethostname()
    with w.store.file.transaction() as t:
        t.execute("UPDATE runs SET state='completed' WHERE id IN ('r01', 'r02', 'r03')")
        t.execute("UPDATE runs SET state='faulted' WHERE id='r04'")
        t.execute("UPDATE runs SET state='paused' WHERE id IN ('r05', 'r06')")
        t.execute("UPDATE runs SET state='running', owner=? WHERE id='r07'", (f"{here}:{os.getpid()}:x",))
        t.execute("UPDATE runs SET state='running', owner=? WHERE id='r08'", (f"{here}:999999999:x",))
        t.execute("UPDATE worker_submissions SET started=1 WHERE run IN ('r09', 'r10', 'r08')")
        t.execute("INSERT INTO open_calls VALUES ('r09', 'root#1', 'human::ask', 2)")
        t.execute("INSERT INTO open_calls VALUES ('r08', 'root#1', 'human::ask', 2)")
        t.execute("UPDATE worker_submissions SET program='other' WHERE run IN ('r11', 'r12')")
    for i in (13, 14, 7):
        w.cancel(f"r{i:02d}")
    start = Start("p" * 64, "std@v1", T.DATA_VERSION, "main", (), ())
    w.store.history.create_run("cli", start, {}, {"path": "/somewhere/tool_run.flow"})
    everyone = [worker_ops.status(w.store, r) for (r,) in db.execute("SELECT id FROM runs")]
    by_created = {r: c for r, c in db.execute("SELECT id, created FROM runs")}
    newest = sorted(everyone, key=lambda st: (by_created[st.run_id], st.run_id), reverse=True)
    states = {st.state for st in everyone}
    assert states == {"submitted", "running", "paused", "completed", "faulted", "halted"}
    reads = []
    real = w.store.host_records.load_run
    monkeypatch.setattr(w.store.host_records, "load_run", lambda r: reads.append(r) or real(r))
    for state in sorted(states):
        want = [st.run_id for st in newest if st.state == state]
        for limit, offset in ((50, 0), (2, 1)):
            reads.clear()
            got = [st.run_id for st in worker_ops.runs(w.store, state=state, limit=limit, offset=offset)]
            assert got == want[offset : offset + limit], (state, limit, offset)
            assert reads == got  # only the page's records are read
    for program in ("support", "other", "tool_run"):
        want = [st.run_id for st in newest if st.program == program]
        assert want and [st.run_id for st in worker_ops.runs(w.store, program=program, limit=50)] == want
    got = worker_ops.runs(w.store, state="paused", program="support", limit=50)
    assert [st.run_id for st in got] == [
        st.run_id for st in newest if st.state == "paused" and st.program == "support"
    ]
