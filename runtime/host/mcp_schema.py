"""Flow types against MCP tools' JSON Schemas, and Flow's JSON form to and from MCP's JSON
(docs/spec/abi.md, "MCP servers as Tools").

`fits(desc, schema, root, direction)` says why a Flow type and a tool's schema disagree (None when
they fit); `direction` is "in" for what Flow sends (a parameter: every value Flow can send must be
one the schema accepts) and "out" for what the server answers (every value the schema admits that
Flow cannot hold is a mismatch where it can be seen from the schema). `to_mcp` / `from_mcp` turn
the JSON form of Flow data (docs/spec/tools.md, "Data across the boundary") into the plain JSON an MCP tool takes, and
back: an Option is its value or absent (`null`), not `{"Some": v}` / `"None"`.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Optional

from flowrt.data.typedesc import DictOf, ListOf, Named, SetOf, TupleOf, fields_of, type_text
from flowrt.data.values import Enum, Option, Record

__all__ = [
    "resolve",
    "fits",
    "to_mcp",
    "from_mcp",
    "object_like",
    "is_option",
    "OMIT",
    "fields_fit",
    "schema_text",
]

#: The JSON Schema types a Flow value may be sent as ("in": any one of them takes every value)
#: and may be admitted from ("out": every one of them is admitted).
_PRIMS_IN = {"Text": ("string",), "Int": ("integer", "number"), "Decimal": ("number", "string")}
_PRIMS_IN.update({"Bool": ("boolean",), "Bytes": ("string",), "Unit": ("null",)})
_PRIMS_OUT = dict(_PRIMS_IN, Int=("integer",), Decimal=("number", "string", "integer"))

#: `to_mcp` of an Option that is None where a key can be left out (a parameter, a record field).
OMIT = object()


def resolve(schema: Any, root: dict) -> Any:
    """`schema` with a local `$ref` (`#/$defs/Name`, as pydantic writes them) followed."""
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        node: Any = root
        for part in schema["$ref"].lstrip("#").strip("/").split("/"):
            node = node.get(part) if isinstance(node, dict) and part else node
        schema, seen = node if isinstance(node, dict) else {}, seen + 1
    return schema if isinstance(schema, dict) else {}


def _branches(schema: dict, root: dict) -> tuple[list, bool]:
    """The non-null alternatives of a schema and whether it admits null."""
    alts = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alts, list):
        out, nullable = [], False
        for a in alts:
            a = resolve(a, root)
            if a.get("type") == "null":
                nullable = True
            else:
                sub, n = _branches(a, root)
                out += sub
                nullable = nullable or n
        return out, nullable
    t = schema.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        return [dict(schema, type=x) for x in rest] or [], "null" in t
    return [schema], t == "null"


def is_option(desc) -> bool:
    return type(desc) is Named and desc.cls is Option


def _record(desc) -> bool:
    return type(desc) is Named and isinstance(desc.cls, type) and issubclass(desc.cls, Record)


def _plain_enum(desc) -> Optional[list]:
    """The constructor names of an enum whose constructors carry nothing (a JSON string)."""
    if type(desc) is not Named or not isinstance(desc.cls, type) or not issubclass(desc.cls, Enum):
        return None
    variants = desc.cls.__dict__.get("__flow_variants__") or {}
    if not variants or any(c.__flow_fields__ for c in variants.values()) or desc.cls is Option:
        return None
    return list(variants)


def object_like(desc) -> bool:
    """Does the type map to a JSON object (a record, a Dict with Text keys)?"""
    return _record(desc) or (type(desc) is DictOf and getattr(desc.key, "name", None) == "Text")


def fits(desc, schema: Any, root: dict, direction: str, path: str = "$") -> Optional[str]:
    """Why `desc` and `schema` disagree at `path` (None when they fit)."""
    schema = resolve(schema, root)
    if is_option(desc):
        desc = desc.args[0]
    alts, _nullable = _branches(schema, root)
    if not alts or any(not a.get("type") and not a.get("properties") and not a.get("enum") for a in alts):
        return None  # a schema admitting anything: admission checks what comes back
    problems = [_fits_one(desc, a, root, direction, path) for a in alts]
    if direction == "in":  # one branch taking every value Flow sends is enough
        return None if any(p is None for p in problems) else problems[0]
    return next((p for p in problems if p is not None), None)  # every answer must fit


def _types(schema: dict) -> set:
    t = schema.get("type")
    if t is None and isinstance(schema.get("properties"), dict):
        return {"object"}
    if t is None and isinstance(schema.get("enum"), list):
        return {"string"}
    return {t} if isinstance(t, str) else set()


def _fits_one(desc, schema: dict, root: dict, direction: str, path: str) -> Optional[str]:
    types = _types(schema)
    want = _expect(desc, direction)
    if want is None:
        return f"{path}: {type_text(desc)} has no JSON Schema mapping for MCP"
    if direction == "in" and not types & set(want) or direction == "out" and not types <= set(want):
        shown = "/".join(sorted(types)) or "?"
        return f"{path}: the tool's schema says {shown}, the Flow type is {type_text(desc)}"
    t = type(desc)
    if t in (ListOf, SetOf):
        return fits(desc.item, schema.get("items", {}), root, direction, path + "[]")
    if t is TupleOf:
        items = schema.get("prefixItems")
        if not isinstance(items, list) or len(items) != len(desc.items):
            return f"{path}: the tool's schema is not an array of {len(desc.items)} items, the Flow type is {type_text(desc)}"
        for i, (d, s) in enumerate(zip(desc.items, items)):
            p = fits(d, s, root, direction, f"{path}[{i}]")
            if p:
                return p
        return None
    if t is DictOf:
        return fits(desc.value, schema.get("additionalProperties", {}), root, direction, path + ".*")
    names = _plain_enum(desc)
    if names is not None:
        enum = schema.get("enum")
        if not isinstance(enum, list):
            return (
                None
                if direction == "in"
                else f"{path}: the tool's schema admits any string, the Flow type is {type_text(desc)}"
            )
        missing = [
            n
            for n in (names if direction == "in" else enum)
            if n not in (enum if direction == "in" else names)
        ]
        if missing:
            return f"{path}: {missing[0]!r} is not a value of both the tool's schema and {type_text(desc)}"
        return None
    if _record(desc):
        return _fits_record(desc, schema, root, direction, path)
    return None


def _expect(desc, direction: str) -> Optional[tuple]:
    t = type(desc)
    name = getattr(desc, "name", None)
    prims = _PRIMS_IN if direction == "in" else _PRIMS_OUT
    if name in prims and t.__name__ == "_Prim":
        return prims[name]
    if t in (ListOf, SetOf, TupleOf):
        return ("array",)
    if object_like(desc):
        return ("object",)
    if _plain_enum(desc) is not None:
        return ("string",)
    return None


def _fits_record(desc, schema: dict, root: dict, direction: str, path: str) -> Optional[str]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or ())
    fields = dict(zip(desc.cls.__flow_field_names__, fields_of(desc.cls, desc.args)))
    return fields_fit(fields, props, required, root, direction, path, type_text(desc))


def fields_fit(fields: dict, props: dict, required: set, root, direction, path, what) -> Optional[str]:
    """Named Flow values (record fields, a Tool's parameters) against an object schema."""
    for name, d in fields.items():
        where = f"{path}.{name}"
        if name not in props:
            if direction == "in" or not is_option(d):
                return f"{where}: {what} has {name!r}, the tool's schema has no such property"
            continue
        if direction == "out" and not is_option(d) and name not in required:
            return f"{where}: the tool's schema may leave {name!r} out, the Flow type {type_text(d)} is not an Option"
        if direction == "in" and is_option(d) and name in required:
            if not _branches(resolve(props[name], root), root)[1]:
                return (
                    f"{where}: the tool's schema requires {name!r}, the Flow type {type_text(d)} may be None"
                )
        p = fits(d, props[name], root, direction, where)
        if p:
            return p
    if direction == "in":
        extra = sorted(required - set(fields))
        if extra:
            return f"{path}: the tool's schema requires {extra[0]!r}, which {what} does not have"
    return None


def to_mcp(desc, v: Any, schema: Any = None, root: Optional[dict] = None) -> Any:
    """The JSON form of a Flow value as the plain JSON an MCP tool takes (OMIT for a None that
    may be left out; the caller leaves the key out)."""
    if desc is None:
        return v
    root = root or {}
    schema = resolve(schema, root) if schema is not None else {}
    if is_option(desc):
        if v == "None":
            return OMIT
        return to_mcp(desc.args[0], v["Some"], schema, root)
    t = type(desc)
    if t in (ListOf, SetOf):
        return [_present(to_mcp(desc.item, x, schema.get("items"), root)) for x in v]
    if t is TupleOf:
        items = schema.get("prefixItems") or [None] * len(desc.items)
        return [_present(to_mcp(d, x, s, root)) for d, x, s in zip(desc.items, v, items)]
    if t is DictOf and isinstance(v, dict):
        return {
            k: _present(to_mcp(desc.value, x, schema.get("additionalProperties"), root)) for k, x in v.items()
        }
    if _record(desc):
        props = schema.get("properties") or {}
        out = {}
        for name, d in zip(desc.cls.__flow_field_names__, fields_of(desc.cls, desc.args)):
            x = to_mcp(d, v.get(name, "None"), props.get(name), root)
            if x is not OMIT:
                out[name] = x
        return out
    if getattr(desc, "name", None) == "Decimal" and isinstance(v, str):
        alts, _ = _branches(schema, root)
        if not any(a.get("type") == "string" for a in alts) and any(a.get("type") == "number" for a in alts):
            d = Decimal(v)
            return int(d) if d == d.to_integral_value() else float(d)
    return v


def _present(x):
    return None if x is OMIT else x


def from_mcp(desc, v: Any) -> Any:
    """Plain JSON an MCP tool answered as the JSON form of Flow data of type `desc` (admission,
    flowrt.engine.tools.admit, then checks it)."""
    if desc is None:
        return v
    if is_option(desc):
        return "None" if v is None else {"Some": from_mcp(desc.args[0], v)}
    t = type(desc)
    if t in (ListOf, SetOf) and isinstance(v, list):
        return [from_mcp(desc.item, x) for x in v]
    if t is TupleOf and isinstance(v, list) and len(v) == len(desc.items):
        return [from_mcp(d, x) for d, x in zip(desc.items, v)]
    if t is DictOf and isinstance(v, dict):
        return {k: from_mcp(desc.value, x) for k, x in v.items()}
    if _record(desc) and isinstance(v, dict):
        out = {}
        for name, d in zip(desc.cls.__flow_field_names__, fields_of(desc.cls, desc.args)):
            if name in v and not (v[name] is None and is_option(d)):
                out[name] = from_mcp(d, v[name])
        return out
    return v


def schema_text(schema: Any, root: dict, depth: int = 0) -> str:
    """A JSON Schema in short (`{text: string, min_len?: integer}`), for messages."""
    schema = resolve(schema, root)
    alts, nullable = _branches(schema, root)
    if len(alts) != 1 or depth > 3:
        parts = [schema_text(a, root, depth + 1) for a in alts] or ["any"]
        return "|".join(parts + (["null"] if nullable else []))
    s = alts[0]
    kinds = _types(s)
    tail = "|null" if nullable else ""
    if "object" in kinds and isinstance(s.get("properties"), dict):
        req = set(s.get("required") or ())
        inner = ", ".join(
            f"{k}{'' if k in req else '?'}: {schema_text(v, root, depth + 1)}"
            for k, v in s["properties"].items()
        )
        return "{" + inner + "}" + tail
    if "array" in kinds:
        return f"array<{schema_text(s.get('items', {}), root, depth + 1)}>{tail}"
    if isinstance(s.get("enum"), list):
        return "|".join(json.dumps(x) for x in s["enum"]) + tail
    return ("/".join(sorted(kinds)) or "any") + tail
