"""Every program text of the seeds, assembled into modules, checks clean; each is the text its seed quotes."""

from pathlib import Path

import pytest

from check_helpers import SEEDS, untyped_nodes
from repo_paths import SEED_TEXTS

from flow2py.check import check_program
from flow2py.syntax import ast

#: (seed, file here, fragment): the texts the seeds quote, as tests/check_programs/seeds/README.md lists them
FRAGMENTS = [
    ("001", "browse.flow", "@tool pub flow chat(prompt: Text) -> Result<Text, ChatError>"),
    ("001", "browse.flow", "@tool pub type Page"),
    ("001", "browse.flow", "@tool pub flow open(url: Text) -> Result<Page, BrowseError>"),
    ("001", "browse.flow", "@tool pub flow click(page: Page, selector: Text) -> Result<Unit, PageError>"),
    ("001", "main.flow", "flow describe(item: Item) -> View = render(item)"),
    (
        "001",
        "main.flow",
        "flow read_batch(refs: List<Text>) -> Batch !tool =\n    refs.map(flow(r) = catalog.read(r))",
    ),
    ("000", "main.flow", "task.spawn(flow() = Received(feed.next()))"),
    ("000", "main.flow", "Arrived { index, reply: research.search(item) }"),
]


def _program():
    r = check_program(SEEDS)
    assert [d.message for d in r.diagnostics] == []
    return r.program


def _calls(p):
    m = p.modules[p.entry_module]
    return {m.ast.source[c.span.start : c.span.end]: c for c in ast.walk(m.ast) if isinstance(c, ast.Call)}


def test_seed_programs_check_clean_and_complete():
    p = _program()
    assert untyped_nodes(p) == []


def test_tools_and_tool_types_are_declared():
    p = _program()
    assert p.fn("browse::chat").is_tool and p.fn("browse::open").is_tool
    page = p.type_info("browse::Page")
    assert page.is_tool_type and not page.is_data


def test_map_effect_follows_the_callback():
    p = _program()
    calls = _calls(p)
    assert p.effects[calls["refs.map(flow(r) = catalog.read(r))"].id] == "tool"
    assert p.effects[calls['names.map(flow(n) = n ++ "!")'].id] == "pure"
    fns = {f.name: f for f in p.fn_decls.values() if f.module == "main"}
    assert p.effects[fns["shout"].node.id] == "pure"
    assert p.effects[fns["read_batch"].node.id] == "tool"


def test_spawned_received_and_arrived_are_typed():
    p = _program()
    calls = _calls(p)
    spawn = calls["task.spawn(flow() = Received(feed.next()))"]
    assert "task::Task" in repr(p.types[spawn.id])
    assert p.effects[spawn.id] == "tool"


@pytest.mark.parametrize("seed,name,fragment", FRAGMENTS)
def test_each_quoted_seed_fragment_is_in_the_seed_program_verbatim(seed, name, fragment):
    assert fragment in (Path(SEEDS).parent / name).read_text(encoding="utf-8")


@pytest.mark.skipif(not SEED_TEXTS.is_dir(), reason=f"the seeds are not beside this checkout: {SEED_TEXTS}")
@pytest.mark.parametrize("seed,name,fragment", FRAGMENTS)
def test_each_fragment_copied_here_is_quoted_verbatim_by_its_seed(seed, name, fragment):
    [text] = [p.read_text(encoding="utf-8") for p in SEED_TEXTS.glob(f"{seed}_*.txt")]
    assert fragment in text
