"""The checked pattern form (flow2py/check/pattern_form.py): one for every pattern site, holding
what exhaustiveness and codegen read (binders, resolved constructors, list rests)."""

from __future__ import annotations

from flow2py.check import check_source
from flow2py.check import pattern_form as pf
from flow2py.check.post import checked_pattern
from flow2py.syntax import ast

SOURCE = """
type Shape { Circle(Int), Rect { w: Int, h: Int } }

flow area(s: Shape) -> Int = match s {
    Circle(r) => r,
    Rect { w, .. } => w,
}

flow first(xs: List<Int>) -> Int = {
    guard let [x, ..rest] = xs else { return 0 }
    let (a, _) = (x, rest)
    match xs {
        [] | [_] => a,
        [_, ..] => 2,
    }
}

pub flow main() -> Int = area(Circle(1)) + first([1, 2])
"""


def _sites(module: ast.Module) -> list:
    out = []
    for n in ast.walk(module):
        if isinstance(n, (ast.MatchArm, ast.Let, ast.GuardLet)):
            out.append(n.pattern)
    return out


def test_every_pattern_site_has_its_checked_form():
    r = check_source(SOURCE)
    assert r.program is not None, [d.message for d in r.diagnostics]
    prog = r.program
    sites = _sites(prog.modules[prog.entry_module].ast)
    assert len(sites) == 6  # two arms, the guard let, the let, two arms
    for p in sites:
        assert p.id in prog.patterns


def test_the_form_holds_resolved_constructors_binders_and_rests():
    prog = check_source(SOURCE).program
    sites = {p.span.line: prog.patterns[p.id] for p in _sites(prog.modules[prog.entry_module].ast)}
    circle = sites[5]
    assert type(circle) is pf.Ctor and circle.decl.endswith("::Shape") and circle.name == "Circle"
    (r,) = circle.args
    assert type(r) is pf.Bind and r.name == "r" and circle.fields is None
    rect = sites[6]
    assert rect.name == "Rect" and rect.args is None and [f for f, _ in rect.fields] == ["w"]
    guard = sites[10]
    assert type(guard) is pf.List and type(guard.rest) is pf.Bind and guard.rest.name == "rest"
    # the binder is the id the program's LocalRefs name
    assert guard.rest.binder in {ref.binder for ref in prog.refs.values() if hasattr(ref, "binder")}
    bare = sites[14]
    assert type(bare) is pf.List and type(bare.rest) is pf.Wild and len(bare.items) == 1
    either = sites[13]
    assert type(either) is pf.Or and [len(a.items) for a in either.alts] == [0, 1]
    assert [type(q).__name__ for q in pf.walk(sites[11])] == ["Tuple", "Bind", "Wild"]


def test_an_unresolved_constructor_is_unchecked_and_never_covers():
    r = check_source("""
type T { A, B }

pub flow main(t: T) -> Int = match t {
    Nope => 1,
    B => 2,
}
""")
    assert r.program is None
    assert any(d.code == "E101" for d in r.diagnostics)
    assert not any(d.code in ("E401", "E402") for d in r.diagnostics)  # one mistake, one report
    assert checked_pattern(ast.CtorPattern(None, "Nope"), {}) == pf.Unchecked(
        ast.CtorPattern(None, "Nope").span
    )
