"""Host tokens: which ones the host issued, and how admission treats tokens and rebuilt values.

A value of a `@tool type` is a host token: only the host makes one (seed 001;
docs/spec/tools.md "Host tokens": only values the host itself issued). The store keeps the host's record of every token it
issued (`host_tokens`, keyed by the @tool type's declaration identity and the token): a Tool
implementation's reply issues the tokens it carries, written in the same transaction as that
Reply (flowrt.history.recorder), and a host application issues one in code with
`store.host_records.issue_token` / `flowrt.host.Host.issue_token`, for instance to hand a run a primary and a backup Model as input.
The record is per store, not per run: a token exists before any run is handed it, and a fork or
another run on the same host may hold it (docs/spec/tools.md, "Host tokens").

Admission policies (set around a decode with `admitting`; flowrt.data.decoding reads them):

* `Issued(known)`: what a host is handed (`--input`, `--reply`, fork `--input`): a token the
  host never issued is refused at its path, so a forged token is never recorded or sent.
* `RESTORE`: checking the arguments a fork rebuilt from a checkpoint. Nothing is decoded there
  (seed 000: "it is not decoding"): the values are the program's own, so an opaque value, a host
  token and a parked task pass as they are, while each is still checked against the fork's
  parameter types.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from flowrt.data.decoding import ADMISSION, DecodeError
from flowrt.data.tasks import walk
from flowrt.data.values import HostToken

__all__ = ["Issued", "Noting", "RESTORE", "NONE_ISSUED", "admitting", "tokens_in", "may_hold_token"]


def _type_name(type_id: str) -> str:
    return type_id.rsplit("::", 1)[-1]


class Issued:
    """Admit only the tokens `known(type_id, token)` says the host issued."""

    restoring = False

    def __init__(self, known: Callable[[str, str], bool]):
        self.known = known

    def token(self, tok: HostToken, path: str) -> None:
        if not self.known(tok.type_id, tok.token):
            shown = repr(tok.token) if len(tok.token) <= 40 else repr(tok.token[:37]) + "..."
            raise DecodeError(
                path,
                f"{_type_name(tok.type_id)} token {shown} was not issued by this host "
                f"(a token comes from a Tool's reply or the host's Host.issue_token)",
            )


class Noting:
    """A policy noting the token refusals of another in `refusals` (admission turns a refusal into
    Malformed; a reply the host delivers is refused for it instead, saying why)."""

    restoring = False

    def __init__(self, policy: Issued, refusals: list):
        self.policy, self.refusals = policy, refusals

    def token(self, tok: HostToken, path: str) -> None:
        try:
            self.policy.token(tok, path)
        except DecodeError as e:
            self.refusals.append(str(e))
            raise


class _Restore:
    restoring = True

    def token(self, tok: HostToken, path: str) -> None:
        pass  # the program's own value, recorded when it entered the run


RESTORE = _Restore()
#: For a host with no store yet: it has issued nothing.
NONE_ISSUED = Issued(lambda type_id, token: False)


@contextmanager
def admitting(policy) -> Iterator[None]:
    """Decode under `policy` (Issued or RESTORE) in this context."""
    reset = ADMISSION.set(policy)
    try:
        yield
    finally:
        ADMISSION.reset(reset)


def tokens_in(value: Any) -> list[HostToken]:
    """Every host token inside a runtime value, left to right."""
    return [v for v in walk(value) if type(v) is HostToken]


# The trace encoding of a token is the CBOR array [7, type id, token]: its first two bytes are
# 0x83 0x07. Encoded bytes without them hold no token, so recording a reply walks its value only
# when they occur (rarely, in a reply that has no token).
_TOKEN_MARK = b"\x83\x07"


def may_hold_token(enc) -> bool:
    """Whether an encoded fact (flowrt.history.trace.EncodedFact), inline or in its blobs, may hold a token."""
    return _TOKEN_MARK in enc.data or (bool(enc.blobs) and any(_TOKEN_MARK in b for _, b in enc.blobs))
