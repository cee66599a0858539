"""An Int is unbounded: a program computing 10^5000 completes, records its End, shows it in
history and replays, while Python's 4,300-digit int/str limit stays in force for parsing input
(flowrt.data.numtext writes and reads big Ints in pieces; docs/spec/data.md, "Bounds")."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from flow2py.cli import main
from flowrt.data.numtext import int_from_text, int_text

POW = """\
use "std@v1/int"

flow pow(b: Int, n: Int, acc: Int) -> Int = if n == 0 { acc } else { pow(b, n - 1, acc * b) }
pub flow main() -> Int = pow(10, 5000, 1)
pub flow text_round_trip() -> Bool = int.parse(int.to_text(pow(10, 5000, 1) - 1)) == Some(pow(10, 5000, 1) - 1)
pub flow digits() -> Int = int.to_text(-pow(7, 6000, 1)).length()
pub flow as_decimal() -> Decimal = int.to_decimal(pow(10, 5000, 1)) + 0.5
"""


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_pure_program_computing_10_to_the_5000_completes_and_records_its_end(tmp_path):
    (tmp_path / "big.flow").write_text(POW)
    db = tmp_path / "big.db"
    r = invoke("run", tmp_path / "big.flow", "--store", db, "--run-id", "big")
    assert r.exit_code == 0, r.output
    assert r.stdout == "1" + "0" * 5000 + "\n"
    history = invoke("history", "big", "--store", db).stdout.splitlines()
    assert history[-1].split()[1:] == ["End", "Completed(1" + "0" * 5000 + ")"]
    end = json.loads(invoke("history", "big", "--store", db, "--format", "json").stdout.splitlines()[-1])
    assert end["end"] == "Completed(1" + "0" * 5000 + ")"
    assert invoke("replay", "big", "--store", db).stdout == "Matched\n"
    assert invoke("verify", "big", "--store", db).exit_code == 0
    assert invoke("runs", "--store", db).stdout.split()[:2] == ["big", "completed"]


@pytest.mark.parametrize(
    "entry, shown",
    [
        ("text_round_trip", "true"),
        ("digits", "5072"),  # "-" and the 5,071 digits of 7^6000
        ("as_decimal", "1" + "0" * 5000 + ".5"),
    ],
)
def test_int_text_parse_and_decimals_beyond_4300_digits_work_in_a_program(tmp_path, entry, shown):
    (tmp_path / "big.flow").write_text(POW)
    db = tmp_path / "big.db"
    r = invoke("run", tmp_path / "big.flow", "--entry", entry, "--store", db, "--run-id", entry)
    assert r.exit_code == 0, r.output
    assert r.stdout == shown + "\n"
    assert invoke("replay", entry, "--store", db).stdout == "Matched\n"


# A literal of 5,000 digits: beyond Python's int/str limit, in source as in the generated code.
BIG = "7" * 4999 + "3"
LITERAL = f"""\
pub flow main() -> Int = {BIG}
pub flow negated() -> Int = -{BIG[:2]}_{BIG[2:]} + 0
pub flow matched() -> Text = match {BIG} - 1 + 1 {{
    -{BIG} => "negated",
    {BIG} => "the literal",
    _ => "another",
}}
pub flow long() -> Duration = {BIG}ns
"""


def test_an_int_literal_of_5000_digits_checks_builds_runs_and_shows_in_history(tmp_path):
    (tmp_path / "lit.flow").write_text(LITERAL)
    assert invoke("check", tmp_path / "lit.flow").exit_code == 0
    built = invoke("build", tmp_path / "lit.flow", "--out", tmp_path / "out")
    assert built.exit_code == 0, built.output
    code = (tmp_path / "out" / "lit_flow" / "lit.py").read_text().lower()  # (__init__.py keeps the sources)
    assert (
        BIG[:600] not in code and f"0x{int_from_text(BIG):x}" in code
    )  # Python compiles a hex literal of any length
    db = tmp_path / "lit.db"
    for entry, shown in [("main", BIG), ("negated", "-" + BIG), ("matched", '"the literal"')]:
        r = invoke("run", tmp_path / "lit.flow", "--entry", entry, "--store", db, "--run-id", entry)
        assert (r.exit_code, r.stdout) == (0, shown + "\n"), r.output
        assert invoke("history", entry, "--store", db).stdout.splitlines()[-1].split(maxsplit=2)[1:] == [
            "End",
            f"Completed({shown})",
        ]
        assert invoke("replay", entry, "--store", db).stdout == "Matched\n"
    r = invoke("run", tmp_path / "lit.flow", "--entry", "long", "--store", db, "--run-id", "long")
    assert (r.exit_code, r.stdout) == (0, BIG + "ns\n"), r.output


EDGES = [
    0,
    1,
    -1,
    10**599,
    10**600,
    10**600 - 1,
    10**1200 + 7,
    10**4299,
    10**4300,
    10**4300 - 1,
    -(10**9000) - 123456789,
    2**50_000,
    7**6000,
]


def _reference(n: int) -> str:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return str(n)
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.parametrize("limit", [640, 4300, 0])
def test_int_text_and_int_from_text_agree_with_python_whatever_the_limit(limit):
    texts = [_reference(n) for n in EDGES]
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        for n, text in zip(EDGES, texts):
            assert int_text(n) == text
            assert int_from_text(text) == n
        with pytest.raises(ValueError):
            int_from_text("12x" + "0" * 5000)
    finally:
        sys.set_int_max_str_digits(old)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-(10**6000), max_value=10**6000), st.integers(min_value=0, max_value=3000))
def test_int_text_round_trips_any_int(n, shift):
    n = n * 10**shift + (n % 97)
    text = int_text(n)
    assert int_from_text(text) == n
    assert text == _reference(n)


CARRY = """\
use "./bigfeed"

flow pow(b: Int, n: Int, acc: Int) -> Int = if n == 0 { acc } else { pow(b, n - 1, acc * b) }
flow links(n: Int, acc: Chain) -> Chain = if n == 0 { acc } else { links(n - 1, Link(acc)) }

pub type Chain { End, Link(Chain) }

pub flow main() -> Int !tool = loop(pow(10, 5000, 1), links(150, End), 0)

flow loop(big: Int, chain: Chain, round: Int) -> Int !tool = if round >= 1 {
    match bigfeed.more(1) {
        Ok(n) => big + n,
        Err(_) => -1,
    }
} else {
    match bigfeed.tick(1) {
        Ok(_) => loop(big, chain, round + 1),
        Err(_) => -2,
    }
}
"""

BIG_TOOLS = """\
from flowrt import bind

bind("bigfeed.tick", lambda x: {"Ok": x})
bind("bigfeed.more", lambda x: {"Ok": 7})
"""


def test_a_fork_rebuilds_a_checkpoint_holding_values_beyond_the_input_bounds(tmp_path):
    # The bounds are for data coming in; a checkpoint's arguments are the program's own values.
    (tmp_path / "bigfeed.flow").write_text(
        "@tool pub flow tick(x: Int) -> Result<Int, Text>\n@tool pub flow more(x: Int) -> Result<Int, Text>\n"
    )
    (tmp_path / "main.flow").write_text(CARRY)
    (tmp_path / "big_tools.py").write_text(BIG_TOOLS)
    db = tmp_path / "carry.db"
    tools = ["--tools", tmp_path / "big_tools.py", "--store", db]
    r = invoke("run", tmp_path / "main.flow", "--run-id", "carry", "--checkpoint-every", "1", *tools)
    assert (r.exit_code, r.stdout) == (0, "1" + "0" * 4999 + "7\n"), r.output
    r = invoke("fork", "carry", "--checkpoint", "1", "--run-id", "forked", *tools)
    assert (r.exit_code, r.stdout) == (0, "1" + "0" * 4999 + "7\n"), r.output
    assert invoke("replay", "forked", "--store", db).stdout == "Matched\n"
