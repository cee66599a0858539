"""Binding options (flowrt.engine.retry, docs/spec/tools.md "Binding options"): `on_crash` and
`retry=flowrt.Retry(...)`, checked when bound; retries inside one call, sync and async."""

from __future__ import annotations

import asyncio

import pytest

import flowrt as rt
from flowrt.data.requests import ToolSpec
from flowrt.engine.retry import retrying


def test_retry_waits_backoff_then_twice_as_long_each_time():
    r = rt.Retry(attempts=4, backoff=0.5)
    assert [r.delay(n) for n in (2, 3, 4)] == [0.5, 1.0, 2.0]
    assert rt.Retry(backoff=lambda n: n * 10).delay(3) == 30


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(attempts=0), "attempts"),
        (dict(attempts=1.5), "attempts"),
        (dict(on=(KeyboardInterrupt,)), "exception types"),
        (dict(on=()), "exception types"),
        (dict(backoff=-1), "backoff"),
    ],
)
def test_a_retry_that_makes_no_sense_is_refused_when_written(kw, message):
    with pytest.raises(ValueError, match=message):
        rt.Retry(**kw)


def test_on_crash_takes_unknown_or_resend_only():
    with pytest.raises(ValueError, match="on_crash='again'"):
        rt.Bindings().bind("svc.step", lambda n: n, on_crash="again")


def test_binding_options_are_found_by_identity_or_name_and_follow_update():
    spec = ToolSpec("svc::step", "svc.step")
    a = rt.Bindings()
    a.bind("svc.step", lambda n: n, on_crash="resend")
    assert a.options(spec).on_crash == "resend"
    b = rt.Bindings()
    b.bind("svc::step", lambda n: n)
    assert b.options(spec).on_crash == "unknown"
    assert rt.Bindings().update(a).options(spec).on_crash == "resend"
    a.bind("svc.step", lambda n: n)  # bound again without options: the default
    assert a.options(spec).on_crash == "unknown"


def test_a_sync_implementation_is_retried_only_on_the_exceptions_named():
    calls = []

    def impl(n):
        calls.append(n)
        raise ValueError("no") if len(calls) == 1 else KeyError("other")

    f = retrying(impl, rt.Retry(attempts=5, backoff=0, on=(ValueError,)), lambda: None)
    with pytest.raises(KeyError):
        f(1)
    assert calls == [1, 1]


def test_the_last_attempts_exception_is_the_calls_outcome():
    f = retrying(lambda n: 1 / 0, rt.Retry(attempts=2, backoff=0, on=(ZeroDivisionError,)), lambda: None)
    with pytest.raises(ZeroDivisionError):
        f(1)


def test_an_async_implementation_is_retried_as_a_coroutine():
    calls = []

    async def impl(n):
        calls.append(n)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return {"Ok": n}

    f = retrying(impl, rt.Retry(attempts=3, backoff=0, on=(ConnectionError,)), lambda: None)
    assert asyncio.iscoroutinefunction(f)
    assert asyncio.run(f(7)) == {"Ok": 7} and calls == [7, 7, 7]
