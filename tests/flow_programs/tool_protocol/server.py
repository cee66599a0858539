"""A Tool server over stdio or HTTP for tests/test_tool_protocol.py.

`python server.py [--http] [--data-version N] [--wrong-signature] [--wrong-if FILE] [--dir DIR]`.
`words.block(marker)` writes its pid to DIR/marker (a FIFO the test reads) and never answers (the test kills it there);
`words.meet` answers once two calls are in at once; `words.seen` answers with the call id it got,
and `pending` the first time it sees an id; `words.get<T>` answers with its type arguments.
"""

import os
import sys
import threading

from flowrt import pending
from flowrt.host.tool_server import ToolServer, current_request, make_http_server, serve_stdio

args = sys.argv[1:]
version = int(args[args.index("--data-version") + 1]) if "--data-version" in args else None
directory = args[args.index("--dir") + 1] if "--dir" in args else "."
server = ToolServer() if version is None else ToolServer(data_version=version)
tool = server.tool
meeting = threading.Barrier(2, timeout=20)


wrong = "--wrong-signature" in args or (
    "--wrong-if" in args and os.path.exists(args[args.index("--wrong-if") + 1])
)


@tool("words.upper", "(text: Int) -> Result<Text, Text>" if wrong else "(text: Text) -> Result<Text, Text>")
def upper(text):
    if text == "refuse":
        return {"Err": "refused"}
    return {"Ok": text.upper()}


@tool("words.block", "(marker: Text) -> Result<Text, Text>")
def block(marker):
    with open(os.path.join(directory, marker), "w") as f:  # a FIFO the test reads: it waits for us
        f.write(str(os.getpid()))
    threading.Event().wait()


@tool("words.meet", "(name: Text) -> Result<Text, Text>")
async def meet(name):
    import asyncio

    await asyncio.get_running_loop().run_in_executor(None, meeting.wait)
    return {"Ok": "met " + name}


@tool("words.seen", "(name: Text) -> Result<Text, Text>")
def seen(name):
    """Pending the first time a call id arrives (DIR/seen.log keeps the ids across processes)."""
    call_id = current_request().id
    log = os.path.join(directory, "seen.log")
    before = open(log).read().split() if os.path.exists(log) else []
    with open(log, "a") as f:
        f.write(call_id + "\n")
    if call_id not in before:
        return pending
    return {"Ok": f"{name} again as {call_id}"}


@tool("words.get", "<$0>(key: Text) -> Result<$0, Text>")
def get(key):
    return {"Ok": 7} if current_request().type_args == ("Int",) else {"Err": "not Int"}


if "--http" in args:
    httpd = make_http_server(server, "127.0.0.1", 0)
    print(httpd.server_address[1], flush=True)  # the test reads the port from this line
    httpd.serve_forever()
else:
    serve_stdio(server)
