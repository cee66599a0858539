"""Names Python or the generator care about, in every position, run like any other name (issue 7,
point 1; docs/spec/codegen.md, "Names and markers").

The names: Python's keywords and soft keywords, `dir(builtins)`, `dir(object)`, dunders and
underscore names, the runtime's class attributes and exports, and every name generated code
defines (`rt`, `_t1`, `_flow5`, `_NEXT`, `INSTANCE`, `PROGRAM`, `std_v1`, the prefix `f_`, ...).

* `test_every_name_in_every_position`: one program using all of them at once, each as a module,
  a function, a parameter, a local, a lambda parameter, a pattern binding and a field, and every
  upper-case one as a type and as a constructor.
* `test_a_program_with_drawn_names_runs_as_the_same_program_with_plain_names` (hypothesis): a
  program of every construct whose names are drawn from them (repeats allowed where Flow lets a
  name be reused), against the same program with plain names put in their place one for one:
  both check the same, and the drawn one builds, imports and runs (built package, host and CLI)
  to the same End and history, in its own names.

Budget: FLOW2PY_NAME_EXAMPLES examples (default 4, a few seconds); `FLOW2PY_NAME_EXAMPLES=300
pytest tests/test_names_property.py` is the long run (docs/spec/trace.md).
"""

from __future__ import annotations

import builtins
import keyword
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowrt as rt
from flow2py.check import check_program
from names_helpers import end_line, run_cli, run_everywhere

LOWER = re.compile(r"\A(_[A-Za-z0-9_]+|[a-z][A-Za-z0-9_]*)\Z")
UPPER = re.compile(r"\A[A-Z][A-Za-z0-9_]*\Z")
ALIAS = re.compile(r"\A[a-z][A-Za-z0-9_]*\Z")  # a module's file name is its alias
FLOW_KEYWORDS = {
    "else",
    "false",
    "flow",
    "guard",
    "if",
    "let",
    "match",
    "opaque",
    "pub",
    "return",
    "true",
    "type",
    "use",
}
PRELUDE = {
    "Int",
    "Decimal",
    "Text",
    "Bytes",
    "Bool",
    "Unit",
    "List",
    "Dict",
    "Set",
    "Duration",
    "Instant",
    "Option",
    "Result",
    "ToolProblem",
    "Task",
    "Some",
    "None",
    "Ok",
    "Err",
    "Failed",
    "Malformed",
    "NotRun",
    "Unknown",
}
#: what the programs below name themselves
TEMPLATE = {"main", "data", "to_text", "fns", "ctors", "mods", "value", "total", "k"}

GENERATED = {
    "rt",
    "_t1",
    "_t2",
    "_t10",
    "_flow1",
    "_flow5",
    "_flow12",
    "_fn",
    "_main",
    "_task",
    "_data",
    "_m",
    "_NEXT",
    "_SEARCH",
    "NEXT",
    "SEARCH",
    "PROGRAM",
    "SOURCES",
    "MODULES",
    "FILES",
    "INSTANCE",
    "std_v1",
    "std_v2",
    "repo",
    "up",
    "f_x",
    "f_from",
    "f_",
    "f__t1",
    "f_0",
    "x__tool",
    "_x__tool",
    "map__tool",
    "main_flow",
    "_is_even__is_odd",
    "self",
    "other",
    "_set_0",
    "_set_1",
    "_KEY",
    "_p0",
    "_p1",
    "_flow_values",
    "_flow_order",
    "_flow_key",
    "__flow__",
    "__flow_fields__",
    "__flow_field_names__",
    "__flow_field_types__",
    "__flow_decl__",
    "__flow_ctor__",
    "__flow_tag__",
    "__flow_named__",
    "__flow_name__",
    "__flow_variants__",
    "__flow_opaque__",
    "__flow_files__",
    "__flow_python__",
    "_flow_runnable",
    "__flow_text__",
    "_0",
    "_1",
}
DUNDERS = {
    "__getattr__",
    "__dir__",
    "__builtins__",
    "__file__",
    "__path__",
    "__all__",
    "__dict__",
    "__slots__",
    "__module__",
    "__weakref__",
    "__match_args__",
    "__del__",
    "__qualname__",
    "__annotations__",
    "__class_getitem__",
    "__set_name__",
    "__call__",
    "__iter__",
    "__next__",
    "__len__",
    "__bool__",
    "__getitem__",
    "__contains__",
    "__enter__",
    "__exit__",
    "__await__",
    "__copy__",
    "__deepcopy__",
    "__reduce__",
    "__main__",
    "__init__",
    "__x",
    "__x_",
    "__x__x",
    "__",
    "___",
    "_x",
    "_x_",
    "__0",
    "__slots",
    "__init",
    "__A",
    "__A__",
}
RUNTIME = (
    set(dir(rt.Record))
    | set(dir(rt.Enum))
    | set(dir(rt.Ok))
    | set(dir(rt.NotRun))
    | {n for n in dir(rt) if not n.startswith("__")}
)
EXAMPLES = int(os.environ.get("FLOW2PY_NAME_EXAMPLES", "4"))
#: the long run puts every candidate into the one program of test_every_name_in_every_position;
#: the suite's takes all but the lower-case builtins and the runtime's exports (hypothesis draws
#: them too)
LONG = EXAMPLES > 10
BUILTINS = {n for n in dir(builtins) if LOWER.match(n) and not n.startswith("_")}
CANDIDATES = sorted(
    (
        set(keyword.kwlist)
        | set(keyword.softkwlist)
        | set(dir(builtins))
        | set(dir(object))
        | DUNDERS
        | GENERATED
        | RUNTIME
    )
    - FLOW_KEYWORDS
    - PRELUDE
    - TEMPLATE
)
IN_ONE = {n for n in CANDIDATES if LONG or n not in (BUILTINS | RUNTIME) - GENERATED - DUNDERS}
LOWERS = [n for n in CANDIDATES if LOWER.match(n)]
UPPERS = [n for n in CANDIDATES if UPPER.match(n)]
MODULES = [n for n in LOWERS if ALIAS.match(n)]


def test_the_names_cover_every_kind_the_issue_lists():
    for n in (
        "from",
        "match",
        "_",
        "print",
        "__build_class__",
        "__init_subclass__",
        "__getattr__",
        "_t1",
        "_flow5",
        "_NEXT",
        "INSTANCE",
        "PROGRAM",
        "SOURCES",
        "rt",
        "std_v1",
        "__flow_fields__",
        "__match_args__",
    ):
        assert n in CANDIDATES or n in FLOW_KEYWORDS or n == "_", n
    assert len(LOWERS) > 200 and len(UPPERS) > 60 and len(MODULES) > 80


# ---- every name in every position, one program -------------------------------------------------


def _ctor(j: int, u: str, lowers: list, value=None) -> str:
    """Constructor `j` of the enum `All`: positional, named (a field from `lowers`) or bare; as a
    declaration (`value` None) or as a value."""
    if j % 3 == 0:
        return f"{u}(Int)" if value is None else f"{u}({value})"
    if j % 3 == 1:
        return f"{u} {{ pub {lowers[j]}: Int }}" if value is None else f"{u} {{ {lowers[j]}: {value} }}"
    return u


def _all_positions(lowers: list, uppers: list, modules: list) -> tuple[dict, str]:
    """The program, and the End's text it must print (computed here, in Flow names)."""
    fns = []
    for i, n in enumerate(lowers):
        # the name as function, parameter, local (shadowing the parameter), lambda parameter and
        # pattern binding, all in one function
        fns.append(
            f"pub flow {n}({n}: Int) -> Int = {{\n    let {n} = {n} + 1\n"
            f"    let k = flow({n}: Int) = {n} * 2\n"
            f"    match Some(k({n})) {{ Some({n}) => {n} + {i}, None => 0 }}\n}}\n"
        )
    fields = ", ".join(f"pub {n}: Int" for n in lowers)
    records = "".join(
        f"pub type {u} {{ pub {lowers[j % len(lowers)]}: Int }}\n" for j, u in enumerate(uppers)
    )
    files = {
        "fns.flow": "".join(fns),
        "ctors.flow": f"pub type All {{ {', '.join(_ctor(j, u, lowers) for j, u in enumerate(uppers))} }}\n",
        "mods.flow": records + f"pub type Wide {{ {fields} }}\n",
    }
    for j, m in enumerate(modules):
        files[f"{m}.flow"] = f"pub flow value() -> Int = {j}\n"
    wide = ", ".join(f"{n}: {i}" for i, n in enumerate(lowers))
    record_values = [f"{u} {{ {lowers[j % len(lowers)]}: {j} }}" for j, u in enumerate(uppers)]
    uses = "".join(f'use "./{m}"\n' for m in modules)
    # lists, not `+` chains, which would nest deep
    files["main.flow"] = (
        f'use "std@v1/data"\nuse "./fns"\nuse "./ctors"\nuse "./mods"\n{uses}\n'
        "pub flow main() -> Text = data.to_text(("
        f"[{', '.join(f'fns.{n}(1)' for n in lowers)}], "
        f"[{', '.join(f'{m}.value()' for m in modules)}], "
        f"mods.Wide {{ {wide} }}, "
        f"[{', '.join('ctors.' + _ctor(j, u, lowers, j) for j, u in enumerate(uppers))}], "
        f"({', '.join('mods.' + r for r in record_values)},)))\n"
    )
    # fns.n(1) is (1 + 1) * 2 + i
    text = (
        f"([{', '.join(str(4 + i) for i in range(len(lowers)))}], "
        f"[{', '.join(str(j) for j in range(len(modules)))}], "
        f"Wide {{ {wide} }}, "
        f"[{', '.join(_ctor(j, u, lowers, j) for j, u in enumerate(uppers))}], "
        f"({', '.join(record_values)}))"
    )
    return files, text


def test_every_name_in_every_position(tmp_path):
    """Every name of the issue's kinds (the suite: lower-case builtins and the runtime's exports
    aside), in one program."""
    chosen = [[n for n in names if n in IN_ONE] for names in (LOWERS, UPPERS, MODULES)]
    files, text = _all_positions(*chosen)
    ran = run_everywhere(tmp_path, files, cli=LONG)
    assert ran.built_value == text
    assert end_line(ran.built_history) == "Completed(" + rt.show(text) + ")"


# ---- drawn names against plain names -------------------------------------------------------------

#: the program's name slots; `{{`/`}}` are braces. One module `{M}` holds the data and the Tool.
MODULE = """\
pub type {T} {{ pub {F1}: Int, pub {F2}: Int }}
pub type {E} {{ {C1}(Int), {C2} {{ pub {F1}: Int, pub {F3}: Text }}, {C3} }}
@tool pub flow {TOOL}({P1}: Int) -> Result<Int, Text>
pub flow {G}({P1}: Int, {P2}: {T}) -> Int = {P1} + {P2}.{F1} * 2 + {P2}.{F2}
pub flow {POLY}({P1}: Int, {P2}: (Int) -> Int) -> Int = {P2}({P2}({P1}))
"""
MAIN = """\
use "std@v1/data"
use "./{M}"

flow {EVEN}({Q}: Int) -> Bool = if {Q} == 0 {{ true }} else {{ {ODD}({Q} - 1) }}
flow {ODD}({Q}: Int) -> Bool = if {Q} == 0 {{ false }} else {{ {EVEN}({Q} - 1) }}
flow {LOOP}({P1}: Int, {P2}: Int) -> Int = if {P1} == 0 {{ {P2} }} else {{
    let {FN} = flow({LP}: Int) = {LP} + {P1}
    {LOOP}({P1} - 1, {FN}({P2}))
}}
flow {APPLY}({P1}: Int, {P2}: (Int) -> Int) -> Int = {P2}({P1})

pub flow main({P1}: Int) -> Text !tool = {{
    let {L1} = {M}.{T} {{ {F1}: {P1}, {F2}: 3 }}
    let {L2} = {M}.{T} {{ ..{L1}, {F2}: {L1}.{F2} + 1 }}
    let {FN} = flow({LP}: Int) = {LP} * 10 + {L2}.{F2}
    let {L3} = match {M}.{C2} {{ {F1}: {FN}(1), {F3}: "x" }} {{
        {M}.{C1}({B1}) => {B1},
        {M}.{C2} {{ {F1}: {B1}, {F3}: _ }} => {B1} + 1,
        {M}.{C3} => 0,
    }}
    let {L4} = match {M}.{TOOL}({L3}) {{
        Ok({B2}) => {B2},
        Err(_) => -1,
    }}
    guard let Ok({B1}) = {M}.{TOOL}({L4}) else {{ return "no reply" }}
    let {L5} = {M}.{POLY}({B1}, flow({LP}: Int) = {LP} + 1)
    let {L6} = {M}.{POLY}({L5}, flow({LP}: Int) = match {M}.{TOOL}({LP}) {{ Ok({B2}) => {B2}, Err(_) => 0 }})
    let {L7} = [{M}.{C1}({L4}), {M}.{C3}, {M}.{C2} {{ {F3}: "y", {F1}: {L5} }}]
    data.to_text(({L1}, {L2}, {M}.{G}({L3}, {L2}), {L4}, {L5}, {L6}, {L7}, {EVEN}(7), {LOOP}({P1}, 0), {APPLY}({L6}, {FN})))
}}
"""
#: lower-case slots that must differ from each other (one Flow scope would otherwise change
#: meaning); F1..F3 are fields (their own namespace) and Q, the parameter of EVEN and ODD, may
#: repeat the name of a function they do not call
DISTINCT = [
    "TOOL",
    "G",
    "POLY",
    "EVEN",
    "ODD",
    "LOOP",
    "APPLY",
    "P1",
    "P2",
    "L1",
    "L2",
    "L3",
    "L4",
    "L5",
    "L6",
    "L7",
    "FN",
    "LP",
    "B1",
    "B2",
]
UPPER_SLOTS = ["T", "E", "C1", "C2", "C3"]


@st.composite
def slot_names(draw) -> dict:
    module = draw(st.sampled_from(MODULES))
    pool = st.sampled_from([n for n in LOWERS if n != module])
    lower = draw(st.lists(pool, min_size=len(DISTINCT), max_size=len(DISTINCT), unique=True))
    names = dict(zip(DISTINCT, lower), M=module)
    fields = draw(st.lists(st.one_of(pool, st.sampled_from(lower)), min_size=3, max_size=3, unique=True))
    names.update(zip(["F1", "F2", "F3"], fields))
    names["Q"] = draw(
        st.one_of(
            st.sampled_from([names["LOOP"], names["APPLY"], names["G"], names["TOOL"]]),
            pool.filter(lambda n: n not in lower),
        )
    )
    uppers = draw(
        st.lists(st.sampled_from(UPPERS), min_size=len(UPPER_SLOTS), max_size=len(UPPER_SLOTS), unique=True)
    )
    names.update(zip(UPPER_SLOTS, uppers))
    return names


def _plain(names: dict) -> tuple[dict, dict]:
    """The same slots with plain names put in one for one (a name drawn twice is one plain name
    twice), and the map from plain name back to drawn name."""
    back, to = {}, {}
    for slot, n in sorted(names.items()):
        if n not in to:
            p = f"v{len(to)}" if not UPPER.match(n) else f"V{len(to)}"
            to[n] = p
            back[p] = n
    return {slot: to[n] for slot, n in names.items()}, back


def _files(names: dict) -> tuple[dict, dict]:
    files = {f"{names['M']}.flow": MODULE.format(**names), "main.flow": MAIN.format(**names)}
    tools = {f"{names['M']}.{names['TOOL']}": "lambda n: {'Ok': n * 3 + 1}"}
    return files, tools


def _renamed(text: str, back: dict) -> str:
    return re.sub(r"\b[vV]\d+\b", lambda m: back.get(m.group(0), m.group(0)), text)


_plain_runs: dict = {}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(slot_names())
def test_a_program_with_drawn_names_runs_as_the_same_program_with_plain_names(tmp_path_factory, names):
    plain, back = _plain(names)
    pfiles, ptools = _files(plain)
    key = tuple(sorted(pfiles.items()))
    if key not in _plain_runs:  # the plain program depends only on which slots share a name
        d = tmp_path_factory.mktemp("plain")
        codes = _codes_of(d, pfiles)
        _plain_runs[key] = (codes, None if codes else run_cli(d, _input(plain), ptools))
    codes, expected = _plain_runs[key]
    files, tools = _files(names)
    d = tmp_path_factory.mktemp("drawn")
    if codes:  # Flow refuses both alike (not expected with these slots)
        assert _codes_of(d, files) == codes
        return
    ran = run_everywhere(d, files, _input(names), tools)
    output, history = expected
    assert ran.output == _renamed(output, back)
    assert rt.show(ran.built_value) == _renamed(output, back)
    assert _after_start(ran.history) == [_renamed(ln, back) for ln in _after_start(history)]
    assert ran.built_history.splitlines()[1:] == ran.history.splitlines()[1:]
    # the Start names the entry's parameter as Flow wrote it
    assert f"input={{ {names['P1']}: 2 }}" in ran.history


def _after_start(history: str) -> list:
    """The lines of a history after its Start (which names the program by its hash)."""
    lines = history.splitlines()
    assert lines[0].split()[1] == "Start"
    return lines[1:]


def _input(names: dict) -> dict:
    return {names["P1"]: 2}


def _codes_of(d, files: dict) -> list:
    """The diagnostics (code, line) of the program `files`, written to `d`."""
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    r = check_program(str(d / "main.flow"))
    return sorted((x.code, x.span.line) for x in r.diagnostics)
