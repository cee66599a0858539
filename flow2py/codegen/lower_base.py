"""What every part of the body lowering shares: the sinks a control form lowers into, the loop
a tail call continues, the per-`def` context, and the error a construct the generator cannot
lower raises. No lowering happens here; `lower.Body` and its parts (lower_*.py) use these."""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from flow2py.codegen import py


class CodegenError(Exception):
    """A construct the generator cannot lower (names the Flow location)."""


@dataclass
class Sink:
    kind: str  # return | assign | discard
    target: str | None = None

    def finish(self, x: py.Expr, mark: str | None) -> list:
        if self.kind == "return":
            return [py.return_(x, mark)]
        if self.kind == "assign":
            return [py.assign(py.name(self.target), x, mark)]
        if _atomic(x):
            return []
        return [py.expr_stmt(x, mark)]


RETURN = Sink("return")
DISCARD = Sink("discard")


def _atomic(x: py.Expr) -> bool:
    """Evaluating it has no effect and cannot fault: safe to leave in place while later operands
    run their statements (Flow locals never change)."""
    if isinstance(x, (cst.Name, cst.Integer, cst.SimpleString, cst.Float)):
        return True
    if isinstance(x, cst.Attribute):
        return _atomic(x.value) and isinstance(x.value, (cst.Name, cst.Attribute))
    return isinstance(x, cst.UnaryOperation) and isinstance(x.expression, cst.Integer)


@dataclass
class Loop:
    """The `while True:` of the function being lowered: a self loop or a merged group."""

    decl: str  # the function whose body is being lowered now
    params: dict[str, list[str]]  # member decl -> its parameter names in the loop function
    index: dict[str, int]  # member decl -> selector value (groups only)
    self_calls: set[int]  # Call ids that continue this loop
    group: bool = False


@dataclass
class DefCtx:
    generator: bool
    has_yield: bool = False
    loop: Loop | None = None
    bouncing: bool = False  # pure, wrapped by rt.bouncing: pure tail calls through values return rt.Tail


def _generator_marker() -> cst.SimpleStatementLine:
    """An effectful function whose body never yields (it only tail-calls) must still be a
    generator: the runtime drives it like any other."""
    return py.simple(cst.Expr(value=cst.Yield()), "# (unreachable: makes this function a generator)")
