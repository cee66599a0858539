"""The worker's HTTP API (docs/spec/http.md): every route, every error, the token, the size limit,
the OpenAPI document, the support example of the History seed over HTTP, and one real server."""

from __future__ import annotations

import json
import logging
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from starlette.testclient import TestClient

from flowrt.host import http_api
from flowrt.host import operations as ops
from flowrt.host.operations import Refused
from flowrt.host.http_openapi import openapi_document
from http_helpers import ASK, ROOT, running_worker, support, support_bindings, until
from worker_helpers import golden_support_facts, seed_text

TICKET = {"ticket": "Login fails on Safari"}
SEED_KINDS = [
    "Start",
    "Call",
    "Reply",
    "Call",
    "Call",
    "Reply",
    "Choice",
    "Stop",
    "Checkpoint",
    "Call",
    "Reply",
    "Call",
    "Reply",
    "Call",
    "Reply",
    "End",
]


@pytest.fixture()
def worker(tmp_path):
    with running_worker(
        tmp_path / "runs.db", {"support": support()}, support_bindings(), checkpoint_every=5
    ) as w:
        yield w


@pytest.fixture()
def api(worker):
    with TestClient(http_api.make_app(worker), raise_server_exceptions=False) as c:
        yield c


def _paused(api, run_id: str) -> dict:
    def seen():
        body = api.get(f"/runs/{run_id}").json()
        return body if body.get("state") == "paused" else None

    return until(seen, what=f"run {run_id} to pause")


def _start_paused(api, run_id: str = "s1") -> dict:
    r = api.post("/runs", json={"program": "support", "input": TICKET, "run_id": run_id})
    assert r.status_code == 201, r.text
    return _paused(api, run_id)


# ---- the support example, end to end --------------------------------------------------------------


def test_the_support_example_pauses_on_the_question_completes_on_the_reply_and_keeps_the_seeds_history(
    api, worker
):
    status = _start_paused(api)
    assert [(c["id"], c["tool"], c["args"]) for c in status["open_calls"]] == [
        ("c1:root#2", "human.ask", [json.dumps(ASK)])
    ]
    assert isinstance(status["open_calls"][0]["since"], (int, float))
    r = api.post("/runs/s1/replies", json={"call": "c1:root#2", "reply": {"Ok": "Safari 17.4"}})
    assert r.status_code == 202 and r.json() == {"run_id": "s1", "call": "c1:root#2"}
    done = until(lambda: (b := api.get("/runs/s1").json())["state"] == "completed" and b, what="completion")
    assert done["result"].startswith("Resolved(") and done["fault"] is None and done["open_calls"] == []
    r = api.get("/runs/s1/history")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/jsonl")
    facts = [json.loads(line) for line in r.text.splitlines()]
    assert [f["kind"] for f in facts] == SEED_KINDS
    assert facts[11]["id"] == "c1:root#2" and facts[12]["reply"] == 'Ok("Safari 17.4")'
    assert facts[-1]["end"] == 'Completed(Resolved("Enable Secure on the session cookie; ..."))'
    # exactly `flow2py history s1 --format json`, and the seed's history fact for fact, plus nothing
    assert r.text == ops.history(worker.store, support(), "s1", "json")
    assert seed_text(ops.history(worker.store, support(), "s1", "text")) == golden_support_facts()


def _http_blocks() -> list[str]:
    text = (ROOT / "docs" / "spec" / "http.md").read_text(encoding="utf-8")
    return re.findall(r"^```http\n(.*?)^```", text, flags=re.S | re.M)


def _matches(expected, got) -> bool:
    if expected == "...":
        return True
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and expected.keys() == got.keys()
            and all(_matches(v, got[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return isinstance(got, list) and len(expected) == len(got) and all(map(_matches, expected, got))
    return expected == got and type(expected) is type(got)


def _parse_block(block: str):
    request = [line[2:] for line in block.splitlines() if line.startswith(">")]
    answer = [line[2:] for line in block.splitlines() if line.startswith("<")]
    method, path = request[0].split()
    body = json.loads("\n".join(request[1:])) if request[1:] else None
    status = int(answer[0])
    expected = json.loads("\n".join(answer[1:])) if answer[1:] else None
    return method, path, body, status, expected


def test_the_examples_of_the_http_page_hold(api):
    blocks = _http_blocks()
    assert len(blocks) >= 8
    for block in blocks:
        method, path, body, status, expected = _parse_block(block)

        def ask():
            r = api.request(method, path, json=body) if body is not None else api.request(method, path)
            return r if r.status_code == status and _matches(expected, r.json()) else None

        if method == "GET":
            until(ask, what=f"{method} {path} to answer as docs/spec/http.md shows")
        else:
            r = api.request(method, path, json=body) if body is not None else api.request(method, path)
            assert r.status_code == status and _matches(expected, r.json()), (block, r.status_code, r.text)


def test_a_browser_gets_the_runs_page_and_a_runs_history_page(api):
    _start_paused(api)
    page = api.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<a href="runs/s1">s1</a>' in page.text and "paused on human.ask" in page.text
    run = api.get("/runs/s1", headers={"Accept": "text/html"})
    assert run.headers["content-type"].startswith("text/html") and "Checkpoint" in run.text
    assert "What it waits on" in run.text and "flow2py reply s1 &#x27;c1:root#2=" in run.text  # the run page
    assert api.get("/").json() == {"runs": "/runs", "openapi": "/openapi.json"}
    assert api.get("/runs/nope", headers={"Accept": "text/html"}).status_code == 404


# ---- listing ------------------------------------------------------------------------------------------


def test_runs_are_listed_newest_first_filtered_by_state_and_program_and_paged(api):
    for i in range(3):
        _start_paused(api, f"r{i}")
    assert api.post("/runs/r1/cancel").status_code == 202
    until(lambda: api.get("/runs/r1").json()["state"] == "halted", what="the cancel")
    every = api.get("/runs").json()
    assert [r["run_id"] for r in every] == ["r2", "r1", "r0"]
    assert set(every[0]) == {"run_id", "state", "program", "entry", "started", "facts"}
    assert [r["run_id"] for r in api.get("/runs?state=paused").json()] == ["r2", "r0"]
    assert [r["run_id"] for r in api.get("/runs?state=halted&program=support").json()] == ["r1"]
    assert api.get("/runs?program=other").json() == []
    assert [r["run_id"] for r in api.get("/runs?limit=2").json()] == ["r2", "r1"]
    assert [r["run_id"] for r in api.get("/runs?limit=2&offset=1").json()] == ["r1", "r0"]
    assert [r["run_id"] for r in api.get("/runs?offset=2").json()] == ["r0"]


@pytest.mark.parametrize(
    "query, message",
    [
        ("state=asleep", "query parameter 'state' must be one of"),
        ("limit=-1", "query parameter 'limit' must be a whole number"),
        ("offset=x", "query parameter 'offset' must be a whole number"),
    ],
)
def test_a_bad_query_parameter_is_a_400(api, query, message):
    r = api.get(f"/runs?{query}")
    assert r.status_code == 400 and r.json()["error"].startswith(message)


# ---- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, message",
    [
        (b"{not json", "the body is not valid JSON"),
        (b"[1, 2]", "the body must be a JSON object, got an array"),
        (b'{"entry": "main"}', "missing field 'program'"),
        (b'{"program": "support", "colour": 1}', "unknown field 'colour'"),
        (b'{"program": 5}', "field 'program' must be a string, got a number"),
        (b'{"program": "support", "input": [1]}', "field 'input' must be an object or null, got an array"),
        (b'{"program": "nope"}', "this worker serves no program 'nope' (it serves: support)"),
    ],
)
def test_a_bad_start_body_is_a_400_with_one_line(api, body, message):
    r = api.post("/runs", content=body)
    assert r.status_code == 400 and r.json() == {"error": r.json()["error"]}
    assert r.json()["error"].startswith(message) and "\n" not in r.json()["error"]
    assert api.get("/runs").json() == []


def test_input_that_does_not_fit_is_a_400_with_the_admission_message_and_nothing_recorded(api):
    r = api.post("/runs", json={"program": "support", "input": {"ticket": 5}})
    assert r.status_code == 400 and "$.ticket: expected Text, got 5" in r.json()["error"]
    assert api.get("/runs").json() == []


def test_a_run_id_that_exists_is_a_409(api):
    _start_paused(api)
    r = api.post("/runs", json={"program": "support", "input": TICKET, "run_id": "s1"})
    assert r.status_code == 409 and "s1" in r.json()["error"]


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/runs/nope"),
        ("GET", "/runs/nope/history"),
        ("POST", "/runs/nope/replies"),
        ("POST", "/runs/nope/cancel"),
    ],
)
def test_an_unknown_run_is_a_404(api, method, path):
    body = {"call": "c1:root#2", "reply": {"Ok": "x"}} if path.endswith("replies") else None
    r = api.request(method, path, json=body)
    assert r.status_code == 404 and "nope" in r.json()["error"]


def test_a_reply_to_a_call_that_is_not_open_is_a_409_and_one_that_does_not_fit_a_422(api):
    _start_paused(api)
    r = api.post("/runs/s1/replies", json={"call": "c1:root#9", "reply": {"Ok": "x"}})
    assert r.status_code == 409 and "c1:root#9" in r.json()["error"]
    r = api.post("/runs/s1/replies", json={"call": "c1:root#2", "reply": {"Ok": 5}})
    assert r.status_code == 422 and r.json() == {"error": "$.Ok: expected Text, got 5"}
    r = api.post("/runs/s1/replies", json={"call": "c1:root#2", "reply": "Maybe"})
    assert r.status_code == 422
    st = api.get("/runs/s1").json()
    assert st["state"] == "paused" and st["facts"] == 12  # nothing recorded


@pytest.mark.parametrize(
    "body, message",
    [
        (b'{"call": "c1:root#2"}', "missing field 'reply'"),
        (b'{"call": 2, "reply": null}', "field 'call' must be a string, got a number"),
        (b'"reply"', "the body must be a JSON object, got a string"),
        (b"", "the body is not valid JSON"),
    ],
)
def test_a_bad_reply_body_is_a_400(api, body, message):
    _start_paused(api)
    r = api.post("/runs/s1/replies", content=body)
    assert r.status_code == 400 and r.json()["error"].startswith(message)


def test_cancel_halts_a_paused_run_and_cancelling_an_ended_run_is_a_409(api):
    _start_paused(api)
    assert api.post("/runs/s1/cancel").status_code == 202
    halted = until(lambda: (b := api.get("/runs/s1").json())["state"] == "halted" and b, what="halt")
    assert halted["result"] is None
    assert "End" not in [f["kind"] for f in map(json.loads, api.get("/runs/s1/history").text.splitlines())]
    r = api.post("/runs/s1/cancel")
    assert r.status_code == 409 and "s1" in r.json()["error"]


def test_a_body_over_the_limit_is_a_413_by_its_length_and_as_it_streams(worker):
    with TestClient(http_api.make_app(worker, max_body=100)) as api:
        big = json.dumps({"program": "support", "input": {"ticket": "x" * 200}})
        r = api.post("/runs", content=big)
        assert r.status_code == 413 and r.json()["error"].startswith("the body is 2")

        def chunks():  # no Content-Length: the size is counted as it arrives
            for _ in range(10):
                yield b" " * 50

        r = api.post("/runs/s1/replies", content=chunks())
        assert r.status_code == 413 and "at most 100" in r.json()["error"]
        assert api.get("/runs").json() == []


def test_an_unknown_route_and_a_wrong_method_answer_in_the_same_json_shape(api):
    r = api.get("/nowhere")
    assert r.status_code == 404 and r.json() == {"error": "no route /nowhere"}
    r = api.delete("/runs")
    assert r.status_code == 405 and r.json() == {"error": "DELETE is not allowed on /runs"}


def test_an_unforeseen_failure_is_a_500_with_one_line_and_a_log_line_never_a_traceback(
    api, worker, monkeypatch, caplog
):
    def broken(*a, **k):
        raise RuntimeError("the disk fell off")

    monkeypatch.setattr(worker, "status", broken)
    with caplog.at_level(logging.ERROR, logger="flowrt.host.http_api"):
        r = api.get("/runs/s1")
    assert r.status_code == 500 and r.json() == {"error": "internal error: RuntimeError: the disk fell off"}
    assert "Traceback" not in r.text
    assert any("GET /runs/s1 failed: RuntimeError: the disk fell off" in m for m in caplog.messages)


# ---- the token --------------------------------------------------------------------------------------


def test_with_a_token_every_post_needs_it_and_reads_do_not(worker):
    with TestClient(http_api.make_app(worker, token="s3cret")) as api:
        start = {"program": "support", "input": TICKET, "run_id": "t1"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
            for path, body in (
                ("/runs", start),
                ("/runs/t1/replies", {"call": "c1:root#2", "reply": {"Ok": "x"}}),
                ("/runs/t1/cancel", None),
            ):
                r = api.post(path, json=body, headers=headers)
                assert r.status_code == 401, (path, headers)
                assert r.headers["www-authenticate"] == "Bearer" and set(r.json()) == {"error"}
        assert api.get("/runs").json() == []
        good = {"Authorization": "Bearer s3cret"}
        assert api.post("/runs", json=start, headers=good).status_code == 201
        _paused(api, "t1")  # GET without a token
        assert api.get("/runs/t1/history").status_code == 200
        assert api.get("/openapi.json").status_code == 200
        r = api.post("/runs/t1/replies", json={"call": "c1:root#2", "reply": {"Ok": "17"}}, headers=good)
        assert r.status_code == 202


def test_an_empty_token_is_refused_rather_than_letting_every_request_through(worker):
    with pytest.raises(ValueError):
        http_api.make_app(worker, token="")


# ---- OpenAPI ---------------------------------------------------------------------------------------


def test_the_openapi_document_describes_every_route_and_nothing_else(api):
    doc = api.get("/openapi.json").json()
    assert doc == openapi_document() and doc["openapi"].startswith("3.1")
    described = {(p, m.upper()) for p, ops_ in doc["paths"].items() for m in ops_}
    assert described == {(p, m) for p, m, _ in http_api.ROUTES}
    for path, method, _ in http_api.ROUTES:
        op = doc["paths"][path][method.lower()]
        assert op["responses"] and op["operationId"]
        assert ("security" in op) == (method == "POST")  # the token guards exactly the POSTs
    refs = re.findall(r'"#/components/schemas/(\w+)"', json.dumps(doc))
    assert set(refs) <= set(doc["components"]["schemas"])


# ---- a real server -----------------------------------------------------------------------------------


def test_a_real_server_binds_the_loopback_answers_over_http_and_stops(worker):
    server = http_api.start_server(worker, port=0, token="t")  # port 0: any free one
    assert server.host == "127.0.0.1" and server.port > 0
    try:
        base = f"http://127.0.0.1:{server.port}"
        req = urllib.request.Request(
            base + "/runs",
            data=json.dumps({"program": "support", "input": TICKET, "run_id": "u1"}).encode(),
            headers={"Authorization": "Bearer t", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 201 and json.load(r) == {"run_id": "u1"}

        def paused():
            with urllib.request.urlopen(base + "/runs/u1", timeout=10) as r:
                return json.load(r)["state"] == "paused"

        until(paused, what="u1 to pause")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/runs/nope", timeout=10)
        assert e.value.code == 404 and "nope" in json.load(e.value)["error"]
    finally:
        server.stop()
    assert not server.thread.is_alive()


def test_an_address_in_use_is_refused_in_the_caller_with_one_line(worker):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(Refused) as e:
            http_api.start_server(worker, port=port)
    assert str(e.value).startswith(f"--http 127.0.0.1:{port}: cannot listen there: ")
    assert "\n" not in str(e.value)


def _get_json(url: str):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except (urllib.error.URLError, ConnectionError):
        return None


def test_flow2py_worker_with_http_serves_the_support_example_and_stops_on_sigterm(tmp_path):
    with socket.socket() as probe:  # a free port, handed to the worker
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    support_dir = ROOT / "examples" / "support"
    cmd = [sys.executable, "-m", "flow2py.cli", "worker", f"support={support_dir / 'main.flow'}"]
    cmd += ["--tools", str(support_dir / "tools.py"), "--store", str(tmp_path / "runs.db")]
    cmd += ["--http", f"127.0.0.1:{port}", "--token", "tk", "--checkpoint-every", "5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        until(lambda: proc.poll() is not None or _get_json(base + "/openapi.json"), 60, "the worker's API")
        assert proc.poll() is None
        auth = {"Authorization": "Bearer tk"}
        body = json.dumps({"program": "support", "input": TICKET, "run_id": "w1"}).encode()
        req = urllib.request.Request(base + "/runs", data=body, headers=auth, method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 201
        st = until(lambda: (b := _get_json(base + "/runs/w1")) and b["state"] == "paused" and b, 30, "pause")
        assert [c["id"] for c in st["open_calls"]] == ["c1:root#2"]
        reply = json.dumps({"call": "c1:root#2", "reply": {"Ok": "Safari 17.4"}}).encode()
        req = urllib.request.Request(base + "/runs/w1/replies", data=reply, headers=auth, method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 202
        done = until(
            lambda: (b := _get_json(base + "/runs/w1")) and b["state"] == "completed" and b, 30, "end"
        )
        assert done["facts"] == 16 and done["result"].startswith("Resolved(")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_flow2py_worker_refuses_an_http_address_in_use_with_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cmd = [
            sys.executable,
            "-m",
            "flow2py.cli",
            "worker",
            f"support={ROOT / 'examples/support/main.flow'}",
        ]
        cmd += ["--tools", str(ROOT / "examples/support/tools.py"), "--store", str(tmp_path / "runs.db")]
        r = subprocess.run(cmd + ["--http", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert f"--http 127.0.0.1:{port}: cannot listen there" in r.stderr and "Traceback" not in r.stderr
