"""The seed's support-ticket program checks clean and its side tables are complete."""

from check_helpers import SUPPORT, untyped_nodes

from flow2py.check import check_program
from flow2py.check.typed import CtorRef, FnRef
from flow2py.syntax import ast


def _program():
    r = check_program(SUPPORT)
    assert r.diagnostics == []
    assert r.program is not None
    return r.program


def _src(p, n):
    return p.modules[p.entry_module].ast.source[n.span.start : n.span.end]


def _nodes(p, kind):
    return [n for n in ast.walk(p.modules[p.entry_module].ast) if isinstance(n, kind)]


def test_support_checks_clean_with_every_node_typed():
    p = _program()
    assert untyped_nodes(p) == []


def test_search_pattern_resolves_to_planners_action_constructor():
    p = _program()
    pats = [n for n in _nodes(p, ast.CtorPattern) if n.name == "Search"]
    assert len(pats) == 1
    assert p.refs[pats[0].id] == CtorRef("planner::Action", "Search")


def test_race_is_typed_and_effectful():
    p = _program()
    race = [c for c in _nodes(p, ast.Call) if _src(p, c).startswith("task.race")][0]
    assert p.refs[race.callee.id] == FnRef("std@v1/task::race")
    assert p.effects[race.id] == "tool"
    assert "Result" in repr(p.types[race.id]) and "ToolProblem" in repr(p.types[race.id])
    assert len(p.type_args[race.id]) == 1
    lambdas = _nodes(p, ast.Lambda)
    assert [p.effects[x.id] for x in lambdas] == ["tool", "tool"]
    assert all(p.captures[x.id] for x in lambdas)


def test_work_tail_calls_recorded_and_checkpoint_eligible():
    p = _program()
    calls = {_src(p, c): c for c in _nodes(p, ast.Call)}
    for text in [
        "work(ticket, notes ++ [hit], round + 1)",
        "work(ticket, notes, round + 1)",
        "work(ticket, notes ++ [answer], round + 1)",
        "work(ticket, [], 1)",
    ]:
        assert calls[text].id in p.tail_calls
    site = [s for s in p.checkpoints if s.call == calls["work(ticket, notes ++ [hit], round + 1)"].id]
    assert len(site) == 1 and site[0].eligible and site[0].callee == "main::work"
    assert "root task" in site[0].reason
    # a non-tail call is never a tail call
    assert calls["planner.next(ticket, notes)"].id not in p.tail_calls


def test_operators_resolve_to_std_functions():
    p = _program()
    ops = {n.op: p.refs[n.id] for n in _nodes(p, ast.Binary)}
    assert ops["++"] == FnRef("std@v1/list::concat")
    assert ops["+"] == FnRef("std@v1/int::add")
    assert ops["<="] == FnRef("std@v1/data::le")


def test_effects_of_functions():
    p = _program()
    assert p.effects[p.fn("main::work").node.id] == "tool"
    assert p.fn("std@v1/list::map").effect == "poly"
    assert p.fn("std@v1/list::map").poly_params == [1]
    assert p.fn("planner::next").is_tool


def test_identity_is_blake3_hex():
    p = _program()
    assert len(p.identity) == 64 and int(p.identity, 16) >= 0
