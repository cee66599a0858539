"""The state of the body walk (infer.py) and the few operations every construct uses on it.

One `BodyState` serves the whole program: `infer.check_fn` resets its per-function part for each
top-level function, post.py reads that part once the function is walked, and the driver reads
the whole-program part (data requirements, instantiations) at the end. Every construct of the
walk is a plain function taking the state first; `expr` sends a node to the function for its
type through `st.dispatch` (the table in infer.py).
"""

from __future__ import annotations

import dataclasses

import re
from dataclasses import dataclass, field
from typing import Callable

from flow2py.check import codes, missing_try
from flow2py.check.declare import Declarations, ModEnv, field_span
from flow2py.check.infer_ctx import (
    Binding,
    DataReq,
    FnCtx,
    Instantiation,
    LetSite,
    MatchSite,
    TailRoot,
    Why,
)
from flow2py.check.typed import (
    PURE,
    TOOL,
    CheckedProgram,
    CtorRef,
    TCon,
    Effect,
    FieldRef,
    FnRef,
    FnInfo,
    LocalRef,
    TError,
    TFun,
    TNever,
)
from flow2py.check.typeterms import TVar, join, resolve, subst, unify
from flow2py.check.typeterms import show as show_type
from flow2py.diagnostics import Edit, Fix, Problems, Related
from flow2py.span import Span
from flow2py.syntax import ast
from flow2py.check.modgraph import STD_VERSION
from flow2py.check.suggest import use_site


@dataclass(slots=True)
class BodyState:
    """What the body walk shares. The side tables are the program's own (`prog.types` is
    `types`), held here too because the walk writes them at every node."""

    d: Declarations  # every module's declarations: types, functions, environments, std's marks
    prog: CheckedProgram  # the program whose side tables the walk fills
    problems: Problems  # where every diagnostic goes
    dispatch: dict[type, Callable]  # node type -> the function giving its type (infer.EXPR)
    types: dict  # node id -> type (prog.types)
    refs: dict  # node id -> what a name, call or pattern refers to (prog.refs)
    effects: dict  # node id -> Effect of a call, `?`, lambda or function (prog.effects)
    type_args: dict  # node id -> type arguments of a use of a generic function (prog.type_args)
    env: ModEnv | None = None  # the module of the function being walked
    fn: FnInfo | None = None  # the top-level function being walked
    scopes: list[dict[str, Binding]] = field(default_factory=list)  # innermost last
    fn_stack: list[FnCtx] = field(default_factory=list)  # the function, then each lambda inside
    matches: list[MatchSite] = field(default_factory=list)  # this function's matches (post.py)
    lets: list[LetSite] = field(default_factory=list)  # this function's `let` patterns (post.py)
    binders: list[Binding] = field(default_factory=list)  # this function's bindings (post.py)
    tail_roots: list[TailRoot] = field(default_factory=list)  # where tail positions start (post.py)
    data_reqs: list[DataReq] = field(default_factory=list)  # whole program: types that must be data
    insts: list[Instantiation] = field(default_factory=list)  # whole program: generic uses
    bad: set[int] = field(default_factory=set)  # whole patterns whose checking reported a mistake
    # constructor patterns misspelling exactly one constructor (their fix safe): reported, then
    # checked as the constructor meant, so their match's coverage is still checked
    meant: set[int] = field(default_factory=set)
    field_binders: set[int] = field(default_factory=set)  # BindPatterns written `{ x }` or `{ x: y }`
    # record patterns that left out fields (E206 reported), with the bindings standing for them:
    # (diagnostic, pattern, bindings), its fix settled in post.py once their uses are known
    left_out: list = field(default_factory=list)
    # BindPattern id -> where its type is declared (a constructor's value): E201's note on its uses
    origins: dict[int, Related] = field(default_factory=dict)
    # an arm's top-level constructor pattern id -> the constructors the match's other arms name
    arm_siblings: dict[int, frozenset] = field(default_factory=dict)
    # the `why` of the `expr` call now dispatching: read first thing by `block`, `if_expr` and
    # `match_expr`, whose parts then say what fixed their expected type (a signature, an annotation)
    why_in: object = None
    # the last plain mismatch reported: (diagnostic, found type, expected type); match_expr and
    # if_expr read it to tell a later branch of the wrapped type from a wrong one
    last_mismatch: tuple | None = None
    # BindPattern id -> a `let` of a name to a Result whose `?` may be missing (missing_try.py)
    try_lets: dict = field(default_factory=dict)
    # diagnostics held back until the function is walked: the locals they meant (unused_meant.py)
    deferred: list = field(default_factory=list)
    # a call's span -> the `@tool` function it calls: E301's note on the Tool it reaches
    tool_callees: dict = field(default_factory=dict)
    # (binding, span) of each local given `decimal.from_int(...)` as a safe fix (settle_conversions)
    converted: list = field(default_factory=list)
    # span -> the binding of the lambda parameter (of no written type) given `decimal.from_int(...)`
    converted_params: dict = field(default_factory=dict)
    # the right operand (a Binary) of an operator whose operands and result are of one type ->
    # what the context of that operator expects: the operand's own context, past the operator's
    operand_context: dict = field(default_factory=dict)
    # (function, name) of each unknown qualifier `x` of `x.y` reported: said once per function
    unknown_qualifiers: set = field(default_factory=set)
    # `Ok(null) | Err(_)`: E201 of alternatives binding other names, each odd one a "no value"
    # name of an Option: (diagnostic data, binder ids), reported in post.py if one of them is used
    no_value_alts: list = field(default_factory=list)


def new_state(decls: Declarations, prog: CheckedProgram, problems: Problems, dispatch: dict) -> BodyState:
    return BodyState(decls, prog, problems, dispatch, prog.types, prog.refs, prog.effects, prog.type_args)


# -- types ---------------------------------------------------------------------------------


def expr(st: BodyState, e, expected=None, why: Why | None = None):
    """The type of `e`, inferred with `expected` as a hint and then unified with it (a mismatch
    is reported with `why` and gives the poison type)."""
    st.why_in = why  # for a block, `if` or `match`: what fixed the type its value must have
    t = st.dispatch[type(e)](st, e, expected)
    if expected is not None:
        t = expect(st, t, expected, e, why)
    st.types[e.id] = t
    return t


def expect(st: BodyState, actual, expected, node, why: Why | None):
    if unify(actual, expected):
        return actual
    if missing_try.as_ok(st, actual, expected, node, why, lambda: expect(st, actual, expected, node, why)):
        return expected
    if _unapplied_ctor(st, actual, expected, node):
        return TError()
    hint, fixes = _thunk(st, actual, expected, node)
    if not fixes and why is not None and "operand of `" in why.text:
        fixes = _conversion(st, actual, expected, node)
    if not fixes:
        fixes = (
            _number_literal(st, expected, node)
            or _zero_duration(st, expected, node)
            or _number_in_quotes(st, expected, node)
            or _empty_for_none(st, expected, node)
        )
    if not fixes:
        fixes = wrap_fixes(st, actual, expected, node.span)
        if fixes and why is not None and "operand of `" in why.text:
            # `i >= 0` of an Option `i`: the other operand fixed the type, and the value in it
            # is as likely what was meant (`Some(0)` is then one choice, to review: rustc's too)
            fixes = [Fix(f.message, f.edits, False) for f in fixes]
    if not fixes:
        fixes = _to_list(st, actual, expected, node)
    if not fixes and not hint:
        hint = _unit_hint(st, actual, expected)
    mismatch(st, actual, expected, node.span, why, hint, fixes, found_notes(st, node))
    return TError()


def empty_collection(st: BodyState, exp) -> tuple[str, str] | None:
    """Flow's empty value of the List or Dict `exp` (`[]`, `[:]`) and the kind's name: what
    another language's "no value" (`null`, `None`) means where a collection is expected."""
    for lang, text in (("List", "[]"), ("Dict", "[:]")):
        if type(exp) is TCon and st.d.is_lang(exp, lang):
            return text, lang.lower()
    return None


def _empty_for_none(st: BodyState, expected, node) -> list:
    """`None` where a List or Dict is expected: another language's "no value" for the empty one,
    `[]` or `[:]` (a safe fix)."""
    empty = (
        empty_collection(st, resolve(expected)) if type(node) is ast.Name and node.name == "None" else None
    )
    if empty is None or node.span.end <= node.span.start:
        return []
    return [Fix(f"write `{empty[0]}` (Flow's empty {empty[1]})", (Edit(node.span, empty[0]),), True)]


def _ground(t) -> bool:
    t = resolve(t)
    if type(t) is TVar:
        return False
    return all(_ground(a) for a in getattr(t, "args", ()))


def _to_list(st: BodyState, actual, expected, node) -> list:
    """A Set or Dict where a List is expected: std's conversion to it, as a method (`s.to_list()`,
    `d.keys()`): the functions of the value's home module taking it alone and giving the List
    expected; safe for a Set's one (a Dict's keys, values or pairs are a choice)."""
    a, x = resolve(actual), resolve(expected)
    if not (st.d.is_lang(a, "Set") or st.d.is_lang(a, "Dict")) or not st.d.is_lang(x, "List"):
        return []
    if not (_ground(a) and _ground(x)) or node.span.end <= node.span.start:
        return []
    menv = st.d.envs.get(a.decl.split("::")[0])
    names = []
    for fn in menv.cm.fns.values() if menv else ():
        if not fn.pub or len(fn.params) != 1:
            continue
        mapping = {(fn.decl, p): TVar() for p in fn.type_params}
        if unify(subst(fn.params[0][1], mapping), a) and unify(subst(fn.result, mapping), x):
            names.append(fn.name)
    src = st.env.lm.ast.source or ""
    text = src[node.span.start : node.span.end]
    if not isinstance(node, (ast.Name, ast.FieldAccess, ast.Call)):
        text = f"({text})"
    # a Set has one List of its values; a Dict's keys, values or pairs are a choice of meaning
    safe = len(names) == 1 and st.d.is_lang(a, "Set")
    return [Fix(f"write `{text}.{n}()`", (Edit(node.span, f"{text}.{n}()"),), safe) for n in sorted(names)]


def _number_literal(st: BodyState, expected, node) -> list:
    """A number literal of the other number type, where it means the same number: `8` where a
    Decimal is expected is `8.0`, `0.0` where an Int is expected is `0` (not `2.5`: a choice)."""
    x = resolve(expected)
    if type(node) is not ast.Literal or type(x) is not TCon or node.span.end <= node.span.start:
        return []
    want = next(
        (k for k in ("Int", "Decimal") if k in st.d.lang_types and st.d.lang_types[k].decl == x.decl), None
    )
    text = (st.env.lm.ast.source or "")[node.span.start : node.span.end]
    if want == "Decimal" and node.kind == "int" and text.isdigit():
        written = f"{text}.0"
    elif want == "Int" and node.kind == "decimal" and re.fullmatch(r"[0-9]+\.0+", text):
        written = text.split(".")[0]
    else:
        return []
    return [Fix(f"write `{written}`", (Edit(node.span, written),), True)]


def _zero_duration(st: BodyState, expected, node) -> list:
    """`0` where a Duration is expected (`elapsed >= 0`): zero is the same in every unit, so it
    is `0s`, a safe fix (another number's unit is a choice: `_unit_hint`)."""
    x = resolve(expected)
    if type(node) is not ast.Literal or node.kind != "int" or node.span.end <= node.span.start:
        return []
    if not (type(x) is TCon and st.d.is_lang(x, "Duration")):
        return []
    if (st.env.lm.ast.source or "")[node.span.start : node.span.end] != "0":
        return []
    return [Fix("write `0s` (zero is the same in every unit)", (Edit(node.span, "0s"),), True)]


def _unit_hint(st: BodyState, actual, expected) -> str:
    """An Int where a Duration is expected (Python's `time.sleep(8 * 3600)`): a Duration has a
    unit, and which one is a choice, so the message says how one is written (`8h`,
    `duration.seconds(n)`); the `duration` import that writing needs is not also unused."""
    a, x = resolve(actual), resolve(expected)
    lang = {st.d.lang_types[k].decl: k for k in ("Int", "Duration") if k in st.d.lang_types}
    if (
        type(a) is not TCon
        or type(x) is not TCon
        or lang.get(a.decl) != "Int"
        or lang.get(x.decl) != "Duration"
    ):
        return ""
    key = STD_VERSION + "/duration"
    st.env.used_aliases.update(al for al, k in st.env.lm.aliases.items() if k == key)
    return "unit"


def _number_in_quotes(st: BodyState, expected, node) -> list:
    """`nights: "3"` where an Int (or Decimal) is expected: the number, without the quotes (a
    number literal of the other number type: `_number_literal`)."""
    x = resolve(expected)
    if type(node) is not ast.Literal or node.kind != "text" or type(x) is not TCon:
        return []
    want = next(
        (k for k in ("Int", "Decimal") if k in st.d.lang_types and st.d.lang_types[k].decl == x.decl), None
    )
    v = node.value
    ok = (
        re.fullmatch(r"-?[0-9]+", v)
        if want == "Int"
        else re.fullmatch(r"-?[0-9]+\.[0-9]+", v)
        if want
        else None
    )
    if not ok or node.span.end <= node.span.start:
        return []
    return [Fix(f"write `{v}`", (Edit(node.span, v),), True)]


def same_type(a, b) -> bool:
    """`a` and `b` are one type already, without binding a type variable (unify would)."""
    a, b = resolve(a), resolve(b)
    if a is b:
        return True
    if type(a) is TCon and type(b) is TCon:
        return a.decl == b.decl and len(a.args) == len(b.args) and all(map(same_type, a.args, b.args))
    return False


def _known(t) -> bool:
    """`t` holds no unsolved type variable."""
    t = resolve(t)
    if type(t) is TVar:
        return False
    return all(map(_known, t.args)) if type(t) is TCon else True


def wrap_fixes(st: BodyState, actual, expected, span) -> list:
    """A value of type `A` where an `Option<A>` or a `Result<A, E>` is expected: the value
    wrapped in `Some(...)` or `Ok(...)`. Safe when `E` is known (no unsolved type variable) and
    is not `A` (else `Err(...)` may fit as well: a choice). A value of the error type `E` where
    `Result<A, E>` is expected is wrapped in `Err(...)`, safe on the same terms (`A` known, not `E`)."""
    x = resolve(expected)
    if type(x) is not TCon or not x.args or span.end <= span.start:
        return []
    if st.d.is_lang(x, "Option") and len(x.args) == 1 and same_type(actual, x.args[0]):
        ctor, safe = "Some", True
    elif st.d.is_lang(x, "Result") and len(x.args) == 2 and same_type(actual, x.args[0]):
        err = x.args[1]
        ctor, safe = "Ok", _known(err) and not same_type(err, actual)
    elif st.d.is_lang(x, "Result") and len(x.args) == 2 and same_type(actual, x.args[1]):
        ctor, safe = "Err", _known(x.args[0])
    else:
        return []
    at = Span(span.file, span.line, span.column, span.line, span.column, span.start, span.start)
    end = Span(span.file, span.end_line, span.end_column, span.end_line, span.end_column, span.end, span.end)
    return [Fix(f"wrap it in `{ctor}(...)`", (Edit(at, f"{ctor}("), Edit(end, ")")), safe)]


def rewrap_branches(st: BodyState, before: int, earlier: list, later, result, said: str):
    """A branch of an `if` or `match` whose type is `Option<A>` or `Result<A, E>`, where the
    branches before it are `A` (and nothing else fixed the type): the earlier branches lack the
    `Some(...)` or `Ok(...)`, one mistake each, not this one. `before` is how many diagnostics
    there were before the later branch's check; `said` names it (the note at it). Returns the wrapped type (now the whole
    expression's), or None when the later branch's mistake is another."""
    items = st.problems.items
    last = st.last_mismatch
    if len(items) != before + 1 or last is None or last[0] is not items[-1]:
        return None
    d, found, expected = last
    x = resolve(found)
    if not same_type(expected, result) or type(x) is not TCon or not x.args:
        return None
    if not (st.d.is_lang(x, "Option") or st.d.is_lang(x, "Result")) or not same_type(x.args[0], result):
        return None
    items.pop()
    for body in map(_tail, earlier):
        mismatch(
            st,
            result,
            x,
            body.span,
            Why(said, later.span),
            fixes=wrap_fixes(st, result, x, body.span),
        )
    return x


def _tail(e):
    """The expression a block's value is (its last statement's, through nested blocks)."""
    while type(e) is ast.Block and e.stmts and type(e.stmts[-1]) is ast.ExprStmt:
        e = e.stmts[-1].expr
    return e


def _conversion(st: BodyState, actual, expected, node) -> list:
    """An operand of the wrong one of Flow's number and text types, where one conversion is
    what was meant: an Int, Decimal or Bool joined to Text with `++` (`n.to_text()`), an Int in
    Decimal arithmetic (`decimal.from_int(n)`, its `use` added when missing; `2` as `2.0`)."""
    a, x = resolve(actual), resolve(expected)
    lang = {st.d.lang_types[k].decl: k for k in ("Text", "Int", "Decimal", "Bool") if k in st.d.lang_types}
    if type(a) is not TCon or type(x) is not TCon or a.decl not in lang or x.decl not in lang:
        return []
    sp = node.span
    src = st.env.lm.ast.source or ""
    if sp.end <= sp.start:
        return []
    text = src[sp.start : sp.end]
    postfix = isinstance(node, (ast.Name, ast.FieldAccess, ast.Call, ast.Literal))
    found, want = lang[a.decl], lang[x.decl]
    aliases = st.env.lm.aliases
    home = next((al for al, k in aliases.items() if k == f"{STD_VERSION}/{found.lower()}"), None)
    if want == "Text" and found != "Text":
        # the home module imported: `int.to_text(n)`, as the file names it (the `use` used)
        if home is not None and not isinstance(node, ast.Literal):
            st.env.used_aliases.add(home)
            written = f"{home}.to_text({text})"
        else:
            written = f"{text if postfix else f'({text})'}.to_text()"
        return [Fix(f"write `{written}`", (Edit(sp, written),), True)]
    if want == "Decimal" and found == "Int":
        if isinstance(node, ast.Literal) and text.isdigit():
            return [Fix(f"write `{text}.0`", (Edit(sp, f"{text}.0"),), True)]
        key = STD_VERSION + "/decimal"
        alias = next((al for al, k in aliases.items() if k == key), None)
        if alias is None and home is not None:
            # `int` imported, `decimal` not: `int.to_decimal(n)`, no `use` to add
            st.env.used_aliases.add(home)
            written = f"{home}.to_decimal({text})"
            return [Fix(f"write `{written}`", (Edit(sp, written),), True)]
        edits = []
        if alias is None:
            site = use_site(st.env.lm.ast)
            if site is None or "decimal" in st.env.lm.aliases:
                return []
            alias = "decimal"
            edits.append(site.edit(key))
        written = f"{alias}.from_int({text})"
        # a lambda's parameter of no written type is an Int because of what it was given (a
        # fold's `0` start): converting it here changes the lambda's result, which may be
        # expected Int too, so the fix is to review (the `0` may be what should change)
        b = lookup(st, node.name) if type(node) is ast.Name else None
        inferred = b is not None and type(b.node) is ast.Param and b.node.type is None
        if b is not None and not inferred:
            st.converted.append((b, sp))
        elif inferred:
            st.converted_params[sp] = b
        return [Fix(f"write `{written}`", (Edit(sp, written), *edits), not inferred)]
    return []


def settle_conversions(st: BodyState) -> None:
    """A local converted at one use (`decimal.from_int(gross)`) and used elsewhere too: those
    uses may want the Decimal as well, and one of them may not have been reported (`gross -
    gross * d`: the `-` met the `*`'s mistake), so the conversion is a fix to review; declaring
    the local's type where it is made may be the one fix."""
    spans = {sp for b, sp in st.converted if b.uses > 1}
    st.converted = []
    for k, d in enumerate(st.problems.items):
        if any(len(f.edits) and f.safe and f.edits[0].span in spans for f in d.fixes):
            fixes = tuple(Fix(f.message, f.edits, f.safe and f.edits[0].span not in spans) for f in d.fixes)
            st.problems.items[k] = dataclasses.replace(d, fixes=fixes)


def _unapplied_ctor(st: BodyState, actual, expected, node) -> bool:
    """`Rejected` where a `Kyc` is expected, of a constructor `Rejected(Text)`: its values are
    what is missing (E202, with a note at its declaration), not a function that was meant."""
    ref = st.refs.get(node.id)
    a, x = resolve(actual), resolve(expected)
    if type(ref) is not CtorRef or type(a) is not TFun or type(x) in (TFun, TVar):
        return False
    if not unify(a.result, x):
        return False
    info = st.d.type_decls.get(ref.type_decl)
    decl = (
        next((c for c in getattr(info.node, "ctors", None) or () if c.name == ref.ctor and c.span.line), None)
        if info is not None
        else None
    )
    st.problems.report(
        codes.WrongArity(node.span, "unapplied", ref.ctor, len(a.params)),
        related=[Related(f"`{ref.ctor}` is declared here", decl.span)] if decl is not None else [],
    )
    return True


def found_notes(st: BodyState, node) -> list[Related]:
    """Where the found type comes from, when the value is a record field read (`c.company`: the
    field's declaration) or a name a constructor pattern bound (the constructor's value)."""
    ref = st.refs.get(node.id)
    if type(ref) is FieldRef:
        info = st.d.type_decls.get(ref.type_decl)
        if info is not None and info.node is not None:
            sp = field_span(info, ref.field)
            if sp is not None and sp.line:
                return [Related(f"`{ref.field}` is declared here", sp)]
    elif type(ref) is LocalRef:
        origin = st.origins.get(ref.binder)
        if origin is not None:
            return [origin]
    elif type(node) is ast.Call:
        return _result_note(st, st.refs.get(node.callee.id))
    return []


def _result_note(st: BodyState, ref) -> list[Related]:
    """The result type of the function a call calls, where it is written as it is found (not
    generic, not a Tool, whose call returns a Result with ToolProblem)."""
    fn = st.d.fn_decls.get(ref.decl) if type(ref) is FnRef else None
    if fn is None or fn.node is None or fn.type_params or fn.is_tool or fn.lang is not None:
        return []
    sp = fn.node.result.span
    return [Related(f"`{fn.name}` returns `{show(st, fn.result)}`", sp)] if sp.line else []


def _thunk(st: BodyState, actual, expected, node) -> tuple[str, list]:
    """A value where a function of no parameters is expected whose result it fits
    (`task.spawn(quote(x))`): the work was meant, not its value, and `flow() = ` before it is the
    one fix; safe unless the function type is pure (the value's calls may reach a Tool)."""
    x, a = resolve(expected), resolve(actual)
    if type(x) is not TFun or x.params or type(a) in (TFun, TError, TNever, TVar):
        return "", []
    if not unify(a, x.result) or not node.span.line:
        return "", []
    sp = node.span
    at = Span(sp.file, sp.line, sp.column, sp.line, sp.column, sp.start, sp.start)
    return "thunk", [Fix("make it a function: `flow() = ...`", (Edit(at, "flow() = "),), x.effect != PURE)]


def mismatch(
    st: BodyState, actual, expected, span, why: Why | None, hint: str = "", fixes=(), found=()
) -> None:
    related = []
    because = None
    if why is not None:
        because = why.text
        if why.span is not None and why.span.line:
            related.append(Related(why.note or why.text, why.span))
    related += [r for r in found if r not in related]
    d = st.problems.report(
        codes.TypeMismatch(span, show(st, actual), show(st, expected), because=because, hint=hint),
        related=related,
        fixes=list(fixes),
    )
    st.last_mismatch = (d, actual, expected)


def show(st: BodyState, t) -> str:
    return show_type(t, st.d.name_of)


def add_effect(st: BodyState, effect: Effect, span) -> None:
    """What the innermost function (or lambda) being walked may do grows by `effect`."""
    ctx = st.fn_stack[-1]
    if effect == TOOL:
        # a call that reaches a Tool through a lambda it is given (`list.map(qs, flow(q) =
        # search(q))`, `task.spawn(flow() = ...)`): the calls in the lambda are where it does
        inner = [u for u in ctx.lambda_tool_uses if span.start <= u.start and u.end <= span.end]
        if inner and span.file == inner[0].file:
            ctx.tool_uses.extend(inner)
            ctx.lambda_tool_uses = [u for u in ctx.lambda_tool_uses if u not in inner]
        else:
            ctx.tool_uses.append(span)
    ctx.effect = join(ctx.effect, effect)


# -- scopes --------------------------------------------------------------------------------


def bind(st: BodyState, name: str, t, node, span) -> Binding:
    b = Binding(node.id, t, len(st.fn_stack), name, span, node)
    st.scopes[-1][name] = b
    st.binders.append(b)
    return b


def lookup(st: BodyState, name: str) -> Binding | None:
    for scope in reversed(st.scopes):
        b = scope.get(name)
        if b is not None:
            return b
    return None


def use_local(st: BodyState, b: Binding) -> None:
    """A use of a local: it is used, and captured by every lambda between it and its binding."""
    b.used = True
    b.uses += 1
    for ctx in st.fn_stack[b.depth :]:
        if b.binder not in ctx.captured:
            ctx.captured.add(b.binder)
            ctx.captures.append(b.binder)


def mark_used(st: BodyState, decl: str) -> None:
    """A use of a top-level declaration (E405 reports the private ones never used)."""
    if decl != st.fn.decl:
        st.d.used.add(decl)
