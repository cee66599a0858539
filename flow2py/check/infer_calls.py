"""Calls and operators in a function body. A call resolves its callee (a top-level function, a
method through the receiver's home module, a record field holding a function, a constructor, or
any function value), checks each argument against the parameter as instantiated there, and adds
the callee's effect (a pass-through parameter's effect is that of the argument given for it).
An operator is a call of the function its operand type's home module declares for it (or the
generic one: infer_ops.py). Constructs: `call`; `value_effect` and `pure_slot` are shared."""

from __future__ import annotations

import dataclasses
import re

from flow2py.check import codes, missing_try, unused_meant
from flow2py.check import suggest as sg
from flow2py.check.body_state import (
    BodyState,
    add_effect,
    expect,
    expr,
    lookup,
    mark_used,
    same_type,
    show,
    use_local,
)
from flow2py.check.declare import ordinal
from flow2py.check.infer_habits import (
    copy_call,
    equals_call,
    getter_call,
    list_of,
    method_span,
    record_called,
)
from flow2py.check.infer_ctx import QUALIFIED_ERROR, CtorHit, FnHit, LazyWhy, Why
from flow2py.check.modgraph import STD_VERSION
from flow2py.check.infer_names import (
    ctor_access,
    ctor_decl,
    empty_parens,
    fresh_tcon,
    habit_call,
    instantiate,
    math_call,
    home_qualified,
    method_suggestion,
    qualified,
    read_field,
    resolve_value,
)
from flow2py.check.typed import (
    POLY,
    PURE,
    TOOL,
    CtorInfo,
    CtorRef,
    Effect,
    FnInfo,
    FnRef,
    MethodRef,
    ModuleRef,
    TCon,
    TError,
    TFun,
    TNever,
    TParam,
    TTuple,
    TypeInfo,
)
from flow2py.check.typeterms import (
    TVar,
    fun_effects,
    has_effect,
    join,
    resolve,
    subst,
    unifiable,
    unify,
    zonk,
)
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.span import Span
from flow2py.syntax import ast


def _arg_why(i: int, label: str) -> str:
    return f"the {ordinal(i)} argument of `{label}`"


def is_ground(t) -> bool:
    """Whether `t` holds no type variable, solved or not (so showing it later shows the same)."""
    stack = [t]
    while stack:
        x = stack.pop()
        k = type(x)
        if k is TCon:
            stack.extend(x.args)
        elif k is TVar:
            return False
        elif k is TTuple:
            stack.extend(x.items)
        elif k is TFun:
            stack.extend(x.params)
            stack.append(x.result)
    return True


def solved(t):
    """`t` with its solved variables replaced by their solutions (an unsolved one stays a
    variable, so `is_ground` of the result says whether the type is known)."""
    return zonk(t, TVar())


def call(st: BodyState, e: ast.Call, expected):
    callee = e.callee
    hit = None
    receiver = None
    if isinstance(callee, ast.Name) and lookup(st, callee.name) is None:
        habit = habit_call(st, e) or record_called(st, e) or list_of(st, e, expected)
        if habit is not None:
            return habit
        hit = resolve_value(st, callee.name, expected, callee.span, called=True, arity=len(e.args))
        if hit is None:
            return _args_poison(st, e)
    elif isinstance(callee, ast.FieldAccess):
        habit = math_call(st, e)
        if habit is not None:
            return habit
        before = len(st.problems.items)
        q = qualified(st, callee, called=True, arity=len(e.args))
        if q is not None:
            if q is QUALIFIED_ERROR:
                t = _args_poison(st, e)
                _unfit_member_rename(st, before, e)
                _unfit_qualifier_rename(st, before, e)
                return t
            hit = q
        else:
            tt = resolve(expr(st, callee.target))
            if _record_field_fn(st, tt, callee.name):
                ft = read_field(st, callee, tt)
                st.types[callee.id] = ft
                return _call_value(st, e, ft)
            if copy_call(st, e, tt):
                return tt
            if equals_call(st, e, tt):
                return st.d.lang_con("Bool")
            got = getter_call(st, e, tt)
            if got is not None:
                return got
            before = len(st.problems.items)
            fn = _method(st, callee, tt, e)
            if fn is None:
                meant = _meant_method(st, before, tt, e)
                if meant is not None:
                    return _call_as_meant(st, e, before, meant, expected)
                t = _args_poison(st, e)
                _unfit_rename(st, before, tt, e)
                return t
            hit = FnHit(fn)
            receiver = callee.target
    if hit is None:
        ft = expr(st, callee)
        return _call_value(st, e, ft)
    if type(hit) is CtorHit:
        return _call_ctor(st, e, hit.info, hit.ctor, expected)
    return _call_fn(st, e, hit.fn, receiver, expected)


def _record_field_fn(st: BodyState, tt, name: str) -> bool:
    if type(tt) is TCon:
        info = st.d.type_decls.get(tt.decl)
        if info is not None and info.kind == "record":
            return any(f.name == name for f in info.fields)
    return False


def _method(st: BodyState, callee: ast.FieldAccess, tt, e: ast.Call) -> FnInfo | None:
    """`x.f(...)`: the `f` of the home module of x's type; when that module declares no `f`
    (or x's type has no home module: tuples, functions), the generic std function `f` whose
    first parameter is a type parameter (std/data.flow: `to_text`, `compare`, ...), the same
    rule as the generic operators."""
    if type(tt) in (TError, TNever):
        return None
    if type(tt) is TVar:
        st.problems.report(codes.CannotInfer(callee.target.span, "method", callee.name))
        return None
    home = tt.decl.split("::")[0] if type(tt) is TCon else None
    menv = st.d.envs.get(home) if home else None
    fn = menv.cm.fns.get(callee.name) if menv else None
    if fn is not None:
        if not fn.pub and home != st.env.key:
            st.problems.report(codes.PrivateName(callee.span, callee.name, "method", module=home))
            return None
        if not fn.params:
            st.problems.report(codes.UnknownMethod(method_span(callee), callee.name, no_params=True))
            return None
        st.refs[callee.id] = MethodRef(fn.decl)
        return fn
    fn = st.d.generic_fns.get(callee.name)
    if fn is not None:
        st.refs[callee.id] = MethodRef(fn.decl)
        return fn
    sugg = method_suggestion(st, callee.name, menv, home)
    at = callee.name_span if callee.name_span.line else None
    fixes = home_qualified(st, e, menv, home, sugg, sugg.fixes(at) if at else [])
    other = None if sugg else _other_home(st, e, tt)
    if other is not None:
        sugg, fixes = other
    st.problems.report(
        codes.UnknownMethod(method_span(callee), callee.name, show(st, tt), home or None, meant=sugg.said()),
        related=sugg.related(),
        fixes=_try_instead(st, callee, tt, e) + fixes,
    )
    return None


def _meant_method(st: BodyState, at: int, tt, e: ast.Call) -> FnInfo | None:
    """The function the E210 just reported at `st.problems.items[at]` renames the method to by its
    one safe fix (`items.Where(...)` -> `filter`), when it takes the receiver and as many
    arguments as given, each lambda with as many parameters as its function type has: the call
    is then checked as meant (`_call_as_meant`)."""
    items = st.problems.items
    if at >= len(items) or items[at].code != "E210" or type(tt) is not TCon or len(items[at].fixes) != 1:
        return None
    name = _renamed_to(items[at].fixes[0], e)
    menv = st.d.envs.get(tt.decl.split("::")[0])
    fn = ((menv.cm.fns.get(name) if menv else None) or st.d.generic_fns.get(name)) if name else None
    if fn is None or len(fn.params) != len(e.args) + 1:
        return None
    for a, (_, p) in zip(e.args, fn.params[1:]):
        if type(a) is ast.Lambda and (
            type(resolve(p)) is not TFun or len(resolve(p).params) != len(a.params)
        ):
            return None
    return fn


def _call_as_meant(st: BodyState, e: ast.Call, at: int, fn: FnInfo, expected):
    """`x.Where(f)` checked as the `x.filter(f)` its safe fix writes: the arguments (a lambda's
    parameters known) and the value are then what was meant, so what follows is checked in the
    same pass rather than once this is fixed. A mistake the check finds makes the fix one to
    review (the renamed call does not fit as it is); a mismatch with the renamed function's
    types (E201, E202) is then the guess's, not reported, while a name or method unknown inside
    an argument (`flow(n) = n.shout()`) is a mistake of its own and is."""
    items = st.problems.items
    mark = len(items)
    t = _call_fn(st, e, fn, e.callee.target, expected)
    if len(items) > mark:
        items[mark:] = [d for d in items[mark:] if d.code not in ("E201", "E202")]
        d, f = items[at], items[at].fixes[0]
        items[at] = dataclasses.replace(d, fixes=(Fix(f.message, f.edits, False),))
        return TError()
    return t


def _unfit_rename(st: BodyState, at: int, tt, e: ast.Call) -> None:
    """The safe fix of the E210 reported at `st.problems.items[at]` renaming the method, made
    one to review when the function it names does not take the call's receiver and arguments
    (`xs.forEach(flow(x) = send(x))`: `each` takes a function of Unit result, `send` gives a
    Result), as rustc's suggestion of a similarly named method is checked against the call."""
    if at >= len(st.problems.items) or st.problems.items[at].code != "E210" or type(tt) is not TCon:
        return
    d = st.problems.items[at]
    menv = st.d.envs.get(tt.decl.split("::")[0])
    fixes = list(d.fixes)
    for k, f in enumerate(fixes):
        name = _renamed_to(f, e)
        if name is None:
            continue
        fn = (menv.cm.fns.get(name) if menv else None) or st.d.generic_fns.get(name)
        if fn is not None and not _takes_call(st, fn, tt, e):
            fixes[k] = Fix(f.message, f.edits, False)
    if fixes != list(d.fixes):
        st.problems.items[at] = dataclasses.replace(d, fixes=tuple(fixes))


def _unfit_member_rename(st: BodyState, at: int, e: ast.Call) -> None:
    """The safe fix of the E110 reported at `st.problems.items[at]` renaming a module's function
    (`task.awaitAll(tasks)` -> `task.await`), made one to review when the function it names does
    not take the call's (checked) arguments: `await` takes one task, `tasks` is a list of them."""
    items = st.problems.items
    ref = st.refs.get(e.callee.target.id)
    if at >= len(items) or items[at].code != "E110" or type(ref) is not ModuleRef:
        return
    d, menv = items[at], st.d.envs.get(ref.key)
    fixes = list(d.fixes)
    for k, f in enumerate(fixes):
        if not f.safe or len(f.edits) != 1 or f.edits[0].span != e.callee.name_span:
            continue
        fn = menv.cm.fns.get(f.edits[0].text) if menv is not None else None
        if fn is not None and not _takes_call(st, fn, None, e):
            fixes[k] = Fix(f.message, f.edits, False)
    if fixes != list(d.fixes):
        items[at] = dataclasses.replace(d, fixes=tuple(fixes))


def _unfit_qualifier_rename(st: BodyState, at: int, e: ast.Call) -> None:
    """The safe fix of the E101 reported at `st.problems.items[at]` naming the module meant for
    an unknown qualifier (`String.join(...)` -> `text.join`), made one to review when that
    module's function does not take the call's (checked) arguments; where it takes the two given
    the other way round (Java's `String.join(sep, parts)`, Flow's `text.join(parts, sep)`), the
    fix writes them so too, safe."""
    items = st.problems.items
    if at >= len(items) or items[at].code != "E101" or getattr(items[at].data, "kind", "") != "module":
        return
    d, target = items[at], e.callee.target
    fixes = list(d.fixes)
    for k, f in enumerate(fixes):
        if not f.safe or not f.edits or f.edits[0].span != target.span:
            continue
        key = st.env.lm.aliases.get(f.edits[0].text) or _added_use(f)
        menv = st.d.envs.get(key) if key else None
        fn = menv.cm.fns.get(e.callee.name) if menv is not None else None
        if fn is None or _takes_call(st, fn, None, e):
            continue
        fixes[k] = _swapped_args(st, e, fn, f) or Fix(f.message, f.edits, False)
    if fixes != list(d.fixes):
        items[at] = dataclasses.replace(d, fixes=tuple(fixes))


def _added_use(f: Fix) -> str | None:
    """The std module a fix's `use` edit adds (`use "std@v1/text"`), if it adds one."""
    for ed in f.edits[1:]:
        m = re.search(r'use "([^"]+)"', ed.text)
        if m:
            return m.group(1)
    return None


def _swapped_args(st: BodyState, e: ast.Call, fn: FnInfo, f: Fix) -> Fix | None:
    """`f` with the call's two arguments written the other way round, when `fn` takes them so."""
    if len(e.args) != 2 or any(type(a) is ast.Lambda or a.span.end <= a.span.start for a in e.args):
        return None
    a, b = e.args
    if not _takes_call(st, fn, None, dataclasses.replace(e, args=[b, a])):
        return None
    src = st.env.lm.ast.source or ""
    ta, tb = src[a.span.start : a.span.end], src[b.span.start : b.span.end]
    edits = (*f.edits, Edit(a.span, tb), Edit(b.span, ta))
    return Fix(f"{f.message}, and give `{tb}` first: `{fn.name}` takes it so", edits, True)


#: a function given one argument more than it takes -> the function of its module taking that
#: default too (Python's `d.get(key, default)`)
_WITH_DEFAULT = {"get": "get_or"}


def _with_default(st: BodyState, fn: FnInfo, callee, given: int):
    """The `get_or` of `fn`'s module when `fn` is its `get` called with a default as Python's
    `dict.get` is, as a method (`limits.get(team, 100)`); else None."""
    name = _WITH_DEFAULT.get(fn.name)
    if name is None or type(callee) is not ast.FieldAccess or not callee.name_span.line:
        return None
    menv = st.d.envs.get(fn.decl.split("::")[0])
    alt = menv.cm.fns.get(name) if menv is not None else None
    return alt if alt is not None and alt.pub and len(alt.params) == given else None


def _call_with_default(st: BodyState, e: ast.Call, fn: FnInfo, alt: FnInfo, receiver, expected, label, takes):
    """Python's `d.get(key, default)`: Flow's `get` takes the key, `get_or` the default too; one
    mistake, the call checked as meant (so its value is not also an Option where a V is wanted)."""
    st.problems.report(
        codes.WrongArity(e.span, "arguments", label, takes, len(e.args)),
        related=[Related(f"`{fn.name}` is declared here", fn.node.span)],
        fixes=[Fix(f"write `{alt.name}`", (Edit(e.callee.name_span, alt.name),), True)],
    )
    return _call_fn(st, e, alt, receiver, expected)


def _renamed_to(f: Fix, e: ast.Call) -> str | None:
    """The function a safe fix of a method call renames it to: `xs.forEach(...)` written
    `xs.each(...)` (one edit of the name) or `list.each(xs, ...)` (`home_qualified`)."""
    if not f.safe:
        return None
    if len(f.edits) == 1 and f.edits[0].span == e.callee.name_span:
        return f.edits[0].text
    if len(f.edits) == 1 and f.edits[0].span == e.span:  # infer_names.home_qualified
        m = re.match(r"[a-z_]\w*\.([a-z_]\w*)\(", f.edits[0].text)
        return m.group(1) if m else None
    return None


def _takes_call(st: BodyState, fn: FnInfo, tt, e: ast.Call) -> bool:
    """Whether `fn` takes `tt` (a method's receiver; None for a module's function) and the
    (checked) arguments of `e` as its parameters."""
    given = [] if tt is None else [tt]
    if len(fn.params) != len(e.args) + len(given):
        return False
    mapping = {(fn.decl, p): TVar() for p in fn.type_params}
    params = tuple(subst(t, mapping) for _, t in fn.params)
    for a in e.args:
        if type(a) is not ast.Lambda:
            given.append(st.types.get(a.id, TError()))
            continue
        # checked with no callee (`_args_poison`), its parameters unknown: what its body gives
        # must be known to say it fits
        res = resolve(st.types.get(a.body.id, TError()))
        if type(res) in (TError, TVar):
            return False
        given.append(TFun(tuple(TError() for _ in a.params), res, PURE))
    return unifiable(TTuple(params), TTuple(tuple(given)))


def _try_instead(st: BodyState, callee: ast.FieldAccess, tt, call: ast.Call) -> list:
    """Rust's `r.unwrap()` (or `r.expect("...")`) on a Result, inside a function that returns a
    Result of the same error type: Flow's `r?`, which gives the function's caller the error the
    Rust program would stop on. The one Flow form there, so a safe fix (`?` needs no default)."""
    if callee.name not in ("unwrap", "expect") or len(call.args) != (callee.name == "expect"):
        return []
    if not (st.d.is_lang(tt, "Result") and len(tt.args) == 2):
        return []
    res = resolve(st.fn_stack[-1].result)
    if not (st.d.is_lang(res, "Result") and len(res.args) == 2 and same_type(res.args[1], tt.args[1])):
        return []
    end, sp = callee.target.span, call.span
    if end.end <= sp.start or sp.end <= end.end:
        return []
    at = Span(sp.file, end.end_line, end.end_column, sp.end_line, sp.end_column, end.end, sp.end)
    return [Fix(f"write `?` instead of `.{callee.name}(...)`", (Edit(at, "?"),), True)]


def _args_poison(st: BodyState, e: ast.Call):
    for a in e.args:
        if type(a) is ast.Lambda:
            # the callee is unknown (reported), so are the types of a lambda's parameters: its
            # body is checked without "cannot infer" (E212) at every use of them
            unknown = TFun(tuple(TError() for _ in a.params), TError(), PURE)
            st.types[a.id] = st.dispatch[ast.Lambda](st, a, unknown)
        else:
            expr(st, a)
            missing_try.unchecked(st, a)
    st.types[e.callee.id] = st.types.get(e.callee.id, TError())
    return TError()


def _call_fn(st: BodyState, e: ast.Call, fn: FnInfo, receiver, expected=None):
    mark_used(st, fn.decl)
    callee = e.callee
    if receiver is None:
        st.refs[callee.id] = FnRef(fn.decl)
    params, result, targs = instantiate(st, fn, e.span)
    if targs:
        st.type_args[e.id] = targs
    label = _fn_label(st, callee, fn)
    st.types[callee.id] = TFun(tuple(params), result, fn.effect)
    args = list(e.args)
    offset = 0
    rstart = len(st.problems.items)
    if receiver is not None:
        offset = 1
        rt = st.types[receiver.id]
        expect(st, rt, params[0], receiver, Why(f"the receiver of `.{fn.name}`", fn.node.params[0].span))
    if expected is not None and not is_ground(result) and unifiable(result, expected):
        # what the context expects fixes the type variables the receiver left open, before the
        # arguments are checked: `items.fold(0, ...)` where a Decimal is expected is one mistake,
        # at the `0`, not a mismatch inside the lambda and another at the call
        unify(result, expected)
    from_context = expected is not None and is_ground(solved(result))
    given = len(args) + offset
    alt = _with_default(st, fn, callee, given) if given == len(params) + 1 else None
    if alt is not None:
        return _call_with_default(st, e, fn, alt, receiver, expected, label, len(params) - offset)
    if given != len(params):
        found = [expr(st, a) for a in args]
        fix = _missing_from_scope(st, e, fn, params, offset, found) if given < len(params) else None
        unused_meant.defer(
            st,
            len(params) - given,
            lambda meant: st.problems.report(
                codes.WrongArity(e.span, "arguments", label, len(params) - offset, len(args)),
                related=[Related(f"`{fn.name}` is declared here", fn.node.span), *unused_meant.notes(meant)],
                fixes=[fix] if fix is not None else _as_one_list(st, args, found, params[offset:]),
            ),
        )
        return result
    eff = fn.effect
    call_eff = TOOL if eff == TOOL else PURE
    starts = []  # how many diagnostics there were before each argument's check
    for i, a in enumerate(args):
        pi = i + offset
        pt = params[pi]
        why = LazyWhy(_arg_why, (i, label), fn.node.params[pi].span)
        starts.append(len(st.problems.items))
        expr(st, a, pt, why)
        if type(a) is ast.Lambda and _reported_at(st, starts[-1], a.span):
            # a function of the wrong shape: what the call gives back is not known either (its
            # type variables were to come from the function), so its uses are not reported
            result = TError()
        elif type(a) is ast.Lambda and not from_context:
            result = _start_of_the_other_number(st, e, fn, offset, i, starts[-1], label) or result
        ae = value_effect(st, a)
        if has_effect(pt, PURE) and ae != PURE:
            st.problems.report(
                codes.EffectfulArgument(a.span, label, i),
                related=[Related("declared `!pure` here", fn.node.params[pi].span)],
            )
        if eff == POLY and pi in fn.poly_params:
            call_eff = join(call_eff, ae)
    if receiver is not None and args and len(st.problems.items) > rstart + 1:
        _swapped(st, [receiver, *args], [rstart, *starts], label, fn, 0, receiver=True, call=e)
    elif len(args) > 1 and len(st.problems.items) > starts[0]:
        # a parameter whose declared type is unknown (reported where it is declared) takes any
        # argument: the one it was given may be the other half of a swap all the same
        unknown = {i for i in range(len(args)) if type(resolve(params[i + offset])) is TError}
        if unknown or len(st.problems.items) > starts[0] + 1:
            _swapped(st, args, starts, label, fn, offset, unknown=unknown)
    if receiver is not None and eff == POLY and 0 in fn.poly_params:
        call_eff = join(call_eff, value_effect(st, receiver))
    st.effects[e.id] = call_eff
    if fn.is_tool and fn.node is not None:
        st.tool_callees[e.span] = fn
    add_effect(st, call_eff, e.span)
    return result


def _start_of_the_other_number(st: BodyState, e: ast.Call, fn: FnInfo, offset: int, i: int, start, label):
    """`list.fold(xs, 0, flow(acc, x) = acc + x.price)`: the lambda's parameter `acc` is an Int
    because of the whole literal given for the same type parameter (`init: A`, `f: (A, T) -> A`),
    and the lambda uses it as a Decimal, so that is what the type parameter is: the literal is
    the mistake (`0.0`, a safe fix), reported in place of the lambda's mismatch. The call's result
    (None: as it was) is then Decimal when it is that type parameter, else not known (its uses
    are not reported)."""
    lam, dec = e.args[i], st.d.lang_con("Decimal")
    ft = resolve(fn.params[i + offset][1])
    new = st.problems.items[start:]
    if type(ft) is not TFun or len(ft.params) != len(lam.params) or len(new) != 1 or type(dec) is TError:
        return None
    b = st.converted_params.get(new[0].span)
    k = next((k for k, q in enumerate(lam.params) if b is not None and q is b.node), None)
    if k is None or type(resolve(ft.params[k])) is not TParam or b.uses != 1:
        return None
    # its one use an operand of the arithmetic that is the lambda's value (`acc + x.price`): the
    # lambda's result is then the Decimal too
    body = lam.body
    while type(body) is ast.Block and body.stmts and type(body.stmts[-1]) is ast.ExprStmt:
        body = body.stmts[-1].expr
    if (
        type(body) is not ast.Binary
        or body.op not in ("+", "-", "*")
        or new[0].span
        not in (
            body.left.span,
            body.right.span,
        )
    ):
        return None
    for j, a in enumerate(e.args[:i]):
        same = resolve(fn.params[j + offset][1]) == resolve(ft.params[k])
        if same and type(a) is ast.Literal and a.kind == "int" and _digits(st, a):
            del st.problems.items[start:]
            why = LazyWhy(_arg_why, (j, label), fn.node.params[j + offset].span)
            expect(st, st.types.get(a.id, TError()), dec, a, why)
            return dec if resolve(fn.result) == resolve(ft.params[k]) else TError()
    return None


def _digits(st: BodyState, a) -> bool:
    src = st.env.lm.ast.source or ""
    return a.span.end > a.span.start and src[a.span.start : a.span.end].isdigit()


def _as_one_list(st: BodyState, args: list, found: list, params: list) -> list:
    """`task.race(f, g)` of `race(fs: List<() -> T>)`: several values where the one parameter is
    a List of their type were meant as its items; `[...]` around them is the safe fix."""
    lst = st.d.lang_types.get("List")
    p = resolve(params[0]) if len(params) == 1 else None
    if len(args) < 2 or lst is None or type(p) is not TCon or p.decl != lst.decl:
        return []
    if any(type(resolve(t)) in (TError, TNever) for t in found):
        return []
    if not unifiable(TTuple(tuple(found)), TTuple(tuple(p.args[0] for _ in found))):
        return []  # the items of one List: of one type
    a, b = args[0].span, args[-1].span
    if a.end <= a.start or b.end <= b.start:
        return []
    open_ = Span(a.file, a.line, a.column, a.line, a.column, a.start, a.start)
    close = Span(b.file, b.end_line, b.end_column, b.end_line, b.end_column, b.end, b.end)
    return [Fix("pass them as one List: `[...]`", (Edit(open_, "["), Edit(close, "]")), True)]


def _missing_from_scope(st: BodyState, e: ast.Call, fn: FnInfo, params, offset: int, found) -> Fix | None:
    """`send(to)` for `send(to: Text, body: Text)` where a local `body` of that type is in scope:
    the missing arguments are the locals named as their parameters, a safe fix that passes them
    in the parameters' order (the arguments given are read as the first parameters, or, when each
    is a name of a parameter, as those; one left out in the middle, `roll(a, b, d)` of
    `roll(a, b, target, d)`, where only that place lets every value given fit). The locals are
    then used, so not also unused (E404). None unless the values given fit where they go."""
    names = [n for n, _ in fn.params][offset:]
    args = list(e.args)
    given = [a.name if type(a) is ast.Name else None for a in args]
    by_name = all(g in names for g in given) and len(set(given)) == len(given)
    missing = [n for n in names if n not in given] if by_name else names[len(args) :]
    if not by_name:
        gap = _the_gap(params[offset:], found) if len(names) == len(args) + 1 else None
        if gap is not None and gap < len(args):
            return _pass_at(st, e, names[gap], params[offset + gap], args[gap])
        if not all(unifiable(t, p) for t, p in zip(found, params[offset:])):
            return None
    found = []
    for n in missing:
        b = lookup(st, n)
        if b is None or not unify(b.type, params[offset + names.index(n)]):
            return None
        found.append(b)
    sp = e.span
    if args and by_name:
        edit = Edit(args[0].span.merge(args[-1].span), ", ".join(names))
    elif args:
        last = args[-1].span
        at = Span(sp.file, last.end_line, last.end_column, last.end_line, last.end_column, last.end, last.end)
        edit = Edit(at, "".join(f", {n}" for n in missing))
    elif sp.end > sp.start and sp.end_column > 1 and (st.env.lm.ast.source or "")[sp.end - 1 : sp.end] == ")":
        c = sp.end_column - 1
        edit = Edit(Span(sp.file, sp.end_line, c, sp.end_line, c, sp.end - 1, sp.end - 1), ", ".join(missing))
    else:
        return None
    for b in found:
        use_local(st, b)
    return Fix(f"pass {', '.join(f'`{n}`' for n in missing)}", (edit,), True)


def _the_gap(params: list, found: list) -> int | None:
    """The one place a single left-out parameter can be such that every value given fits the
    parameter it then stands for; None when there is none or several."""
    fits = [
        k
        for k in range(len(found) + 1)
        if all(unifiable(t, p) for t, p in zip(found, params[:k] + params[k + 1 :]))
    ]
    return fits[0] if len(fits) == 1 else None


def _pass_at(st: BodyState, e: ast.Call, name: str, param, before) -> Fix | None:
    """The fix passing the local `name` (of the parameter's type) before the argument `before`."""
    b = lookup(st, name)
    if b is None or not unify(b.type, param) or before.span.end <= before.span.start:
        return None
    sp = before.span
    use_local(st, b)
    return Fix(
        f"pass `{name}`",
        (Edit(Span(sp.file, sp.line, sp.column, sp.line, sp.column, sp.start, sp.start), f"{name}, "),),
        True,
    )


def _swapped(
    st: BodyState,
    args,
    starts: list[int],
    label: str,
    fn: FnInfo,
    offset: int,
    receiver: bool = False,
    call: ast.Call | None = None,
    unknown: set[int] = frozenset(),
) -> None:
    """Two arguments each of the type the other's parameter takes, and no other mistake in
    either: one mistake (the order), not two mismatches. Its fix swaps them; not safe, since the
    author may have meant other values. With `receiver`, `args[0]` is a method call's receiver
    (`", ".join(names)`, Python's order): the fix then calls the function by its module
    (`_receiver_swap_fix`)."""
    items = st.problems.items
    found = _swapped_pair(st, args, starts, unknown)
    if found is None:
        return
    i, j, only = found
    a = only[i].data if only.get(i) is not None else codes.TypeMismatch(args[i].span, *_flipped(only[j].data))
    src = st.env.lm.ast.source or ""
    x, y = args[i].span, args[j].span
    fixes = []
    if receiver and i == 0:
        fixes = _receiver_swap_fix(st, call, fn, args, j)
    elif x.end > x.start and y.end > y.start:
        # `text.join(", ", parts)`: Python's order, the habit whose one Flow form the swap is
        safe = fn.lang == "text.join"
        fixes = [Fix("swap them", (Edit(x, src[y.start : y.end]), Edit(y, src[x.start : x.end])), safe)]
    items[:] = [d for d in items if d is not only[i] and d is not only[j]]
    st.problems.report(
        codes.TypeMismatch(
            Span(x.file, x.line, x.column, y.end_line, y.end_column, x.start, y.end),
            a.found,
            a.expected,
            place="swapped-receiver" if receiver and i == 0 else "swapped",
            name=label,
            swapped=(i, j) if not receiver else (i - 1, j - 1) if i else (0, j - 1),
        ),
        related=[
            Related(
                f"the {ordinal(k + offset)} parameter of `{fn.name}` is declared here",
                fn.node.params[k + offset].span,
            )
            for k in (i, j)
        ],
        fixes=fixes,
    )


def _flipped(d: codes.TypeMismatch) -> tuple[str, str]:
    """(found, expected) of the other argument of a swap whose own mismatch is `d`."""
    return d.expected, d.found


def _swapped_pair(st: BodyState, args, starts: list[int], unknown=frozenset()):
    """(i, j, only): the first two arguments whose one diagnostic each (`only`) is a plain
    mismatch at the argument, each of the type the other's parameter takes; None if none. An
    argument in `unknown` (its parameter's type is unknown, so it fits) is one of the two when it
    has no diagnostic and is of the type the other's parameter takes (its `only` entry None)."""
    items = st.problems.items
    ends = starts[1:] + [len(items)]
    only = {}  # argument -> its one diagnostic, a plain mismatch at the argument itself
    for i, (lo, hi) in enumerate(zip(starts, ends)):
        d = items[lo] if hi - lo == 1 else None
        if d is not None and isinstance(d.data, codes.TypeMismatch) and d.data.place == "value":
            if d.data.span == args[i].span:
                only[i] = d
        elif hi == lo and i in unknown:
            only[i] = None
    for i in only:
        for j in only:
            if i >= j or (only[i] is None and only[j] is None):
                continue
            if only[i] is None or only[j] is None:
                d, other = (only[j], i) if only[i] is None else (only[i], j)
                if show(st, st.types.get(args[other].id, TError())) == d.data.expected:
                    return i, j, only
            elif only[i].data.found == only[j].data.expected and only[j].data.found == only[i].data.expected:
                return i, j, only
    return None


def _swapped_values(st: BodyState, e: ast.Call, starts: list[int], info: TypeInfo, name: str) -> None:
    """A constructor's two values each of the type the other takes: one mistake, as for a call
    (`_swapped`), with notes at the two values' declarations and a swap to review."""
    found = _swapped_pair(st, e.args, starts)
    if found is None:
        return
    i, j, only = found
    a = only[i].data
    src = st.env.lm.ast.source or ""
    x, y = e.args[i].span, e.args[j].span
    items = st.problems.items
    items[:] = [d for d in items if d is not only[i] and d is not only[j]]
    fixes = []
    if x.end > x.start and y.end > y.start:
        fixes = [Fix("swap them", (Edit(x, src[y.start : y.end]), Edit(y, src[x.start : x.end])), False)]
    related = []
    for k in (i, j):
        sp = _ctor_value_span(info, name, k)
        if sp is not None:
            related.append(Related(f"the {ordinal(k)} value of `{name}` is declared here", sp))
    st.problems.report(
        codes.TypeMismatch(
            Span(x.file, x.line, x.column, y.end_line, y.end_column, x.start, y.end),
            a.found,
            a.expected,
            place="swapped-values",
            name=name,
            swapped=(i, j),
        ),
        related=related,
        fixes=fixes,
    )


def _receiver_swap_fix(st: BodyState, e: ast.Call, fn: FnInfo, vals: list, j: int) -> list:
    """`", ".join(names)` -> `text.join(names, ", ")`: the function called by its module's alias
    (its `use` added when the module is std's and not imported), the receiver and argument `j`
    in each other's place. Method syntax would look the function up in the other type's home
    module, so the call is written qualified. Safe for `text.join` (the Python habit, whose one
    Flow form this is), else to review."""
    src = st.env.lm.ast.source or ""
    if e.span.end <= e.span.start or any(v.span.end <= v.span.start for v in vals):
        return []
    qual = _qualifier(st, fn)
    if qual is None:
        return []
    alias, edits = qual
    texts = [src[v.span.start : v.span.end] for v in vals]
    texts[0], texts[j] = texts[j], texts[0]
    call = f"{alias}.{fn.name}({', '.join(texts)})"
    return [Fix(f"write `{call}`", (Edit(e.span, call), *edits), fn.lang == "text.join")]


def _qualifier(st: BodyState, fn: FnInfo) -> tuple[str, list] | None:
    """The alias `fn` is called by from this module, and the edits adding its `use` when it is
    std's and not imported (None: another module not imported, or its alias taken)."""
    aliases = st.env.lm.aliases
    alias = next((a for a, k in aliases.items() if k == fn.module), None)
    if alias is not None:
        return alias, []
    alias = fn.module.rsplit("/", 1)[-1]
    site = sg.use_site(st.env.lm.ast)
    if not fn.module.startswith(STD_VERSION + "/") or alias in aliases or site is None:
        return None
    return alias, [site.edit(fn.module)]


def _other_home(st: BodyState, e: ast.Call, tt) -> tuple[sg.Suggestion, list] | None:
    """`lines.join("\\n")` of a List<Text>: no `join` in std@v1/list, but `text.join` takes a
    List<Text> first (JavaScript's and Python's method is Flow's function of another module).
    When exactly one module the program can call (an import, or a std module) declares a `pub`
    function of the name whose first parameter takes x's type and whose arity fits, the call is
    that function's, x first: a safe fix (the module's `use` added when it is std's)."""
    callee = e.callee
    hits = []
    for key, menv in st.d.envs.items():
        fn = menv.cm.fns.get(callee.name)
        if fn is None or not fn.pub or key == st.env.key or len(fn.params) != len(e.args) + 1:
            continue
        first = resolve(subst(fn.params[0][1], {(fn.decl, p): TVar() for p in fn.type_params}))
        if type(first) is TCon and type(tt) is TCon and first.decl == tt.decl and unify(first, tt):
            hits.append(fn)
    qual = _qualifier(st, hits[0]) if len(hits) == 1 else None
    src = st.env.lm.ast.source or ""
    parts = [callee.target, *e.args]
    if qual is None or any(p.span.end <= p.span.start for p in parts) or e.span.end <= e.span.start:
        return None
    (fn,), (alias, edits) = hits, qual
    st.env.used_aliases.add(alias)
    call = f"{alias}.{fn.name}({', '.join(src[p.span.start : p.span.end] for p in parts)})"
    note = f"it is `{alias}.{fn.name}`, of another module, which takes the `{show(st, tt)}` first"
    cand = sg.Candidate(f"{alias}.{fn.name}", sg.METHOD, sg._decl_span(fn.node), note=note)
    return sg.Suggestion(callee.name, (cand,)), [Fix(f"write `{call}`", (Edit(e.span, call), *edits), True)]


def _fn_label(st: BodyState, callee, fn: FnInfo) -> str:
    if isinstance(callee, ast.FieldAccess):
        if isinstance(callee.target, ast.Name) and isinstance(st.refs.get(callee.target.id), ModuleRef):
            return f"{callee.target.name}.{fn.name}"
        return f".{fn.name}"
    return fn.name


def value_effect(st: BodyState, a) -> Effect:
    """How effectful a function value (or a value holding functions) given as an argument is."""
    if isinstance(a, ast.Lambda):
        return st.effects.get(a.id, PURE)
    if isinstance(a, (ast.ListLiteral, ast.TupleLiteral)):
        out = PURE
        for x in a.items:
            out = join(out, value_effect(st, x))
        return out
    ref = st.refs.get(a.id)
    if isinstance(ref, FnRef) and isinstance(a, (ast.Name, ast.FieldAccess)):
        fn = st.d.fn_decls[ref.decl]
        return TOOL if fn.effect != PURE else PURE
    return fun_effects(st.types.get(a.id, TError()))


def _call_value(st: BodyState, e: ast.Call, ft):
    f = resolve(ft)
    if type(f) is TVar:
        params = tuple(TVar() for _ in e.args)
        res = TVar()
        unify(f, TFun(params, res, TOOL))
        f = resolve(f)
    if type(f) in (TError, TNever):
        for a in e.args:
            expr(st, a)
        st.effects[e.id] = PURE
        return TError()
    if type(f) is not TFun:
        st.problems.report(codes.NotCallable(e.callee.span, show(st, f)))
        for a in e.args:
            expr(st, a)
        st.effects[e.id] = PURE
        return TError()
    if len(f.params) != len(e.args):
        st.problems.report(codes.WrongArity(e.span, "arguments", "", len(f.params), len(e.args)))
        for a in e.args:
            expr(st, a)
    else:
        for i, (a, pt) in enumerate(zip(e.args, f.params)):
            expr(st, a, pt, Why(f"the {ordinal(i)} argument of this function"))
    st.effects[e.id] = f.effect
    add_effect(st, f.effect, e.span)
    return f.result


def _call_ctor(st: BodyState, e: ast.Call, info: TypeInfo, c: CtorInfo, expected):
    st.refs[e.callee.id] = CtorRef(info.decl, c.name)
    mark_used(st, info.decl)
    st.effects[e.id] = PURE
    ok = ctor_access(st, info, e.callee.span)
    tcon, mapping = fresh_tcon(info)
    exp = resolve(expected) if expected is not None else None
    if type(exp) is TCon and exp.decl == info.decl:
        unify(tcon, exp)
    st.types[e.callee.id] = TFun(tuple(subst(p, mapping) for p in c.params), tcon, PURE)
    if c.field_names is not None:
        st.problems.report(codes.WrongArity(e.span, "named-call", c.name, fields=tuple(c.field_names)))
        for a in e.args:
            expr(st, a)
        return tcon if ok else TError()
    if not c.params and not e.args:
        empty_parens(st, e.span, info, c.name, pattern=False)
        return tcon if ok else TError()
    if len(c.params) != len(e.args):
        decl = ctor_decl(info, c.name)
        for a in e.args:
            expr(st, a)
        related = [Related(f"`{c.name}` is declared here", decl.span)] if decl is not None else []
        unused_meant.defer(
            st,
            len(c.params) - len(e.args),
            lambda meant: st.problems.report(
                codes.WrongArity(e.span, "values", c.name, len(c.params), len(e.args)),
                related=related + unused_meant.notes(meant),
            ),
        )
        return tcon if ok else TError()
    starts = []
    for i, (a, p) in enumerate(zip(e.args, c.params)):
        pt = subst(p, mapping)
        starts.append(len(st.problems.items))
        expr(st, a, pt, Why(f"the {ordinal(i)} value of `{c.name}`", _ctor_value_span(info, c.name, i)))
        pure_slot(st, a, pt)
    if len(e.args) > 1 and len(st.problems.items) > starts[0] + 1:
        _swapped_values(st, e, starts, info, c.name)
    return tcon if ok else TError()


def _reported_at(st: BodyState, mark: int, span) -> bool:
    """Whether a mismatch (E201) was reported at `span` since `mark`."""
    return any(d.code == "E201" and d.span == span for d in st.problems.items[mark:])


def _ctor_value_span(info: TypeInfo, name: str, i: int):
    """Where the type of the `i`th value of constructor `name` is declared (E201's note)."""
    cd = ctor_decl(info, name)
    if cd is not None and cd.positional and i < len(cd.positional):
        return cd.positional[i].span
    return None


def pure_slot(st: BodyState, a, t) -> None:
    """A function stored in data must not be more effectful than its declared type says."""
    if (
        has_effect(t, PURE)
        and not has_effect(t, TOOL)
        and not has_effect(t, POLY)
        and value_effect(st, a) != PURE
    ):
        st.problems.report(codes.EffectfulArgument(a.span))


# -- operators ----------------------------------------------------------------------------
