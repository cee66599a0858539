"""The host layer of the CLI: compiling programs and the operations on runs around them.

It is the one place that uses both the compiler and the runtime (docs/dev/architecture.md, "The runtime's floors"). The run
operations themselves live in flowrt.host, which works on a program already in Python (a built
package's PROGRAM); this module adds what needs the compiler: checking a program from a path,
and compiling the exact program a run started with from the sources its history stores, so
resume, replay, history and fork never read the program from disk Compiling itself is
flow2py.pipeline's; the functions here name its uses.

Every refusal is a `Refused` carrying a one-line message and the CLI exit code; a refusal records
nothing, and nothing recorded is ever rewritten. docs/spec/execution.md ("Host operations")
describes what each operation does.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import secrets
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import flowrt as rt
from flowrt.host import operations as rh
from flowrt.host import run_page
from flowrt.host.nested import flow_tool as runtime_flow_tool
from flowrt.host.operations import Refused, Report, open_store, read
from flowrt.host.runs_view import RunView, call_views, runs_view
from flowrt.history.store import Store

from flow2py import pipeline
from flow2py.cache import ProgramCache, cache_for
from flow2py.pipeline import LoadedProgram, ProgramText, compile_program

if TYPE_CHECKING:  # the checker is imported when a program is compiled (flow2py.pipeline)
    from flow2py.check import CheckResult
    from flow2py.check.typed import CheckedProgram

__all__ = [
    "Loaded",
    "Refused",
    "Report",
    "archive",
    "build",
    "check",
    "bindings_of",
    "tool_sites",
    "check_remote",
    "check_bundle",
    "compile_bundle",
    "compile_path",
    "compile_stored",
    "flow_tool",
    "fork",
    "history",
    "list_runs",
    "load_tools",
    "open_store",
    "redact",
    "replay",
    "resume",
    "runs",
    "start",
    "verify",
]


# ---- compiling: flow2py.pipeline -------------------------------------------------------------


Loaded = LoadedProgram  # the name host applications and tests know


def check(
    path: str, *, sources: dict[str, str] | None = None, commits: dict[str, str] | None = None
) -> CheckResult:
    """Check a program from disk, or (`sources`) from the module sources a run stored."""
    return pipeline.check(pipeline.read(ProgramText(path, sources, commits)))


def compile_path(path: str, cache: ProgramCache | None = None) -> rh.Runnable:
    """Compile the program at `path`; with a `cache` (flow2py.cache), load it from there when
    this compiler compiled these files before."""
    return compile_program(ProgramText(path), cache)


def compile_stored(store: Store, run_id: str, cache: ProgramCache | None = None) -> rh.Runnable:
    """Compile the exact program a run started with, from the sources its history stores (or
    load it from `cache`, keyed by those sources and the run's program identity)."""
    info = read(store.host_records.load_run, run_id)
    sources = read(store.history.sources, run_id)
    if not sources:
        raise Refused(f"run {run_id}: the store holds no program sources for it")
    return compile_program(ProgramText.stored(run_id, info.program, sources, info.meta), cache)


def compile_bundle(bundle, *, store: Store | None = None, cache: ProgramCache | None = None) -> rh.Runnable:
    """Compile a submitted bundle from its texts (flow2py.bundles.compile_bundle), with the program
    cache beside `store` unless `cache` is given; `flowrt.host.bundles.BundleRefused` otherwise.
    The runtime calls it through the `flowrt_compilers` entry point (flowrt.host.bundles)."""
    from flow2py import bundles

    if cache is None and store is not None:
        cache = cache_for(str(store.file.path))
    return bundles.compile_bundle(bundle, cache=cache)


def check_bundle(bundle) -> list[dict]:
    """A bundle's diagnostics as data, exactly `check --format json`'s array (flow2py.bundles)."""
    from flow2py import bundles

    return bundles.check_bundle(bundle)


def build(program: CheckedProgram, out_dir: str, package_name: str | None = None) -> str:
    return pipeline.write(program, out_dir, package_name)


# ---- the CLI's operations: compile, then flowrt.host --------------------------------------------


def load_tools(specs: Iterable[str]) -> rt.Bindings:
    """Import each `--tools` file or module; their `@bind` registrations fill the bindings. A
    `.toml` file is a binding file (flowrt.host.binding_files): each Tool it names is bound."""
    for spec in specs:
        try:
            if spec.endswith(".toml"):
                _binding_file(spec)
                continue
            _import_tools(spec)
        except Refused:
            raise
        except BaseException as e:  # noqa: BLE001  (the host's file: report it, never a traceback)
            raise Refused(f"--tools {spec}: importing it failed: {type(e).__name__}: {e}") from None
    from flowrt.host.bundles import bundle_bindings

    return bundle_bindings(rt.BINDINGS)  # std's bundle Tools, unless a file bound them


def _binding_file(spec: str) -> None:
    from flowrt.host.binding_files import BindingFileError, load_binding_file

    try:
        load_binding_file(spec, rt.BINDINGS)
    except BindingFileError as e:
        raise Refused(f"--tools {e}") from None


def bindings_of(loaded: rh.Runnable, tools: Iterable[str], entry: str | None = None) -> rt.Bindings:
    """The `--tools` bindings, then, for a reachable Tool they leave unbound, its module
    repository's default binding file (flowrt.host.binding_files.with_repo_defaults)."""
    return with_defaults(load_tools(tools), loaded, entry)


def with_defaults(bindings: rt.Bindings, loaded: rh.Runnable, entry: str | None = None) -> rt.Bindings:
    """`bindings`, then, for a reachable Tool they leave unbound, its module repository's default
    binding file; `bindings` itself when the program uses no repository."""
    from flowrt.host.binding_files import BindingFileError, with_repo_defaults

    commits = getattr(getattr(loaded, "checked", None), "commits", None)
    if not commits:
        return bindings
    # the module cache, as flow2py.check.modgraph.default_cache_dir finds it (not imported: a run
    # from the program cache imports no part of the compiler)
    cache = os.environ.get("FLOW2PY_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "flow2py", "repos"
    )
    try:
        return with_repo_defaults(bindings, loaded.reachable(entry), commits, cache)
    except BindingFileError as e:
        raise Refused(f"a repository's default bindings: {e}") from None


def tool_sites(path: str, tools: Iterable[str]) -> list[str]:
    """`flow2py tools PATH --tools FILE`: each reachable Tool's signature line (flow2py.inspect)
    followed by where it would run: an in-process function, a command, a URL, or unbound."""
    from flowrt.host.binding_files import where

    from flow2py import inspect

    loaded = compile_path(path)
    bindings = bindings_of(loaded, tools)
    names = dict(loaded.reachable(None))
    out = []
    for line in inspect.tool_signatures(loaded.checked):
        decl = line.rsplit("[", 1)[1].rstrip("]")
        impl = bindings._impls.get(decl) or bindings._impls.get(names.get(decl, ""))
        out.append(f"{line}  => {where(impl)}")
    return out


def check_remote(bindings: rt.Bindings, loaded: rh.Runnable, entry: str | None, what: str) -> rt.Bindings:
    """The hello exchange and signature check of every Tool protocol binding a run can reach
    (flowrt.host.tool_protocol), before anything is recorded."""
    from flowrt.host.tool_protocol import RemoteRefused, check_remote as check

    try:
        check(bindings, loaded, loaded.reachable(entry))
    except RemoteRefused as e:
        raise Refused(f"{e}; {what}") from None
    return bindings


def worker_bindings(served: dict, tools: Iterable[str]) -> rt.Bindings:
    """`flow2py worker`: the `--tools` bindings, each served program's repository defaults for
    the Tools it leaves unbound, and every protocol/MCP binding a served program can reach
    checked (hello, signatures) before the worker starts: a mismatch is Refused, naming the
    program."""
    bindings = load_tools(tools)
    for name in sorted(served):
        bindings = with_defaults(bindings, served[name])
    for name in sorted(served):
        check_remote(bindings, served[name], None, f"the worker was not started (program {name!r})")
    return bindings


def _import_tools(spec: str) -> None:
    if not (spec.endswith(".py") or os.path.sep in spec or os.path.isfile(spec)):
        importlib.import_module(spec)
        return
    if not os.path.isfile(spec):
        raise Refused(f"--tools {spec}: no such file")
    name = "_flow_tools_" + secrets.token_hex(4)
    mod_spec = importlib.util.spec_from_file_location(name, spec)
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[name] = module
    mod_spec.loader.exec_module(module)


def _input(input_json: str | None, what: str = "--input"):
    return None if input_json is None else rh.parse_json(input_json, what)


def start(
    path: str,
    *,
    entry: str = "main",
    input_json: str | None = None,
    tools=(),
    store_path: str | None = None,
    run_id: str | None = None,
    checkpoint_every: int | None = None,
) -> Report:
    """`flow2py run`: check, decode the input, bind, record Start, drive live."""
    loaded = compile_path(path, cache_for(store_path))
    value = _input(input_json)
    # Bad input is refused before a store is created: a host token in it must be one the store
    # records as issued, and a store that does not exist yet has issued none.
    store = open_store(store_path, create=False) if rh.store_exists(store_path) else None
    rh.decode_input(value, loaded.entry(entry)[1], issued=rh.issued_in(store))
    bindings = rh.bindings_for(loaded, bindings_of(loaded, tools, entry), entry, "the run was not started")
    check_remote(bindings, loaded, entry, "the run was not started")
    store = store or open_store(store_path)
    report = rh.start(
        store,
        loaded,
        entry=entry,
        input=value,
        bindings=bindings,
        run_id=run_id,
        checkpoint_every=checkpoint_every,
        meta=loaded.meta(path),
    )
    return _with_calls(store, loaded, report)


def _with_calls(store: Store, loaded, report: Report) -> Report:
    """The report with a paused run's open calls as the operator answers them (reply types)."""
    outcome = report.outcome
    if report.run_id is None or not isinstance(outcome, rt.RunPaused):
        return report
    return dataclasses.replace(report, calls=call_views(store, loaded, report.run_id, outcome.open))


def _replies(items) -> dict:
    """`--reply CALL_ID=JSON` items as {call id: JSON value}."""
    out = {}
    for item in items:
        call_id, sep, text = item.partition("=")
        if not sep:
            raise Refused(f"--reply {item!r}: expected CALL_ID=JSON")
        if call_id in out:
            raise Refused(f"--reply {call_id}: given more than once; a call has one reply")
        out[call_id] = rh.parse_json(text, f"--reply {call_id}")
    return out


def resume(
    run_id: str,
    *,
    replies=(),
    resend=(),
    tools=(),
    store_path: str | None = None,
    checkpoint_every: int | None = None,
) -> Report:
    """`flow2py resume`: on the run's stored program, deliver replies, close the calls a crash cut,
    continue live from the latest checkpoint."""
    delivered = _replies(replies)
    store = open_store(store_path, create=False)
    loaded = compile_stored(store, run_id, cache_for(store_path))
    report = rh.resume(
        store,
        loaded,
        run_id,
        replies=delivered,
        resend=resend,
        bindings=check_remote(bindings_of(loaded, tools), loaded, None, "nothing was recorded"),
        checkpoint_every=checkpoint_every,
    )
    return _with_calls(store, loaded, report)


def replay(run_id: str, *, store_path: str | None = None) -> Report:
    """`flow2py replay`: the run's stored program over its history, nothing bound; one verdict."""
    store = open_store(store_path, create=False, readonly=True)
    return rh.replay(store, compile_stored(store, run_id, cache_for(store_path)), run_id)


def history(run_id: str, *, store_path: str | None = None, fmt: str = "text", details: bool = False) -> str:
    """`flow2py history`; `details`: with the host's records of failed calls (text; the run page,
    `--format html`, always shows them)."""
    if details and fmt == "json":
        raise Refused(
            "--details adds the host's records to the text form (the run page, --format html, shows "
            "them too); the JSON form is the facts alone"
        )
    store = open_store(store_path, create=False, readonly=True)
    prog = compile_stored(store, run_id, cache_for(store_path))
    if details and fmt == "text":
        return rh.history(store, prog, run_id, fmt, details=True)
    return run_page.history(store, prog, run_id, fmt)


def history_chunks(run_id: str, *, store_path: str | None = None, fmt: str = "text") -> Iterator[str]:
    """`flow2py history`, in pieces as the store is read (text and JSON Lines stream in the
    memory of one batch of facts: flowrt.host.history_stream.history_chunks); the html run page is
    one piece."""
    store = open_store(store_path, create=False, readonly=True)
    prog = compile_stored(store, run_id, cache_for(store_path))
    if fmt == "html":
        return iter([run_page.history(store, prog, run_id, fmt)])
    from flowrt.host.history_stream import history_chunks as chunks

    return chunks(store, prog, run_id, fmt)


def fork(
    run_id: str,
    checkpoint: int,
    *,
    program_path: str | None = None,
    input_json: str | None = None,
    tools=(),
    store_path: str | None = None,
    new_run_id: str | None = None,
    checkpoint_every: int | None = None,
) -> Report:
    """`flow2py fork`: a new run from checkpoint N of another, on its program or a newer one."""
    store = open_store(store_path, create=False)
    cache = cache_for(store_path)
    parent = compile_stored(store, run_id, cache)
    loaded = compile_path(program_path, cache) if program_path else parent
    report = rh.fork(
        store,
        parent,
        loaded,
        run_id,
        checkpoint,
        input=_input(input_json),
        bindings=check_remote(bindings_of(loaded, tools), loaded, None, "nothing was recorded"),
        new_run_id=new_run_id,
        checkpoint_every=checkpoint_every,
        meta=loaded.meta(program_path),
    )
    return _with_calls(store, loaded, report)


def verify(run_id: str, *, head: str | None = None, store_path: str | None = None) -> tuple[bool, str]:
    if head is not None:
        head = head.strip().lower().removeprefix("blake3:")
        if len(head) != 64 or any(c not in "0123456789abcdef" for c in head):
            raise Refused(
                f"--head {head!r}: not a head hash (64 hex digits, as `verify` and "
                f"`history --format json` print them)"
            )
    store = open_store(store_path, create=False, readonly=True)
    ok, message, _head_hex = read(store.history.verify, run_id, head)
    # The message says which facts were checked and which taken on trust, and ends with the head.
    return ok, message if ok else f"broken: {message}"


def redact(run_id: str, value_hash: str, *, store_path: str | None = None) -> str:
    n = read(open_store(store_path, create=False).history.redact, run_id, value_hash)
    return f"redacted {n} value slot(s) of run {run_id}; each is now <hole blake3:{value_hash.removeprefix('blake3:')}>"


def archive(run_id: str, *, delete: bool = False, store_path: str | None = None) -> str:
    store = open_store(store_path, create=False)
    done = read(lambda: store.history.archive(run_id, delete=delete))
    if done.latest is None:
        return (
            f"run {run_id} has no checkpoint; nothing archived (archive keeps Start and "
            f"everything from the latest checkpoint on)"
        )
    if done.checkpoint is None or done.checkpoint <= 2:
        why = (
            f"it carries {_replies_to(done.held)}, recorded before any earlier checkpoint"
            if done.held
            else "nothing lies between Start and it"
        )
        return (
            f"nothing to archive: run {run_id}'s latest checkpoint is fact {done.latest}, and {why}; "
            f"the facts before it stay"
        )
    if done.moved == 0:
        return (
            f"nothing new to archive: facts 2-{done.through} of run {run_id} are archived "
            f"{'and deleted ' if delete else ''}already; the latest checkpoint is fact {done.latest}"
        )
    what = (
        f"deleted facts 2-{done.through} of run {run_id} ({done.moved} fact(s) dropped); its chain now "
        f"resumes from the kept hash of fact {done.through}"
        if delete
        else f"archived {done.moved} fact(s) of run {run_id} (facts 2-{done.through}, kept in the archive table)"
    )
    if done.checkpoint == done.latest:
        return f"{what}: everything before its latest checkpoint (fact {done.latest})"
    return (
        f"{what}: up to its checkpoint at fact {done.checkpoint}, not its latest (fact {done.latest}), "
        f"which carries {_replies_to(done.held)}, recorded before it: facts {done.checkpoint}-"
        f"{done.latest - 1} stay for resume and replay"
    )


def _replies_to(held) -> str:
    calls = ", ".join(f"{call} (fact {n})" for call, n in held)
    return f"the repl{'y' if len(held) == 1 else 'ies'} to {calls}"


def list_runs(*, store_path: str | None = None) -> list[str]:
    return rh.list_runs(open_store(store_path, create=False, readonly=True))


def runs(
    *, store_path: str | None = None, state: str | None = None, program: str | None = None
) -> list[RunView]:
    """`flow2py runs`: the store's runs (flowrt.host.runs_view), filtered by state and program."""
    store = open_store(store_path, create=False, readonly=True)
    return read(lambda: runs_view(store, state=state, program=program))


# ---- nested runs -----------------------------------------------------------------------------


def flow_tool(
    path: str,
    *,
    entry: str = "main",
    store=None,
    bindings: rt.Bindings | None = None,
    checkpoint_every: int | None = None,
) -> Callable:
    """A Tool implementation that runs the Flow program at `path` as a nested run (see
    flowrt.host.nested.flow_tool); the inner run can then be inspected and replayed like any other."""
    loaded = compile_path(path)
    loaded.entry(entry)
    return runtime_flow_tool(
        loaded.program,
        entry=entry,
        store=store,
        bindings=bindings,
        reachable=loaded.reachable(entry),
        resolve=loaded.resolve,
        checkpoint_every=checkpoint_every,
        meta=loaded.meta(path),
    )
