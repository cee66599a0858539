"""Diagnostics are data; rendering is separate.

Every kind of error has a stable code in `CODES` (one registry, codes never reused). Each code
has a page in docs/spec/diagnostics.md and at least one golden case under golden/diagnostics/;
tests/test_diagnostics_registry.py enforces both.

Code ranges: E0xx syntax, E1xx modules and names, E2xx types, E3xx effects,
E4xx checks (exhaustiveness, discards, unused, `?`, guard), E5xx declarations and annotations.

Every code has one typed class, a frozen dataclass deriving from its phase's base (`SyntaxData`
in flow2py/syntax/codes.py, `CheckData` in flow2py/check/codes.py) and so from `Data`: its class
attribute `code`, its fields the data (the offending name or text, the tokens, the types, the
span), and no message text. The message is computed from the fields in the one renderer module
of the phase (`renderer`: flow2py/syntax/messages.py, flow2py/check/messages.py), and
`Diagnostic.of(data)` (or `Problems.report(data)`) turns the object into the `Diagnostic` that is
sorted, rendered and serialised, keeping it as `.data`.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from typing import ClassVar

from flow2py.span import Span


@dataclass(frozen=True)
class Code:
    code: str
    name: str  # short kebab-case name, e.g. "non-exhaustive-match"
    summary: str  # one line: what the rule is


CODES: dict[str, Code] = {}


def register(code: str, name: str, summary: str) -> Code:
    if code in CODES:
        raise ValueError(f"diagnostic code {code} registered twice")
    c = Code(code, name, summary)
    CODES[code] = c
    return c


# The typed class of each converted code (one per code; `Data.__init_subclass__` fills it).
CLASSES: dict[str, type[Data]] = {}


@dataclass(frozen=True)
class Data:
    """One diagnostic as data: subclass it once per code, as a frozen dataclass whose fields hold
    what the message says (names, tokens, types, places). A phase's base class names the module
    rendering its messages (`renderer`, whose `message(data)` gives the text)."""

    code: ClassVar[str]
    renderer: ClassVar[str]  # the phase's renderer module, e.g. "flow2py.syntax.messages"
    span: Span

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code is None:
            return  # a phase's base class
        if code not in CODES:
            raise ValueError(f"{cls.__name__}: unregistered diagnostic code {code}")
        if code in CLASSES:
            raise ValueError(
                f"diagnostic code {code} has two classes: {CLASSES[code].__name__}, {cls.__name__}"
            )
        CLASSES[code] = cls

    @property
    def message(self) -> str:
        return importlib.import_module(self.renderer).message(self)


@dataclass(frozen=True)
class Edit:
    """Replace the text between `span.start` and `span.end` (character offsets) with `text`."""

    span: Span
    text: str


@dataclass(frozen=True)
class Fix:
    message: str
    edits: tuple[Edit, ...]
    safe: bool  # safe to apply without asking (no choice involved)


@dataclass(frozen=True)
class Related:
    message: str
    span: Span


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()
    data: Data | None = field(default=None, compare=False, repr=False)  # the typed object, if any

    def __post_init__(self):
        if self.code not in CODES:
            raise ValueError(f"unregistered diagnostic code {self.code}")

    @classmethod
    def of(cls, data: Data, related=(), fixes=()) -> Diagnostic:
        """The diagnostic reporting `data`: its code, its message rendered, its span."""
        return cls(data.code, data.message, data.span, tuple(related), tuple(fixes), data)


class Problems:
    """A sink for diagnostics: independent parts of the pipeline keep reporting."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, code: str, message: str, span: Span, related=(), fixes=()) -> Diagnostic:
        d = Diagnostic(code, message, span, tuple(related), tuple(fixes))
        self.items.append(d)
        return d

    def report(self, data: Data, related=(), fixes=()) -> Diagnostic:
        d = Diagnostic.of(data, related, fixes)
        self.items.append(d)
        return d

    def extend(self, ds) -> None:
        self.items.extend(ds)

    def __bool__(self) -> bool:
        return bool(self.items)

    def sorted(self) -> list[Diagnostic]:
        seen = set()
        out = []
        for d in sorted(
            self.items, key=lambda d: (d.span.file, d.span.line, d.span.column, d.code, d.message)
        ):
            key = (d.code, d.message, d.span)
            if key not in seen:
                seen.add(key)
                out.append(d)
        return out


# ---------------------------------------------------------------------------------------------
# Rendering


def _span_json(span: Span) -> dict:
    return {
        "file": span.file,
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
    }


def to_json(diags: list[Diagnostic]) -> str:
    out = []
    for d in diags:
        obj = {"code": d.code, "message": d.message, **_span_json(d.span)}
        obj["related"] = [{"message": r.message, **_span_json(r.span)} for r in d.related]
        obj["fixes"] = [
            {
                "message": f.message,
                "safe": f.safe,
                "edits": [
                    {**_span_json(e.span), "start": e.span.start, "end": e.span.end, "text": e.text}
                    for e in f.edits
                ],
            }
            for f in d.fixes
        ]
        out.append(obj)
    return json.dumps(out, indent=2, ensure_ascii=False)


def _excerpt(span: Span, sources: dict[str, str], label: str = "") -> list[str]:
    text = sources.get(span.file)
    if text is None or span.line <= 0:
        return []
    lines = text.splitlines()
    if span.line > len(lines):
        return []
    line = lines[span.line - 1]
    num = str(span.line)
    pad = " " * len(num)
    start = max(span.column, 1)
    if span.end_line == span.line:
        end = max(span.end_column, start + 1)
    else:
        end = len(line) + 1
    marks = " " * (start - 1) + "^" * max(end - start, 1)
    out = [f"{pad} |", f"{num} | {line}", f"{pad} | {marks}{(' ' + label) if label else ''}"]
    return out


def render_text(diags: list[Diagnostic], sources: dict[str, str]) -> str:
    """Render diagnostics for a terminal: code, message, the source line underlined, related
    places, and fixes (marked safe or not)."""
    blocks = []
    for d in diags:
        lines = [f"error[{d.code}]: {d.message}", f"  --> {d.span.file}:{d.span.line}:{d.span.column}"]
        lines += ["  " + x for x in _excerpt(d.span, sources)]
        for r in d.related:
            lines.append(f"  note: {r.message}")
            lines.append(f"    --> {r.span.file}:{r.span.line}:{r.span.column}")
            lines += ["    " + x for x in _excerpt(r.span, sources)]
        for f in d.fixes:
            kind = "safe fix" if f.safe else "fix (review before applying)"
            lines.append(f"  {kind}: {f.message}")
        blocks.append("\n".join(lines))
    n = len(diags)
    if n:
        blocks.append(f"{n} error{'s' if n != 1 else ''}")
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def apply_fix(source: str, fix: Fix) -> str:
    """Apply every edit of a fix (they never overlap) to one file's text."""
    out = source
    for e in sorted(fix.edits, key=lambda e: e.span.start, reverse=True):
        out = out[: e.span.start] + e.text + out[e.span.end :]
    return out
