"""A `let` that binds a Result where its value was meant: the `?` left out (E201 "missing-try"),
or an Option or Result whose uses all want the value in it where `?` cannot take it (E201
"unwrap-let": `let top = worst(xs)`, an `Option<Incident>`, then `top.id`; no fix: a match or a
default is the author's choice).

`let book = find(isbn).to_result(NotFound(isbn))` in a function returning
`Result<Loan, LoanError>`, then `book.title`, `Loan { book: book }`: each use wants the `Book`,
and reporting each (a Result has no field `title`, expected `Book` found `Result<...>`) is one
mistake told three times, none of them where it was made. So the walk remembers every `let` of
a plain name whose value is a Result while its function returns one (`note_let`); a use that
wants the Result's Ok type (a field of it read, the value where it is expected) is recorded,
not reported, and goes on as the Ok value (`field_through`, `as_ok`). Once the function is
walked (`settle`), a `let` whose uses all wanted the Ok value (or were not checked against any
type: the arguments of an unknown function) is one E201 at its value, with a note at each use
and the fix `?` after the value, safe when the Result's error type is the function's. A `let`
also used as a Result (matched, passed on) was not this mistake: its recorded uses are
reported as they would have been.

Python's `/` is the same story: `let factor = wanted / serves` of two Ints is an Int (Flow's
`/` on Int drops the fraction), and when every use wants a Decimal the mistake is the division,
reported once at it (E201 "int-division", notes at the uses and what made them want a Decimal),
not at each use. Where to convert is a choice, so there is no fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from flow2py.check import codes
from flow2py.check.infer_ctx import Binding
from flow2py.check.typed import LocalRef, TCon
from flow2py.check.typeterms import resolve, unify
from flow2py.check.typeterms import show as show_type
from flow2py.diagnostics import Edit, Fix, Related
from flow2py.span import Span
from flow2py.syntax import ast

# Each function takes the body walk's BodyState (`st`) first; body_state.py calls this module
# (`expect`), so the type is not imported here.

# a value `?` can follow without parentheses
_POSTFIX = (ast.Name, ast.Call, ast.FieldAccess, ast.Try)


@dataclass(slots=True)
class TryLet:
    """A `let` of a name to a Result or an Option (or an Int `/`)."""

    binding: Binding
    value: ast.Expr  # the `let`'s value, where the `?` goes
    result: object  # the Result type of the value (for "divide": Int)
    fn_result: object  # the result type of the function the `let` is in
    # each use that wanted the Ok value: where, how to report it as it is, what made it want it
    wanted: list[tuple[Span, Callable[[], object], Related | None]] = field(default_factory=list)
    unchecked: int = 0  # uses checked against no type (an unknown function's arguments)
    kind: str = "try"  # or "divide": an Int `/` whose uses want a Decimal


def note_let(st, s: ast.Let, t) -> None:
    """After `_let` bound `s.pattern` to a value of type `t`."""
    if type(s.pattern) is not ast.BindPattern:
        return
    r = resolve(t)
    if (st.d.is_lang(r, "Result") and len(r.args) == 2) or (st.d.is_lang(r, "Option") and len(r.args) == 1):
        kind = "try"
    elif type(s.value) is ast.Binary and s.value.op == "/" and st.d.is_lang(r, "Int"):
        kind = "divide"
    else:
        return
    b = st.scopes[-1].get(s.pattern.name)
    if b is not None and b.binder == s.pattern.id:
        st.try_lets[b.binder] = TryLet(b, s.value, t, st.fn_stack[-1].result, kind=kind)


def _site(st, node) -> TryLet | None:
    if not st.try_lets or type(node) is not ast.Name:
        return None
    ref = st.refs.get(node.id)
    return st.try_lets.get(ref.binder) if type(ref) is LocalRef else None


def field_through(st, e: ast.FieldAccess, tt, report: Callable[[], object]):
    """`book.title` of such a `let`, where the Ok type has the field: the Ok type, to read it
    from (the use recorded; `report` reports it as it is if the `let` turns out another mistake)."""
    site = _site(st, e.target)
    if site is None or site.kind != "try" or tt is not resolve(site.result):
        return None
    ok = resolve(resolve(site.result).args[0])
    info = st.d.type_decls.get(ok.decl) if type(ok) is TCon else None
    if info is None or info.kind != "record" or all(f.name != e.name for f in info.fields):
        return None
    site.wanted.append((e.target.span, report, None))
    return ok


def ok_of(st, node, t):
    """The Ok type of such a `let` of a forgotten `?` when `node` is its name and `t` its type
    (`tracking ++ note`: the operator is the Ok type's, and the operand's check against it
    records the use, `as_ok`); else None."""
    site = _site(st, node)
    if site is None or site.kind != "try" or resolve(t) is not resolve(site.result):
        return None
    ok = resolve(resolve(site.result).args[0])
    return ok if type(ok) is TCon else None


def as_ok(st, actual, expected, node, why, report: Callable[[], object]) -> bool:
    """Such a `let`'s name where its Ok type is expected (for "divide": a Decimal): recorded,
    and taken as that."""
    site = _site(st, node)
    if site is None or resolve(actual) is not resolve(site.result):
        return False
    x = resolve(expected)
    if site.kind == "divide":
        if not st.d.is_lang(x, "Decimal"):
            return False
    else:
        ok = resolve(resolve(site.result).args[0])
        if type(ok) is not TCon or type(x) is not TCon or ok.decl != x.decl or not unify(ok, x):
            return False
    because = (
        Related(why.note or why.text, why.span)
        if why is not None and why.span is not None and why.span.line
        else None
    )
    site.wanted.append((node.span, report, because))
    return True


def unchecked(st, node) -> None:
    """`node` was walked against no type (an argument of a function that is not known)."""
    site = _site(st, node)
    if site is not None:
        site.unchecked += 1


def settle(st) -> None:
    """Once the function is walked: each `let` whose uses wanted the Ok value is one E201."""
    sites = [s for s in st.try_lets.values() if s.wanted]
    st.try_lets = {}
    for site in sites:
        if site.binding.uses > len(site.wanted) + site.unchecked:
            for _, report, _ in site.wanted:
                report()
            continue
        if site.kind == "divide":
            _report_division(st, site)
        else:
            _report(st, site)


def _report(st, site: TryLet) -> None:
    r, fr = resolve(site.result), resolve(site.fn_result)
    ok, b, value = r.args[0], site.binding, site.value
    # reported where it shows, at the first use (as rustc and Elm do), the `let` the other place
    uses = [sp for sp, _, _ in site.wanted if sp.line]
    at = uses[0] if uses else value.span
    related = [Related(f"`{b.name}` is bound here, to the `{_show(st, r)}`", value.span)] if uses else []
    related += [Related(f"this use wants the `{_show(st, ok)}` too", sp) for sp in uses[1:]]
    if not (st.d.is_lang(r, "Result") and st.d.is_lang(fr, "Result") and len(fr.args) == 2):
        # an Option, or a Result where `?` cannot return its Err: taking the value out is a
        # choice (a match, a default), so no fix
        st.problems.report(
            codes.TypeMismatch(at, _show(st, r), _show(st, ok), place="unwrap-let", name=b.name),
            related=related,
        )
        return
    fixes = []
    sp = value.span
    if sp.line and sp.end > sp.start:
        safe = unify(r.args[1], fr.args[1])
        if isinstance(value, _POSTFIX):
            edits = (Edit(_point(sp, sp.end, sp.end_line, sp.end_column), "?"),)
        else:
            edits = (
                Edit(_point(sp, sp.start, sp.line, sp.column), "("),
                Edit(_point(sp, sp.end, sp.end_line, sp.end_column), ")?"),
            )
        fixes.append(Fix(f"add `?`: `{b.name}` is then the `{_show(st, ok)}`", edits, safe))
    st.problems.report(
        codes.TypeMismatch(at, _show(st, r), _show(st, ok), place="missing-try", name=b.name),
        related=related,
        fixes=fixes,
    )


def _report_division(st, site: TryLet) -> None:
    """At the first use, as `_report`: the `let` of the `/` is noted, then each other use and
    what made it want a Decimal."""
    uses = [sp for sp, _, _ in site.wanted if sp.line]
    at = uses[0] if uses else site.value.span
    related = (
        [Related(f"`{site.binding.name}` is bound here, to the `/` of two Ints", site.value.span)]
        if uses
        else []
    )
    for sp, _, because in site.wanted:
        use = Related("this use wants a `Decimal` too", sp) if sp.line and sp != at else None
        for r in (use, because):
            if r is not None and r not in related:
                related.append(r)
    st.problems.report(
        codes.TypeMismatch(at, "Int", "Decimal", place="int-division", name=site.binding.name),
        related=related,
    )


def _show(st, t) -> str:
    return show_type(t, st.d.name_of)


def _point(sp: Span, offset: int, line: int, column: int) -> Span:
    return Span(sp.file, line, column, line, column, offset, offset)
