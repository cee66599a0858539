"""The host layer: what the CLI (and a Python host that has only Flow sources) does around a run.

It is the one place that uses both the compiler and the runtime (DESIGN.md "Layering"): it checks
and compiles a program, binds Tools, keeps runs in the store, and drives them with the one driver
of flowrt. Resume, replay, history and fork compile the program from the sources the store holds,
never from disk, so a run always continues on the exact program it started with.

Every refusal is a `Refused` carrying a one-line message and the CLI exit code; a refusal records
nothing, and nothing recorded is ever rewritten. docs/spec/execution.md ("Host operations") is the
description of what each operation does.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import secrets
import sqlite3
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import flowrt as rt
from flow2py.check import CheckResult, check_program
from flow2py.check.program import CheckedProgram
from flow2py.diagnostics import render_text
from flowrt import driver as drv
from flowrt.facts import Call, Checkpoint, ParkedTask, Reply, Start
from flowrt.store import RunBusy, Store, StoreError, UnknownRun, carried_replies
from flowrt.tasks import has_hole, rebuild
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


class Loaded:
    """A checked program compiled to Python and loaded: its runtime descriptor and functions.

    The generated package is named by the program's identity, so a program loaded once in this
    process (the same identity) is not generated again.
    """

    def __init__(self, checked: CheckedProgram):
        self.checked = checked
        self.program: rt.Program = _load_package(checked)
        self.classes: rt.ClassTable = self.program.classes  # decodes its runs' values by name
        self.functions: dict[str, Callable] = {}
        for key in self.program.modules:
            for value in vars(self.program.module(key)).values():
                meta = getattr(value, "__flow__", None)
                if meta is not None and getattr(meta, "decl", None):
                    self.functions.setdefault(meta.decl, value)

    def resolve(self, decl: str) -> Optional[Callable]:
        return self.functions.get(decl)

    def entry(self, name: str):
        """(function, ((param, descriptor), ...)) of the entry function `name`."""
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

    def tool_spec(self, tool_id: str) -> Optional[rt.ToolSpec]:
        for key in self.program.modules:
            for value in vars(self.program.module(key)).values():
                if isinstance(value, rt.ToolSpec) and value.tool_id == tool_id:
                    return value
        return None

    def meta(self, path: Optional[str] = None, **extra) -> dict:
        """The host's JSON kept with a run: what compiling its stored sources needs."""
        out = {"entry_module": self.checked.entry_module, "commits": self.checked.commits}
        if path:
            out["path"] = os.path.abspath(path)
        out.update(extra)
        return out


def _load_package(checked: CheckedProgram) -> rt.Program:
    name = f"_flow_{checked.identity[:16]}"
    pkg = sys.modules.get(name)
    if pkg is None or not hasattr(pkg, "PROGRAM"):
        from flow2py.codegen import package_files

        pkg = rt.load_package(name, package_files(checked))
    return pkg.PROGRAM


def compile_path(path: str) -> Loaded:
    result = check(path)
    if result.diagnostics:
        raise Refused(render_text(result.diagnostics, result.sources).rstrip("\n"))
    return Loaded(result.program)


def compile_stored(store: Store, run_id: str) -> Loaded:
    """Compile the exact program a run started with, from the sources its history stores."""
    info = _run_info(store, run_id)
    sources = _read(store.sources, run_id)
    if not sources:
        raise Refused(f"run {run_id}: the store holds no program sources for it")
    meta = info.meta or {}
    result = check(f"{meta.get('entry_module') or 'main'}.flow", sources=sources, commits=meta.get("commits"))
    if result.diagnostics:
        first = render_text(result.diagnostics, result.sources).splitlines()[0]
        raise Refused(f"run {run_id}: its stored program no longer checks: {first}")
    if result.program.identity != info.program:
        raise Refused(f"run {run_id}: the stored sources give program {result.program.identity[:12]}, "
                      f"but the run started on {info.program[:12]}; refusing to continue on another program")
    return Loaded(result.program)


def build(program: CheckedProgram, out_dir: str, package_name: Optional[str] = None) -> str:
    from flow2py.codegen import build_package

    return str(build_package(program, out_dir, package_name))


def checkpoint_sites(program: CheckedProgram) -> list[dict]:
    return [{
        "file": s.span.file, "line": s.span.line, "column": s.span.column,
        "caller": s.caller, "callee": s.callee,
        "call": (s.callee or "a function value").split("::")[-1] + "(...)",
        "eligible": s.eligible, "reason": s.reason,
    } for s in program.checkpoints]


def tool_signatures(program: CheckedProgram) -> list[str]:
    """`web.search(query: Text) -> Result<Text, Text>  [web::search]` for every reachable Tool."""
    from flow2py.check.reach import entry_roots, reachable_tools
    from flow2py.check.types import type_text

    reachable = set(reachable_tools(program, entry_roots(program)))
    lines = []
    for decl, info in sorted(program.fn_decls.items()):
        if not info.is_tool or decl not in reachable:
            continue
        alias = info.module.rsplit("/", 1)[-1]
        params = ", ".join(f"{n}: {type_text(t)}" for n, t in info.params)
        tps = f"<{', '.join(info.type_params)}>" if info.type_params else ""
        lines.append(f"{alias}.{info.name}{tps}({params}) -> {type_text(info.result)}  [{decl}]")
    return lines


# ---- input, tools, store -------------------------------------------------------------------------


def _json(text: str, what: str):
    try:
        return rt.loads_exact(text)
    except ValueError as e:
        raise Refused(f"{what}: not valid JSON: {e}") from None


def decode_input(input_json: Optional[str], params, what: str = "--input") -> tuple:
    """Decode `--input` (a JSON object keyed by parameter names) against the parameter types."""
    obj = {} if input_json is None else _json(input_json, what)
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
            _import_tools(spec)
        except Refused:
            raise
        except BaseException as e:  # the host's file: report it, never a traceback
            raise Refused(f"--tools {spec}: importing it failed: {type(e).__name__}: {e}") from None
    return rt.BINDINGS


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


def _bindings_for(loaded: Loaded, tools, entry: Optional[str], what: str) -> rt.Bindings:
    """Load `--tools` and refuse (before anything is recorded) if a reachable Tool is unbound."""
    bindings = load_tools(tools)
    missing = bindings.missing(loaded.reachable(entry))
    if missing:
        raise Refused("no implementation bound for " + ", ".join(missing)
                      + f" (bind each with @flowrt.bind in a --tools file); {what}")
    return bindings


def open_store(store_path: Optional[str]) -> Store:
    """Open the store, or refuse with what is wrong with it (not SQLite, another data version)."""
    where = f"store {store_path or '.flow/runs.db'}"
    try:
        return Store(store_path)
    except sqlite3.DatabaseError as e:
        raise Refused(f"{where}: not a Flow store (SQLite says: {e})") from None
    except (StoreError, TraceError, OSError, sqlite3.Error) as e:
        raise Refused(f"{where}: {e}") from None


def _read(op, *args):
    """A store read, its refusals turned into `Refused` (unknown run, unreadable history)."""
    try:
        return op(*args)
    except UnknownRun as e:
        raise Refused(str(e)) from None
    except (StoreError, TraceError, sqlite3.Error) as e:
        raise Refused(str(e)) from None


def _run_info(store: Store, run_id: str):
    return _read(store.load_run, run_id)


def _recorder(store: Store, run_id: str) -> rt.SqliteRecorder:
    """Take the run's lease: one process runs a run at a time."""
    try:
        return rt.SqliteRecorder(store, run_id)
    except RunBusy as e:
        raise Refused(f"{e}; refusing a second resume") from None
    except StoreError as e:
        raise Refused(str(e)) from None


# ---- driving -------------------------------------------------------------------------------------


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


def _drive_live(store: Store, rec: rt.SqliteRecorder, loaded: Loaded, fn, history, first: int,
                bindings, checkpoint_every: Optional[int], resend=()) -> Report:
    """Drive a run live under the lease `rec` holds, release it, and report."""
    run_id = rec.run_id
    try:
        outcome = drv.drive(fn, history=history, first=first, mode="live", recorder=rec,
                            bindings=bindings, checkpoint_every=checkpoint_every,
                            resolve=loaded.resolve, classes=loaded.classes, resend=resend,
                            carried_replies=_carried_replies(store, run_id, history, first, loaded.classes))
    except drv.ResumeRefused as e:
        raise Refused(f"run {run_id}: the stored history does not fit the program: {e.verdict.line()}") from None
    except drv.ResendRefused as e:
        raise Refused(f"--resend: {e}") from None
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


def _new_run(store: Store, run_id: Optional[str], start_fact: Start, loaded: Loaded, meta: dict):
    """Record a new run's Start and take its lease: (run id, recorder)."""
    run_id = run_id or "run-" + secrets.token_hex(6)
    try:
        store.create_run(run_id, start_fact, loaded.program.sources, meta)
    except StoreError as e:
        raise Refused(str(e)) from None
    return run_id, _recorder(store, run_id)


# ---- run operations ------------------------------------------------------------------------------


def start(path: str, *, entry: str = "main", input_json: Optional[str] = None, tools=(),
          store_path: Optional[str] = None, run_id: Optional[str] = None,
          checkpoint_every: Optional[int] = None) -> Report:
    """`flow2py run`: check, bind, record Start, drive live."""
    loaded = compile_path(path)
    fn, params = loaded.entry(entry)
    args = decode_input(input_json, params)
    bindings = _bindings_for(loaded, tools, entry, "the run was not started")
    store = open_store(store_path)
    start_fact = Start(loaded.program.identity, loaded.program.std, DATA_VERSION, entry, args,
                       tuple(n for n, _ in params))
    run_id, rec = _new_run(store, run_id, start_fact, loaded, loaded.meta(path))
    return _drive_live(store, rec, loaded, fn, [start_fact], 1, bindings, checkpoint_every)


def _history_from(store: Store, run_id: str, info, classes: rt.ClassTable,
                  whole: bool = True) -> tuple[list, int]:
    """The facts resume and replay serve: from the latest checkpoint on (else all), and the
    number of the first. Facts before the latest checkpoint are never read (they may be archived).
    Each fact is checked against the hash chain as it is read (from the kept hash of the fact
    before); a break refuses the command (exit 1) naming the fact. `whole`: the facts must also
    reach the run's stored head (resume appends there); replay takes a history cut short at its
    end as it is (its verdict is then Incomplete)."""
    first = info.latest_checkpoint or 1
    return _read(lambda: store.facts(run_id, first, verify=True, whole=whole, classes=classes)), first


def _carried_replies(store: Store, run_id: str, history: list, first: int, classes: rt.ClassTable) -> dict:
    """The replies, recorded before the checkpoint `history` begins at, to calls its parked tasks
    carry (a task finished from its parked call counts as parked: seed 000, "Checkpoints");
    they may be archived, so they are read from the store rather than from `history`."""
    if not history or type(history[0]) is not Checkpoint:
        return {}
    calls: list = []
    rebuild(tuple(history[0].args), lambda p: calls.append(p.call) or p, (ParkedTask,))
    if not calls:
        return {}
    later = {f.id for f in history if type(f) is Reply}
    still_open = {c for c, _ in store.open_calls(run_id)}
    wanted = [c for c in calls if c not in later and c not in still_open]
    return carried_replies(store, run_id, wanted, first, classes=classes) if wanted else {}


def _entry_of(loaded: Loaded, info) -> Callable:
    """The function a run's Start applies to its input: the entry, or a fork's checkpoint function."""
    decl = (info.meta or {}).get("entry_decl")
    if decl:
        fn = loaded.resolve(decl)
        if fn is None:
            raise Refused(f"run {info.id}: its program has no function {decl}")
        return fn
    return loaded.entry(info.entry)[0]


def _parse_replies(replies, open_calls: dict, loaded: Loaded, run_id: str) -> dict:
    """`--reply CALL_ID=JSON` items, each admitted against its Tool's result type."""
    delivered = {}
    for item in replies:
        call_id, sep, text = item.partition("=")
        if not sep:
            raise Refused(f"--reply {item!r}: expected CALL_ID=JSON")
        if call_id not in open_calls:
            listing = ", ".join(open_calls) or "none"
            raise Refused(f"--reply {call_id}: run {run_id} has no open call {call_id} (open calls: {listing})")
        spec = loaded.tool_spec(open_calls[call_id])
        reply = rt.admit(spec, _json(text, f"--reply {call_id}"))
        if isinstance(reply, rt.Err) and isinstance(reply._0, rt.Malformed):
            raise Refused(f"--reply {call_id}: the reply does not fit {spec.name}'s result: {reply._0._0}")
        delivered[call_id] = reply
    return delivered


def _check_resend(resend, open_calls: dict, history: list, run_id: str) -> None:
    served = {f.id for f in history if type(f) is Call}
    for call_id in resend:
        if call_id not in open_calls:
            raise Refused(f"--resend {call_id}: run {run_id} has no open call {call_id}")
        if call_id not in served:
            raise Refused(f"--resend {call_id}: the call was made before the run's latest checkpoint; "
                          f"only a call made after it can be sent again")


def crash_closes(open_calls: Iterable[str], parked: set, delivered, resend) -> list[str]:
    """Open calls a crash cut: not left open on purpose (`pending`), not answered, not resent."""
    return [c for c in open_calls if c not in parked and c not in delivered and c not in resend]


def resume(run_id: str, *, replies=(), resend=(), tools=(), store_path: Optional[str] = None,
           checkpoint_every: Optional[int] = None) -> Report:
    """`flow2py resume`: take the run's lease, record delivered replies and close the calls a
    crash cut (Unknown, unless `resend`), then continue live from the latest checkpoint."""
    store = open_store(store_path)
    info = _run_info(store, run_id)
    if info.state in ("completed", "faulted"):
        raise Refused(f"run {run_id} has ended ({info.state}); nothing to resume (fork it to continue)")
    if info.state == "running":
        raise Refused(f"run {run_id} is {run_state(info)} in another process; refusing a second resume")
    loaded = compile_stored(store, run_id)
    open_calls = dict(info.open_calls)
    delivered = _parse_replies(replies, open_calls, loaded, run_id)
    _check_resend(resend, open_calls, _history_from(store, run_id, info, loaded.classes)[0], run_id)
    bindings = _bindings_for(loaded, tools, None, "the run was not resumed")
    rec = _recorder(store, run_id)
    try:
        if rec.n != info.facts:
            raise Refused(f"run {run_id} changed while this resume was preparing (another process "
                          f"resumed it); nothing was recorded")
        unknown = rt.Err(rt.Unknown(CRASH_REASON))
        closes = crash_closes(open_calls, store.parked(run_id), delivered, set(resend))
        for call_id, reply in [*delivered.items(), *((c, unknown) for c in closes)]:
            rec.record(Reply(call_id, reply))
        rec.sync(durable=True)
        history, first = _history_from(store, run_id, store.load_run(run_id), loaded.classes)
    except BaseException:
        rec.close()
        raise
    return _drive_live(store, rec, loaded, _entry_of(loaded, info), history, first, bindings,
                       checkpoint_every, resend)


def replay(run_id: str, *, store_path: Optional[str] = None) -> Report:
    """`flow2py replay`: re-run over the stored history with nothing bound; one verdict line.
    It starts at the latest checkpoint (Start if none), like resume."""
    store = open_store(store_path)
    info = _run_info(store, run_id)
    loaded = compile_stored(store, run_id)
    history, first = _history_from(store, run_id, info, loaded.classes, whole=False)
    if not history:
        return Report("Incomplete: the history holds no facts from its latest checkpoint on", EXIT_PAUSED)
    fn = _entry_of(loaded, info) if first == 1 else None
    outcome = drv.drive(fn, history=history, first=first, begin=first, mode="replay", resolve=loaded.resolve,
                        classes=loaded.classes,
                        carried_replies=_carried_replies(store, run_id, history, first, loaded.classes))
    return Report(outcome.line(), outcome.exit_code, outcome, run_id)


def history(run_id: str, *, store_path: Optional[str] = None, fmt: str = "text") -> str:
    store = open_store(store_path)
    loaded = compile_stored(store, run_id)  # the program's classes decode the stored values
    ok, why, _ = _read(store.verify, run_id)
    if not ok:
        raise Refused(f"run {run_id!r} fails its hash chain: {why}; refusing to show it as its history "
                      f"(`flow2py verify {run_id}` reports the same)")
    records = _read(lambda: store.records(run_id, classes=loaded.classes))
    if fmt == "json":
        return rt.to_jsonl(records)
    if fmt == "html":
        return rt.to_html(records, title=f"Flow run {run_id}")
    text = rt.to_text(records)
    return text if text.endswith("\n") else text + "\n"


def fork(run_id: str, checkpoint: int, *, program_path: Optional[str] = None,
         input_json: Optional[str] = None, tools=(), store_path: Optional[str] = None,
         new_run_id: Optional[str] = None, checkpoint_every: Optional[int] = None) -> Report:
    """`flow2py fork`: a new run from checkpoint N of another; the parent stays as it is."""
    store = open_store(store_path)
    parent = compile_stored(store, run_id)
    try:
        cp: Checkpoint = store.checkpoint(run_id, checkpoint, classes=parent.classes).fact
    except (StoreError, TraceError) as e:
        raise Refused(str(e)) from None
    loaded = compile_path(program_path) if program_path else parent
    fn = loaded.resolve(cp.function)
    if fn is None:
        raise Refused(f"the fork's program has no top-level function {cp.function} to continue checkpoint {checkpoint}")
    params = _params_of(loaded, cp.function)
    if input_json is not None:
        args = decode_input(input_json, params)
    else:
        args = _checkpoint_args(cp, params)
    bindings = _bindings_for(loaded, tools, None, "the fork was not started")
    start_fact = Start(loaded.program.identity, loaded.program.std, DATA_VERSION, cp.function.split("::")[-1],
                       args, tuple(n for n, _ in params), parent=run_id, from_checkpoint=checkpoint)
    meta = loaded.meta(program_path, parent=run_id, entry_decl=cp.function)
    new_run_id, rec = _new_run(store, new_run_id, start_fact, loaded, meta)
    return _drive_live(store, rec, loaded, fn, [start_fact], 1, bindings, checkpoint_every)


def _checkpoint_args(cp: Checkpoint, params) -> tuple:
    """The checkpoint's arguments, rebuilt and checked against the fork's parameter types."""
    n = cp.checkpoint
    if len(params) != len(cp.args):
        raise Refused(f"checkpoint {n} holds {len(cp.args)} arguments but {cp.function} takes {len(params)}")
    args = []
    for (name, desc), value in zip(params, cp.args):
        if has_hole(value):
            raise Refused(f"checkpoint {n}: argument {name} holds a hole; give the fork --input instead")
        if isinstance(value, rt.ParkedTask) or _holds_parked(value):
            raise Refused(f"checkpoint {n}: argument {name} holds a parked task; forking one is not supported")
        try:
            args.append(rt.decode(desc, rt.to_json(value), f"$.{name}"))
        except (rt.DecodeError, TypeError) as e:
            raise Refused(f"checkpoint {n} does not fit the fork's parameters: {e}") from None
    return tuple(args)


def _holds_parked(value) -> bool:
    try:
        rt.to_json(value)
        return False
    except TypeError:
        return True


def _params_of(loaded: Loaded, decl: str):
    """((name, descriptor), ...) of a checkpoint's function: every non-generic function of the
    entry module is among the program's entries."""
    for fn, params in loaded.program.entries.values():
        if getattr(getattr(fn, "__flow__", None), "decl", None) == decl:
            return list(params)
    raise Refused(f"cannot fork at {decl}: the fork's program gives no parameter types for it "
                  f"(only functions of its entry module, not generic, can be forked at)")


def verify(run_id: str, *, head: Optional[str] = None, store_path: Optional[str] = None) -> tuple[bool, str]:
    store = open_store(store_path)
    ok, message, head_hex = _read(store.verify, run_id, head)
    if not ok:
        return False, f"broken: {message}"
    return True, message if head is not None else f"intact: head {head_hex}"


def redact(run_id: str, value_hash: str, *, store_path: Optional[str] = None) -> str:
    store = open_store(store_path)
    n = _read(store.redact, run_id, value_hash)
    return f"redacted {n} value slot(s) of run {run_id}; each is now <hole blake3:{value_hash.removeprefix('blake3:')}>"


def archive(run_id: str, *, store_path: Optional[str] = None) -> str:
    store = open_store(store_path)
    n = _read(store.archive, run_id)
    return f"archived {n} fact(s) of run {run_id} before its latest checkpoint"


def run_state(info) -> str:
    """`paused on c1:root#2`, `halted with root#1 out`, `running (process 123 on host)`, ..."""
    calls = ", ".join(c for c, _ in info.open_calls)
    if info.state == "paused" and calls:
        return f"paused on {calls}"
    if info.state == "halted" and calls:
        return f"halted with {calls} open (the process ended)"
    if info.state == "running" and info.owner:
        host_name, _, rest = info.owner.partition(":")
        return f"running (process {rest.partition(':')[0]} on {host_name})"
    return info.state


def list_runs(*, store_path: Optional[str] = None) -> list[str]:
    store = open_store(store_path)
    lines = []
    for r in _read(store.runs):
        extra = f"  fork of {r.parent} at checkpoint {r.from_checkpoint}" if r.parent else ""
        outer = store.outer_of(r.id)
        if outer:
            extra += f"  nested in {outer[0]} at {outer[1]}"
        lines.append(f"{r.id}  {run_state(r)}  {r.entry}  {r.facts} facts{extra}")
    return lines


# ---- nested runs ---------------------------------------------------------------------------------


def flow_tool(path: str, *, entry: str = "main", store=None, bindings: Optional[rt.Bindings] = None,
              checkpoint_every: Optional[int] = None) -> Callable:
    """A Tool implementation that runs the Flow program at `path` as a nested run (see
    flowrt.nested.flow_tool); the inner run can then be inspected and replayed like any other."""
    from flowrt.nested import flow_tool as runtime_flow_tool

    loaded = compile_path(path)
    loaded.entry(entry)
    return runtime_flow_tool(loaded.program, entry=entry, store=store, bindings=bindings,
                             reachable=loaded.reachable(entry), resolve=loaded.resolve,
                             checkpoint_every=checkpoint_every, meta=loaded.meta(path))


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
