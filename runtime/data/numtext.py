"""Decimal text of integers of any size, without touching Python's int/str conversion limit.

Python (3.11+, CVE-2020-10735) refuses `str(n)` and `int(s)` beyond 4,300 digits by default,
process-wide, to protect parsers from quadratic-time input. A Flow Int is unbounded, and a
program may compute `10^5000`: its End, its history text and `int.to_text` must still be
written. Lifting the limit globally (`sys.set_int_max_str_digits(0)`) would also lift it for
every parser in the host process, our own JSON input included; so the limit stays as the host
set it, and these functions convert big values in pieces small enough for any setting (the
smallest limit Python accepts is 640 digits). Input text is bounded separately
(flowrt.data.bounds: at most MAX_DIGITS, 4,300, digits per JSON number).

The split is divide and conquer on powers of ten, as CPython 3.12's `_pylong` does: it costs
what the divisions cost, and only values beyond the limit take it.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["int_text", "int_from_text"]

_CHUNK = 600  # digits converted by one str()/int() call: under the smallest limit Python allows


@lru_cache(maxsize=64)
def _pow10(k: int) -> int:
    return 10**k


def int_text(n: int) -> str:
    """`str(n)` for an int of any size."""
    try:
        return str(n)
    except ValueError:  # beyond the host's int/str conversion limit
        pass
    if n < 0:
        return "-" + int_text(-n)
    width = int(n.bit_length() * 0.30102999566398120) + 1  # log10(2): at most one digit too many
    return _padded(n, width).lstrip("0") or "0"


def _padded(n: int, width: int) -> str:
    """The digits of 0 <= n < 10**width, zero-padded to `width`."""
    if width <= _CHUNK:
        return str(n).zfill(width)
    low = width // 2
    hi, lo = divmod(n, _pow10(low))
    return _padded(hi, width - low) + _padded(lo, low)


def int_from_text(s: str) -> int:
    """`int(s)` for a text of decimal digits (an optional leading `-`) of any length."""
    try:
        return int(s)
    except ValueError:
        if len(s) <= _CHUNK or not s.lstrip("-").isdigit():
            raise
    if s.startswith("-"):
        return -_from_digits(s[1:])
    return _from_digits(s)


def _from_digits(s: str) -> int:
    if len(s) <= _CHUNK:
        return int(s)
    low = len(s) // 2
    return _from_digits(s[:-low]) * _pow10(low) + _from_digits(s[-low:])
