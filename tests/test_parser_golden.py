"""Golden cases for syntax diagnostics: golden/syntax/<case>.flow and <case>.expected hold a
source and the exact text `render_text` gives for it. FLOW2PY_UPDATE_GOLDEN=1 rewrites the
expected files. Every syntax code (E001-E099) has at least one case; orphans fail."""

from __future__ import annotations

import os
import re

import pytest

from flow2py.diagnostics import CODES, render_text
from flow2py.syntax import codes  # noqa: F401
from flow2py.syntax.parser import parse_module

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "syntax")
UPDATE = os.environ.get("FLOW2PY_UPDATE_GOLDEN") == "1"


def cases() -> list[str]:
    return sorted(f[: -len(".flow")] for f in os.listdir(GOLDEN) if f.endswith(".flow"))


def render(case: str) -> str:
    name = case + ".flow"
    # read as the loader reads (bytes encoding a lone surrogate give one: lone_surrogate.flow),
    # and rendered from the text as parsed, as the checker renders
    with open(os.path.join(GOLDEN, name), encoding="utf-8", errors="surrogatepass") as f:
        src = f.read()
    module, diags = parse_module(src, name)
    return render_text(diags, {name: module.source})


@pytest.mark.parametrize("case", cases())
def test_golden_syntax_case(case):
    got = render(case)
    expected_path = os.path.join(GOLDEN, case + ".expected")
    if UPDATE:
        with open(expected_path, "w", encoding="utf-8") as f:
            f.write(got)
    with open(expected_path, encoding="utf-8") as f:
        assert got == f.read()
    assert got, "a golden syntax case must produce at least one diagnostic"


def test_no_orphaned_golden_files():
    names = os.listdir(GOLDEN)
    flows = {n[: -len(".flow")] for n in names if n.endswith(".flow")}
    expected = {n[: -len(".expected")] for n in names if n.endswith(".expected")}
    others = [n for n in names if not n.endswith((".flow", ".expected"))]
    assert flows == expected and not others, (flows ^ expected, others)


def test_every_syntax_code_has_a_golden_case():
    seen = set()
    for case in cases():
        with open(os.path.join(GOLDEN, case + ".expected"), encoding="utf-8") as f:
            seen |= set(re.findall(r"error\[(E0\d\d)\]", f.read()))
    syntax_codes = {c for c in CODES if re.fullmatch(r"E0\d\d", c)}
    assert syntax_codes <= seen, sorted(syntax_codes - seen)


def test_safe_fix_for_unclosed_bracket_makes_the_file_parse():
    from flow2py.diagnostics import apply_fix

    src = "flow f(xs: List<Int>) -> Int = {\n    let n = count(xs\n"
    _, diags = parse_module(src, "t.flow")
    (d,) = [d for d in diags if d.code == "E005"]
    (fix,) = d.fixes
    assert fix.safe
    _, again = parse_module(apply_fix(src, fix), "t.flow")
    assert again == []
