"""Where a thing is in a source file: the one type both the syntax tree and the diagnostics
need. It lives on the ground floor (it imports nothing of the project) so that
flow2py/diagnostics.py depends on nothing above it; flow2py.syntax.ast re-exports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of one source file. Lines and columns are 1-based; `end_*` is exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    start: int = 0  # character offsets into the source
    end: int = 0

    def merge(self, other: Span) -> Span:
        return Span(
            self.file, self.line, self.column, other.end_line, other.end_column, self.start, other.end
        )


NO_SPAN = Span("<none>", 0, 0, 0, 0)
