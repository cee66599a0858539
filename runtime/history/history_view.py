"""Rendering a history for people and tools: text (the seed's notation), JSON Lines, HTML.

Every renderer takes a list of `StoredFact` (what `store.history.records(run, classes=program.classes)`
returns: numbers, hashes and stored bytes included; the values already decoded with the run's
program's classes, so rendering looks no class up) or a plain list of facts, which it numbers from 1 and chains from the zero
hash exactly as a store would. Values are shown as Flow text (`flowrt.data.values.show`); a hole shows
as `<hole blake3:...>`. The JSON Lines keys are fixed by docs/spec/trace.md "Rendering"; each object
also carries `values`, the content hashes of the fact's value slots (what `redact` takes).
"""

from __future__ import annotations

from datetime import datetime, timezone

import html
import json
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

from flowrt.history import trace as T
from flowrt.data import values as V
from flowrt.data.facts import (
    Call,
    Checkpoint,
    Choice,
    Completed,
    End,
    Fact,
    ParkedTask,
    Reply,
    Start,
    Stop,
)

__all__ = ["to_jsonl", "to_json_objects", "to_text", "to_html", "fact_text", "jsonl_lines", "text_lines"]


@dataclass(frozen=True, slots=True)
class _Row:
    n: int
    fact: Fact
    hash: str
    prev: Optional[str]
    values: tuple[str, ...]


def _rows(facts: Sequence[Any]) -> list[_Row]:
    if not facts:
        return []
    if hasattr(facts[0], "fact") and hasattr(facts[0], "n"):
        return [_Row(s.n, s.fact, s.hash, s.prev, s.values) for s in facts]
    out, prev = [], T.ZERO_HASH
    for i, f in enumerate(facts, 1):
        enc = T.encode_fact(f)
        h = T.chain(prev, enc.chained)
        out.append(_Row(i, f, h.hex(), prev.hex(), tuple(d.hex() for d in enc.slots)))
        prev = h
    return out


# ---- value text -------------------------------------------------------------------------------


class _ParkedText:
    """Stands for a parked task inside a checkpoint's arguments when rendering."""

    __slots__ = ("p",)

    def __init__(self, p: ParkedTask):
        self.p = p

    def __flow_text__(self) -> str:
        p = self.p
        if p.ctor is None:
            return f"<task {p.task} on {p.call}>"
        data = "".join(V.show(d) + ", " for d in p.data)
        return f"<task {p.task} on {p.call} as {p.ctor}({data}…)>"


def _swap_parked(v: Any) -> Any:
    """The value with parked tasks replaced by renderable stand-ins (containers rebuilt)."""
    t = type(v)
    if t is ParkedTask:
        return _ParkedText(v)
    if t is V.List:
        return V.list_of([_swap_parked(x) for x in v])
    if t is tuple:
        return tuple(_swap_parked(x) for x in v)
    if t is V.Dict:
        return V.dict_of([(k, _swap_parked(x)) for k, x in v.items()])
    if isinstance(v, V._Data) and t.__flow_fields__:
        return t(*[_swap_parked(getattr(v, f)) for f in t.__flow_fields__])
    return v


def _text(v: Any) -> str:
    return V.show(v)


def _name(decl: str) -> str:
    """A declaration's name as a program writes it at a call site in its own module."""
    return decl.rsplit("::", 1)[-1]


def _end_text(fact: End) -> str:
    e = fact.end
    if type(e) is Completed:
        return f"Completed({_text(e.value)})"
    where = f"{e.file}:{e.line}" + (f":{e.column}" if e.column else "")
    return f"Faulted({where}: {e.message})"


def _input_text(f: Start) -> str:
    if f.param_names and len(f.param_names) == len(f.input):
        # a fork's Start may hold parked tasks (flowrt.host.forks)
        return (
            "{ " + ", ".join(f"{p}: {_text(_swap_parked(v))}" for p, v in zip(f.param_names, f.input)) + " }"
        )
    return "{}" if not f.input else _text(_swap_parked(tuple(f.input)))


def _call_text(name: str, type_args: Iterable[str], args: Iterable[Any]) -> str:
    targs = list(type_args)
    return f"{name}{'<' + ', '.join(targs) + '>' if targs else ''}({', '.join(_text(a) for a in args)})"


# ---- JSON Lines -------------------------------------------------------------------------------


def _json_object(r: _Row) -> dict:
    f = r.fact
    t = type(f)
    o: dict[str, Any] = {"n": r.n, "kind": t.__name__, "hash": r.hash, "prev": r.prev}
    if t is Start:
        o.update(
            program=f.program, std=f.std, data_version=f.data_version, entry=f.entry, input=_input_text(f)
        )
        if f.parent is not None:
            o.update(parent=f.parent, from_checkpoint=f.from_checkpoint)
    elif t is Call:
        o.update(id=f.id, tool=f.tool, tool_id=f.tool_id, args=[_text(a) for a in f.args])
        if f.type_args:
            o["type_args"] = list(f.type_args)
    elif t is Reply:
        o.update(id=f.id, reply=_text(f.reply))
    elif t is Choice:
        o.update(task=f.task, picked=f.picked)
    elif t is Stop:
        o.update(task=f.task, found=f.found)
        if f.found == "finished":
            o["value"] = _text(f.value)
        o["closed"] = [{"call": c.call, "reply": _text(c.reply) if c.has_reply else None} for c in f.closed]
    elif t is Checkpoint:
        o.update(
            checkpoint=f.checkpoint,
            function=_name(f.function),
            type_args=list(f.type_args),
            args=[_text(_swap_parked(a)) for a in f.args],
        )
    elif t is End:
        o["end"] = _end_text(f)
    if r.values:
        o["values"] = list(r.values)
    return o


def to_json_objects(facts: Sequence[Any]) -> list[dict]:
    return [_json_object(r) for r in _rows(facts)]


def to_jsonl(facts: Sequence[Any]) -> str:
    """`history --format json`: one JSON object per fact, in order, each line ending in "\\n"."""
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in to_json_objects(facts))


def jsonl_lines(records: Iterable[Any]) -> Iterator[str]:
    """`to_jsonl` one line at a time, over stored facts as they are read (`StoredFact`s from
    `store.history.iter_records`): what `history --format json` writes as it goes."""
    dumps = json.dumps
    for s in records:
        yield dumps(_json_object(s), ensure_ascii=False) + "\n"


# ---- text -------------------------------------------------------------------------------------


def _id_col(f: Fact) -> str:
    t = type(f)
    if t is Call or t is Reply:
        return f.id
    if t is Choice or t is Stop:
        return f.task
    return ""


def fact_text(f: Fact) -> str:
    """The content column of the text format for one fact."""
    t = type(f)
    if t is Start:
        s = f"program={f.program[:12]}  {f.std}  data={f.data_version}  entry={f.entry}  input={_input_text(f)}"
        if f.parent is not None:
            s += f"  fork of {f.parent} at checkpoint {f.from_checkpoint}"
        return s
    if t is Call:
        return _call_text(f.tool, f.type_args, f.args)
    if t is Reply:
        return _text(f.reply)
    if t is Choice:
        return f"picked {f.picked}"
    if t is Stop:
        parts = [f"found finished with {_text(f.value)}"] if f.found == "finished" else []
        for c in f.closed:
            parts.append(
                f"closed {c.call} with {_text(c.reply)}" if c.has_reply else f"closed {c.call} with no reply"
            )
        return "; ".join(parts) or "found running"
    if t is Checkpoint:
        return _call_text(_name(f.function), f.type_args, [_swap_parked(a) for a in f.args])
    if t is End:
        return _end_text(f)
    raise TypeError(f"not a fact: {f!r}")


def _gap(prev_n: int, n: int) -> Optional[str]:
    if n == prev_n + 1:
        return None
    return f"facts {prev_n + 1}–{n - 1} archived" if n - 1 > prev_n + 1 else f"fact {prev_n + 1} archived"


def to_text(facts: Sequence[Any], width: Optional[int] = None) -> str:
    """The seed's illustrative notation: number, id, kind, content (cut to `width` if given)."""
    rows = _rows(facts)
    if not rows:
        return ""
    iw = max(len(_id_col(r.fact)) for r in rows)
    return "".join(text_lines(rows, rows[-1].n, iw, width))


def text_lines(
    records: Iterable[Any], last_n: int, id_width: int, width: Optional[int] = None
) -> Iterator[str]:
    """`to_text` one line at a time (each ending in "\\n"), over stored facts as they are read.
    The columns are as wide as the whole history needs, so they are given: `last_n`, the number
    of the last fact, and `id_width`, the longest call or task id (what `verify`'s audit notes
    as it walks the facts: flowrt.history.integrity.Audit)."""
    nw = len(str(last_n))
    iw = id_width
    last = 0
    for r in records:
        f = r.fact
        n = r.n
        gap = _gap(last, n)
        if gap:
            yield f"{'':>{nw}}  {'':<{iw}}  {'':<11} … {gap}\n"
        content = fact_text(f)
        if width is not None and len(content) > width:
            content = content[: max(width - 1, 0)] + "…"
        yield f"{n:>{nw}}  {_id_col(f):<{iw}}  {type(f).__name__:<11} {content}".rstrip() + "\n"
        last = n


# ---- HTML -------------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
td, th { padding: 3px 10px; vertical-align: top; text-align: left; border-bottom: 1px solid #eee; }
td.n { text-align: right; color: #888; }
td.id, td.content, td.hash { font-family: ui-monospace, monospace; white-space: pre-wrap; }
td.hash { color: #999; font-size: 12px; }
tr.Call td.kind { color: #0550ae; } tr.Reply td.kind { color: #116329; }
tr.Choice td.kind, tr.Stop td.kind { color: #8250df; } tr.Checkpoint td.kind { color: #9a6700; }
tr.End td.kind { font-weight: bold; } tr.gap td { color: #888; font-style: italic; }
"""


def to_html(facts: Sequence[Any], title: str = "Flow history") -> str:
    """A self-contained page (inline style, no script); every text is HTML-escaped."""
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        "<table><thead><tr><th>n</th><th>id</th><th>kind</th><th>fact</th><th>hash</th></tr></thead><tbody>",
    ]
    last = 0
    for r in _rows(facts):
        gap = _gap(last, r.n)
        if gap:
            out.append(f'<tr class="gap"><td></td><td></td><td></td><td>{e(gap)}</td><td></td></tr>')
        kind = type(r.fact).__name__
        out.append(
            f'<tr class="{kind}"><td class="n">{r.n}</td><td class="id">{e(_id_col(r.fact))}</td>'
            f'<td class="kind">{kind}</td><td class="content">{e(fact_text(r.fact))}</td>'
            f'<td class="hash" title="{e(r.hash)}">{e(r.hash[:12])}</td></tr>'
        )
        last = r.n
    out.append("</tbody></table></body></html>")
    return "\n".join(out) + "\n"


def iso_time(t: Optional[float]) -> Optional[str]:
    """A POSIX time as UTC ISO 8601 to the millisecond (`2026-12-01T15:00:11.143Z`); None for
    none, or for one outside the years 1-9999."""
    if t is None:
        return None
    try:  # a host record is anyone's to edit: a time no calendar holds is shown as unknown
        return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, ValueError, OSError):
        return None
