"""The cache of compiled programs, kept beside the store (docs/spec/codegen.md, "The program cache").

Compiling a program (read, check, generate: flow2py.pipeline) costs far more than loading its
generated package, so `run`, `resume`, `replay`, `history` and `fork` keep each compile's result in
`<store dir>/cache/` and load it from there next time, without reading the compiler at all (no
lark, libcst or black is imported on a hit). An entry is the generated package's files plus what
the host reads of the checked program (which Tools each entry reaches, the entry module, the
repository commits, the `@test` functions and `@fake` bindings): `CachedProgram`, which runs
exactly as the `LoadedProgram` it was taken from.

What an entry is keyed by (`Key`), so that a hit is what compiling again would give:

* the compiler's fingerprint (`compiler_fingerprint`): flow2py's version, a blake3 of every
  source file of the compiler (flow2py/**/*.py, the grammar, std/*.flow), the versions of lark,
  libcst and black, and the Python version: an edited compiler never reads an entry it did not
  write;
* for a program from a path: the path as given and as an absolute path. The files the compile
  read (every non-std module, `flow.lock`, the tag files of repository modules) are recorded in
  the entry with a digest of their text, and a hit re-reads each one and compares: an edited,
  added-to or removed module misses;
* for a run's stored program: the run's program identity and every stored module text and
  repository commit (all known before compiling);
* for a submitted bundle (flow2py/bundles.py): its entry, every module text and its pins, and
  where repository modules are read from; the entry records the tag file and the module file of
  each repository module it read, checked on a hit as a path's files are.

An entry file is `flow2py-program-cache <format> <blake3 hex of the body>\\n<body JSON>`. Reading
checks the header, the hash, the key recorded inside the body (an entry copied under another
name is foreign) and the shape of every field before anything in it is executed; an entry that
fails any check is ignored, and the compile that follows rewrites it. Writes go to a temporary
file in the same folder, then `os.replace`: a reader sees a whole entry or none, and concurrent
writers each write a whole one (the last one stays; both are the same program). A cache folder
that is missing and cannot be made, or is not writable, only means every compile is a miss. A
folder keeps at most MAX_ENTRIES entries; a write drops the least recently used beyond that.
`FLOW2PY_PROGRAM_CACHE=off` turns the cache off; any other value names the folder to use.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass

import blake3

import flowrt as rt
from flowrt.host import Runnable

from flow2py import __version__

__all__ = [
    "CachedProgram",
    "Key",
    "ProgramCache",
    "cache_for",
    "compiler_fingerprint",
    "text_digest",
]

FORMAT = 1
MAGIC = b"flow2py-program-cache"
ENV = "FLOW2PY_PROGRAM_CACHE"
MAX_ENTRIES = 200  # entries kept in one cache folder (about 50 kB each for a small program)
_HEAVY = ("lark", "libcst", "black")  # the compiler's dependencies whose versions shape its output


# ---- the compiler's fingerprint -----------------------------------------------------------------


_fingerprint: str | None = None


def _compiler_files() -> list[tuple[str, str]]:
    """(name, path) of every source file of the compiler, sorted: flow2py's Python files and
    grammar, and std's Flow files."""
    roots = [("flow2py", os.path.dirname(os.path.abspath(__file__)))]
    spec = importlib.util.find_spec("flow2py.std")  # imports flow2py only, never std's modules
    for loc in (spec.submodule_search_locations or []) if spec else []:
        roots.append(("std", loc))
    out = []
    for name, root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".lark", ".flow")):
                    path = os.path.join(folder, f)
                    out.append((name + "/" + os.path.relpath(path, root).replace(os.sep, "/"), path))
    return sorted(out)


def _dependency_versions() -> list[str]:
    """The installed distributions of lark, libcst and black (their dist-info folder names), found
    without importing them."""
    out = []
    for name in _HEAVY:
        spec = importlib.util.find_spec(name)
        where = (list(spec.submodule_search_locations or []) or [spec.origin or ""])[0] if spec else ""
        site = os.path.dirname(where)
        try:
            dists = sorted(
                n for n in os.listdir(site) if n.lower().startswith(name + "-") and n.endswith(".dist-info")
            )
        except OSError:
            dists = []
        out.append(f"{name}={where}:{','.join(dists)}")
    return out


def compiler_fingerprint() -> str:
    """blake3 hex of what shapes the compiler's output (module docstring); computed once a process."""
    global _fingerprint
    if _fingerprint is None:
        h = blake3.blake3()
        for part in [f"flow2py {__version__}", sys.version, *_dependency_versions()]:
            h.update(part.encode() + b"\0")
        for name, path in _compiler_files():
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:  # gone since the walk: this fingerprint matches no entry written before
                data = b"\0unreadable"
            h.update(f"{name}\0{len(data)}\0".encode() + data)
        _fingerprint = h.hexdigest()
    return _fingerprint


# ---- keys ---------------------------------------------------------------------------------------


def _digest(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return blake3.blake3(text.encode("utf-8", "surrogatepass")).hexdigest()


def text_digest(text: str | None) -> str | None:
    """The digest a dependency's text is recorded by (None: the file is absent)."""
    return None if text is None else blake3.blake3(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_text(path: str) -> str | None:
    """A file's text as the module reader reads it (UTF-8, universal newlines), or None."""
    try:
        with open(path, encoding="utf-8", errors="surrogatepass") as f:
            return f.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return None


@dataclass(frozen=True)
class Key:
    """What an entry is found by: `kind` ("path" or "stored") and the digest of its inputs."""

    kind: str
    digest: str

    @classmethod
    def for_path(cls, entry_path: str) -> Key:
        # FLOW2PY_CACHE and the home folder decide where repository modules are read from
        # (flow2py.check.modgraph.default_cache_dir), so they are part of what was compiled.
        where = [os.environ.get("FLOW2PY_CACHE"), os.path.expanduser("~")]
        parts = ["path", compiler_fingerprint(), entry_path, os.path.abspath(entry_path), where]
        return cls("path", _digest(parts))

    @classmethod
    def for_stored(cls, entry_path: str, identity: str, sources: dict, commits: dict | None) -> Key:
        parts = ["stored", compiler_fingerprint(), entry_path, identity, sources, commits or {}]
        return cls("stored", _digest(parts))

    @classmethod
    def for_bundle(cls, entry_path: str, modules: dict, pins: dict | None) -> Key:
        where = [os.environ.get("FLOW2PY_CACHE"), os.path.expanduser("~")]
        parts = ["bundle", compiler_fingerprint(), entry_path, modules, pins or {}, where]
        return cls("bundle", _digest(parts))

    @property
    def file_name(self) -> str:
        return f"{self.kind}-{self.digest}.entry"


# ---- the cached program -------------------------------------------------------------------------


class CachedProgram(Runnable):
    """A program loaded from a cache entry: the generated package executed (or found in this
    process, by its identity's package name), with the checker's answers the entry recorded."""

    def __init__(self, summary: dict):
        name = summary["package"]
        program = getattr(sys.modules.get(name), "PROGRAM", None)
        if program is None:
            program = getattr(rt.load_package(name, summary["files"]), "PROGRAM", None)
            if getattr(program, "identity", None) != summary["identity"]:
                for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                    del sys.modules[m]  # never found later as this program "already loaded"
                raise ValueError(f"the cached package is not program {summary['identity'][:12]}")
        super().__init__(program)
        self.summary = summary

    def reachable(self, entry: str | None = None):
        wanted = set(self.summary["reachable"].get("" if entry is None else entry, ()))
        return tuple(t for t in self.program.tools if t[0] in wanted)

    def meta(self, path: str | None = None, **extra) -> dict:
        out = {"entry_module": self.summary["entry_module"], "commits": dict(self.summary["commits"])}
        if path:
            out["path"] = os.path.abspath(path)
        out.update(extra)
        return out

    @property
    def tests(self) -> list[dict]:
        """The program's `@test` functions: {"decl", "name", "file", "line"}, in source order."""
        return [dict(t) for t in self.summary["tests"]]

    @property
    def fakes(self) -> list[tuple[str, str]]:
        """(tool id, entry function name) of every `@fake` function."""
        return [tuple(f) for f in self.summary["fakes"]]


def _str_map(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _str_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def valid_summary(s) -> bool:
    """The shape a program summary must have before its files are executed."""
    return (
        isinstance(s, dict)
        and isinstance(s.get("package"), str)
        and s["package"].startswith("_flow_")
        and s["package"].isidentifier()
        and _str_map(s.get("files"))
        and "__init__.py" in s["files"]
        and isinstance(s.get("identity"), str)
        and s["package"] == "_flow_" + s["identity"][:16]
        and isinstance(s.get("entry_module"), str)
        and _str_map(s.get("commits"))
        and isinstance(s.get("reachable"), dict)
        and all(isinstance(k, str) and _str_list(v) for k, v in s["reachable"].items())
        and isinstance(s.get("tests"), list)
        and all(
            isinstance(t, dict)
            and all(isinstance(t.get(k), str) for k in ("decl", "name", "file"))
            and isinstance(t.get("line"), int)
            for t in s["tests"]
        )
        and isinstance(s.get("fakes"), list)
        and all(isinstance(f, list) and len(f) == 2 and _str_list(f) for f in s["fakes"])
    )


def _valid_deps(deps) -> bool:
    return isinstance(deps, list) and all(
        isinstance(d, list)
        and len(d) == 2
        and isinstance(d[0], str)
        and (d[1] is None or isinstance(d[1], str))
        for d in deps
    )


# ---- an entry from a compile ------------------------------------------------------------------


def summarize(program, package) -> dict:
    """What a cache entry keeps of a compile: the generated package (flow2py.pipeline's
    GeneratedPackage) and the checker's answers the host asks of a CheckedProgram."""
    from flow2py.check.reach import entry_roots, reachable_tools

    module = program.entry_module
    names = [None] + sorted({i.name for i in program.fn_decls.values() if i.module == module})
    reachable = {"" if n is None else n: reachable_tools(program, entry_roots(program, n)) for n in names}
    tests = [
        {
            "decl": i.decl,
            "name": i.name,
            "file": i.node.span.file if i.node else "?",
            "line": i.node.span.line if i.node else 0,
        }
        for i in program.fn_decls.values()
        if i.is_test and not i.module.startswith("std@")
    ]
    tests.sort(key=lambda t: (t["file"], t["line"]))
    return {
        "package": package.name,
        "files": dict(package.files),
        "identity": program.identity,
        "entry_module": module,
        "commits": dict(program.commits),
        "reachable": reachable,
        "tests": test_cases(program),
        "fakes": [list(f) for f in fakes(program)],
    }


def test_cases(program) -> list[dict]:
    """The `@test` functions of the program's own modules (std excluded), in source order:
    {"decl", "name", "file", "line"} (flow2py.testing.FlowTest)."""
    out = []
    for i in program.fn_decls.values():
        if i.is_test and not i.module.startswith("std@"):
            span = i.node.span if i.node else None
            out.append(
                {
                    "decl": i.decl,
                    "name": i.name,
                    "file": span.file if span else "?",
                    "line": span.line if span else 0,
                }
            )
    out.sort(key=lambda t: (t["file"], t["line"]) if t["file"] != "?" else ("", 0))
    return out


def fakes(program) -> list[tuple[str, str]]:
    """(tool id, function name) of every `@fake` function, in declaration order."""
    return [(i.fake_of, i.name) for i in program.fn_decls.values() if i.fake_of]


def path_deps(entry_path: str, modules, program) -> list | None:
    """The files a compile from `entry_path` read, each with the digest of its text: every module
    not of std (std is the compiler's own, in its fingerprint), `flow.lock` and the tag file of each
    repository. None when a file no longer has the text the compile read (it changed meanwhile):
    nothing is cached then."""
    from flow2py.check.modgraph import LOCK_FILE, default_cache_dir

    deps = []
    for m in modules.modules:
        if m.is_std:
            continue
        if read_text(m.file) != m.ast.source:
            return None
        deps.append([m.file, text_digest(m.ast.source)])
        if m.repo:
            repo_id, _, tag = m.repo.rpartition("@")
            tag_file = os.path.join(default_cache_dir(), *repo_id.split("/"), "tags", tag)
            commit = read_text(tag_file)
            if commit is None or commit.strip() != program.commits.get(repo_id):
                return None
            deps.append([tag_file, text_digest(commit)])
    lock = os.path.join(os.path.dirname(os.path.abspath(entry_path)), LOCK_FILE)
    deps.append([lock, text_digest(read_text(lock))])
    return sorted({tuple(d): d for d in deps}.values(), key=lambda d: (d[0], d[1] or ""))


def repository_deps(modules, program) -> list | None:
    """The files a bundle's compile read (flow2py/bundles.py): each repository module and its tag
    file, with the digest of its text; None when one changed meanwhile (nothing is cached)."""
    from flow2py.check.modgraph import default_cache_dir

    deps = []
    for m in modules.modules:
        if m.is_std or not m.repo:
            continue  # std is in the fingerprint, the bundle's own modules in the key
        if read_text(m.file) != m.ast.source:
            return None
        repo_id, _, tag = m.repo.rpartition("@")
        tag_file = os.path.join(default_cache_dir(), *repo_id.split("/"), "tags", tag)
        commit = read_text(tag_file)
        if commit is None or commit.strip() != program.commits.get(repo_id):
            return None
        deps += [[m.file, text_digest(m.ast.source)], [tag_file, text_digest(commit)]]
    return sorted({tuple(d): d for d in deps}.values(), key=lambda d: (d[0], d[1] or ""))


# ---- the cache folder ---------------------------------------------------------------------------


class ProgramCache:
    """One cache folder. `get` gives a verified entry's body or None; `put` writes one atomically
    and keeps at most `max_entries` entries, dropping those least recently used (a hit touches
    its entry's modification time). `hits`, `misses` and `ignored` (entries that failed a check)
    count this object's lookups."""

    def __init__(self, directory: str, max_entries: int = MAX_ENTRIES):
        self.directory = directory
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self.ignored = 0

    def path_of(self, key: Key) -> str:
        return os.path.join(self.directory, key.file_name)

    def get(self, key: Key) -> dict | None:
        """The entry's body when it exists, is whole, is the one for `key`, and every dependency it
        lists still has the recorded text; otherwise None (and the caller compiles)."""
        try:
            with open(self.path_of(key), "rb") as f:
                data = f.read()
        except OSError:
            self.misses += 1
            return None
        body = self._verified(data, key)
        if body is None:
            self.ignored += 1
            return None
        if any(text_digest(read_text(path)) != digest for path, digest in body.get("deps", [])):
            self.misses += 1  # a module changed since: a new compile writes the entry again
            return None
        self.hits += 1
        try:
            os.utime(self.path_of(key))  # used now: the last to be pruned
        except OSError:
            pass
        return body

    @staticmethod
    def _verified(data: bytes, key: Key) -> dict | None:
        head, nl, raw = data.partition(b"\n")
        parts = head.split(b" ")
        if not nl or len(parts) != 3 or parts[0] != MAGIC or parts[1] != str(FORMAT).encode():
            return None
        if blake3.blake3(raw).hexdigest().encode() != parts[2]:
            return None  # truncated or changed after it was written
        try:
            body = json.loads(raw.decode("utf-8", "surrogatepass"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        if not isinstance(body, dict) or body.get("kind") != key.kind or body.get("key") != key.digest:
            return None  # another key's entry under this name: foreign
        if key.kind in ("path", "bundle") and not _valid_deps(body.get("deps")):
            return None
        return body if valid_summary(body.get("program")) else None

    def put(self, key: Key, program: dict, deps: list | None = None) -> bool:
        """Write the entry for `key` (temporary file + rename); False when the folder cannot be
        written, which is harmless."""
        body = {"kind": key.kind, "key": key.digest, "program": program}
        if deps is not None:
            body["deps"] = deps
        raw = json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
        data = b" ".join([MAGIC, str(FORMAT).encode(), blake3.blake3(raw).hexdigest().encode()]) + b"\n" + raw
        tmp = None
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".entry", dir=self.directory)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path_of(key))
        except OSError:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False
        self.prune()
        return True

    def prune(self) -> None:
        """Drop the entries beyond `max_entries`, least recently used first, and temporary files
        a writer that died left more than an hour ago. Another process reading one as it goes
        finishes its read (or misses and compiles)."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        entries, now = [], time.time()
        for name in names:
            path = os.path.join(self.directory, name)
            try:
                mtime = os.stat(path).st_mtime
                if name.startswith(".tmp-") and now - mtime > 3600:
                    os.unlink(path)
                elif name.endswith(".entry") and not name.startswith("."):
                    entries.append((mtime, name, path))
            except OSError:
                continue
        for _, _, path in sorted(entries)[: max(0, len(entries) - self.max_entries)]:
            try:
                os.unlink(path)
            except OSError:
                pass


def cache_for(store_path: str | None) -> ProgramCache | None:
    """The cache beside the store at `store_path` (default `.flow/runs.db`): `<its folder>/cache`;
    `$FLOW2PY_PROGRAM_CACHE` names another folder, or is `off` for none."""
    env = os.environ.get(ENV)
    if env is not None and env.strip().lower() in ("off", "0", "no", "false"):
        return None
    if env and env.strip():
        return ProgramCache(env)
    store = store_path if store_path is not None else os.path.join(".flow", "runs.db")
    if store.startswith(
        ("postgresql://", "postgres://")
    ):  # a database: the cache of this folder's default store
        store = os.path.join(".flow", "runs.db")
    return ProgramCache(os.path.join(os.path.dirname(os.path.abspath(store)), "cache"))
