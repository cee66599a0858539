"""The worker's HTTP API (docs/spec/http.md): start runs, list them, show one with its open calls
and its history, deliver replies, cancel; an OpenAPI 3.1 description at `GET /openapi.json`.

`make_app(worker)` is a Starlette application over a running `flowrt.host.worker.Worker`.
`start_server(worker, host, port)` binds the address at once (refusing one that cannot be bound)
and serves the app under uvicorn in a thread until `stop()` (what `flow2py worker ... --http
HOST:PORT` does); `serve` does the same and blocks.

Every answer is JSON, every error `{"error": "one line"}` with the status docs/spec/http.md
gives; no traceback ever reaches a client (an unforeseen exception is a 500 and one log line).
A browser asking `GET /` or `GET /runs/{id}` with `Accept: text/html` gets pages instead: the
runs, and a run's history (the viewer's page, `flow2py history --format html`). With a token, every mutating
request (a POST) must carry `Authorization: Bearer <token>` (compared in constant time); reads
need none. A body over `max_body` bytes is refused 413, by its Content-Length before anything is
read and by its size as it streams in.

The handlers are coroutines that read the body themselves and run each store operation in a
worker thread (`run_in_threadpool`): SQLite and the admission of a reply block.
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import threading
import time
from typing import Any, Callable, Optional
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from flowrt.host import worker as wk
from flowrt.host.bundles import BundleRefused, submit_bundle
from flowrt.host.client import Client
from flowrt.host.http_openapi import openapi_document
from flowrt.host import run_page
from flowrt.host import run_page_live as live
from flowrt.host.operations import Refused
from flowrt.host.runs_page import DEFAULT_LIMIT, MAX_LIMIT, RunsQuery, runs_page_html

__all__ = ["make_app", "make_server", "start_server", "HttpServer", "serve", "status_json", "summary_json"]
__all__ += ["ROUTES"]

LOG = logging.getLogger(__name__)

JSONL = "application/jsonl"


class _Answer(Exception):
    """An error answer: the status and the one line of `{"error": ...}`."""

    def __init__(self, status: int, message: str, headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "error"


def _error(status: int, message: str, headers: Optional[dict] = None) -> JSONResponse:
    return JSONResponse({"error": _one_line(message)}, status_code=status, headers=headers)


# ---- what a run looks like in JSON --------------------------------------------------------------


def summary_json(st) -> dict:
    """A run in `GET /runs`: `run_id`, `state`, `program`, `entry`, `started`, `facts`."""
    return {
        "run_id": st.run_id,
        "state": st.state,
        "program": st.program,
        "entry": st.entry,
        "started": st.started,
        "facts": st.facts,
    }


def status_json(st) -> dict:
    """A run in `GET /runs/{id}`: the summary, its open calls, its result or fault (texts)."""
    return {
        **summary_json(st),
        "open_calls": [
            {"id": c.id, "tool": c.tool, "args": list(c.args_text), "since": c.since} for c in st.open_calls
        ],
        "result": st.result,
        "fault": st.fault,
    }


# ---- requests ------------------------------------------------------------------------------------


async def _body(request: Request, max_body: int) -> bytes:
    """The body, refused 413 past `max_body` bytes: by Content-Length first, then as it streams."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise _Answer(400, f"Content-Length is not a number: {declared!r}") from None
        if size > max_body:
            raise _Answer(413, f"the body is {size} bytes; at most {max_body} are accepted")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            raise _Answer(413, f"the body is over {max_body} bytes; at most {max_body} are accepted")
        chunks.append(chunk)
    return b"".join(chunks)


async def _json_object(request: Request, max_body: int) -> dict:
    return _json_body(await _body(request, max_body))


def _json_body(raw: bytes) -> dict:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise _Answer(400, f"the body is not valid JSON: {e}") from None
    if not isinstance(body, dict):
        raise _Answer(400, f"the body must be a JSON object, got {_json_kind(body)}")
    return body


def _json_kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}.get(
        type(v), "an object"
    )


def _fields(body: dict, allowed: dict[str, tuple], required: tuple[str, ...] = ()) -> dict:
    """The body's fields, each of one of the JSON kinds `allowed` names (None: any value)."""
    for key in body:
        if key not in allowed:
            raise _Answer(400, f"unknown field {key!r}; expected {', '.join(allowed)}")
    for key in required:
        if key not in body:
            raise _Answer(400, f"missing field {key!r}")
    for key, kinds in allowed.items():
        if key in body and kinds and not isinstance(body[key], kinds):
            names = " or ".join(_KIND_NAMES[k] for k in kinds)
            raise _Answer(400, f"field {key!r} must be {names}, got {_json_kind(body[key])}")
    return body


_KIND_NAMES = {str: "a string", dict: "an object", type(None): "null", int: "a number"}


def _authorize(request: Request, token: Optional[str], form_token: Optional[str] = None) -> None:
    """With a token, the request must carry it: as `Authorization: Bearer <token>`, or (a plain
    HTML form of the run page, which cannot set a header) as the form's `token` field."""
    if token is None:
        return
    given = request.headers.get("authorization", "")
    if not given and form_token:
        given = f"Bearer {form_token}"
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not value:
        raise _Answer(401, "this request needs Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"})
    if not hmac.compare_digest(value.strip().encode("utf-8"), token.encode("utf-8")):
        raise _Answer(401, "the bearer token is wrong", {"WWW-Authenticate": "Bearer"})


def _form_fields(raw: bytes) -> dict[str, str]:
    """A form-encoded body's fields (the last value of each)."""
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise _Answer(400, "the form is not UTF-8") from None
    return dict(pairs)


def _query_int(request: Request, name: str) -> Optional[int]:
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    if not text.isdigit() or len(text) > 12:
        raise _Answer(400, f"query parameter {name!r} must be a whole number >= 0, got {text!r}")
    return int(text)


# ---- the routes ------------------------------------------------------------------------------------


def _refusal(e: Refused) -> _Answer:
    """A worker refusal as its status: unknown run 404, not open / ended 409, does not fit 422."""
    if isinstance(e, wk.NoSuchRun):
        return _Answer(404, str(e))
    if isinstance(e, wk.Conflict):
        return _Answer(409, str(e))
    if isinstance(e, wk.DoesNotFit):
        return _Answer(422, str(e))
    return _Answer(400, str(e))


async def _call(fn: Callable, *args, **kwargs):
    try:
        return await run_in_threadpool(fn, *args, **kwargs)
    except Refused as e:
        raise _refusal(e) from None


class _Routes:
    """The handlers over one worker; each returns a response or raises `_Answer`."""

    def __init__(self, worker, token: Optional[str], max_body: int):
        self.worker, self.token, self.max_body = worker, token, max_body
        self.client = Client(worker)  # reads a run's history with the run's program
        self.closing = threading.Event()  # set when the server stops: the event streams end

    async def start(self, request: Request) -> Response:
        _authorize(request, self.token)
        body = await _json_object(request, self.max_body)
        if "bundle" in body:
            return await self.start_bundle(body)
        body = _fields(
            body,
            {"program": (str,), "entry": (str,), "input": (dict, type(None)), "run_id": (str, type(None))},
            ("program",),
        )
        try:
            run_id = await _call(
                self.worker.submit,
                body["program"],
                entry=body.get("entry", "main"),
                input=body.get("input"),
                run_id=body.get("run_id"),
            )
        except _Answer as a:  # input that does not fit is bad input here, not an unfitting reply
            raise _Answer(400 if a.status == 422 else a.status, a.message) from None
        return JSONResponse({"run_id": run_id}, status_code=201)

    async def start_bundle(self, body: dict) -> Response:
        """`POST /runs` with a bundle: checked and compiled from its texts first; a bundle that does
        not check is 422 with its diagnostics (as `check --format json`), one refused for its shape
        or a limit 400, and neither records anything."""
        body = _fields(
            body,
            {"bundle": (dict,), "entry": (str,), "input": (dict, type(None)), "run_id": (str, type(None))},
            ("bundle",),
        )
        try:
            run_id = await run_in_threadpool(
                submit_bundle,
                self.worker.store,
                body["bundle"],
                entry=body.get("entry", "main"),
                input=body.get("input"),
                run_id=body.get("run_id"),
                worker=self.worker,
            )
        except BundleRefused as e:
            if e.diagnostics_json is None:
                raise _Answer(400, str(e)) from None
            return JSONResponse(
                {"error": _one_line(str(e)), "diagnostics": e.diagnostics_json}, status_code=422
            )
        except Refused as e:
            a = _refusal(e)  # input that does not fit is bad input here, not an unfitting reply
            raise _Answer(400 if a.status == 422 else a.status, a.message) from None
        return JSONResponse({"run_id": run_id}, status_code=201)

    async def list(self, request: Request) -> Response:
        state = request.query_params.get("state") or None
        if state is not None and state not in wk.STATES:
            raise _Answer(
                400, f"query parameter 'state' must be one of {', '.join(wk.STATES)}, got {state!r}"
            )
        program = request.query_params.get("program") or None
        limit, offset = _query_int(request, "limit"), _query_int(request, "offset") or 0
        found = await _call(self.worker.runs, state=state, program=program, limit=limit, offset=offset)
        return JSONResponse([summary_json(st) for st in found])

    async def show(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        st = await _call(self.worker.status, run_id)
        if _wants_html(request):  # a browser: the run page, with its actions and live updates
            replay = request.query_params.get("replay") not in (None, "", "0")
            return await self._page(run_id, self._forms(request), 200, replay=replay)
        return JSONResponse(status_json(st))

    def _forms(self, request: Request, **typed) -> live.ReplyForms:
        """The state of the page's forms: each asks for the token unless the browser holds it."""
        return live.ReplyForms(token_needed=not self._cookie_ok(request), **typed)

    async def _page(self, run_id: str, forms: live.ReplyForms, status: int, **page) -> Response:
        """The run page as the worker serves it: with its actions (reply and fork forms, replay on
        request) and live updates, under the page's Content-Security-Policy."""
        prog = await _call(self.client._program, run_id)
        text = await _call(
            run_page.run_page,
            self.worker.store,
            prog,
            run_id,
            served=True,
            form=forms,
            token_needed=forms.token_needed,
            **page,
        )
        headers = {"Content-Security-Policy": live.CSP, "Cache-Control": "no-store"}
        return HTMLResponse(text, status_code=status, headers=headers)

    def _cookie_ok(self, request: Request) -> bool:
        """No token is set, or the browser holds it in its cookie."""
        if self.token is None:
            return True
        held = request.cookies.get(live.TOKEN_COOKIE, "")
        return hmac.compare_digest(held.encode("utf-8"), self.token.encode("utf-8"))

    async def fork(self, request: Request) -> Response:
        """`POST /runs/{id}/fork`: checkpoint N of the run as a new run the worker drives. From the
        run page's form (`checkpoint=N`, form-encoded): 303 to the new run's page, or the page again
        with the refusal in one line; as JSON (`{"checkpoint": N}`): 201 `{"run_id": ...}`."""
        run_id = request.path_params["run_id"]
        browser = _wants_html(request)
        raw = await _body(request, self.max_body)
        if _is_form(request, raw):
            _same_origin(request)
            fields = _form_fields(raw)
            held = self.token if self.token is not None and self._cookie_ok(request) else None
            _authorize(request, self.token, fields.pop("token", None) or held)
            text = fields.pop("checkpoint", "")
            if fields:
                raise _Answer(400, f"unknown field {next(iter(fields))!r}; expected checkpoint")
            if not text.isdigit() or len(text) > 12:
                raise _Answer(400, f"field 'checkpoint' must be a checkpoint number, got {text!r}")
            body = {"checkpoint": int(text)}
        else:
            _authorize(request, self.token)
            body = _fields(
                _json_body(raw),
                {"checkpoint": (int,), "run_id": (str, type(None))},
                ("checkpoint",),
            )
        try:
            new = await _call(self.worker.fork, run_id, body["checkpoint"], new_run_id=body.get("run_id"))
        except _Answer as a:
            if not browser or a.status == 404:
                raise
            return await self._page(run_id, self._forms(request), a.status, message=_one_line(a.message))
        if browser:
            return Response(status_code=303, headers={"Location": live.run_path(new)})
        return JSONResponse(
            {"run_id": new, "parent": run_id, "checkpoint": body["checkpoint"]}, status_code=201
        )

    async def index(self, request: Request) -> Response:
        if not _wants_html(request):
            return JSONResponse({"runs": "/runs", "openapi": "/openapi.json"})
        q = _runs_query(request)
        found = await _call(
            self.worker.runs, state=q.state, program=q.program, limit=q.limit + 1, offset=q.offset
        )
        return HTMLResponse(runs_page_html(found[: q.limit], q, more=len(found) > q.limit))

    async def history(self, request: Request) -> Response:
        text = await _call(self.client._history, request.path_params["run_id"], "json")
        return Response(text, media_type=JSONL)

    async def reply(self, request: Request) -> Response:
        raw = await _body(request, self.max_body)
        if _is_form(request, raw):
            return await self.reply_form(request, raw)
        _authorize(request, self.token)
        run_id = request.path_params["run_id"]
        body = _fields(_json_body(raw), {"call": (str,), "reply": ()}, ("call", "reply"))
        await _call(self.worker.deliver, run_id, body["call"], body["reply"])
        return JSONResponse({"run_id": run_id, "call": body["call"]}, status_code=202)

    async def reply_form(self, request: Request, raw: bytes) -> Response:
        """`POST /runs/{id}/replies` from a run page's form (urlencoded `call`, `reply`, `token`):
        303 back to the run page when recorded; else the page again, its status the JSON route's,
        with the message beside the call's form and the typed text kept."""
        run_id = request.path_params["run_id"]
        _same_origin(request)
        fields = live.form_fields(raw)
        for key in fields:
            if key not in ("call", "reply", "token"):
                raise _Answer(400, f"unknown field {key!r}; expected call, reply, token")
        for key in ("call", "reply"):
            if key not in fields:
                raise _Answer(400, f"missing field {key!r}")
        call, typed = fields["call"], fields["reply"]
        await _call(self.worker.status, run_id)  # an unknown run: 404, as JSON
        forms = self._forms(request, typed={call: typed})
        given = fields.get("token")
        if self.token is not None and not forms.token_needed:
            given = self.token  # the cookie holds it
        elif self.token is not None and not (
            given and hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))
        ):
            why = "this worker has a token: enter it" if not given else "the token is wrong"
            return await self._refused_form(run_id, forms, call, 401, why)
        try:
            reply = json.loads(typed)
        except (ValueError, RecursionError) as err:
            return await self._refused_form(run_id, forms, call, 422, f"not JSON: {err}")
        try:
            await _call(self.worker.deliver, run_id, call, reply)
        except _Answer as a:
            if a.status == 404:
                raise
            return await self._refused_form(run_id, forms, call, a.status, a.message)
        answer = RedirectResponse(live.run_path(run_id), status_code=303)
        if self.token is not None and fields.get("token"):  # held from now on, for this worker only
            answer.set_cookie(live.TOKEN_COOKIE, self.token, path="/", httponly=True, samesite="strict")
        return answer

    async def _refused_form(self, run_id, forms, call: str, status: int, message: str) -> Response:
        """The page again, `message` beside the call's form (above the calls when it is not open)."""
        forms.messages[call] = _one_line(message)
        return await self._page(run_id, forms, status)

    async def events(self, request: Request) -> Response:
        """`GET /runs/{id}/events`: the run's server-sent events (flowrt.host.run_page_live)."""
        run_id = request.path_params["run_id"]
        await _call(self.worker.status, run_id)  # an unknown run: 404 before the stream starts
        seen = live.parse_mark(request.headers.get("last-event-id"))
        if seen is None:
            facts = _query_int(request, "facts")
            seen = (-1 if facts is None else facts, request.query_params.get("state", ""))
        stream = live.event_stream(self.worker.store, run_id, seen, self.closing)
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    async def cancel(self, request: Request) -> Response:
        _authorize(request, self.token)
        await _body(request, self.max_body)  # a body is not needed, but is held to the limit
        run_id = request.path_params["run_id"]
        await _call(self.worker.cancel, run_id)
        return JSONResponse({"run_id": run_id}, status_code=202)

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())


def _guarded(handler: Callable) -> Callable:
    """An `_Answer` as its JSON error; anything unforeseen as a 500 and one log line."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except _Answer as a:
            return _error(a.status, a.message, a.headers)
        except Exception as e:  # noqa: BLE001  (never a traceback in an answer)
            LOG.error("http %s %s failed: %s: %s", request.method, request.url.path, type(e).__name__, e)
            return _error(500, f"internal error: {type(e).__name__}: {e}")

    return endpoint


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """Starlette's own refusals (no such route, method not allowed) in the same shape."""
    words = {
        404: f"no route {request.url.path}",
        405: f"{request.method} is not allowed on {request.url.path}",
    }
    return _error(exc.status_code, words.get(exc.status_code, exc.detail), getattr(exc, "headers", None))


async def _server_error(request: Request, exc: Exception) -> Response:
    LOG.error("http %s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
    return _error(500, f"internal error: {type(exc).__name__}")


def _is_form(request: Request, raw: bytes) -> bool:
    """A run page's form post: urlencoded, and not a JSON object (curl -d and urllib send JSON
    bodies under that type too: those stay JSON)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/x-www-form-urlencoded" and not raw.lstrip().startswith(b"{")


def _same_origin(request: Request) -> None:
    """A form post carries the Origin of the page it came from (browsers send it): one from
    another site's page is refused, so no other page can answer a call in the user's name."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    if origin.partition("://")[2] != host:
        raise _Answer(403, f"a reply form must be posted from the worker's own page, not from {origin}")


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def _runs_query(request: Request) -> RunsQuery:
    """The runs page's query (`state`, `program`, `limit`, `offset`); a bad value is a 400, in
    the same JSON shape as every other refusal of the API."""
    state = request.query_params.get("state") or None
    if state is not None and state not in wk.STATES:
        raise _Answer(400, f"query parameter 'state' must be one of {', '.join(wk.STATES)}, got {state!r}")
    limit = _query_int(request, "limit")
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise _Answer(400, f"query parameter 'limit' must be between 1 and {MAX_LIMIT}, got {limit}")
    program = request.query_params.get("program") or None
    offset = _query_int(request, "offset") or 0
    return RunsQuery(state, program, DEFAULT_LIMIT if limit is None else limit, offset)


#: (path, method, handler name): the routes, every one of them in the OpenAPI document
ROUTES = (
    ("/", "GET", "index"),
    ("/runs", "POST", "start"),
    ("/runs", "GET", "list"),
    ("/runs/{run_id}", "GET", "show"),
    ("/runs/{run_id}/history", "GET", "history"),
    ("/runs/{run_id}/replies", "POST", "reply"),
    ("/runs/{run_id}/cancel", "POST", "cancel"),
    ("/runs/{run_id}/fork", "POST", "fork"),
    ("/runs/{run_id}/events", "GET", "events"),
    ("/openapi.json", "GET", "openapi"),
)


def make_app(worker, *, token: Optional[str] = None, max_body: int = 1 << 20) -> Starlette:
    """The ASGI application over `worker` (a `flowrt.host.worker.Worker`: its `submit`,
    `deliver`, `cancel`, `status` and `runs`). `token`: the bearer token every POST must carry."""
    if token is not None and not token:
        raise ValueError("an empty token would let every request through; give none or a real one")
    routes = _Routes(worker, token, max_body)
    app = Starlette(
        routes=[Route(p, _guarded(getattr(routes, h)), methods=[m]) for p, m, h in ROUTES],
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )
    app.state.closing = routes.closing  # set it to end the event streams (HttpServer.stop does)
    return app


def make_server(worker, host: str = "127.0.0.1", port: int = 8080, *, token: Optional[str] = None):
    """A uvicorn server for the app (not started): `.run()` blocks, `.should_exit = True` stops it."""
    import uvicorn

    config = uvicorn.Config(
        make_app(worker, token=token),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    return uvicorn.Server(config)


class HttpServer:
    """The API served in a thread of its own (`start_server`): `port` is the one bound (useful
    with port 0), `stop()` ends it, `wait()` blocks until it has ended."""

    def __init__(self, server, sock: socket.socket, thread: threading.Thread):
        self.server, self.socket, self.thread = server, sock, thread
        self.host, self.port = sock.getsockname()[:2]

    def stop(self, timeout: float = 10.0) -> None:
        self.server.config.app.state.closing.set()  # open event streams end, or uvicorn waits on them
        self.server.should_exit = True
        self.thread.join(timeout)

    def wait(self) -> None:
        self.thread.join()


def start_server(
    worker, host: str = "127.0.0.1", port: int = 8080, *, token: Optional[str] = None
) -> HttpServer:
    """Bind HOST:PORT now (a port in use or an address that cannot be bound is `Refused` here, in
    the caller, with one line) and serve the API in a daemon thread until `stop()`."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((host, port), family=family)
    except (OSError, UnicodeError) as e:
        raise Refused(
            f"--http {host}:{port}: cannot listen there: {getattr(e, 'strerror', None) or e}"
        ) from None
    server = make_server(worker, host, port, token=token)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="flowrt-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    if not server.started:
        server.should_exit = True
        sock.close()
        raise Refused(f"--http {host}:{port}: the server did not start")
    return HttpServer(server, sock, thread)


def serve(worker, host: str = "127.0.0.1", port: int = 8080, *, token: Optional[str] = None) -> None:
    """Serve the API until the server stops (blocking; binds 127.0.0.1 unless told otherwise)."""
    start_server(worker, host, port, token=token).wait()
