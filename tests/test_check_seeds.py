"""Every program text of the seeds, assembled into modules, checks clean."""
from check_helpers import SEEDS, check_program, untyped_nodes

from flow2py.syntax import ast


def _program():
    r = check_program(SEEDS)
    assert [d.message for d in r.diagnostics] == []
    return r.program


def _calls(p):
    m = p.modules[p.entry_module]
    return {m.ast.source[c.span.start:c.span.end]: c for c in ast.walk(m.ast) if isinstance(c, ast.Call)}


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
