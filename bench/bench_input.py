"""Hostile input is refused fast (issue 7, point 5; not a test).

    .venv/bin/python bench/bench_input.py [--runs 7] [--dir DIR]

Each hostile value of the issue -- JSON nested 2,000 and 100,000 deep, an integer of 5,001 digits,
the Decimal 1e999999999 as text and as a JSON number, lone surrogates in a Text and in a Dict key,
a duplicate key -- goes through every way data enters a run: `run --input`, `fork --input` and
`resume --reply` as JSON text, the Python host API's input and reply, and a Python Tool's result.
Each refusal is timed with the host's own functions on a program compiled once (compiling is not
input's cost), side by side with a normal input's admission through the same path (alternating,
median of `--runs` rounds); the ratio is refusal / normal admission. Goal: every refusal under
100 ms. Then each text case once more through the whole host operation (`flowrt.host.operations.start`,
`resume`, `fork` on an open store: store reads included, compiling not), and the peak RSS growth
of the whole benchmark (the issue measured 1.8-2 GB for one Decimal before).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, peak_rss_mb, side_by_side, verdict  # noqa: E402

import flowrt as rt  # noqa: E402
from flow2py import host as fhost  # noqa: E402
from flowrt.host import operations as rh  # noqa: E402
from flowrt.host.operations import Refused  # noqa: E402
from flowrt.history.store import Store  # noqa: E402
from flowrt.engine.tools import admit  # noqa: E402

GOAL = 0.100  # seconds

FEED = """\
pub type Note { text: Text, n: Int, d: Decimal, tags: Dict<Text, Int> }
@tool pub flow tick(x: Int) -> Result<Int, Text>
@tool pub flow more(x: Int) -> Result<List<Note>, Text>
"""

MAIN = """\
use "./benchfeed"

pub flow main(notes: List<benchfeed.Note>, x: Int) -> Int !tool = loop(notes, x, 0)

flow loop(notes: List<benchfeed.Note>, x: Int, round: Int) -> Int !tool = if round >= 1 {
    match benchfeed.more(x) {
        Ok(more) => notes.length() + more.length() + x,
        Err(_) => -1,
    }
} else {
    match benchfeed.tick(x) {
        Ok(_) => loop(notes, x, round + 1),
        Err(_) => -2,
    }
}
"""

NOTE = '{"text": "Login fails on Safari", "n": 17, "d": "12.50", "tags": {"web": 1, "auth": 2}}'
NORMAL_TEXT = "[" + ", ".join([NOTE] * 20) + "]"  # twenty notes: a small, ordinary input


def text_cases() -> dict:
    return {
        "nested 2,000 levels": "[" * 2000 + "]" * 2000,
        "nested 100,000 levels": "[" * 100_000 + "]" * 100_000,
        "integer of 5,001 digits": "[" + NOTE.replace('"n": 17', '"n": 1' + "0" * 5000) + "]",
        'Decimal text "1e999999999"': "[" + NOTE.replace('"12.50"', '"1e999999999"') + "]",
        "JSON number 1e999999999": "[" + NOTE.replace('"12.50"', "1e999999999") + "]",
        'lone surrogate "\\ud800" in a Text': "[" + NOTE.replace('"Login', '"\\ud800Login') + "]",
        "lone surrogate in a Dict key": "[" + NOTE.replace('"web"', '"\\udc00"') + "]",
        "duplicate key": "[" + NOTE.replace('"n": 17', '"n": 17, "n": 18') + "]",
    }


def _note(**change):
    note = {"text": "Login fails on Safari", "n": 17, "d": "12.50", "tags": {"web": 1, "auth": 2}}
    note.update(change)
    return note


def value_cases() -> dict:
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    cycle: list = []
    cycle.append(cycle)
    return {
        "list nested 100,000 deep": deep,
        "list that contains itself": cycle,
        "int of 5,001 digits": [_note(n=10**5000)],
        "Decimal('1e999999999')": [_note(d=Decimal("1e999999999"))],
        '"1e999999999" as a Decimal': [_note(d="1e999999999")],
        "lone surrogate in a Text": [_note(text="\ud800")],
        "lone surrogate in a Dict key": [_note(tags={"\udc00": 1})],
    }


NORMAL_VALUE = [_note() for _ in range(20)]


def refused(f):
    def run():
        try:
            f()
        except Refused:
            return
        raise AssertionError("not refused")

    return run


def setup(base: Path):
    (base / "benchfeed.flow").write_text(FEED)
    (base / "main.flow").write_text(MAIN)
    loaded = fhost.compile_path(str(base / "main.flow"))
    store = Store(str(base / "runs.db"))
    b = rt.Bindings()
    b.bind("benchfeed.tick", lambda x: {"Ok": x})
    b.bind("benchfeed.more", lambda x: rt.pending)
    report = rh.start(store, loaded, input={"notes": [], "x": 1}, bindings=b, run_id="p", checkpoint_every=1)
    assert report.exit_code == 3, report.text
    return loaded, store, b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    rss0 = peak_rss_mb()
    base = Path(tempfile.mkdtemp(prefix="bench_input_", dir=args.dir or "."))
    try:
        run(args, base, rss0)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(args, base: Path, rss0: float) -> None:
    loaded, store, bindings = setup(base)
    main_params = loaded.entry("main")[1]
    loop_params = loaded.entry("loop")[1]  # what `fork --checkpoint 1` decodes its --input against
    info = store.host_records.load_run("p")
    open_calls = dict(info.open_calls)
    call = next(iter(open_calls))
    spec = loaded.tool_spec(open_calls[call])

    def via_input(text, params, what="--input"):
        return lambda: rh.decode_input(
            rh.parse_json(
                '{"notes": ' + text + ', "x": 1}'
                if params is main_params
                else '{"notes": ' + text + ', "x": 1, "round": 1}',
                what,
            ),
            params,
        )

    def via_reply(text):
        return lambda: rh.admit_replies(
            {call: rh.parse_json('{"Ok": ' + text + "}", f"--reply {call}")}, open_calls, loaded, "p"
        )

    def tool_result(value):
        def run():
            out = admit(spec, {"Ok": value})
            if type(out) is rt.Err and type(out._0) is rt.Malformed:
                raise Refused(out._0._0)
            return out

        return run

    channels = [
        ("run --input", lambda t: via_input(t, main_params), text_cases(), NORMAL_TEXT),
        ("fork --input", lambda t: via_input(t, loop_params), text_cases(), NORMAL_TEXT),
        ("resume --reply", via_reply, text_cases(), NORMAL_TEXT),
        (
            "host API input",
            lambda v: lambda: rh.decode_input({"notes": v, "x": 1}, main_params),
            value_cases(),
            NORMAL_VALUE,
        ),
        (
            "host API reply",
            lambda v: lambda: rh.admit_replies({call: {"Ok": v}}, open_calls, loaded, "p"),
            value_cases(),
            NORMAL_VALUE,
        ),
        ("Tool result", tool_result, value_cases(), NORMAL_VALUE),
    ]
    print(
        f"Hostile input refused: medians of {args.runs} alternating rounds, side by side with a normal "
        f"input's admission (20 notes) through the same path; goal < {GOAL * 1000:.0f} ms"
    )
    print(f"  {'path':<15} {'input':<36} {'refused':>10} {'normal':>10} {'ratio':>7}  goal")
    slowest, missed = 0.0, 0
    for channel, make, cases, normal in channels:
        ok = make(normal)
        ok()  # admitted: raises if not
        for name, value in cases.items():
            f = refused(make(value))
            f()  # refused: raises if not
            times = side_by_side({"hostile": f, "normal": ok}, args.runs)
            h, n = median(times["hostile"]), median(times["normal"])
            slowest = max(slowest, h)
            missed += h >= GOAL
            print(
                f"  {channel:<15} {name:<36} {h * 1000:8.2f}ms {n * 1000:8.2f}ms {h / n:6.2f}x  {verdict(h < GOAL)}"
            )
    print(
        "Whole host operations (store open, program compiled once; the store is read, nothing is recorded):"
    )
    ops = {
        "start": lambda t: (
            lambda: rh.start(
                store,
                loaded,
                input=rh.parse_json('{"notes": ' + t + ', "x": 1}', "--input"),
                bindings=bindings,
            )
        ),
        "resume": lambda t: (
            lambda: rh.resume(
                store,
                loaded,
                "p",
                bindings=bindings,
                replies={call: rh.parse_json('{"Ok": ' + t + "}", "--reply")},
            )
        ),
        "fork": lambda t: (
            lambda: rh.fork(
                store,
                loaded,
                loaded,
                "p",
                1,
                bindings=bindings,
                input=rh.parse_json('{"notes": ' + t + ', "x": 1, "round": 1}', "--input"),
            )
        ),
    }
    before = [(r.id, r.facts) for r in store.host_records.runs()]
    for op, make in ops.items():
        for name, text in text_cases().items():
            f = refused(make(text))
            times = [0.0] * args.runs
            for i in range(args.runs):
                t0 = time.perf_counter()
                f()
                times[i] = time.perf_counter() - t0
            h = median(times)
            slowest = max(slowest, h)
            missed += h >= GOAL
            print(f"  {op:<15} {name:<36} {h * 1000:8.2f}ms  {verdict(h < GOAL)}")
    assert [(r.id, r.facts) for r in store.host_records.runs()] == before, "a refusal recorded something"
    print(
        f"slowest refusal {slowest * 1000:.2f} ms; {missed} over {GOAL * 1000:.0f} ms; "
        f"peak RSS {rss0:.1f} -> {peak_rss_mb():.1f} MB over the whole benchmark"
    )


if __name__ == "__main__":
    main()
