"""The run page (`flow2py history RUN --format html`, flowrt.host.run_page): the support example's
page holds every fact, what the paused run waits on with the commands that answer it, the
checkpoints as `fork --checkpoint N` numbers them, the host's times; hostile text is shown as
text, long values fold, and the page loads nothing from anywhere (docs/spec/trace.md, "The run page")."""

from __future__ import annotations

import html
import json
import re
import time

import pytest

from flowrt.history.store import Store
from flowrt.host.run_page import RunPage, page_html
from tests.history_e2e_helpers import Cli
from tests.repo_paths import SUPPORT_DIR, SUPPORT_MAIN

TICKET = json.dumps({"ticket": "Login fails on Safari"})
ASK_ID = "c1:root#2"


@pytest.fixture
def cli(tmp_path):
    return Cli(tmp_path)


def _run(cli: Cli, run_id: str = "s", ticket: str = TICKET):
    r = cli(
        "run", SUPPORT_MAIN, "--input", ticket, "--tools", SUPPORT_DIR / "tools.py", "--run-id", run_id,
        "--checkpoint-every", "1",
    )  # fmt: skip
    assert r.exit_code == 3, r.stdout + r.stderr
    return r


def _page(cli: Cli, run_id: str = "s") -> str:
    r = cli("history", run_id, "--format", "html")
    assert r.exit_code == 0, r.stderr
    return r.stdout


def _text(page: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.split("</style>", 1)[1]))


def test_the_paused_support_page_holds_every_fact_and_what_it_waits_on_with_the_commands(cli):
    _run(cli)
    page, facts = _page(cli), cli.facts("s")
    text = _text(page)
    assert len(facts) == 12
    for f in facts:
        assert f'<td class="n">{f["n"]}</td><td class="kind">{f["kind"]}</td>' in page
    assert "paused on human.ask (c1:root#2)" in text
    wait = text.split("What it waits on", 1)[1].split("Timeline", 1)[0]
    assert ASK_ID in wait and "human.ask" in wait and "Result<Text, Text>" in wait
    assert '"Which Safari version does the customer use?"' in wait
    assert f"""flow2py reply s '{ASK_ID}={{"Ok": "..."}}' --store {cli.store}""" in wait
    assert f"""flow2py resume s --reply '{ASK_ID}={{"Ok": "..."}}' --store {cli.store}""" in wait
    assert "History itself records no times" in text


def test_the_timeline_joins_each_call_to_its_reply_or_stop_and_the_tree_says_choice_and_stop(cli):
    _run(cli)
    page = _page(cli)
    text = _text(page)
    assert 'web.search("safari login cookie") → stopped at fact 8 (root/1) with no reply' in text
    assert (
        'docs.search("safari login cookie") → reply at fact 6: Ok("SameSite=None requires Secure ...")'
        in text
    )
    assert 'human.ask("Which Safari version does the customer use?") → open: no reply yet' in text
    tree = text.split("Tasks", 1)[1]
    assert "race in root picked root/2; root/1 stopped with no reply" in tree
    assert "root/1 stopped (was still running); root/1#1 closed with no reply" in tree
    heads = re.findall(r'<b class="mono">([^<]+)</b>', page)
    assert heads == ["root", "root/1", "root/2"]


def test_checkpoints_are_numbered_as_fork_numbers_them_and_the_number_forks(cli):
    _run(cli)
    page = _page(cli)
    cps = [f for f in cli.facts("s") if f["kind"] == "Checkpoint"]
    assert cps
    for f in cps:
        assert f'<td class="n">{f["checkpoint"]}</td><td class="n">{f["n"]}</td>' in page
        assert f"flow2py fork s --checkpoint {f['checkpoint']}" in page
    assert 'work("Login fails on Safari", ["SameSite=None requires Secure ..."], 2)' in _text(page)
    n = cps[0]["checkpoint"]
    r = cli("fork", "s", "--checkpoint", n, "--tools", SUPPORT_DIR / "tools.py", "--run-id", "f")
    assert r.exit_code == 3, r.stdout + r.stderr
    assert f"fork of s at checkpoint {n}" in _text(_page(cli, "f"))


def test_hostile_input_and_reply_are_shown_as_text_and_a_long_value_folds(cli):
    hostile = "</script><script>alert(1)</script><b>\"q\" & 'x'"
    _run(cli, "h", json.dumps({"ticket": hostile}))
    long_reply = "<script>evil()</script>" + "x" * 200
    r = cli(
        "resume",
        "h",
        "--reply",
        f"{ASK_ID}={json.dumps({'Ok': long_reply})}",
        "--tools",
        SUPPORT_DIR / "tools.py",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    page = _page(cli, "h")
    assert "<script" not in page and "<b>" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page and "&lt;script&gt;evil()" in page
    assert "<details>" in page and long_reply in _text(page)
    assert "state-completed" in page and "What it waits on" not in page


def test_the_page_loads_nothing_from_anywhere(cli):
    _run(cli)
    page = _page(cli)
    for needle in ("http", "//", "src=", "<script", "<link", "@import", "url("):
        assert needle not in page.lower(), needle


def test_a_call_the_host_kept_no_time_for_shows_its_first_attempts_start(cli):
    _run(cli)
    t0 = time.time() - 5
    with Store(cli.store) as store:  # as a store made before call_times: the worker's attempt is shown
        with store.file.transaction() as db:
            db.execute("DELETE FROM call_times WHERE run='s'")
        store.worker_records.record_attempt("s", "root/2#1", 1, t0, "ok")
    assert f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t0))}." in _page(cli)
    info = type("Info", (), {"state": "completed", "open_calls": (), "program": "p" * 12, "entry": "main"})
    info.facts, info.created, info.parent, info.from_checkpoint, info.owner, info.meta = (
        1,
        t0,
        None,
        None,
        None,
        {},
    )
    from flowrt.host.run_page import _CallTimes

    call = {"n": 1, "kind": "Call", "id": "root#1", "tool": "t.x", "args": []}
    page = page_html(RunPage("r", info, [call], times={"root#1": _CallTimes(t0, None, t0 + 2.5)}))
    assert "2.500 s" in page


def test_an_unknown_run_is_refused_in_one_line(cli):
    _run(cli)
    r = cli("history", "nope", "--format", "html")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1 and "nope" in r.stderr


def test_a_redacted_value_shows_as_its_hole(cli):
    _run(cli)
    ask = next(f for f in cli.facts("s") if f["kind"] == "Call" and f["id"] == ASK_ID)
    r = cli("redact", "s", "--value", ask["values"][0])
    assert r.exit_code == 0, r.stdout + r.stderr
    text = _text(_page(cli))
    assert f"human.ask(<hole blake3:{ask['values'][0]}>)" in text
    assert 'human.ask("Which Safari' not in text


def test_flow2py_run_keeps_every_calls_times_and_call_site_and_the_page_links_them(cli):
    _run(cli)
    facts = cli.facts("s")
    with Store(cli.store) as store:
        kept = store.host_records.call_times("s")
        source = store.history.sources("s")["main"].splitlines()
    calls = [f for f in facts if f["kind"] == "Call"]
    assert set(kept) == {f["id"] for f in calls}
    for f in calls:
        dispatched, replied, module, line = kept[f["id"]]
        assert module == "main" and f["tool"] in source[line - 1], (f, source[line - 1])
        assert dispatched is not None and (replied is None) == (f["id"] == ASK_ID)
    page = _page(cli)
    assert "<h2>Sources</h2>" in page and "<form" not in page
    for f in calls:
        line = kept[f["id"]][3]
        assert f'href="#src-1-{line}">main.flow:{line}</a>' in page
        assert f'<span class="line called" id="src-1-{line}"><span class="ln">{line}</span>' in page


def test_a_store_made_before_call_times_and_the_runs_index_gets_them_from_its_first_writer(cli):
    _run(cli)
    with cli.db() as db:
        db.execute("DROP TABLE call_times")
        db.execute("DROP INDEX runs_by_created")
    page = _page(cli)  # a reader: the table is read as empty, the page shows no times or sources
    assert "<h2>Sources</h2>" not in page and f'<td class="n">{len(cli.facts("s"))}</td>' in page
    with Store(cli.store) as store:  # a writer's open makes them
        names = {r[0] for r in store.file.db.execute("SELECT name FROM sqlite_master")}
    assert {"call_times", "runs_by_created"} <= names
