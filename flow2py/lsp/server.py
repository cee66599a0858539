"""`flow2py lsp`: the language server over stdio (pygls), docs/spec/editor.md.

Every open document is checked as the entry module of its program (its `use`s read from the
editor's text where they are open, else from disk) on open and on each change, incrementally
(incremental.py), and so is every open document that imports it; the answers come from
analysis.py.
"""

from __future__ import annotations

import bisect
import gc
import os
import sys
import time

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from flow2py import __version__
from flow2py.check.modgraph import std_dir
from flow2py.diagnostics import Diagnostic
from flow2py.lsp import analysis
from flow2py.lsp.incremental import Document, EditorCheck
from flow2py.span import Span


class Lines:
    """Offsets, lines and LSP positions (0-based lines, UTF-16 code units) of one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        i = text.find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = text.find("\n", i + 1)
        self.starts = starts
        self.ascii = text.isascii()

    def _line(self, i: int) -> str:
        a = self.starts[i]
        b = self.starts[i + 1] - 1 if i + 1 < len(self.starts) else len(self.text)
        return self.text[a:b]

    def offset(self, pos: T.Position) -> int:
        line = min(max(pos.line, 0), len(self.starts) - 1)
        col = pos.character
        if not self.ascii:
            units, col_cp = 0, 0
            for ch in self._line(line):
                if units >= pos.character:
                    break
                units += 2 if ord(ch) > 0xFFFF else 1
                col_cp += 1
            col = col_cp
        return min(self.starts[line] + col, len(self.text))

    def position(self, offset: int) -> T.Position:
        offset = min(max(offset, 0), len(self.text))
        line = bisect.bisect_right(self.starts, offset) - 1
        col = offset - self.starts[line]
        if not self.ascii:
            col = len(self.text[self.starts[line] : offset].encode("utf-16-le")) // 2
        return T.Position(line, col)

    def line_col(self, line1: int, col1: int) -> T.Position:
        """A span's 1-based line and column (code points) as an LSP position."""
        line = max(line1 - 1, 0)
        col = max(col1 - 1, 0)
        if not self.ascii and line < len(self.starts):
            col = len(self._line(line)[:col].encode("utf-16-le")) // 2
        return T.Position(line, col)

    def span_range(self, s: Span) -> T.Range:
        return T.Range(self.line_col(s.line, s.column), self.line_col(s.end_line, s.end_column))

    def offset_range(self, s: Span) -> T.Range:
        return T.Range(self.position(s.start), self.position(s.end))


class Open:
    """One open document: its text, its pieces, its newest check and the newest with side tables."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.path = to_fs_path(uri) or uri
        self.doc = Document(self.path)
        self.text = ""
        self.lines = Lines("")
        self.check: EditorCheck | None = None
        # the newest check that has side tables and whose text parsed (checking goes on past a
        # syntax error, but a broken body is a hole there: no locals to complete the fields of)
        self.good: EditorCheck | None = None
        self.good_text = ""

    def update(self, text: str, open_texts: dict[str, str]) -> EditorCheck:
        self.text = text
        self.lines = Lines(text)
        self.check = self.doc.check(text, open_texts)
        c = self.check
        if c.program is not None and not any(m.broken for m in c.modules if m.key == c.entry_key):
            self.good, self.good_text = c, text
        return self.check


class FlowServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("flow2py", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Incremental)
        self.open: dict[str, Open] = {}
        self._checks = 0

    # -- documents and diagnostics ------------------------------------------------------------

    def refresh(self, uri: str) -> None:
        o = self.open.get(uri)
        if o is None:
            o = self.open[uri] = Open(uri)
        if _in_std(o.path):
            # std's own sources (opened by going to a definition there) are not entry modules:
            # checked as one, they would only report that they redeclare std
            self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
            return
        t0 = time.perf_counter()
        text = self.workspace.get_text_document(uri).source
        t1 = time.perf_counter()
        check = o.update(text, self.open_texts(uri))
        t2 = time.perf_counter()
        diags = [self.to_lsp(o, check, d) for d in check.result.diagnostics if d.span.file == check.display]
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=diags))
        t3 = time.perf_counter()
        if os.environ.get("FLOW2PY_LSP_TIMES"):  # where an edit's time goes, on stderr
            print(
                f"flow2py lsp: {uri}: text {1000 * (t1 - t0):.1f} ms, check {1000 * (t2 - t1):.1f} ms, "
                f"publish {1000 * (t3 - t2):.1f} ms",
                file=sys.stderr,
                flush=True,
            )
        self._settle()

    def open_texts(self, but: str) -> dict[str, str]:
        """The text of every other open document, by absolute path: what its importers read."""
        return {os.path.abspath(o.path): o.text for u, o in self.open.items() if u != but and o.check}

    def importers(self, uri: str) -> list[str]:
        """The other open documents whose newest check read the module at `uri`."""
        o = self.open.get(uri)
        path = os.path.abspath(o.path if o is not None else to_fs_path(uri) or uri)
        return [
            u
            for u, other in self.open.items()
            if u != uri
            and other.check is not None
            and any(
                os.path.abspath(m.file) == path for m in other.check.modules if m.key != other.check.entry_key
            )
        ]

    def _settle(self) -> None:
        """What the checks keep lives long: moved out of the collector's way (a full collection
        of a large program's trees and tables takes longer than a re-check), and collected for
        real once every 256 checks."""
        self._checks += 1
        if self._checks % 256 == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

    def uri_of(self, check: EditorCheck, file: str) -> str:
        for m in check.modules:
            if m.display == file:
                return from_fs_path(os.path.abspath(m.file))
        return from_fs_path(os.path.abspath(file))

    def lines_of(self, o: Open, check: EditorCheck, file: str) -> Lines:
        if file == check.display:
            return o.lines
        return Lines(check.result.sources.get(file, ""))

    def to_lsp(self, o: Open, check: EditorCheck, d: Diagnostic) -> T.Diagnostic:
        related = [
            T.DiagnosticRelatedInformation(
                T.Location(
                    self._uri(o, check, r.span.file), self.lines_of(o, check, r.span.file).span_range(r.span)
                ),
                r.message,
            )
            for r in d.related
            if r.span.line > 0
        ]
        return T.Diagnostic(
            range=o.lines.span_range(d.span),
            message=d.message,
            severity=T.DiagnosticSeverity.Error,
            code=d.code,
            source="flow2py",
            related_information=related or None,
        )

    def _uri(self, o: Open, check: EditorCheck, file: str) -> str:
        if file == check.display:
            return o.uri
        return self.uri_of(check, file)


def _in_std(path: str) -> bool:
    std = os.path.realpath(std_dir())
    return os.path.realpath(path).startswith(std + os.sep)


server = FlowServer()


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: FlowServer, params: T.DidOpenTextDocumentParams) -> None:
    _refresh_with_importers(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: FlowServer, params: T.DidChangeTextDocumentParams) -> None:
    _refresh_with_importers(ls, params.text_document.uri)


def _refresh_with_importers(ls: FlowServer, uri: str) -> None:
    """The document checked, then every open document that imports it (which now reads the
    document's text from the editor, saved or not)."""
    ls.refresh(uri)
    for other in ls.importers(uri):
        ls.refresh(other)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: FlowServer, params: T.DidSaveTextDocumentParams) -> None:
    # a saved module may be another open document's import (read from disk): check them all
    saved = params.text_document.uri
    for uri in [saved, *(u for u in ls.open if u != saved)]:
        ls.refresh(uri)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: FlowServer, params: T.DidCloseTextDocumentParams) -> None:
    importers = ls.importers(params.text_document.uri)
    ls.open.pop(params.text_document.uri, None)
    ls.text_document_publish_diagnostics(
        T.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
    )
    for other in importers:  # they read the module from disk again
        ls.refresh(other)


# -- code actions ----------------------------------------------------------------------------------


@server.feature(
    T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix])
)
def code_action(ls: FlowServer, params: T.CodeActionParams):
    o = ls.open.get(params.text_document.uri)
    if o is None or o.check is None:
        return []
    check = o.check
    a, b = o.lines.offset(params.range.start), o.lines.offset(params.range.end)
    out = []
    for d in check.result.diagnostics:
        if d.span.file != check.display or not d.fixes:
            continue
        s = d.span
        if s.end < a or s.start > b:
            continue
        for f in d.fixes:
            changes: dict[str, list[T.TextEdit]] = {}
            for e in f.edits:
                lines = ls.lines_of(o, check, e.span.file)
                uri = ls._uri(o, check, e.span.file)
                changes.setdefault(uri, []).append(T.TextEdit(lines.offset_range(e.span), e.text))
            out.append(
                T.CodeAction(
                    title=f.message,
                    kind=T.CodeActionKind.QuickFix,
                    diagnostics=[ls.to_lsp(o, check, d)],
                    edit=T.WorkspaceEdit(changes=changes),
                    is_preferred=True if f.safe else None,
                )
            )
    return out


# -- hover, definition, symbols, completion ---------------------------------------------------------


@server.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls: FlowServer, params: T.HoverParams):
    o = ls.open.get(params.text_document.uri)
    if o is None or o.check is None:
        return None
    text = analysis.hover(o.check, o.text, o.lines.offset(params.position))
    if text is None:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text))


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
def definition(ls: FlowServer, params: T.DefinitionParams):
    o = ls.open.get(params.text_document.uri)
    if o is None or o.check is None:
        return None
    place = analysis.definition(o.check, o.lines.offset(params.position))
    if place is None:
        return None
    if os.path.abspath(place.file) == os.path.abspath(o.path):
        uri, lines = o.uri, o.lines
    else:
        uri = from_fs_path(os.path.abspath(place.file))
        try:
            with open(place.file, encoding="utf-8") as f:
                lines = Lines(f.read())
        except OSError:
            return None
    return T.Location(uri, lines.span_range(place.span))


_SYMBOL_KINDS = {
    "function": T.SymbolKind.Function,
    "record": T.SymbolKind.Struct,
    "enum": T.SymbolKind.Enum,
    "type": T.SymbolKind.TypeParameter,
    "field": T.SymbolKind.Field,
    "constructor": T.SymbolKind.EnumMember,
}


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbol(ls: FlowServer, params: T.DocumentSymbolParams):
    o = ls.open.get(params.text_document.uri)
    if o is None or o.check is None:
        return []

    def conv(s: analysis.Symbol) -> T.DocumentSymbol:
        return T.DocumentSymbol(
            name=s.name,
            kind=_SYMBOL_KINDS[s.kind],
            range=o.lines.span_range(s.span),
            selection_range=o.lines.span_range(s.name_span),
            detail=s.detail or None,
            children=[conv(c) for c in s.children] or None,
        )

    return [conv(s) for s in analysis.symbols(o.check)]


_ITEM_KINDS = {
    "function": T.CompletionItemKind.Function,
    "type": T.CompletionItemKind.Class,
    "constructor": T.CompletionItemKind.EnumMember,
    "field": T.CompletionItemKind.Field,
}


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=["."]))
def completion(ls: FlowServer, params: T.CompletionParams):
    o = ls.open.get(params.text_document.uri)
    if o is None or o.good is None:
        return T.CompletionList(is_incomplete=False, items=[])
    items = analysis.completion(o.good, o.text, o.lines.offset(params.position))
    return T.CompletionList(
        is_incomplete=False,
        items=[T.CompletionItem(label=i.label, kind=_ITEM_KINDS[i.kind], detail=i.detail) for i in items],
    )


def main() -> None:
    server.start_io()
