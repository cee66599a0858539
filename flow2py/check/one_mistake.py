"""One mistake, one diagnostic: reports of the same mistake at several places are folded into
the first, the others its related notes.

A private declaration (or field) of another module used at several places of one module is one
missing `pub` (E109): it is reported at its first use there, with the declaration and each other
use as notes, and the one fix writing `pub` (docs/spec/diagnostics.md, E109).

An import cycle one of whose `use`s is never used (E112) is one mistake: the cycle (E104), whose
fix is then that removal (safe: nothing needs the `use`, and without it the cycle is gone).

Java's `new Summary(a, b)` of a record (or a constructor with named fields) is one mistake: the
E202 of the positional values, saying Flow has no `new` either, its fix removing `new` too; not
also the E012 of `new`.
"""

from __future__ import annotations

import dataclasses

from flow2py.diagnostics import Diagnostic, Fix, Problems, Related
from flow2py.span import Span

ALSO_USED = "also used here"


def fold(problems: Problems) -> None:
    """Fold the reports of one mistake (see the docstring at the top) in `problems`."""
    items = problems.items
    groups: dict[tuple, list[int]] = {}
    for k, d in enumerate(items):
        if d.code == "E109":
            key = (d.span.file, d.message, d.related, d.fixes)
            groups.setdefault(key, []).append(k)
    gone: set[int] = set()
    for ks in groups.values():
        if len(ks) < 2:
            continue
        ks.sort(key=lambda k: (items[k].span.line, items[k].span.column))
        first = items[ks[0]]
        others = _distinct([items[k] for k in ks[1:]], first)
        notes = first.related + tuple(Related(ALSO_USED, d.span) for d in others)
        items[ks[0]] = dataclasses.replace(first, related=notes)
        gone.update(ks[1:])
    gone |= _unused_in_cycle(items)
    gone |= _new_before_record(items)
    if gone:
        items[:] = [d for k, d in enumerate(items) if k not in gone]


def _unused_in_cycle(items: list[Diagnostic]) -> set[int]:
    """The E112s of a `use` of a reported import cycle, their fix moved to the cycle's E104."""
    gone: set[int] = set()
    for j, c in enumerate(items):
        if c.code != "E104" or c.fixes:
            continue
        uses = {c.span} | {r.span for r in c.related}
        k = next((k for k, d in enumerate(items) if d.code == "E112" and d.span in uses and d.fixes), None)
        if k is not None:
            items[j] = dataclasses.replace(c, fixes=items[k].fixes)
            gone.add(k)
    return gone


def _new_before_record(items: list[Diagnostic]) -> set[int]:
    """The E012s of a `new` written before a record built with positional values (E202), folded
    into that E202: its message says so and its fix removes `new` as well."""
    news = {}
    for k, d in enumerate(items):
        if d.code == "E012" and getattr(d.data, "kind", "") == "new" and len(d.fixes) == 1:
            edits = d.fixes[0].edits
            if len(edits) == 1 and edits[0].text == "":
                news[(d.span.file, edits[0].span.end)] = k
    gone: set[int] = set()
    if not news:
        return gone
    for j, d in enumerate(items):
        data = d.data
        if d.code != "E202" or getattr(data, "form", "") not in ("record-call", "named-call"):
            continue
        k = news.get((d.span.file, d.span.start))
        if k is None:
            continue
        drop = items[k].fixes[0].edits
        fixes = tuple(Fix(f.message, drop + f.edits, f.safe) for f in d.fixes) or (
            Fix("remove `new`", drop, False),
        )
        a, b = items[k].span, d.span
        at = Span(b.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end)
        items[j] = Diagnostic.of(dataclasses.replace(data, after_new=True, span=at), d.related, fixes)
        gone.add(k)
    return gone


def _distinct(ds: list[Diagnostic], first: Diagnostic) -> list[Diagnostic]:
    """`ds` without a second report at one place (nor one at `first`'s)."""
    seen = {first.span}
    out = []
    for d in ds:
        if d.span not in seen:
            seen.add(d.span)
            out.append(d)
    return out
