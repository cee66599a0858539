"""`flow2py fmt`: one canonical layout for Flow source, keeping every comment.

`format_source(text, path)` parses the text, prints the tree in the canonical layout
(layout.py) with each comment put back where it belongs (comments.py), and checks its own
output before handing it back: the output must parse without a diagnostic to the same tree
(`ast.to_data`, what program identity hashes) and hold the same comments. A text with a
syntax error is refused (`FormatError` with the parser's diagnostics): it is never partly
formatted. docs/spec/grammar.md ("Formatting") states the layout.
"""

from __future__ import annotations

from collections import Counter

from flow2py.diagnostics import Diagnostic
from flow2py.format.comments import Source, attach, find_comments
from flow2py.format.layout import WIDTH, Printer
from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module

__all__ = ["WIDTH", "FormatError", "format_source"]


class FormatError(Exception):
    """The text cannot be formatted: its syntax errors (`diagnostics`), or, if the formatter
    itself went wrong, a message and no diagnostics (the text is then left as it was)."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] = ()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


def format_source(text: str, path: str) -> str:
    """`text` (the source of the module at `path`) in the canonical layout."""
    module, diags = parse_module(text, path)
    if diags:
        raise FormatError(f"{path}: not formatted: the file has syntax errors", diags)
    text = module.source  # as the parser read it (a lone surrogate would have been reported)
    comments = find_comments(text)
    src = Source(text, comments)
    out = Printer(src, attach(module, src)).module(module)
    _verify(module, comments, out, path)
    return out


def _verify(module: ast.Module, comments, out: str, path: str) -> None:
    again, diags = parse_module(out, path)
    if diags:
        first = diags[0]
        raise FormatError(
            f"{path}: not formatted: the formatted text would not parse ({first.code} at line "
            f"{first.span.line}: {first.message}); this is a bug in flow2py fmt"
        )
    if ast.to_data(again) != ast.to_data(module):
        raise FormatError(
            f"{path}: not formatted: the layout would change the program; this is a bug in flow2py fmt"
        )
    if Counter(c.text for c in find_comments(out)) != Counter(c.text for c in comments):
        raise FormatError(f"{path}: not formatted: a comment would be lost; this is a bug in flow2py fmt")
