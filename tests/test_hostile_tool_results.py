"""A Python Tool returning a hostile value in plain form gets `Err(Malformed("$.path: ..."))`
recorded as its reply, at once, and the run goes on (docs/spec/data.md, "Bounds"): values nested a
hundred thousand deep or containing themselves, lone surrogates, Decimals of a billion digits
written out, Ints beyond 4,300 digits, Instants no calendar writes."""

from __future__ import annotations

from decimal import Decimal

import pytest

import flowrt as rt
from flow2py import host as fhost
from flowrt.host import Host
from flowrt.data.values import show

TOOLS = """\
pub type Note { text: Text, n: Int, d: Decimal, tags: Dict<Text, Int> }
pub type Chain { End, Link(Chain) }
@tool pub flow notes(x: Int) -> Result<List<Note>, Text>
@tool pub flow chain(x: Int) -> Result<Chain, Text>
@tool pub flow when(x: Int) -> Result<Instant, Text>
@tool pub type Page
@tool pub flow page(x: Int) -> Result<Page, Text>
"""


def _entry(tool: str) -> str:
    return f"""
pub flow {tool}_main() -> Text !tool = match hostiletools.{tool}(1) {{
    Ok(_) => "admitted",
    Err(Malformed(why)) => "Malformed: " ++ why,
    Err(_) => "another problem",
}}
"""


MAIN = 'use "./hostiletools"\n' + "".join(_entry(t) for t in ("notes", "chain", "when", "page"))


def _deep(n, wrap):
    v = wrap(None)
    for _ in range(n):
        v = wrap(v)
    return v


def _self_list():
    v: list = []
    v.append(v)
    return v


def _self_link():
    v: dict = {}
    v["Link"] = v
    return v


def _note(**change):
    note = {"text": "a", "n": 1, "d": "1.5", "tags": {"k": 1}}
    note.update(change)
    return note


# name: (tool, what it returns, what the program receives after "Malformed: ")
CASES = {
    "a list nested 100,000 deep": (
        "notes",
        {"Ok": _deep(100_000, lambda v: [] if v is None else [v])},
        "$.Ok[0]: expected Note, got " + "[" * 57 + "...",
    ),
    "a list that contains itself": (
        "notes",
        {"Ok": _self_list()},
        "$.Ok[0]: expected Note, got " + "[" * 57 + "...",
    ),
    "a recursive type nested 100,000 deep": (
        "chain",
        {"Ok": _deep(100_000, lambda v: "End" if v is None else {"Link": v})},
        "$.Ok.Link.Link.Link.Link.Link.Link.Link...: nested deeper than 128 levels",
    ),
    "a recursive value that contains itself": (
        "chain",
        {"Ok": _self_link()},
        "$.Ok.Link.Link.Link.Link.Link.Link.Link...: nested deeper than 128 levels",
    ),
    "a lone surrogate in a Text": (
        "notes",
        {"Ok": [_note(text="ab\ud800")]},
        "$.Ok[0].text: not Unicode text: a lone surrogate U+D800 at character 2",
    ),
    "a lone surrogate in a Dict key": (
        "notes",
        {"Ok": [_note(tags={"\udc00": 1})]},
        '$.Ok[0].tags.<key "\\udc00">: not Unicode text: a lone surrogate U+DC00 at character 0',
    ),
    "the Decimal 1e999999999": (
        "notes",
        {"Ok": [_note(d=Decimal("1e999999999"))]},
        "$.Ok[0].d: a Decimal of 1000000000 digits written out; at most 4300 are admitted",
    ),
    "the text 1e999999999 as a Decimal": (
        "notes",
        {"Ok": [_note(d="1e999999999")]},
        "$.Ok[0].d: a Decimal of 1000000000 digits written out; at most 4300 are admitted",
    ),
    "an int of 5,001 digits": (
        "notes",
        {"Ok": [_note(n=10**5000)]},
        "$.Ok[0].n: an integer of more than 4300 digits is not admitted",
    ),
    "a lone surrogate in a host token": (
        "page",
        {"Ok": {"$token": "p\udfff"}},
        "$.Ok: a host token is Unicode text: a lone surrogate U+DFFF at character 1",
    ),
    "an Instant after the year 9999": (
        "when",
        {"Ok": 10**30},
        "$.Ok: expected an Instant in the years 0001 to 9999, got "
        "1000000000000000000000000000000 nanoseconds from 1970",
    ),
}


def bindings(**impls) -> rt.Bindings:
    """Every Tool of the program bound (a host binds all it can reach); `impls` by Tool name."""
    b = rt.Bindings()
    for tool in ("notes", "chain", "when", "page"):
        b.bind(f"hostiletools.{tool}", impls.get(tool, lambda x: {"Err": "not this one"}))
    return b


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostiletools")
    (d / "hostiletools.flow").write_text(TOOLS)
    (d / "main.flow").write_text(MAIN)
    return fhost.compile_path(str(d / "main.flow")).program


@pytest.mark.parametrize("case", CASES)
def test_a_tool_returning_a_hostile_value_gets_malformed_recorded_and_the_run_goes_on(
    program, tmp_path, case
):
    tool, value, why = CASES[case]
    host = Host(str(tmp_path / "runs.db"), bindings=bindings(**{tool: lambda x: value}))
    report = host.start(program, entry=f"{tool}_main", run_id="t")
    assert report.exit_code == 0, report.text
    assert report.text == show("Malformed: " + why)
    reply = [line for line in host.history(program, "t").splitlines() if " Reply " in line]
    assert len(reply) == 1 and f"Err(Malformed({show(why)}))" in reply[0]
    assert host.replay(program, "t").text == "Matched" and host.verify("t")[0]


def test_a_tool_returning_a_normal_value_is_admitted(program, tmp_path):
    host = Host(
        str(tmp_path / "runs.db"),
        bindings=bindings(
            notes=lambda x: {"Ok": [_note(), _note(n=10**4299, d="1e4299", text="\U0001f600")]},
            chain=lambda x: {"Ok": _deep(126, lambda v: "End" if v is None else {"Link": v})},
        ),
    )
    assert host.start(program, entry="notes_main").text == '"admitted"'
    assert host.start(program, entry="chain_main").text == '"admitted"'


def _raises(exc):
    def impl(x):
        raise exc

    return impl


@pytest.mark.parametrize(
    "impl, received",
    [
        (_raises(ValueError("bad \ud800 gateway")), "Unknown: ValueError: bad \\ud800 gateway"),
        (_raises(rt.NotRun("down \udc00")), "NotRun: down \\udc00"),
    ],
)
def test_a_lone_surrogate_in_a_tools_exception_is_recorded_as_its_escape(tmp_path, impl, received):
    problems = (
        MAIN
        + """
pub flow problem_main() -> Text !tool = match hostiletools.notes(1) {
    Err(Unknown(why)) => "Unknown: " ++ why,
    Err(NotRun(why)) => "NotRun: " ++ why,
    _ => "something else",
}
"""
    )
    (tmp_path / "hostiletools.flow").write_text(TOOLS)
    (tmp_path / "main.flow").write_text(problems)
    prog = fhost.compile_path(str(tmp_path / "main.flow")).program
    host = Host(str(tmp_path / "runs.db"), bindings=bindings(notes=impl))
    report = host.start(prog, entry="problem_main", run_id="t")
    assert (report.exit_code, report.text) == (0, show(received))
    assert host.replay(prog, "t").text == "Matched"
