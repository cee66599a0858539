"""A run's page: `flow2py history RUN --format html` and the worker's `GET /runs/{id}` for a
browser (docs/spec/trace.md, "The run page").

One self-contained HTML document (inline style, a few `<details>` to fold long values; no script,
no network, no external asset): the run's header, what a paused run waits on (each open call with
the commands that answer it), the timeline of every fact (each Call joined to the Reply or the
Stop that closed it, with the times the host's records keep), the task tree with each task's calls
and the Choices and Stops said in words, and the checkpoints numbered as `fork --checkpoint N`
numbers them. History holds no times: every time shown is the host's (when it sent a call, when it
was left pending, when a timer fired). Values are Flow text (flowrt.data.values.show), and every
text is HTML-escaped.
"""

from __future__ import annotations

import html
import json
import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Optional
from urllib.parse import quote

from flowrt.engine.outcomes import OpenCall
from flowrt.history.history_view import to_json_objects
from flowrt.history.store import DEFAULT_STORE, Store
from flowrt.host import operations as ops
from flowrt.host import run_page_live as live
from flowrt.host.runs_view import CallView, call_views, iso_time, program_name, tool_name

__all__ = ["history", "run_page", "page_html", "RunPage"]

#: a value's text longer than this is folded in a `<details>`
FOLD = 120


def history(store: Store, prog, run_id: str, fmt: str = "text", *, served: bool = False, **page) -> str:
    """`flow2py history` in any format: the run page for "html", else flowrt.host.operations'.
    `served`: the page is served by a worker (GET /runs/{id}), so it carries the actions; `page`:
    run_page's other options (replay, message, token_needed)."""
    if fmt != "html":
        return ops.history(store, prog, run_id, fmt)
    return run_page(store, prog, run_id, served=served, **page)


@dataclass
class _CallTimes:
    dispatched: Optional[float] = None
    pending: Optional[float] = None
    replied: Optional[float] = None
    #: the call site the host recorded: (module key, Flow line), or None
    site: Optional[tuple[str, int]] = None


@dataclass
class RunPage:
    """What the page shows, read from the store: the run's record, its facts as the JSON export
    has them, the views of its open calls, the host's times per call, the store's path."""

    run_id: str
    info: Any
    facts: list[dict]
    calls: tuple[CallView, ...] = ()
    times: dict[str, _CallTimes] = field(default_factory=dict)
    paused_since: Optional[float] = None
    store_path: Optional[str] = None
    #: served by a worker (GET /runs/{id}): the page carries the actions (reply forms, fork from
    #: here, replay on request) and live updates; the static export (`history --format html`) not
    served: bool = False
    #: module key -> source text, as the run stored them (the "Sources" section shows those a
    #: Call was made from); None: they could not be read (`sources_problem` says why)
    sources: Optional[dict[str, str]] = None
    sources_problem: Optional[str] = None
    #: the replay verdict asked for (`GET /runs/{id}?replay=1`): (Matched | Incomplete | Diverged |
    #: Refused, the diverging fact's number or None, the verdict's line); None: not asked
    verdict: Optional[tuple[str, Optional[int], str]] = None
    #: a one-line message at the top (an action refused: "cannot fork at checkpoint 2: ...")
    message: Optional[str] = None
    #: served by a worker with a token the browser does not hold: the action forms ask for it
    token_needed: bool = False
    #: the served page's reply forms: a token to ask for, text typed and refused (run_page_live)
    form: Optional[live.ReplyForms] = None
    #: call id -> the evidence of its failures (the host's record: flowrt.host.call_failures)
    failures: dict = field(default_factory=dict)


def run_page(
    store: Store,
    prog,
    run_id: str,
    *,
    served: bool = False,
    replay: bool = False,
    message: Optional[str] = None,
    token_needed: bool = False,
    form: Optional[live.ReplyForms] = None,
) -> str:
    """The page of run `run_id` (refused, as `history` is, when its chain is broken); `served`: as
    the worker serves it, with the actions (`form`: the state of its reply forms); `replay`: with
    the replay verdict (the replay operation, flowrt.host.operations.replay) at the top; `message`:
    a one-line message at the top."""
    records = ops.verified_records(store, prog, run_id)
    info = ops.read(store.host_records.load_run, run_id)
    facts = to_json_objects(records)
    calls: tuple[CallView, ...] = ()
    if info.state in ("paused", "halted") and info.open_calls:
        made = {r.fact.id: r.fact for r in records if type(r.fact).__name__ == "Call"}
        # a call whose reply is delivered and waits for the worker to record it is answered:
        # the page no longer offers it (a second reply to it is refused with a notice)
        answered = set(store.worker_records.replies(run_id))
        opened = [
            OpenCall(c, made[c].tool if c in made else "", made[c].args if c in made else None)
            for c, _ in info.open_calls
            if c not in answered
        ]
        calls = ops.read(call_views, store, prog, run_id, opened)
    path = str(store.path)
    same = os.path.abspath(path) == os.path.abspath(os.path.join(os.getcwd(), DEFAULT_STORE))
    sources, problem = None, None
    try:
        sources = ops.read(store.history.sources, run_id)
    except ops.Refused as e:
        problem = str(e)
    verdict = None
    if replay:  # the replay operation itself (flow2py replay): nothing is re-implemented here
        try:
            rep = ops.replay(store, prog, run_id)
            o = rep.outcome
            verdict = (
                type(o).__name__ if o is not None else "Incomplete",
                getattr(o, "fact", None),
                rep.text,
            )
        except ops.Refused as e:
            verdict = ("Refused", None, f"the replay was refused: {e}")
    return page_html(
        RunPage(
            run_id,
            info,
            facts,
            calls,
            _times(store, run_id, [f["id"] for f in facts if f["kind"] == "Call"]),
            store.host_records.paused_times().get(run_id) if info.state == "paused" else None,
            None if same else path,
            served,
            sources,
            problem,
            verdict,
            message,
            token_needed,
            form,
            store.host_records.failures(run_id),
        )
    )


def _times(store: Store, run_id: str, call_ids: list[str]) -> dict[str, _CallTimes]:
    """The host's times per call: when it recorded the Call and the Reply or Stop that closed it,
    and the call site (`call_times`, every host's recorder keeps them); for a call recorded before
    the store kept those, the first attempt's start (sent) and a timer's setting (sent) and firing
    (replied); and since when the call is pending."""
    wr = store.worker_records
    out: dict[str, _CallTimes] = {}
    for call, _due, set_at, fired in wr.timers(run_id):
        out[call] = _CallTimes(dispatched=set_at, replied=fired)
    for call, since in wr.pending_since(run_id).items():
        out.setdefault(call, _CallTimes()).pending = since
    kept = store.host_records.call_times(run_id)
    for call in call_ids:
        t = out.setdefault(call, _CallTimes())
        row = kept.get(call)
        if row is not None:
            dispatched, replied, module, line = row
            t.dispatched = dispatched if dispatched is not None else t.dispatched
            t.replied = replied if replied is not None else t.replied
            t.site = (module, line) if module is not None and line is not None else None
        if t.dispatched is None:
            tried = wr.attempts(run_id, call)
            if tried:
                t.dispatched = tried[0][1]
    return out


# ---- rendering -----------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; max-width: 80em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; } dl { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; }
dt { color: #666; } dd { margin: 0; }
td, th { padding: 3px 10px; vertical-align: top; text-align: left; border-bottom: 1px solid #eee; }
td.n { text-align: right; color: #888; } .mono, code, pre { font-family: ui-monospace, monospace; }
pre { white-space: pre-wrap; margin: 0; } .note { color: #666; font-style: italic; }
.state-paused { color: #9a6700; } .state-completed { color: #116329; }
.state-faulted, .state-halted { color: #cf222e; } .state-running { color: #0550ae; }
tr.Call td.kind { color: #0550ae; } tr.Reply td.kind { color: #116329; }
tr.Choice td.kind, tr.Stop td.kind { color: #8250df; } tr.Checkpoint td.kind { color: #9a6700; }
tr.End td.kind { font-weight: bold; } section.wait { background: #fff8e5; padding: .2em 1em 1em; }
ul.tree, ul.tree ul { list-style: none; padding-left: 1.4em; } summary { cursor: pointer; }
tr.diverged { background: #ffebe9; outline: 2px solid #cf222e; } tr:target { background: #fff8c5; }
section.verdict { padding: .2em 1em .6em; margin: 1em 0; } .verdict-Matched { background: #dafbe1; }
.verdict-Incomplete { background: #fff8e5; } .verdict-Diverged, .verdict-Refused { background: #ffebe9; }
p.message { background: #ffebe9; padding: .5em 1em; } form.inline { display: inline; margin: 0; }
pre.src { background: #f6f8fa; padding: .5em 0; } pre.src span.line { display: block; padding: 0 .6em; }
pre.src span.ln { display: inline-block; width: 4em; color: #888; user-select: none; }
pre.src span.called { background: #ddf4ff; } pre.src span.line:target { background: #fff8c5; outline: 1px solid #9a6700; }
@media (max-width: 760px) { body { margin: .6em; } table { display: block; overflow-x: auto; } }
"""

e = html.escape


def _value(text: str) -> str:
    """A value's Flow text, escaped; a long one folded."""
    if len(text) <= FOLD:
        return f'<code class="v">{e(text)}</code>'
    return f"<details><summary><code>{e(text[:80])}…</code></summary><pre>{e(text)}</pre></details>"


def _when(t: Optional[float]) -> str:
    text = iso_time(t)
    return "" if text is None else e(text)


def _duration(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b < a:
        return ""
    s = b - a
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.3f} s" if s < 60 else f"{s / 60:.1f} min"


def _task_of(call_id: str) -> str:
    """`c1:root/2#3` -> `root/2`."""
    return call_id.partition(":")[2].rpartition("#")[0] if ":" in call_id else call_id.rpartition("#")[0]


def page_html(p: RunPage) -> str:
    """The page's HTML for what `p` holds."""
    title = f"Flow run {p.run_id}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{_CSS}{live.CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p class="message" role="alert">{e(p.message)}</p>' if p.message else "",
        _verdict(p),
        _header(p),
        _waiting(p),
        _timeline(p),
        _tree(p),
        _checkpoints(p),
        _sources(p),
        live.live_html(p),
        "</body></html>",
    ]
    return "\n".join(x for x in parts if x) + "\n"


def _header(p: RunPage) -> str:
    info = p.info
    state = ops.run_state(info)
    if info.state == "paused" and info.open_calls:
        tools = ", ".join(dict.fromkeys(tool_name(t) for _, t in info.open_calls))
        state = f"paused on {tools} ({', '.join(c for c, _ in info.open_calls)})"
    end = next((f["end"] for f in p.facts if f["kind"] == "End"), None)
    rows = [
        ("run", e(p.run_id)),
        ("state", f'<span class="state-{e(info.state)}">{e(state)}</span>'),
        ("program", f"{e(program_name(info))} <span class=mono>{e(info.program[:12])}</span>"),
        ("entry", f"<code>{e(info.entry)}</code>"),
        ("started", _when(info.created or None) or "unknown"),
        ("facts", str(info.facts)),
    ]
    if p.paused_since is not None:
        rows.append(("paused since", _when(p.paused_since)))
    if info.parent is not None:
        rows.append(("fork of", f"{e(info.parent)} at checkpoint {e(str(info.from_checkpoint))}"))
    if end is not None:
        rows.append(("end", _value(end)))
    return "<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _reply_item(c: CallView) -> str:
    return f"{c.id}={'JSON' if c.sample is None else json.dumps(c.sample)}"


def commands(p: RunPage, c: CallView) -> tuple[str, str]:
    """The `flow2py reply` and `flow2py resume` commands that answer open call `c`."""
    store = [] if p.store_path is None else ["--store", p.store_path]
    reply = ["flow2py", "reply", p.run_id, _reply_item(c), *store]
    resume = ["flow2py", "resume", p.run_id, "--reply", _reply_item(c), *store]
    return shlex.join(reply), shlex.join(resume)


def _waiting(p: RunPage) -> str:
    """What a paused run waits on: each open call with its reply type and the commands that answer
    it; on a served page, under each, a form that delivers the reply (run_page_live)."""
    forms = (p.form or live.ReplyForms()) if p.served else None
    notice = live.waiting_notice(forms, {c.id for c in p.calls})
    if not p.calls:
        return f'<section class="wait"><h2>What it waits on</h2>{notice}</section>' if notice else ""
    word = "waits on" if p.info.state == "paused" else "was left with"
    out = [
        '<section class="wait"><h2>What it waits on</h2>',
        notice,
        f"<p>Run {e(p.run_id)} {word} {len(p.calls)} open call(s).</p>",
        "<table><thead><tr><th>call</th><th>Tool</th><th>arguments</th><th>reply type</th>"
        "<th>since</th><th>answer with</th></tr></thead><tbody>",
    ]
    for n, c in enumerate(p.calls, 1):
        t = p.times.get(c.id)
        since = (t.pending if t and t.pending is not None else None) or p.paused_since
        args = "(not at hand)" if c.args is None else ", ".join(c.args)
        reply, resume = commands(p, c)
        out.append(
            f'<tr><td class="mono" data-label="call">{e(c.id)}</td><td class="mono" data-label="Tool">'
            f'{e(c.tool)}</td><td data-label="arguments">{_value(args)}</td><td data-label="reply type">'
            f'<code>{e(c.reply_type)}</code></td><td data-label="since">{_when(since) or "unknown"}</td>'
            f'<td data-label="answer with"><pre>{e(resume)}</pre><span class=note>or, to a worker:</span>'
            f"<pre>{e(reply)}</pre></td></tr>"
        )
        if forms is not None:
            out.append(live.reply_form(p.run_id, n, c, forms, 6))
    out.append("</tbody></table></section>")
    return "\n".join(x for x in out if x)


def _closers(facts: list[dict]) -> dict[str, tuple[int, str]]:
    """call id -> (number of the fact that closed it, how): its Reply, or a Stop."""
    out: dict[str, tuple[int, str]] = {}
    for f in facts:
        if f["kind"] == "Reply":
            out.setdefault(f["id"], (f["n"], f"reply at fact {f['n']}: {f['reply']}"))
        elif f["kind"] == "Stop":
            for c in f["closed"]:
                how = "with no reply" if c["reply"] is None else f"with {c['reply']}"
                out.setdefault(c["call"], (f["n"], f"stopped at fact {f['n']} ({f['task']}) {how}"))
    return out


def _fact_words(f: dict, closers: dict, called: dict) -> str:
    k = f["kind"]
    if k == "Start":
        s = f"{f['entry']} with {f['input']}"
        return s + (f" (fork of {f['parent']} at checkpoint {f['from_checkpoint']})" if "parent" in f else "")
    if k == "Call":
        targs = f"<{', '.join(f['type_args'])}>" if f.get("type_args") else ""
        text = f"{f['tool']}{targs}({', '.join(f['args'])})"
        return f"{text} → {closers[f['id']][1] if f['id'] in closers else 'open: no reply yet'}"
    if k == "Reply":
        return f"{f['reply']} (to {f['id']}, called at fact {called.get(f['id'], '?')})"
    if k == "Choice":
        return f"race in {f['task']} picked {f['picked']}"
    if k == "Stop":
        return _stop_words(f)
    if k == "Checkpoint":
        return f"checkpoint {f['checkpoint']}: {f['function']}({', '.join(f['args'])})"
    return f["end"]


def _stop_words(f: dict) -> str:
    found = "had finished with " + f["value"] if f["found"] == "finished" else "was still running"
    closed = [
        f"{c['call']} closed {'with no reply' if c['reply'] is None else 'with ' + c['reply']}"
        for c in f["closed"]
    ]
    return f"{f['task']} stopped ({found})" + ("; " + "; ".join(closed) if closed else "")


def _verdict(p: RunPage) -> str:
    """The replay verdict at the top (asked for), or, on a served page, the form that asks for it."""
    if p.verdict is None:
        if not p.served:
            return ""
        return (
            '<form method="get" action=""><input type="hidden" name="replay" value="1">'
            '<button type="submit">replay: check the history against its program</button></form>'
        )
    word, fact, line = p.verdict
    at = f' <a href="#fact-{fact}">see fact {fact}</a>' if fact is not None else ""
    return (
        f'<section class="verdict verdict-{e(word)}" id="verdict"><h2>Replay verdict</h2>'
        f"<p><b>{e(line)}</b>{at}</p></section>"
    )


def _source_ids(p: RunPage) -> dict[str, int]:
    """module key -> its number on the page (the anchors `src-<i>-<line>`), for every module of
    the run's stored sources a Call was made from."""
    if not p.sources:
        return {}
    made = {t.site[0] for t in p.times.values() if t.site is not None and t.site[0] in p.sources}
    return {m: i for i, m in enumerate(sorted(made), 1)}


def _site(p: RunPage, t: Optional[_CallTimes], ids: dict[str, int]) -> str:
    if t is None or t.site is None:
        return ""
    module, line = t.site
    where = e(f"{module}.flow:{line}")
    if module not in ids:
        return f"<span class=mono>{where}</span>"
    return f'<a class="mono" href="#src-{ids[module]}-{line}">{where}</a>'


def _timeline(p: RunPage) -> str:
    closers = _closers(p.facts)
    called = {f["id"]: f["n"] for f in p.facts if f["kind"] == "Call"}
    ids = _source_ids(p)
    bad = p.verdict[1] if p.verdict is not None and p.verdict[0] == "Diverged" else None
    out = [
        "<h2>Timeline</h2>",
        "<p class=note>History itself records no times: the times here are the host's records "
        "(when it recorded a call, just before sending it, and the reply or stop that closed it; "
        "since when a call is pending; when a timer fired), where it kept them. Each call links to "
        "the Flow line that made it (as the host recorded it), in the run's stored sources.</p>",
        "<table><thead><tr><th>n</th><th>kind</th><th>task</th><th>fact</th><th>made at</th>"
        "<th>sent (host)</th><th>replied (host)</th><th>took</th></tr></thead><tbody>",
    ]
    last = 0
    for f in p.facts:
        n, k = f["n"], f["kind"]
        if n > last + 1:
            out.append(
                f"<tr><td></td><td></td><td></td><td class=note>facts {last + 1}–{n - 1} archived</td></tr>"
            )
            if bad is not None and last < bad < n:
                bad = None  # an archived fact: not on the page
        last = n
        task = _task_of(f["id"]) if k in ("Call", "Reply") else f.get("task", "")
        t = p.times.get(f["id"]) if k == "Call" else None
        sent = t.dispatched if t else None
        replied = t.replied if t else None
        cls = f"{k} diverged" if n == bad else k
        out.append(
            f'<tr class="{cls}" id="fact-{n}"><td class="n">{n}</td><td class="kind">{k}</td>'
            f'<td class="mono">{e(task)}</td><td>{_value(_fact_words(f, closers, called))}</td>'
            f"<td>{_site(p, t, ids)}</td><td>{_when(sent)}</td>"
            f"<td>{_when(replied)}</td><td>{_duration(sent, replied)}</td></tr>"
        )
        out += _failure_rows(p, f)
    out.append("</tbody></table>")
    return "\n".join(out)


def _failure_rows(p: RunPage, f: dict) -> list[str]:
    """Under the fact that closed a failed call (its Reply, or a Stop with the reply that had
    arrived): what its implementation raised and the traceback, folded (the host's record)."""
    if f["kind"] == "Reply":
        calls = [f["id"]]
    elif f["kind"] == "Stop":
        calls = [c["call"] for c in f["closed"] if c["reply"] is not None]
    else:
        return []
    rows = []
    for call in calls:
        for fl in p.failures.get(call, ()):
            head = f"{fl.exc_type}: {fl.message}" if fl.message else fl.exc_type
            rows.append(
                f'<tr class="failure"><td></td><td></td><td class="mono">{e(call)}</td><td colspan=4>'
                f"<details><summary>raised {e(head)} (the host's record, not history)</summary>"
                f"<pre>{e(fl.traceback)}</pre></details></td></tr>"
            )
    return rows


def _tree(p: RunPage) -> str:
    closers = _closers(p.facts)
    tasks: dict[str, list[str]] = {"root": []}
    for i, f in enumerate(p.facts):
        k = f["kind"]
        if k == "Call":
            tasks.setdefault(_task_of(f["id"]), []).append(
                f"{f['id']} {f['tool']}({', '.join(f['args'])}) → "
                + (closers[f["id"]][1] if f["id"] in closers else "open")
            )
        elif k == "Choice":
            tasks.setdefault(f["task"], []).append(_race_words(f, p.facts[i + 1 :]))
            tasks.setdefault(f["picked"], [])
        elif k == "Stop":
            tasks.setdefault(f["task"], []).append(_stop_words(f))
    for t in list(tasks):  # every ancestor of a task is in the tree
        while "/" in t:
            t = t.rpartition("/")[0]
            tasks.setdefault(t, [])
    return "<h2>Tasks</h2>\n" + _subtree("root", tasks, set())


def _race_words(choice: dict, after: list[dict]) -> str:
    """`race in root picked root/2; root/1 stopped with no reply`: the Choice and the Stops of
    the losing siblings that follow it."""
    parent = choice["picked"].rpartition("/")[0]
    words = [f"race in {choice['task']} picked {choice['picked']}"]
    for f in after:
        if f["kind"] != "Stop" or f["task"].rpartition("/")[0] != parent:
            break
        if f["found"] == "finished":
            words.append(f"{f['task']} had finished with {f['value']}")
        elif not f["closed"]:
            words.append(f"{f['task']} stopped")
        else:
            how = [("with no reply" if c["reply"] is None else f"with {c['reply']}") for c in f["closed"]]
            words.append(f"{f['task']} stopped {', '.join(dict.fromkeys(how))}")
    return "; ".join(words)


def _subtree(task: str, tasks: dict[str, list[str]], seen: set) -> str:
    seen.add(task)
    items = "".join(f"<li>{_value(x)}</li>" for x in tasks.get(task, []))
    kids = sorted((t for t in tasks if t.rpartition("/")[0] == task and t not in seen), key=_task_key)
    below = "".join(_subtree(k, tasks, seen) for k in kids)
    return f'<ul class="tree"><li><b class="mono">{e(task)}</b><ul>{items}</ul>{below}</li></ul>'


def _task_key(t: str) -> list:
    return [int(x) if x.isdigit() else x for x in t.split("/")]


def _checkpoints(p: RunPage) -> str:
    cps = [f for f in p.facts if f["kind"] == "Checkpoint"]
    if not cps:
        return "<h2>Checkpoints</h2><p class=note>none</p>"
    out = ["<h2>Checkpoints</h2>", "<table><thead><tr><th>N</th><th>fact</th><th>function and arguments</th>"]
    out.append("<th>fork from it</th></tr></thead><tbody>")
    for f in cps:
        call = f"{f['function']}({', '.join(f['args'])})"
        fork = shlex.join(["flow2py", "fork", p.run_id, "--checkpoint", str(f["checkpoint"])])
        out.append(
            f'<tr><td class="n">{f["checkpoint"]}</td><td class="n">{f["n"]}</td><td>{_value(call)}</td>'
            f"<td>{_fork_form(p, f['checkpoint'])}<code>{e(fork)}</code></td></tr>"
        )
    out.append("</tbody></table>")
    return "\n".join(out)


def _fork_form(p: RunPage, checkpoint: int) -> str:
    """On a served page: the plain form that forks the run at `checkpoint` as a new run for the
    worker (POST runs/{id}/fork, relative to the page; the answer is the new run's page)."""
    if not p.served:
        return ""
    token = (
        '<label>token <input type="password" name="token" autocomplete="off" required></label> '
        if p.token_needed
        else ""
    )
    return (
        f'<form class="inline" method="post" action="{e(quote(p.run_id, safe=""))}/fork">'
        f'<input type="hidden" name="checkpoint" value="{int(checkpoint)}">{token}'
        f'<button type="submit">fork from here</button></form> <span class=note>or</span> '
    )


def _sources(p: RunPage) -> str:
    """The stored text of every module a Call was made from, its lines numbered, each an anchor
    (`src-<i>-<line>`); the lines that made calls marked, the one a link points at highlighted."""
    if p.sources is None:
        return f"<h2>Sources</h2><p class=note>not at hand: {e(p.sources_problem or 'unknown')}</p>"
    ids = _source_ids(p)
    if not ids:
        return ""
    lines_of: dict[str, set] = {}
    for t in p.times.values():
        if t.site is not None:
            lines_of.setdefault(t.site[0], set()).add(t.site[1])
    out = [
        "<h2>Sources</h2>",
        "<p class=note>The modules the run's calls were made from, as the run stored them.</p>",
    ]
    for module, i in ids.items():
        called = lines_of.get(module, set())
        rows = "".join(
            f'<span class="line{" called" if n in called else ""}" id="src-{i}-{n}">'
            f'<span class="ln">{n}</span>{e(text)}</span>'
            for n, text in enumerate(p.sources[module].splitlines() or [""], 1)
        )
        out.append(
            f'<details open id="src-{i}"><summary class="mono">{e(module)}.flow</summary><pre class="src">{rows}</pre></details>'
        )
    return "\n".join(out)
