"""Checked operations generated code calls (docs/spec/abi.md "Faults", "Values").

Int is Python's unbounded int. Division is floor division and the remainder takes the divisor's
sign (Python's `//` and `%`, as std/int.flow documents): `-7 / 2 == -4`, `-7 % 2 == 1`; by zero is
a fault.

Decimal `+ - *` never round: they run under `DECIMAL_CONTEXT` (maximal precision and exponent
range, every rounding signal trapped). `/` is the one rounding operation, as std/decimal.flow
documents: the quotient rounded to 28 significant digits, half to even (exact whenever the exact
quotient fits in 28 digits: `1.00 / 4 == 0.25`); by zero is a fault. Generated code calls
`dec_add` &c. (not `+`, whose Python meaning depends on the thread's current decimal context).
"""

from __future__ import annotations

import contextvars
import functools

import decimal
from decimal import Decimal

from flowrt.data.values import Duration

__all__ = [
    "Fault",
    "DECIMAL_CONTEXT",
    "DIV_CONTEXT",
    "int_div",
    "int_rem",
    "test_eq",
    "FALSE_EQ",
    "int_pow",
    "dec_add",
    "dec_sub",
    "dec_mul",
    "dec_div",
    "dec_neg",
    "dec_from_int",
    "dur_div",
    "text_at",
    "text_slice",
    "Tail",
    "bouncing",
]


class Tail:
    """`return rt.Tail(f, args)`: a pure tail call through a function value (or to a function that
    makes one), handed back to the trampoline of `bouncing` instead of growing Python's stack.
    Only functions `bouncing` wraps ever return one."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, args):
        self.fn = fn
        self.args = args


def bouncing(raw):
    """Wrap a pure function that may return `Tail`: calling the wrapper runs every tail call in one
    loop, so a chain of pure tail calls through function values (continuation-passing code, a
    callback calling the next callback) runs in constant stack. A `Tail` whose function is itself
    a wrapper calls the raw function inside (`__flow_inner__`), staying in the same loop."""

    def run(*args):
        r = raw(*args)
        while type(r) is Tail:
            f = r.fn
            r = getattr(f, "__flow_inner__", f)(*r.args)
        return r

    functools.update_wrapper(run, raw)  # keeps __name__, and __flow__ metadata for rt.fn
    run.__flow_inner__ = raw
    return run


class Fault(Exception):
    """An operation with no sensible answer: the run ends faulted (the driver adds the location)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


DECIMAL_CONTEXT = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    rounding=decimal.ROUND_HALF_EVEN,
    traps=[
        decimal.InvalidOperation,
        decimal.DivisionByZero,
        decimal.Overflow,
        decimal.Inexact,
        decimal.Rounded,
        decimal.Clamped,
    ],
)


def int_div(a: int, b: int) -> int:
    if b == 0:
        raise Fault("integer division by zero")
    return a // b


def int_rem(a: int, b: int) -> int:
    if b == 0:
        raise Fault("integer remainder by zero")
    return a % b


#: the two sides of the last `==` that ended a `@test` body and was false (flow2py.testing
#: shows them; set on the driver's thread, which runs the test's root task)
FALSE_EQ: contextvars.ContextVar = contextvars.ContextVar("flowrt_false_eq", default=None)


def test_eq(left, right) -> bool:
    """`left == right` as the last expression of a `@test` body: the same answer as `==`, and
    when it is false both sides are kept in FALSE_EQ for the test's failure message."""
    same = left == right
    if not same:
        FALSE_EQ.set((left, right))
    return same


def int_pow(a: int, b: int) -> int:
    if b < 0:
        raise Fault("negative integer exponent")
    return a**b


def dec_add(a: Decimal, b: Decimal) -> Decimal:
    return DECIMAL_CONTEXT.add(a, b)


def dec_sub(a: Decimal, b: Decimal) -> Decimal:
    return DECIMAL_CONTEXT.subtract(a, b)


def dec_mul(a: Decimal, b: Decimal) -> Decimal:
    return DECIMAL_CONTEXT.multiply(a, b)


def dec_neg(a: Decimal) -> Decimal:
    return DECIMAL_CONTEXT.minus(a)


def dec_from_int(i: int) -> Decimal:
    return Decimal(i)


DIV_CONTEXT = decimal.Context(
    prec=28,
    rounding=decimal.ROUND_HALF_EVEN,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
)


def dec_div(a: Decimal, b: Decimal) -> Decimal:
    """`a / b` rounded to 28 significant digits, half to even (Python's ideal exponent when exact:
    `1.00 / 4 == 0.25`, `3.0 / 1 == 3.0`)."""
    if not b:
        raise Fault("decimal division by zero")
    return DIV_CONTEXT.divide(a, b)


def dur_div(d: Duration, k: int) -> Duration:
    """A Duration divided by an Int, truncated toward zero like Int division."""
    return Duration(int_div(d.nanos, k))


def text_at(s: str, i: int) -> str:
    """The code point at index i (a one-code-point Text); out of range is a fault."""
    if 0 <= i < len(s):
        return s[i]
    raise Fault(f"text index {i} out of range for length {len(s)}")


def text_slice(s: str, start: int, end: int) -> str:
    """Code points [start, end), clamped to the text."""
    n = len(s)
    start = min(max(start, 0), n)
    end = min(max(end, start), n)
    return s[start:end]
