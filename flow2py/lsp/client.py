"""A small LSP client over stdio (JSON-RPC with Content-Length framing): what the tests and
bench/bench_lsp.py speak to a `flow2py lsp` subprocess with. Plain dicts, no pygls."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path


def uri(path: str) -> str:
    return Path(os.path.abspath(path)).as_uri()


class Client:
    def __init__(self, argv: list[str] | None = None, cwd: str | None = None) -> None:
        argv = argv or [sys.executable, "-m", "flow2py.cli", "lsp"]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
        )
        self._id = 0
        self._replies: dict[int, queue.Queue] = {}
        self.notes: queue.Queue = queue.Queue()  # (method, params, time received)
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- framing ------------------------------------------------------------------------------

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode("utf-8")
        with self._lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode("ascii").partition(":")
                if k.lower() == "content-length":
                    length = int(v)
            msg = json.loads(out.read(length))
            now = time.perf_counter()
            if "id" in msg and "method" not in msg:
                self._replies.setdefault(msg["id"], queue.Queue()).put(msg)
            elif "method" in msg and "id" in msg:  # a request from the server: answer it empty
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            else:
                self.notes.put((msg["method"], msg.get("params"), now))

    # -- messages -----------------------------------------------------------------------------

    def request(self, method: str, params, timeout: float = 30) -> object:
        with self._lock:
            self._id += 1
            i = self._id
            self._replies.setdefault(i, queue.Queue())
        self._send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        msg = self._replies[i].get(timeout=timeout)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result")

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics(self, for_uri: str, timeout: float = 30) -> list[dict]:
        """The next publishDiagnostics for `for_uri` (other notifications are dropped)."""
        end = time.monotonic() + timeout
        while True:
            method, params, _ = self.notes.get(timeout=max(end - time.monotonic(), 0.01))
            if method == "textDocument/publishDiagnostics" and params["uri"] == for_uri:
                return params["diagnostics"]

    def initialize(self, root: str) -> dict:
        r = self.request(
            "initialize", {"processId": os.getpid(), "rootUri": uri(root), "capabilities": {}}, timeout=60
        )
        self.notify("initialized", {})
        return r

    def open(self, path: str, text: str) -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri(path), "languageId": "flow", "version": 1, "text": text}},
        )

    def change(
        self, path: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str
    ) -> None:
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri(path), "version": version},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": start[0], "character": start[1]},
                            "end": {"line": end[0], "character": end[1]},
                        },
                        "text": text,
                    }
                ],
            },
        )

    def close(self) -> int:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            return self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
