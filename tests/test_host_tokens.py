"""Host tokens only from the host (DESIGN.md: "only values the host itself issued"): a token a Tool
implementation returns, or one the host issues in code, may be handed to runs of the store; any
other token in input or a delivered reply is refused with its path, and nothing is recorded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import flowrt as rt
from flow2py import host as fhost
from flowrt.host import Host, Refused
from flowrt.history.store import Store, StoreError
from history_e2e_helpers import Cli

BROWSER = """\
@tool pub type Page
@tool pub type Tab
@tool pub flow open(url: Text) -> Result<Page, Text>
@tool pub flow read(page: Page) -> Result<Text, Text>
@tool pub flow wait(page: Page) -> Result<Page, Text>
"""

MAIN = """\
use "./browser"

pub flow main(u: Text) -> Text !tool = match browser.open(u) {
    Ok(p) => go(p),
    Err(_) => "no page",
}

pub flow go(p: browser.Page) -> Text !tool = match browser.read(p) {
    Ok(t) => t,
    Err(_) => "no text",
}

pub flow hold(u: Text) -> Text !tool = match browser.open(u) {
    Ok(p) => match browser.wait(p) {
        Ok(q) => go(q),
        Err(_) => "no wait",
    },
    Err(_) => "no page",
}
"""

# `open` answers in plain JSON form, or (url "value:...") with a flowrt.HostToken value.
TOOLS = """\
import flowrt
from flowrt import bind, pending


@bind("browser.open")
def open_(url):
    if url.startswith("value:"):
        return flowrt.Ok(flowrt.HostToken("browser::Page", "tab-" + url[6:]))
    return {"Ok": {"$token": "tab-" + url}}


@bind("browser.read")
def read(page):
    return {"Ok": "contents of " + page["$token"]}


@bind("browser.wait")
def wait(page):
    return pending
"""


@pytest.fixture
def cli(tmp_path):
    (tmp_path / "browser.flow").write_text(BROWSER)
    (tmp_path / "main.flow").write_text(MAIN)
    (tmp_path / "tools.py").write_text(TOOLS)
    return Cli(tmp_path)


def _run(cli, *args):
    return cli("run", cli.d / "main.flow", "--tools", cli.d / "tools.py", *args)


def _issued(cli):
    with cli.db() as db:
        return db.execute("SELECT type_id, token, run, call FROM host_tokens ORDER BY token").fetchall()


def test_a_forged_token_in_run_input_is_refused_and_no_store_is_created(cli):
    r = _run(cli, "--entry", "go", "--input", '{"p": {"$token": "never-issued"}}', "--run-id", "x")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "flow2py: --input: $.p: Page token 'never-issued' was not issued by this host "
        "(a token comes from a Tool's reply or the host's Host.issue_token)"
    ]
    assert not (cli.d / "runs.db").exists()


def test_a_forged_token_in_run_input_is_refused_and_nothing_recorded_in_a_store(cli):
    assert _run(cli, "--input", '{"u": "a"}', "--run-id", "a").exit_code == 0
    before = cli("runs").stdout
    r = _run(cli, "--entry", "go", "--input", '{"p": {"$token": "forged"}}', "--run-id", "x")
    assert r.exit_code == 1 and "--input: $.p: Page token 'forged' was not issued by this host" in r.stderr
    assert cli("runs").stdout == before


def test_a_token_a_tool_returns_is_issued_with_its_reply_and_may_go_to_another_run(cli):
    assert _run(cli, "--input", '{"u": "a"}', "--run-id", "a").stdout.strip() == '"contents of tab-a"'
    assert _issued(cli) == [("browser::Page", "tab-a", "a", "root#1")]
    r = _run(cli, "--entry", "go", "--input", '{"p": {"$token": "tab-a"}}', "--run-id", "b")
    assert (r.exit_code, r.stdout.strip()) == (0, '"contents of tab-a"')
    assert _issued(cli) == [("browser::Page", "tab-a", "a", "root#1")]  # handing it in issues nothing


def test_a_tool_returning_a_host_token_value_issues_it(cli):
    assert _run(cli, "--input", '{"u": "value:v"}', "--run-id", "a").stdout.strip() == '"contents of tab-v"'
    assert _issued(cli) == [("browser::Page", "tab-v", "a", "root#1")]


def test_the_same_text_as_a_token_of_another_tool_type_is_another_token(cli):
    assert _run(cli, "--input", '{"u": "a"}', "--run-id", "a").exit_code == 0
    with cli.db() as db:  # as if a Tab token with this text had been issued instead
        db.execute("UPDATE host_tokens SET type_id='browser::Tab'")
    r = _run(cli, "--entry", "go", "--input", '{"p": {"$token": "tab-a"}}', "--run-id", "b")
    assert r.exit_code == 1 and "$.p: Page token 'tab-a' was not issued by this host" in r.stderr


def test_a_forged_token_in_a_resume_reply_is_refused_and_nothing_recorded(cli):
    assert _run(cli, "--entry", "hold", "--input", '{"u": "h"}', "--run-id", "h").exit_code == 3
    before = cli.facts("h")
    r = cli("resume", "h", "--tools", cli.d / "tools.py", "--reply", 'root#2={"Ok": {"$token": "forged"}}')
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "flow2py: --reply root#2: $.Ok: Page token 'forged' was not issued by this host "
        "(a token comes from a Tool's reply or the host's Host.issue_token); nothing was recorded"
    ]
    assert cli.facts("h") == before
    assert [t for _, t, _, _ in _issued(cli)] == ["tab-h"]
    # a token the host did issue is admitted in a reply, and the run goes on with it
    r = cli("resume", "h", "--tools", cli.d / "tools.py", "--reply", 'root#2={"Ok": {"$token": "tab-h"}}')
    assert (r.exit_code, r.stdout.strip()) == (0, '"contents of tab-h"')
    assert cli("replay", "h").stdout == "Matched\n"


def test_a_host_application_issues_tokens_in_code_to_hand_a_run_a_primary_and_a_backup_model(tmp_path):
    (tmp_path / "models.flow").write_text(
        "@tool pub type Model\n@tool pub flow chat(model: Model, prompt: Text) -> Result<Text, Text>\n"
    )
    (tmp_path / "main.flow").write_text(
        'use "./models"\n\n'
        "pub flow main(primary: models.Model, backup: models.Model, prompt: Text) -> Text !tool =\n"
        "    match models.chat(primary, prompt) {\n"
        "        Ok(answer) => answer,\n"
        "        Err(_) => match models.chat(backup, prompt) {\n"
        "            Ok(answer) => answer,\n"
        '            Err(_) => "no model answered",\n'
        "        },\n"
        "    }\n"
    )
    program = fhost.compile_path(str(tmp_path / "main.flow")).program
    seen = []

    def chat(model, prompt):
        seen.append(model["$token"])
        if model["$token"] == "primary":
            raise rt.NotRun("primary is down")
        return {"Ok": f"{model['$token']} says hi to {prompt}"}

    bindings = rt.Bindings()
    bindings.bind("models.chat", chat)
    host = Host(str(tmp_path / "runs.db"), bindings=bindings)
    with pytest.raises(
        Refused, match=r"--input: \$\.primary: Model token 'primary' was not issued by this host"
    ):
        host.start(
            program, input={"primary": {"$token": "primary"}, "backup": {"$token": "backup"}, "prompt": "Ann"}
        )
    assert host.runs() == []
    primary = host.issue_token("models::Model", "primary")
    with pytest.raises(Refused, match=r"\$\.backup: Model token 'backup' was not issued"):
        host.start(
            program,
            input={"primary": primary, "backup": rt.HostToken("models::Model", "backup"), "prompt": "Ann"},
        )
    backup = host.issue_token("models::Model", "backup")
    r = host.start(
        program, input={"primary": primary, "backup": {"$token": "backup"}, "prompt": "Ann"}, run_id="m"
    )
    assert (r.exit_code, r.text) == (0, '"backup says hi to Ann"')
    assert seen == ["primary", "backup"]
    assert host.store.host_records.token_issuer("models::Model", "backup") == (None, None)
    assert backup == rt.HostToken("models::Model", "backup")
    assert host.replay(program, "m").text == "Matched"
    with pytest.raises(Refused, match=r"a host token is issued as \(type identity like"):
        host.issue_token("Model", "x")


def _older_store(cli):
    """A store with a run of tokens, as this version's predecessor left it: no token record."""
    assert _run(cli, "--input", '{"u": "a"}', "--run-id", "a").exit_code == 0
    with cli.db() as db:
        db.execute("DROP TABLE host_tokens")


def _has_token_table(cli) -> bool:
    with cli.db() as db:
        return db.execute("SELECT 1 FROM sqlite_master WHERE name='host_tokens'").fetchone() is not None


def test_readers_of_a_store_made_before_the_token_record_write_nothing_and_a_writer_adds_it(cli):
    _older_store(cli)
    assert "a  completed" in cli("runs").stdout
    assert cli("replay", "a").stdout == "Matched\n"
    assert cli("verify", "a").exit_code == 0
    assert cli("history", "a").stdout.splitlines()[-1].split(maxsplit=2)[1:] == [
        "End",
        'Completed("contents of tab-a")',
    ]
    assert not _has_token_table(cli)  # the readers opened it read-only
    r = _run(cli, "--entry", "go", "--input", '{"p": {"$token": "tab-a"}}', "--run-id", "b")
    assert r.exit_code == 1 and "was not issued by this host" in r.stderr
    assert _issued(cli) == []  # the writer made the table, empty: the old run's tokens were never recorded
    store = Store(cli.store)
    store.host_records.issue_token("browser::Page", "tab-a")  # the host vouches for it again, in code
    store.close()
    r = _run(cli, "--entry", "go", "--input", '{"p": {"$token": "tab-a"}}', "--run-id", "b")
    assert (r.exit_code, r.stdout.strip()) == (0, '"contents of tab-a"')


def test_a_read_only_open_of_a_store_made_before_the_token_record_sees_no_tokens_issued(cli):
    _older_store(cli)
    store = Store(cli.store, readonly=True)  # SQLite's mode=ro: what runs, history, replay, verify use
    assert store.host_records.load_run("a").state == "completed"
    assert store.history.verify("a")[0]
    assert store.host_records.token_issuer("browser::Page", "tab-a") is None  # no tokens issued
    with pytest.raises(StoreError, match="is read-only here"):
        store.host_records.issue_token("browser::Page", "tab-a")  # writing is refused, nothing changed
    store.close()
    assert not _has_token_table(cli)


def test_a_store_made_before_the_token_record_in_a_file_sqlite_cannot_write_opens_for_reading(
    cli, monkeypatch
):
    """A plain open (the Python host API's) of a file the process cannot write. The tests run as
    root, whom chmod does not stop, so the file is opened the way SQLite opens a file it may not
    write: read-only (SQLITE_OPEN_READONLY, what `mode=ro` asks for), whatever the store asked."""
    _older_store(cli)
    connect = sqlite3.connect

    def unwritable(path, *args, **kw):
        return connect(f"{Path(path).absolute().as_uri()}?mode=ro", *args, **dict(kw, uri=True))

    monkeypatch.setattr(sqlite3, "connect", unwritable)
    host = Host(cli.store)
    assert host.store.readonly and host.store.host_records.token_issuer("browser::Page", "tab-a") is None
    assert [r.state for r in host.store.host_records.runs()] == ["completed"]
    with pytest.raises(Refused, match="read-only"):
        host.issue_token("browser::Page", "tab-a")
    host.store.close()
    monkeypatch.undo()
    assert not _has_token_table(cli)


def test_issuing_a_token_twice_keeps_its_first_issuer(tmp_path):
    store = Store(tmp_path / "runs.db")
    assert store.host_records.token_issuer("browser::Page", "t") is None
    store.host_records.issue_token("browser::Page", "t")
    store.host_records.issue_token("browser::Page", "t")
    assert store.host_records.token_issued("browser::Page", "t") and not store.host_records.token_issued(
        "browser::Tab", "t"
    )
    with sqlite3.connect(tmp_path / "runs.db") as db:
        assert db.execute("SELECT count(*) FROM host_tokens").fetchone() == (1,)
    store.close()


def test_compiled_and_plain_admission_refuse_an_unissued_token_alike():
    from flowrt.data.decoding import DecodeError, compile_decoder, decode
    from flowrt.history.tokens import Issued, admitting
    from flowrt.data.typedesc import T

    desc = T.ResultOf(T.ListOf(T.Token("browser::Page")), T.TEXT)
    value = {"Ok": [{"$token": "known"}, {"$token": "forged"}]}
    policy = Issued(lambda type_id, token: (type_id, token) == ("browser::Page", "known"))
    for f in (lambda v: decode(desc, v), compile_decoder(desc)):
        with admitting(policy), pytest.raises(DecodeError) as e:
            f(value)
        assert str(e.value).startswith("$.Ok[1]: Page token 'forged' was not issued by this host")
        assert f(value) == rt.Ok(
            rt.list_of([rt.HostToken("browser::Page", "known"), rt.HostToken("browser::Page", "forged")])
        )  # no policy: as given
