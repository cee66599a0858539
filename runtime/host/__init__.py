"""flowrt.host, floor 4 of the runtime: the host operations on runs (docs/spec/abi.md, "Running
a built package from a host application").

operations (start, resume, replay, history, verify: `Host`, `Report`, `Refused`), forks (a run
continued from a checkpoint on a newer program), nested (a Flow program bound as a Tool), runs_view
(what an operator is shown of runs: open calls with their reply types, the runs listing, progress),
client (`Client`, `RunHandle`: runs handed to a worker; `Host` here is operations' with run
handles), http_api (the worker's HTTP API; imported only by who serves it, it needs Starlette),
bundles (programs submitted as module texts, compiled through the installed compiler).
`from flowrt.host import Host` keeps working: the names below are the public face.

Floors, lowest first: data < history < engine < host. The host may import every floor below;
nothing in flowrt's floors imports it (tests/test_layering.py).
"""

from flowrt.host.operations import CRASH_REASON, Refused, Report, Runnable
from flowrt.host.client import Client, Host, RunFaultedError, RunHaltedError, RunHandle

__all__ = [
    "Host",
    "Refused",
    "Report",
    "Runnable",
    "CRASH_REASON",
    "Client",
    "RunHandle",
    "RunFaultedError",
    "RunHaltedError",
]
