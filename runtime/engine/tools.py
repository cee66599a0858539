"""Tool implementations: binding, dispatch and admission (docs/spec/abi.md "Tools: binding and replies").

* `bind(name_or_id)` registers a Python implementation in the process-wide `BINDINGS`; a host
  that wants its own set builds a `Bindings()` and uses its `.bind` the same way. A Tool is found
  by its declaration id ("planner::next") first, then by its qualified name ("planner.next").
* Dispatch: a sync implementation runs on a worker thread, an async one (a coroutine function)
  on one event-loop thread, so implementations really run concurrently; each finished call posts
  `(call_id, outcome)` on the run's completion queue, and the driver admits completions one at a
  time. The single exception is `Dispatcher.run_inline`: the driver runs a sync implementation
  itself only when it would otherwise just wait for that one call (see docs/spec/execution.md).
* Admission (`call_implementation`, `admit`) turns whatever the implementation did into the
  outcome the program receives: `Ok(v)`, `Err(Failed(e))`, `Err(Malformed("$.path: ..."))`,
  `Err(NotRun(reason))`, `Err(Unknown("Type: message"))`, or `PENDING` (the call stays open).
  KeyboardInterrupt, SystemExit and BdbQuit are none of these: they halt the run
  (flowrt.engine.interrupts); a worker posts them as an `Interruption` for the driver to raise.

Worker threads are daemon threads of our own rather than a `ThreadPoolExecutor`: an
implementation that never returns (a search that hangs) must not keep the process from exiting
after the run has ended, and `ThreadPoolExecutor` joins its workers at interpreter exit.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import threading
from bdb import BdbQuit
import time
import traceback
from dataclasses import dataclass, field
from collections import deque
from queue import SimpleQueue
from typing import Any, Callable, Iterable, Optional

from flowrt.engine.interrupts import INTERRUPTS, Interruption
from flowrt.engine.retry import DEFAULT_OPTIONS, BindOptions, Retry, retrying
from flowrt.data.requests import ToolSpec
from flowrt.data.decoding import compile_decoder
from flowrt.data.typedesc import DecodeError, Named, _subst, to_json, unicode_text
from flowrt.data.values import Err, Failed, Malformed, NotRun, Result, Unknown

__all__ = [
    "pending",
    "Pending",
    "Bindings",
    "BINDINGS",
    "bind",
    "MissingBindings",
    "admit",
    "call_implementation",
    "Dispatcher",
    "PENDING",
    "CallContext",
    "current_call",
    "admitter",
    "WholeCall",
    "CallFailure",
    "failure_of",
    "signature_misfit",
]


@dataclass(frozen=True)
class CallContext:
    """Which call an implementation is serving: the host's knowledge, never the program's.

    `run_id` and `store` are those of the run's recorder (None for a recorder without them, e.g.
    MemoryRecorder). A nested-run helper uses it to link the inner run to the outer call.
    `failures`: where the evidence of a failed call is kept (the dispatcher's `failures`).
    """

    run_id: Optional[str]
    call_id: str
    store: Any = None
    failures: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class CallFailure:
    """The evidence behind a call's `Unknown(...)` or `NotRun(...)`: the exception's type
    (qualified), its message, its formatted traceback and when it was raised (epoch seconds).
    The host's record (the store's `call_failures`), never history: the program sees only the reason."""

    exc_type: str
    message: str
    traceback: str
    at: float


_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the flowrt package


def failure_of(e: BaseException) -> CallFailure:
    """The evidence of the exception `e` (raised by an implementation, or sending to it)."""
    t = type(e)
    name = t.__qualname__ if t.__module__ in ("builtins", "__main__") else f"{t.__module__}.{t.__qualname__}"
    try:
        message = str(e)
    except Exception:
        message = ""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_RUNTIME_DIR):
        tb = tb.tb_next  # from the implementation's own frame: the runtime's calling it is no evidence
    try:
        text = "".join(traceback.format_exception(t, e, tb or e.__traceback__))
    except Exception:  # a traceback that cannot be formatted still names the exception
        text = f"{name}: {message}\n"
    # a lone surrogate in what it said is kept as its escape, as in the reason (`unicode_text`)
    return CallFailure(unicode_text(name), unicode_text(message), unicode_text(text), time.time())


def _keep(context, e: BaseException) -> None:
    """Keep the evidence of `e` where the call's context says (nothing without one)."""
    if type(context) is tuple:
        failures, call_id = (context[3], context[1]) if len(context) > 3 else (None, None)
    elif context is not None:
        failures, call_id = context.failures, context.call_id
    else:
        return
    if failures is not None:
        failures[call_id] = failure_of(e)


_CURRENT: contextvars.ContextVar = contextvars.ContextVar("flowrt_current_call", default=None)


def current_call() -> Optional[CallContext]:
    """Inside a Tool implementation called by the driver: the call it serves; else None."""
    c = _CURRENT.get()
    if type(c) is tuple:  # (run_id, call_id, store): the driver's inline path builds no object
        return CallContext(*c)
    return c


class Pending:
    """The type of `pending`: what an implementation returns to leave its call open (a pause)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "pending"

    def __reduce__(self):
        return (Pending, ())


#: Returned by an implementation: the call stays open until a host delivers its reply.
pending = Pending()
PENDING = pending


class MissingBindings(Exception):
    """A live run was refused: Tools it can reach have no implementation (names listed)."""

    def __init__(self, missing: list[str]):
        self.missing = list(missing)
        super().__init__("no implementation bound for " + ", ".join(self.missing))


class Bindings:
    """Implementations by declaration id or qualified name."""

    def __init__(self, impls: Optional[dict[str, Callable]] = None):
        self._impls: dict[str, Callable] = dict(impls or {})
        self._options: dict[str, BindOptions] = {}
        self._cache: dict[ToolSpec, Optional[Callable]] = {}

    def bind(
        self,
        key: str,
        impl: Optional[Callable] = None,
        *,
        on_crash: str = "unknown",
        retry: Optional[Retry] = None,
    ):
        """`@b.bind("planner.next")` (decorator) or `b.bind("planner.next", f)`. `on_crash`
        ("unknown" or "resend") and `retry` (a `flowrt.Retry`): flowrt.engine.retry."""
        options = BindOptions(on_crash, retry)

        def register(f):
            self._impls[key] = retrying(f, retry, current_call) if retry is not None else f
            if options == DEFAULT_OPTIONS:
                self._options.pop(key, None)
            else:
                self._options[key] = options
            self._cache.clear()
            return f

        return register(impl) if impl is not None else register

    def update(self, other: "Bindings") -> "Bindings":
        self._impls.update(other._impls)
        for key in other._impls:
            self._options.pop(key, None)
        self._options.update(other._options)
        self._cache.clear()
        return self

    def options(self, spec: ToolSpec) -> BindOptions:
        """The binding options of the implementation `lookup(spec)` finds."""
        key = spec.tool_id if self._impls.get(spec.tool_id) is not None else spec.name
        return self._options.get(key, DEFAULT_OPTIONS)

    def lookup(self, spec: ToolSpec) -> Optional[Callable]:
        try:
            return self._cache[spec]
        except KeyError:
            impl = self._impls.get(spec.tool_id) or self._impls.get(spec.name)
            self._cache[spec] = impl
            return impl

    def missing(self, specs: Iterable) -> list[str]:
        """Qualified names of the Tools with no implementation, in order, once each. `specs` holds
        ToolSpecs or (tool_id, qualified name) pairs (`Program.tools`)."""
        out: list[str] = []
        for s in specs:
            tool_id, name = (s.tool_id, s.name) if isinstance(s, ToolSpec) else tuple(s)
            if self._impls.get(tool_id) is None and self._impls.get(name) is None and name not in out:
                out.append(name)
        return out

    def __contains__(self, key: str) -> bool:
        return key in self._impls

    def __len__(self):
        return len(self._impls)


def signature_misfit(spec: ToolSpec, impl: Optional[Callable]) -> Optional[str]:
    """Why the implementation `impl` cannot be called with the Tool's arguments (it is called
    with them by position, `impl(*args)`), naming both; None when it can, or when its signature
    cannot be read (a builtin) or it takes the whole call (the Tool protocol's clients)."""
    if impl is None or isinstance(impl, WholeCall):
        return None
    try:
        sig = inspect.signature(impl)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*spec.params)
    except TypeError as e:
        fn = inspect.unwrap(impl)
        code = getattr(fn, "__code__", None)
        if code is not None:
            file = code.co_filename
            rel = os.path.relpath(file) if not os.path.relpath(file).startswith("..") else file
            name = f"{fn.__qualname__}{sig} at {rel}:{code.co_firstlineno}"
        else:
            name = f"{getattr(fn, '__module__', None) or '?'}.{getattr(fn, '__qualname__', repr(fn))}{sig}"
        n = len(spec.params)
        return (
            f"{spec.name}({', '.join(spec.params)}) is bound to {name}, which cannot take "
            f"its {n} argument{'' if n == 1 else 's'}: {e}"
        )
    return None


#: The process-wide registry `bind` writes to (a `--tools` file uses it).
BINDINGS = Bindings()


def bind(
    key: str, impl: Optional[Callable] = None, *, on_crash: str = "unknown", retry: Optional[Retry] = None
):
    """Register a Tool implementation in `BINDINGS`, by qualified name or declaration id;
    `on_crash` and `retry` are its binding options (flowrt.engine.retry)."""
    return BINDINGS.bind(key, impl, on_crash=on_crash, retry=retry)


# ---- admission ------------------------------------------------------------------------------


def _result_desc(spec: ToolSpec, type_args: tuple):
    desc = spec.result
    if type_args:
        desc = _subst(desc, tuple(type_args))
    return desc


def admitter(spec: ToolSpec, type_args: tuple = ()) -> Callable[[Any], Any]:
    """`admit` for one Tool (and, for a generic Tool, one tuple of type arguments): a function
    from an implementation's return value to the outcome, compiled once and kept on the spec."""
    try:
        return spec.admitters[type_args]
    except KeyError:
        pass
    desc = _result_desc(spec, type_args)
    dec = compile_decoder(desc)
    is_result = type(desc) is Named and desc.cls is Result

    def admit_raw(raw):
        try:
            value = dec(raw)
        except DecodeError as e:
            return Err(Malformed(f"{e.path}: {e.message}"))
        if is_result and type(value) is Err:
            return Err(Failed(value._0))
        return value

    spec.admitters[type_args] = admit_raw
    return admit_raw


def admit(spec: ToolSpec, raw: Any, type_args: tuple = ()):
    """Decode an implementation's return value against the declared `Result<T, E>`: `Ok(v)`,
    `Err(Failed(e))` for a declared error, `Err(Malformed("$.path: ..."))` for a misfit."""
    try:
        f = spec.admitters[type_args]
    except KeyError:
        f = admitter(spec, type_args)
    return f(raw)


def _problem_text(e: BaseException) -> str:
    """What an implementation's exception said, as the reason of `Unknown(...)`."""
    try:
        msg = str(e)
    except Exception:  # an exception whose __str__ fails still names its type
        msg = ""
    return unicode_text(f"{type(e).__name__}: {msg}" if msg else type(e).__name__)


def _reason(e) -> str:
    """The reason of a raised `NotRun(reason)`, as recorded Text."""
    r = e._0
    return unicode_text(r if type(r) is str else str(r))


class WholeCall:
    """Base of an implementation that is given the whole call rather than its arguments: the
    Tool's spec, the arguments in JSON form, the concrete type arguments and the CallContext
    (the Tool protocol's clients, flowrt.host.tool_protocol). `serve_call` returns the outcome
    itself (`Ok`/`Err(...)`, admitted by it with `admit`) or PENDING, and never raises."""

    def serve_call(self, spec: ToolSpec, jargs: list, type_args: tuple, context):
        raise NotImplementedError


_SCALARS = frozenset({str, int, bool, type(None)})  # their JSON form is themselves (to_json)


def call_implementation(impl: Callable, spec: ToolSpec, args: tuple, type_args: tuple = (), context=None):
    """Run a sync implementation and admit what it did (the outcome or PENDING). `context` is
    the CallContext `current_call()` returns inside it (or its fields as a tuple), or None."""
    try:
        jargs = [a if type(a) in _SCALARS else to_json(a) for a in args]
    except TypeError as e:
        _keep(context, e)
        return Err(NotRun(f"flowrt could not send the arguments: {e}"))
    if isinstance(impl, WholeCall):
        return impl.serve_call(spec, jargs, type_args, context)
    token = _CURRENT.set(context)
    try:
        raw = impl(*jargs)
    except NotRun as e:
        _keep(context, e)
        return Err(NotRun(_reason(e)))
    except BdbQuit:  # like KeyboardInterrupt and SystemExit, not the Tool's answer: it halts the run
        raise
    except Exception as e:  # the implementation failed: the call may or may not have happened
        _keep(context, e)
        return Err(Unknown(_problem_text(e)))
    finally:
        _CURRENT.reset(token)
    if raw is pending:
        return PENDING
    try:
        f = spec.admitters[type_args]
    except KeyError:
        f = admitter(spec, type_args)
    return f(raw)


async def _call_async(impl, spec, args, type_args, context=None):
    try:
        jargs = [to_json(a) for a in args]
    except TypeError as e:
        _keep(context, e)
        return Err(NotRun(f"flowrt could not send the arguments: {e}"))
    _CURRENT.set(context)  # this job's own context (each asyncio task has a copy)
    try:
        raw = await impl(*jargs)
    except NotRun as e:
        _keep(context, e)
        return Err(NotRun(_reason(e)))
    except BdbQuit:
        raise
    except Exception as e:
        _keep(context, e)
        return Err(Unknown(_problem_text(e)))
    if raw is pending:
        return PENDING
    return admit(spec, raw, type_args)


def is_async(impl: Callable) -> bool:
    return inspect.iscoroutinefunction(impl) or inspect.iscoroutinefunction(getattr(impl, "__call__", None))


# ---- dispatch ---------------------------------------------------------------------------------


def _unanswered(e: BaseException):
    """The completion a worker posts when the implementation raised past admission: KeyboardInterrupt,
    SystemExit or BdbQuit halt the run (the driver raises it again on its own thread); anything
    else is the call's `Unknown`."""
    return Interruption(e) if isinstance(e, INTERRUPTS) else Err(Unknown(_problem_text(e)))


class _Pool:
    """Daemon worker threads taking jobs from one deque; grows while every worker is busy.

    Threads are woken only as needed: a hand-over (a round's calls) wakes one idle worker, and a
    worker that takes a job while more wait wakes (or starts) one more before running it, unless
    one is already on its way. So every job still gets a thread of its own as soon as one can
    reach it (an implementation that blocks never holds the others up), while a round of quick
    calls is taken by the few threads already awake instead of waking one thread a call.
    """

    def __init__(self, max_workers: int = 64):
        self.max_workers = max_workers
        self.jobs: deque = deque()
        self.wake: SimpleQueue = SimpleQueue()  # a token a parked worker waits for
        self.lock = threading.Lock()
        self.threads = 0
        self.idle = 0  # workers parked on `wake` (or started and not yet looking)
        self.waking = 0  # tokens put and not yet taken: workers on their way

    def submit(self, job):
        self.submit_many((job,))

    def submit_many(self, jobs):
        """Queue `jobs` in order (a round's calls, handed over at once) and wake one worker. (A
        worker takes jobs without the lock; it parks only under it, seeing the queue empty.)"""
        with self.lock:
            self.jobs.extend(jobs)
            start = self._another()
        self._go(start)

    def _another(self) -> Optional[bool]:
        """(Under the lock) one more worker should look at the jobs: None when one is already on
        its way or none can be had, False to wake a parked one, True to start a new one."""
        if self.waking:
            return None
        if self.idle:
            self.waking += 1
            return False
        if self.threads < self.max_workers:
            self.threads += 1
            self.idle += 1
            self.waking += 1
            return True
        return None  # every worker is busy: the first to finish takes the next job

    def _go(self, start: Optional[bool]) -> None:
        if start is None:
            return
        if start:
            threading.Thread(target=self._work, name=f"flowrt-tool-{self.threads}", daemon=True).start()
        self.wake.put(None)

    def _work(self):
        jobs, lock, wake = self.jobs, self.lock, self.wake
        while True:
            wake.get()
            with lock:
                self.idle -= 1
                self.waking -= 1
            while True:
                try:
                    completions, call_id, impl, spec, args, type_args, context = jobs.popleft()
                except IndexError:
                    with lock:  # parked only under the lock `submit_many` queues under: no job is missed
                        if jobs:
                            continue
                        self.idle += 1
                    break
                if jobs and not self.waking:  # read unlocked: _another decides under the lock
                    with lock:
                        start = self._another()
                    self._go(start)
                try:
                    outcome = call_implementation(impl, spec, args, type_args, context)
                except BaseException as e:  # never lose a completion, whatever the implementation did
                    outcome = _unanswered(e)
                    if type(outcome) is not Interruption:
                        _keep(context, e)
                completions.put((call_id, outcome))


class _Loop:
    """One asyncio event loop on a daemon thread, for async implementations."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            self.loop.run_forever()

        threading.Thread(target=run, name="flowrt-async-tools", daemon=True).start()
        ready.wait()

    def submit(self, completions, call_id, impl, spec, args, type_args, context=None):
        async def job():
            try:
                outcome = await _call_async(impl, spec, args, type_args, context)
            except BaseException as e:
                outcome = _unanswered(e)
                if type(outcome) is not Interruption:
                    _keep(context, e)
            completions.put((call_id, outcome))

        self.loop.call_soon_threadsafe(self.loop.create_task, job())


_shared_lock = threading.Lock()
_shared_pool: Optional[_Pool] = None
_shared_loop: Optional[_Loop] = None


def _pool() -> _Pool:
    global _shared_pool
    if _shared_pool is None:
        with _shared_lock:
            if _shared_pool is None:
                _shared_pool = _Pool()
    return _shared_pool


def _loop() -> _Loop:
    global _shared_loop
    if _shared_loop is None:
        with _shared_lock:
            if _shared_loop is None:
                _shared_loop = _Loop()
    return _shared_loop


class Dispatcher:
    """Sends one run's calls to their implementations; completions arrive on `completions`.

    The worker pool and the event-loop thread are shared by every run in the process (started on
    first use); each run has its own completion queue. `failures`: call id -> the `CallFailure`
    behind the `Unknown` or `NotRun` its implementation's exception became, put there by whichever
    thread ran it, taken by the driver when it admits the reply (flowrt.engine.calls).
    """

    def __init__(
        self, bindings: Bindings, run_id: Optional[str] = None, store: Any = None, completions: Any = None
    ):
        self.bindings = bindings
        self.run_id, self.store = run_id, store
        self.completions: SimpleQueue = SimpleQueue() if completions is None else completions
        self.failures: dict[str, CallFailure] = {}
        self._async: dict[Callable, bool] = {}
        self._sync: dict[Callable, bool] = {}

    def implementation(self, spec: ToolSpec) -> Optional[Callable]:
        return self.bindings.lookup(spec)

    def is_async(self, impl: Callable) -> bool:
        r = self._async.get(impl)
        if r is None:
            r = self._async[impl] = is_async(impl)
        return r

    def is_sync(self, impl: Callable) -> bool:
        """Not a coroutine function (checked once per implementation)."""
        r = self._sync.get(impl)
        if r is None:
            r = self._sync[impl] = not self.is_async(impl)
        return r

    def context(self, call_id: str) -> CallContext:
        return CallContext(self.run_id, call_id, self.store, self.failures)

    def submit(self, call_id: str, impl: Callable, spec: ToolSpec, args: tuple, type_args: tuple):
        self.submit_many(((call_id, impl, spec, args, type_args),))

    def submit_many(self, calls) -> None:
        """Send several calls, `(call_id, impl, spec, args, type_args)` each, in order: the sync
        ones handed to the worker pool at once (flowrt.engine.record.send: a round's calls)."""
        jobs = []
        run_id, store, failures, completions = self.run_id, self.store, self.failures, self.completions
        kinds: dict = {}  # impl -> (a WholeCall, async): a round's calls mostly share one
        for call_id, impl, spec, args, type_args in calls:
            kind = kinds.get(impl)
            if kind is None:
                kind = kinds[impl] = (isinstance(impl, WholeCall), self.is_async(impl))
            # The context's fields as a tuple (`current_call()` builds the CallContext only if the
            # implementation asks: a frozen dataclass a call cost ~1 µs); a WholeCall gets the object.
            ctx = self.context(call_id) if kind[0] else (run_id, call_id, store, failures)
            if kind[1]:
                _loop().submit(completions, call_id, impl, spec, args, type_args, ctx)
            else:
                jobs.append((completions, call_id, impl, spec, args, type_args, ctx))
        if jobs:
            _pool().submit_many(jobs)

    def run_inline(
        self, impl: Callable, spec: ToolSpec, args: tuple, type_args: tuple, call_id: Optional[str] = None
    ):
        """Run a sync implementation on this thread. `current_call()` inside it still answers;
        the CallContext is built only if it asks (the context variable holds its fields)."""
        ctx = (self.run_id, call_id, self.store, self.failures) if call_id is not None else None
        return call_implementation(impl, spec, args, type_args, ctx)
