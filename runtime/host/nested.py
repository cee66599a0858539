"""Nested runs: a Flow program served as a Tool implementation (seed 000, "Nested runs").

    impl = flow_tool(PROGRAM, entry="main")          # PROGRAM: a loaded rt.Program
    rt.bind("summary.make", impl)

Each call starts an inner run with its own history, in the outer run's store (or `store`), under
the id `<outer run>/<call id>`, drives it live and answers the outer call:

* the inner run completed with v   -> `{"Ok": v}` (JSON form, admitted against the outer Tool's
  declared result like any implementation's answer);
* the inner run faulted           -> `{"Err": "faulted at main.flow:3: ..."}`, an ordinary value
  (the outer Tool is declared `-> Result<T, Text>`, so the program sees `Err(Failed(text))`);
* the inner run paused            -> `pending`: the outer call stays open; the host resumes the
  inner run and delivers its result to the outer call (`resume --reply`);
* the inner run halted (Ctrl-C, sys.exit or a pdb quit inside it) -> the interruption is raised
  again, so the outer run halts too (flowrt.engine.interrupts); the inner run is left halted.

The outer history holds one Call and one Reply for the operation; the inner history is separate.
The host links them in the store's `nested_runs` records (`store.host_records.nested_runs`, `.outer_of`).
Compiling a program from a path is the compiler's business: `flow2py.host.flow_tool(path)`.
"""

from __future__ import annotations

import secrets
from typing import Any, Callable, Iterable, Optional

from flowrt.engine.drive import DriveOptions, RunCompleted, RunFaulted, RunHalted, RunPaused, drive
from flowrt.data.facts import Start
from flowrt.history.store import SqliteRecorder, Store
from flowrt.engine.tools import BINDINGS, Bindings, current_call, pending
from flowrt.data.values import NotRun
from flowrt.history.trace import DATA_VERSION
from flowrt.data.decoding import decode
from flowrt.data.typedesc import DecodeError, to_json

__all__ = ["flow_tool"]


def flow_tool(
    program,
    *,
    entry: str = "main",
    store: Any = None,
    bindings: Optional[Bindings] = None,
    reachable: Optional[Iterable] = None,
    resolve: Optional[Callable] = None,
    checkpoint_every: Optional[int] = None,
    meta: Optional[dict] = None,
) -> Callable:
    """A sync Tool implementation running `program`'s `entry` as a nested run per call.

    `store`: a Store or a path; default the store of the outer run's recorder. `bindings`: the
    inner program's Tools (default `BINDINGS`); `reachable`: the Tools it must have bound (default
    every Tool of the program). `meta`: the host's JSON kept with each inner run.
    """
    fn, params = program.entry(entry)
    names = tuple(n for n, _ in params)
    classes = _classes_of(program)

    def implementation(*jargs):
        ctx = current_call()
        st = _store(store if store is not None else getattr(ctx, "store", None))
        outer = getattr(ctx, "run_id", None)
        inner = f"{outer}/{ctx.call_id}" if outer else "nested-" + secrets.token_hex(6)
        args = _decode_args(params, jargs)
        start = Start(program.identity, program.std, DATA_VERSION, entry, args, names)
        try:
            st.history.create_run(inner, start, program.sources, dict(meta or {}, outer=outer))
        except Exception as e:  # an inner run of this call exists already (a resent call)
            raise NotRun(f"nested run {inner} could not start: {e}") from None
        if outer:
            st.host_records.record_nested(outer, ctx.call_id, inner)
        rec, outcome = SqliteRecorder(st, inner), None
        try:
            outcome = drive(
                fn,
                [start],
                DriveOptions(
                    recorder=rec,
                    bindings=bindings or BINDINGS,
                    reachable=program.tools if reachable is None else reachable,
                    resolve=resolve,
                    classes=classes,
                    checkpoint_every=checkpoint_every,
                ),
            )
        finally:
            rec.close(halted=isinstance(outcome, RunHalted))
        return _answer(outcome)

    implementation.__qualname__ = f"flow_tool({program.entry_module}.{entry})"
    return implementation


def _classes_of(program):
    """The program's class table (`Program.classes`); None (the driver's default) for a program
    descriptor that cannot say."""
    try:
        return program.classes
    except (AttributeError, LookupError):
        return None


def _store(store) -> Store:
    if isinstance(store, Store):
        return store
    if store is None:
        raise NotRun("a nested run needs a store: the outer run has none and flow_tool was given none")
    return Store(store)


def _decode_args(params, jargs) -> tuple:
    if len(jargs) != len(params):
        raise NotRun(
            f"the nested program takes {len(params)} arguments, the Tool was called with {len(jargs)}"
        )
    try:
        return tuple(decode(desc, a, f"$.{name}") for (name, desc), a in zip(params, jargs))
    except DecodeError as e:
        raise NotRun(f"the Tool's arguments do not fit the nested program's parameters: {e}") from None


def _answer(outcome):
    if isinstance(outcome, RunCompleted):
        return {"Ok": to_json(outcome.value)}
    if isinstance(outcome, RunFaulted):
        return {"Err": outcome.line()}
    if isinstance(outcome, RunPaused):
        return pending
    if isinstance(outcome, RunHalted):  # Ctrl-C, sys.exit, pdb quit inside: the outer run halts too
        raise outcome.cause
    raise RuntimeError(f"nested run ended unexpectedly: {outcome.line()}")
