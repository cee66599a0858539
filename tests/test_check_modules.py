"""Modules: relative, std and repository paths, the lock file, cycles, program identity."""

import json

from check_helpers import codes, write_program
from flow2py.check import check_program


def _repo(cache, commit, files, tag="v1.2"):
    root = cache / "github.com" / "acme" / "tools"
    (root / "tags").mkdir(parents=True, exist_ok=True)
    (root / "tags" / tag).write_text(commit + "\n")
    for name, text in files.items():
        p = root / "commits" / commit / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


MAIN = """
use "github.com/acme/tools@v1.2/catalog"
pub flow main(r: Text) -> Result<Text, ToolProblem<Text>> !tool = catalog.read(r)
"""


def test_repository_module_resolves_from_cache_and_is_pinned(tmp_path):
    cache = tmp_path / "cache"
    _repo(cache, "abc123", {"catalog.flow": "@tool pub flow read(r: Text) -> Result<Text, Text>\n"})
    path = write_program(tmp_path / "prog", {"main.flow": MAIN})
    r = check_program(path, cache_dir=str(cache))
    assert codes(r) == []
    assert "github.com/acme/tools@v1.2/catalog" in r.program.modules
    assert r.program.fn("github.com/acme/tools@v1.2/catalog::read").is_tool
    lock = json.loads((tmp_path / "prog" / "flow.lock").read_text())
    assert lock["repos"]["github.com/acme/tools"] == {"tag": "v1.2", "commit": "abc123"}


def test_moved_tag_is_refused_naming_both_commits(tmp_path):
    cache = tmp_path / "cache"
    _repo(cache, "abc123", {"catalog.flow": "@tool pub flow read(r: Text) -> Result<Text, Text>\n"})
    path = write_program(tmp_path / "prog", {"main.flow": MAIN})
    assert codes(check_program(path, cache_dir=str(cache))) == []
    _repo(cache, "def456", {"catalog.flow": "@tool pub flow read(r: Text) -> Result<Text, Text>\n"})
    r = check_program(path, cache_dir=str(cache))
    assert codes(r) == ["E105"]
    assert "abc123" in r.diagnostics[0].message and "def456" in r.diagnostics[0].message


def test_cache_location_from_environment(tmp_path, monkeypatch):
    cache = tmp_path / "envcache"
    _repo(cache, "abc123", {"catalog.flow": "@tool pub flow read(r: Text) -> Result<Text, Text>\n"})
    monkeypatch.setenv("FLOW2PY_CACHE", str(cache))
    path = write_program(tmp_path / "prog", {"main.flow": MAIN})
    assert codes(check_program(path)) == []


def test_two_versions_of_one_repository_are_refused(tmp_path):
    cache = tmp_path / "cache"
    _repo(cache, "abc123", {"a.flow": "pub flow x() -> Int = 1\n", "b.flow": "pub flow y() -> Int = 1\n"})
    _repo(cache, "abc123", {}, tag="v2.0")
    path = write_program(
        tmp_path / "prog",
        {
            "main.flow": """
        use "github.com/acme/tools@v1.2/a"
        use "github.com/acme/tools@v2.0/b"
        pub flow main() -> Int = a.x() + b.y()
    """
        },
    )
    assert "E106" in codes(check_program(path, cache_dir=str(cache)))


def test_missing_module_is_reported_at_the_use(tmp_path):
    path = write_program(tmp_path, {"main.flow": 'use "./nowhere"\npub flow main() -> Int = 1\n'})
    r = check_program(path)
    assert codes(r) == ["E103"]
    assert r.diagnostics[0].span.line == 1


def test_cycle_is_refused_naming_the_cycle(tmp_path):
    path = write_program(
        tmp_path,
        {
            "main.flow": 'use "./a"\npub flow main() -> Int = a.f()\n',
            "a.flow": 'use "./b"\npub flow f() -> Int = b.g()\n',
            "b.flow": 'use "./a"\npub flow g() -> Int = a.f()\n',
        },
    )
    r = check_program(path)
    assert "E104" in codes(r)
    assert "a -> b -> a" in [d for d in r.diagnostics if d.code == "E104"][0].message


def test_imported_names_are_used_qualified(tmp_path):
    path = write_program(
        tmp_path,
        {
            "main.flow": 'use "./planner"\npub flow main() -> planner.Action = planner.Search("x")\n',
            "planner.flow": "pub type Action { Search(Text), Done }\n",
        },
    )
    assert codes(check_program(path)) == []
    path = write_program(
        tmp_path,
        {
            "main.flow": 'use "./planner"\npub flow main() -> Action = planner.Search("x")\n',
        },
    )
    assert "E102" in codes(check_program(path))


def test_unknown_std_version(tmp_path):
    path = write_program(
        tmp_path, {"main.flow": 'use "std@v9/list"\npub flow main() -> Int = list.length([1])\n'}
    )
    assert codes(check_program(path)) == ["E113"]


def test_identity_survives_reformatting_and_changes_with_meaning(tmp_path):
    a = write_program(tmp_path / "a", {"main.flow": "pub flow main(x: Int) -> Int = x + 1\n"})
    b = write_program(
        tmp_path / "b", {"main.flow": "// a comment\npub flow main(x: Int) -> Int =\n    x   +   1\n"}
    )
    c = write_program(tmp_path / "c", {"main.flow": "pub flow main(x: Int) -> Int = x + 2\n"})
    ia, ib, ic = (check_program(p).program.identity for p in (a, b, c))
    assert ia == ib
    assert ia != ic


def test_a_repository_module_that_fails_to_load_is_not_pinned(tmp_path):
    cache = tmp_path / "cache"
    _repo(cache, "abc123", {"other.flow": "pub flow x() -> Int = 1\n"})  # no catalog.flow at this commit
    path = write_program(tmp_path / "prog", {"main.flow": MAIN})
    assert "E103" in codes(check_program(path, cache_dir=str(cache)))
    assert not (tmp_path / "prog" / "flow.lock").exists()
