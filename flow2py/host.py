"""The host layer: what the CLI (and a Python host that has only Flow sources) does around a run.

It is the one place that uses both the compiler and the runtime (DESIGN.md "Layering"): it checks
and compiles a program, binds Tools, keeps runs in the store, and drives them with the one driver
of flowrt. Resume, replay, history and fork compile the program from the sources the store holds,
never from disk, so a run always continues on the exact program it started with.

Every refusal is a `Refused` carrying the message and the CLI exit code; nothing recorded is
rewritten by a refusal.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import secrets
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import flowrt as rt
from flow2py.check import CheckResult, check_program
from flow2py.check.program import CheckedProgram
from flow2py.diagnostics import render_text
from flowrt import driver as drv
from flowrt.facts import Call, Checkpoint, Reply, Start
from flowrt.store import CallNotOpen, RunBusy, Store, StoreError, UnknownRun
from flowrt.trace import DATA_VERSION, TraceError

EXIT_OK, EXIT_REFUSED, EXIT_PAUSED, EXIT_FAULTED, EXIT_DIVERGED, EXIT_BROKEN = 0, 1, 3, 4, 5, 6
CRASH_REASON = "process ended while the call was out"


class Refused(Exception):
    """A host operation that cannot go ahead: a message that says what and where, and an exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_REFUSED):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Report:
    """What a run operation prints and its exit code."""

    text: str
    exit_code: int
    outcome: object = None
    run_id: Optional[str] = None


# ---- compiling ---------------------------------------------------------------------------------


def check(path: str, *, sources: Optional[dict[str, str]] = None,
          commits: Optional[dict[str, str]] = None) -> CheckResult:
    """Check a program from disk, or (`sources`) from the module sources a run stored."""
    if sources is None and not os.path.isfile(path):
        raise Refused(f"{path}: no such file")
    return check_program(path, sources=sources, commits=commits)


def _refuse_diagnostics(result: CheckResult) -> None:
    raise Refused(render_text(result.diagnostics, result.sources).rstrip("\n"))


class Loaded:
    """A checked program compiled to Python and loaded: its runtime descriptor and functions."""

    def __init__(self, checked: CheckedProgram):
        from flow2py.codegen import package_files

        self.checked = checked
        name = f"_flow_{checked.identity[:16]}"
        files = package_files(checked)
        pkg = sys.modules.get(name)
        if pkg is None or not hasattr(pkg, "PROGRAM"):
            pkg = rt.load_package(name, files)
        self.program: rt.Program = pkg.PROGRAM
        self.functions: dict[str, Callable] = {}
        for key in self.program.modules:
            mod = self.program.module(key)
            for value in vars(mod).values():
                meta = getattr(value, "__flow__", None)
                if meta is not None and getattr(meta, "decl", None):
                    self.functions.setdefault(meta.decl, value)

    def resolve(self, decl: str) -> Optional[Callable]:
        return self.functions.get(decl)

    def entry(self, name: str):
        try:
            return self.program.entry(name)
        except (KeyError, LookupError, AttributeError):
            raise Refused(f"{self.checked.entry_module}.flow has no entry function `{name}`") from None

    def reachable(self, entry: Optional[str] = None):
        """(tool_id, qualified name) of every Tool reachable from `entry` (default: the entry
        module's functions), as the runtime's binding check wants them."""
        from flow2py.check.reach import entry_roots, reachable_tools

        wanted = set(reachable_tools(self.checked, entry_roots(self.checked, entry)))
        return tuple(t for t in self.program.tools if t[0] in wanted)

    def tool_spec(self, tool_id: str):
        for key in self.program.modules:
            mod = self.program.module(key)
            for value in vars(mod).values():
                if isinstance(value, rt.ToolSpec) and value.tool_id == tool_id:
                    return value
        return None


def compile_path(path: str) -> Loaded:
    result = check(path)
    if result.diagnostics:
        _refuse_diagnostics(result)
    return Loaded(result.program)


def compile_stored(store: Store, run_id: str) -> Loaded:
    """Compile the exact program a run started with, from the sources its history stores."""
    sources = store.sources(run_id)
    if not sources:
        raise Refused(f"run {run_id}: the store holds no program sources for it")
    info = store.load_run(run_id)
    entry_key = (info.meta or {}).get("entry_module") or "main"
    result = check(f"{entry_key}.flow", sources=sources, commits=(info.meta or {}).get("commits"))
    if result.diagnostics:
        raise Refused(f"run {run_id}: its stored program no longer checks:\n"
                      + render_text(result.diagnostics, result.sources).rstrip("\n"))
    if result.program.identity != info.program:
        raise Refused(f"run {run_id}: the stored sources give program {result.program.identity[:12]}, "
                      f"but the run started on {info.program[:12]}; refusing to continue on another program")
    return Loaded(result.program)


def build(program: CheckedProgram, out_dir: str, package_name: Optional[str] = None) -> str:
    from flow2py.codegen import build_package

    return str(build_package(program, out_dir, package_name))


def checkpoint_sites(program: CheckedProgram) -> list[dict]:
    out = []
    for s in program.checkpoints:
        out.append({
            "file": s.span.file, "line": s.span.line, "column": s.span.column,
            "caller": s.caller, "callee": s.callee,
            "call": (s.callee or "a function value").split("::")[-1] + "(...)",
            "eligible": s.eligible, "reason": s.reason,
        })
    return out


def tool_signatures(program: CheckedProgram) -> list[str]:
    """`web.search(query: Text) -> Result<Text, Text>  [web::search]` for every reachable Tool."""
    from flow2py.check.types import type_text

    lines = []
    for decl, info in sorted(program.fn_decls.items()):
        if not info.is_tool or not _reachable(program, decl):
            continue
        alias = info.module.rsplit("/", 1)[-1]
        params = ", ".join(f"{n}: {type_text(t)}" for n, t in info.params)
        tps = f"<{', '.join(info.type_params)}>" if info.type_params else ""
        lines.append(f"{alias}.{info.name}{tps}({params}) -> {type_text(info.result)}  [{decl}]")
    return lines


def _reachable(program: CheckedProgram, decl: str) -> bool:
    from flow2py.check.reach import entry_roots, reachable_tools

    return decl in reachable_tools(program, entry_roots(program))


# ---- input, tools, store -------------------------------------------------------------------------


def _decode_input(input_json: Optional[str], params, what: str = "--input") -> tuple:
    if input_json is None:
        obj = {}
    else:
        try:
            obj = rt.loads_exact(input_json)
        except ValueError as e:
            raise Refused(f"{what}: not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise Refused(f"{what}: expected a JSON object keyed by parameter names, got {type(obj).__name__}")
    names = [n for n, _ in params]
    unknown = [k for k in obj if k not in names]
    if unknown:
        raise Refused(f"{what}: unknown parameter {unknown[0]!r}; the entry takes {', '.join(names) or 'nothing'}")
    args = []
    for name, desc in params:
        if name not in obj:
            raise Refused(f"{what}: missing parameter {name!r}")
        try:
            args.append(rt.decode(desc, obj[name], f"$.{name}"))
        except rt.DecodeError as e:
            raise Refused(f"{what}: {e}") from None
    return tuple(args)


def load_tools(specs: Iterable[str]) -> rt.Bindings:
    """Import each `--tools` file or module; their `@bind` registrations fill the bindings."""
    for spec in specs:
        try:
            if spec.endswith(".py") or os.path.sep in spec or os.path.isfile(spec):
                if not os.path.isfile(spec):
                    raise Refused(f"--tools {spec}: no such file")
                name = "_flow_tools_" + secrets.token_hex(4)
                mod_spec = importlib.util.spec_from_file_location(name, spec)
                module = importlib.util.module_from_spec(mod_spec)
                sys.modules[name] = module
                mod_spec.loader.exec_module(module)
            else:
                importlib.import_module(spec)
        except Refused:
            raise
        except Exception as e:  # the host's file: report it, never a traceback
            raise Refused(f"--tools {spec}: importing it failed: {type(e).__name__}: {e}") from None
    return rt.BINDINGS


def _store(store_path: Optional[str]) -> Store:
    try:
        return Store(store_path)
    except (StoreError, TraceError, OSError) as e:
        raise Refused(f"store {store_path or '.flow/runs.db'}: {e}") from None
    except Exception as e:  # sqlite3.DatabaseError: not a database, locked, ...
        raise Refused(f"store {store_path or '.flow/runs.db'}: {type(e).__name__}: {e}") from None


def _run_info(store: Store, run_id: str):
    try:
        return store.load_run(run_id)
    except UnknownRun:
        raise Refused(f"unknown run {run_id!r} in store {store.path}") from None
    except (StoreError, TraceError) as e:
        raise Refused(f"run {run_id}: {e}") from None


def _recorder(store: Store, run_id: str):
    try:
        return rt.SqliteRecorder(store, run_id)
    except RunBusy as e:
        raise Refused(f"run {run_id}: {e}") from None


def _report(outcome, run_id: str) -> Report:
    if isinstance(outcome, drv.RunCompleted):
        return Report(rt.show(outcome.value), EXIT_OK, outcome, run_id)
    if isinstance(outcome, drv.RunPaused):
        lines = [f"paused: run {run_id} waits on {len(outcome.open)} open call(s)"]
        lines += [f"  {c.id}  {c.tool}" for c in outcome.open]
        return Report("\n".join(lines), EXIT_PAUSED, outcome, run_id)
    if isinstance(outcome, drv.RunFaulted):
        return Report(outcome.line(), EXIT_FAULTED, outcome, run_id)
    return Report(outcome.line(), outcome.exit_code, outcome, run_id)


def _drive_live(store: Store, run_id: str, loaded: Loaded, entry_fn, history, first: int,
                bindings, checkpoint_every: Optional[int]) -> Report:
    rec = _recorder(store, run_id)
    try:
        outcome = drv.drive(entry_fn, history=history, first=first, mode="live", recorder=rec,
                            bindings=bindings, reachable=loaded.reachable(),
                            checkpoint_every=checkpoint_every, resolve=loaded.resolve)
    except drv.ResumeRefused as e:
        raise Refused(f"run {run_id}: the stored history does not fit the program: {e.verdict.line()}") from None
    except rt.MissingBindings as e:
        raise Refused(f"run {run_id}: {e}") from None
    finally:
        rec.close()
    for tool_id, impl in _bound(bindings, loaded):
        store.record_binding(run_id, tool_id, impl)
    return _report(outcome, run_id)


def _bound(bindings, loaded: Loaded):
    for tool_id, _name in loaded.reachable():
        spec = loaded.tool_spec(tool_id)
        impl = bindings.lookup(spec) if spec is not None else None
        if impl is not None:
            yield tool_id, f"{getattr(impl, '__module__', '?')}.{getattr(impl, '__qualname__', repr(impl))}"


# ---- run operations ------------------------------------------------------------------------------


def start(path: str, *, entry: str = "main", input_json: Optional[str] = None, tools=(),
          store_path: Optional[str] = None, run_id: Optional[str] = None,
          checkpoint_every: Optional[int] = None) -> Report:
    """`flow2py run`: check, bind, record Start, drive live."""
    loaded = compile_path(path)
    fn, params = loaded.entry(entry)
    args = _decode_input(input_json, params)
    bindings = load_tools(tools)
    missing = bindings.missing(loaded.reachable(entry))
    if missing:
        raise Refused("no implementation bound for " + ", ".join(missing)
                      + " (bind each with @flowrt.bind in a --tools file); the run was not started")
    store = _store(store_path)
    run_id = run_id or "run-" + secrets.token_hex(6)
    start_fact = Start(loaded.program.identity, loaded.program.std, DATA_VERSION, entry, args,
                       tuple(n for n, _ in params))
    try:
        store.create_run(run_id, start_fact, loaded.program.sources,
                         {"entry_module": loaded.checked.entry_module, "path": os.path.abspath(path),
                          "commits": loaded.checked.commits})
    except StoreError as e:
        raise Refused(f"run {run_id}: {e}") from None
    return _drive_live(store, run_id, loaded, fn, [start_fact], 1, bindings, checkpoint_every)


def _history_from(store: Store, run_id: str, info) -> tuple[list, int]:
    first = info.latest_checkpoint or 1
    facts = store.facts(run_id, from_n=first)
    if first != 1 and not isinstance(facts[0], Checkpoint):
        first = 1
        facts = store.facts(run_id)
    return facts, first


def _entry_of(loaded: Loaded, store: Store, run_id: str):
    start_fact = store.facts(run_id, from_n=1)[0] if True else None
    fn, _ = loaded.entry(start_fact.entry) if start_fact.parent is None else (None, None)
    if fn is None:
        fn = loaded.resolve(f"{loaded.checked.entry_module}::{start_fact.entry}") or _fork_entry(loaded, start_fact)
    return fn


def _fork_entry(loaded: Loaded, start_fact: Start):
    for decl, f in loaded.functions.items():
        if decl.split("::")[-1] == start_fact.entry:
            return f
    raise Refused(f"the program has no function `{start_fact.entry}`")


def resume(run_id: str, *, replies=(), resend=(), tools=(), store_path: Optional[str] = None,
           checkpoint_every: Optional[int] = None) -> Report:
    """`flow2py resume`: record delivered replies, close calls a crash left out, continue live."""
    store = _store(store_path)
    info = _run_info(store, run_id)
    if info.state in ("completed", "faulted"):
        raise Refused(f"run {run_id} has ended ({info.state}); nothing to resume")
    if info.state == "running":
        raise Refused(f"run {run_id} is running in another process ({info.owner}); refusing a second resume")
    loaded = compile_stored(store, run_id)
    open_calls = dict(store.open_calls(run_id))
    delivered = {}
    for item in replies:
        call_id, sep, text = item.partition("=")
        if not sep:
            raise Refused(f"--reply {item!r}: expected CALL_ID=JSON")
        if call_id not in open_calls:
            raise Refused(f"--reply {call_id}: no open call with that id in run {run_id}"
                          + (f" (open: {', '.join(open_calls)})" if open_calls else " (no call is open)"))
        spec = loaded.tool_spec(open_calls[call_id])
        try:
            raw = rt.loads_exact(text)
        except ValueError as e:
            raise Refused(f"--reply {call_id}: not valid JSON: {e}") from None
        reply = rt.admit(spec, raw)
        if isinstance(reply, rt.Err) and isinstance(reply._0, rt.Malformed):
            raise Refused(f"--reply {call_id}: the reply does not fit {spec.name}'s result: {reply._0._0}")
        delivered[call_id] = reply
    for call_id in resend:
        if call_id not in open_calls:
            raise Refused(f"--resend {call_id}: no open call with that id in run {run_id}")
    bindings = load_tools(tools)
    parked = set(getattr(info, "meta", {}).get("parked", ()) if info.meta else ())
    try:
        for call_id, reply in delivered.items():
            store.record_reply(run_id, call_id, reply)
        if info.state == "halted":
            # The process died while these calls were out: the host decides, by default Unknown.
            for call_id in open_calls:
                if call_id in delivered or call_id in resend or call_id in parked:
                    continue
                store.record_reply(run_id, call_id, rt.Err(rt.Unknown(CRASH_REASON)))
    except CallNotOpen as e:
        raise Refused(f"run {run_id}: {e}") from None
    except RunBusy as e:
        raise Refused(f"run {run_id}: {e}") from None
    info = store.load_run(run_id)
    history, first = _history_from(store, run_id, info)
    fn = _entry_of(loaded, store, run_id)
    if resend:
        bindings = _Resend(bindings, set(resend))
    return _drive_live(store, run_id, loaded, fn, history, first, bindings, checkpoint_every)


class _Resend:
    """Bindings plus the host's request to send some open calls again under their own ids."""

    def __init__(self, bindings, ids):
        self._b, self.resend = bindings, ids

    def __getattr__(self, name):
        return getattr(self._b, name)


def replay(run_id: str, *, store_path: Optional[str] = None) -> Report:
    """`flow2py replay`: re-run over the stored history with nothing bound; one verdict line."""
    store = _store(store_path)
    info = _run_info(store, run_id)
    loaded = compile_stored(store, run_id)
    archived = bool(info.archived_through)
    if archived:
        history, first = _history_from(store, run_id, info)
    else:
        history, first = store.facts(run_id), 1
    fn = _entry_of(loaded, store, run_id)
    outcome = drv.drive(fn, history=history, first=first, begin=first, mode="replay",
                        resolve=loaded.resolve)
    return Report(outcome.line(), outcome.exit_code, outcome, run_id)


def history(run_id: str, *, store_path: Optional[str] = None, fmt: str = "text") -> str:
    store = _store(store_path)
    _run_info(store, run_id)
    compile_stored(store, run_id)  # the program's classes decode the stored values
    records = store.records(run_id)
    if fmt == "json":
        return rt.to_jsonl(records)
    if fmt == "html":
        return rt.to_html(records, title=f"Flow run {run_id}")
    return rt.to_text(records) + ("" if rt.to_text(records).endswith("\n") else "\n")


def fork(run_id: str, checkpoint: int, *, program_path: Optional[str] = None,
         input_json: Optional[str] = None, tools=(), store_path: Optional[str] = None,
         new_run_id: Optional[str] = None, checkpoint_every: Optional[int] = None) -> Report:
    """`flow2py fork`: a new run from checkpoint N of another; the parent stays as it is."""
    store = _store(store_path)
    _run_info(store, run_id)
    parent_loaded = compile_stored(store, run_id)
    try:
        cp_record = store.checkpoint(run_id, checkpoint)
    except (StoreError, LookupError, KeyError) as e:
        raise Refused(f"run {run_id}: no checkpoint {checkpoint} ({e})") from None
    cp: Checkpoint = cp_record.fact
    loaded = compile_path(program_path) if program_path else parent_loaded
    fn = loaded.resolve(cp.function)
    if fn is None:
        raise Refused(f"the fork's program has no top-level function {cp.function} to continue checkpoint {checkpoint}")
    params = [(n, d) for n, d in _params_of(loaded, cp.function)]
    if input_json is not None:
        args = _decode_input(input_json, params)
    else:
        if len(params) != len(cp.args):
            raise Refused(f"checkpoint {checkpoint} holds {len(cp.args)} arguments but {cp.function} takes {len(params)}")
        args = []
        for (name, desc), value in zip(params, cp.args):
            if isinstance(value, rt.ParkedTask):
                raise Refused(f"checkpoint {checkpoint}: argument {name} holds a parked task; forking one is not supported yet")
            try:
                args.append(rt.decode(desc, rt.to_json(value), f"$.{name}"))
            except rt.DecodeError as e:
                raise Refused(f"checkpoint {checkpoint} does not fit the fork's parameters: {e}") from None
        args = tuple(args)
    bindings = load_tools(tools)
    missing = bindings.missing(loaded.reachable())
    if missing:
        raise Refused("no implementation bound for " + ", ".join(missing) + "; the fork was not started")
    new_run_id = new_run_id or "run-" + secrets.token_hex(6)
    start_fact = Start(loaded.program.identity, loaded.program.std, DATA_VERSION, cp.function.split("::")[-1],
                       tuple(args), tuple(n for n, _ in params), parent=run_id, from_checkpoint=checkpoint)
    try:
        store.create_run(new_run_id, start_fact, loaded.program.sources,
                         {"entry_module": loaded.checked.entry_module, "parent": run_id,
                          "commits": loaded.checked.commits})
    except StoreError as e:
        raise Refused(f"run {new_run_id}: {e}") from None
    return _drive_live(store, new_run_id, loaded, fn, [start_fact], 1, bindings, checkpoint_every)


def _params_of(loaded: Loaded, decl: str):
    fn = loaded.resolve(decl)
    descs = getattr(getattr(fn, "__flow__", None), "param_types", None)
    info = loaded.checked.fn_decls[decl]
    if descs is None:
        from flow2py.codegen import descriptor_of

        descs = tuple(descriptor_of(loaded.program, t) for _, t in info.params)
    return list(zip([n for n, _ in info.params], descs))


def verify(run_id: str, *, head: Optional[str] = None, store_path: Optional[str] = None) -> tuple[bool, str]:
    store = _store(store_path)
    _run_info(store, run_id)
    ok, message, head_hex = store.verify(run_id, head)
    return ok, (f"intact: head {head_hex}" if ok else f"broken: {message}")


def redact(run_id: str, value_hash: str, *, store_path: Optional[str] = None) -> str:
    store = _store(store_path)
    _run_info(store, run_id)
    try:
        n = store.redact(run_id, value_hash)
    except (StoreError, ValueError) as e:
        raise Refused(f"run {run_id}: {e}") from None
    if n == 0:
        raise Refused(f"run {run_id}: no stored value has hash {value_hash}")
    return f"redacted {n} value slot(s) of run {run_id}; each is now <hole blake3:{value_hash}>"


def archive(run_id: str, *, store_path: Optional[str] = None) -> str:
    store = _store(store_path)
    _run_info(store, run_id)
    n = store.archive(run_id)
    return f"archived {n} fact(s) of run {run_id} before its latest checkpoint"


def list_runs(*, store_path: Optional[str] = None) -> list[str]:
    store = _store(store_path)
    lines = []
    for r in store.runs():
        extra = ""
        if r.state == "paused" and r.open_calls:
            extra = " on " + ", ".join(c if isinstance(c, str) else c[0] for c in r.open_calls)
        parent = f" fork of {r.parent}@{r.from_checkpoint}" if r.parent else ""
        lines.append(f"{r.id}  {r.state}{extra}  {r.entry}  {r.facts} facts{parent}")
    return lines


def run_tests(paths, echo=print) -> bool:
    """`flow2py test`: run every @test of each program with its @fake bindings."""
    from flow2py.testing import run_file

    ok, total, failed = True, 0, 0
    for path in paths:
        if not os.path.isfile(path):
            raise Refused(f"{path}: no such file")
        results, diagnostics = run_file(path)
        if results is None:
            echo(diagnostics.rstrip("\n"))
            ok = False
            continue
        for r in results:
            total += 1
            if r.passed:
                echo(f"ok    {r.name}")
            else:
                failed += 1
                ok = False
                echo(f"FAIL  {r.name}  ({r.file}:{r.line}): {r.message}")
    echo(f"{total - failed} passed, {failed} failed")
    return ok
