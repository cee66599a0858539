"""Helpers shared by the checker tests."""

from __future__ import annotations

import os
import textwrap

from flow2py.check import check_source
from flow2py.check.typeterms import TVar
from flow2py.check.typed import TCon, TFun, TTuple
from flow2py.syntax import ast
from repo_paths import SUPPORT_MAIN

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUPPORT = str(SUPPORT_MAIN)
SEEDS = os.path.join(HERE, "check_programs", "seeds", "main.flow")

EXPR_TYPES = (
    ast.Literal,
    ast.Name,
    ast.FieldAccess,
    ast.Call,
    ast.RecordLiteral,
    ast.ListLiteral,
    ast.DictLiteral,
    ast.TupleLiteral,
    ast.Unary,
    ast.Binary,
    ast.Try,
    ast.Lambda,
    ast.Block,
    ast.If,
    ast.Match,
    ast.Return,
)
PATTERN_TYPES = (
    ast.WildcardPattern,
    ast.BindPattern,
    ast.LiteralPattern,
    ast.CtorPattern,
    ast.TuplePattern,
    ast.ListPattern,
    ast.OrPattern,
)


def check(text: str, path: str = "main.flow"):
    return check_source(textwrap.dedent(text), path)


def codes(result) -> list[str]:
    return [d.code for d in result.diagnostics]


def write_program(tmp_path, files: dict[str, str]) -> str:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(tmp_path / "main.flow")


def has_var(t) -> bool:
    k = type(t)
    if k is TVar:
        return True
    if k is TCon:
        return any(has_var(a) for a in t.args)
    if k is TTuple:
        return any(has_var(a) for a in t.items)
    if k is TFun:
        return has_var(t.result) or any(has_var(a) for a in t.params)
    return False


def untyped_nodes(program) -> list:
    """Every Expr, Pattern and Param of every module that has no solved type."""
    out = []
    for m in program.modules.values():
        for n in ast.walk(m.ast):
            if isinstance(n, EXPR_TYPES + PATTERN_TYPES + (ast.Param,)):
                t = program.types.get(n.id)
                if t is None or has_var(t):
                    out.append((m.key, type(n).__name__, n.span.line, n.span.column))
    return out
