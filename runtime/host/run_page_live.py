"""The served run page's actions and live updates (docs/spec/trace.md, "The run page"; docs/spec/
http.md): a reply form for each open call, and a run that moves updating without a reload.

Only the worker's `GET /runs/{id}` carries them (`RunPage.served`); the static export of
`flow2py history RUN --format html` has no form and no script.

* A reply form is a plain HTML form (`application/x-www-form-urlencoded`, fields `call`, `reply`
  and, when the worker has a token and the browser does not hold it yet, `token`) posted to
  `POST /runs/{id}/replies`: it works without JavaScript. The worker admits the reply against the
  Tool's type (`Worker.deliver`, as the JSON route does), answers 303 back to the run page when it
  is recorded, and otherwise renders the page again with the message next to that call's form and
  the typed text kept (`ReplyForms`).
* Live: `GET /runs/{id}/events` is a stream of server-sent events (`event_stream`): `change` when
  the run's fact count or state moves, `end` once it has ended (then the stream closes), a
  keep-alive comment between. The page's one inline script (`SCRIPT`, shipped here; no CDN)
  fetches the page again on `change` and swaps its body in, keeping what was typed into a form,
  and submits the reply forms with `fetch` so the message shows without a reload.

The stream holds no thread while it waits: each look at the run is one short store read in the
thread pool (`run_mark`), and the waits between are `asyncio.sleep`s, backing off to
`MAX_DELAY`; a stream lasts at most `LIFETIME` seconds (the browser's EventSource reconnects with
`Last-Event-ID`, so nothing is missed) and ends at once when the server stops (`closing`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Optional
from urllib.parse import quote

from flowrt.host.operations import Refused

__all__ = ["ReplyForms", "reply_form", "waiting_notice", "live_html", "event_stream", "run_mark"]
__all__ += ["CSS", "SCRIPT", "CSP", "TOKEN_COOKIE", "ENDED", "run_path", "parse_mark"]

e = html.escape

#: the cookie a browser keeps the worker's token in once it has entered it in a reply form
TOKEN_COOKIE = "flow2py_token"
#: the states a run does not leave: its stream says `end` and closes
ENDED = ("completed", "faulted", "halted")
#: seconds between keep-alive comments on a quiet stream
KEEPALIVE = 15.0
#: seconds a stream lasts at most (EventSource reconnects, with Last-Event-ID)
LIFETIME = 300.0
#: the waits between two looks at the run: from MIN_DELAY, doubling to MAX_DELAY while it is quiet
MIN_DELAY, MAX_DELAY = 0.05, 1.0
#: what a reconnecting EventSource waits, in milliseconds
RETRY_MS = 1000


@dataclass
class ReplyForms:
    """The state of a served page's reply forms: whether each must ask for the worker's token
    (a token is set and the browser holds no valid one), the text typed into a call's form and the
    message it was refused with (shown beside it, or above the calls when it is no longer open)."""

    token_needed: bool = False
    typed: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)


def run_path(run_id: str) -> str:
    """`/runs/{id}`, the id quoted for a URL."""
    return "/runs/" + quote(run_id, safe="")


CSS = """
:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
form.reply { margin: .1em 0 .5em; } form.reply label { display: block; margin-bottom: .2em; }
form.reply .row { display: flex; flex-wrap: wrap; gap: .4em; align-items: center; }
form.reply input[type=text] { flex: 1 1 18em; min-width: 0; font: 13px ui-monospace, monospace; padding: 4px; }
form.reply input[type=password] { flex: 0 1 12em; min-width: 0; padding: 4px; }
form.reply button { font: inherit; padding: 4px 14px; cursor: pointer; }
form.reply .msg { color: #cf222e; margin: .3em 0 0; white-space: pre-wrap; overflow-wrap: anywhere; }
section.wait td:nth-child(4), section.wait td:nth-child(5) { white-space: nowrap; }
section.wait pre { overflow-wrap: anywhere; }
@media (max-width: 760px) {
  section.wait { padding: .2em .6em .6em; }
  section.wait table, section.wait tbody, section.wait tr, section.wait td { display: block; }
  section.wait thead { display: none; } section.wait tr { border-bottom: 1px solid #e5d9b6; padding: .3em 0; }
  section.wait td { border: 0; padding: 2px 0; white-space: normal !important; }
  section.wait td[data-label]::before { content: attr(data-label) ": "; color: #666; }
}
p.notice { color: #cf222e; font-weight: bold; overflow-wrap: anywhere; }
"""


def reply_form(run_id: str, n: int, c, forms: ReplyForms, columns: int) -> str:
    """The table row under open call `c` (a CallView) holding its reply form; `n` numbers the
    fields' ids on the page."""
    typed = forms.typed.get(c.id)
    value = typed if typed is not None else ("" if c.sample is None else json.dumps(c.sample))
    message = forms.messages.get(c.id)
    fid = f"reply-{n}"
    described = f' aria-describedby="{fid}-msg" aria-invalid="true"' if message is not None else ""
    token = ""
    if forms.token_needed:
        token = (
            f'<label for="token-{n}" class="note">token</label>'
            f'<input type="password" id="token-{n}" name="token" required autocomplete="current-password">'
        )
    msg = "" if message is None else f'<p class="msg" id="{fid}-msg" role="alert">{e(message)}</p>'
    return (
        f'<tr class="reply"><td colspan="{columns}">'
        f'<form class="reply" method="post" action="{e(run_path(run_id))}/replies" data-call="{e(c.id)}">'
        f'<input type="hidden" name="call" value="{e(c.id)}">'
        f'<label for="{fid}">Reply to <code>{e(c.id)}</code>, as JSON of <code>{e(c.reply_type)}</code></label>'
        f'<div class="row"><input type="text" id="{fid}" name="reply" value="{e(value)}" placeholder="JSON"'
        f' spellcheck="false" autocomplete="off" autocapitalize="off"{described}>'
        f'{token}<button type="submit">Send reply</button></div>{msg}</form></td></tr>'
    )


def waiting_notice(forms: Optional[ReplyForms], open_ids) -> str:
    """The refusal of a reply to a call the page no longer offers (answered meanwhile, say): its
    message cannot stand beside a form, so it stands above the open calls."""
    if forms is None:
        return ""
    lines = [
        f"The reply to {c} was not recorded: {m}" for c, m in forms.messages.items() if c not in open_ids
    ]
    return "".join(f'<p class="notice" role="alert">{e(x)}</p>' for x in lines)


# The page's one script: submit the reply forms with fetch and swap the answer in; follow the
# run's events and swap the page in again when it moves. Without it the page reads and the forms
# post as they are.
SCRIPT = """
(function () {
  "use strict";
  var live = document.getElementById("flow-live");
  if (!live || !window.fetch || !window.DOMParser) return;
  var page = live.getAttribute("data-page");
  function kept() {
    var out = {};
    document.querySelectorAll("form.reply").forEach(function (f) {
      var input = f.querySelector("input[name=reply]"), msg = f.querySelector(".msg");
      if (input) out[f.getAttribute("data-call")] = {value: input.value, msg: msg ? msg.textContent : null};
    });
    return out;
  }
  function swap(text, keep) {
    var doc = new DOMParser().parseFromString(text, "text/html");
    var focused = document.activeElement ? document.activeElement.id : "";
    var typed = keep ? kept() : {};
    document.body.innerHTML = doc.body.innerHTML;
    document.querySelectorAll("form.reply").forEach(function (f) {
      var was = typed[f.getAttribute("data-call")], input = f.querySelector("input[name=reply]");
      if (!was || !input || f.querySelector(".msg") || was.value === input.defaultValue) return;
      input.value = was.value;
      if (was.msg !== null) {
        var p = document.createElement("p");
        p.className = "msg"; p.setAttribute("role", "alert"); p.textContent = was.msg;
        f.appendChild(p);
      }
    });
    var again = focused && document.getElementById(focused);
    if (again) again.focus();
  }
  function refresh() {
    fetch(page, {headers: {Accept: "text/html"}, credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (t) { if (t) swap(t, true); })
      .catch(function () {});
  }
  document.addEventListener("submit", function (ev) {
    var f = ev.target;
    if (!f.matches || !f.matches("form.reply")) return;
    ev.preventDefault();
    fetch(f.action, {method: "POST", body: new URLSearchParams(new FormData(f)),
                     headers: {Accept: "text/html"}, credentials: "same-origin"})
      .then(function (r) {
        var html = (r.headers.get("content-type") || "").indexOf("text/html") >= 0;
        return html ? r.text().then(function (t) { swap(t, false); }) : refresh();
      })
      .catch(function () { f.submit(); });
  });
  var events = live.getAttribute("data-events");
  if (events && window.EventSource) {
    var source = new EventSource(events);
    source.addEventListener("change", refresh);
    source.addEventListener("end", function () { source.close(); });
  }
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")

#: the served run page's Content-Security-Policy: its own inline style and this one script, fetches
#: and form posts to the worker only, nothing loaded from anywhere else
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; connect-src 'self'; form-action 'self'; "
    "img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'"
)


def live_html(p) -> str:
    """What a served page (`p`: a RunPage) adds at its end: where its events and itself are, and
    the script; nothing for the static export."""
    if not p.served:
        return ""
    path = run_path(p.run_id)
    ended = p.info.state in ("completed", "faulted")
    events = "" if ended else f"{path}/events?facts={p.info.facts}&state={quote(p.info.state)}"
    return (
        f'<div id="flow-live" hidden data-page="{e(path)}" data-events="{e(events)}"></div>'
        f"<script>{SCRIPT}</script>"
    )


# ---- the stream ------------------------------------------------------------------------------------


def run_mark(store, run_id: str) -> tuple[int, str]:
    """The run's (fact count, state) as `GET /runs/{id}` says them: what a change is a change of."""
    from flowrt.host import worker_ops  # here: the static export never needs it

    st = worker_ops.status(store, run_id)
    return st.facts, st.state


def parse_mark(text: Optional[str]) -> Optional[tuple[int, str]]:
    """`12 paused` (an event's id, as Last-Event-ID sends it back) -> (12, "paused")."""
    if not text:
        return None
    facts, _, state = text.strip().partition(" ")
    return (int(facts), state) if facts.isdigit() and len(facts) <= 12 else None


def _event(kind: str, mark: tuple[int, str]) -> str:
    data = json.dumps({"facts": mark[0], "state": mark[1]})
    return f"id: {mark[0]} {mark[1]}\nevent: {kind}\ndata: {data}\n\n"


async def event_stream(
    store,
    run_id: str,
    seen: tuple[int, str],
    closing: Optional[threading.Event] = None,
    *,
    keepalive: Optional[float] = None,
    lifetime: Optional[float] = None,
) -> AsyncIterator[str]:
    """The run's events after the client saw `seen` (its fact count and state): `change` each time
    they move (at once when they are not `seen` already), `end` when the run has ended (and the
    stream with it), `: keep-alive` every `keepalive` seconds; at most `lifetime` seconds, or
    until `closing` is set."""
    from starlette.concurrency import run_in_threadpool  # here: the static export never needs it

    keepalive = KEEPALIVE if keepalive is None else keepalive
    lifetime = LIFETIME if lifetime is None else lifetime
    yield f"retry: {RETRY_MS}\n\n"
    start = beat = time.monotonic()
    delay = MIN_DELAY
    while True:
        try:
            mark = await run_in_threadpool(run_mark, store, run_id)
        except Refused as err:  # the run is gone, or the store cannot be read
            yield f"event: error\ndata: {json.dumps({'error': str(err)})}\n\n"
            return
        if mark != seen:
            seen, delay = mark, MIN_DELAY
            yield _event("change", mark)
        if mark[1] in ENDED:
            yield _event("end", mark)
            return
        now = time.monotonic()
        if now - start >= lifetime or (closing is not None and closing.is_set()):
            return
        if now - beat >= keepalive:
            beat = now
            yield ": keep-alive\n\n"
        await asyncio.sleep(min(delay, max(0.0, start + lifetime - now)))
        delay = min(delay * 2, MAX_DELAY)


def form_fields(raw: bytes) -> dict[str, Any]:
    """A urlencoded body's fields (the first of each name)."""
    from urllib.parse import parse_qsl

    out: dict[str, Any] = {}
    for k, v in parse_qsl(raw.decode("utf-8", errors="replace"), keep_blank_values=True):
        out.setdefault(k, v)
    return out
