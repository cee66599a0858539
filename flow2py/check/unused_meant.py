"""A local left unused by a mistake reported elsewhere: one mistake, not two.

`NoSlot(reason) => why`: `why` is unknown (E101) and `reason` is never used (E404), and both say
the same thing, that the arm's body meant the name its pattern bound. `Some(Entry { level: l })`
with `[level, ..rest]` bound: the record misses `message` (E206), and `rest` is unused because
that field is where it was going. The diagnostic of the mistake (an unknown name with nothing
close, a value or field left out) is held back until the function is walked (`defer`); then the
locals that were in scope at it, unused then, and still unused at the end are what it meant, if
there are few enough of them (one for a name, at most as many as the values left out): they get
a note on the diagnostic and are not reported unused. Otherwise it is reported as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from flow2py.check.infer_ctx import Binding
from flow2py.diagnostics import Related

if TYPE_CHECKING:  # the body walk calls this module
    from flow2py.check.body_state import BodyState


@dataclass(slots=True)
class Deferred:
    cands: list[Binding]  # the locals in scope at the mistake, unused then
    at_most: int  # how many of them the mistake can stand for
    report: Callable[[list[Binding]], object]  # reports it, with the locals it meant


def defer(st: BodyState, at_most: int, report: Callable[[list[Binding]], object]) -> None:
    """Report the mistake with `report(meant)` once the function is walked (at once when no
    local in scope is unused yet)."""
    seen: set[str] = set()
    cands = []
    for scope in reversed(st.scopes):
        for b in scope.values():
            if b.name not in seen and not b.used and not b.silent and not b.name.startswith("_"):
                cands.append(b)
            seen.add(b.name)
    if not cands or at_most < 1:
        report([])
        return
    st.deferred.append(Deferred(cands, at_most, report))


def notes(meant: list[Binding]) -> list[Related]:
    """The note at each local a mistake meant."""
    return [Related(f"`{b.name}` is bound here and never used", b.span) for b in meant if b.span.line]


def settle(st: BodyState) -> None:
    """Report what `defer` held back, now that every use of a local is known."""
    held, st.deferred = st.deferred, []
    for d in held:
        left = [b for b in d.cands if not b.used]
        if 1 <= len(left) <= d.at_most:
            for b in left:
                b.used = True
            d.report(left)
        else:
            d.report([])
