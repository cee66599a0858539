"""The Tool protocol, host side: messages, signatures, and the implementation the Bindings call
(docs/spec/abi.md, "Tool protocol").

A `RemoteTool` is an ordinary implementation (a `flowrt.engine.tools.WholeCall`): the driver calls
it on a worker thread like any sync implementation; it sends one `call` message over its
connection (flowrt.host.tool_clients: a subprocess's stdio, or HTTP) and turns the answer into the
outcome the program receives. `check_remote(bindings, runnable, reachable)` runs the hello
exchange of every connection a run's reachable Tools use and checks each served signature against
its declaration, before anything is recorded; a mismatch is a `RemoteRefused` naming both.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Optional

from flowrt.data.requests import ToolSpec
from flowrt.data.typedesc import type_text
from flowrt.data.values import Err, NotRun, Unknown
from flowrt.engine.tools import PENDING, CallContext, WholeCall, admit
from flowrt.history.trace import DATA_VERSION

__all__ = [
    "PROTOCOL",
    "RemoteRefused",
    "NotSent",
    "Lost",
    "RemoteTool",
    "hello_message",
    "check_hello",
    "declared_signature",
    "signature_text",
    "check_remote",
    "answer_outcome",
    "encode_line",
]

#: The protocol's name and version, sent in both hello messages.
PROTOCOL = "flow-tools/1"


class RemoteRefused(Exception):
    """The binding or the run is refused before it starts (data version, signature, no server)."""


class NotSent(Exception):
    """The call provably never reached the server (it becomes `NotRun(reason)`)."""


class Lost(Exception):
    """The call was sent and no answer can come (it becomes `Unknown(reason)`)."""


def encode_line(message: dict) -> bytes:
    """One message as a line of UTF-8 JSON (no raw newline can occur inside: JSON escapes it)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def hello_message() -> dict:
    return {"type": "hello", "protocol": PROTOCOL, "data_version": DATA_VERSION}


def check_hello(answer: Any, where: str) -> dict:
    """The served Tools of a hello answer, by declaration identity and by qualified name; a
    refusal (`RemoteRefused`) for a wrong protocol, a data-version mismatch or a bad shape."""
    if not isinstance(answer, dict):
        raise RemoteRefused(f"{where}: the hello answer is not a JSON object")
    if answer.get("type") == "refused":
        raise RemoteRefused(f"{where}: the tool server refused the binding: {answer.get('reason')}")
    if answer.get("type") != "hello" or answer.get("protocol") != PROTOCOL:
        raise RemoteRefused(
            f"{where}: the tool server does not speak {PROTOCOL} "
            f"(its hello says type {answer.get('type')!r}, protocol {answer.get('protocol')!r})"
        )
    version = answer.get("data_version")
    if version != DATA_VERSION:
        raise RemoteRefused(
            f"{where}: the tool server speaks data version {version!r}, this flowrt data version "
            f"{DATA_VERSION}; the binding is refused"
        )
    tools = answer.get("tools")
    if not isinstance(tools, list):
        raise RemoteRefused(f"{where}: the hello answer has no list of tools")
    served: dict = {}
    for t in tools:
        if (
            not isinstance(t, dict)
            or not isinstance(t.get("params"), list)
            or not isinstance(t.get("result"), str)
        ):
            raise RemoteRefused(f"{where}: a served tool is not {{tool, params, result}}: {t!r}")
        for key in (t.get("tool_id"), t.get("tool")):
            if isinstance(key, str):
                served[key] = t
    return served


def declared_signature(spec: ToolSpec, fn: Any = None) -> dict:
    """The declaration's signature in the protocol's form: parameter and result type texts
    (`rt.type_text`; a generic Tool's type parameters are `$0`, `$1`, ...)."""
    types = None
    meta = getattr(fn, "__flow__", None)
    if meta is not None:
        types = meta.types() if callable(meta.types) else meta.types
    params = [type_text(t) if t is not None else "?" for t in types] if types else ["?"] * len(spec.params)
    return {"type_params": spec.type_params, "params": params, "result": type_text(spec.result)}


def _norm(text: Any) -> str:
    return "".join(str(text).split())


def signature_text(sig: dict) -> str:
    tps = int(sig.get("type_params") or 0)
    head = f"<{', '.join(f'${i}' for i in range(tps))}>" if tps else ""
    return f"{head}({', '.join(str(p) for p in sig.get('params', []))}) -> {sig.get('result')}"


def fits(served: dict, declared: dict) -> bool:
    return (
        int(served.get("type_params") or 0) == declared["type_params"]
        and [_norm(p) for p in served["params"]] == [_norm(p) for p in declared["params"]]
        and _norm(served["result"]) == _norm(declared["result"])
    )


def answer_outcome(answer: Any, spec: ToolSpec, type_args: tuple, where: str):
    """The outcome the program receives for one answer message (or PENDING)."""
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind == "result" and "result" in answer:
        return admit(spec, answer["result"], type_args)
    if kind == "pending":
        return PENDING
    reason = answer.get("reason") if isinstance(answer, dict) else None
    reason = reason if isinstance(reason, str) else json.dumps(reason)
    if kind == "not_run":
        return Err(NotRun(reason))
    if kind == "unknown":
        return Err(Unknown(reason))
    return Err(Unknown(f"{where} answered with no outcome: {json.dumps(answer)[:200]}"))


def _context_fields(context) -> tuple:
    if context is None:
        return None, None
    if isinstance(context, CallContext):
        return context.run_id, context.call_id
    return context[0], context[1]


class RemoteTool(WholeCall):
    """The implementation of Tools served over one connection (`conn`: flowrt.host.tool_clients).

    `key` is the binding's key (qualified name or declaration identity), `label` how the binding
    file wrote the target (`exec:node server.js`), `timeout` the seconds an answer may take."""

    def __init__(self, conn, label: str, timeout: Optional[float] = None):
        self.conn, self.label, self.timeout = conn, label, timeout
        #: tool id -> (the connection's process generation it was checked on, the Tool's function)
        self.checked: dict = {}

    def __repr__(self):
        return f"RemoteTool({self.label!r})"

    def __call__(self, *args):
        raise TypeError(f"{self.label}: a Tool protocol binding is called by the runtime, with its spec")

    def check(self, spec: ToolSpec, fn: Any = None) -> None:
        """Refuse (RemoteRefused) unless the server serves `spec` with a fitting signature."""
        served = self.conn.ensure()
        mine = served.get(spec.tool_id) or served.get(spec.name)
        if mine is None:
            raise RemoteRefused(
                f"{spec.name} [{spec.tool_id}] is bound to {self.label}, which does not serve it "
                f"(it serves {', '.join(sorted({t.get('tool') or t.get('tool_id') for t in served.values()}))})"
            )
        declared = declared_signature(spec, fn)
        if not fits(mine, declared):
            raise RemoteRefused(
                f"{spec.name} [{spec.tool_id}]: {self.label} serves {signature_text(mine)}, "
                f"the declaration is {signature_text(declared)}"
            )
        self.checked[spec.tool_id] = (getattr(self.conn, "starts", 0), fn)

    def _recheck(self, spec: ToolSpec) -> None:
        """A process started again since the check is checked again before a call is sent."""
        seen = self.checked.get(spec.tool_id)
        if seen is None:
            return
        self.conn.ensure()
        if getattr(self.conn, "starts", 0) != seen[0]:
            self.check(spec, seen[1])

    def serve_call(self, spec: ToolSpec, jargs: list, type_args: tuple, context):
        run_id, call_id = _context_fields(context)
        message = {
            "type": "call",
            "id": call_id,
            "run": run_id,
            "tool_id": spec.tool_id,
            "tool": spec.name,
            "type_args": [type_text(t) for t in type_args],
            "args": list(jargs),
        }
        try:
            self._recheck(spec)
        except RemoteRefused as e:  # the server started again no longer fits: nothing was sent
            return Err(NotRun(str(e)))
        try:
            answer = self.conn.call(message, self.timeout)
        except NotSent as e:
            return Err(NotRun(str(e)))
        except Lost as e:
            return Err(Unknown(str(e)))
        except Exception as e:  # noqa: BLE001  (a client bug still closes the call, as Unknown)
            return Err(Unknown(f"{self.label}: {type(e).__name__}: {e}"))
        return answer_outcome(answer, spec, type_args, self.label)


def check_remote(bindings, runnable, reachable: Iterable) -> None:
    """Before a run starts (or continues): the hello exchange of every connection its reachable
    Tools are bound to, and each signature checked. Raises RemoteRefused; records nothing."""
    for item in reachable:
        tool_id, name = (item.tool_id, item.name) if isinstance(item, ToolSpec) else tuple(item)
        spec = runnable.tool_spec(tool_id) if runnable is not None else None
        impl = bindings._impls.get(tool_id) or bindings._impls.get(name)
        if isinstance(impl, RemoteTool) and spec is not None:
            impl.check(spec, runnable.resolve(tool_id))
