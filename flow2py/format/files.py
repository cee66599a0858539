"""`flow2py fmt PATH... [--check]` over files: which files, what is printed, how they are written.

A directory stands for every `*.flow` file below it (hidden directories skipped). A file with a
syntax error is refused with its diagnostics and left as it is; the others are still
formatted. A file is rewritten only when its text changes, atomically (a temporary file in
the same directory, then a rename), keeping its permissions. `--check` writes nothing and
lists the files that would change. `-` formats standard input to standard output.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from flow2py.diagnostics import render_text
from flow2py.format import FormatError, format_source


@dataclass
class Outcome:
    changed: list[str] = field(default_factory=list)  # rewritten, or (--check) would be
    refused: list[str] = field(default_factory=list)  # syntax errors, unreadable, not found

    @property
    def ok(self) -> bool:
        return not self.refused


def flow_files(paths: Iterable[str]) -> Iterable[tuple[str, bool]]:
    """(path, found) for each file named or found below a named directory, in order."""
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for f in sorted(path.rglob("*.flow")):
                rel = f.relative_to(path)
                if not any(part.startswith(".") for part in rel.parts[:-1]) and f.is_file():
                    yield str(f), True
        else:
            yield p, path.is_file()


def format_paths(paths: Iterable[str], check: bool, echo: Callable[..., None]) -> Outcome:
    out = Outcome()
    for path, found in flow_files(paths):
        if path == "-":
            _stdin(out, echo)
            continue
        if not found:
            echo(f"flow2py: {path}: no such file", err=True)
            out.refused.append(path)
            continue
        try:
            with open(path, encoding="utf-8", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            echo(f"flow2py: {path}: cannot be read as UTF-8 text: {e}", err=True)
            out.refused.append(path)
            continue
        formatted = _format(path, text, out, echo)
        if formatted is None or formatted == text:
            continue
        out.changed.append(path)
        if check:
            echo(f"would reformat {path}")
        else:
            write_atomically(path, formatted)
            echo(f"reformatted {path}")
    return out


def _format(path: str, text: str, out: Outcome, echo) -> str | None:
    try:
        return format_source(text, path)
    except FormatError as e:
        if e.diagnostics:
            echo(render_text(e.diagnostics, {path: text}), err=True, nl=False)
        echo(f"flow2py: {e}", err=True)
        out.refused.append(path)
        return None


def _stdin(out: Outcome, echo) -> None:
    text = sys.stdin.read()
    formatted = _format("<stdin>", text, out, echo)
    if formatted is not None:
        sys.stdout.write(formatted)
        if formatted != text:
            out.changed.append("-")


def write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".fmt-", suffix=".flow")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
