"""Submitted bundles (docs/spec/modules.md, "Submitted bundles"): a program as module texts, checked
from those texts alone; its diagnostics as data, exactly `check --format json`'s, with nothing
recorded; the repaired bundle runs through the worker's HTTP API, flowrt.Client and `flow2py
submit --bundle`; replay and resume of its run need no file on disk; limits and hostile paths
refused in one line; repository modules only from the module cache and the bundle's pins; and
std@v1/bundle's Tools, a Flow program that repairs a bundle and runs it as a nested run."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import flowrt as rt
from flow2py import bundles, host
from flow2py.cli import main as cli
from flowrt.host import http_api
from flowrt.host import worker as wk
from flowrt.host.bundles import BundleRefused
from flowrt.host.client import Client
from flowrt.host.operations import Refused, open_store
from http_helpers import running_worker, until

BAD = {
    "entry": "main.flow",
    "modules": {
        "main.flow": 'use "./lib"\n\npub flow main(n: Int) -> Int = lib.inc(n, 2)\n',
        "lib.flow": "pub flow inc(n: Int) -> Int = n + x\n",
    },
}
GOOD = {
    "entry": "main.flow",
    "modules": {
        "main.flow": 'use "./lib"\n\npub flow main(n: Int) -> Int = lib.inc(n)\n',
        "lib.flow": "pub flow inc(n: Int) -> Int = n + 1\n",
    },
}
#: a bundle whose run pauses on a Tool the host leaves open, then completes on its reply
ASKING = {
    "entry": "app/main.flow",
    "modules": {
        "app/main.flow": (
            'use "../shared/words"\n\n@tool pub flow ask(q: Text) -> Result<Text, Text>\n\n'
            "pub flow main(q: Text) -> Text !tool = match ask(q) {\n"
            '    Ok(a) => words.shout(a),\n    Err(_) => "no answer",\n}\n'
        ),
        "shared/words.flow": 'pub flow shout(t: Text) -> Text = t ++ "!"\n',
    },
}


def _check_on_disk(tmp_path, bundle: dict, monkeypatch, lock: dict | None = None) -> list:
    """`flow2py check ENTRY --format json` over the bundle's files written to a folder."""
    root = tmp_path / "on_disk"
    for path, text in bundle["modules"].items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    if lock is not None:
        entry_dir = (root / bundle["entry"]).parent
        (entry_dir / "flow.lock").write_text(json.dumps({"version": 1, "repos": lock}), encoding="utf-8")
    monkeypatch.chdir(root)
    out = CliRunner().invoke(cli, ["check", bundle["entry"], "--format", "json"])
    monkeypatch.chdir(tmp_path)
    shutil.rmtree(root)
    return json.loads(out.output)


@pytest.fixture()
def asker():
    b = rt.Bindings()
    b.bind("main.ask", lambda q: rt.pending)
    return b


@pytest.fixture()
def served(tmp_path, asker, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOW2PY_CACHE", str(tmp_path / "repos"))
    with running_worker(tmp_path / "runs.db", {}, asker) as w:
        with TestClient(http_api.make_app(w), raise_server_exceptions=False) as api:
            yield w, api


def _state(api, run_id: str, state: str) -> dict:
    def seen():
        body = api.get(f"/runs/{run_id}").json()
        return body if body.get("state") == state else None

    return until(seen, what=f"run {run_id} to be {state}")


# ---- diagnostics as data, nothing recorded ----------------------------------------------------------


def test_a_bundle_with_a_mistake_is_a_422_with_check_jsons_diagnostics_and_records_nothing(
    served, tmp_path, monkeypatch
):
    worker, api = served
    r = api.post("/runs", json={"bundle": BAD, "input": {"n": 1}})
    assert r.status_code == 422
    body = r.json()
    assert body["diagnostics"] == _check_on_disk(tmp_path, BAD, monkeypatch)
    assert [d["code"] for d in body["diagnostics"]] == ["E101", "E202"]
    assert body["error"].startswith("the bundle does not check: lib.flow:1:35: E101 unknown name `x`")
    assert "(and 1 more)" in body["error"] and "\n" not in body["error"]
    assert api.get("/runs").json() == [] and worker.runs() == []


def test_the_repaired_bundle_runs_to_its_result(served):
    worker, api = served
    r = api.post("/runs", json={"bundle": GOOD, "input": {"n": 41}, "run_id": "b1"})
    assert r.status_code == 201 and r.json() == {"run_id": "b1"}
    body = _state(api, "b1", "completed")
    assert body["result"] == "42" and body["program"] == "bundle"


def test_diagnostics_as_data_equal_check_json_for_a_bundle_in_folders(tmp_path, monkeypatch):
    bad = {"entry": "app/main.flow", "modules": dict(ASKING["modules"])}
    bad["modules"]["shared/words.flow"] = "pub flow shout(t: Text) -> Text = t ++ 1\n"
    monkeypatch.chdir(tmp_path)
    found = bundles.diagnostics(bad)
    assert found and found[0]["file"] == "shared/words.flow"
    assert found == _check_on_disk(tmp_path, bad, monkeypatch)
    assert bundles.diagnostics(ASKING) == []


def test_a_module_the_bundle_lacks_is_not_read_from_the_working_folder(tmp_path, monkeypatch):
    (tmp_path / "lib.flow").write_text("pub flow inc(n: Int) -> Int = n + 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    lonely = {"entry": "main.flow", "modules": {"main.flow": GOOD["modules"]["main.flow"]}}
    with pytest.raises(BundleRefused) as e:
        bundles.compile_bundle(lonely)
    assert [d["code"] for d in e.value.diagnostics_json] == ["E103"]
    assert "cannot find module `./lib`" in str(e.value)
    assert not (tmp_path / "flow.lock").exists()


# ---- the run stores its sources: replay and resume need no file -------------------------------------


def test_a_bundle_runs_pauses_and_resumes_and_replays_from_the_store_alone(tmp_path, asker, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "written"
    for path, text in ASKING["modules"].items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text, encoding="utf-8")
    bundle = {
        "entry": ASKING["entry"],
        "modules": {p: (src / p).read_text(encoding="utf-8") for p in ASKING["modules"]},
        "name": "asker",
    }
    shutil.rmtree(src)  # nothing of the program is on disk from here on
    db = tmp_path / "runs.db"
    with running_worker(db, {}, asker) as w:
        handle = Client(w).start(bundle=bundle, input={"q": "ready"}, run_id="a1")
        until(lambda: handle.status().state == "paused", what="the bundle's run to pause")
        assert [c.tool for c in handle.open_calls()] == ["main.ask"]
    store = open_store(str(db))
    # a new worker that was given no program: it compiles the run's stored sources
    with running_worker(db, {}, asker, stored=lambda run_id: host.compile_stored(store, run_id)) as w2:
        handle = Client(w2).handle("a1")
        handle.reply(handle.open_calls()[0].id, {"Ok": "go"})
        assert handle.result(timeout=30) == "go!"
        assert handle.status().program == "asker"
    out = CliRunner().invoke(cli, ["replay", "a1", "--store", str(db)])
    assert out.exit_code == 0 and out.output.splitlines()[0] == "Matched"


def test_submit_bundle_refuses_a_mistake_with_check_json_and_creates_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps(BAD), encoding="utf-8")
    (tmp_path / "good.json").write_text(json.dumps(GOOD), encoding="utf-8")
    db = tmp_path / "new" / "runs.db"
    out = CliRunner().invoke(
        cli, ["submit", "--bundle", "bad.json", "--input", '{"n": 1}', "--store", str(db)]
    )
    assert out.exit_code == 1 and not db.exists() and not db.parent.exists()
    printed = out.stdout if hasattr(out, "stdout") else out.output
    assert json.loads(printed[: printed.rindex("]") + 1]) == _check_on_disk(tmp_path, BAD, monkeypatch)
    out = CliRunner().invoke(
        cli, ["submit", "--bundle", "good.json", "--input", '{"n": 1}', "--store", str(db)]
    )
    assert out.exit_code == 0, out.output
    run_id = out.output.strip().splitlines()[-1]
    assert wk.status(open_store(str(db)), run_id).state == "submitted"


# ---- shape and limits ---------------------------------------------------------------------------------

HOSTILE = [
    ({"entry": "../x.flow", "modules": {"../x.flow": ""}}, "steps out of its folder"),
    ({"entry": "a/./b.flow", "modules": {"a/./b.flow": ""}}, "steps out of its folder"),
    ({"entry": "/etc/x.flow", "modules": {"/etc/x.flow": ""}}, "is not relative"),
    ({"entry": "C:/x.flow", "modules": {"C:/x.flow": ""}}, "is not relative"),
    ({"entry": "a\\x.flow", "modules": {"a\\x.flow": ""}}, "is not relative"),
    ({"entry": "x.py", "modules": {"x.py": ""}}, "does not name a `.flow` file"),
    ({"entry": "a//x.flow", "modules": {"a//x.flow": ""}}, "each name may hold only"),
    ({"entry": "std@v1/list.flow", "modules": {"std@v1/list.flow": ""}}, "each name may hold only"),
    ({"entry": "main.flow", "modules": {"lib.flow": ""}}, "`entry` must name one of the modules"),
    ({"entry": "main.flow", "modules": {}}, "`modules` must be an object"),
    ({"entry": "main.flow", "modules": {"main.flow": 3}}, "its text must be a string"),
    ({"entry": "main.flow", "modules": {"main.flow": ""}, "extra": 1}, "unknown field"),
    ({"entry": "main.flow", "modules": {"main.flow": ""}, "pins": {"x": 1}}, "does not name a repository"),
    (
        {"entry": "main.flow", "modules": {f"m{i}.flow": "" for i in range(101)} | {"main.flow": ""}},
        "modules; at most 100",
    ),
    ("main.flow", "must be an object"),
]


@pytest.mark.parametrize("bundle, words", HOSTILE)
def test_a_bundle_of_the_wrong_shape_is_a_400_in_one_line_and_records_nothing(served, bundle, words):
    worker, api = served
    r = api.post("/runs", json={"bundle": bundle})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert words in error and "\n" not in error and error.startswith(("bundle: ", "field 'bundle'"))
    assert api.get("/runs").json() == []


def test_the_total_size_of_a_bundles_text_is_limited():
    big = {"entry": "main.flow", "modules": {"main.flow": "// é\n" * 30}}
    with pytest.raises(BundleRefused, match="over 100 bytes of text; at most 100"):
        bundles.parse_bundle(big, bundles.Limits(total_bytes=100))
    assert bundles.parse_bundle(big, bundles.Limits(total_bytes=1000)).entry == "main.flow"


# ---- repository modules: the module cache and the bundle's pins, nothing else -------------------------

REPO_USE = {
    "entry": "main.flow",
    "modules": {
        "main.flow": 'use "github.com/acme/tools@v1.2/catalog"\n\npub flow main() -> Int = catalog.size()\n'
    },
}


def _repo_cache(root, commit: str = "abc123") -> None:
    base = root / "github.com" / "acme" / "tools"
    (base / "tags").mkdir(parents=True)
    (base / "tags" / "v1.2").write_text(commit + "\n", encoding="utf-8")
    (base / "commits" / commit).mkdir(parents=True)
    (base / "commits" / commit / "catalog.flow").write_text("pub flow size() -> Int = 3\n", encoding="utf-8")


def test_a_repository_use_not_in_the_module_cache_is_a_422_naming_the_cache(served, tmp_path, monkeypatch):
    worker, api = served
    r = api.post("/runs", json={"bundle": REPO_USE})
    assert r.status_code == 422
    diags = r.json()["diagnostics"]
    assert [d["code"] for d in diags] == ["E103"] and "is not in the module cache" in diags[0]["message"]
    assert diags == _check_on_disk(tmp_path, REPO_USE, monkeypatch)
    assert api.get("/runs").json() == []


def test_a_repository_use_resolves_from_the_cache_and_a_pin_that_disagrees_is_refused(
    served, tmp_path, monkeypatch
):
    worker, api = served
    _repo_cache(tmp_path / "repos")
    # a flow.lock in the working folder is not the bundle's: it is neither read nor written
    stray = json.dumps({"version": 1, "repos": {"github.com/acme/tools": {"tag": "v1.2", "commit": "zzz"}}})
    (tmp_path / "flow.lock").write_text(stray, encoding="utf-8")
    r = api.post("/runs", json={"bundle": REPO_USE, "run_id": "r1"})
    assert r.status_code == 201, r.text
    assert _state(api, "r1", "completed")["result"] == "3"
    pinned = dict(REPO_USE, pins={"github.com/acme/tools": {"tag": "v1.2", "commit": "old999"}})
    r = api.post("/runs", json={"bundle": pinned})
    assert r.status_code == 422 and [d["code"] for d in r.json()["diagnostics"]] == ["E105"]
    lock = pinned["pins"]
    assert r.json()["diagnostics"] == _check_on_disk(tmp_path, REPO_USE, monkeypatch, lock=lock)
    assert [run["run_id"] for run in api.get("/runs").json()] == ["r1"]
    assert (tmp_path / "flow.lock").read_text(encoding="utf-8") == stray


# ---- std@v1/bundle: a Flow program writes a bundle, repairs it, runs it -----------------------------

OUTER = """use "std@v1/bundle"

pub type Args { n: Int }

flow attempt(text: Text) -> Result<Int, ToolProblem<bundle.BundleError>> !tool =
    bundle.run(bundle.Bundle { entry: "main.flow", modules: ["main.flow": text] }, Args { n: 41 })

pub flow main(bad: Text, good: Text) -> Text !tool = match attempt(bad) {
    Err(Failed(bundle.Diagnostics([d, ..]))) => match attempt(good) {
        Ok(v) => d.code ++ " at line " ++ d.line.to_text() ++ ", then " ++ v.to_text(),
        Err(_) => "the repaired bundle failed",
    },
    Err(_) => "no diagnostics",
    Ok(_) => "the bad bundle ran",
}
"""


def test_a_flow_program_gets_diagnostics_repairs_the_bundle_and_runs_it_nested(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outer.flow").write_text(OUTER, encoding="utf-8")
    given = {
        "bad": "pub flow main(n: Int) -> Int = n + true\n",
        "good": "pub flow main(n: Int) -> Int = n + 1\n",
    }
    args = ["--store", "r.db"]
    out = CliRunner().invoke(
        cli, ["run", "outer.flow", "--input", json.dumps(given), "--run-id", "o1", *args]
    )
    assert out.exit_code == 0, out.output
    assert '"E201 at line 1, then 42"' in out.output
    store = open_store("r.db")
    inner = store.host_records.nested_runs("o1")
    assert list(inner.values()) == ["o1/root#2"]  # the bad bundle started no run
    os.remove("outer.flow")
    for run_id in ("o1", "o1/root#2"):
        out = CliRunner().invoke(cli, ["replay", run_id, *args])
        assert out.exit_code == 0 and out.output.splitlines()[0] == "Matched", out.output


def _tool(name: str, bindings):
    """The implementation `bindings` hold for std@v1/bundle's Tool `name`."""
    return bindings._impls[f"std@v1/bundle::{name}"]


def test_bundle_check_answers_ok_or_the_diagnostics_and_refusals_as_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check = _tool("check", host.load_tools([]))
    assert check(GOOD) == {"Ok": None}
    assert check(BAD) == {"Err": {"Diagnostics": bundles.diagnostics(BAD)}}
    answer = check({"entry": "../x.flow", "modules": {"../x.flow": ""}})
    assert answer["Err"]["Refused"].startswith("bundle: module path")


def test_bundle_run_refuses_input_that_does_not_fit_and_tools_left_unbound(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = _tool("run", host.load_tools([]))
    assert run(GOOD, {"n": "one"})["Err"]["Refused"].startswith("input: $.n: expected Int")
    answer = run(ASKING, {"q": "x"})
    assert answer == {"Err": {"Refused": "no implementation bound for main.ask"}}


def test_client_start_with_a_bundle_that_does_not_check_raises_with_the_diagnostics(served):
    worker, api = served
    with pytest.raises(BundleRefused) as e:
        Client(worker).start(bundle=BAD, input={"n": 1})
    assert e.value.diagnostics_json == bundles.diagnostics(BAD)
    assert worker.runs() == []
    with pytest.raises(Refused, match="give a program or a bundle, not both"):
        Client(worker).start("x", bundle=GOOD)


def test_a_bundle_compiled_before_is_loaded_from_the_program_cache(tmp_path):
    from flow2py.cache import CachedProgram, ProgramCache

    cache = ProgramCache(str(tmp_path / "cache"))
    # a program no other test compiles: one already loaded in this process is not written again
    probe = {
        "entry": "main.flow",
        "modules": {"main.flow": "pub flow main(cache_probe: Int) -> Int = cache_probe * 7919\n"},
    }
    first = bundles.compile_bundle(probe, cache=cache)
    again = bundles.compile_bundle(probe, cache=cache)
    assert isinstance(again, CachedProgram) and cache.hits == 1
    assert again.program.identity == first.program.identity
    edited = {
        **probe,
        "modules": {"main.flow": "pub flow main(cache_probe: Int) -> Int = cache_probe * 7907\n"},
    }
    assert bundles.compile_bundle(edited, cache=cache).program.identity != first.program.identity
    assert cache.hits == 1


CHECKER = """use "std@v1/bundle"

pub flow main(text: Text) -> Text !tool = match bundle.check(bundle.Bundle { entry: "main.flow", modules: ["main.flow": text] }) {
    Ok(_) => "checks",
    Err(Failed(bundle.Diagnostics([d, ..]))) => match d.fixes {
        [f, ..] => d.code ++ ": " ++ f.message ++ " safe=" ++ f.safe.to_text(),
        [] => d.code,
    },
    Err(_) => "other",
}
"""


def test_bundle_check_hands_a_flow_program_the_diagnostics_with_their_fixes_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.flow").write_text(CHECKER, encoding="utf-8")
    unused = "pub flow main(n: Int) -> Int = {\n    let x = 1\n    n\n}\n"
    out = CliRunner().invoke(
        cli, ["run", "c.flow", "--input", json.dumps({"text": unused}), "--store", "r.db"]
    )
    assert out.exit_code == 0, out.output
    assert '"E404: rename it to `_x` safe=true"' in out.output
