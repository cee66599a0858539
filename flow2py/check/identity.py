"""Program identity: what a run's Start names (docs/spec/modules.md)."""
from __future__ import annotations

import blake3
import cbor2

from flow2py.syntax import ast


def program_identity(std_version: str, modules: dict[str, ast.Module], commits: dict[str, str]) -> str:
    """blake3 hex of the canonical CBOR of
    [std version, [[module key, ast.to_data(module)] sorted by key], [[repository, commit] sorted]].
    Spans, ids, comments and layout never reach `to_data`, so reformatting keeps the identity."""
    body = [
        std_version,
        [[key, _to_data(modules[key])] for key in sorted(modules)],
        [[repo, commits[repo]] for repo in sorted(commits)],
    ]
    return blake3.blake3(cbor2.dumps(body, canonical=True)).hexdigest()


_SKIP = ("span", "id", "name_span", "source")
_fields_of: dict[type, tuple[str, ...]] = {}


def _to_data(node):
    """`ast.to_data`, with each node class's field list computed once (same output, faster)."""
    if isinstance(node, ast.Node):
        cls = type(node)
        names = _fields_of.get(cls)
        if names is None:
            from dataclasses import fields

            names = tuple(f.name for f in fields(cls)
                          if f.name not in _SKIP and not (f.name == "path" and cls is ast.Module))
            _fields_of[cls] = names
        out = [cls.__name__]
        for n in names:
            out.append(_to_data(getattr(node, n)))
        return out
    if isinstance(node, (list, tuple)):
        return [_to_data(x) for x in node]
    if isinstance(node, ast.Span):
        return None
    return node
