"""The cache of compiled programs (flow2py/cache.py, docs/spec/codegen.md "The program cache"): a
second compile of the same text by the same compiler is loaded from the entry beside the store
without calling the compiler; a changed module or compiler misses; a corrupt, truncated, foreign
or failing entry is ignored and rewritten; the history a run records is the same bytes with and
without it; a cache folder that cannot be written is harmless; `flow2py --version` imports
neither the compiler nor the runtime."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flow2py import cache as program_cache
from flow2py import pipeline, testing
from tests.history_e2e_helpers import Cli, project

SUITE = """\
@tool pub flow double(n: Int) -> Result<Int, Text>

@fake(double)
pub flow fake_double(n: Int) -> Result<Int, Text> = Ok(n * 2)

@test
pub flow doubles() -> Bool !tool = match double(21) {
    Ok(n) => n == 42,
    Err(_) => false,
}
"""


class Compiles:
    """Counts the compiler's first stage (pipeline.read): a cache hit never calls it."""

    def __init__(self, monkeypatch):
        self.n = 0
        real = pipeline.read

        def read(text):
            self.n += 1
            return real(text)

        monkeypatch.setattr(pipeline, "read", read)


@pytest.fixture
def compiles(monkeypatch):
    return Compiles(monkeypatch)


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.delenv(program_cache.ENV, raising=False)
    return Cli(project(tmp_path / "p"))


def forget_loaded():
    """Drop the generated packages this process loaded, so a hit really executes the entry."""
    for name in [m for m in sys.modules if m.startswith("_flow_")]:
        del sys.modules[name]


def run(cli, run_id):
    forget_loaded()
    r = cli.run(run_id)
    assert r.exit_code == 3 and "paused" in r.stdout, r.stdout + r.stderr
    return r


def same_text(r, run_id: str) -> str:
    """What a run printed, its run id written RUN (the paused report names it in its commands)."""
    return re.sub(rf"\b(run|resume|reply) {run_id}\b", r"\1 RUN", r.stdout)


def entries(cli, kind="path"):
    folder = cli.d / "cache"
    return sorted(folder.glob(f"{kind}-*.entry")) if folder.exists() else []


def fact_rows(store: str, run_id: str):
    with sqlite3.connect(store) as db:
        return db.execute(
            "SELECT n, kind, data, hash FROM facts WHERE run=? ORDER BY n", (run_id,)
        ).fetchall()


def test_a_second_run_of_a_program_is_loaded_from_the_cache_without_compiling(cli, compiles):
    first = run(cli, "a")
    assert compiles.n == 1 and len(entries(cli)) == 1
    second = run(cli, "b")
    assert compiles.n == 1  # the compiler was not called
    assert same_text(second, "b") == same_text(first, "a")
    assert cli("resume", "b", "--tools", cli.d / "tools.py").exit_code == 3


def test_history_and_replay_of_a_run_load_its_stored_program_from_the_cache(cli, compiles):
    run(cli, "a")
    forget_loaded()
    text = cli("history", "a").stdout
    assert compiles.n == 2 and len(entries(cli, "stored")) == 1
    forget_loaded()
    assert cli("history", "a").stdout == text
    forget_loaded()
    assert cli("replay", "a").stdout.startswith("Incomplete")
    assert compiles.n == 2


def test_an_edited_module_misses_the_cache_and_the_run_uses_the_new_text(cli, compiles):
    run(cli, "a")
    svc = cli.d / "svc.flow"
    svc.write_text(svc.read_text().replace("step(n: Int)", "step(m: Int)"))
    run(cli, "b")
    assert compiles.n == 2
    run(cli, "c")
    assert compiles.n == 2  # the rewritten entry serves the edited program
    main = cli.d / "main.flow"
    main.write_text(main.read_text().replace('acc ++ "|" ++ a', 'acc ++ "!" ++ a'))
    run(cli, "d")
    assert compiles.n == 3
    assert cli("history", "d").exit_code == 0


def test_another_compiler_fingerprint_misses_the_cache(cli, compiles, monkeypatch):
    run(cli, "a")
    monkeypatch.setattr(program_cache, "_fingerprint", "0" * 64)
    run(cli, "b")
    assert compiles.n == 2 and len(entries(cli)) == 2


def test_the_fingerprint_changes_with_any_compiler_source_file(tmp_path, monkeypatch):
    src = tmp_path / "lower.py"
    src.write_text("x = 1\n")
    monkeypatch.setattr(program_cache, "_compiler_files", lambda: [("flow2py/codegen/lower.py", str(src))])

    def fingerprint():
        monkeypatch.setattr(program_cache, "_fingerprint", None)
        return program_cache.compiler_fingerprint()

    before = fingerprint()
    assert fingerprint() == before
    src.write_text("x = 2\n")
    assert fingerprint() != before
    monkeypatch.setattr(program_cache, "__version__", "99.0")
    src.write_text("x = 1\n")
    assert fingerprint() != before


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _tamper(data: bytes) -> bytes:
    return data.replace(b"root", b"r00t", 1)


def _bad_header(data: bytes) -> bytes:
    return b"not-a-cache 1 00\n" + data.partition(b"\n")[2]


@pytest.mark.parametrize(
    "spoil",
    [_truncate, _tamper, _bad_header, lambda d: b""],
    ids=["truncated", "tampered", "header", "empty"],
)
def test_a_corrupt_entry_is_ignored_compiled_again_and_rewritten(cli, compiles, spoil):
    first = run(cli, "a")
    (entry,) = entries(cli)
    entry.write_bytes(spoil(entry.read_bytes()))
    second = run(cli, "b")
    assert compiles.n == 2 and same_text(second, "b") == same_text(first, "a")
    run(cli, "c")
    assert compiles.n == 2  # rewritten whole: the next run hits it


def test_an_entry_of_another_key_under_this_name_is_foreign_and_ignored(cli, compiles):
    run(cli, "a")
    forget_loaded()
    cli("history", "a")
    (path_entry,) = entries(cli)
    (stored_entry,) = entries(cli, "stored")
    path_entry.write_bytes(stored_entry.read_bytes())  # whole and hashed, but another key's
    run(cli, "b")
    assert compiles.n == 3


def _init_raises(program):
    program["files"]["__init__.py"] = "raise RuntimeError('not this')\n"


def _another_program(program):
    program["files"]["__init__.py"] = program["files"]["__init__.py"].replace(program["identity"], "0" * 64)


def _files_not_text(program):
    program["files"]["main.py"] = 5


def _package_of_another_identity(program):
    program["package"] = "_flow_" + "0" * 16


@pytest.mark.parametrize(
    "forge", [_init_raises, _another_program, _files_not_text, _package_of_another_identity]
)
def test_a_whole_entry_that_does_not_hold_the_program_is_not_trusted(cli, compiles, forge):
    run(cli, "a")
    (entry,) = entries(cli)
    body = json.loads(entry.read_bytes().partition(b"\n")[2])
    forge(body["program"])
    key = program_cache.Key(body["kind"], body["key"])
    assert program_cache.ProgramCache(str(entry.parent)).put(key, body["program"], body["deps"])  # hashed
    run(cli, "b")
    assert compiles.n == 2
    run(cli, "c")
    assert compiles.n == 2  # the compile rewrote it


def test_a_run_records_the_same_history_bytes_with_and_without_the_cache(tmp_path, monkeypatch, compiles):
    monkeypatch.setenv(program_cache.ENV, "off")
    plain = Cli(project(tmp_path / "plain"))
    run(plain, "r")
    assert not (plain.d / "cache").exists()
    monkeypatch.delenv(program_cache.ENV)
    cached = Cli(project(tmp_path / "cached"))
    run(cached, "warm")
    n = compiles.n
    run(cached, "r")
    assert compiles.n == n
    rows = fact_rows(cached.store, "r")
    assert rows == fact_rows(plain.store, "r") and len(rows) > 5
    for c in (plain, cached):
        forget_loaded()
        r = c.resume("r", "--reply", 'root#4={"Ok": "yes"}')
        assert r.exit_code == 0 and r.stdout.strip() == '"s1s2s3|yes"', r.stdout + r.stderr
    assert fact_rows(cached.store, "r") == fact_rows(plain.store, "r")


def test_a_cache_folder_that_cannot_be_made_is_harmless(cli, compiles, monkeypatch):
    blocker = cli.d / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(program_cache.ENV, str(blocker / "cache"))  # under a file: never a folder
    run(cli, "a")
    run(cli, "b")
    assert compiles.n == 2
    assert cli("history", "a").exit_code == 0


def test_the_cache_beside_a_store_is_its_folders_cache(tmp_path, monkeypatch):
    monkeypatch.delenv(program_cache.ENV, raising=False)
    assert program_cache.cache_for(str(tmp_path / "runs.db")).directory == str(tmp_path / "cache")
    monkeypatch.setenv(program_cache.ENV, "off")
    assert program_cache.cache_for(str(tmp_path / "runs.db")) is None


def test_concurrent_writers_and_readers_only_ever_see_whole_entries(tmp_path):
    cache = program_cache.ProgramCache(str(tmp_path / "cache"))
    key = program_cache.Key("stored", "k" * 64)
    summary = {
        "package": "_flow_0123456789abcdef",
        "files": {"__init__.py": "x = 1\n" * 20_000},
        "identity": "0123456789abcdef" + "0" * 48,
        "entry_module": "main",
        "commits": {},
        "reachable": {"": []},
        "tests": [],
        "fakes": [],
    }
    seen = []

    def write():
        for _ in range(15):
            assert cache.put(key, summary)

    def read():
        for _ in range(60):
            seen.append(cache.get(key))

    threads = [threading.Thread(target=f) for f in (write, write, read, read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.ignored == 0
    assert all(b is None or b["program"] == summary for b in seen)
    assert cache.get(key)["program"] == summary
    assert not [p for p in os.listdir(cache.directory) if p.startswith(".tmp-")]


PROCESS_WRITER = """\
import sys
from flow2py import cache as pc

folder, mark = sys.argv[1], sys.argv[2]
c = pc.ProgramCache(folder)
key = pc.Key("stored", "c" * 64)
program = {"package": "_flow_" + "c" * 16, "files": {"__init__.py": mark * 200_000}, "identity": "c" * 64,
           "entry_module": "main", "commits": {}, "reachable": {"": []}, "tests": [], "fakes": []}
seen = set()
for _ in range(40):
    assert c.put(key, program)
    body = c.get(key)
    seen.add(body["program"]["files"]["__init__.py"][0])
print(c.ignored, "".join(sorted(seen)))
"""


def test_processes_writing_one_entry_at_once_each_read_a_whole_entry(tmp_path):
    folder = str(tmp_path / "cache")
    root = Path(__file__).resolve().parent.parent
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS_WRITER, folder, mark], cwd=root, stdout=subprocess.PIPE, text=True
        )
        for mark in "xy"
    ]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert all(out[0] == "0" and set(out[1]) <= {"x", "y"} for out in outs), outs  # nothing ignored
    body = program_cache.ProgramCache(folder).get(program_cache.Key("stored", "c" * 64))
    assert body["program"]["files"]["__init__.py"] in ("x" * 200_000, "y" * 200_000)


def test_a_full_cache_drops_the_entries_least_recently_used(tmp_path):
    cache = program_cache.ProgramCache(str(tmp_path / "cache"), max_entries=3)
    summary = {
        "package": "_flow_" + "1" * 16,
        "files": {"__init__.py": ""},
        "identity": "1" * 64,
        "entry_module": "main",
        "commits": {},
        "reachable": {"": []},
        "tests": [],
        "fakes": [],
    }
    keys = [program_cache.Key("stored", str(i) * 64) for i in range(4)]
    for age, key in zip((300, 200, 100), keys):
        assert cache.put(key, summary)
        t = os.stat(cache.path_of(key)).st_mtime - age
        os.utime(cache.path_of(key), (t, t))
    assert cache.get(keys[0]) is not None  # used now: no longer the oldest
    assert cache.put(keys[3], summary)
    assert [cache.get(k) is not None for k in keys] == [True, False, True, True]


def test_flow2py_test_loads_its_programs_from_the_cache(tmp_path, compiles):
    path = tmp_path / "test_double.flow"
    path.write_text(SUITE)
    cache = program_cache.ProgramCache(str(tmp_path / "cache"))
    for _ in range(2):
        forget_loaded()
        results, diagnostics = testing.run_file(str(path), cache)
        assert diagnostics == "" and [(r.name, r.passed, r.line) for r in results] == [
            ("test_double::doubles", True, 6)
        ]
    assert compiles.n == 1 and cache.hits == 1


def test_version_imports_neither_the_compiler_nor_the_runtime():
    code = (
        "import sys\n"
        "from flow2py.cli import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}))\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    assert out.returncode == 0, out.stderr
    version_line, loaded = out.stdout.splitlines()
    assert version_line == f"flow2py, version {program_cache.__version__}"
    assert {"lark", "libcst", "black", "flowrt"}.isdisjoint(json.loads(loaded.replace("'", '"')))


MODULES_TOOLS = """\
import json, os, sys
from flowrt import bind, pending

HERE = os.path.dirname(os.path.abspath(__file__))


@bind("svc.step")
def step(n):
    with open(os.path.join(HERE, "modules.json"), "w") as f:
        json.dump(sorted(sys.modules), f)
    return {"Ok": "s"}


@bind("svc.ask")
def ask(q):
    return pending


@bind("svc.slow")
def slow(q):
    return pending
"""

COMPILER = ("lark", "libcst", "black", "flow2py.syntax", "flow2py.check", "flow2py.codegen")


def test_a_run_from_the_cache_imports_no_part_of_the_compiler(tmp_path):
    d = project(tmp_path)
    (d / "tools.py").write_text(MODULES_TOOLS)
    env = {k: v for k, v in os.environ.items() if k != program_cache.ENV}
    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "flow2py.cli", "run", str(d / "main.flow"), "--input", '{"ticket": "t"}']
    cmd += ["--tools", str(d / "tools.py"), "--store", str(d / "runs.db")]
    loaded = []
    for _ in range(2):
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=120)
        assert r.returncode == 3, r.stdout + r.stderr
        loaded.append({m for m in json.loads((d / "modules.json").read_text()) if m.startswith(COMPILER)})
    compiled, cached = loaded
    assert {"lark", "libcst", "black", "flow2py.check"} <= compiled  # the first run compiled
    assert cached == set()
