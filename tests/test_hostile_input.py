"""Hostile input is refused at once, in one line naming the path, with nothing recorded: JSON
nested thousands deep, numbers of thousands of digits, Decimals of a billion digits written out,
lone surrogates, duplicate keys; through `run --input`, `resume --reply`, `fork --input` and the
Python host API (docs/spec/data.md, "Bounds"). How fast each refusal is: bench/bench_input.py."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest
from click.testing import CliRunner

from flow2py import host as fhost
from flow2py.cli import main
from flowrt.host import Host, Refused
from flowrt.history.store import Store

FEED = """\
pub type Note { text: Text, n: Int, d: Decimal, tags: Dict<Text, Int> }
@tool pub flow tick(x: Int) -> Result<Int, Text>
@tool pub flow more(x: Int) -> Result<List<Note>, Text>
"""

# `tick` answers, `loop` takes a checkpoint (--checkpoint-every 1), then `more` is left pending:
# one run gives a checkpoint to fork from and an open call to reply to.
MAIN = """\
use "./hostilefeed"

pub flow main(notes: List<hostilefeed.Note>, x: Int) -> Int !tool = loop(notes, x, 0)

flow loop(notes: List<hostilefeed.Note>, x: Int, round: Int) -> Int !tool = if round >= 1 {
    match hostilefeed.more(x) {
        Ok(more) => notes.length() + more.length() + x,
        Err(_) => -1,
    }
} else {
    match hostilefeed.tick(x) {
        Ok(_) => loop(notes, x, round + 1),
        Err(_) => -2,
    }
}
"""

TOOLS = """\
from flowrt import bind, pending

bind("hostilefeed.tick", lambda x: {"Ok": x})
bind("hostilefeed.more", lambda x: pending)
"""

NOTE = '{"text": "a", "n": 1, "d": "1.5", "tags": {"k": 1}}'

# name: (a JSON value for `List<Note>`, the path inside it, the refusal). The first three and the
# last are refused while the text is parsed, the others when the value meets its type.
HOSTILE = {
    "nested 2,000 levels": (
        "[" * 2000 + "]" * 2000,
        "[0][0][0][0][0][0][0]...",
        "nested deeper than 128 arrays/objects",
    ),
    "nested 100,000 levels": (
        "[" * 100_000 + "]" * 100_000,
        "[0][0][0][0][0][0][0]...",
        "nested deeper than 128 arrays/objects",
    ),
    "an integer of 5,001 digits": (
        NOTE.replace('"n": 1', '"n": 1' + "0" * 5000).join("[]"),
        "[0].n",
        "a number of 5001 digits; at most 4300 are admitted",
    ),
    "the Decimal text 1e999999999": (
        NOTE.replace('"1.5"', '"1e999999999"').join("[]"),
        "[0].d",
        "a Decimal of 1000000000 digits written out; at most 4300 are admitted",
    ),
    "the JSON number 1e999999999": (
        NOTE.replace('"1.5"', "1e999999999").join("[]"),
        "[0].d",
        "a Decimal of 1000000000 digits written out; at most 4300 are admitted",
    ),
    "a lone surrogate in a Text": (
        NOTE.replace('"a"', '"x\\ud800"').join("[]"),
        "[0].text",
        "not Unicode text: a lone surrogate U+D800 at character 1",
    ),
    "a lone surrogate in a Dict key": (
        NOTE.replace('"k"', '"\\udc00"').join("[]"),
        '[0].tags.<key "\\udc00">',
        "not Unicode text: a lone surrogate U+DC00 at character 0",
    ),
    "a duplicate key": (NOTE.replace('"n": 1', '"n": 1, "n": 2').join("[]"), "[0]", 'duplicate key "n"'),
}
TEXT_LEVEL = {"nested 2,000 levels", "nested 100,000 levels", "an integer of 5,001 digits", "a duplicate key"}


def reply_refusal(call: str, case: str, path: str, why: str) -> str:
    if case in TEXT_LEVEL:
        return f"--reply {call}: {path}: {why}"
    return f"--reply {call}: the reply does not fit hostilefeed.more's result: {path}: {why}"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture()
def prog(tmp_path):
    (tmp_path / "hostilefeed.flow").write_text(FEED)
    (tmp_path / "main.flow").write_text(MAIN)
    (tmp_path / "hostile_tools.py").write_text(TOOLS)
    return tmp_path


def refusal(r) -> list:
    assert r.exit_code == 1, r.output
    return r.stderr.splitlines()


@pytest.fixture()
def paused(prog):
    """A run with a checkpoint (checkpoint 1) and its `more` call open."""
    db = prog / "runs.db"
    r = invoke(
        "run",
        prog / "main.flow",
        "--input",
        '{"notes": [' + NOTE + '], "x": 1}',
        "--tools",
        prog / "hostile_tools.py",
        "--store",
        db,
        "--run-id",
        "p",
        "--checkpoint-every",
        "1",
    )
    assert r.exit_code == 3, r.output
    call = r.stdout.splitlines()[1].split()[0]
    return db, call


def _state(db):
    store = Store(str(db))
    try:
        return [(r.id, r.state, r.facts) for r in store.host_records.runs()]
    finally:
        store.close()


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_run_input_is_refused_in_one_line_and_no_store_is_created(prog, case):
    notes, where, why = HOSTILE[case]
    db = prog / "new.db"
    r = invoke("run", prog / "main.flow", "--input", '{"notes": ' + notes + ', "x": 1}', "--store", db)
    assert refusal(r) == [f"flow2py: --input: $.notes{where}: {why}"]
    assert not db.exists()


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_reply_is_refused_in_one_line_and_nothing_is_appended(paused, prog, case):
    db, call = paused
    notes, where, why = HOSTILE[case]
    before = _state(db)
    r = invoke(
        "resume",
        "p",
        "--reply",
        f'{call}={{"Ok": {notes}}}',
        "--tools",
        prog / "hostile_tools.py",
        "--store",
        db,
    )
    assert refusal(r) == ["flow2py: " + reply_refusal(call, case, f"$.Ok{where}", why)]
    assert _state(db) == before and before[0][1] == "paused"
    assert invoke("verify", "p", "--store", db).exit_code == 0


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_fork_input_is_refused_in_one_line_and_no_run_is_made(paused, prog, case):
    db, _ = paused
    notes, where, why = HOSTILE[case]
    before = _state(db)
    r = invoke(
        "fork",
        "p",
        "--checkpoint",
        "1",
        "--input",
        '{"notes": ' + notes + ', "x": 1, "round": 1}',
        "--tools",
        prog / "hostile_tools.py",
        "--store",
        db,
    )
    assert refusal(r) == [f"flow2py: --input: $.notes{where}: {why}"]
    assert _state(db) == before


def test_flow2py_host_api_refuses_hostile_json_text_before_opening_the_store(prog):
    db = str(prog / "api.db")
    for case, (notes, where, why) in HOSTILE.items():
        with pytest.raises(Refused) as e:
            fhost.start(str(prog / "main.flow"), input_json='{"notes": ' + notes + ', "x": 1}', store_path=db)
        assert str(e.value) == f"--input: $.notes{where}: {why}" and e.value.exit_code == 1
        if case in TEXT_LEVEL:  # refused before the store is opened
            with pytest.raises(Refused) as e:
                fhost.resume("p", replies=[f'root#1={{"Ok": {notes}}}'], store_path=db)
            assert str(e.value) == reply_refusal("root#1", case, f"$.Ok{where}", why)
    assert not os.path.exists(db)


CHAIN = """\
pub type Chain { End, Link(Chain) }
pub flow main(c: Chain) -> Chain = c
"""


def test_json_at_the_bounds_is_admitted_recorded_shown_and_replayed(tmp_path):
    (tmp_path / "chain.flow").write_text(CHAIN)
    db = tmp_path / "chain.db"
    links = 127  # the input object is the first level: 128 in all, the bound itself
    r = invoke(
        "run",
        tmp_path / "chain.flow",
        "--input",
        '{"c": ' + '{"Link": ' * links + '"End"' + "}" * links + "}",
        "--store",
        db,
        "--run-id",
        "deep",
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == "Link(" * links + "End" + ")" * links + "\n"
    assert invoke("replay", "deep", "--store", db).stdout == "Matched\n"
    assert invoke("history", "deep", "--store", db, "--format", "json").exit_code == 0
    r = invoke(
        "run",
        tmp_path / "chain.flow",
        "--input",
        '{"c": ' + '{"Link": ' * 128 + '"End"' + "}" * 128 + "}",
        "--store",
        tmp_path / "no.db",
    )
    assert refusal(r) == [
        "flow2py: --input: $.c.Link.Link.Link.Link.Link.Link.Link...: nested deeper than 128 arrays/objects"
    ]


def test_numbers_at_the_bounds_brackets_in_strings_and_surrogate_pairs_are_admitted(prog):
    note = NOTE.replace('"n": 1', '"n": 1' + "0" * 4299).replace('"1.5"', '"1e4299"')  # 4,300 digits each
    text = NOTE.replace('"a"', '"' + "[{" * 5000 + '\\ud83d\\ude00"')  # an escaped pair: one code point
    r = invoke(
        "run",
        prog / "main.flow",
        "--input",
        '{"notes": [' + note + ", " + text + '], "x": 1}',
        "--tools",
        prog / "hostile_tools.py",
        "--store",
        prog / "ok.db",
        "--run-id",
        "ok",
    )
    assert r.exit_code == 3, r.output  # admitted: the run pauses on `more`
    start = invoke("history", "ok", "--store", prog / "ok.db").stdout.splitlines()[0]
    # a Decimal without a fraction is written as the std call that makes it (data.md "Text")
    assert "n: 1" + "0" * 4299 + "," in start and "d: decimal.from_int(1" + "0" * 4299 + ")," in start
    assert 'text: "' + "[{" * 5000 + '\U0001f600"' in start


# ---- the Python host API: values, not text --------------------------------------------------------


def _deep_list(n):
    v: list = []
    for _ in range(n):
        v = [v]
    return v


def _cycle():
    v: list = []
    v.append(v)
    return v


def _note(**change):
    note = {"text": "a", "n": 1, "d": "1.5", "tags": {"k": 1}}
    note.update(change)
    return note


# name: (a Python value for `notes`, the path, the refusal)
HOSTILE_VALUES = {
    "a list nested 100,000 deep": (
        _deep_list(100_000),
        "$.notes[0]",
        "expected Note, got " + "[" * 57 + "...",
    ),
    "a list that contains itself": (_cycle(), "$.notes[0]", "expected Note, got " + "[" * 57 + "..."),
    "an int of 5,001 digits": (
        [_note(n=10**5000)],
        "$.notes[0].n",
        "an integer of more than 4300 digits is not admitted",
    ),
    "the Decimal 1e999999999": (
        [_note(d=Decimal("1e999999999"))],
        "$.notes[0].d",
        "a Decimal of 1000000000 digits written out; at most 4300 are admitted",
    ),
    "the text 1e999999999 as a Decimal": (
        [_note(d="1e999999999")],
        "$.notes[0].d",
        "a Decimal of 1000000000 digits written out; at most 4300 are admitted",
    ),
    "the Decimal 1e-999999999": (
        [_note(d=Decimal("1e-999999999"))],
        "$.notes[0].d",
        "a Decimal of 1000000000 digits written out; at most 4300 are admitted",
    ),
    "a lone surrogate in a Text": (
        [_note(text="\ud800")],
        "$.notes[0].text",
        "not Unicode text: a lone surrogate U+D800 at character 0",
    ),
    "a lone surrogate in a Dict key": (
        [_note(tags={"\udfff": 1})],
        '$.notes[0].tags.<key "\\udfff">',
        "not Unicode text: a lone surrogate U+DFFF at character 0",
    ),
}


@pytest.mark.parametrize("case", HOSTILE_VALUES)
def test_host_api_refuses_hostile_python_values_and_records_nothing(prog, case):
    loaded = fhost.compile_path(str(prog / "main.flow"))
    value, where, why = HOSTILE_VALUES[case]
    host = Host(str(prog / "host.db"))
    with pytest.raises(Refused) as e:
        host.start(loaded.program, input={"notes": value, "x": 1})
    assert str(e.value) == f"--input: {where}: {why}"
    assert e.value.exit_code == 1 and host.runs() == []


@pytest.mark.parametrize("case", HOSTILE_VALUES)
def test_host_api_refuses_a_hostile_reply_and_appends_nothing(paused, prog, case):
    db, call = paused
    value, where, why = HOSTILE_VALUES[case]
    loaded = fhost.compile_stored(Store(str(db)), "p")
    host = Host(str(db))
    before = _state(db)
    with pytest.raises(Refused) as e:
        host.resume(loaded.program, "p", replies={call: {"Ok": value}})
    assert str(e.value) == (
        f"--reply {call}: the reply does not fit hostilefeed.more's result: "
        f"{where.replace('$.notes', '$.Ok')}: {why}"
    )
    assert _state(db) == before
