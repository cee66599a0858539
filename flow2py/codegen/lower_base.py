"""The state of lowering one function body, and what every part of the lowering shares: the
sinks a control form lowers into, the loop a tail call continues, the per-`def` context, the
error a construct the generator cannot lower raises, names and temporaries, and the dispatch
of a node to the function that lowers it (the tables `EXPRS`, `INTO_SINK` and `STMTS`, filled by
lower.py, which imports every part)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import libcst as cst

from flow2py.check import typed as P
from flow2py.codegen import py
from flow2py.codegen.names import Namer
from flow2py.syntax import ast as A


class ModuleGen(Protocol):
    """What the lowering reads of the module being generated (module.ModuleGen, which imports
    this floor): the Python names of the program's declarations and type descriptors."""

    prog: P.CheckedProgram
    flow_file: str  # the name `# flow:` marks use
    names: object  # module.ProgramNames: `typed`, `bouncing` (sets of declaration ids)

    def type_info(self, decl: str) -> P.TypeInfo: ...
    def ctor_class(self, type_decl: str, ctor: str) -> py.Expr: ...
    def ctor_value(self, type_decl: str, ctor: str) -> py.Expr: ...
    def ctor_fields(self, type_decl: str, ctor: str) -> list[str]: ...
    def ctor_attrs(self, type_decl: str, ctor: str) -> list[str]: ...
    def field_name(self, n: str) -> str: ...
    def fn_value(self, decl: str, variant: str) -> py.Expr: ...
    def spec_ref(self, decl: str) -> py.Expr: ...
    def desc(self, t, targs: tuple[str, str] | None = None) -> py.Expr: ...


class CodegenError(Exception):
    """A construct the generator cannot lower (names the Flow location)."""


@dataclass
class Sink:
    kind: str  # return | assign | discard
    target: str | None = None

    def finish(self, x: py.Expr, mk: str | None) -> list:
        if self.kind == "return":
            return [py.return_(x, mk)]
        if self.kind == "assign":
            return [py.assign(py.name(self.target), x, mk)]
        if _atomic(x):
            return []
        return [py.expr_stmt(x, mk)]


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
    """The Python `def` being emitted: the function's own, or a lambda's."""

    generator: bool  # an effectful `def`: calls may `yield`
    has_yield: bool = False  # a `yield` was emitted (else a marker keeps it a generator)
    loop: Loop | None = None  # the loop its tail calls continue, if any
    bouncing: bool = False  # pure, wrapped by rt.bouncing: pure tail calls through values return rt.Tail
    #: an effectful lambda whose whole body is one task operation (`lower_lambda.requesting`):
    #: that request is returned, not yielded, when its arguments need no statements
    request_body: bool = False


@dataclass(slots=True)
class Body:
    """The state of lowering one top-level function (with its lambdas) in one variant."""

    mg: ModuleGen  # the module being generated: declarations' Python names, descriptors
    prog: P.CheckedProgram  # the checked program (mg.prog)
    namer: Namer  # the function's local names and temporaries
    variant: str  # 'pure' | 'tool': how a 'poly' effect reads in this variant
    ctx: DefCtx  # the `def` being emitted now (a lambda's while its body is lowered)
    #: binder node id (Param, BindPattern) -> its Python variable
    locals: dict[int, str] = field(default_factory=dict)
    #: Flow name -> Python variable, innermost block last
    scopes: list[dict[str, str]] = field(default_factory=lambda: [{}])
    #: (function decl, Python name) when the function takes its type arguments (typeargs.py)
    targs: tuple[str, str] | None = None


def new_body(mg: ModuleGen, namer: Namer, variant: str) -> Body:
    return Body(mg, mg.prog, namer, variant, DefCtx(generator=variant == "tool"))


# ---- dispatch ---------------------------------------------------------------------------------

#: expression node type -> the function lowering it to (statements, expression)
EXPRS: dict[type, Callable[[Body, A.Expr], tuple[list, py.Expr]]] = {}
#: node type -> the function lowering it straight into a sink (control forms, `return`, calls);
#: any other expression is lowered as a value (`value_into`)
INTO_SINK: dict[type, Callable[[Body, A.Expr, Sink], list]] = {}
#: statement node type -> the function lowering it (a block's last ExprStmt goes to its sink)
STMTS: dict[type, Callable[[Body, A.Stmt], list]] = {}


def expr(b: Body, e: A.Expr) -> tuple[list, py.Expr]:
    f = EXPRS.get(type(e))
    if f is None:
        raise error(e, f"unknown expression {type(e).__name__}")
    return f(b, e)


def to_sink(b: Body, e: A.Expr, sink: Sink) -> list:
    """The statements computing `e` and doing with its value what `sink` says."""
    f = INTO_SINK.get(type(e))
    if f is not None:
        return f(b, e, sink)
    return value_into(b, e, sink)


def value_into(b: Body, e: A.Expr, sink: Sink) -> list:
    """`e` lowered as an expression, its value handed to `sink`."""
    s, x = expr(b, e)
    if s and isinstance(x, cst.Name) and x.value.startswith("_t"):
        last = s[-1]
        if (
            isinstance(last, cst.SimpleStatementLine)
            and isinstance(last.body[0], cst.Assign)
            and isinstance(last.body[0].targets[0].target, cst.Name)
            and last.body[0].targets[0].target.value == x.value
        ):
            # `_t1 = yield f(x)` followed by `return _t1` reads better as one statement
            value = last.body[0].value
            mark_ = last.trailing_whitespace.comment.value if last.trailing_whitespace.comment else None
            if sink.kind == "discard":
                return s[:-1] + [py.expr_stmt(value, mark_)]
            return s[:-1] + sink.finish(value, mark_)
    return s + sink.finish(x, mark(b, e))


# ---- small helpers ----------------------------------------------------------------------------


def mark(b: Body, node) -> str:
    """The `# flow: FILE:LINE` comment of a statement lowered from `node` (anything with a span)."""
    return f"# flow: {b.mg.flow_file}:{node.span.line}"


def error(node, what: str) -> CodegenError:
    return CodegenError(f"{node.span.file}:{node.span.line}: {what}")


def eff(b: Body, node_id: int) -> str:
    e = b.prog.effects.get(node_id, "pure")
    if e == "poly":
        return b.variant
    return e


def fun_effect(b: Body, t) -> str:
    if isinstance(t, P.TFun):
        return b.variant if t.effect == "poly" else t.effect
    return "pure"


def bind(b: Body, binder: int, flow_name: str, py_name: str | None = None) -> str:
    n = py_name or b.namer.fresh(flow_name)
    b.locals[binder] = n
    b.scopes[-1][flow_name] = n
    return n


def lookup(b: Body, flow_name: str) -> str:
    for s in reversed(b.scopes):
        if flow_name in s:
            return s[flow_name]
    raise CodegenError(f"no local named {flow_name!r}")


def desc(b: Body, t) -> py.Expr:
    """A type descriptor here: the function's own type parameters read from `_targs`."""
    return b.mg.desc(t, b.targs)


def type_args_of(b: Body, node: A.Node) -> py.Expr:
    """The type arguments of a site (a call, or a function used as a value) as a tuple of
    descriptors, for a callee that takes them at run time."""
    targs = b.prog.type_args.get(node.id)
    if not targs:
        raise error(node, "a call of a generic function without type arguments")
    if b.targs is not None:
        owner = b.targs[0]
        own = tuple(P.TParam(n, owner) for n in b.prog.fn_decls[owner].type_params)
        if tuple(targs) == own:  # passed on as they came
            return py.name(b.targs[1])
    return py.tuple_([desc(b, t) for t in targs])


def yield_(b: Body, value: py.Expr) -> cst.Yield:
    if not b.ctx.generator:
        raise CodegenError("an effectful call outside an effectful function")
    b.ctx.has_yield = True
    return py.yield_(value)


def yielded(b: Body, value: py.Expr, e: A.Node, s: list):
    """`_tN = yield value` appended to `s`; -> (s, `_tN`)."""
    t = b.namer.temp()
    s.append(py.assign(py.name(t), yield_(b, value), mark(b, e)))
    return s, py.name(t)


def hoist(b: Body, x: py.Expr, mark_: str, stmts: list) -> py.Expr:
    if isinstance(x, cst.Name):
        return x
    t = b.namer.temp()
    stmts.append(py.assign(py.name(t), x, mark_))
    return py.name(t)


# ---- sequences: left-to-right evaluation ------------------------------------------------------


def seq(b: Body, exprs: list[A.Expr]) -> tuple[list, list[py.Expr]]:
    return seq_parts(b, [expr(b, e) for e in exprs], exprs)


def seq_parts(b: Body, parts, nodes) -> tuple[list, list[py.Expr]]:
    """Already lowered operands `(statements, expression)` in order: every one before the last
    with statements that is not atomic moves into a temporary first."""
    # a lambda's `def` evaluates nothing: operands before it need not move into temporaries
    last = max(
        (i for i, (s, _) in enumerate(parts) if s and not all(isinstance(x, cst.FunctionDef) for x in s)),
        default=-1,
    )
    stmts: list = []
    out: list[py.Expr] = []
    for i, (s, x) in enumerate(parts):
        stmts += s
        if i < last and not _atomic(x):
            x = hoist(b, x, mark(b, nodes[i]), stmts)
        out.append(x)
    return stmts, out


def _generator_marker() -> cst.SimpleStatementLine:
    """An effectful function whose body never yields (it only tail-calls) must still be a
    generator: the runtime drives it like any other."""
    return py.simple(cst.Expr(value=cst.Yield()), "# (unreachable: makes this function a generator)")
