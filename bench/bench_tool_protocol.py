"""Cost of one Tool call over the Tool protocol, side by side: in process (the sync
implementation called through `call_implementation`), over a Python server's stdio, over the
same server's HTTP, and 64 calls in flight at once over one stdio connection (calls per second).

    .venv/bin/python bench/bench_tool_protocol.py [CALLS]

Medians of 5 rounds of CALLS sequential calls (default 300), wall-clock microseconds a call.
The server is tests/flow_programs/tool_protocol/server.py (flowrt.host.tool_server)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time

import flowrt as rt
from flowrt.engine.tools import call_implementation
from flowrt.host.tool_clients import HttpConnection, StdioConnection
from flowrt.host.tool_protocol import RemoteTool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "tests", "flow_programs", "tool_protocol", "server.py")
SPEC = rt.ToolSpec(
    "words::upper", "words.upper", params=("text",), result=rt.T.ResultOf(rt.T.TEXT, rt.T.TEXT)
)


def _per_call(impl, n: int) -> float:
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for i in range(n):
            call_implementation(impl, SPEC, ("abc",), (), ("run", f"root#{i}", None))
        rounds.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(rounds)


def _in_flight(impl, n: int, width: int = 64) -> float:
    def worker(k):
        for i in range(n // width):
            call_implementation(impl, SPEC, ("abc",), (), ("run", f"root#{k}.{i}", None))

    t = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(width)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return (n // width * width) / (time.perf_counter() - t)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    local = _per_call(lambda text: {"Ok": text.upper()}, n)
    stdio = StdioConnection([sys.executable, SERVER, "--dir", "/tmp"])
    http_proc = subprocess.Popen(
        [sys.executable, SERVER, "--http", "--dir", "/tmp"], stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(http_proc.stdout.readline())
        over_stdio = RemoteTool(stdio, "exec:server.py")
        over_http = RemoteTool(HttpConnection(f"http://127.0.0.1:{port}"), "http")
        s, h = _per_call(over_stdio, n), _per_call(over_http, n)
        rate = _in_flight(over_stdio, max(n * 4, 64))
    finally:
        stdio.close()
        http_proc.kill()
    print(f"in process        {local:8.1f} us/call")
    print(f"stdio (python)    {s:8.1f} us/call  ({s / local:.0f}x)")
    print(f"http (python)     {h:8.1f} us/call  ({h / local:.0f}x)")
    print(f"stdio, 64 in flight {rate:8.0f} calls/s")


if __name__ == "__main__":
    main()
