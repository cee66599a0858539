"""The Tool protocol, server side: write Tools as a separate service in Python
(docs/spec/abi.md, "Tool protocol").

```python
from flowrt.host.tool_server import tool, serve_stdio

@tool("planner.next", "(ticket: Text, notes: List<Text>) -> Result<Action, Text>")
def next_step(ticket, notes):          # sync or async; arguments in JSON form
    return {"Ok": {"Search": ticket}}

serve_stdio()                          # or serve_http(host="127.0.0.1", port=8765)
```

A function returns the declared result in JSON form (or as flowrt values), raises
`flowrt.NotRun(reason)` when the call definitely did not happen, raises anything else (the answer
is `unknown` with the exception's text) or returns `flowrt.pending` (the call stays open).
`current_request()` inside it is the call being served (its id: a re-send carries the same one).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

from flowrt.data.typedesc import to_json
from flowrt.data.values import NotRun
from flowrt.engine.tools import pending
from flowrt.history.trace import DATA_VERSION
from flowrt.host.tool_protocol import PROTOCOL, encode_line

__all__ = [
    "ToolServer",
    "Request",
    "TOOLS",
    "tool",
    "current_request",
    "parse_signature",
    "serve_stdio",
    "serve_http",
    "make_http_server",
]


@dataclass(frozen=True)
class Request:
    """The call a Tool function is serving."""

    id: Optional[str]
    run: Optional[str]
    tool_id: Optional[str]
    tool: Optional[str]
    type_args: tuple


_REQUEST: contextvars.ContextVar = contextvars.ContextVar("flowrt_tool_request", default=None)


def current_request() -> Optional[Request]:
    return _REQUEST.get()


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside <...> and (...)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_signature(text: str) -> dict:
    """`<$0>(key: Text, n: Int) -> Result<$0, Text>` (names optional) as the protocol's
    `{"type_params", "params", "result"}`."""
    s = text.strip()
    tps = 0
    if s.startswith("<"):
        close = s.index(">")
        tps = len(_split_top(s[1:close]))
        s = s[close + 1 :].strip()
    if not s.startswith("(") or "->" not in s:
        raise ValueError(f"{text!r}: not a signature like (query: Text) -> Result<Text, Text>")
    depth, end = 0, None
    for i, ch in enumerate(s):
        depth += ch in "<("
        depth -= ch in ">)"
        if depth == 0:
            end = i
            break
    params = [p.split(":", 1)[1].strip() if ":" in p else p for p in _split_top(s[1:end])]
    rest = s[end + 1 :].strip()
    if not rest.startswith("->"):
        raise ValueError(f"{text!r}: expected -> after the parameters")
    return {"type_params": tps, "params": params, "result": rest[2:].strip()}


def _plain(v: Any) -> Any:
    """A result in JSON form: plain JSON stays, flowrt values are written by `to_json`."""
    t = type(v)
    if t in (str, int, bool, float) or v is None:
        return v
    if t is dict:
        return {str(k): _plain(x) for k, x in v.items()}
    if t is list:
        return [_plain(x) for x in v]
    return to_json(v)


class ToolServer:
    """The Tools one server serves, by qualified name (and declaration identity when given)."""

    def __init__(self, data_version: int = DATA_VERSION):
        self.data_version = data_version
        self.tools: dict[str, tuple[Callable, dict]] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._lock = threading.Lock()

    def tool(self, name: str, signature: str, *, tool_id: Optional[str] = None):
        """`@server.tool("planner.next", "(ticket: Text) -> Result<Text, Text>")`."""
        sig = parse_signature(signature)

        def register(f):
            entry = {"tool": name, **({"tool_id": tool_id} if tool_id else {}), **sig}
            self.tools[name] = (f, entry)
            if tool_id:
                self.tools[tool_id] = (f, entry)
            return f

        return register

    def hello(self) -> dict:
        entries = {id(e): e for _, e in self.tools.values()}
        return {
            "type": "hello",
            "protocol": PROTOCOL,
            "data_version": self.data_version,
            "tools": list(entries.values()),
        }

    def _async_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="tool-server-async", daemon=True).start()
                self._loop = loop
            return self._loop

    def handle(self, msg: Any) -> dict:
        """The answer to one message (a hello or a call); never raises."""
        if not isinstance(msg, dict):
            return {"type": "unknown", "id": None, "reason": "the message is not a JSON object"}
        if msg.get("type") == "hello":
            return self.hello()
        call_id = msg.get("id")
        if msg.get("type") != "call":
            return {"type": "not_run", "id": call_id, "reason": f"unknown message type {msg.get('type')!r}"}
        found = self.tools.get(msg.get("tool_id")) or self.tools.get(msg.get("tool"))
        if found is None:
            return {
                "type": "not_run",
                "id": call_id,
                "reason": f"this server does not serve {msg.get('tool')!r}",
            }
        f = found[0]
        req = Request(
            call_id, msg.get("run"), msg.get("tool_id"), msg.get("tool"), tuple(msg.get("type_args") or ())
        )
        args = msg.get("args") or []
        try:
            raw = self._run(f, req, args)
            if raw is pending:
                return {"type": "pending", "id": call_id}
            result = _plain(raw)
            return {"type": "result", "id": call_id, "result": result}
        except NotRun as e:
            return {"type": "not_run", "id": call_id, "reason": str(e._0)}
        except Exception as e:  # noqa: BLE001  (the Tool's failure is the call's unknown outcome)
            text = str(e)
            return {
                "type": "unknown",
                "id": call_id,
                "reason": f"{type(e).__name__}: {text}" if text else type(e).__name__,
            }

    def _run(self, f: Callable, req: Request, args: list):
        if inspect.iscoroutinefunction(f):

            async def job():
                _REQUEST.set(req)
                return await f(*args)

            return asyncio.run_coroutine_threadsafe(job(), self._async_loop()).result()
        token = _REQUEST.set(req)
        try:
            return f(*args)
        finally:
            _REQUEST.reset(token)


#: The default server `tool` registers in and `serve_stdio()` / `serve_http()` serve.
TOOLS = ToolServer()
tool = TOOLS.tool


def serve_stdio(tools: Optional[ToolServer] = None, stdin=None, stdout=None) -> None:
    """Serve newline-delimited JSON on stdin/stdout until stdin closes; each call on its own
    thread, so many calls are in flight at once."""
    server = tools or TOOLS
    rd = stdin or sys.stdin.buffer
    out = stdout or sys.stdout.buffer
    write_lock = threading.Lock()

    def send(answer: dict) -> None:
        with write_lock:
            out.write(encode_line(answer))
            out.flush()

    def serve(msg) -> None:
        send(server.handle(msg))

    for line in rd:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            send({"type": "unknown", "id": None, "reason": "the line is not JSON"})
            continue
        if isinstance(msg, dict) and msg.get("type") == "hello":
            send(server.hello())
        else:
            threading.Thread(target=serve, args=(msg,), daemon=True).start()


def make_http_server(
    tools: Optional[ToolServer] = None, host: str = "127.0.0.1", port: int = 0
) -> ThreadingHTTPServer:
    """An HTTP server (not started: call `serve_forever()`) answering `POST /hello` and
    `POST /call`; port 0 picks a free one (`server.server_address`)."""
    server = tools or TOOLS

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802  (http.server's name)
            if self.path.rstrip("/") not in ("/hello", "/call"):
                return self._send(404, {"error": f"no such endpoint {self.path}"})
            try:
                n = int(self.headers.get("Content-Length") or 0)
                msg = json.loads(self.rfile.read(n))
            except ValueError:
                return self._send(400, {"error": "the body is not JSON"})
            self._send(200, server.hello() if self.path.rstrip("/") == "/hello" else server.handle(msg))

        def _send(self, status: int, body: dict):
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # quiet: a Tool server's log is its own business
            pass

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    return httpd


def serve_http(tools: Optional[ToolServer] = None, host: str = "127.0.0.1", port: int = 8765) -> None:
    make_http_server(tools, host, port).serve_forever()
