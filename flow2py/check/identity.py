"""Program identity: what a run's Start names (docs/spec/modules.md)."""

from __future__ import annotations

import struct

import blake3
import cbor2

from flow2py.syntax import ast


def program_identity(std_version: str, modules: dict[str, ast.Module], commits: dict[str, str]) -> str:
    """blake3 hex of the canonical CBOR of
    [std version, [[module key, ast.to_data(module)] sorted by key], [[repository, commit] sorted]].
    Spans, ids, comments and layout never reach `to_data`, so reformatting keeps the identity."""
    body = [
        std_version,
        [[key, modules[key]] for key in sorted(modules)],
        [[repo, commits[repo]] for repo in sorted(commits)],
    ]
    return blake3.blake3(encode(body)).hexdigest()


def reference_identity(std_version: str, modules: dict[str, ast.Module], commits: dict[str, str]) -> str:
    """`program_identity` written the plain way (cbor2 over `ast.to_data`): what it must equal."""
    body = [
        std_version,
        [[key, ast.to_data(modules[key])] for key in sorted(modules)],
        [[repo, commits[repo]] for repo in sorted(commits)],
    ]
    return blake3.blake3(cbor2.dumps(body, canonical=True)).hexdigest()


# ---------------------------------------------------------------------------------------------
# `cbor2.dumps(to_data(x), canonical=True)` in one pass, without building `to_data`'s lists.
#
# Canonical CBOR of an array is its head followed by each item's encoding, so the bytes can be
# written item by item; the values an AST holds (Text, Int, Bool, Unit, Bytes, lists) have
# one short canonical form each, written here, and anything else is handed to cbor2 as it is
# (the same bytes cbor2 writes for it inside the array). Each node class gets a generated
# encoder, with its field list read once and its head and name encoded once.

_SKIP = ("span", "id", "name_span", "source")
_U64 = 1 << 64
_pack_b = struct.Struct(">B").pack
_pack_h = struct.Struct(">H").pack
_pack_i = struct.Struct(">I").pack
_pack_q = struct.Struct(">Q").pack


def _head(major: int, n: int) -> bytes:
    m = major << 5
    if n < 24:
        return bytes((m | n,))
    if n < 0x100:
        return bytes((m | 24,)) + _pack_b(n)
    if n < 0x10000:
        return bytes((m | 25,)) + _pack_h(n)
    if n < 0x100000000:
        return bytes((m | 26,)) + _pack_i(n)
    return bytes((m | 27,)) + _pack_q(n)


_ARRAY_HEADS = [_head(4, n) for n in range(64)]
_strs: dict[str, bytes] = {}  # encoded Text, shared across calls (bounded: see `_text`)
_encoders: dict[type, object] = {}


def encode(value) -> bytes:
    """The canonical CBOR of `value` with every AST node in it replaced by its `to_data`."""
    out: list[bytes] = []
    _enc(value, out.append)
    if len(_strs) > 200_000:
        _strs.clear()
    return b"".join(out)


def _text(v: str) -> bytes:
    try:
        data = v.encode("utf-8")
    except UnicodeEncodeError:
        return cbor2.dumps(v, canonical=True)
    b = _head(3, len(data)) + data
    if type(v) is str:
        _strs[v] = b
    return b


def _enc(v, w) -> None:
    t = v.__class__
    if t is str:
        b = _strs.get(v)
        w(b if b is not None else _text(v))
        return
    f = _encoders.get(t)
    if f is None:
        f = _encoder(t)
    f(v, w)


def _enc_list(v, w) -> None:
    n = len(v)
    w(_ARRAY_HEADS[n] if n < 64 else _head(4, n))
    strs = _strs
    for x in v:
        if x.__class__ is str:
            b = strs.get(x)
            w(b if b is not None else _text(x))
        else:
            _enc(x, w)


def _enc_int(v, w) -> None:
    if 0 <= v < _U64:
        w(_head(0, v))
    elif -_U64 <= v < 0:
        w(_head(1, -1 - v))
    else:
        w(cbor2.dumps(v, canonical=True))


def _enc_bytes(v, w) -> None:
    w(_head(2, len(v)) + v)


def _enc_none(v, w) -> None:
    w(b"\xf6")


def _enc_bool(v, w) -> None:
    w(b"\xf5" if v else b"\xf4")


def _enc_other(v, w) -> None:
    w(cbor2.dumps(v, canonical=True))


def _encoder(cls):
    if issubclass(cls, ast.Node):
        from dataclasses import fields

        names = [
            f.name
            for f in fields(cls)
            if f.name not in _SKIP and not (f.name == "path" and issubclass(cls, ast.Module))
        ]
        lines = ["def enc(n, w):", "    w(prefix)"]
        for name in names:
            assert name.isidentifier() and not name.startswith("_")
            lines += [
                f"    x = n.{name}",
                "    if x.__class__ is str:",
                "        b = strs.get(x)",
                "        w(b if b is not None else text(x))",
                "    else:",
                "        enc_any(x, w)",
            ]
        scope = {
            "prefix": _head(4, len(names) + 1) + _text(cls.__name__),
            "strs": _strs,
            "text": _text,
            "enc_any": _enc,
        }
        exec("\n".join(lines) + "\n", scope)  # noqa: S102 -- the text is built here from field names, never from input
        enc = scope["enc"]
    elif issubclass(cls, (list, tuple)):
        enc = _enc_list
    elif issubclass(cls, ast.Span) or cls is type(None):
        enc = _enc_none
    elif cls is bool:
        enc = _enc_bool
    elif cls is int:
        enc = _enc_int
    elif cls is bytes:
        enc = _enc_bytes
    else:
        enc = _enc_other
    _encoders[cls] = enc
    return enc
