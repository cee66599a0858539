"""The worker's commands: `flow2py worker`, `submit`, `reply`, `cancel` (docs/spec/execution.md
"The worker"). `register(main, guard)` adds them to the CLI's group.

Only click is imported here at module level: the compiler and the runtime are imported inside
each command, so `flow2py --version` stays fast.
"""

from __future__ import annotations

import os
import sys

import click

STORE = click.option(
    "--store",
    "store_path",
    default=None,
    envvar="FLOW2PY_STORE",
    help="SQLite file or postgresql:// URL (default .flow/runs.db; env FLOW2PY_STORE).",
)


def _named(item: str) -> tuple[str, str]:
    """`NAME=PATH` or `PATH` (named by its entry file's stem, or a package folder's name)."""
    name, sep, path = item.partition("=")
    if sep and name and os.sep not in name and not name.endswith(".flow"):
        return name, path
    path = item
    base = os.path.basename(os.path.normpath(path))
    return (base[: -len(".flow")] if base.endswith(".flow") else base), path


def load_program(path: str):
    """A `.flow` entry file compiled, or a package built by `flow2py build` imported: a Runnable."""
    from flow2py import host
    from flowrt.host.operations import Refused

    if os.path.isdir(path) and os.path.isfile(os.path.join(path, "__init__.py")):
        import importlib

        from flowrt.host.operations import runnable_of

        parent, name = os.path.split(os.path.abspath(os.path.normpath(path)))
        if parent not in sys.path:
            sys.path.insert(0, parent)
        try:
            module = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001  (the user's package: one line)
            raise Refused(f"{path}: importing the built package failed: {type(e).__name__}: {e}") from None
        if not hasattr(module, "PROGRAM"):
            raise Refused(f"{path}: not a package built by `flow2py build` (it has no PROGRAM)")
        return runnable_of(module)
    if not os.path.exists(path):
        raise Refused(f"{path}: no such file")
    return host.compile_path(path)


def _host_port(text: str) -> tuple[str, int]:
    from flowrt.host.operations import Refused

    host_name, sep, port = text.rpartition(":")
    if not sep:
        host_name, port = "127.0.0.1", text
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise Refused(f"--http {text!r}: expected HOST:PORT (e.g. 127.0.0.1:8080)")
    return host_name or "127.0.0.1", int(port)


def _serve_http(worker, where: str, token):
    from flowrt.host.operations import Refused

    host_name, port = _host_port(where)
    try:
        from flowrt.host import http_api  # the HTTP API, written beside the worker (issue 9)
    except ImportError as e:
        raise Refused(f"--http: this flowrt has no HTTP API ({e})") from None
    return http_api.start_server(worker, host_name, port, token=token)  # bound now, or Refused


def _lease_seconds() -> float:
    """The worker lease's length: $FLOW2PY_WORKER_LEASE seconds (default 30): how long a worker
    that stopped heartbeating keeps its runs before another worker takes them over."""
    from flowrt.host.operations import Refused

    text = os.environ.get("FLOW2PY_WORKER_LEASE", "").strip()
    if not text:
        return 30.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.1 <= value <= 86400:
        raise Refused(f"FLOW2PY_WORKER_LEASE={text!r}: expected seconds between 0.1 and 86400")
    return value


def worker_cmd(programs, tools, store_path, http, concurrency, token, grace, checkpoint_every=None):
    """Serve the programs given until SIGTERM/SIGINT."""
    import signal
    import threading

    from flow2py import host
    from flowrt.host.operations import Refused, open_store
    from flowrt.host.worker import Worker

    if not programs:
        raise Refused("worker: give at least one program ([NAME=]PATH)")
    served = {}
    for item in programs:
        name, path = _named(item)
        if name in served:
            raise Refused(f"worker: two programs are named {name!r}; name them with NAME=PATH")
        served[name] = load_program(path)
    bindings = host.worker_bindings(served, tools)
    if http is not None:
        _host_port(http)
    lease = _lease_seconds()
    store = open_store(store_path)
    worker = Worker(
        store,
        served,
        bindings,
        concurrency=concurrency,
        checkpoint_every=checkpoint_every,
        lease_seconds=lease,
        stored=lambda run_id: host.compile_stored(store, run_id),
    )
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    worker.start()
    server = None
    if http is not None:
        try:
            server = _serve_http(worker, http, token)
        except Refused:
            worker.stop(grace=0)
            raise
    from flowrt.history.pg import display

    where = display(store_path) if store_path else os.path.join(".flow", "runs.db")
    click.echo(f"flow2py worker: serving {', '.join(sorted(served))} over {where}", err=True)
    while not stop.wait(3600):
        pass
    if server is not None:
        server.stop()
    worker.stop(grace=grace)
    from flowrt.data.exit_codes import EXIT_OK

    sys.exit(EXIT_OK)


def submit_cmd(program, entry, input_json, run_id, store_path, bundle_file=None):
    from flow2py import host
    from flowrt.host import operations as rh
    from flowrt.host.worker import submit

    if (program is None) == (bundle_file is None):
        raise rh.Refused("submit: give a program ([NAME=]PATH) or --bundle FILE.json, not both")
    if bundle_file is not None:
        submit_bundle_cmd(bundle_file, entry, input_json, run_id, store_path)
        return
    name, path = _named(program)
    loaded = load_program(path)
    value = None if input_json is None else rh.parse_json(input_json, "--input")
    store = rh.open_store(store_path)
    meta = loaded.meta(path) if isinstance(loaded, host.Loaded) else None
    click.echo(submit(store, loaded, program=name, entry=entry, input=value, run_id=run_id, meta=meta))


def submit_bundle_cmd(bundle_file, entry, input_json, run_id, store_path):
    """`submit --bundle FILE.json`: the bundle checked and compiled first; one that does not check
    prints its diagnostics as `check --format json` does on stdout, exits 1 and records nothing
    (no store is created for it)."""
    import json

    from flow2py import host
    from flowrt.host import operations as rh
    from flowrt.host.bundles import BundleRefused, bundle_name
    from flowrt.host.worker import submit

    try:
        with open(bundle_file, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise rh.Refused(
            f"--bundle {bundle_file}: cannot read it: {getattr(e, 'strerror', None) or e}"
        ) from None
    bundle = rh.parse_json(text, f"--bundle {bundle_file}")
    value = None if input_json is None else rh.parse_json(input_json, "--input")
    try:
        loaded = host.compile_bundle(bundle)
    except BundleRefused as e:
        if e.diagnostics_json is not None:
            click.echo(json.dumps(e.diagnostics_json, indent=2, ensure_ascii=False))
        raise
    store = rh.open_store(store_path)
    meta = loaded.meta(submitted="bundle", bundle_entry=bundle["entry"])
    name = bundle_name(bundle)
    click.echo(submit(store, loaded, program=name, entry=entry, input=value, run_id=run_id, meta=meta))


def reply_cmd(run_id, items, store_path):
    from flow2py import host
    from flowrt.host import operations as rh
    from flowrt.host.worker import Refused, deliver, status

    if not items:
        raise Refused("reply: give at least one CALL_ID=JSON")
    replies = {}
    for item in items:
        call_id, sep, text = item.partition("=")
        if not sep or not call_id:
            raise Refused(f"reply {item!r}: expected CALL_ID=JSON")
        if call_id in replies:
            raise Refused(f"reply {call_id}: given more than once; a call has one reply")
        replies[call_id] = rh.parse_json(text, f"reply {call_id}")
    store = rh.open_store(store_path, create=False)
    status(store, run_id)  # an unknown run is refused before its program is compiled
    prog = host.compile_stored(store, run_id)
    open_now = {c for c, _ in store.host_records.load_run(run_id).open_calls}
    for call_id in replies:  # every reply checked before any is kept
        if call_id not in open_now:
            raise Refused(
                f"call {call_id} is not open in run {run_id} (open calls: {', '.join(sorted(open_now)) or 'none'})"
            )
    for call_id, value in replies.items():
        deliver(store, run_id, call_id, value, prog)
        click.echo(f"delivered {call_id} to run {run_id}")


def cancel_cmd(run_id, store_path):
    from flowrt.host import operations as rh
    from flowrt.host.worker import cancel

    cancel(rh.open_store(store_path, create=False), run_id)
    click.echo(f"cancelled run {run_id} (halted; no End is recorded)")


def register(main, guard) -> None:
    """Add the worker's commands to the CLI group `main`; `guard` turns refusals into exit codes."""

    @main.command(name="worker")
    @click.argument("programs", nargs=-1)
    @click.option("--tools", "tools", multiple=True, help="Python file or module binding Tools.")
    @STORE
    @click.option("--http", default=None, help="Serve the HTTP API on HOST:PORT (default: off).")
    @click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
    @click.option("--token", default=None, help="Bearer token every mutating HTTP request must carry.")
    @click.option(
        "--grace",
        type=click.FloatRange(min=0),
        default=10.0,
        show_default=True,
        help="Seconds a stopping worker waits for its runs to pause before halting them.",
    )
    @click.option(
        "--checkpoint-every",
        type=click.IntRange(min=1),
        default=None,
        help="Take a checkpoint at an eligible tail call once N facts were recorded since the last.",
    )
    @guard
    def worker(programs, tools, store_path, http, concurrency, token, grace, checkpoint_every):
        """Serve programs ([NAME=]PATH: .flow entry files or built packages) until SIGTERM/SIGINT."""
        worker_cmd(programs, tools, store_path, http, concurrency, token, grace, checkpoint_every)

    @main.command(name="submit")
    @click.argument("program", required=False)
    @click.option("--entry", default="main", show_default=True)
    @click.option(
        "--input", "input_json", default=None, help="JSON object keyed by the entry's parameter names."
    )
    @click.option("--run-id", default=None)
    @click.option(
        "--bundle", "bundle_file", default=None, help="A bundle of module texts (JSON) to run instead."
    )
    @STORE
    @guard
    def submit(program, entry, input_json, run_id, store_path, bundle_file):
        """Record a new run ([NAME=]PATH, or --bundle FILE.json) for a worker; print its id."""
        submit_cmd(program, entry, input_json, run_id, store_path, bundle_file)

    @main.command(name="reply")
    @click.argument("run_id")
    @click.argument("items", nargs=-1)
    @STORE
    @guard
    def reply(run_id, items, store_path):
        """Deliver replies (CALL_ID=JSON, admitted first) for a worker to continue the run."""
        reply_cmd(run_id, items, store_path)

    @main.command(name="cancel")
    @click.argument("run_id")
    @STORE
    @guard
    def cancel(run_id, store_path):
        """Halt the run (no End is recorded)."""
        cancel_cmd(run_id, store_path)
