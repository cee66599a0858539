"""Where each Call was made (the call_times row's module and Flow line) comes from a cache of
(code, instruction offset) -> line (flowrt.engine.calls._SITES): the cached answer must be the
line the uncached lookup gives, for every site, however often it repeats."""

from __future__ import annotations

import flowrt as rt
from flowrt.engine import calls
from flowrt.engine import drive as drv
from tests.flow_run import flow_program

PROGRAM = """use "std@v1/list"
use "std@v1/task"

@tool pub flow echo(x: Int) -> Result<Int, Text>

flow one(i: Int) -> Int !tool = match echo(i) {
    Ok(v) => v,
    Err(_) => 0,
}

flow two(i: Int) -> Int !tool = {
    let a = one(i)
    let b = match echo(a) {
        Ok(v) => v,
        Err(_) => 0,
    }
    match echo(b + 1) {
        Ok(v) => v,
        Err(_) => 0,
    }
}

pub flow main(n: Int) -> Int !tool = {
    let xs = task.all(list.range(0, n).map(flow(i) = flow() = two(i)))
    match echo(xs.length()) {
        Ok(v) => v,
        Err(_) => 0,
    }
}
"""


class SitesRecorder(drv.MemoryRecorder):
    """A MemoryRecorder told where each Call was made, as the store's recorder is."""

    def __init__(self):
        super().__init__()
        self.sites: dict[str, tuple[str, int]] = {}

    def call_site(self, call_id: str, file: str, line: int) -> None:
        self.sites[call_id] = (file, line)


def sites_of_a_run(prog, n: int) -> dict[str, tuple[str, int]]:
    rec = SitesRecorder()
    start = prog.start("main", (n,))
    rec.record(start)
    b = rt.Bindings()
    b.bind("main.echo", lambda x: {"Ok": x})
    out = drv.drive(
        prog.fn("main"),
        [start],
        drv.DriveOptions(recorder=rec, bindings=b, resolve=prog.loaded.resolve, classes=prog.loaded.classes),
    )
    assert type(out) is drv.RunCompleted, out
    return rec.sites


def lines_by_tool_arg(rec_sites: dict) -> list[int]:
    return sorted({line for _, line in rec_sites.values()})


def test_every_call_is_placed_at_its_flow_line_from_a_cold_and_a_warm_cache(tmp_path):
    prog = flow_program(tmp_path, {"main.flow": PROGRAM})
    calls._SITES.clear()
    cold = sites_of_a_run(prog, 5)
    warm = sites_of_a_run(prog, 5)  # the same sites again, answered from the cache
    assert cold == warm
    assert len(cold) == 5 * 3 + 1  # three calls a task, one at the end
    files = {f for f, _ in cold.values()}
    assert len(files) == 1 and next(iter(files)).endswith(".flow")
    # the four call sites: `echo(i)` in one (line 6), `echo(a)` and `echo(b + 1)` in two, one
    # code object (13, 17), the last (25)
    assert lines_by_tool_arg(cold) == [6, 13, 17, 25]
    by_line: dict[int, int] = {}
    for _, line in cold.values():
        by_line[line] = by_line.get(line, 0) + 1
    assert by_line == {6: 5, 13: 5, 17: 5, 25: 1}


def test_a_full_cache_is_emptied_and_refilled_with_the_same_answers(tmp_path, monkeypatch):
    prog = flow_program(tmp_path, {"main.flow": PROGRAM})
    calls._SITES.clear()
    want = sites_of_a_run(prog, 3)
    # a cache at its bound: the next new site empties it first, and answers stay right
    monkeypatch.setattr(calls, "_SITES", {(-i, 0): (None, None) for i in range(1, 65537)})
    assert sites_of_a_run(prog, 3) == want
    assert len(calls._SITES) < 65536


def test_an_entry_for_another_code_object_with_the_same_id_is_not_taken(tmp_path, monkeypatch):
    prog = flow_program(tmp_path, {"main.flow": PROGRAM})
    calls._SITES.clear()
    want = sites_of_a_run(prog, 2)
    # every cached entry now names another code object (as when an id is reused): ignored
    stale = {key: (compile("0", "other.flow", "eval"), ("other.flow", 999)) for key in calls._SITES}
    monkeypatch.setattr(calls, "_SITES", stale)
    assert sites_of_a_run(prog, 2) == want
