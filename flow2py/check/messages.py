"""The one place where the checker's diagnostics (the typed classes of flow2py/check/codes.py)
get their messages: `message(data)` renders the text from the object's fields."""

from __future__ import annotations

from flow2py.check import codes


def message(d: codes.CheckData) -> str:
    """The text of one checker diagnostic, from its typed object."""
    render = _BY_RANGE.get(d.code[:2])
    text = render(d) if render is not None else None
    if text is None:
        raise TypeError(f"no message for {type(d).__name__}")
    return text


# -- E1xx: modules and names -----------------------------------------------------------------


def _names(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E2xx: types ------------------------------------------------------------------------------


def _types(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E3xx: effects ----------------------------------------------------------------------------


def _effects(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E4xx: checks -----------------------------------------------------------------------------


def _checks(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


# -- E5xx: declarations and annotations -------------------------------------------------------


def _decls(d: codes.CheckData) -> str | None:
    match d:
        case _:
            return None


_BY_RANGE = {"E1": _names, "E2": _types, "E3": _effects, "E4": _checks, "E5": _decls}
