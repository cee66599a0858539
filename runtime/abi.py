"""The names generated code may use, and nothing else (docs/spec/abi.md).

Generated modules write `import flowrt as rt`; the package re-exports exactly this module's
`__all__` for them (plus the host API `flowrt/__init__.py` lists, which generated code never
uses). tests/test_abi.py holds this list equal to the `rt.` names docs/spec/abi.md names, and
checks that every `rt.` name in generated code is one of them: a name codegen starts to emit
is added here and on the page in the same commit.
"""
from flowrt.data import lang
from flowrt.data.bounds import loads_exact
from flowrt.data.decoding import decode
from flowrt.data.generated import Program, load_generated
from flowrt.data.ops import DECIMAL_CONTEXT, Fault, Tail, bouncing, dec_add, dec_div, dec_mul, dec_neg, dec_sub, int_div, int_rem
from flowrt.data.requests import (
    MAX_DEPTH, Await, First, ParkCall, Spawn, StopTask, TailCall, ToolCall, ToolSpec, fn, lift,
    module_resolver, with_type_args,
)
from flowrt.data.tasks import Task
from flowrt.engine.tools import BINDINGS, bind, pending
from flowrt.data.typedesc import DecodeError, T, TypeTextError, field_types, fields_of, parse_type_text, subst, to_json, type_text
from flowrt.data.values import (
    EMPTY_DICT, EMPTY_LIST, EMPTY_SET, NONE, STD_CLASSES, ClassTable, Decimal, Dict, Duration, Enum, Err,
    Failed, Hole, HostToken, Instant, List, Malformed, None_, NotRun, Ok, Option, Record, Result, Set, Some,
    ToolProblem, Unknown,
    class_table, dict_of, list_of, record, set_of, show, unit_variant, variant,
)

__all__ = [
    # values and their classes (abi.md "Values")
    "Decimal", "DECIMAL_CONTEXT", "List", "EMPTY_LIST", "list_of", "Dict", "EMPTY_DICT", "dict_of",
    "Set", "EMPTY_SET", "set_of", "Duration", "Instant", "Ok", "Err", "Some", "NONE", "None_",
    "Failed", "Malformed", "NotRun", "Unknown", "Result", "Option", "ToolProblem", "HostToken", "Hole", "show",
    "Record", "Enum", "record", "variant", "unit_variant", "field_types",
    "ClassTable", "STD_CLASSES", "class_table", "Program", "load_generated",
    # type descriptors and admission (abi.md "Type descriptors")
    "T", "decode", "DecodeError", "to_json", "loads_exact", "type_text", "parse_type_text",
    "TypeTextError", "subst", "fields_of",
    # functions and the requests a generator yields (abi.md "Functions", "Requests")
    "fn", "lift", "with_type_args", "module_resolver", "MAX_DEPTH", "ToolSpec", "ToolCall",
    "Spawn", "Await", "StopTask", "First", "TailCall", "ParkCall", "Task", "Tail", "bouncing",
    # checked operations and std's @lang bodies (abi.md "Faults")
    "Fault", "int_div", "int_rem", "dec_add", "dec_sub", "dec_mul", "dec_neg", "dec_div", "lang",
    # binding Tools (abi.md "Tools: binding and replies")
    "bind", "pending", "BINDINGS",
]
