"""Diagnostics are data: for every registered code, one typed class, one page, one golden.

- one class: a frozen dataclass deriving from its phase's base (`SyntaxData` in
  flow2py/syntax/codes.py for E0xx, `CheckData` in flow2py/check/codes.py for E1xx-E5xx), its
  fields the data and none the message, rendered by the phase's one renderer module
  (flow2py/syntax/messages.py, flow2py/check/messages.py); every diagnostic the golden cases
  produce carries the object of its code's class, and its message is the object's;
- one page: an entry in docs/spec/diagnostics.md;
- one golden: a file or folder in golden/syntax/ or golden/diagnostics/ whose name starts with the
  code (`E401_non_exhaustive.flow`) or with the code's registered name (`unclosed_bracket.flow`)."""

import os
import re
from dataclasses import FrozenInstanceError, fields, is_dataclass

import pytest

import flow2py.check  # noqa: F401  (registers E1xx-E5xx)
import flow2py.syntax.parser  # noqa: F401  (registers E0xx)
from flow2py.diagnostics import CLASSES, CODES, Data, Diagnostic, Problems, register
from flow2py.span import Span
from flow2py.syntax import codes as syntax_codes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "spec", "diagnostics.md")
GOLDEN_DIRS = [os.path.join(ROOT, "golden", "syntax"), os.path.join(ROOT, "golden", "diagnostics")]
SYNTAX = sorted(c for c in CODES if re.fullmatch(r"E0\d\d", c))
SPAN = Span("m.flow", 1, 1, 1, 2, 0, 1)


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


def test_a_second_class_for_a_code_or_an_unregistered_code_is_refused():
    with pytest.raises(ValueError, match="two classes"):

        class Again(syntax_codes.SyntaxData):
            code = "E001"

    with pytest.raises(ValueError, match="unregistered"):

        class Nowhere(syntax_codes.SyntaxData):
            code = "E098"

    assert "E098" not in CODES and CLASSES["E001"] is syntax_codes.BadCharacter
    with pytest.raises(ValueError, match="twice"):
        register("E001", "again", "registered twice")


def test_a_report_becomes_a_diagnostic_keeping_its_data():
    data = syntax_codes.UnknownEffect(SPAN, "io")
    with pytest.raises(FrozenInstanceError):
        data.name = "tool"  # type: ignore[misc]
    problems = Problems()
    d = problems.report(data)
    assert problems.items == [d]
    assert (d.code, d.span, d.data) == ("E007", SPAN, data)
    assert d.message == "unknown effect `!io`: write `!tool`, `!pure`, or nothing (pure)"
    assert d == Diagnostic("E007", d.message, SPAN)  # the data does not change what is equal


def test_the_renderer_reads_the_fields():
    assert syntax_codes.BadCharacter(SPAN, "\x07").message == (
        "unexpected character `\\x07`: no Flow token starts with it"
    )
    assert "`\\q` in bytes" in syntax_codes.BadEscape(SPAN, "q", True).message
    assert "`\\u{1F600}`" in syntax_codes.BadEscape(SPAN, "u", False).message
    assert syntax_codes.TooDeep(SPAN, 7).message.startswith(
        "this declaration nests brackets more than 7 deep"
    )
    assert syntax_codes.LoneSurrogate(SPAN, 0xD800).message.startswith("the source holds U+D800,")
    assert isinstance(syntax_codes.MisplacedRest(SPAN, "list"), Data)


def test_the_syntax_phase_reports_only_through_its_classes():
    """No module of the syntax phase builds a `Diagnostic` from a code and a message."""
    folder = os.path.join(ROOT, "flow2py", "syntax")
    offenders = []
    for base, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                if re.search(r"\bDiagnostic\(|error\(\s*[\"']E0", text):
                    offenders.append(os.path.relpath(path, ROOT))
    assert offenders == []


PHASES = {"flow2py.syntax.messages": r"E0\d\d", "flow2py.check.messages": r"E[1-5]\d\d"}


def test_every_code_has_exactly_one_typed_class_rendered_by_its_phase():
    from flow2py.check import codes as check_codes

    assert sorted(CLASSES) == sorted(CODES)  # a class for every code, none for another
    for base, module in ((syntax_codes.SyntaxData, syntax_codes), (check_codes.CheckData, check_codes)):
        declared = [
            v
            for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, base) and "code" in vars(v)
        ]
        assert len(declared) == len({c.code for c in declared})  # one class each, none twice
        for cls in declared:
            assert CLASSES[cls.code] is cls
            assert is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
            assert "message" not in {f.name for f in fields(cls)}, cls  # the renderer writes it
            assert re.fullmatch(PHASES[cls.renderer], cls.code), (cls, cls.renderer)


def test_every_golden_diagnostic_carries_the_object_of_its_codes_class(monkeypatch):
    from test_check_golden import _run, cases

    monkeypatch.chdir(ROOT)
    seen = set()
    for name in cases():
        for d in _run(name).diagnostics:
            assert type(d.data) is CLASSES[d.code], (name, d.code, d.message)
            assert d.message == d.data.message and d.span == d.data.span, (name, d.code)
            seen.add(d.code)
    checker = {c for c in CODES if re.fullmatch(r"E[1-5]\d\d", c)}
    assert checker - seen == set()  # every checker code shows in some golden case


def test_the_checker_reports_only_through_its_classes():
    """No module of the checker passes a code and a message string to `Problems.add` or builds a
    `Diagnostic` from them: every report is an object of the code's class."""
    folder = os.path.join(ROOT, "flow2py", "check")
    offenders = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            if re.search(r"\.add\(\s*[\"']E\d|\bDiagnostic\(\s*[\"']E\d", text):
                offenders.append(name)
    assert offenders == []
