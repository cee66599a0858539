"""Tail-call analysis for codegen: which pure functions loop together, and which bounce.

Tail calls Python can loop over statically become loops: a function's calls to itself
(`while True:`) and a strongly connected group of pure functions calling each other in tail
position (one merged loop, Tarjan's algorithm). What is left — a pure tail call through a
function value, which only the value knows — is made by returning `rt.Tail` to the trampoline of
`rt.bouncing` that wraps the function ("bouncing"); a function tail-calling a bouncing one bounces
too, so a chain stays in one trampoline. Effectful tail calls are always the driver's
`rt.TailCall`, never analysed here.
"""

from __future__ import annotations

from flow2py.check import typed as P
from flow2py.syntax import ast as A


def ast_nodes(node, lambdas: bool = True):
    """Every AST node under `node` (itself included); with `lambdas=False`, lambdas and what is
    inside them are left out."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Lambda) and not lambdas:
            continue
        if isinstance(n, A.Node):
            yield n
            for f in n.__dataclass_fields__:
                if f in ("span", "id", "name_span", "source"):
                    continue
                stack.append(getattr(n, f))
        elif isinstance(n, (list, tuple)):
            stack.extend(n)


def calls_outside_lambdas(node):
    """Call nodes of a function body, not descending into lambdas (their tail calls are theirs)."""
    return (n for n in ast_nodes(node, lambdas=False) if isinstance(n, A.Call))


def tail_callees(prog: P.CheckedProgram, info: P.FnInfo) -> dict[int, str]:
    """Call id -> callee declaration, for the calls in tail position of `info`'s own body."""
    out = {}
    for c in calls_outside_lambdas(info.node.body):
        if c.id not in prog.tail_calls:
            continue
        ref = prog.refs.get(c.callee.id)
        if isinstance(ref, P.FnRef):
            out[c.id] = ref.decl
    return out


def tail_calls_of(prog: P.CheckedProgram, body) -> tuple[bool, set[str]]:
    """Of a body's own pure tail calls: whether one goes through a function value, and which
    top-level functions are tail-called."""
    through_value, callees = False, set()
    for c in calls_outside_lambdas(body):
        if c.id not in prog.tail_calls or prog.effects.get(c.id) == "tool":
            continue  # an effectful tail call is the driver's `rt.TailCall`
        ref = prog.refs.get(c.callee.id)
        if isinstance(ref, (P.FnRef, P.MethodRef)):
            callees.add(ref.decl)
        elif not isinstance(ref, P.CtorRef):
            through_value = True
    return through_value, callees


def bouncing_functions(prog: P.CheckedProgram, groups: dict[str, list[str]]) -> set[str]:
    """Pure functions (and pure variants of poly ones) that return `rt.Tail` for their tail calls
    through function values, or to another such function, and are wrapped by `rt.bouncing`:
    pure tail calls Python cannot loop over statically still run in constant stack
    (docs/spec/codegen.md, "Tail calls through function values"). A merged loop group bounces
    as a whole."""
    calls = {
        d: tail_calls_of(prog, i.node.body)
        for d, i in prog.fn_decls.items()
        if i.effect in ("pure", "poly") and not i.is_tool and i.node is not None and i.node.body is not None
    }
    out = {d for d, (through_value, _) in calls.items() if through_value}
    changed = True
    while changed:
        changed = False
        for d, (_, callees) in calls.items():
            if d not in out and any(c in out and c not in groups.get(d, (d,)) for c in callees):
                out.add(d)
                changed = True
    return out | {m for d in out for m in groups.get(d, ())}


def tail_groups(prog: P.CheckedProgram) -> list[list[str]]:
    """Strongly connected groups (two or more) of pure functions calling each other in tail
    position: each becomes one loop function (Tarjan's algorithm, in declaration order)."""
    pure = {
        d: i
        for d, i in prog.fn_decls.items()
        if i.effect == "pure" and not i.is_tool and i.node is not None and i.node.body is not None
    }
    edges = {
        d: sorted({c for c in tail_callees(prog, i).values() if c in pure and c != d})
        for d, i in pure.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v):
        work = [(v, iter(edges[v]))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges[w])))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    order = {d: k for k, d in enumerate(pure)}
                    out.append(sorted(comp, key=order.__getitem__))

    for d in pure:
        if d not in index:
            visit(d)
    return out
