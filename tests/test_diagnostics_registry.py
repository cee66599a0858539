"""Every registered diagnostic code has an entry in docs/spec/diagnostics.md and a golden case:
a file or folder in golden/syntax/ or golden/diagnostics/ whose name starts with the code
(`E401_non_exhaustive.flow`) or with the code's registered name (`unclosed_bracket.flow`)."""

import os
import re

import flow2py.check  # noqa: F401  (registers E1xx-E5xx)
import flow2py.syntax.parser  # noqa: F401  (registers E0xx)
from flow2py.diagnostics import CODES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "spec", "diagnostics.md")
GOLDEN_DIRS = [os.path.join(ROOT, "golden", "syntax"), os.path.join(ROOT, "golden", "diagnostics")]


def _golden_names():
    names = []
    for d in GOLDEN_DIRS:
        if os.path.isdir(d):
            names.extend(os.listdir(d))
    return names


def test_every_code_has_a_docs_entry():
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    headings = set(re.findall(r"^### (E\d{3})\b", doc, re.M))
    missing = sorted(set(CODES) - headings)
    assert missing == [], f"codes without a docs/spec/diagnostics.md entry: {missing}"


def test_docs_name_no_unregistered_code():
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    headings = set(re.findall(r"^### (E\d{3})\b", doc, re.M))
    assert headings - set(CODES) == set()


def test_every_code_has_a_golden_case():
    names = _golden_names()
    missing = []
    for code, c in CODES.items():
        snake = c.name.replace("-", "_")
        if not any(n.startswith(code) or n.startswith(snake + ".") or n == snake for n in names):
            missing.append(code)
    assert missing == [], f"codes without a golden case: {sorted(missing)}"
