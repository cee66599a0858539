"""Submitted bundles, the runtime's side (docs/spec/modules.md, "Submitted bundles").

A bundle is a program as module texts, `{"entry": "main.flow", "modules": {"main.flow": "...",
"lib.flow": "..."}, "pins": {...}}`. The runtime never reads a bundle's modules itself and never
imports flow2py: it hands the bundle to the installed compiler (the `flowrt_compilers` entry point,
whose `compile_bundle(bundle, store=...)` gives a `Runnable` and `check_bundle(bundle)` the
diagnostics), which checks it from its texts alone. A bundle that does not check, or whose shape
or size is refused, is a `BundleRefused` carrying the diagnostics as data (the JSON array `flow2py
check --format json` prints) or only its one line; nothing is recorded then.

* `submit_bundle(store, bundle, ...)` records a submitted run of a bundle for a worker (the HTTP
  API's `POST /runs` with a bundle, `flowrt.Client.start(bundle=...)`, `flow2py submit --bundle`):
  its program's sources are stored with its Start as for any run, so a worker, resume and replay
  compile it from the store and never need the bundle again.
* `bundle_bindings(base)` binds std's `std@v1/bundle` Tools where `base` binds neither their
  identity nor their name: `bundle.check(b)` answers the diagnostics as data, `bundle.run(b,
  input)` checks the bundle and runs its `main` as a nested run (flowrt.host.nested) in the outer
  run's store, its Tools bound to these same bindings.
"""

from __future__ import annotations

from typing import Any, Optional

from flowrt.engine.tools import BINDINGS, Bindings, current_call, pending
from flowrt.data.values import NotRun
from flowrt.history.store import Store
from flowrt.host import nested
from flowrt.host import worker_ops as wo
from flowrt.host.operations import Refused, Runnable, decode_input

__all__ = [
    "BundleRefused",
    "BUNDLE_CHECK",
    "BUNDLE_RUN",
    "bundle_bindings",
    "bundle_name",
    "check_bundle",
    "compile_bundle",
    "submit_bundle",
]

COMPILERS = "flowrt_compilers"  # the entry point group a compiler registers under (as client.py's)
#: std's bundle Tools, by declaration identity
BUNDLE_CHECK, BUNDLE_RUN = "std@v1/bundle::check", "std@v1/bundle::run"
DEFAULT_NAME = "bundle"  # the program name of a bundle's runs when the bundle gives none


class BundleRefused(Refused):
    """A bundle that was not accepted, in one line. `diagnostics_json`: it does not check, the
    JSON array of `flow2py check --format json` for it (a list of objects); None: its shape or a
    limit refused it, and the message says how. (`Refused.diagnostics` stays False: the message
    is one line, not rendered diagnostics.)"""

    def __init__(self, message: str, diagnostics_json: Optional[list] = None):
        super().__init__(message)
        self.diagnostics_json = diagnostics_json


def _compiler():
    from importlib.metadata import entry_points

    for ep in entry_points(group=COMPILERS):
        found = ep.load()
        if hasattr(found, "compile_bundle"):
            return found
    raise Refused("no Flow compiler that accepts bundles is installed (install flow2py)")


def compile_bundle(bundle: Any, *, store: Optional[Store] = None) -> Runnable:
    """The bundle's program, compiled by the installed compiler from its texts (with the program
    cache beside `store`), or `BundleRefused`."""
    return _compiler().compile_bundle(bundle, store=store)


def check_bundle(bundle: Any) -> list:
    """The bundle's diagnostics as `check --format json` gives them ([] when it checks), or
    `BundleRefused` for its shape or a limit."""
    return _compiler().check_bundle(bundle)


def bundle_name(bundle: Any) -> str:
    """The program name a bundle's runs are listed under: its `name`, or "bundle"."""
    name = bundle.get("name") if isinstance(bundle, dict) else None
    return name if isinstance(name, str) and name else DEFAULT_NAME


def submit_bundle(
    store: Store,
    bundle: Any,
    *,
    entry: str = "main",
    input: Any = None,
    run_id: Optional[str] = None,
    worker=None,
) -> str:
    """Check and compile the bundle, then record a submitted run of it (flowrt.host.worker_ops.submit:
    its input admitted, its Start and sources stored); the run id. A bundle that does not check is
    `BundleRefused` with its diagnostics and records nothing. With `worker` (a running
    `flowrt.host.worker.Worker`), that worker drives the run with the program just compiled."""
    prog = compile_bundle(bundle, store=store)
    name = bundle_name(bundle)
    meta = prog.meta(submitted="bundle", bundle_entry=bundle["entry"])
    run_id = wo.submit(store, prog, program=name, entry=entry, input=input, run_id=run_id, meta=meta)
    if worker is not None:
        worker.adopt(name, prog)
        worker.log(run=run_id, event="submitted", program=name, entry=entry)
        worker.wake()
    return run_id


# ---- std@v1/bundle's Tools ------------------------------------------------------------------------


def _refused_answer(e: BundleRefused) -> dict:
    if e.diagnostics_json is not None:
        return {"Err": {"Diagnostics": e.diagnostics_json}}
    return {"Err": {"Refused": str(e)}}


def bundle_bindings(base: Bindings = BINDINGS) -> Bindings:
    """`base` plus std's bundle Tools where `base` binds neither their identity nor their name
    (module docstring). The nested runs' own Tools are bound to the bindings returned."""
    out = Bindings().update(base)

    def check(bundle):
        try:
            found = check_bundle(bundle)
        except BundleRefused as e:
            return _refused_answer(e)
        return {"Err": {"Diagnostics": found}} if found else {"Ok": None}

    def run(bundle, input):
        ctx = current_call()
        store = getattr(ctx, "store", None)
        try:
            prog = compile_bundle(bundle, store=store)
        except BundleRefused as e:
            return _refused_answer(e)
        try:
            _, params = prog.entry("main")
            args = decode_input(input, params, what="input")
        except Refused as e:
            return {"Err": {"Refused": str(e)}}
        missing = out.missing(prog.reachable("main"))
        if missing:
            return {"Err": {"Refused": "no implementation bound for " + ", ".join(missing)}}
        del args  # admitted here for its message; the nested run admits the same input again
        impl = nested.flow_tool(
            prog.program,
            entry="main",
            bindings=out,
            reachable=prog.reachable("main"),
            resolve=prog.resolve,
            meta=prog.meta(submitted="bundle", bundle_entry=_entry_of(bundle)),
        )
        answer = impl(*[(input or {})[name] for name, _ in params])
        if answer is pending or "Ok" in answer:
            return answer
        return {"Err": {"Faulted": answer["Err"]}}

    for tool_id, name, impl in ((BUNDLE_CHECK, "bundle.check", check), (BUNDLE_RUN, "bundle.run", run)):
        if tool_id not in base and name not in base:
            out.bind(tool_id, impl)
    return out


def _entry_of(bundle) -> Optional[str]:
    entry = bundle.get("entry") if isinstance(bundle, dict) else None
    if not isinstance(entry, str):
        raise NotRun("the bundle has no entry")
    return entry
