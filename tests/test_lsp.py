"""The language server over the real protocol: a `flow2py lsp` subprocess spoken to over stdio
with Content-Length framed JSON-RPC (flow2py/lsp/client.py); docs/spec/editor.md."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pygls")

from flow2py.lsp.client import Client, uri  # noqa: E402

PLANNER = """pub type Step { pub name: Text, pub cost: Int }

pub type Plan { Go(Step), Stop }

pub flow next(s: Step) -> Step = Step { name: s.name, cost: s.cost + 1 }
"""

MAIN = """use "./planner"
use "std@v1/list"

@tool pub flow fetch(key: Text) -> Result<Text, Text>

flow load(key: Text) -> Text = match fetch(key) {
    Ok(t) => t,
    Err(_) => "",
}

pub flow main(n: Int) -> Int !tool = {
    let s = planner.Step { name: load("k"), cost: n }
    let t = planner.next(s)
    t.cost + list.length([1, 2])
}
"""


@pytest.fixture(scope="module")
def lsp(tmp_path_factory):
    d = tmp_path_factory.mktemp("lsp")
    (d / "planner.flow").write_text(PLANNER)
    c = Client(cwd=str(d))
    c.initialize(str(d))
    yield c, d
    c.close()


def _open(c, d, name, text=MAIN):
    path = str(d / name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    c.open(path, text)
    return path, uri(path), c.diagnostics(uri(path))


def _at(u, line, character):
    return {"textDocument": {"uri": u}, "position": {"line": line, "character": character}}


def test_initialize_advertises_the_features(tmp_path):
    c = Client(cwd=str(tmp_path))
    try:
        caps = c.initialize(str(tmp_path))["capabilities"]
    finally:
        assert c.close() == 0  # shutdown, then exit: the process ends cleanly
    for k in ("hoverProvider", "definitionProvider", "documentSymbolProvider", "codeActionProvider"):
        assert caps[k]
    assert caps["completionProvider"]["triggerCharacters"] == ["."]


def test_open_with_an_error_publishes_code_range_and_related_note(lsp):
    c, d = lsp
    _, u, diags = _open(c, d, "open_err.flow")
    assert len(diags) == 1
    (x,) = diags
    assert x["code"] == "E301" and x["source"] == "flow2py" and x["severity"] == 1
    # at the signature, where the fix goes; the notes are the call that reaches a Tool and the
    # Tool's declaration
    assert x["range"] == {"start": {"line": 5, "character": 5}, "end": {"line": 5, "character": 9}}
    rel, tool = x["relatedInformation"]
    assert tool["message"].endswith("is a Tool (`@tool`), declared here")
    assert rel["message"] == "this reaches a Tool"
    assert rel["location"]["uri"] == u
    assert rel["location"]["range"]["start"] == {"line": 5, "character": 37}


def test_code_action_returns_the_fix_as_a_workspace_edit_marked_preferred(lsp):
    c, d = lsp
    _, u, diags = _open(c, d, "action.flow")
    actions = c.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": u}, "range": diags[0]["range"], "context": {"diagnostics": diags}},
    )
    (a,) = actions
    assert a["title"] == "mark it `!tool`" and a["kind"] == "quickfix" and a["isPreferred"] is True
    assert a["diagnostics"][0]["code"] == "E301"
    edit = {
        "range": {"start": {"line": 5, "character": 28}, "end": {"line": 5, "character": 28}},
        "newText": " !tool",
    }
    assert a["edit"]["changes"] == {u: [edit]}
    # elsewhere in the file there is nothing to do
    far = {"start": {"line": 13, "character": 0}, "end": {"line": 13, "character": 1}}
    assert (
        c.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": u}, "range": far, "context": {"diagnostics": []}},
        )
        == []
    )


def test_change_that_applies_the_fix_publishes_no_diagnostics(lsp):
    c, d = lsp
    path, u, diags = _open(c, d, "change.flow")
    assert [x["code"] for x in diags] == ["E301"]
    c.change(path, 2, (5, 28), (5, 28), " !tool")
    assert c.diagnostics(u) == []
    c.change(path, 3, (13, 13), (13, 32), '"x"')  # Int + Text, and `list` no longer used
    got = {(x["code"], x["range"]["start"]["line"]) for x in c.diagnostics(u)}
    assert got == {("E201", 13), ("E112", 1)}


def test_hover_shows_the_type_and_the_effect(lsp):
    c, d = lsp
    _, u, _ = _open(c, d, "hover.flow")
    h = c.request("textDocument/hover", _at(u, 12, 8))  # `t` in `let t = ...`
    assert h["contents"]["value"] == "```flow\nt: Step\n```"
    h = c.request("textDocument/hover", _at(u, 5, 39))  # `fetch` in `fetch(key)`
    assert "@tool pub flow fetch(key: Text) -> Result<Text, Text> !tool" in h["contents"]["value"]
    h = c.request("textDocument/hover", _at(u, 5, 42))  # the `(` of the call: the call
    v = h["contents"]["value"]
    assert "Result<Text, " in v and "effect: tool" in v
    h = c.request("textDocument/hover", _at(u, 12, 13))  # the alias `planner`
    assert h["contents"]["value"].startswith('```flow\nuse "./planner"\n```')
    # the program has an error (E301): hover still answers from what checked
    h = c.request("textDocument/hover", _at(u, 13, 6))  # `cost` in `t.cost`
    assert h["contents"]["value"] == "```flow\ncost: Int\n```"


def test_definition_goes_into_another_module_and_into_std(lsp):
    c, d = lsp
    _, u, _ = _open(c, d, "defn.flow")
    loc = c.request("textDocument/definition", _at(u, 12, 21))  # planner.next
    assert loc["uri"] == uri(str(d / "planner.flow"))
    assert loc["range"]["start"] == {"line": 4, "character": 9}
    loc = c.request("textDocument/definition", _at(u, 13, 19))  # list.length
    assert loc["uri"].endswith("/std/list.flow")
    with open(loc["uri"].removeprefix("file://"), encoding="utf-8") as f:
        line = f.read().splitlines()[loc["range"]["start"]["line"]]
    assert line[loc["range"]["start"]["character"] :].startswith("length<T>")
    loc = c.request("textDocument/definition", _at(u, 13, 4))  # the local `t`
    assert loc["uri"] == u and loc["range"]["start"] == {"line": 12, "character": 8}
    loc = c.request("textDocument/definition", _at(u, 11, 21))  # planner.Step, a record type
    assert loc["uri"] == uri(str(d / "planner.flow")) and loc["range"]["start"]["line"] == 0
    loc = c.request("textDocument/definition", _at(u, 13, 7))  # the field `cost` of `t.cost`
    assert loc["uri"] == uri(str(d / "planner.flow"))
    assert loc["range"]["start"] == {"line": 0, "character": PLANNER.index("pub cost")}
    loc = c.request("textDocument/definition", _at(u, 6, 4))  # the pattern `Ok(t)`: std's constructor
    assert loc["uri"].endswith("/std/result.flow")


def test_document_symbols_list_functions_types_constructors_and_fields(tmp_path, lsp):
    c, d = lsp
    _, u, _ = _open(
        c, d, "symbols.flow", PLANNER.replace("pub flow next", 'use "./planner"\n\npub flow next', 0)
    )
    syms = c.request("textDocument/documentSymbol", {"textDocument": {"uri": u}})
    assert [(s["name"], s["kind"]) for s in syms] == [("Step", 23), ("Plan", 10), ("next", 12)]
    assert [(f["name"], f["kind"]) for f in syms[0]["children"]] == [("name", 8), ("cost", 8)]
    assert [(f["name"], f["kind"]) for f in syms[1]["children"]] == [("Go", 22), ("Stop", 22)]
    assert syms[2]["detail"] == "pub flow next(s: Step) -> Step"
    assert syms[2]["selectionRange"]["start"] == {"line": 4, "character": 9}


def test_completion_of_module_members_and_record_fields(lsp):
    c, d = lsp
    path, u, _ = _open(c, d, "compl.flow")
    c.change(path, 2, (13, 13), (13, 32), "planner.")  # `t.cost + planner.`: does not parse
    # the syntax error is reported; checking goes on past it (`list` is now unused: E112)
    assert [d["code"] for d in c.diagnostics(u) if d["code"].startswith("E0")] == ["E004"]
    items = c.request("textDocument/completion", _at(u, 13, 21))["items"]
    assert sorted(i["label"] for i in items) == ["Go", "Plan", "Step", "Stop", "next"]
    assert {i["label"]: i["kind"] for i in items}["next"] == 3
    c.change(path, 3, (13, 13), (13, 21), "t.")  # `t.cost + t.`
    c.diagnostics(u)
    items = c.request("textDocument/completion", _at(u, 13, 15))["items"]
    assert [(i["label"], i["detail"]) for i in items] == [("name", "Text"), ("cost", "Int")]
    c.change(path, 4, (13, 15), (13, 15), "c")  # a prefix narrows them
    c.diagnostics(u)
    items = c.request("textDocument/completion", _at(u, 13, 16))["items"]
    assert [i["label"] for i in items] == ["cost"]


def test_lsp_without_pygls_is_refused_in_one_line():
    code = "import sys; sys.modules['pygls'] = None; from flow2py.cli import main; main(['lsp'])"
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert p.returncode != 0
    assert p.stderr.strip().splitlines() == [
        "flow2py: the language server needs pygls: pip install 'flow2py[lsp]'"
    ]


def test_a_std_source_opened_from_a_definition_reports_nothing(lsp):
    c, _ = lsp
    from flow2py.check.modgraph import std_dir

    path = os.path.join(std_dir(), "list.flow")
    with open(path, encoding="utf-8") as f:
        c.open(path, f.read())
    assert c.diagnostics(uri(path)) == []


# `planner.next` taking a second argument: `main` (its one call gives one) then has one E202
PLANNER_CHANGED = PLANNER.replace("next(s: Step)", "next(s: Step, k: Int)").replace(
    "s.cost + 1", "s.cost + k"
)


def _main_and_planner(tmp_path):
    """A server with a clean `main.flow` open, `planner.flow` (which it imports) on disk; the
    client and main's path."""
    (tmp_path / "planner.flow").write_text(PLANNER)
    c = Client(cwd=str(tmp_path))
    try:
        c.initialize(str(tmp_path))
        main = str(tmp_path / "main.flow")
        c.open(main, MAIN.replace("flow load(key: Text) -> Text =", "flow load(key: Text) -> Text !tool ="))
        assert c.diagnostics(uri(main)) == []
    except BaseException:
        c.close()
        raise
    return c, main


def test_saving_an_imported_module_rechecks_the_documents_that_use_it(tmp_path):
    c, main = _main_and_planner(tmp_path)
    try:
        planner = str(tmp_path / "planner.flow")
        c.open(planner, PLANNER)
        assert c.diagnostics(uri(planner)) == []
        changed = PLANNER_CHANGED
        (tmp_path / "planner.flow").write_text(changed)
        c.change(planner, 2, (4, 0), (5, 0), changed.splitlines(keepends=True)[4])
        assert c.diagnostics(uri(planner)) == []
        c.notify("textDocument/didSave", {"textDocument": {"uri": uri(planner)}})
        assert c.diagnostics(uri(planner)) == []
        (x,) = c.diagnostics(uri(main))
        assert x["code"] == "E202" and x["range"]["start"]["line"] == 12
    finally:
        c.close()


def test_an_unsaved_change_to_an_open_import_rechecks_its_importers_and_closing_it_reads_the_file(tmp_path):
    c, main = _main_and_planner(tmp_path)
    try:
        planner = str(tmp_path / "planner.flow")
        c.open(planner, PLANNER)
        assert c.diagnostics(uri(main)) == []  # its importer, checked again against the same text
        # `next` takes a second argument in the editor only: the file on disk is unchanged
        changed = PLANNER_CHANGED
        c.change(planner, 2, (4, 0), (5, 0), changed.splitlines(keepends=True)[4])
        assert c.diagnostics(uri(planner)) == []
        (x,) = c.diagnostics(uri(main))
        assert x["code"] == "E202" and x["range"]["start"]["line"] == 12
        c.notify("textDocument/didClose", {"textDocument": {"uri": uri(planner)}})
        assert c.diagnostics(uri(planner)) == []  # a closed document's diagnostics are cleared
        assert c.diagnostics(uri(main)) == []  # the file on disk again
    finally:
        c.close()
