"""Program identity is hashed from CBOR written in one pass over the AST (check/identity.py):
it must be byte for byte what cbor2 writes for `ast.to_data`."""

import glob
import os

import cbor2
import pytest

from flow2py.check import identity
from flow2py.syntax import ast
from flow2py.syntax.parser import parse_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOW_FILES = sorted(
    glob.glob(os.path.join(ROOT, "std", "*.flow"))
    + glob.glob(os.path.join(ROOT, "examples", "**", "*.flow"), recursive=True)
    + glob.glob(os.path.join(ROOT, "golden", "**", "*.flow"), recursive=True)
)


@pytest.mark.parametrize("path", FLOW_FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_one_pass_encoding_equals_cbor2_of_to_data(path):
    with open(path, encoding="utf-8", errors="surrogatepass") as f:  # as the loader reads
        module, _ = parse_module(f.read(), path)
    assert identity.encode(module) == cbor2.dumps(ast.to_data(module), canonical=True)


@pytest.mark.parametrize(
    "value",
    [
        0,
        23,
        24,
        255,
        256,
        65535,
        65536,
        2**32,
        2**64 - 1,
        2**64,
        -1,
        -24,
        -25,
        -(2**64),
        -(2**64) - 1,
        10**40,
        "",
        "a" * 23,
        "a" * 24,
        "é☃😀",
        "x" * 70000,
        b"",
        b"\x00" * 300,
        True,
        False,
        None,
        1.5,
        [],
        [[]],
        list(range(70)),
        (1, "a"),
        {"b": 1, "a": [2]},
    ],
)
def test_one_pass_encoding_equals_cbor2_for_plain_values(value):
    assert identity.encode(value) == cbor2.dumps(value, canonical=True)


def test_program_identity_equals_the_plain_computation():
    modules = {}
    for i, path in enumerate(FLOW_FILES[:40]):
        with open(path, encoding="utf-8", errors="surrogatepass") as f:
            modules[f"m{i}"], _ = parse_module(f.read(), path)
    lit = ast.Literal("int", 2**70)
    modules["big"] = ast.Module("big.flow", [], [], source="")
    assert identity.encode(lit) == cbor2.dumps(ast.to_data(lit), canonical=True)
    commits = {"github.com/acme/tools": "abc123"}
    assert identity.program_identity("std@v1", modules, commits) == identity.reference_identity(
        "std@v1", modules, commits
    )


def test_an_int_literal_of_5000_digits_is_encoded_into_the_identity_as_its_value():
    src = "pub flow main() -> Int = {}\n"
    big = "7" * 4999 + "3"
    module, diags = parse_module(src.format(big), "big.flow")
    assert diags == []
    assert identity.encode(module) == cbor2.dumps(ast.to_data(module), canonical=True)
    other, _ = parse_module(src.format(big[:-1] + "4"), "big.flow")
    ids = [identity.program_identity("std@v1", {"big": m}, {}) for m in (module, other)]
    assert ids[0] != ids[1]  # the last digit counts
