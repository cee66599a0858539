"""MCP servers as Tools (docs/spec/abi.md, "MCP servers as Tools"), with the official `mcp` SDK.

`McpConnection(params, label)` holds one MCP client session (a server started over stdio, or a
streamable HTTP URL) on a background thread running its own event loop; the driver's worker
threads call into it. `McpTool(conn, label, tool, timeout)` is a binding of one Flow Tool to one
tool of the server (a `RemoteTool`, so `check_remote` checks it before the run starts): `check`
lists the server's tools and checks the tool's `inputSchema` / `outputSchema` against the Flow
signature (flowrt.host.mcp_schema); `serve_call` sends `tools/call` and turns the answer into the
outcome the program receives.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Optional

from flowrt.data.requests import ToolSpec
from flowrt.data.typedesc import Named, T, type_text
from flowrt.data.values import Err, NotRun, Result, Unknown
from flowrt.engine.tools import admit
from flowrt.host.mcp_schema import OMIT, fields_fit, fits, from_mcp, object_like, resolve, schema_text, to_mcp
from flowrt.host.tool_protocol import RemoteRefused, RemoteTool

__all__ = ["McpConnection", "McpTool", "McpServerTools", "START_TIMEOUT", "stdio_params"]

#: Seconds a server may take to start, answer `initialize` and list its tools.
START_TIMEOUT = 30.0


def stdio_params(argv: list[str], cwd: Optional[str]):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=argv[0], args=list(argv[1:]), cwd=cwd)


def _problem(e: BaseException) -> str:
    """The innermost message of an exception (anyio wraps failures in exception groups)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


_SHARED: dict = {}
_SHARED_LOCK = threading.Lock()


class McpConnection:
    """One MCP server, reached through one client session on a background event loop."""

    def __init__(self, server: Any, label: str):
        self.server, self.label = server, label  # StdioServerParameters, or a streamable HTTP URL
        self.lock = threading.Lock()
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.client = None
        self.tools: Optional[dict] = None  # tool name -> mcp Tool, while a session is open
        self.stop: Optional[asyncio.Event] = None
        self.thread: Optional[threading.Thread] = None
        self.starts = 0

    @classmethod
    def shared(cls, server: Any, label: str, base: str) -> "McpConnection":
        """The process's one connection to this endpoint (`label`) from this directory: binding
        files loaded again (each run of a host, each test) reuse the server already started."""
        key = (label, base)
        with _SHARED_LOCK:
            conn = _SHARED.get(key)
            if conn is None:
                conn = _SHARED[key] = cls(server, label)
            return conn

    @staticmethod
    def _registry() -> dict:
        """The shared connections, by (endpoint, directory)."""
        return _SHARED

    def ensure(self) -> dict:
        """The server's tools by name; starts the session when none is open (RemoteRefused when
        it cannot be opened)."""
        with self.lock:
            if self.tools is not None and self.thread is not None and self.thread.is_alive():
                return self.tools
            ready = threading.Event()
            box: dict = {}
            self.thread = threading.Thread(
                target=self._serve, args=(ready, box), name="flowrt-mcp", daemon=True
            )
            self.starts += 1
            self.thread.start()
            if not ready.wait(START_TIMEOUT):
                raise RemoteRefused(f"{self.label}: the MCP server did not start within {START_TIMEOUT:g} s")
            if "error" in box:
                raise RemoteRefused(f"{self.label}: could not connect to the MCP server: {box['error']}")
            return self.tools

    def _serve(self, ready: threading.Event, box: dict) -> None:
        try:
            asyncio.run(self._session(ready, box))
        except BaseException as e:  # noqa: BLE001  (reported to the caller waiting on `ready`)
            box.setdefault("error", _problem(e))
        finally:
            self.tools = None
            ready.set()

    async def _session(self, ready: threading.Event, box: dict) -> None:
        from mcp import Client

        async with Client(self.server, mode="legacy", cache=None) as client:
            listed, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                listed += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
            self.loop, self.client, self.stop = asyncio.get_running_loop(), client, asyncio.Event()
            self.tools = {t.name: t for t in listed}
            ready.set()
            await self.stop.wait()

    def call(self, name: str, arguments: dict, timeout: Optional[float]):
        """`tools/call`: the CallToolResult; NotRun-worthy problems raise `RemoteRefused` (the
        session could not be opened, nothing was sent), others `TimeoutError` or the SDK's."""
        self.ensure()
        loop, client = self.loop, self.client
        future = asyncio.run_coroutine_threadsafe(client.call_tool(name, arguments), loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def close(self) -> None:
        with self.lock:
            loop, stop, thread = self.loop, self.stop, self.thread
        if loop is not None and stop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(stop.set)
            thread.join(10)


def _result_parts(spec: ToolSpec, type_args: tuple) -> tuple:
    """(the success type, the error type or None) of a Tool's declared result."""
    desc = spec.result
    if type(desc) is Named and desc.cls is Result:
        return desc.args[0], desc.args[1]
    return desc, None


def _param_types(spec: ToolSpec, fn: Any) -> list:
    meta = getattr(fn, "__flow__", None)
    types = None
    if meta is not None:
        types = meta.types() if callable(meta.types) else meta.types
    return list(types) if types else [None] * len(spec.params)


def _wrapped(ok, out: dict, root: dict) -> bool:
    """The SDK's convention: a tool returning a non-object declares `{"result": ...}`."""
    props = out.get("properties")
    return not object_like(ok) and isinstance(props, dict) and set(props) == {"result"}


class McpTool(RemoteTool):
    """A Flow Tool bound to the tool `tool` of an MCP server (None: the Flow Tool's own name)."""

    def __init__(self, conn: McpConnection, label: str, tool: Optional[str], timeout: Optional[float] = None):
        super().__init__(conn, label, timeout)
        self.tool = tool
        self.shapes: dict = {}  # tool id -> (param types, input schema, output schema or None)

    def _name(self, spec: ToolSpec) -> str:
        return self.tool or spec.name.rsplit(".", 1)[-1]

    def check(self, spec: ToolSpec, fn: Any = None) -> None:
        """Refuse (RemoteRefused) unless the server has the tool with schemas fitting `spec`."""
        tools = self.conn.ensure()
        name = self._name(spec)
        found = tools.get(name)
        who = f"{spec.name} [{spec.tool_id}] is bound to {self.label}"
        if found is None:
            raise RemoteRefused(
                f"{who}, which has no tool {name!r} (it has {', '.join(sorted(tools)) or 'none'})"
            )
        if spec.type_params:
            raise RemoteRefused(f"{who}: a generic Tool cannot be bound to one MCP tool")
        types = _param_types(spec, fn)
        params = dict(zip(spec.params, [t if t is not None else T.TEXT for t in types]))
        inp = found.input_schema or {}
        props = inp.get("properties") if isinstance(inp.get("properties"), dict) else {}
        problem = fields_fit(params, props, set(inp.get("required") or ()), inp, "in", "$", spec.name)
        ok, _err = _result_parts(spec, ())
        out = found.output_schema
        if problem is None and out:
            schema = out["properties"]["result"] if _wrapped(ok, out, out) else out
            problem = fits(ok, schema, out, "out", "$result")
        if problem is not None:
            raise RemoteRefused(
                f"{who}: {problem} (the MCP tool is {name}{schema_text(inp, inp)}"
                + (f" -> {schema_text(out, out)}" if out else "")
                + f", the declaration {_signature(spec, types)})"
            )
        self.shapes[spec.tool_id] = (types, inp, out)
        self.checked[spec.tool_id] = (self.conn.starts, fn)

    def serve_call(self, spec: ToolSpec, jargs: list, type_args: tuple, context):
        try:
            self._recheck(spec)
            if spec.tool_id not in self.shapes:
                self.check(spec, None)
        except RemoteRefused as e:
            return Err(NotRun(str(e)))
        types, inp, out = self.shapes[spec.tool_id]
        props = inp.get("properties") or {}
        arguments = {}
        for name, d, v in zip(spec.params, types, jargs):
            x = to_mcp(d, v, props.get(name), inp)
            if x is OMIT:
                if name in (inp.get("required") or ()):
                    x = None
                else:
                    continue
            arguments[name] = x
        try:
            result = self.conn.call(self._name(spec), arguments, self.timeout)
        except RemoteRefused as e:
            return Err(NotRun(str(e)))
        except TimeoutError:
            return Err(Unknown(f"{self.label} gave no answer within {self.timeout:g} s"))
        except (Exception, asyncio.CancelledError) as e:  # the call was sent: it may have happened
            return Err(Unknown(f"{self.label}: the call was out when it failed: {_problem(e)}"))
        return self._outcome(spec, result, out)

    def _outcome(self, spec: ToolSpec, result, out: Optional[dict]):
        ok, err = _result_parts(spec, ())
        text = "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
        if result.is_error:
            message = text or "the MCP tool answered isError with no text"
            if err is not None and getattr(err, "name", None) == "Text":
                return admit(spec, {"Err": message})
            return Err(Unknown(f"{self.label}: the tool {self._name(spec)!r} failed: {message}"))
        if out and result.structured_content is not None:
            value = result.structured_content
            if _wrapped(ok, resolve(out, out), out) and isinstance(value, dict):
                value = value.get("result")
        elif getattr(ok, "name", None) == "Text":
            value = text
        else:
            try:
                value = json.loads(text)
            except ValueError:
                return admit(spec, _ok(err, from_mcp(ok, text)))
        return admit(spec, _ok(err, from_mcp(ok, value)))


def _ok(err, value):
    return {"Ok": value} if err is not None else value


def _signature(spec: ToolSpec, types: list) -> str:
    params = ", ".join(f"{p}: {type_text(t) if t is not None else '?'}" for p, t in zip(spec.params, types))
    return f"{spec.name}({params}) -> {type_text(spec.result)}"


def _is_value(desc) -> bool:
    from flowrt.data.jsonvalue import Value

    return type(desc) is Named and desc.cls is Value


class McpServerTools(McpTool):
    """`mcp+...#*`: every tool of the server through one generic Flow Tool carrying json.Value:
    `(tool: Text, args: json.Value) -> Result<json.Value, E>` calls the tool named by its first
    argument; `() -> Result<json.Value, E>` lists the server's tools."""

    def __init__(self, conn: McpConnection, label: str, timeout: Optional[float] = None):
        super().__init__(conn, label, None, timeout)

    def check(self, spec: ToolSpec, fn: Any = None) -> None:
        types = _param_types(spec, fn)
        ok, _err = _result_parts(spec, ())
        calls = len(types) == 2 and getattr(types[0], "name", None) == "Text" and _is_value(types[1])
        if spec.type_params or not (calls or not types) or not _is_value(ok):
            raise RemoteRefused(
                f"{spec.name} [{spec.tool_id}] is bound to {self.label}, which serves "
                f"(tool: Text, args: json.Value) -> Result<json.Value, E> or () -> Result<json.Value, E>; "
                f"the declaration is {_signature(spec, types)}"
            )
        self.conn.ensure()
        self.shapes[spec.tool_id] = (types, {}, None)
        self.checked[spec.tool_id] = (self.conn.starts, fn)

    def serve_call(self, spec: ToolSpec, jargs: list, type_args: tuple, context):
        try:
            self._recheck(spec)
            if spec.tool_id not in self.shapes:
                self.check(spec, None)
            tools = self.conn.ensure()
        except RemoteRefused as e:
            return Err(NotRun(str(e)))
        _ok_type, err = _result_parts(spec, ())
        if not jargs:
            return admit(spec, _ok(err, [_listed(t) for t in tools.values()]))
        name, arguments = jargs
        if name not in tools:
            return Err(
                NotRun(f"{self.label} has no tool {name!r} (it has {', '.join(sorted(tools)) or 'none'})")
            )
        if not isinstance(arguments, dict):
            return Err(NotRun(f"{self.label}: the arguments of {name!r} must be a JSON object"))
        try:
            result = self.conn.call(name, arguments, self.timeout)
        except RemoteRefused as e:
            return Err(NotRun(str(e)))
        except TimeoutError:
            return Err(Unknown(f"{self.label} gave no answer within {self.timeout:g} s"))
        except (Exception, asyncio.CancelledError) as e:  # the call was sent: it may have happened
            return Err(Unknown(f"{self.label}: the call was out when it failed: {_problem(e)}"))
        text = "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
        if result.is_error:
            message = text or "the MCP tool answered isError with no text"
            if err is not None and getattr(err, "name", None) == "Text":
                return admit(spec, {"Err": message})
            return Err(Unknown(f"{self.label}: the tool {name!r} failed: {message}"))
        if result.structured_content is not None:
            return admit(spec, _ok(err, result.structured_content))
        try:
            return admit(spec, _ok(err, json.loads(text)))
        except ValueError:
            return admit(spec, _ok(err, text))


def _listed(tool) -> dict:
    """A listed tool as JSON: name, description, inputSchema (and outputSchema if it has one)."""
    out = {"name": tool.name, "description": tool.description or "", "inputSchema": tool.input_schema or {}}
    if tool.output_schema:
        out["outputSchema"] = tool.output_schema
    return out
