"""Finding, reading and parsing the modules of a program (docs/spec/modules.md).

From the entry file, every `use` is resolved to a module key and a file, depth first, refusing
cycles; std modules come from the installed `flow2py.std` package, repository modules from the
local module cache, pinned in `flow.lock` next to the entry file. A submitted bundle
(flow2py/bundles.py) gives its own modules as texts (`bundle`: module key -> text) and its pins in
place of `flow.lock`: nothing of the program is then read from disk but std and the module cache,
and no lock is written. Every std module is always
loaded: method syntax and operators find functions in the home module of a type whether or not
the program imported it. The result lists modules in dependency order (each after what it uses).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from importlib import resources

from flow2py.check import codes
from flow2py.check import suggest as sg
from flow2py.diagnostics import Edit, Fix, Problems, Related
from flow2py.syntax import ast
from flow2py.syntax.broken import NOTHING_BROKEN, Broken

STD_VERSION = "std@v1"
LOCK_FILE = "flow.lock"
_REPO_RE = re.compile(
    r"^([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)@([A-Za-z0-9_.+-]+)/(.+)$"
)
_ALIAS_RE = re.compile(r"^[a-z][A-Za-z0-9_]*$")


@dataclass
class LoadedModule:
    key: str
    file: str  # the path on disk (or the std resource path)
    display: str  # the path diagnostics name
    ast: ast.Module
    is_std: bool = False
    repo: str | None = None  # "github.com/acme/tools@v1.2" for repository modules
    repo_dir: str | None = None  # the commit's folder in the module cache
    aliases: dict[str, str | None] = field(default_factory=dict)  # alias -> key (None: failed)
    alias_uses: dict[str, ast.Use] = field(default_factory=dict)
    # what its syntax errors took out of `ast` (flow2py/syntax/broken.py): checking goes on over
    # the rest and does not report what only the missing part explains
    broken: Broken = NOTHING_BROKEN


_std_cache: dict[str, tuple[float, str, ast.Module, list, Broken]] = {}


def std_dir() -> str:
    return str(resources.files("flow2py.std"))


def default_cache_dir() -> str:
    return os.environ.get("FLOW2PY_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "flow2py", "repos"
    )


def _parse(source: str, path: str):
    from flow2py.syntax.parser import parse

    return parse(source, path)


def _span_at_file(path: str) -> ast.Span:
    return ast.Span(path, 1, 1, 1, 1, 0, 0)


_BELOW = 2  # how many folders below a module E103 looks for the path it meant


class Loader:
    def __init__(
        self,
        entry_path: str,
        problems: Problems,
        cache_dir: str | None = None,
        entry_source: str | None = None,
        stored: dict[str, str] | None = None,
        stored_commits: dict[str, str] | None = None,
        bundle: dict[str, str] | None = None,
        pins: dict | None = None,
        open_texts: dict[str, str] | None = None,
    ) -> None:
        # `open_texts`: absolute path -> text of a local module open in an editor, read instead
        # of its file (the language server checks against the unsaved text of other documents).
        self.open_texts = open_texts or {}
        # `stored`: module key -> source, the exact program a run recorded. Every module (std and
        # repository modules included) is then read from it and never from disk or the cache, so
        # resume and replay run on the program the run started with.
        self.stored = stored
        self.stored_commits = dict(stored_commits or {})
        self.entry_path = entry_path
        self.entry_abs = os.path.abspath(entry_path)
        self.entry_dir = os.path.dirname(self.entry_abs)
        self.entry_source = entry_source
        self.problems = problems
        self.cache_dir = cache_dir or default_cache_dir()
        self.modules: dict[str, LoadedModule] = {}
        self.order: list[str] = []
        self.sources: dict[str, str] = {}
        self.syntax_errors = False
        self.commits: dict[str, str] = {}  # "github.com/acme/tools" -> commit
        self.repo_tags: dict[str, str] = {}  # "github.com/acme/tools" -> tag
        self._state: dict[str, int] = {}  # 1 visiting, 2 done
        self._stack: list[str] = []
        self._via: dict[str, ast.Use] = {}  # module key -> the `use` it is being read through
        # `bundle`: module key -> text of the program's own modules (a submitted bundle); its
        # `pins` stand for flow.lock, which is then neither read nor written.
        self.bundle = bundle
        if stored is not None:
            self._lock = {}
        elif bundle is not None:
            self._lock = dict(pins or {})
        else:
            self._lock = self._read_lock()
        self._lock_changed = False
        self._repo_dirs: dict[str, str] = {}
        # id of a `use` whose path leads nowhere -> the one path its safe fix writes (E103, E113)
        self._meant: dict[int, str] = {}

    # -- lock file ----------------------------------------------------------------------------

    def _lock_path(self) -> str:
        return os.path.join(self.entry_dir, LOCK_FILE)

    def _read_lock(self) -> dict:
        try:
            with open(self._lock_path(), encoding="utf-8") as f:
                data = json.load(f)
            repos = data.get("repos", {})
            return repos if isinstance(repos, dict) else {}
        except (OSError, ValueError, AttributeError):
            return {}

    def _write_lock(self) -> None:
        if not self._lock_changed or self.bundle is not None:
            return
        try:
            with open(self._lock_path(), "w", encoding="utf-8") as f:
                json.dump({"version": 1, "repos": self._lock}, f, indent=2, sort_keys=True)
                f.write("\n")
        except OSError:
            pass

    # -- loading ------------------------------------------------------------------------------

    def load(self) -> list[LoadedModule]:
        sd = std_dir()
        if self.stored is not None:
            prefix = STD_VERSION + "/"
            std_names = sorted(k[len(prefix) :] for k in self.stored if k.startswith(prefix))
        else:
            try:
                std_names = sorted(n[:-5] for n in os.listdir(sd) if n.endswith(".flow"))
            except OSError:
                std_names = []
        for name in std_names:
            key = f"{STD_VERSION}/{name}"
            self._visit(key, os.path.join(sd, name + ".flow"), None, True, None, display=key + ".flow")
        entry_key = self._local_key(self.entry_abs)
        before = len(self.problems.items)
        self._visit(
            entry_key, self.entry_abs, None, False, None, display=self.entry_path, source=self.entry_source
        )
        if len(self.problems.items) == before:
            self._write_lock()  # pin only what loaded: a tag whose module is missing is not recorded
        return [self.modules[k] for k in self.order]

    def _local_key(self, abs_file: str) -> str:
        rel = os.path.relpath(abs_file, self.entry_dir)
        rel = rel.removesuffix(".flow")
        return rel.replace(os.sep, "/")

    def _read(self, file: str, display: str, is_std: bool, source: str | None):
        if is_std:
            try:
                mtime = os.path.getmtime(file)
            except OSError:
                return None
            hit = _std_cache.get(file)
            if hit and hit[0] == mtime:
                return hit[1:]
        if source is None and not is_std:
            source = self.open_texts.get(os.path.abspath(file))
        if source is None:
            try:
                # surrogatepass: bytes that encode a lone surrogate read as one, so the parser
                # reports where it is (E011) rather than the whole file being unreadable
                with open(file, encoding="utf-8", errors="surrogatepass") as f:
                    source = f.read()
            except (OSError, UnicodeDecodeError):
                return None
        parsed = _parse(source, display)
        module, diags = parsed.module, parsed.diagnostics
        source = module.source  # the text as parsed: a lone surrogate replaced (E011)
        if is_std:
            _std_cache[file] = (os.path.getmtime(file), source, module, diags, parsed.broken)
        return source, module, diags, parsed.broken

    def _visit(
        self,
        key: str,
        file: str,
        use: ast.Use | None,
        is_std: bool,
        repo: str | None,
        display: str | None = None,
        source: str | None = None,
    ) -> bool:
        state = self._state.get(key)
        if state == 2:
            return True
        if state == 1:
            cycle = self._stack[self._stack.index(key) :] + [key]
            # the other `use`s of the cycle: each module of it reading the next one
            related = [
                Related(f"`{a}` uses `{b}` here", self._via[b].span)
                for a, b in zip(cycle, cycle[1:-1] + [None])
                if b is not None and b in self._via
            ]
            self.problems.report(
                codes.ImportCycle(use.span if use else _span_at_file(file), tuple(cycle)), related=related
            )
            return False
        if display is None:
            if is_std or repo:
                display = key + ".flow"
            else:
                display = os.path.normpath(os.path.join(os.path.dirname(self.entry_path), key + ".flow"))
        if self.stored is not None:
            source = self.stored.get(key)
            read = None if source is None else self._read(file, display, False, source)
        elif self.bundle is not None and not is_std and not repo:
            source = self.bundle.get(key)  # the bundle's own module: never a file on disk
            read = None if source is None else self._read(file, display, False, source)
        else:
            read = self._read(file, display, is_std, source)
        if read is None:
            if use is not None:
                # a repository module: the file in the module cache, which is where it was looked for
                shown = file if repo else (key + ".flow" if is_std else display)
                self._bad_path(
                    codes.ModuleNotFound(use.span, use.path, "module", shown), self._stack[-1], use
                )
            else:
                self.problems.report(codes.ModuleNotFound(_span_at_file(display), display, "file"))
            return False
        text, module, diags, broken = read
        self.sources[display] = text
        if diags:
            self.syntax_errors = True
            self.problems.extend(diags)
        lm = LoadedModule(key, file, display, module, is_std, repo, self._repo_dirs.get(key), broken=broken)
        self.modules[key] = lm
        self._state[key] = 1
        self._stack.append(key)
        if use is not None:
            self._via[key] = use
        for u in module.uses:
            self._use(lm, u)
        self._stack.pop()
        self._state[key] = 2
        self.order.append(key)
        return True

    def _use(self, lm: LoadedModule, u: ast.Use) -> None:
        self._use_path(lm, u)
        meant = self._meant.pop(id(u), None)
        if meant is not None:
            # checked as the path its one safe fix writes: that module's own mistakes are reported
            # in this pass, and the uses of its alias resolve (nothing used the alias written)
            old = next((a for a, x in lm.alias_uses.items() if x is u and lm.aliases.get(a) is None), None)
            if old is not None:
                del lm.aliases[old], lm.alias_uses[old]
            self._use_path(lm, replace(u, path=meant))

    def _use_path(self, lm: LoadedModule, u: ast.Use) -> None:
        path = u.path
        alias = path.rstrip("/").rsplit("/", 1)[-1]
        if "@" in alias or not _ALIAS_RE.match(alias):
            self._bad_path(codes.BadUsePath(u.span, path, "alias", alias=alias), lm.key, u)
            return
        if alias in lm.aliases:
            self.problems.report(
                codes.DuplicateImport(u.span, alias),
                related=[_rel("the first one", lm.alias_uses[alias].span)],
            )
            return
        lm.aliases[alias] = None
        lm.alias_uses[alias] = u
        target = self._resolve(lm, u)
        if target is None:
            return
        key, file, is_std, repo, display = target
        if self._visit(key, file, u, is_std, repo, display=display):
            lm.aliases[alias] = key

    def _bad_path(self, data: codes.ModuleNotFound | codes.BadUsePath, importer: str, u: ast.Use) -> None:
        """A `use` path that leads nowhere (E103, E113), with the path it most likely meant: a
        module beside the importing one, or a std module spelled another way."""
        lm = self.modules.get(importer)
        cands = []
        if lm is not None and not lm.is_std:
            cands = sg.path_candidates(u.path, STD_VERSION, self._std_names(), self._beside(lm))
        src = lm.ast.source if lm is not None else ""
        fixes = []
        if cands:
            data = replace(data, candidates=tuple(cands))
            at = _path_span(u, src or "")
            old_alias = u.path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".flow")
            for c in cands:
                new_alias = c.rsplit("/", 1)[-1]
                # a new alias is safe only when nothing used the old one (the body names the new)
                body = _without_uses(src or "")
                renamed = (
                    new_alias != old_alias
                    and re.search(r"(?<![\w.\"])" + re.escape(old_alias) + r"\s*\.", body)
                    # `let tasks = ...` / `tasks: List<...>`: a local of that name, whose fields
                    # and methods those are, while the body writes the new alias's members
                    and not (
                        re.search(
                            r"\blet\s+"
                            + re.escape(old_alias)
                            + r"\b|\b"
                            + re.escape(old_alias)
                            + r"\s*:[^:]",
                            body,
                        )
                        and re.search(r"(?<![\w.\"])" + re.escape(new_alias) + r"\s*\.", body)
                    )
                )
                taken = new_alias in (lm.aliases if lm else {}) and new_alias != old_alias
                if at is not None:
                    safe = len(cands) == 1 and not renamed and not taken
                    fixes.append(Fix(f'write `"{c}"`', (Edit(at, f'"{c}"'),), safe))
                    if safe:
                        self._meant[id(u)] = c
        self.problems.report(data, fixes=fixes)

    def _std_names(self) -> list[str]:
        prefix = STD_VERSION + "/"
        return [k[len(prefix) :] for k in self.modules if k.startswith(prefix)]

    def _beside(self, lm: LoadedModule) -> list[str]:
        """The modules beside `lm`: the `.flow` files in its folder (or the bundle's, stored),
        and as `folder/name` those in the folders below it, `_BELOW` deep."""
        if self.stored is not None or self.bundle is not None:
            texts = self.stored if self.stored is not None else self.bundle
            base = os.path.dirname(lm.key)
            out = []
            for k in texts:
                if k.startswith(STD_VERSION + "/"):
                    continue
                rel = k[len(base) + 1 :] if base else k
                if (not base or k.startswith(base + "/")) and rel.count("/") <= _BELOW:
                    out.append(rel)
            return out
        top = os.path.dirname(lm.file) or "."
        out = []
        for dirpath, dirs, files in os.walk(top):
            rel = os.path.relpath(dirpath, top)
            depth = 0 if rel == "." else rel.count(os.sep) + 1
            # hidden folders and the module cache hold no module of the program
            dirs[:] = [] if depth >= _BELOW else [d for d in dirs if not d.startswith(".") and d != "cache"]
            for n in files:
                if n.endswith(".flow"):
                    out.append(n[:-5] if depth == 0 else f"{rel.replace(os.sep, '/')}/{n[:-5]}")
        return out

    def _resolve(self, lm: LoadedModule, u: ast.Use):
        """Where `use` `u` in `lm` leads: (key, file, is_std, repo, display), or None (reported)."""
        if u.path.startswith(("./", "../")):
            return self._resolve_relative(lm, u)
        if u.path.startswith("std@"):
            return self._resolve_std(u)
        return self._resolve_repo(u)

    def _resolve_relative(self, lm: LoadedModule, u: ast.Use):
        """`./name` or `../name`: next to `lm`, inside std, its repository or the program."""
        path = u.path
        if lm.is_std:
            rel = os.path.normpath(os.path.join(os.path.dirname(lm.key[len(STD_VERSION) + 1 :]) or ".", path))
            return (f"{STD_VERSION}/{rel}", os.path.join(std_dir(), rel + ".flow"), True, None, None)
        if lm.repo is not None:
            base = lm.key[len(lm.repo) + 1 :]
            rel = os.path.normpath(os.path.join(os.path.dirname(base) or ".", path)).replace(os.sep, "/")
            if rel.startswith(".."):
                self.problems.report(codes.BadUsePath(u.span, path, "leaves-repo", repo=lm.repo))
                return None
            file = os.path.join(lm.repo_dir, rel + ".flow")
            self._repo_dirs[f"{lm.repo}/{rel}"] = lm.repo_dir
            return (f"{lm.repo}/{rel}", file, False, lm.repo, None)
        file = os.path.normpath(os.path.join(os.path.dirname(lm.file), path + ".flow"))
        return (self._local_key(file), file, False, None, None)

    def _resolve_std(self, u: ast.Use):
        """`std@v1/name`: a module of the installed std, at the one version this compiler has."""
        path = u.path
        version, _, rest = path.partition("/")
        if version != STD_VERSION:
            data = codes.BadUsePath(u.span, path, "std-version", version=version, provided=STD_VERSION)
            self._bad_path(data, self._stack[-1], u)
            return None
        if not rest:
            self.problems.report(codes.BadUsePath(u.span, path, "no-module"))
            return None
        return (f"{STD_VERSION}/{rest}", os.path.join(std_dir(), rest + ".flow"), True, None, None)

    def _resolve_repo(self, u: ast.Use):
        """`host/owner/repo@tag/name`: a module of the module cache, its commit pinned in flow.lock."""
        path = u.path
        m = _REPO_RE.match(path)
        if not m:
            self._bad_path(codes.BadUsePath(u.span, path, "not-a-path"), self._stack[-1], u)
            return None
        host, owner, repo, tag, mod = m.groups()
        repo_id = f"{host}/{owner}/{repo}"
        prev_tag = self.repo_tags.get(repo_id)
        if prev_tag is not None and prev_tag != tag:
            self.problems.report(codes.TwoVersions(u.span, repo_id, prev_tag, tag))
            return None
        root = os.path.join(self.cache_dir, host, owner, repo)
        tag_file = os.path.join(root, "tags", tag)
        if self.stored is not None:
            # A stored program carries its resolved commits; the cache is never consulted.
            commit = self.stored_commits.get(repo_id, "")
            self.repo_tags[repo_id] = tag
            self.commits[repo_id] = commit
            return (
                f"{repo_id}@{tag}/{mod}",
                os.path.join(root, "commits", commit, mod + ".flow"),
                False,
                f"{repo_id}@{tag}",
                None,
            )
        try:
            with open(tag_file, encoding="utf-8") as f:
                commit = f.read().strip()
        except OSError:
            self.problems.report(codes.ModuleNotFound(u.span, path, "tag", tag_file, tag=tag, repo=repo_id))
            return None
        pinned = self._lock.get(repo_id)
        if (
            isinstance(pinned, dict)
            and pinned.get("tag") == tag
            and pinned.get("commit")
            and pinned["commit"] != commit
        ):
            self.problems.report(codes.MovedTag(u.span, repo_id, tag, pinned["commit"], commit))
            return None
        if not (isinstance(pinned, dict) and pinned.get("tag") == tag):
            self._lock[repo_id] = {"tag": tag, "commit": commit}
            self._lock_changed = True
        self.repo_tags[repo_id] = tag
        self.commits[repo_id] = commit
        file = os.path.join(root, "commits", commit, mod + ".flow")
        self._repo_dirs[f"{repo_id}@{tag}/{mod}"] = os.path.join(root, "commits", commit)
        return (f"{repo_id}@{tag}/{mod}", file, False, f"{repo_id}@{tag}", None)


def _path_span(u: ast.Use, src: str) -> ast.Span | None:
    """Where the quoted path of `use` `u` is in its source."""
    sp = u.span
    if sp.end <= sp.start:
        return None
    i = src.find('"', sp.start, sp.end)
    j = src.find('"', i + 1, sp.end) if i >= 0 else -1
    if i < 0 or j < 0 or sp.line != sp.end_line:
        return None
    return ast.Span(
        sp.file, sp.line, sp.column + (i - sp.start), sp.line, sp.column + (j + 1 - sp.start), i, j + 1
    )


def _without_uses(src: str) -> str:
    return re.sub(r'(?m)^\s*use\s+"[^"\n]*"', "", src)


def _rel(message: str, span: ast.Span):
    from flow2py.diagnostics import Related

    return Related(message, span)
