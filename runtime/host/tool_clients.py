"""The Tool protocol's transports, host side (docs/spec/abi.md, "Tool protocol").

* `StdioConnection(argv, cwd=None)`: one subprocess, spoken to in newline-delimited JSON on its
  stdin/stdout; many calls in flight at once, answers matched by id by one reader thread. The
  process is started on first use (the hello exchange) and again on the first call after it died.
* `HttpConnection(url)`: `POST <url>/hello` and `POST <url>/call`, one HTTP request per call
  (the standard library's http.client; calls run concurrently on the driver's worker threads).

Both have `ensure() -> served tools` (flowrt.host.tool_protocol.check_hello) and `call(message,
timeout) -> answer`, which raises `NotSent` when the call provably never reached the server and
`Lost` when it was sent and no answer can come (a dead process, a timeout, a broken answer).
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import threading
import urllib.parse
from typing import Optional

from flowrt.host.tool_protocol import Lost, NotSent, RemoteRefused, check_hello, encode_line, hello_message

__all__ = ["StdioConnection", "HttpConnection", "HELLO_TIMEOUT"]

#: Seconds a server may take to answer the hello (starting a process included).
HELLO_TIMEOUT = 30.0


class _Slot:
    __slots__ = ("event", "answer", "lost")

    def __init__(self):
        self.event = threading.Event()
        self.answer = None
        self.lost: Optional[str] = None


class StdioConnection:
    """The protocol over a subprocess's stdio (`exec:command args`)."""

    def __init__(self, argv: list[str], cwd: Optional[str] = None, label: Optional[str] = None):
        self.argv, self.cwd = list(argv), cwd
        self.label = label or "exec:" + " ".join(argv)
        self.lock = threading.Lock()  # guards proc, waiting, served
        self.write_lock = threading.Lock()
        self.proc: Optional[subprocess.Popen] = None
        self.waiting: dict[object, list[_Slot]] = {}
        self.served: Optional[dict] = None
        self.hello: Optional[_Slot] = None  # the hello answer awaited, while one is out
        self.starts = 0  # how many processes were started (a restart counts)

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    def ensure(self) -> dict:
        """The served Tools; starts the process and says hello when none is alive (a caller
        arriving while another's hello is out waits for that one)."""
        with self.lock:
            if self.proc is not None and self.proc.poll() is None:
                if self.served is not None:
                    return self.served
                slot, owner = self.hello, False
            else:
                slot, owner = None, True
            if slot is None:
                self._spawn()
                slot = self.hello = self._expect("$hello")
                owner = True
        if owner:
            try:
                self._write(hello_message())
            except OSError as e:
                slot.lost = f"the tool server did not take the hello ({e})"
                slot.event.set()
        if not slot.event.wait(HELLO_TIMEOUT):
            self._forget("$hello", slot)
            raise RemoteRefused(f"{self.label}: no hello answer within {HELLO_TIMEOUT:g} s")
        with self.lock:
            if self.hello is slot:
                self.hello = None
        if slot.lost is not None:
            raise RemoteRefused(f"{self.label}: {slot.lost} before answering the hello")
        served = check_hello(slot.answer, self.label)
        with self.lock:
            self.served = served
        return served

    def _spawn(self) -> None:
        old = self.proc
        if old is not None and old.poll() is None:  # alive but unusable (its hello was refused)
            old.kill()
        try:
            proc = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,  # the server's log goes where the host's goes
                bufsize=0,
            )
        except OSError as e:
            raise RemoteRefused(f"{self.label}: could not start the tool server: {e}") from None
        self.proc, self.served = proc, None
        self.starts += 1
        threading.Thread(target=self._read, args=(proc,), name="flowrt-tool-stdio", daemon=True).start()

    def _expect(self, key) -> _Slot:
        slot = _Slot()
        self.waiting.setdefault(key, []).append(slot)
        return slot

    def _forget(self, key, slot: _Slot) -> None:
        with self.lock:
            slots = self.waiting.get(key, [])
            if slot in slots:
                slots.remove(slot)
            if not slots:
                self.waiting.pop(key, None)

    def _write(self, message: dict) -> None:
        line = encode_line(message)
        with self.write_lock:
            proc = self.proc
            proc.stdin.write(line)

    def _read(self, proc: subprocess.Popen) -> None:
        """Route each answer line to the call waiting on its id; at end of output, every call
        still out on this process is lost."""
        problem = None
        for raw in proc.stdout:
            try:
                msg = json.loads(raw)
                key = (
                    "$hello" if msg.get("type") in ("hello", "refused") and "id" not in msg else msg.get("id")
                )
            except (ValueError, AttributeError):
                problem = f"sent a line that is not a JSON object: {raw[:120]!r}"
                proc.kill()
                break
            with self.lock:
                slots = self.waiting.get(key)
                slot = slots.pop(0) if slots else None
                if slots == []:
                    self.waiting.pop(key, None)
            if slot is not None:
                slot.answer = msg
                slot.event.set()
        code = proc.wait()
        reason = f"the tool server {self.label} {problem or f'exited (code {code})'} while the call was out"
        with self.lock:
            if self.proc is proc:
                lost, self.waiting = self.waiting, {}
                self.served = None
            else:
                lost = {}
        for slots in lost.values():
            for slot in slots:
                slot.lost = reason
                slot.event.set()

    def call(self, message: dict, timeout: Optional[float]) -> dict:
        try:
            self.ensure()
        except RemoteRefused as e:
            raise NotSent(str(e)) from None
        with self.lock:
            slot = self._expect(message["id"])
        try:
            self._write(message)
        except (OSError, ValueError) as e:  # the pipe is closed: no complete line reached the server
            self._forget(message["id"], slot)
            raise NotSent(f"{self.label}: the call could not be written to the tool server ({e})") from None
        if not slot.event.wait(timeout):
            self._forget(message["id"], slot)
            raise Lost(f"{self.label} gave no answer within {timeout:g} s")
        if slot.lost is not None:
            raise Lost(slot.lost)
        return slot.answer

    def close(self) -> None:
        with self.lock:
            proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


class HttpConnection:
    """The protocol over HTTP (`http://host:port[/prefix]`)."""

    def __init__(self, url: str, label: Optional[str] = None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url}: not an http:// or https:// URL")
        self.url, self.label = url, label or url
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        self.served: Optional[dict] = None
        self.lock = threading.Lock()

    def _post(self, path: str, message: dict, timeout: Optional[float]):
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=timeout)
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        try:
            try:
                conn.connect()
            except OSError as e:  # no connection: nothing was sent
                raise NotSent(f"{self.label}: could not connect ({e})") from None
            try:
                conn.request("POST", self.prefix + path, body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
            except (socket.timeout, TimeoutError):
                raise Lost(f"{self.label} gave no answer within {timeout:g} s") from None
            except (OSError, http.client.HTTPException) as e:
                raise Lost(f"{self.label}: the connection broke while the call was out ({e})") from None
        finally:
            conn.close()
        if resp.status != 200:
            raise Lost(f"{self.label} answered HTTP {resp.status}: {data[:200].decode('utf-8', 'replace')}")
        try:
            return json.loads(data)
        except ValueError:
            raise Lost(f"{self.label} answered with a body that is not JSON") from None

    def ensure(self) -> dict:
        with self.lock:
            if self.served is not None:
                return self.served
        try:
            answer = self._post("/hello", hello_message(), HELLO_TIMEOUT)
        except (NotSent, Lost) as e:
            raise RemoteRefused(f"the hello failed: {e}") from None
        served = check_hello(answer, self.label)
        with self.lock:
            self.served = served
        return served

    def call(self, message: dict, timeout: Optional[float]) -> dict:
        try:
            self.ensure()
        except RemoteRefused as e:
            raise NotSent(str(e)) from None
        return self._post("/call", message, timeout)

    def close(self) -> None:
        pass
