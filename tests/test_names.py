"""Closed evaluation: no Flow name reaches Python (issue 7, point 1; docs/spec/codegen.md, "Names
and markers"). Each program below once changed what a run did, or crashed, because a Flow name
meant something to Python; each now checks, builds, imports and runs like any other, and its End
and history show the Flow names as written. The mapping itself is tested at the end."""

from __future__ import annotations

import builtins
import json
import keyword

import pytest
from hypothesis import given
from hypothesis import strategies as st

import flowrt as rt
from flow2py.codegen.names import RESERVED, Namer, plain, python_module, python_segment, safe
from names_helpers import end_line, flow2py, run_everywhere

DUNDER_FIELDS = [
    "self",
    "_set_0",
    "__slots__",
    "__module__",
    "__dict__",
    "__weakref__",
    "__flow_fields__",
    "__match_args__",
    "__getattribute__",
    "__del__",
]


def test_a_field_named___init___cannot_mutate_a_value(tmp_path):
    ran = run_everywhere(
        tmp_path,
        {
            "main.flow": """\
type R { __init__: (Int, Int) -> Unit, x: Int }

pub flow main() -> Int = {
    let r = R { __init__: flow(_a: Int, _b: Int) = (), x: 1 }
    let _ = r.__init__(1234, 99)
    r.x
}
"""
        },
    )
    assert ran.output == "1" and ran.built_value == 1
    assert end_line(ran.history) == "Completed(1)"


def test_a_field_named___hash___is_the_programs_function_and_replay_matches(tmp_path):
    ran = run_everywhere(
        tmp_path,
        {
            "main.flow": """\
type R { __hash__: () -> Int, x: Int }

pub flow main() -> Int = {
    let r = R { __hash__: flow() = 7, x: 2 }
    r.__hash__() * 10 + r.x
}
"""
        },
    )
    assert ran.output == "72" and end_line(ran.history) == "Completed(72)"


def test_fields_named___eq___and__flow_values_hold_their_values(tmp_path):
    ran = run_everywhere(
        tmp_path,
        {
            "main.flow": """\
type R { __eq__: Int, _flow_values: Int }

pub flow main(a: R) -> (R, Bool, Bool) =
    (a, a == R { __eq__: 1, _flow_values: 2 }, a == R { __eq__: 1, _flow_values: 3 })
"""
        },
        input={"a": {"__eq__": 1, "_flow_values": 2}},
    )  # JSON by the Flow field names
    assert ran.output == "(R { __eq__: 1, _flow_values: 2 }, true, false)"
    assert end_line(ran.history) == "Completed((R { __eq__: 1, _flow_values: 2 }, true, false))"
    value = ran.built_value[0]
    assert rt.to_json(value) == {"__eq__": 1, "_flow_values": 2}
    assert type(value).__flow_field_names__ == ("__eq__", "_flow_values")
    assert ran.built_value[1:] == (True, False)


def test_fields_python_keeps_on_a_class_are_fields_like_any_other(tmp_path):
    decl = ", ".join(f"{f}: Int" for f in DUNDER_FIELDS)
    init = ", ".join(f"{f}: {i + 1}" for i, f in enumerate(DUNDER_FIELDS))
    shown = ", ".join(f"{f}: {i + 1}" for i, f in enumerate(DUNDER_FIELDS))
    ran = run_everywhere(
        tmp_path,
        {
            "main.flow": f"""\
use "std@v1/data"

type R {{ {decl} }}
type E {{ Named {{ {decl} }}, Other }}

flow total(e: E) -> Int = match e {{
    Named {{ self, __slots__, __del__, .. }} => self + __slots__ * 10 + __del__ * 100,
    Other => 0,
}}

pub flow main() -> Text = {{
    let r = R {{ {init} }}
    let s = R {{ ..r, self: r.__dict__ + r.__weakref__, _set_0: r.__match_args__ }}
    let e = Named {{ {init} }}
    data.to_text((r, s.self, s._set_0, s.__getattribute__, total(e), e, s == r))
}}
"""
        },
    )
    expected = f"(R {{ {shown} }}, 11, 8, 9, 1031, Named {{ {shown} }}, false)"
    assert ran.output == json.dumps(expected)
    assert end_line(ran.history) == f"Completed({json.dumps(expected)})"
    assert ran.built_value == expected


def test_top_level_functions_named___getattr___and___builtins___are_plain_functions(tmp_path):
    ran = run_everywhere(
        tmp_path,
        {
            "main.flow": """\
use "./svc"

flow __getattr__(name: Text) -> Text = "got " ++ name
flow __builtins__(n: Int) -> Int = n + 1

pub flow main() -> Text !tool = match svc.__getattr__(__getattr__("x")) {
    Ok(t) => t ++ "/" ++ __builtins__(1).to_text(),
    Err(_) => "failed",
}
""",
            "svc.flow": "@tool pub flow __getattr__(__name__: Text) -> Result<Text, Text>\n",
        },
        tools={"svc.__getattr__": "lambda n: {'Ok': n.upper()}"},
    )
    assert ran.output == '"GOT X/2"'
    # the history names the Tool and its argument as Flow wrote them
    assert 'svc.__getattr__("got x")' in ran.history
    assert end_line(ran.history) == 'Completed("GOT X/2")'
    # neither became the generated module's attribute hook or its builtins
    assert "def __getattr__" not in ran.python["main.py"]
    assert "__builtins__ =" not in ran.python["main.py"] and "def __builtins__" not in ran.python["main.py"]
    assert "def __getattr__" not in ran.python["svc.py"]


def test_modules_named_like_the_runtime_alias_and_the_std_folder(tmp_path):
    ran = run_everywhere(
        tmp_path,
        {
            "main.flow": """\
use "std@v1/data"
use "./rt"
use "./std_v1"
use "./repo"
use "./up"

pub flow main() -> Text = data.to_text((std_v1.make(rt.twice(3)), repo.one() + up.two()))
""",
            "rt.flow": "pub flow twice(n: Int) -> Int = n * 2\n",
            "std_v1.flow": "pub type T { v: Int }\npub flow make(n: Int) -> T = T { v: n }\n",
            "repo.flow": "pub flow one() -> Int = 1\n",
            "up.flow": "pub flow two() -> Int = 2\n",
        },
    )
    assert ran.output == '"(T { v: 6 }, 3)"'
    assert end_line(ran.history) == 'Completed("(T { v: 6 }, 3)")'
    # std keeps its folder; the user's modules get their own names beside it
    assert {"f_rt.py", "f_std_v1.py", "f_repo.py", "f_up.py", "std_v1/task.py"} <= set(ran.python)


# ---- the mapping ---------------------------------------------------------------------------------

FLOW_NAMES = st.from_regex(r"\A(_[A-Za-z0-9_]+|[A-Za-z][A-Za-z0-9_]*)\Z")


@given(FLOW_NAMES, FLOW_NAMES)
def test_two_flow_names_never_meet_in_one_python_name(a, b):
    assert (safe(a) == safe(b)) == (a == b)


@given(FLOW_NAMES)
def test_a_mapped_name_is_never_python_s_or_the_generator_s(n):
    p = safe(n)
    assert p.isidentifier() and not keyword.iskeyword(p) and not keyword.issoftkeyword(p)
    assert not p.startswith("_")  # no dunder, nothing mangled, nothing generated or private
    assert p not in RESERVED and p not in dir(builtins)
    assert p not in dir(rt.Record) and p not in dir(rt.Enum) and p not in dir(rt.NotRun)
    assert p == n or not plain(n)  # names from the source where they are safe


def test_readable_names_stay_and_unsafe_ones_get_the_prefix():
    assert [safe(n) for n in ("ticket", "Item", "from", "__init__", "rt", "f_x", "len", "self", "_t1")] == [
        "ticket",
        "Item",
        "f_from",
        "f___init__",
        "f_rt",
        "f_f_x",
        "f_len",
        "self",
        "f__t1",
    ]


@given(
    st.text(st.characters(blacklist_characters="/"), min_size=1),
    st.text(st.characters(blacklist_characters="/"), min_size=1),
)
def test_module_segments_map_injectively_to_module_names(a, b):
    pa, pb = python_segment(a), python_segment(b)
    assert pa.isidentifier() and not pa.startswith("_") and pa not in RESERVED
    assert (pa == pb) == (a == b)


def test_module_keys_keep_std_and_repositories_in_their_own_folders():
    assert python_module("main") == "main"
    assert python_module("std@v1/task") == "std_v1.task"
    assert python_module("std_v1") == "f_std_v1" and python_module("rt") == "f_rt"
    assert python_module("../lib/x") == "up.lib.x" and python_module("up/x") == "f_up.x"
    assert python_module("my-lib/x") == "f_0my_2d_lib.x"
    assert (
        python_module("github.com/acme/tools@v1.2/catalog")
        == "repo.f_0github_2e_com.acme.f_0tools_40_v1_2e_2.catalog"
    )


def test_generated_names_are_unique_and_outside_the_flow_names():
    n = Namer({"_t1"})
    assert n.temp() == "_t2" and n.generated("_flow3") == "_flow3" and n.generated("_flow3") == "_flow3_1"
    assert n.fresh("x") == "x" and n.fresh("x") == "x_1" and n.fresh("x_1") == "x_1_1"
    for bad in ("x", "__x", "_ x"):  # a Flow-reachable name, a mangled one, not a name
        with pytest.raises(ValueError):
            n.generated(bad)


def test_the_runtime_refuses_a_hand_written_field_that_would_replace_its_own_attributes():
    for field in ("__init__", "_flow_values", "INSTANCE", "__slots__", "_flow_order"):
        with pytest.raises(ValueError, match=f"field name '{field}'"):

            @rt.record("main::Bad", fields=(field,))
            class Bad(rt.Record):
                __slots__ = ("x",)


def test_hand_written_fields_named_self_or_like_the_setters_construct_positionally():
    @rt.record("main::Odd", fields=("self", "_set_0", "x"))
    class Odd(rt.Record):
        __slots__ = ("self", "_set_0", "x")

    o = Odd(1, 2, 3)
    assert (o.self, o._set_0, o.x) == (1, 2, 3) and rt.show(o) == "Odd { self: 1, _set_0: 2, x: 3 }"


def test_a_checkpoint_and_a_parked_task_with_such_names_resume_and_replay(tmp_path):
    """The checkpoint's function, its arguments and the parked task's constructor are found again
    by their Flow names (declaration ids), and history shows them as written."""
    (tmp_path / "main.flow").write_text("""\
use "std@v1/task"
use "./svc"

type Box { Got { self: Result<Int, ToolProblem<Text>>, __slots__: Int } }

flow __getattr__(__self__: Int, _t1: Int, rt: task.Task<Box>) -> Int !tool = if __self__ == 0 {
    match task.await(rt) {
        Got { self: Ok(v), __slots__ } => _t1 + v + __slots__,
        Got { self: Err(_), __slots__ } => _t1 - __slots__,
    }
} else {
    match svc.__call__(__self__) {
        Ok(v) => __getattr__(__self__ - 1, _t1 + v, rt),
        Err(_) => _t1,
    }
}

pub flow main(__init__: Int) -> Int !tool =
    __getattr__(__init__, 0, task.spawn(flow() = Got { __slots__: 7, self: svc.__call__(100) }))
""")
    (tmp_path / "svc.flow").write_text("@tool pub flow __call__(__x: Int) -> Result<Int, Text>\n")
    (tmp_path / "tools.py").write_text(
        'from flowrt import bind, pending\n\nbind("svc.__call__", lambda n: pending if n == 100 else {"Ok": n * 2})\n'
    )
    store, tools = tmp_path / "s.db", tmp_path / "tools.py"
    r = flow2py(
        "run",
        tmp_path / "main.flow",
        "--input",
        '{"__init__": 3}',
        "--tools",
        tools,
        "--store",
        store,
        "--run-id",
        "a",
        "--checkpoint-every",
        "1",
    )
    assert r.exit_code == 3, r.output
    history = flow2py("history", "a", "--store", store).stdout
    assert "Checkpoint  __getattr__(0, 12, <task root/1 on root/1#1 as main::Box.Got(7, …)>)" in history
    r = flow2py("resume", "a", "--tools", tools, "--store", store, "--reply", 'root/1#1={"Ok": 50}')
    assert (r.exit_code, r.stdout) == (0, "69\n"), r.output
    assert end_line(flow2py("history", "a", "--store", store).stdout) == "Completed(69)"
    assert flow2py("replay", "a", "--store", store).stdout == "Matched\n"
