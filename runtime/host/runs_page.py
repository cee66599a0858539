"""The runs page: the worker's `GET /` for a browser (docs/spec/http.md, docs/spec/trace.md "The
runs page").

One self-contained HTML document in the run page's style (flowrt.host.run_page: inline style, no
script, no network, no external asset): every run of the page with its state (and the Tools a
paused run waits on), program, entry, when it started, since when it is paused, and its facts;
each run linked to its page by a relative link (`runs/{id}`). A plain GET form filters by state
and program; the runs are newest first, `limit` a page (default 50) from `offset`, with previous
and next links. Every text is HTML-escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence
from urllib.parse import quote, urlencode

from flowrt.host.run_page import _CSS, _when, e
from flowrt.host.runs_view import tool_name
from flowrt.host.worker_ops import STATES

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "RunsQuery", "runs_page_html"]

#: runs a page when the query names no `limit`
DEFAULT_LIMIT = 50
#: the most runs one page shows, whatever `limit` asks
MAX_LIMIT = 1000


@dataclass(frozen=True)
class RunsQuery:
    """What the page shows: the filters (None: any) and the page (`limit` runs from `offset`)."""

    state: Optional[str] = None
    program: Optional[str] = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def href(self, offset: int) -> str:
        """The relative link to this query's page at `offset`."""
        q = {"state": self.state, "program": self.program}
        q = {k: v for k, v in q.items() if v}
        if self.limit != DEFAULT_LIMIT:
            q["limit"] = str(self.limit)
        if offset:
            q["offset"] = str(offset)
        return "?" + urlencode(q) if q else "./"


def runs_page_html(found: Sequence, query: RunsQuery, more: bool) -> str:
    """The page of `found` (RunStatus, newest first: the runs of `query`'s page); `more`: a run
    follows the page (the next link)."""
    rows = "".join(_row(st) for st in found)
    if not found:
        rows = '<tr><td colspan="7" class="note">no runs</td></tr>'
    first, last = query.offset + 1, query.offset + len(found)
    shown = f"runs {first}–{last}" if found else "no runs"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Flow runs</title><style>{_CSS}</style></head><body>"
        f"<h1>Flow runs</h1>{_form(query)}"
        f'<p class="note">{e(shown)}, newest first</p>'
        "<table><thead><tr><th>run</th><th>state</th><th>program</th><th>entry</th>"
        "<th>started</th><th>paused since</th><th>facts</th></tr></thead><tbody>"
        f"{rows}</tbody></table>{_pager(query, more)}</body></html>\n"
    )


def _row(st) -> str:
    state = e(st.state)
    if st.state == "paused" and st.open_calls:
        tools = ", ".join(dict.fromkeys(tool_name(c.tool) or "?" for c in st.open_calls))
        state += f" on {e(tools)}"
    return (
        f'<tr><td class="mono"><a href="runs/{quote(st.run_id, safe="")}">{e(st.run_id)}</a></td>'
        f'<td class="state-{e(st.state.split(":")[0])}">{state}</td><td>{e(str(st.program))}</td>'
        f"<td>{e(st.entry)}</td><td>{_when(st.started)}</td><td>{_when(st.paused_since)}</td>"
        f'<td class="n">{st.facts}</td></tr>'
    )


def _form(query: RunsQuery) -> str:
    options = ['<option value="">any</option>'] + [
        f'<option value="{s}"{" selected" if s == query.state else ""}>{s}</option>' for s in STATES
    ]
    limit = (
        f'<input type="hidden" name="limit" value="{query.limit}">' if query.limit != DEFAULT_LIMIT else ""
    )
    return (
        '<form method="get" action="">'
        f'<label>state <select name="state">{"".join(options)}</select></label> '
        f'<label>program <input name="program" value="{e(query.program or "")}"></label> '
        f'{limit}<button type="submit">filter</button></form>'
    )


def _pager(query: RunsQuery, more: bool) -> str:
    links = []
    if query.offset > 0:
        back = max(0, query.offset - query.limit)
        links.append(f'<a rel="prev" href="{e(query.href(back))}">previous {query.limit}</a>')
    if more:
        links.append(
            f'<a rel="next" href="{e(query.href(query.offset + query.limit))}">next {query.limit}</a>'
        )
    return f"<p>{' · '.join(links)}</p>" if links else ""
