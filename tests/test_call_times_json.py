"""The `times` column the recorder writes (flowrt.history.recorder._times_json): what json.dumps
would write for the entries, except that a time kept as time.time_ns() is written as its
nanoseconds with an exponent, which every JSON reader reads as the same POSIX seconds."""

from __future__ import annotations

import json
import random

from flowrt.history.host_records import _time_entry
from flowrt.history.recorder import _times_json

_rnd = random.Random(7)


def _entries(k: int) -> dict:
    out = {}
    for i in range(k):
        cid = _rnd.choice(["root#1", f"root/{i}#2", 'c1:"q"\\é😀\u0000'])
        ns = lambda: _rnd.choice([None, 0, 1, 999, 1_764_644_000_123_456_789, _rnd.randrange(2**62)])  # noqa: E731
        out[f"{cid}{i}"] = [
            f"{cid}{i}",
            ns(),
            ns(),
            _rnd.choice([None, "main", "a/b", "é"]),
            _rnd.choice([None, 1, 21]),
        ]
    return out


def test_a_times_row_reads_back_as_its_entries_with_the_times_in_seconds():
    for k in (0, 1, 2, 100):
        times = _entries(k)
        text = _times_json(times)
        got = json.loads(text)
        assert len(got) == k
        for e, want in zip(got, times.values()):
            assert _time_entry(e), e
            assert e[0] == want[0] and e[3:] == want[3:]
            for t, ns in zip(e[1:3], want[1:3]):
                assert (t is None) == (ns is None)
                if ns is not None:
                    assert type(t) is float and abs(t - ns / 1e9) <= 1e-6 * max(1.0, ns / 1e9 / 1e9)


def test_a_times_row_without_times_is_what_json_dumps_writes():
    times = {e[0]: [e[0], None, None, e[3], e[4]] for e in _entries(30).values()}
    assert _times_json(times) == json.dumps(list(times.values()), separators=(",", ":"))
