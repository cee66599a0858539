"""Where a checkpoint can be taken: the whole-program half of `check --checkpoints`
(docs/spec/checking.md, "Checkpoint sites").

post.py records each tail call of a top-level function as a site, eligible when its callee is a
top-level Flow function called effectfully. The runtime takes a checkpoint at such a call only
when the root task's outermost frame makes it and every other live task is parked on its only
Tool call and held by the arguments (execution.md). Much of that is only known at run time; this
pass marks a site *not eligible* where it can prove the runtime never takes one there, says which
condition it could not check where it cannot, and adds the tail calls of lambdas, which become
checkpoint places when a lambda runs as the root's outermost frame.

Proofs, each a reason a site gets:
  * the enclosing function never runs as the root task's outermost frame: the outermost frames
    are the entry module's functions and what they tail-call, transitively (through a function
    value: any top-level function used as a value, and any lambda);
  * an argument always holds a function value (its type is a function, or a tuple or record
    that always holds one);
  * an argument holds a task that is never parked: traced to `task.spawn` of a body that is not
    one Tool call (through locals, literals and constructor payloads, and from a parameter to
    what every call of the function passes there);
  * a task spawned earlier in the same call and dropped (`task.spawn(...)` as a statement, or
    bound to `_` or to a name never used) is live and not in the arguments;
  * a type argument of the callee is a function or task type, which a checkpoint cannot record.
"""

from __future__ import annotations

from dataclasses import dataclass

from flow2py.check.typed import (
    POLY,
    PURE,
    CheckedProgram,
    CheckpointSite,
    CtorRef,
    FnInfo,
    FnRef,
    LocalRef,
    MethodRef,
    TCon,
    TFun,
    TParam,
    TTuple,
)
from flow2py.check.typeterms import show
from flow2py.syntax import ast


# What a value can be (`_origins`): a set of these.


@dataclass(frozen=True, slots=True)
class FnOrigin:
    """A top-level function."""

    decl: str


@dataclass(frozen=True, slots=True)
class LambdaOrigin:
    """A lambda."""

    id: int  # the Lambda node's id


@dataclass(frozen=True, slots=True)
class NeverParked:
    """A task spawned with a body that is never parked."""

    place: str  # where it is spawned, `file:line:column`


@dataclass(frozen=True, slots=True)
class Unknown:
    """Anything: a value the checker cannot follow."""


MAYBE = Unknown()
Origins = frozenset  # of FnOrigin, LambdaOrigin, NeverParked and MAYBE


@dataclass(slots=True)
class CallArgs:
    """A call of a top-level function, with its arguments (a method call's receiver first)."""

    call: ast.Call
    args: list


@dataclass(slots=True)
class LambdaTailCall:
    """A tail call, to a top-level function, in a lambda."""

    call: ast.Call
    owner: str  # the top-level function the lambda is in
    lam: int  # the innermost lambda's id


def refine_checkpoint_sites(prog: CheckedProgram) -> None:
    """Make `prog.checkpoints` honest (see the module docstring); sites of std are left alone."""
    walk = _Walk(prog)
    origins = _param_origins(prog, walk)
    outermost, lambdas_outer = _outermost(prog, walk, origins)
    sites = []
    for s in prog.checkpoints:
        call = walk.calls[s.call]
        value = s.callee is None and prog.effects.get(s.call, PURE) != PURE
        if (s.eligible or value) and not s.caller.startswith("std@"):
            ok, why = _judge(prog, walk, origins, call, s.callee, s.caller in outermost, False)
            s = CheckpointSite(s.call, s.caller, s.callee, ok, why, s.span)
        sites.append(s)
    for t in walk.lambda_tail_calls:
        callee = _callee(prog, t.call)
        if callee is None or t.owner.startswith("std@"):
            continue
        ok, why = _judge(prog, walk, origins, t.call, callee.decl, t.lam in lambdas_outer, True)
        sites.append(CheckpointSite(t.call.id, t.owner, callee.decl, ok, why, t.call.span))
    prog.checkpoints[:] = sites


# -- the program, walked once ------------------------------------------------------------------


class _Walk:
    """Per top-level function: its own tail calls, its lambdas' tail calls, parents of nodes,
    let bindings by binder, which binders are used, calls by callee."""

    def __init__(self, prog: CheckedProgram):
        self.parent: dict[int, ast.Node] = {}
        self.owner: dict[int, str] = {}  # node id -> enclosing top-level function decl
        self.let_value: dict[int, ast.Expr] = {}  # BindPattern id -> the let's value
        self.used: set[int] = set()  # binder ids some Name refers to
        self.calls_of: dict[str, list[CallArgs]] = {}  # callee decl -> its calls
        self.as_value: set[str] = set()  # top-level functions used as values
        self.own_tail_calls: dict[str, list[ast.Call]] = {}
        self.lambda_tail_calls: list[LambdaTailCall] = []
        self.lambda_calls: dict[int, list[ast.Call]] = {}  # lambda id -> its own tail calls
        self.lambdas: set[int] = set()
        self.calls: dict[int, ast.Call] = {}
        for decl, info in prog.fn_decls.items():
            if info.node is None or info.node.body is None:
                continue
            self._fn(prog, decl, info)

    def _fn(self, prog: CheckedProgram, decl: str, info: FnInfo) -> None:
        stack: list[tuple[object, ast.Node | None, ast.Lambda | None]] = [(info.node.body, None, None)]
        own: list[ast.Call] = []
        while stack:
            n, parent, lam = stack.pop()
            if isinstance(n, (list, tuple)):
                stack.extend((x, parent, lam) for x in n)
                continue
            if not isinstance(n, ast.Node):
                continue
            if parent is not None:
                self.parent[n.id] = parent
            self.owner[n.id] = decl
            ref = prog.refs.get(n.id)
            if isinstance(ref, LocalRef):
                self.used.add(ref.binder)
            if isinstance(n, ast.Let) and isinstance(n.pattern, ast.BindPattern):
                self.let_value[n.pattern.id] = n.value
            if isinstance(n, ast.Call):
                self.calls[n.id] = n
                self._call(prog, decl, n, lam, own)
            elif isinstance(ref, FnRef) and not (isinstance(parent, ast.Call) and parent.callee is n):
                self.as_value.add(ref.decl)
            if isinstance(n, ast.Lambda):
                self.lambdas.add(n.id)
            inner = n if isinstance(n, ast.Lambda) else lam
            for f in n.__dataclass_fields__:
                if f not in ("span", "id", "name_span", "source"):
                    stack.append((getattr(n, f), n, inner))
        self.own_tail_calls[decl] = own

    def _call(self, prog: CheckedProgram, decl: str, n: ast.Call, lam, own: list) -> None:
        ref = prog.refs.get(n.callee.id)
        if isinstance(ref, (FnRef, MethodRef)):
            args = (
                [n.callee.target]
                if isinstance(ref, MethodRef) and isinstance(n.callee, ast.FieldAccess)
                else []
            ) + list(n.args)
            self.calls_of.setdefault(ref.decl, []).append(CallArgs(n, args))
        if n.id not in prog.tail_calls or isinstance(ref, CtorRef):
            return
        if lam is None:
            own.append(n)
            return
        self.lambda_calls.setdefault(lam.id, []).append(n)  # a tail call of the innermost lambda
        if isinstance(ref, (FnRef, MethodRef)):
            self.lambda_tail_calls.append(LambdaTailCall(n, decl, lam.id))


def _callee(prog: CheckedProgram, call: ast.Call) -> FnInfo | None:
    """The top-level Flow function (with a body, not a Tool) a tail call makes, effectfully."""
    ref = prog.refs.get(call.callee.id)
    if not isinstance(ref, (FnRef, MethodRef)):
        return None
    info = prog.fn_decls[ref.decl]
    if info.is_tool or info.node is None or info.node.body is None:
        return None
    return info if prog.effects.get(call.id, PURE) != PURE else None


# -- which functions run as the root task's outermost frame ------------------------------------


def _outermost(prog: CheckedProgram, walk: _Walk, params: dict) -> tuple[set[str], set[int]]:
    """The functions, and the lambdas, that can be the root task's outermost frame: the entry
    module's functions, and what they tail-call, transitively; a tail call through a function
    value adds what the value can be (everything used as a value when that is not known)."""
    fns = {
        d
        for d, i in prog.fn_decls.items()
        if i.module == prog.entry_module
        and not i.is_tool
        and i.node is not None
        and i.node.body is not None
        and not i.type_params
        and not i.is_test
        and i.effect != POLY
    }
    lams: set[int] = set()
    todo: list[FnOrigin | LambdaOrigin] = [FnOrigin(d) for d in fns]
    anything = False
    while todo:
        x = todo.pop()
        found = []
        tail_calls = (
            walk.own_tail_calls.get(x.decl, ()) if type(x) is FnOrigin else walk.lambda_calls.get(x.id, ())
        )
        for c in tail_calls:
            if prog.effects.get(c.id, PURE) == PURE:
                continue
            info = _callee(prog, c)
            if info is not None:
                found.append(FnOrigin(info.decl))
            elif not isinstance(prog.refs.get(c.callee.id), (FnRef, MethodRef, CtorRef)):
                values = _origins(prog, walk, c.callee, params, 0)
                if MAYBE in values or not values:
                    anything = True
                found += [v for v in values if v != MAYBE]
        if anything:
            anything = False  # once: from here on everything a value can be is in
            found += [FnOrigin(v) for v in walk.as_value] + [LambdaOrigin(lam) for lam in walk.lambdas]
        for o in found:
            if type(o) is FnOrigin:
                info = prog.fn_decls[o.decl]
                if info.is_tool or info.node is None or info.node.body is None or o.decl in fns:
                    continue
                fns.add(o.decl)
            elif type(o) is LambdaOrigin:
                if o.id in lams:
                    continue
                lams.add(o.id)
            else:
                continue  # a task is not a function value: no frame runs it
            todo.append(o)
    return fns, lams


# -- what a value can be: tasks and functions ------------------------------------------------------
#
# A value's origins: a NeverParked for a task spawned with a body that is never parked, a
# FnOrigin for a top-level function, a LambdaOrigin for a lambda, MAYBE for anything else.


def _param_origins(prog: CheckedProgram, walk: _Walk) -> dict[int, Origins]:
    """Param id -> what is passed there, over every call of its function (a function also used
    as a value may be called with anything: MAYBE). A least fixpoint over a worklist of calls:
    when what a function's parameter can be grows, the calls inside that function are looked at
    again. Only parameters whose type can hold a task or a function are followed."""
    params: dict[int, Origins] = {}
    followed: dict[str, list] = {}  # callee decl -> [(param index, param id)] worth following
    for i in prog.fn_decls.values():
        if i.node is None or i.node.body is None:
            continue
        for k, (p, (_, t)) in enumerate(zip(i.node.params, i.params)):
            params[p.id] = frozenset() if i.decl not in walk.as_value else frozenset({MAYBE})
            if i.decl not in walk.as_value and _may_hold(
                prog, t, lambda x: isinstance(x, TFun) or _is_task(prog, x)
            ):
                followed.setdefault(i.decl, []).append((k, p.id))
    calls_in: dict[str, list] = {}  # enclosing decl -> [(callee decl, call args)]
    for callee, calls in walk.calls_of.items():
        if callee in followed:
            for c in calls:
                calls_in.setdefault(walk.owner[c.call.id], []).append((callee, c.args))
    todo = list(calls_in)
    while todo:
        owner = todo.pop()
        for callee, args in calls_in.get(owner, ()):
            for k, pid in followed[callee]:
                if k >= len(args):
                    continue
                got = params[pid] | _origins(prog, walk, args[k], params, 0)
                if got != params[pid]:
                    params[pid] = got
                    todo.append(callee)
    return params


def _origins(prog: CheckedProgram, walk: _Walk, e, params: dict, depth: int) -> Origins:
    """What the expression `e` can evaluate to (see above); a parameter not yet reached by the
    fixpoint contributes nothing."""
    if depth > 50 or e is None:
        return frozenset({MAYBE})
    if isinstance(e, ast.Block):
        last = e.stmts[-1] if e.stmts else None
        return (
            _origins(prog, walk, last.expr, params, depth + 1)
            if isinstance(last, ast.ExprStmt)
            else frozenset({MAYBE})
        )
    if isinstance(e, ast.If):
        other = (
            _origins(prog, walk, e.else_, params, depth + 1) if e.else_ is not None else frozenset({MAYBE})
        )
        return _origins(prog, walk, e.then, params, depth + 1) | other
    if isinstance(e, ast.Match):
        out: frozenset = frozenset()
        for arm in e.arms:
            out |= _origins(prog, walk, arm.body, params, depth + 1)
        return out
    if isinstance(e, ast.Lambda):
        return frozenset({LambdaOrigin(e.id)})
    if isinstance(e, ast.Call):
        ref = prog.refs.get(e.callee.id)
        info = prog.fn_decls.get(ref.decl) if isinstance(ref, FnRef) else None
        if (
            info is not None
            and info.lang == "task.spawn"
            and e.args
            and _never_parked(prog, walk, e.args[0], 0)
        ):
            return frozenset({NeverParked(f"{e.span.file}:{e.span.line}:{e.span.column}")})
        return frozenset({MAYBE})
    ref = prog.refs.get(e.id)
    if isinstance(ref, FnRef):
        return frozenset({FnOrigin(ref.decl)})
    if isinstance(ref, LocalRef):
        if ref.binder in params:
            return params[ref.binder]
        return _origins(prog, walk, walk.let_value.get(ref.binder), params, depth + 1)
    return frozenset({MAYBE})


def _never_parked(prog: CheckedProgram, walk: _Walk, f, depth: int) -> bool:
    """The task body `f` (spawn's argument) is surely not one Tool call, so the task it runs is
    never parked (abi.md, "Parkable tasks"): a lambda whose body is neither a Tool call nor a
    constructor applied, or a top-level function that is not a Tool."""
    if depth > 50:
        return False
    if isinstance(f, ast.Lambda):
        body = f.body
        while (
            isinstance(body, ast.Block) and len(body.stmts) == 1 and isinstance(body.stmts[0], ast.ExprStmt)
        ):
            body = body.stmts[0].expr
        if isinstance(body, ast.RecordLiteral):
            return False
        if isinstance(body, ast.Call):
            ref = prog.refs.get(body.callee.id)
            if isinstance(ref, CtorRef):
                return False
            if isinstance(ref, (FnRef, MethodRef)) and prog.fn_decls[ref.decl].is_tool:
                return False
        return True
    ref = prog.refs.get(f.id)
    if isinstance(ref, FnRef):
        return not prog.fn_decls[ref.decl].is_tool
    if isinstance(ref, LocalRef) and ref.binder in walk.let_value:
        return _never_parked(prog, walk, walk.let_value[ref.binder], depth + 1)
    return False


def _held_never_parked(prog, walk, e, params) -> str | None:
    """The spawn place of a never-parked task the expression surely holds, or None."""
    t = prog.types.get(e.id)
    if _is_task(prog, t):
        o = _origins(prog, walk, e, params, 0)
        if o and all(type(x) is NeverParked for x in o):
            return min(x.place for x in o)
        return None
    if isinstance(e, (ast.TupleLiteral, ast.ListLiteral)):
        items = e.items
    elif isinstance(e, ast.RecordLiteral):
        items = [f.value for f in e.fields if f.value is not None]
    elif isinstance(e, ast.Call) and isinstance(prog.refs.get(e.callee.id), CtorRef):
        items = e.args
    else:
        return None
    for x in items:
        hit = _held_never_parked(prog, walk, x, params)
        if hit:
            return hit
    return None


def _dropped_spawn(prog: CheckedProgram, walk: _Walk, call: ast.Call) -> str | None:
    """A task spawned earlier on the way to `call` in the same body and dropped: its place."""
    node: ast.Node = call
    p = walk.parent.get(node.id)
    while p is not None and not isinstance(p, ast.Lambda):
        if isinstance(p, ast.Block):
            for st in p.stmts:
                if st is node:  # the statement on the way to the call: what follows is later
                    break
                v = None
                if isinstance(st, ast.ExprStmt):
                    v = st.expr
                elif isinstance(st, ast.Let) and (
                    isinstance(st.pattern, ast.WildcardPattern)
                    or (isinstance(st.pattern, ast.BindPattern) and st.pattern.id not in walk.used)
                ):
                    v = st.value
                if isinstance(v, ast.Call):
                    ref = prog.refs.get(v.callee.id)
                    if isinstance(ref, FnRef) and prog.fn_decls[ref.decl].lang == "task.spawn":
                        return f"{v.span.file}:{v.span.line}:{v.span.column}"
        node, p = p, walk.parent.get(p.id)
    return None


# -- types ---------------------------------------------------------------------------------------


def _is_task(prog: CheckedProgram, t) -> bool:
    return isinstance(t, TCon) and getattr(prog.type_decls.get(t.decl), "lang", None) == "Task"


def _mentions(prog: CheckedProgram, t, want) -> bool:
    stack = [t]
    while stack:
        x = stack.pop()
        if want(x):
            return True
        if isinstance(x, TCon):
            stack.extend(x.args)
        elif isinstance(x, TTuple):
            stack.extend(x.items)
    return False


def _may_hold(prog: CheckedProgram, t, want, depth: int = 0) -> bool:
    """Whether a value of type `t` may hold something `want` accepts (records and enums opened;
    a type parameter, or a type nested beyond the bound, may hold anything)."""
    if depth > 8 or isinstance(t, TParam):
        return True
    if want(t):
        return True
    if isinstance(t, TTuple):
        return any(_may_hold(prog, x, want, depth + 1) for x in t.items)
    if isinstance(t, TCon):
        if any(_may_hold(prog, a, want, depth + 1) for a in t.args):
            return True
        info = prog.type_decls.get(t.decl)
        if info is None or info.lang:
            return False
        from flow2py.check.typeterms import subst

        mapping = {TParam(n, info.decl): a for n, a in zip(info.type_params, t.args)}
        parts = [f.type for f in info.fields] + [p for c in info.ctors for p in c.params]
        return any(_may_hold(prog, subst(p, mapping), want, depth + 1) for p in parts)
    return False


def _always_function(prog: CheckedProgram, t, depth: int = 0) -> bool:
    """Every value of type `t` holds a function value."""
    if depth > 8:
        return False
    if isinstance(t, TFun):
        return True
    if isinstance(t, TTuple):
        return any(_always_function(prog, x, depth + 1) for x in t.items)
    if isinstance(t, TCon):
        info = prog.type_decls.get(t.decl)
        if info is None or info.lang or info.kind != "record":
            return False
        from flow2py.check.typeterms import subst

        mapping = {TParam(n, info.decl): a for n, a in zip(info.type_params, t.args)}
        return any(_always_function(prog, subst(f.type, mapping), depth + 1) for f in info.fields)
    return False


# -- one site ---------------------------------------------------------------------------------------


def _judge(
    prog, walk, origins, call: ast.Call, callee_decl: str | None, outer: bool, in_lambda: bool
) -> tuple[bool, str]:
    """Whether a checkpoint can be taken at the tail call `call` (of a top-level function, or of
    a lambda when `in_lambda`), and why; `outer`: its function can be the root's outermost frame."""
    caller = prog.fn_decls[walk.owner[call.id]].name
    if callee_decl is None:  # a function value
        if _is_lambda(prog, walk, call.callee):
            return False, (
                "the callee is a lambda: what it captured is not in its arguments, and only a "
                "top-level function can be a checkpoint's function"
            )
        head = (
            "the callee is a function value: its arguments are the whole state when it is a "
            "top-level function (a lambda's captures are not in its arguments)"
        )
        first = "the value is a top-level function"
    else:
        head = f"tail call to the top-level function `{prog.fn_decls[callee_decl].name}`: its arguments are the whole state"
        first = None
    if not outer:
        if in_lambda:
            return False, (
                "a tail call inside a lambda that never runs as the root task's outermost frame "
                "(no tail call of an outermost function goes through a value that can be it)"
            )
        return False, (
            f"`{caller}` never runs as the root task's outermost function (not a function of the "
            f"entry module, nor tail-called by one), so no checkpoint is taken at its tail calls"
        )
    args = _args(prog, call)
    for a in args:
        if _always_function(prog, prog.types.get(a.id)):
            return False, "an argument always holds a function value, which a checkpoint cannot record"
    for a in args:
        place = _held_never_parked(prog, walk, a, origins)
        if place:
            return False, (
                f"the arguments hold the task spawned at {place}, whose body is not one Tool call: "
                f"it is never parked, so no checkpoint is taken here"
            )
    place = _dropped_spawn(prog, walk, call)
    if place:
        return False, (
            f"the task spawned at {place} is still live here and not in the arguments "
            f"(nothing holds it), so no checkpoint is taken here"
        )
    for t in prog.type_args.get(call.id, ()):
        if _mentions(prog, t, lambda x: isinstance(x, TFun) or _is_task(prog, x)):
            return (
                False,
                f"its type argument `{show(t)}` is a function or task type, which a checkpoint cannot record",
            )
    types = [prog.types.get(a.id) for a in args]
    conditions = [first] if first else []
    if in_lambda:
        conditions.append(
            "the lambda runs as the root task's outermost frame (tail-called through a function value)"
        )
    else:
        conditions.append(f"`{caller}` runs as the root task's outermost function")
    if any(_may_hold(prog, t, lambda x: _is_task(prog, x)) for t in types):
        conditions.append("every task the arguments hold is parked on its only Tool call")
        conditions.append("no other task is live")
    else:
        conditions.append("no other task is live")
    if any(_may_hold(prog, t, lambda x: isinstance(x, TFun)) for t in types):
        conditions.append("the arguments hold no function value")
    if any(_mentions(prog, t, lambda x: isinstance(x, TParam)) for t in prog.type_args.get(call.id, ())):
        conditions.append("its type arguments are no function or task types")
    return True, (
        f"{head}; a checkpoint is taken here when "
        + ", ".join(conditions[:-1])
        + (" and " if len(conditions) > 1 else "")
        + conditions[-1]
    )


def _is_lambda(prog: CheckedProgram, walk: _Walk, e) -> bool:
    """The callee surely is a lambda: a lambda literal, or a local bound to one."""
    for _ in range(50):
        if isinstance(e, ast.Lambda):
            return True
        ref = prog.refs.get(e.id)
        if not (isinstance(ref, LocalRef) and ref.binder in walk.let_value):
            return False
        e = walk.let_value[ref.binder]
    return False


def _args(prog: CheckedProgram, call: ast.Call) -> list:
    ref = prog.refs.get(call.callee.id)
    if isinstance(ref, MethodRef) and isinstance(call.callee, ast.FieldAccess):
        return [call.callee.target] + list(call.args)
    return list(call.args)
