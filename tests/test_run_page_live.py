"""The served run page's actions without a browser (flowrt.host.run_page_live; docs/spec/http.md,
"Reply forms" and "Live updates"): a reply form posted as a browser posts it is admitted as the
JSON route admits a reply (303 back when recorded; the page again, 422, with the message beside
the form and the typed text kept when not), the token in a form and then in a cookie, a form from
another site's page refused, and the run's event stream: a change when the run moves, the end
when it ends, keep-alives while it is quiet, bounded in time."""

from __future__ import annotations

import html
import json
import re
import threading

import pytest
from starlette.testclient import TestClient

from flowrt.host import http_api
from flowrt.host import run_page_live as live
from http_helpers import running_worker, support, support_bindings, until

TICKET = {"ticket": "Login fails on Safari"}
ASK_ID = "c1:root#2"
HTML = {"Accept": "text/html"}
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}


@pytest.fixture()
def worker(tmp_path):
    with running_worker(
        tmp_path / "runs.db", {"support": support()}, support_bindings(), checkpoint_every=5
    ) as w:
        yield w


def _client(worker, **kw):
    return TestClient(http_api.make_app(worker, **kw), raise_server_exceptions=False, follow_redirects=False)


@pytest.fixture()
def api(worker):
    with _client(worker) as c:
        yield c


def _paused(api, run_id: str = "s1", token: str = "") -> dict:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    r = api.post("/runs", json={"program": "support", "input": TICKET, "run_id": run_id}, headers=auth)
    assert r.status_code == 201, r.text

    def seen():
        body = api.get(f"/runs/{run_id}").json()
        return body if body.get("state") == "paused" else None

    return until(seen, what=f"run {run_id} to pause")


def _post_form(api, run_id: str, **fields):
    return api.post(f"/runs/{run_id}/replies", data=fields, headers=FORM)


def _forms(page: str) -> list[str]:
    return re.findall(r'<form class="reply".*?</form>', page, flags=re.S)


def _reply_field(form: str) -> str:
    return html.unescape(re.search(r'name="reply" value="([^"]*)"', form).group(1))


def _message(form: str) -> str:
    m = re.search(r'<p class="msg"[^>]*>(.*?)</p>', form, flags=re.S)
    return html.unescape(m.group(1)) if m else ""


# ---- the form on the page ------------------------------------------------------------------------


def test_the_served_page_has_a_labelled_reply_form_per_open_call_prefilled_with_a_sample(api):
    _paused(api)
    r = api.get("/runs/s1", headers=HTML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    (form,) = _forms(r.text)
    assert 'method="post" action="/runs/s1/replies"' in form
    assert f'<input type="hidden" name="call" value="{ASK_ID}">' in form
    field_id = re.search(r'<input type="text" id="([^"]+)" name="reply"', form).group(1)
    assert f'<label for="{field_id}">' in form and "Result&lt;Text, Text&gt;" in form
    assert json.loads(_reply_field(form)) == {"Ok": "..."}
    assert 'name="token"' not in form  # no token set: nothing to ask
    # the page's one script is the one the Content-Security-Policy allows, and nothing else runs
    assert r.headers["content-security-policy"] == live.CSP and r.text.count("<script>") == 1
    assert f"<script>{live.SCRIPT}</script>" in r.text


def test_the_page_of_a_run_that_is_not_paused_has_no_reply_form(api):
    _paused(api)
    assert _post_form(api, "s1", call=ASK_ID, reply='{"Ok": "Safari 17.4"}').status_code == 303
    until(lambda: api.get("/runs/s1").json()["state"] == "completed", what="completion")
    page = api.get("/runs/s1", headers=HTML).text
    assert _forms(page) == [] and "What it waits on" not in page
    assert 'data-events=""' in page  # an ended run: nothing to follow


# ---- posting it -------------------------------------------------------------------------------------


def test_a_form_reply_that_fits_is_recorded_and_answers_303_back_to_the_run_page(api):
    _paused(api)
    r = _post_form(api, "s1", call=ASK_ID, reply='{"Ok": "Safari 17.4"}')
    assert r.status_code == 303 and r.headers["location"] == "/runs/s1"
    assert "set-cookie" not in r.headers
    done = until(lambda: (b := api.get("/runs/s1").json())["state"] == "completed" and b, what="completion")
    assert done["facts"] == 16
    facts = [json.loads(x) for x in api.get("/runs/s1/history").text.splitlines()]
    assert facts[12] == {**facts[12], "kind": "Reply", "id": ASK_ID, "reply": 'Ok("Safari 17.4")'}


def test_a_form_reply_of_the_wrong_type_shows_the_admission_message_inline_and_keeps_the_text(api):
    before = _paused(api)
    r = _post_form(api, "s1", call=ASK_ID, reply='{"Ok": 5}')
    assert r.status_code == 422 and r.headers["content-type"].startswith("text/html")
    (form,) = _forms(r.text)
    assert _message(form) == "$.Ok: expected Text, got 5"  # exactly the JSON route's message
    assert _reply_field(form) == '{"Ok": 5}' and 'aria-invalid="true"' in form
    assert api.get("/runs/s1").json()["facts"] == before["facts"]  # nothing recorded
    json_route = api.post("/runs/s1/replies", json={"call": ASK_ID, "reply": {"Ok": 5}})
    assert json_route.status_code == 422 and json_route.json()["error"] == _message(form)


def test_form_text_that_is_not_json_is_refused_with_the_parse_error_in_one_line(api):
    _paused(api)
    r = _post_form(api, "s1", call=ASK_ID, reply="{Ok: \n Safari}")
    assert r.status_code == 422
    (form,) = _forms(r.text)
    assert _message(form).startswith("not JSON: Expecting property name enclosed in double quotes")
    assert "\n" not in _message(form) and _reply_field(form) == "{Ok: \n Safari}"


def test_script_text_in_a_refused_form_and_in_a_recorded_reply_is_shown_as_text(api):
    _paused(api)
    hostile = "<script>alert('x')</script>"
    r = _post_form(api, "s1", call=ASK_ID, reply=hostile)
    assert r.status_code == 422 and hostile not in r.text and "alert(&#x27;x&#x27;)" in r.text
    assert _reply_field(_forms(r.text)[0]) == hostile
    r = _post_form(api, "s1", call=ASK_ID, reply=json.dumps({"Ok": hostile}))
    assert r.status_code == 303
    until(lambda: api.get("/runs/s1").json()["state"] == "completed", what="completion")
    page = api.get("/runs/s1", headers=HTML).text
    assert hostile not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own


def test_a_form_reply_to_a_call_no_longer_open_is_a_409_page_with_a_notice(api):
    _paused(api)
    assert _post_form(api, "s1", call=ASK_ID, reply='{"Ok": "Safari 17.4"}').status_code == 303
    r = _post_form(api, "s1", call=ASK_ID, reply='{"Ok": "Safari 18"}')
    assert r.status_code == 409 and r.headers["content-type"].startswith("text/html")
    notice = html.unescape(re.search(r'<p class="notice"[^>]*>(.*?)</p>', r.text).group(1))
    assert notice.startswith(f"The reply to {ASK_ID} was not recorded: ")


def test_a_form_post_of_an_unknown_run_or_with_unknown_fields_is_the_apis_json_refusal(api):
    r = _post_form(api, "nope", call=ASK_ID, reply="{}")
    assert r.status_code == 404 and "error" in r.json()
    _paused(api)
    r = _post_form(api, "s1", call=ASK_ID, reply="{}", extra="1")
    assert r.status_code == 400 and r.json() == {
        "error": "unknown field 'extra'; expected call, reply, token"
    }
    r = _post_form(api, "s1", call=ASK_ID)
    assert r.status_code == 400 and r.json() == {"error": "missing field 'reply'"}


def test_a_json_body_sent_as_urlencoded_by_curl_or_urllib_is_still_the_json_route(api):
    _paused(api)
    body = json.dumps({"call": ASK_ID, "reply": {"Ok": "Safari 17.4"}})
    r = api.post(
        "/runs/s1/replies", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 202 and r.json() == {"run_id": "s1", "call": ASK_ID}


def test_a_form_posted_from_another_sites_page_is_refused_403(api):
    before = _paused(api)
    headers = {**FORM, "Origin": "http://evil.example"}
    r = api.post("/runs/s1/replies", data={"call": ASK_ID, "reply": '{"Ok": "x"}'}, headers=headers)
    assert r.status_code == 403 and "http://evil.example" in r.json()["error"]
    assert api.get("/runs/s1").json()["facts"] == before["facts"]  # nothing recorded
    same = api.post(
        "/runs/s1/replies",
        data={"call": ASK_ID, "reply": '{"Ok": "Safari 17.4"}'},
        headers={**FORM, "Origin": "http://testserver"},
    )
    assert same.status_code == 303


# ---- the token -----------------------------------------------------------------------------------------


def test_with_a_token_the_form_asks_for_it_then_the_browser_holds_it_in_a_strict_httponly_cookie(worker):
    with _client(worker, token="tk") as api:
        _paused(api, token="tk")
        (form,) = _forms(api.get("/runs/s1", headers=HTML).text)
        assert re.search(r'<label for="token-1"[^>]*>token</label><input type="password" id="token-1"', form)
        r = _post_form(api, "s1", call=ASK_ID, reply='{"Ok": "Safari 17.4"}')
        assert r.status_code == 401 and _message(_forms(r.text)[0]) == "this worker has a token: enter it"
        r = _post_form(api, "s1", call=ASK_ID, reply='{"Ok": "Safari 17.4"}', token="wrong")
        assert r.status_code == 401 and _message(_forms(r.text)[0]) == "the token is wrong"
        assert _reply_field(_forms(r.text)[0]) == '{"Ok": "Safari 17.4"}'
        assert "set-cookie" not in r.headers and api.get("/runs/s1").json()["facts"] == 12
        r = _post_form(api, "s1", call=ASK_ID, reply='{"Ok": 5}', token="tk")
        assert r.status_code == 422 and "set-cookie" not in r.headers  # not recorded: not held either
        r = _post_form(api, "s1", call=ASK_ID, reply='{"Ok": "Safari 17.4"}', token="tk")
        assert r.status_code == 303
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{live.TOKEN_COOKIE}=tk;") and "HttpOnly" in cookie
        assert "SameSite=strict" in cookie and "Path=/" in cookie
        # now held: the next run's form asks for nothing, and a post without the field is let in
        _paused(api, "s2", token="tk")
        (form,) = _forms(api.get("/runs/s2", headers=HTML).text)
        assert 'name="token"' not in form
        assert _post_form(api, "s2", call=ASK_ID, reply='{"Ok": "Safari 17.4"}').status_code == 303
        # the cookie is for the forms only: the JSON API still wants its bearer header
        r = api.post("/runs/s2/cancel")
        assert r.status_code == 401


# ---- the event stream ----------------------------------------------------------------------------------


def _events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":")
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_the_event_stream_says_each_change_and_ends_when_the_run_ends(api, worker):
    _paused(api)
    answer = threading.Thread(target=worker.deliver, args=("s1", ASK_ID, {"Ok": "Safari 17.4"}))
    answer.start()  # the stream below follows the run from its paused page on, whenever this lands
    r = api.get("/runs/s1/events?facts=12&state=paused")
    answer.join()
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert r.text.startswith(f"retry: {live.RETRY_MS}\n\n")
    got = _events(r.text)
    assert got[-2:] == [
        ("change", {"facts": 16, "state": "completed"}),
        ("end", {"facts": 16, "state": "completed"}),
    ]
    assert {k for k, _ in got} <= {"change", "end"}
    assert "id: 16 completed\n" in r.text  # what EventSource sends back as Last-Event-ID


def test_the_stream_of_an_ended_run_says_so_at_once_and_an_unknown_run_is_404(api, worker):
    _paused(api)
    worker.cancel("s1")
    until(lambda: api.get("/runs/s1").json()["state"] == "halted", what="the cancel")
    r = api.get("/runs/s1/events", headers={"Last-Event-ID": "12 halted"})
    assert _events(r.text) == [("end", {"facts": 12, "state": "halted"})]  # seen already: no change
    assert api.get("/runs/nope/events").status_code == 404
    assert api.get("/runs/s1/events?facts=-1").status_code == 400


def test_a_quiet_stream_keeps_alive_and_ends_after_its_lifetime(api, monkeypatch):
    _paused(api)
    monkeypatch.setattr(live, "KEEPALIVE", 0.05)
    monkeypatch.setattr(live, "LIFETIME", 0.4)
    monkeypatch.setattr(live, "MAX_DELAY", 0.05)
    r = api.get("/runs/s1/events?facts=12&state=paused")
    assert r.status_code == 200 and ": keep-alive\n\n" in r.text
    assert _events(r.text) == []  # nothing moved; the browser reconnects and goes on


def test_a_stream_ends_when_the_server_closes(worker):
    app = http_api.make_app(worker)
    with TestClient(app) as api:
        _paused(api)
        app.state.closing.set()
        r = api.get("/runs/s1/events?facts=12&state=paused")
        assert r.status_code == 200 and _events(r.text) == []


def test_a_real_server_stops_with_streams_open_and_a_stream_is_a_real_text_event_stream(worker):
    import http.client

    server = http_api.start_server(worker, "127.0.0.1", 0)
    try:
        with TestClient(http_api.make_app(worker)) as api:
            _paused(api)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("GET", "/runs/s1/events?facts=12&state=paused")
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("content-type").startswith("text/event-stream")
        assert r.readline() == b"retry: 1000\n"
    finally:
        server.stop()
    assert not server.thread.is_alive()  # the open stream did not hold the server up
    assert b"event:" not in r.read()  # it ended, saying nothing more: the run did not move
    conn.close()
