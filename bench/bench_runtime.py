"""Runtime overhead (not a test): python bench/bench_runtime.py

1. Tool call overhead: an effectful tail loop making one Tool call a round (in-memory recorder,
   a sync implementation that answers at once) vs a plain Python loop calling the same function;
   reported in µs per call and as a ratio. Measured with the idle-driver inline path (default)
   and with every call handed to a worker thread (inline=False).
2. Fan-out: 1,000 tasks, each making one Tool call, awaited by the root.
3. A million-round effectful tail loop: time and tracemalloc-free peak RSS growth.
4. Replay of the recorded 100,000-round loop: µs per fact.
"""

import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import flowrt as rt  # noqa: E402
from _driver_progs import echo_loop, fan  # noqa: E402


def impl(x):
    return {"Ok": x}


def bindings():
    b = rt.Bindings()
    b.bind("t.echo", impl)
    return b


def plain_loop(n):
    acc = 0
    while n:
        acc += impl(n)["Ok"]
        n -= 1
    return acc


def best(f, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def tool_call_overhead(n=100_000):
    base = best(lambda: plain_loop(n)) / n
    print(f"plain Python call of the implementation: {base * 1e6:.3f} µs")
    for inline in (True, False):
        t = (
            best(
                lambda: rt.start_run(
                    echo_loop,
                    (n, 0),
                    rt.DriveOptions(
                        recorder=rt.MemoryRecorder(keep=False), bindings=bindings(), inline=inline
                    ),
                ),
                1 if not inline else 3,
            )
            / n
        )
        label = "inline when idle" if inline else "worker thread   "
        print(
            f"Tool call via the driver ({label}): {t * 1e6:.2f} µs a call, "
            f"overhead {(t - base) * 1e6:.2f} µs, ratio {t / base:.0f}x"
        )


def fan_out(n=1000):
    rec = rt.MemoryRecorder()
    t = best(
        lambda: rt.start_run(fan, (n,), rt.DriveOptions(recorder=rt.MemoryRecorder(), bindings=bindings()))
    )
    print(
        f"fan-out of {n} tasks (one Tool call each, on worker threads): {t * 1e3:.1f} ms, "
        f"{t / n * 1e6:.1f} µs a task"
    )
    rt.start_run(fan, (n,), rt.DriveOptions(recorder=rec, bindings=bindings()))
    t = best(lambda: rt.drive(fan, rec.facts, rt.DriveOptions(mode="replay")))
    print(f"replay of the fan-out: {t / len(rec.facts) * 1e6:.1f} µs a fact")


def million_rounds(n=1_000_000):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    out = rt.start_run(
        echo_loop, (n, 0), rt.DriveOptions(recorder=rt.MemoryRecorder(keep=False), bindings=bindings())
    )
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert out == rt.RunCompleted(n * (n + 1) // 2)
    print(
        f"{n:,}-round effectful tail loop: {dt:.1f} s ({dt / n * 1e6:.2f} µs a round), "
        f"peak RSS grew {(after - before) / 1024:.1f} MB"
    )


def replay_speed(n=100_000):
    rec = rt.MemoryRecorder()
    rt.start_run(echo_loop, (n, 0), rt.DriveOptions(recorder=rec, bindings=bindings()))
    t = best(lambda: rt.drive(echo_loop, rec.facts, rt.DriveOptions(mode="replay")))
    print(f"replay of {len(rec.facts):,} facts: {t / len(rec.facts) * 1e6:.2f} µs a fact")


if __name__ == "__main__":
    tool_call_overhead()
    fan_out()
    replay_speed()
    million_rounds()
