"""A binding's options (docs/spec/tools.md "Binding options"): `Retry`, and what a host does with
a call a crash cut (`on_crash`).

`@bind("payments.capture", on_crash="resend", retry=Retry(attempts=3, backoff=0.2, on=(IOError,)))`:

* `retry`: the host calls the implementation again, inside the same call, when it raises one of
  `on` (up to `attempts` attempts in all, waiting `backoff` seconds before the second, twice that
  before the third, ...; or `backoff(n)` seconds before attempt n when it is a function). The
  program sees one call with one Reply: the last attempt's outcome (seed 000: "Retries inside one
  call are invisible"). Each attempt is kept in the host's records when the call runs under a
  store with worker records (`store.worker_records.record_attempt`), never in history.
* `on_crash`: `"unknown"` (the default: a call a crash cut is closed `Err(Unknown(...))`) or
  `"resend"` (a worker recovering the run sends it again under the same call id: for idempotent
  Tools only; seed 000 "A crash while a call is out").
"""

from __future__ import annotations

import functools
import inspect
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

__all__ = ["Retry", "BindOptions", "ON_CRASH", "retrying"]

#: what a binding may say a call a crash cut becomes
ON_CRASH = ("unknown", "resend")


@dataclass(frozen=True)
class Retry:
    """Host-side retries inside one call: `attempts` in all, `backoff` seconds before the second
    (doubled each time after; or a function of the attempt number), on the exception types `on`."""

    attempts: int = 3
    backoff: Union[float, Callable[[int], float]] = 0.1
    on: tuple = (Exception,)

    def __post_init__(self):
        if type(self.attempts) is not int or self.attempts < 1:
            raise ValueError(
                f"Retry(attempts=...) takes a whole number of attempts >= 1, not {self.attempts!r}"
            )
        on = self.on if isinstance(self.on, tuple) else (self.on,)
        if not on or not all(isinstance(t, type) and issubclass(t, Exception) for t in on):
            raise ValueError("Retry(on=...) takes exception types (subclasses of Exception)")
        object.__setattr__(self, "on", on)
        if not callable(self.backoff) and (not isinstance(self.backoff, (int, float)) or self.backoff < 0):
            raise ValueError(f"Retry(backoff=...) takes seconds >= 0 or a function, not {self.backoff!r}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt `attempt` (2, 3, ...)."""
        if callable(self.backoff):
            return max(0.0, float(self.backoff(attempt)))
        return float(self.backoff) * (2 ** (attempt - 2))


@dataclass(frozen=True)
class BindOptions:
    """How a binding asks the host to treat its calls: `on_crash` and `retry` (module docstring)."""

    on_crash: str = "unknown"
    retry: Optional[Retry] = None

    def __post_init__(self):
        if self.on_crash not in ON_CRASH:
            raise ValueError(f"on_crash={self.on_crash!r}: expected one of {', '.join(map(repr, ON_CRASH))}")
        if self.retry is not None and not isinstance(self.retry, Retry):
            raise ValueError(f"retry={self.retry!r}: expected a flowrt.Retry")


DEFAULT_OPTIONS = BindOptions()


def _note(context: Callable[[], Any], attempt: int, started: float, outcome: str) -> None:
    """Keep one attempt in the host's records, when the call runs under a store that has them."""
    ctx = context()
    records = getattr(getattr(ctx, "store", None), "worker_records", None)
    if records is None or ctx.run_id is None:
        return
    try:
        records.record_attempt(ctx.run_id, ctx.call_id, attempt, started, outcome)
    except Exception:  # noqa: BLE001  (a host record: never the call's outcome)
        pass


def _said(e: BaseException) -> str:
    return f"raised {type(e).__name__}: {e}" if str(e) else f"raised {type(e).__name__}"


def retrying(impl: Callable, retry: Retry, context: Callable[[], Any]) -> Callable:
    """`impl` made to retry as `retry` says; `context()` is the call it serves (current_call)."""
    if inspect.iscoroutinefunction(impl) or inspect.iscoroutinefunction(getattr(impl, "__call__", None)):
        import asyncio

        @functools.wraps(impl)
        async def retried_async(*args):
            for n in range(1, retry.attempts + 1):
                if n > 1:
                    await asyncio.sleep(retry.delay(n))
                started = time.time()
                try:
                    out = await impl(*args)
                except retry.on as e:
                    _note(context, n, started, _said(e))
                    if n == retry.attempts:
                        raise
                    continue
                _note(context, n, started, "returned")
                return out

        return retried_async

    @functools.wraps(impl)
    def retried(*args):
        for n in range(1, retry.attempts + 1):
            if n > 1:
                time.sleep(retry.delay(n))
            started = time.time()
            try:
                out = impl(*args)
            except retry.on as e:
                _note(context, n, started, _said(e))
                if n == retry.attempts:
                    raise
                continue
            _note(context, n, started, "returned")
            return out

    return retried
