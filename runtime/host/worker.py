"""flowrt.host.worker: the host that keeps runs going (docs/spec/execution.md "The worker").

    from flowrt.host.worker import Worker

    worker = Worker(".flow/runs.db", {"support": support_pkg.PROGRAM}, bindings)
    worker.start()
    run_id = worker.submit("support", input={"ticket": "Login fails on Safari"})
    worker.deliver(run_id, "c1:root#2", {"Ok": "Safari 17.4"})
    worker.stop()

A `Worker` serves programs by name over one store. Its loop (one thread) fires due timers,
halts cancelled runs it holds, and hands every run that can move to a pool of `concurrency`
threads: a submitted run (started), a paused run with a delivered reply for one of its open calls
(continued), a run whose owner died or whose lease expired (recovered: each call the crash cut is
closed `Unknown`, or sent again under its id when its binding says `on_crash="resend"`). Each run
is driven by `flowrt.host.operations.resume` under the run's lease, its Tool calls dispatched
concurrently as always. One owner per run: a worker lease (flowrt.history.worker_records) taken
in one transaction and heartbeated, and the run's recorder lease under it.

std's clock Tools are bound by the worker unless the host's bindings bind them: `clock.now()`
answers with the host's time, `clock.sleep(d)` leaves its call open with a timer the worker fires
when due, across restarts. Cancel and shutdown post an interruption on the drive's completion
queue, so a drive waiting on a call halts at once; a cancelled run also commits nothing more
(flowrt.history.recorder), so its outcome never depends on timing.

The operations that need no worker running (`submit`, `deliver`, `cancel`, `status`, `runs`,
`wait_for_change`) live in flowrt.host.worker_ops and are re-exported here.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue
from typing import Any, Callable, Optional

from flowrt.data.values import show
from flowrt.engine.interrupts import Interruption
from flowrt.engine.tools import BINDINGS, Bindings, WholeCall, current_call, pending
from flowrt.history.host_records import owner_alive, owner_token
from flowrt.history.store import Store
from flowrt.history.store_errors import RunCancelled
from flowrt.host.operations import Refused, Runnable, open_store, resume, runnable_of
from flowrt.host.bundles import bundle_bindings
from flowrt.host.worker_ops import (
    STATES,
    Conflict,
    DoesNotFit,
    NoSuchRun,
    OpenCall,
    RunStatus,
    admit_reply,
    cancel,
    deliver,
    fork,
    runs,
    status,
    submit,
    wait_for_change,
)

__all__ = [
    "Worker",
    "WorkerStopping",
    "NoSuchRun",
    "Conflict",
    "DoesNotFit",
    "OpenCall",
    "RunStatus",
    "STATES",
    "submit",
    "deliver",
    "cancel",
    "status",
    "runs",
    "wait_for_change",
    "clock_bindings",
    "log_line",
]

#: std's clock Tools, by declaration identity
CLOCK_NOW, CLOCK_SLEEP = "std@v1/clock::now", "std@v1/clock::sleep"
TIMER_REPLY = b'{"Ok": null}'


class WorkerStopping(SystemExit):
    """Posted to the drives a stopping worker still holds after its grace: they halt (no End),
    their calls left open for the next worker."""

    def __str__(self) -> str:
        return "the worker is stopping"


def log_line(**fields) -> str:
    """`run=r1 call=c1:root#2 event=paused tool=human.ask`: key=value pairs, values quoted when
    they hold a space, an equals sign or a quote."""
    out = []
    for k, v in fields.items():
        if v is None:
            continue
        text = v if isinstance(v, str) else (f"{v:.3f}" if isinstance(v, float) else str(v))
        if not text or any(c in text for c in ' ="\n'):
            text = json.dumps(text, ensure_ascii=False)
        out.append(f"{k}={text}")
    return " ".join(out)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def clock_bindings(base: Bindings, wake: Callable[[], None] = lambda: None) -> Bindings:
    """`base` plus std's clock Tools where `base` binds neither their identity nor their name:
    `clock.now` answers the host's time; `clock.sleep(d)` records a timer due in `d` in the
    store's worker records and leaves its call open (`pending`); the worker fires it. Both may be
    sent again after a crash (`on_crash="resend"`): a resent sleep keeps its first due time."""
    out = Bindings().update(base)

    def now():
        return {"Ok": time.time_ns()}

    def sleep(nanos):
        ctx = current_call()
        records = getattr(getattr(ctx, "store", None), "worker_records", None)
        if records is None or ctx.run_id is None:  # not under a store: a plain sleep
            time.sleep(max(0, nanos) / 1e9)
            return {"Ok": None}
        records.add_timer(ctx.run_id, ctx.call_id, time.time() + max(0, nanos) / 1e9)
        wake()
        return pending

    for tool_id, name, impl in ((CLOCK_NOW, "clock.now", now), (CLOCK_SLEEP, "clock.sleep", sleep)):
        if tool_id not in base and name not in base:
            out.bind(tool_id, impl, on_crash="resend")
    return out


class _Logged(Bindings):
    """`base`'s implementations, each call said in the worker's log as it is sent and answered
    (`run=r call=root#1 event=call_sent tool=svc.step`, then `call_returned`, `call_pending` or
    `call_raised`); the same implementations, names and options otherwise."""

    def __init__(self, base: Bindings, log: Callable[..., None]):
        super().__init__()
        self.update(base)
        self._say = log
        self._logged: dict = {}

    def lookup(self, spec):
        impl = super().lookup(spec)
        if impl is None:
            return None
        key = (impl, spec.name)
        got = self._logged.get(key)
        if got is None:
            got = self._logged[key] = _logging(impl, spec.name, self._say)
        return got


def _said(ctx, say, tool: str, out=None, exc: Optional[BaseException] = None) -> None:
    run_id, call_id = (ctx.run_id, ctx.call_id) if ctx is not None else (None, None)
    if exc is not None:
        say(run=run_id, call=call_id, event="call_raised", tool=tool, reason=f"{type(exc).__name__}: {exc}")
    else:
        say(run=run_id, call=call_id, event="call_pending" if out is pending else "call_returned", tool=tool)


class _LoggedWholeCall(WholeCall):
    """A WholeCall implementation (a Tool protocol or MCP binding), logged as `_logging` logs a
    function: the runtime still gives it the whole call (spec, JSON arguments, type arguments)."""

    def __init__(self, impl: WholeCall, tool: str, say: Callable[..., None]):
        self.impl, self.tool, self.say = impl, tool, say

    def __repr__(self):
        return repr(self.impl)

    def serve_call(self, spec, jargs, type_args, context):
        ctx = context if hasattr(context, "call_id") else None
        self.say(
            run=ctx.run_id if ctx else None,
            call=ctx.call_id if ctx else None,
            event="call_sent",
            tool=self.tool,
        )
        out = self.impl.serve_call(spec, jargs, type_args, context)
        _said(ctx, self.say, self.tool, out)
        return out


def _logging(impl: Callable, tool: str, say: Callable[..., None]) -> Callable:
    import functools
    import inspect

    if isinstance(impl, WholeCall):
        return _LoggedWholeCall(impl, tool, say)
    if inspect.iscoroutinefunction(impl) or inspect.iscoroutinefunction(getattr(impl, "__call__", None)):

        @functools.wraps(impl)
        async def logged_async(*args):
            ctx = current_call()
            say(
                run=ctx.run_id if ctx else None,
                call=ctx.call_id if ctx else None,
                event="call_sent",
                tool=tool,
            )
            try:
                out = await impl(*args)
            except BaseException as e:
                _said(ctx, say, tool, exc=e)
                raise
            _said(ctx, say, tool, out)
            return out

        return logged_async

    @functools.wraps(impl)
    def logged(*args):
        ctx = current_call()
        say(run=ctx.run_id if ctx else None, call=ctx.call_id if ctx else None, event="call_sent", tool=tool)
        try:
            out = impl(*args)
        except BaseException as e:
            _said(ctx, say, tool, exc=e)
            raise
        _said(ctx, say, tool, out)
        return out

    return logged


class _Held:
    """A run this worker is driving: its completion queue (to halt it) and whether it was."""

    __slots__ = ("queue", "halted")

    def __init__(self):
        self.queue: SimpleQueue = SimpleQueue()
        self.halted = False

    def halt(self, exc: BaseException) -> None:
        if not self.halted:
            self.halted = True
            self.queue.put((None, Interruption(exc)))


class Worker:
    """Serves `programs` (name -> Runnable, or a generated package or its PROGRAM) over the
    store at `store_path` (or a Store). See the module docstring."""

    def __init__(
        self,
        store_path: Any,
        programs: dict,
        bindings: Optional[Bindings] = None,
        *,
        concurrency: int = 8,
        checkpoint_every: Optional[int] = None,
        lease_seconds: float = 30.0,
        poll_seconds: Optional[float] = None,
        log: Optional[Callable[[str], None]] = None,
        stored: Optional[Callable[[str], Optional[Runnable]]] = None,
    ):
        if concurrency < 1:
            raise Refused(f"concurrency {concurrency}: expected at least 1")
        self.store = store_path if isinstance(store_path, Store) else open_store(store_path)
        self.programs: dict[str, Runnable] = {name: runnable_of(p) for name, p in programs.items()}
        self._by_identity = {p.program.identity: (n, p) for n, p in self.programs.items()}
        # std's clock and bundle Tools, where the host binds neither (flowrt.host.bundles)
        self.bindings = _Logged(
            bundle_bindings(clock_bindings(BINDINGS if bindings is None else bindings, self.wake)), self.log
        )
        self.concurrency = concurrency
        self.checkpoint_every = checkpoint_every
        self.lease_seconds = lease_seconds
        # On PostgreSQL the loop is woken by LISTEN/NOTIFY and polls only as a safety net.
        self._listens = hasattr(self.store.file, "listen")
        self.poll_seconds = poll_seconds if poll_seconds is not None else (5.0 if self._listens else 0.5)
        self._listener = None
        self._log = log or _stderr
        self.owner = owner_token()
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="flowrt-worker")
        self._thread: Optional[threading.Thread] = None
        self._failed: dict[str, int] = {}  # run id -> its fact count when it last could not be driven
        self._unserved: set[str] = set()  # program identities already logged as not served
        self._beat = 0.0
        # run id -> its stored program, for a run of a program not among `programs` (the CLI
        # compiles the run's stored sources: flow2py/worker_cli.py); None: such runs are not served
        self._stored = stored

    # ---- the operations, waking the loop at once -------------------------------------------------

    def log(self, **fields) -> None:
        try:
            self._log(log_line(**fields))
        except Exception:  # noqa: BLE001  (a log that fails must not stop the worker)
            pass

    def program(self, name: str) -> Runnable:
        try:
            return self.programs[name]
        except KeyError:
            served = ", ".join(sorted(self.programs)) or "none"
            raise Refused(f"this worker serves no program {name!r} (it serves: {served})") from None

    def program_of(self, run_id: str) -> Optional[Runnable]:
        """The served program a run started on, or None."""
        info = self.store.host_records.load_run(run_id) if run_id else None
        found = self._by_identity.get(info.program) if info is not None else None
        return found[1] if found else None

    def submit(self, program: str, *, entry: str = "main", input=None, run_id: Optional[str] = None) -> str:
        run_id = submit(
            self.store, self.program(program), program=program, entry=entry, input=input, run_id=run_id
        )
        self.log(run=run_id, event="submitted", program=program, entry=entry)
        self.wake()
        return run_id

    def fork(self, run_id: str, checkpoint: int, *, new_run_id: Optional[str] = None) -> str:
        """Fork checkpoint N of run `run_id` as a new run this worker drives (worker_ops.fork), on
        the program the run started on, which this worker must serve; the new run id."""
        status(self.store, run_id)  # NoSuchRun first
        identity = self.store.host_records.load_run(run_id).program
        served = self._by_identity.get(identity) or self._from_store(identity, run_id)
        if served is None:
            raise Refused(f"run {run_id} is of a program this worker does not serve; it cannot fork it")
        new = fork(self.store, served[1], run_id, checkpoint, program=served[0], new_run_id=new_run_id)
        self.log(run=new, event="forked", parent=run_id, checkpoint=checkpoint)
        self.wake()
        return new

    def adopt(self, name: str, prog) -> None:
        """Drive the runs of `prog` as `name` without serving it by name (a submitted bundle's
        program, flowrt.host.bundles.submit_bundle): no compile from the store is needed for them."""
        self._by_identity.setdefault(runnable_of(prog).program.identity, (name, runnable_of(prog)))

    def deliver(self, run_id: str, call_id: str, reply) -> None:
        status(self.store, run_id)  # NoSuchRun first
        deliver(self.store, run_id, call_id, reply, self.program_of(run_id))
        self._failed.pop(run_id, None)  # a new reply: worth another try
        self.log(run=run_id, call=call_id, event="reply_delivered")
        self.wake()

    def cancel(self, run_id: str) -> None:
        cancel(self.store, run_id)
        self.log(run=run_id, event="cancel_requested")
        with self._lock:
            held = self._held.get(run_id)
        if held is not None:
            held.halt(RunCancelled(f"run {run_id!r} was cancelled"))
        self.wake()

    def status(self, run_id: str) -> RunStatus:
        try:
            prog = self.program_of(run_id)
        except Exception:  # noqa: BLE001  (status says what is wrong)
            prog = None
        return status(self.store, run_id, prog)

    def runs(self, **filters) -> list[RunStatus]:
        return runs(self.store, **filters)

    # ---- running -------------------------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> "Worker":
        if self._thread is None:
            self.log(event="worker_started", owner=self.owner, programs=",".join(sorted(self.programs)))
            if self._listens:
                self._listener = self.store.file.listen(lambda what: self.wake())
            self._thread = threading.Thread(target=self._loop, name="flowrt-worker-loop", daemon=True)
            self._thread.start()
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Stop taking work; wait up to `grace` seconds for the runs being driven to pause or end,
        then halt those still going (nothing half-recorded; their open calls stay open for the next
        worker), and release every lease."""
        self._stopping.set()
        self.wake()
        if self._thread is not None:
            self._thread.join()
        deadline = time.monotonic() + max(0.0, grace)
        while self._held and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            still = list(self._held.items())
        for run_id, held in still:
            self.log(run=run_id, event="halting", reason="the worker is stopping")
            held.halt(WorkerStopping())
        self._pool.shutdown(wait=True)
        if self._listener is not None:
            self._listener.stop()
        self.log(event="worker_stopped", owner=self.owner)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self._tick()
            except Exception as e:  # noqa: BLE001  (a store that is busy, say: try again next tick)
                self.log(event="error", reason=f"{type(e).__name__}: {e}")
            # the heartbeat's cadence also bounds how late an expired lease is noticed
            wait = min(self.poll_seconds, self.lease_seconds / 3)
            due = self.store.worker_records.next_due()
            if due is not None:
                wait = max(0.0, min(wait, due - time.time()))
            self._wake.wait(wait)

    def _tick(self) -> None:
        records = self.store.worker_records
        now = time.time()
        if now - self._beat >= self.lease_seconds / 3:
            records.heartbeat(self.owner, self.lease_seconds)
            self._beat = now
        while True:  # claimed a batch at a time; another worker firing one passes it over
            fired = records.fire_due(now, TIMER_REPLY)
            for run_id, call_id, late in fired:
                self.log(run=run_id, call=call_id, event="timer_fired", late=round(late, 3))
            if len(fired) < 100:
                break
        with self._lock:
            held = dict(self._held)
        if held:
            for run_id in records.cancelled_runs() & held.keys():
                held[run_id].halt(RunCancelled(f"run {run_id!r} was cancelled"))
        self._take(records)

    def _take(self, records) -> None:
        """Hand every run that can move to the pool, while it has room."""
        with_replies = set(records.runs_with_replies())
        expired = records.expired_leases()
        for run_id, state, owner, identity in records.runs_to_continue():
            with self._lock:
                if len(self._held) >= self.concurrency or self._stopping.is_set():
                    return
                if run_id in self._held:
                    continue
            served = self._by_identity.get(identity) or self._from_store(identity, run_id)
            if served is None:
                if identity not in self._unserved:
                    self._unserved.add(identity)
                    self.log(run=run_id, event="not_served", program=identity[:12])
                continue
            # a live owner's run (on another host: until its worker lease expires) is not ours
            if state == "running" and owner is not None and owner_alive(owner) and run_id not in expired:
                continue
            if state == "paused" and run_id not in with_replies:
                continue
            if self._failed.get(run_id) is not None:
                continue
            if not records.claim(run_id, self.owner, self.lease_seconds):
                continue
            held = _Held()
            with self._lock:
                self._held[run_id] = held
            self._pool.submit(self._drive, run_id, served[0], served[1], held)

    def _from_store(self, identity: str, run_id: str):
        """(name, program) of a run whose program is not among those given, compiled from the
        sources the run stored (`stored`), once per identity; None when it cannot be."""
        if self._stored is None or identity in self._unserved:
            return None
        try:
            prog = self._stored(run_id)
        except Exception as e:  # noqa: BLE001  (a program that no longer compiles: said once)
            self._unserved.add(identity)
            self.log(run=run_id, event="not_served", program=identity[:12], reason=str(e).splitlines()[0])
            return None
        if prog is None or prog.program.identity != identity:
            self._unserved.add(identity)
            self.log(run=run_id, event="not_served", program=identity[:12])
            return None
        sub = self.store.worker_records.submission(run_id)
        name = sub[0] if sub else (prog.meta().get("entry_module") or identity[:12])
        self._by_identity[identity] = (name, prog)
        self.log(run=run_id, event="program_compiled", program=name, identity=identity[:12])
        return self._by_identity[identity]

    def _drive(self, run_id: str, name: str, prog: Runnable, held: _Held) -> None:
        records = self.store.worker_records
        try:
            info = self.store.host_records.load_run(run_id)
            replies = self._replies(run_id, info, prog)
            pending_calls = self.store.host_records.pending_calls(run_id)
            opened = dict(info.open_calls)
            cut = [c for c in opened if c not in pending_calls and c not in replies]
            resend = [c for c in cut if self._resends(prog, opened[c])]
            submission = records.submission(run_id)
            if submission is not None and submission[3] is None:
                records.mark_started(run_id)
                self.log(run=run_id, event="started", program=name)
            elif cut:
                self.log(run=run_id, event="recovering", cut=",".join(cut), resend=",".join(resend) or None)
            for call_id in replies:
                self.log(run=run_id, call=call_id, event="reply_recorded")
            report = self._resume(run_id, prog, replies, resend, held)
            records.drop_replies(run_id, replies)
            self._report(run_id, report)
        except Refused as e:
            self._failed[run_id] = -1
            self.log(run=run_id, event="refused", reason=str(e))
        except Exception as e:  # noqa: BLE001  (one run's failure never stops the worker)
            self._failed[run_id] = -1
            self.log(run=run_id, event="error", reason=f"{type(e).__name__}: {e}")
        finally:
            try:
                records.release(run_id, self.owner)
            finally:
                with self._lock:
                    self._held.pop(run_id, None)
                self.wake()

    def _resume(self, run_id: str, prog: Runnable, replies: dict, resend: list, held: _Held):
        drive = {"completions": held.queue, "inline": False}
        kw = dict(
            bindings=self.bindings, checkpoint_every=self.checkpoint_every, drive=drive, durable_replies=False
        )
        try:
            return resume(self.store, prog, run_id, replies=replies, resend=resend, **kw)
        except Refused as e:
            if not resend or "--resend" not in str(e):
                raise
            # made before the latest checkpoint: it cannot be sent again; closed Unknown instead
            self.log(run=run_id, event="resend_refused", reason=str(e))
            return resume(self.store, prog, run_id, replies=replies, **kw)

    def _replies(self, run_id: str, info, prog: Runnable) -> dict:
        """The replies delivered for the run's open calls, each admitted; a misfit or a reply to a
        call no longer open is dropped (and said)."""
        records = self.store.worker_records
        opened = dict(info.open_calls)
        out, drop = {}, []
        for call_id, data in records.replies(run_id).items():
            if call_id not in opened:
                drop.append(call_id)
                continue
            try:
                value = json.loads(data.decode("utf-8"))
                admit_reply(self.store, prog, info, call_id, opened[call_id], value)
            except (ValueError, Refused) as e:
                drop.append(call_id)
                self.log(run=run_id, call=call_id, event="reply_dropped", reason=str(e))
                continue
            out[call_id] = value
        if drop:
            records.drop_replies(run_id, drop)
        return out

    def _resends(self, prog: Runnable, tool_id: str) -> bool:
        spec = prog.tool_spec(tool_id)
        return spec is not None and self.bindings.options(spec).on_crash == "resend"

    def _report(self, run_id: str, report) -> None:
        outcome = report.outcome
        kind = type(outcome).__name__
        if kind == "RunCompleted":
            self.log(run=run_id, event="completed", result=show(outcome.value))
        elif kind == "RunFaulted":
            self.log(run=run_id, event="faulted", fault=outcome.line())
        elif kind == "RunPaused":
            for c in outcome.open:
                self.log(run=run_id, call=c.id, event="paused", tool=c.tool)
        else:
            self.log(run=run_id, event="halted", reason=getattr(outcome, "reason", kind))
