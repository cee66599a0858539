"""No import cycles in flow2py/ or runtime/: the dependencies between modules go one way.

The graph is static (tests/import_graph.py) and counts every import, a lazy one in a function
body too, so a lazy import that only hides a cycle from Python's import order is a cycle here.
"""

from __future__ import annotations

from import_graph import cycles, graph, imports_of


def test_no_modules_of_the_tree_import_each_other():
    g = graph()
    assert "flow2py.host" in g and "flowrt.engine.run_loop" in g  # the walk sees the tree
    assert cycles(g) == []


def test_a_cycle_of_any_length_is_found_and_shown_as_a_path():
    g = {"a": {"b"}, "b": {"c", "os"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}}
    assert cycles(g) == ["a -> b -> c -> a", "e -> f -> e"]


def test_a_chain_and_a_diamond_are_not_cycles():
    assert cycles({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}) == []


def test_a_lazy_import_that_closes_a_circle_counts(tmp_path):
    host = tmp_path / "host.py"
    host.write_text(
        "from flow2py import pipeline\n\ndef run_tests():\n"
        "    from flow2py.testing import run_file\n    return run_file\n",
        encoding="utf-8",
    )
    testing = tmp_path / "testing.py"
    testing.write_text("from flow2py.host import compile_path\n", encoding="utf-8")
    g = {
        "flow2py.host": imports_of(host, "flow2py.host"),
        "flow2py.testing": imports_of(testing, "flow2py.testing"),
    }
    assert g["flow2py.host"] == {"flow2py.pipeline", "flow2py.testing"}
    assert cycles(g) == ["flow2py.host -> flow2py.testing -> flow2py.host"]


def test_a_sibling_taken_from_the_own_package_is_no_cycle_but_a_name_from_its_init_is(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from flow2py.check import codes\n", encoding="utf-8")
    assert imports_of(probe, "flow2py.check.probe") == {"flow2py.check.codes"}
    probe.write_text("from flow2py.check import CheckResult\n", encoding="utf-8")
    deps = imports_of(probe, "flow2py.check.probe")
    assert deps == {"flow2py.check"}
    g = {"flow2py.check": {"flow2py.check.probe"}, "flow2py.check.probe": deps}
    assert cycles(g) == ["flow2py.check -> flow2py.check.probe -> flow2py.check"]
