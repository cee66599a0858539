"""The trace format: how values and facts become bytes, and the hash chain over them.

docs/spec/trace.md is the normative description; this is the one implementation of it.

A value is encoded as a CBOR item: Int, Text, Bytes, Bool and Unit as CBOR's own integer, text,
byte string, true/false and null; everything else as an array whose first element is a small
integer code (`List` is `[0, items...]`, a record is `[16, decl, ctor, fields...]`, ...). That
keeps the encoding self-describing without CBOR tags, costs one byte per compound value, and is
deterministic by construction: no CBOR maps, no floats, minimal-length integers; Dict and Set
contents are sorted by their encoded bytes. So cbor2's fast (non-canonical) encoder already
produces the canonical bytes and nothing is sorted except Dict/Set contents (the canonical encoder
measured at twice the cost).

A fact is an array `[kind, fields...]` in a fixed order. Each *value slot* of a fact (a Call
argument, a Reply, a Start input, a Checkpoint argument, a Stop value or closing reply, a
Completed value) is stored as the value's own encoding wrapped in a CBOR byte string, or, for a
value whose encoding exceeds `BLOB_THRESHOLD`, as a reference `[19, hash]` to a blob stored once
by content hash; a redacted slot becomes `[18, hash]` (a hole). The slot's *digest* is always
blake3 of the value's encoding, whichever of the three forms is stored.

The hash chain runs over the fact's *skeleton*: the fact array with every value slot replaced by
its 32-byte digest. `hash_n = blake3(hash_(n-1) || skeleton_n)`, `hash_0` = 32 zero bytes.
Inlining, moving a value to a blob and redacting it to a hole all keep the skeleton, so the chain
(and an externally held head) stays verifiable after redaction, and the blob threshold is not part
of what is hashed.
"""

from __future__ import annotations

import decimal
from typing import Any, Callable, NamedTuple, Optional

import blake3
import cbor2

from flowrt.history import strict as S
from flowrt.data import values as V
from flowrt.history.strict import (
    BLOB,
    CALL,
    CHECKPOINT,
    CHOICE,
    DATA,
    DECIMAL,
    DICT,
    DURATION,
    END,
    ERR,
    FAILED,
    HOLE,
    INSTANT,
    LIST,
    MALFORMED,
    NONE,
    NOTRUN,
    OK,
    PARKED,
    REPLY,
    SET,
    SOME,
    START,
    STOP,
    TOKEN,
    TUPLE,
    UNKNOWN,
)
from flowrt.data.facts import (
    Call,
    Checkpoint,
    Choice,
    Closed,
    Completed,
    End,
    Fact,
    Faulted,
    ParkedTask,
    Reply,
    Start,
    Stop,
)

# Re-exported by flowrt; the lower-level helpers (chain, skeleton, slot_digests ...) are used as
# `flowrt.history.trace.<name>` by the store and the viewers.
__all__ = [
    "DATA_VERSION",
    "TraceError",
    "UnsupportedDataVersion",
    "MissingClass",
    "encode_value",
    "decode_value",
    "value_digest",
    "encode_fact",
    "decode_fact",
]

#: Covers the value encoding, the Tool protocol and the history format together (seed 000).
DATA_VERSION = 1
#: A slot value whose encoding is longer than this many bytes is stored once, as a blob.
BLOB_THRESHOLD = 1024
ZERO_HASH = bytes(32)

# Fact kinds and value codes (docs/spec/trace.md's tables) are defined with the strict reader,
# flowrt.history.strict, and used here under the same names: `T.REPLY`, `T.LIST`, ...
KINDS = {Start: START, Call: CALL, Reply: REPLY, Choice: CHOICE, Stop: STOP, Checkpoint: CHECKPOINT, End: END}
KIND_NAMES = {v: k.__name__ for k, v in KINDS.items()}


# Stored bytes are read strictly (flowrt.history.strict: no CBOR tags but bignums, bounded Ints, Decimal
# exponents and nesting); the encoder refuses what the reader would, so everything it writes reads
# back. The walks (_item, _value) are recursive and also stop at Python's recursion limit (about
# 300 levels of nesting), with a TraceError.
_INT_LIMIT = 1 << S.MAX_INT_BITS


class TraceError(Exception):
    """Bytes or a value that the trace format cannot encode or decode."""


class UnsupportedDataVersion(TraceError):
    """A history written under a data version this reader does not know: refused whole."""

    def __init__(self, version: Any, where: str = "this history"):
        self.version = version
        super().__init__(
            f"{where} was recorded with data version {version!r}; this flowrt reads data version "
            f"{DATA_VERSION} only, so it refuses the whole history rather than reinterpret it"
        )


class MissingClass(TraceError):
    """A stored record or enum value whose class is not in the class table the reader was given."""

    def __init__(self, decl: str, ctor: str):
        self.decl, self.ctor = decl, ctor
        super().__init__(
            f"cannot decode a value of {decl} (constructor {ctor}): the class table given holds no "
            f"class for it; read a run's history with its program's classes (`Program.classes`)"
        )


# ---- values -----------------------------------------------------------------------------------


def _seq(code):
    def enc(v):
        out = [code]
        out.extend(_item(x) for x in v)
        return out

    return enc


def _sorted_items(pairs):
    keyed = [(cbor2.dumps(k), k, x) for k, x in pairs]
    keyed.sort(key=lambda e: e[0])
    return keyed


def _enc_dict(d):
    out = [DICT]
    for _, k, x in _sorted_items((_item(k), _item(x)) for k, x in d.items()):
        out.append(k)
        out.append(x)
    return out


def _enc_set(s):
    out = [SET]
    out.extend(k for _, k, _ in _sorted_items((_item(x), None) for x in s))
    return out


def _enc_decimal(d: decimal.Decimal):
    if not d.is_finite():
        raise TraceError(f"cannot encode the Decimal {d}: Flow Decimals are finite")
    sign, digits, exp = d.as_tuple()
    # Through Decimal, not str: a coefficient beyond Python's 4,300-digit str limit converts too.
    coef = int(decimal.Decimal((0, digits, 0))) if digits else 0
    if not -S.MAX_DECIMAL_EXPONENT <= exp <= S.MAX_DECIMAL_EXPONENT or coef >= _INT_LIMIT:
        raise TraceError(
            f"cannot encode a Decimal of {len(digits)} digits and exponent {exp}: a stored "
            f"Decimal has an exponent within ±{S.MAX_DECIMAL_EXPONENT} and fewer than "
            f"{S.MAX_INT_BITS} bits of digits"
        )
    if sign and coef == 0:
        return [DECIMAL, exp, 0, 1]  # negative zero keeps its sign
    return [DECIMAL, exp, -coef if sign else coef]


def _enc_parked(p: ParkedTask):
    out = [PARKED, p.task, p.call, p.ctor]
    out.extend(_item(x) for x in p.data)
    return out


def _one(code):
    return lambda v: [code, _item(v._0)]


_ENC: dict[type, Callable[[Any], Any]] = {
    V.List: _seq(LIST),
    tuple: _seq(TUPLE),
    V.Dict: _enc_dict,
    V.Set: _enc_set,
    decimal.Decimal: _enc_decimal,
    V.Duration: lambda v: [DURATION, _item(v.nanos)],
    V.Instant: lambda v: [INSTANT, _item(v.nanos)],
    V.HostToken: lambda v: [TOKEN, v.type_id, v.token],
    V.Ok: _one(OK),
    V.Err: _one(ERR),
    V.Some: _one(SOME),
    V.None_: lambda v: [NONE],
    V.Failed: _one(FAILED),
    V.Malformed: _one(MALFORMED),
    V.NotRun: _one(NOTRUN),
    V.Unknown: _one(UNKNOWN),
    ParkedTask: _enc_parked,
    V.Hole: lambda v: [HOLE, bytes.fromhex(v.hash)],
}
_PLAIN = {int, str, bytes, bool, type(None)}


def _item(v):
    t = type(v)
    if t in _PLAIN:
        if t is int and not -_INT_LIMIT < v < _INT_LIMIT:
            raise TraceError(
                f"cannot encode an Int of {v.bit_length()} bits: a stored Int has fewer than {S.MAX_INT_BITS}"
            )
        return v
    enc = _ENC.get(t)
    if enc is not None:
        return enc(v)
    decl = getattr(t, "__flow_decl__", None)
    if decl is not None and isinstance(v, V._Data):
        out = [DATA, decl, t.__flow_ctor__]
        out.extend(_item(getattr(v, f)) for f in t.__flow_fields__)
        return out
    raise TraceError(f"cannot encode a Python {t.__name__} ({v!r:.60}) as a Flow value")


def encode_value(v: Any) -> bytes:
    """The canonical encoding of one Flow value."""
    try:
        return cbor2.dumps(_item(v))
    except RecursionError:
        raise TraceError("cannot encode a value nested this deeply") from None


Classes = Optional[V.ClassTable]


def _lookup(classes: Classes) -> Callable:
    return V.STD_CLASSES.lookup if classes is None else classes.lookup


def decode_value(b: bytes, *, classes: Classes = None) -> Any:
    """The Flow value of an encoding. A record or enum value is rebuilt with its class from
    `classes`, the class table of the program whose value it is (`Program.classes`); without one
    only std's built-in enums decode, and any other record or enum raises `MissingClass`."""
    return _decode(b, _lookup(classes))


def _decode(b: bytes, get: Callable) -> Any:
    try:
        return S.value_of(b, get)
    except S.StrictError as e:
        raise TraceError(f"corrupt value encoding: {e}") from None
    except S.NoClass as e:
        raise MissingClass(e.decl, e.ctor) from None
    except RecursionError:
        raise TraceError("cannot decode a value nested this deeply") from None


def unrecordable(values) -> Optional[str]:
    """Why one of `values` cannot be encoded (beyond the trace format's bounds), or None."""
    for v in values:
        try:
            encode_value(v)
        except TraceError as e:
            return str(e)
    return None


def value_digest(v: Any) -> str:
    """The content hash (blake3 hex) of a value: what a blob is keyed by and a hole keeps."""
    return blake3.blake3(encode_value(v)).hexdigest()


# ---- facts ------------------------------------------------------------------------------------


class EncodedFact(NamedTuple):
    """One fact encoded. A NamedTuple, made on a live run's path by `_tuple_new` (tuple.__new__ without
    the generated __new__'s argument handling: ~0.3 µs less a fact than a dataclass, two facts a
    Tool call); nothing changes one after encode_fact made it."""

    kind: int
    data: bytes  # the stored form
    chained: bytes  # the skeleton: what the hash chain covers
    blobs: tuple[tuple[bytes, bytes], ...]  # (digest, encoding) of slot values stored as blobs
    slots: tuple[bytes, ...]  # digests of the value slots, in slot order


_tuple_new = tuple.__new__  # `_tuple_new(EncodedFact, (kind, data, chained, blobs, slots))`


class _Slots:
    """Builds a fact's stored slots and, in parallel, its skeleton slots."""

    __slots__ = ("threshold", "blobs", "digests")

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.blobs: list[tuple[bytes, bytes]] = []
        self.digests: list[bytes] = []

    def __call__(self, v):
        if type(v) is V.Hole:
            h = bytes.fromhex(v.hash)
            self.digests.append(h)
            return [HOLE, h], h
        b = encode_value(v)
        h = blake3.blake3(b).digest()
        self.digests.append(h)
        if len(b) > self.threshold:
            self.blobs.append((h, b))
            return [BLOB, h], h
        return b, h

    def many(self, vs):
        pairs = [self(v) for v in vs]
        return [p[0] for p in pairs], [p[1] for p in pairs]


_dumps = cbor2.dumps
_b3 = blake3.blake3


def _head(major: int, n: int) -> bytes:
    """A CBOR item's head, major type `major` (shifted: 0 and 0x20 Ints, 0x40 bytes, 0x60 text, 0x80 array) and
    argument `n`, in its shortest form (what cbor2 writes)."""
    if n < 24:
        return _HEADS[major | n]
    if n < 0x100:
        return bytes((major | 24, n))
    if n < 0x10000:
        return bytes((major | 25,)) + n.to_bytes(2, "big")
    if n < 0x100000000:
        return bytes((major | 26,)) + n.to_bytes(4, "big")
    return bytes((major | 27,)) + n.to_bytes(8, "big")


_HEADS = {m | n: bytes((m | n,)) for m in (0x00, 0x20, 0x40, 0x60, 0x80) for n in range(24)}
_DIGEST_HEAD = _head(0x40, 32)  # a 32-byte digest as a CBOR byte string
_CALL_HEAD, _REPLY_HEAD = bytes((0x86, CALL)), bytes((0x83, REPLY))  # the arrays' heads, the kinds
_TEXTS: dict[str, bytes] = {}  # the CBOR of the Tool names and ids met (a program has few)


def _digest_item(h: bytes) -> bytes:
    """A slot's digest as the skeleton holds it (a CBOR byte string)."""
    return _DIGEST_HEAD + h if len(h) == 32 else _head(0x40, len(h)) + h


def _text(s: str) -> bytes:
    b = s.encode("utf-8")
    n = len(b)
    return (_HEADS[0x60 | n] if n < 24 else _head(0x60, n)) + b


def _name(s: str) -> bytes:
    """`_text(s)` for a Tool's name or id, kept."""
    b = _TEXTS.get(s)
    if b is None:
        b = _text(s)
        if len(_TEXTS) < 4096:
            _TEXTS[s] = b
    return b


_U64 = 1 << 64
_OK_HEAD, _ERR_HEAD = bytes((0x82, OK)), bytes((0x82, ERR))  # [OK, x], [ERR, x]


def _scalar(v):
    """The CBOR of an Int within 64 bits or a Str, written here (the bytes cbor2 writes); None for
    any other value (cbor2 writes it: `_item`)."""
    t = type(v)
    if t is int:
        if 0 <= v < _U64:
            return _head(0, v)
        if -_U64 <= v < 0:
            return _head(0x20, -1 - v)
        return None
    if t is str:
        try:
            return _text(v)
        except UnicodeEncodeError:  # a lone surrogate: cbor2 refuses it as it always did
            return None
    return None


_TOOLS: dict[tuple[str, str], bytes] = {}  # a Call's tool and tool id as CBOR, by the pair met


def _tool(tool: str, tool_id: str) -> bytes:
    """`_name(tool) + _name(tool_id)`, kept for the pair."""
    b = _TOOLS.get((tool, tool_id))
    if b is None:
        b = _name(tool) + _name(tool_id)
        if len(_TOOLS) < 4096:
            _TOOLS[(tool, tool_id)] = b
    return b


def _slot(v, threshold: int, blobs: list, hasher=None):
    """One value slot: (its stored form as CBOR, its digest), its blob appended to `blobs` (the
    fast path of `_Slots` for the two facts a run records most, a Call and a Reply: the fact's
    array is written here around the slots, the bytes cbor2 would write for it; an Int or a Str,
    bare or in an Ok or Err, is written here too: `_scalar`)."""
    t = type(v)
    if t is V.Ok or t is V.Err:
        b = _scalar(v._0)
        if b is not None:
            b = (_OK_HEAD if t is V.Ok else _ERR_HEAD) + b
    elif t is V.Hole:
        h = bytes.fromhex(v.hash)
        return _dumps([HOLE, h]), h
    else:
        b = _scalar(v)
    if b is None:
        try:
            b = _dumps(_item(v))
        except RecursionError:
            raise TraceError("cannot encode a value nested this deeply") from None
    if hasher is None:  # blake3(b), by `hasher` when given (reset, update, digest: a new blake3 object
        # costs ~1,800 instructions more), inlined: a Tool call hashes two slots
        h = _b3(b).digest()
    else:
        hasher.reset()
        hasher.update(b)
        h = hasher.digest()
    if len(b) > threshold:
        blobs.append((h, b))
        return _dumps([BLOB, h]), h
    return _head(0x40, len(b)) + b, h


def encode_fact(fact: Fact, threshold: int = BLOB_THRESHOLD, hasher=None) -> EncodedFact:
    """The stored form and the skeleton of one fact (values over `threshold` bytes become blobs).
    `hasher`: a blake3 object the caller owns (one thread at a time), reused for a Call's and a
    Reply's slot digests (the same digests)."""
    t = type(fact)
    if t is Reply:  # [REPLY, id, slot]
        blobs: list = []
        r, rd = _slot(fact.reply, threshold, blobs, hasher)
        head = _REPLY_HEAD + _text(fact.id)
        return _tuple_new(
            EncodedFact, (REPLY, head + r, head + _digest_item(rd), tuple(blobs) if blobs else (), (rd,))
        )
    if t is Call:  # [CALL, id, tool, tool_id, [slot...], [type arg...]]
        blobs = []
        args = fact.args
        n = len(args)
        if n == 1:
            x, h = _slot(args[0], threshold, blobs, hasher)
            a, ad = _HEADS[0x81] + x, _HEADS[0x81] + _digest_item(h)
            digests: tuple = (h,)
        else:
            xs, hs = [], []
            for v in args:
                x, h = _slot(v, threshold, blobs, hasher)
                xs.append(x)
                hs.append(h)
            ah = _head(0x80, n)
            a, ad = ah + b"".join(xs), ah + b"".join(_digest_item(h) for h in hs)
            digests = tuple(hs)
        ta = fact.type_args
        if not ta:
            tail = b"\x80"
        else:
            tail = (
                _HEADS[0x80 | len(ta)] + b"".join(_text(x) for x in ta) if len(ta) < 24 else _dumps(list(ta))
            )
        head = _CALL_HEAD + _text(fact.id) + _tool(fact.tool, fact.tool_id)
        return _tuple_new(
            EncodedFact, (CALL, head + a + tail, head + ad + tail, tuple(blobs) if blobs else (), digests)
        )
    s = _Slots(threshold)
    if t is Start:
        if fact.data_version != DATA_VERSION:
            raise TraceError(f"this flowrt writes data version {DATA_VERSION}, not {fact.data_version}")
        a, ad = s.many(fact.input)
        head = [START, fact.data_version, fact.program, fact.std, fact.entry]
        tail = [list(fact.param_names), fact.parent, fact.from_checkpoint]
        stored, skel = head + [a] + tail, head + [ad] + tail
    elif t is Choice:
        stored = skel = [CHOICE, fact.task, fact.picked]
    elif t is Stop:
        v, vd = s(fact.value) if fact.found == "finished" else (None, None)
        closed, closed_d = [], []
        for c in fact.closed:
            if c.has_reply:
                r, rd = s(c.reply)
                closed.append([c.call, r])
                closed_d.append([c.call, rd])
            else:
                closed.append([c.call])
                closed_d.append([c.call])
        stored = [STOP, fact.task, fact.found, v, closed]
        skel = [STOP, fact.task, fact.found, vd, closed_d]
    elif t is Checkpoint:
        a, ad = s.many(fact.args)
        head = [CHECKPOINT, fact.checkpoint, fact.function, list(fact.type_args)]
        stored, skel = head + [a], head + [ad]
    elif t is End:
        e = fact.end
        if type(e) is Completed:
            v, vd = s(e.value)
            stored, skel = [END, 0, v], [END, 0, vd]
        else:
            stored = skel = [END, 1, e.message, e.file, e.line, e.column]
    else:
        raise TraceError(f"not a fact: {fact!r:.80}")
    return EncodedFact(KINDS[t], cbor2.dumps(stored), cbor2.dumps(skel), tuple(s.blobs), tuple(s.digests))


def chain(prev: bytes, chained: bytes, hasher=None) -> bytes:
    """hash_n = blake3(hash_(n-1) || skeleton_n); by `hasher` (as `encode_fact`'s) when given."""
    if hasher is None:
        return blake3.blake3(prev + chained).digest()
    hasher.reset()
    hasher.update(prev + chained)  # one call: joining 32 bytes to a skeleton costs less than a second update
    return hasher.digest()


def _raw(data: bytes, kind: Optional[int] = None) -> list:
    """The parsed stored form of a fact, strictly (flowrt.history.strict): CBOR of the trace format's
    subset and the exact shape of its kind. `kind`: the kind its store row says it has."""
    try:
        item = S.loads(data)
        if (
            type(item) is list
            and len(item) > 1
            and item[0] == START
            and type(item[0]) is int
            and type(item[1]) is int
            and item[1] != DATA_VERSION
        ):
            raise UnsupportedDataVersion(item[1])  # another version: refused whole, unread
        k = S.check_fact(item)
    except S.StrictError as e:
        raise TraceError(f"corrupt fact encoding: {e}") from None
    if kind is not None and kind != k:
        raise TraceError(f"corrupt fact: its row says kind {kind!r} but it is a {KIND_NAMES[k]}")
    return item


def parse_fact(data: bytes, kind: Optional[int] = None) -> list:
    """The stored form of a fact parsed strictly to its CBOR array (values not decoded)."""
    return _raw(data, kind)


def _slot_places(item: list) -> list[tuple[list, int]]:
    """Where the value slots of a raw fact are: (container, index) pairs, in slot order."""
    k = item[0]
    if k == CALL:
        return [(item[4], i) for i in range(len(item[4]))]
    if k == REPLY:
        return [(item, 2)]
    if k == START:
        return [(item[5], i) for i in range(len(item[5]))]
    if k == STOP:
        places = [(item, 3)] if item[3] is not None else []
        places.extend((c, 1) for c in item[4] if len(c) > 1)
        return places
    if k == CHECKPOINT:
        return [(item[4], i) for i in range(len(item[4]))]
    if k == END:
        return [(item, 2)] if item[1] == 0 else []
    return []


def _digest(slot) -> bytes:
    # `_raw` checked every slot: inline bytes, or [HOLE | BLOB, 32-byte digest].
    if type(slot) is bytes:
        return blake3.blake3(slot).digest()
    return slot[1]


def skeleton(data: bytes, kind: Optional[int] = None) -> bytes:
    """The chained bytes of a stored fact (its value slots replaced by their digests). `kind`:
    the kind its store row says (a mismatch is a TraceError)."""
    item = _raw(data, kind)
    for container, i in _slot_places(item):
        container[i] = _digest(container[i])
    return cbor2.dumps(item)


def fact_hash(prev: bytes, data: bytes, kind: Optional[int] = None) -> bytes:
    return chain(prev, skeleton(data, kind))


def chain_hashes(facts, prev: bytes = ZERO_HASH) -> list[bytes]:
    """The chain hashes of a list of facts (as a run would record them from `prev`)."""
    out = []
    for f in facts:
        prev = chain(prev, encode_fact(f).chained)
        out.append(prev)
    return out


def slot_digests(data: bytes) -> list[bytes]:
    item = _raw(data)
    return [_digest(c[i]) for c, i in _slot_places(item)]


def blob_digests(data: bytes) -> list[bytes]:
    """The digests of the blobs a stored fact refers to."""
    item = _raw(data)
    out = []
    for c, i in _slot_places(item):
        s = c[i]
        if type(s) is list and s[0] == BLOB:
            out.append(s[1])
    return out


def redact_slots(data: bytes, digest: bytes) -> tuple[bytes, int]:
    """The stored fact with every slot whose digest is `digest` replaced by a hole, and how many."""
    item = _raw(data)
    count = 0
    for c, i in _slot_places(item):
        s = c[i]
        if type(s) is list and s[0] == HOLE:
            continue
        if _digest(s) == digest:
            c[i] = [HOLE, digest]
            count += 1
    return (cbor2.dumps(item) if count else data), count


def checkpoint_number(data: bytes) -> int:
    """The number of a stored Checkpoint, read without decoding its arguments."""
    item = _raw(data)
    if item[0] != CHECKPOINT:
        raise TraceError(f"corrupt fact: its row says Checkpoint but it is a {KIND_NAMES[item[0]]}")
    return item[1]


def start_data_version(data: bytes) -> Any:
    """The data version of a stored Start, read before anything else in it is interpreted."""
    try:
        item = S.loads(data)
    except S.StrictError as e:
        raise TraceError(f"corrupt Start fact: {e}") from None
    if type(item) is not list or len(item) < 2 or item[0] != START or type(item[0]) is not int:
        raise TraceError("corrupt history: fact 1 is not a Start")
    if type(item[1]) is not int:
        raise TraceError("corrupt Start fact: its data version is not a number")
    return item[1]


BlobLookup = Callable[[bytes], Optional[bytes]]


def _slot_value(slot, blob: Optional[BlobLookup], get: Callable):
    """(value, digest) of one stored value slot (checked by `_raw`): its value and blake3 of its
    encoding. A blob that is not there reads as a hole."""
    if type(slot) is bytes:
        return _decode(slot, get), blake3.blake3(slot).digest()
    if slot[0] == BLOB:
        b = blob(slot[1]) if blob is not None else None
        return (V.Hole(slot[1].hex()) if b is None else _decode(b, get)), slot[1]
    return V.Hole(slot[1].hex()), slot[1]


def _bstr_head(n: int) -> bytes:
    """The minimal CBOR byte-string header for `n` bytes (what cbor2 writes)."""
    if n < 24:
        return bytes((0x40 + n,))
    if n < 256:
        return bytes((0x58, n))
    if n < 65536:
        return b"\x59" + n.to_bytes(2, "big")
    return b"\x5a" + n.to_bytes(4, "big")


_DIGEST_HEAD = b"\x58\x20"  # a 32-byte digest as a CBOR byte string


def decode_chained(
    data: bytes, blob: Optional[BlobLookup] = None, *, classes: Classes = None, kind: Optional[int] = None
) -> tuple[Fact, bytes]:
    """The fact of a stored form and its skeleton (what the chain covers), parsing `data` once.

    Equal to `(decode_fact(data, blob, classes=classes), skeleton(data))`; replay and resume read history with it,
    so checking each fact's chain hash costs no second parse. For a Reply or a Call whose value
    slots are inline and laid out canonically (the slots end the stored bytes, or come just before
    an empty type-argument list), the skeleton is cut from the stored bytes with each slot's bytes
    replaced by its digest, which are the same bytes re-encoding gives; otherwise the parsed item
    is re-encoded with the digests in place. `kind`: the kind the fact's store row says.
    """
    item = _raw(data, kind)
    get = _lookup(classes)
    k = item[0]
    try:
        if k == REPLY:
            slot = item[2]
            if type(slot) is bytes:
                fact = Reply(item[1], _decode(slot, get))
                d = blake3.blake3(slot).digest()
                n = len(slot)
                head = _bstr_head(n)
                cut = n + len(head)
                if data.endswith(slot) and data.startswith(head, len(data) - cut):
                    return fact, data[:-cut] + _DIGEST_HEAD + d
                item[2] = d
            else:
                v, item[2] = _slot_value(slot, blob, get)
                fact = Reply(item[1], v)
        elif k == CALL:
            slots = item[4]
            vals, digests = [], []
            pos = len(data) - 1
            laid = not item[5] and data[-1] == 0x80
            for slot in slots:
                v, d = _slot_value(slot, blob, get)
                vals.append(v)
                digests.append(d)
            fact = Call(item[1], item[2], item[3], tuple(vals), tuple(item[5]))
            if laid:
                for slot in reversed(slots):
                    if type(slot) is not bytes:
                        laid = False
                        break
                    head = _bstr_head(len(slot))
                    pos -= len(slot)
                    if not data.startswith(slot, pos):
                        laid = False
                        break
                    pos -= len(head)
                    if pos < 0 or not data.startswith(head, pos):
                        laid = False
                        break
                if laid:
                    return fact, b"".join([data[:pos], *[_DIGEST_HEAD + d for d in digests], b"\x80"])
            item[4] = digests
        elif k == CHOICE:
            fact = Choice(item[1], item[2])
        else:
            # The rarer kinds: decode, then put the slot digests in place.
            fact = decode_fact(data, blob, item=item, classes=classes)
            for container, i in _slot_places(item):
                container[i] = _digest(container[i])
    except (IndexError, TypeError, ValueError) as e:
        raise TraceError(f"corrupt {KIND_NAMES[k]} fact: {e}") from None
    return fact, cbor2.dumps(item)


def decode_fact(
    data: bytes,
    blob: Optional[BlobLookup] = None,
    *,
    item: Optional[list] = None,
    classes: Classes = None,
    kind: Optional[int] = None,
) -> Fact:
    """The fact of a stored form. `blob(digest)` returns a blob's bytes (None: lost, a hole).
    `item`: the stored form already parsed by `_raw` (not changed here). `classes`: the class
    table of the run's program, which rebuilds its record and enum values (see `decode_value`).
    `kind`: the kind the fact's store row says (a mismatch is a TraceError)."""
    if item is None:
        item = _raw(data, kind)
    get = _lookup(classes)

    def val(slot, get=get):
        return _slot_value(slot, blob, get)[0]

    k = item[0]
    try:
        if k == CALL:
            return Call(item[1], item[2], item[3], tuple(map(val, item[4])), tuple(item[5]))
        if k == REPLY:
            return Reply(item[1], val(item[2]))
        if k == START:
            # a fork's Start may hold the parked tasks of the checkpoint it began from (flowrt.host.forks)
            in_get = S.parked_get(get) if item[7] is not None else get
            return Start(
                item[2],
                item[3],
                item[1],
                item[4],
                tuple(val(a, in_get) for a in item[5]),
                tuple(item[6]),
                item[7],
                item[8],
            )
        if k == CHOICE:
            return Choice(item[1], item[2])
        if k == STOP:
            closed = tuple(Closed(c[0], val(c[1]), True) if len(c) > 1 else Closed(c[0]) for c in item[4])
            return Stop(item[1], item[2], None if item[3] is None else val(item[3]), closed)
        if k == CHECKPOINT:
            cp_get = S.parked_get(get)
            return Checkpoint(item[1], item[2], tuple(item[3]), tuple(val(a, cp_get) for a in item[4]))
        if item[1] == 0:
            return End(Completed(val(item[2])))
        return End(Faulted(item[2], item[3], item[4], item[5]))
    except (IndexError, TypeError, ValueError) as e:  # `_raw` checked the shape: a safety net only
        raise TraceError(f"corrupt {KIND_NAMES[k]} fact: {e}") from None
