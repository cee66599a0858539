"""The viewer in a real browser (issue 10's checks): headless Chromium from Debian's packages
(/usr/bin/chromium) driven by Playwright for Python, against `flow2py worker ... --http` on a free
port serving the support example (examples/support/main.flow with examples/support/tools.py).

The runs page leads to the run; the reply form for `c1:root#2` delivers a reply and the run
completes, its End on the page; a reply of the wrong type shows the admission message beside the
form, with and without JavaScript; `<script>` text stays text; the form is reached with Tab and
sent with Enter; no horizontal overflow at 1280×800 nor at 390×800; the static export opens from
a file with the network blocked, asks for nothing and holds every fact.

Without /usr/bin/chromium or playwright these skip, saying why, except under CI=true (.ci/run
installs chromium), where that is a failure. One browser and one worker serve the whole module.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from flowrt.history.store import Store
from flowrt.host import run_page
from http_helpers import ROOT, support, until

CHROMIUM = "/usr/bin/chromium"
SUPPORT = ROOT / "examples" / "support"
TICKET = {"ticket": "Login fails on Safari"}
ASK_ID = "c1:root#2"
DONE = 'Completed(Resolved("Enable Secure on the session cookie; ..."))'


def _missing() -> str | None:
    if not (os.path.exists(CHROMIUM) and shutil.which(CHROMIUM)):
        return f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run does)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


_WHY = _missing()
if _WHY is not None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the browser tests must run under CI: {_WHY}", pytrace=False)
    pytest.skip(_WHY, allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


class Served:
    """`flow2py worker support=... --http 127.0.0.1:PORT` over a store of its own."""

    def __init__(self, store: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.store = store
        self.base = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "flow2py.cli", "worker", f"support={SUPPORT / 'main.flow'}"]
        cmd += ["--tools", str(SUPPORT / "tools.py"), "--store", str(store)]
        cmd += ["--http", f"127.0.0.1:{self.port}", "--checkpoint-every", "5"]  # the question: c1:root#2
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        until(lambda: self.proc.poll() is not None or self.get("/openapi.json"), 60, "the worker's API")
        assert self.proc.poll() is None, self.proc.stderr.read()

    def get(self, path: str):
        try:
            with urllib.request.urlopen(self.base + path, timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def start_paused(self, run_id: str) -> None:
        body = json.dumps({"program": "support", "input": TICKET, "run_id": run_id}).encode()
        req = urllib.request.Request(self.base + "/runs", data=body, method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 201
        until(lambda: (self.get(f"/runs/{run_id}") or {}).get("state") == "paused", 30, f"{run_id} to pause")

    def state(self, run_id: str) -> str:
        return self.get(f"/runs/{run_id}")["state"]

    def history(self, run_id: str, fmt: str) -> str:
        """`flow2py history RUN --format FMT` of the worker's store (run in this process: the same
        function, without compiling the example once more in a new process)."""
        with Store(self.store, readonly=True) as store:
            return run_page.history(store, support(), run_id, fmt)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.communicate(timeout=60)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("viewer") / "runs.db")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.dialogs = []  # type: ignore[attr-defined]  (any alert() would land here)
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    yield pg
    context.close()


@pytest.fixture()
def no_js_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, java_script_enabled=False)
    yield context.new_page()
    context.close()


def _form(pg: Page):
    return pg.locator(f'form.reply[data-call="{ASK_ID}"]')


def _reply_field(pg: Page):
    return _form(pg).get_by_label(f"Reply to {ASK_ID}")


def test_the_runs_page_leads_to_the_run_whose_reply_form_completes_it_and_the_end_appears(served, page):
    served.start_paused("b1")
    page.goto(served.base + "/")
    page.get_by_role("link", name="b1", exact=True).click()
    expect(page).to_have_url(served.base + "/runs/b1")
    expect(page.locator("h2", has_text="What it waits on")).to_be_visible()
    field = _reply_field(page)
    expect(field).to_have_value('{"Ok": "..."}')  # the sample of Result<Text, Text>
    field.fill('{"Ok": "Safari 17.4"}')
    _form(page).get_by_role("button", name="Send reply").click()
    expect(page.locator("tr.End")).to_contain_text(DONE, timeout=20_000)
    expect(page.locator(".state-completed")).to_be_visible()
    expect(page.locator("form.reply")).to_have_count(0)
    assert served.state("b1") == "completed" and page.dialogs == []


def test_without_javascript_the_form_shows_the_message_inline_then_posts_and_redirects(served, no_js_page):
    pg = no_js_page
    served.start_paused("b2")
    pg.goto(served.base + "/runs/b2")
    _reply_field(pg).fill('{"Ok": 5}')
    _reply_field(pg).press("Enter")
    expect(_form(pg).locator(".msg")).to_have_text("$.Ok: expected Text, got 5")
    expect(_reply_field(pg)).to_have_value('{"Ok": 5}')
    assert served.state("b2") == "paused"
    _reply_field(pg).fill('{"Ok": "Safari 17.4"}')
    _form(pg).get_by_role("button", name="Send reply").click()
    expect(pg).to_have_url(served.base + "/runs/b2")  # the 303 back to the run page
    until(lambda: served.state("b2") == "completed", 20, "b2 to complete")
    pg.reload()
    expect(pg.locator("tr.End")).to_contain_text(DONE)


def test_a_reply_of_the_wrong_type_shows_the_admission_message_beside_its_form(served, page):
    served.start_paused("b3")
    page.goto(served.base + "/runs/b3")
    _reply_field(page).fill('{"Err": true}')
    _form(page).get_by_role("button", name="Send reply").click()
    expect(_form(page).locator(".msg")).to_have_text("$.Err: expected Text, got true")
    expect(page).to_have_url(served.base + "/runs/b3")  # shown without leaving the page
    expect(_reply_field(page)).to_have_value('{"Err": true}')
    _reply_field(page).fill("yes")
    _reply_field(page).press("Enter")
    expect(_form(page).locator(".msg")).to_have_text("not JSON: Expecting value: line 1 column 1 (char 0)")
    assert served.state("b3") == "paused"


def test_script_text_in_a_reply_is_shown_as_text_and_never_runs(served, page):
    served.start_paused("b4")
    page.goto(served.base + "/runs/b4")
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    _reply_field(page).fill(hostile)  # not JSON: refused, shown back
    _reply_field(page).press("Enter")
    expect(_form(page).locator(".msg")).to_contain_text("not JSON")
    expect(_reply_field(page)).to_have_value(hostile)
    _reply_field(page).fill(json.dumps({"Ok": hostile}))  # a Text: recorded, and shown as text
    _reply_field(page).press("Enter")
    expect(page.locator("tr.End")).to_contain_text("Completed(", timeout=20_000)
    expect(page.locator("tr.Reply", has_text=ASK_ID)).to_contain_text(f"Ok({json.dumps(hostile)})")
    page.reload()
    expect(page.locator("tr.Reply", has_text=ASK_ID)).to_contain_text(f"Ok({json.dumps(hostile)})")
    assert page.dialogs == [] and page.locator("img[src=x]").count() == 0
    assert page.locator("script").count() == 1  # the page's own


def test_the_reply_form_is_reached_with_tab_shows_focus_and_sends_with_enter(served, page):
    served.start_paused("b5")
    page.goto(served.base + "/runs/b5")
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "reply":
            break
    else:
        raise AssertionError("Tab never reached the reply field")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.keyboard.press("Control+A")
    page.keyboard.type('{"Ok": "Safari 17.4"}')
    page.keyboard.press("Enter")
    expect(page.locator("tr.End")).to_contain_text(DONE, timeout=20_000)
    assert served.state("b5") == "completed"


def test_the_live_page_shows_a_reply_delivered_elsewhere_without_a_reload(served, page):
    served.start_paused("b6")
    page.goto(served.base + "/runs/b6")
    expect(page.locator("form.reply")).to_have_count(1)
    body = json.dumps({"call": ASK_ID, "reply": {"Ok": "Safari 17.4"}}).encode()
    req = urllib.request.Request(served.base + "/runs/b6/replies", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 202
    expect(page.locator("tr.End")).to_contain_text(DONE, timeout=20_000)
    expect(page.locator("form.reply")).to_have_count(0)


@pytest.fixture(scope="module")
def paused(served) -> str:
    """A run left paused on its question, for the tests that only look."""
    served.start_paused("b0")
    return "b0"


@pytest.mark.parametrize("width", [1280, 390])
def test_the_pages_have_no_horizontal_overflow_at_1280_and_at_a_narrow_width(served, paused, browser, width):
    context = browser.new_context(viewport={"width": width, "height": 800})
    pg = context.new_page()
    try:
        for path in ("/", f"/runs/{paused}"):
            pg.goto(served.base + path)
            over = pg.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert over <= 0, f"{path} at {width}px is {over}px too wide"
        assert _reply_field(pg).is_visible()
    finally:
        context.close()


def test_the_static_export_opens_offline_from_a_file_asks_for_nothing_and_holds_every_fact(
    served, browser, tmp_path
):
    served.start_paused("b7")
    exported = tmp_path / "run.html"
    exported.write_text(served.history("b7", "html"), encoding="utf-8")
    facts = [json.loads(x) for x in served.history("b7", "json").splitlines()]
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    asked: list[str] = []
    context.route(
        "**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else route.abort()
    )
    context.on("request", lambda req: asked.append(req.url))
    try:
        pg = context.new_page()
        pg.goto(exported.as_uri())
        assert asked == [exported.as_uri()]  # the file itself, nothing else
        kinds = pg.evaluate(
            "[...document.querySelectorAll('tr[class]')].filter(r => r.querySelector('td.kind'))"
            ".map(r => [r.querySelector('td.n').innerText, r.querySelector('td.kind').innerText])"
        )
        assert [(str(f["n"]), f["kind"]) for f in facts] == [tuple(k) for k in kinds]
        text = pg.inner_text("body")
        for f in facts:
            words = {"Call": f.get("tool"), "Reply": f.get("reply"), "End": f.get("end")}.get(f["kind"])
            assert words is None or words in text
        assert pg.locator("form").count() == 0 and pg.locator("script").count() == 0
        expect(pg.locator("h2", has_text="What it waits on")).to_be_visible()
    finally:
        context.close()
