"""Admission: decode every JSON form (and runtime values) against type descriptors; to_json back."""

from decimal import Decimal

import pytest

import flowrt as rt
from flowrt import (
    NONE,
    DecodeError,
    Duration,
    Err,
    Failed,
    HostToken,
    Instant,
    Malformed,
    NotRun,
    Ok,
    Some,
    T,
    decode,
    dict_of,
    list_of,
    loads_exact,
    set_of,
    to_json,
    type_text,
)


@rt.record("main::Item", fields=("name", "price", "note"))
class Item(rt.Record):
    __slots__ = ("name", "price", "note")


rt.field_types(Item, (T.TEXT, T.DECIMAL, T.OptionOf(T.TEXT)))


class Plan(rt.Enum):
    __slots__ = ()


@rt.variant("planner::Plan", "Search", tag=0, fields=("_0",))
class Search(Plan):
    __slots__ = ("_0",)


@rt.variant("planner::Plan", "Move", tag=1, fields=("from_", "to"))
class Move(Plan):
    __slots__ = ("from_", "to")


@rt.variant("planner::Plan", "Done", tag=2, fields=())
class Done(Plan):
    __slots__ = ()


@rt.variant("planner::Plan", "Span", tag=3, fields=("_0", "_1"))
class Span(Plan):
    __slots__ = ("_0", "_1")


rt.field_types(Search, (T.TEXT,))
rt.field_types(Move, (T.TEXT, T.TEXT))
rt.field_types(Span, (T.INT, T.INT))


# A generic, recursive enum: Tree<T> = Leaf(T) | Node(List<Tree<T>>); field types set lazily.
class Tree(rt.Enum):
    __slots__ = ()


@rt.variant("main::Tree", "Leaf", tag=0, fields=("_0",))
class Leaf(Tree):
    __slots__ = ("_0",)


@rt.variant("main::Tree", "Node", tag=1, fields=("_0",))
class Node(Tree):
    __slots__ = ("_0",)


rt.field_types(Leaf, lambda: (T.Var(0),))
rt.field_types(Node, lambda: (T.ListOf(T.Named(Tree, T.Var(0))),))


@rt.record("main::Secret", fields=("value",))
class Secret(rt.Record):
    __slots__ = ("value",)
    __flow_opaque__ = True


Secret.__flow_field_types__ = (T.TEXT,)


def err(desc, value):
    with pytest.raises(DecodeError) as info:
        decode(desc, value)
    return str(info.value)


# ---- scalars -------------------------------------------------------------------------------------


def test_int_accepts_integers_only():
    assert decode(T.INT, 12345678901234567890123) == 12345678901234567890123
    assert err(T.INT, True) == "$: expected Int, got true"
    assert err(T.INT, 1.0) == "$: expected Int, got 1.0"
    assert err(T.INT, loads_exact("1.5")) == "$: expected Int, got 1.5"
    assert err(T.INT, "3") == '$: expected Int, got "3"'


def test_decimal_is_kept_exact_from_strings_and_numbers():
    assert str(decode(T.DECIMAL, "1.50")) == "1.50"
    assert str(decode(T.DECIMAL, loads_exact("0.1"))) == "0.1"
    assert decode(T.DECIMAL, 3) == Decimal(3)
    assert str(decode(T.DECIMAL, 0.1)) == "0.1"  # a float keeps the literal it was parsed from
    assert rt.show(decode(T.DECIMAL, "1e3")) == "decimal.from_int(1000)"  # no fraction: data.md "Text"
    assert err(T.DECIMAL, "NaN") == '$: expected Decimal, got "NaN"'
    assert err(T.DECIMAL, "1,5") == '$: expected Decimal, got "1,5"'
    assert err(T.DECIMAL, True) == "$: expected Decimal, got true"


def test_text_bytes_bool_unit():
    assert decode(T.TEXT, "a") == "a"
    assert err(T.TEXT, 3) == "$: expected Text, got 3"
    assert decode(T.BYTES, "AAEC") == b"\x00\x01\x02" and decode(T.BYTES, b"x") == b"x"
    assert "base64" in err(T.BYTES, "!!")
    assert decode(T.BOOL, False) is False
    assert err(T.BOOL, 0) == "$: expected Bool, got 0"
    assert decode(T.UNIT, None) is None
    assert err(T.UNIT, {}) == "$: expected Unit (null), got {}"


def test_duration_and_instant():
    assert decode(T.DURATION, 250_000_000) == Duration(250_000_000) == decode(T.DURATION, "250ms")
    assert decode(T.INSTANT, "2023-11-14T22:13:20.5Z") == Instant(1_700_000_000_500_000_000)
    assert decode(T.INSTANT, "2023-11-14T23:13:20+01:00") == Instant(1_700_000_000 * 10**9)
    assert "expected Instant" in err(T.INSTANT, "yesterday")
    assert "expected Duration" in err(T.DURATION, "soon")


# ---- containers --------------------------------------------------------------------------------


def test_list_set_tuple_from_arrays():
    assert decode(T.ListOf(T.INT), [1, 2]) == list_of([1, 2])
    assert err(T.ListOf(T.TEXT), ["a", "b", 3]) == "$[2]: expected Text, got 3"
    assert decode(T.SetOf(T.INT), [2, 1, 2]) == set_of([1, 2])
    assert decode(T.TupleOf(T.INT, T.TEXT), [1, "a"]) == (1, "a")
    assert err(T.TupleOf(T.INT, T.TEXT), [1]) == "$: expected (Int, Text) (2 elements), got 1 elements"
    assert err(T.ListOf(T.INT), {"a": 1}) == '$: expected List<Int>, got {"a": 1}'


def test_dicts_with_text_keys_are_objects_others_pairs():
    assert decode(T.DictOf(T.TEXT, T.INT), {"a": 1}) == dict_of({"a": 1})
    assert err(T.DictOf(T.TEXT, T.INT), {"a": "x"}) == '$["a"]: expected Int, got "x"'
    assert decode(T.DictOf(T.INT, T.TEXT), [[1, "a"], [2, "b"]]) == dict_of({1: "a", 2: "b"})
    assert err(T.DictOf(T.INT, T.TEXT), [[1, "a"], [1, "b"]]) == "$[1][0]: duplicate key 1"
    assert err(T.DictOf(T.INT, T.TEXT), [[1, "a", 3]]).startswith("$[0]: expected a [key, value] pair")
    assert err(T.DictOf(T.INT, T.TEXT), [["1", "a"]]) == '$[0][0]: expected Int, got "1"'


# ---- records and enums -------------------------------------------------------------------------


def test_record_from_object_with_missing_option_field():
    it = decode(T.Named(Item), {"name": "pen", "price": "1.50"})
    assert it == Item("pen", Decimal("1.50"), NONE)
    assert decode(T.Named(Item), {"name": "pen", "price": 2, "note": {"Some": "x"}}).note == Some("x")
    assert err(T.Named(Item), {"price": "1"}) == "$: missing field name"
    assert err(T.Named(Item), {"name": "a", "price": "1", "colour": 1}) == "$.colour: unknown field of Item"
    assert err(T.Named(Item), {"name": 3, "price": "1"}) == "$.name: expected Text, got 3"
    assert err(T.Named(Item), [1]) == "$: expected Item, got [1]"


def test_record_field_paths_nest():
    d = T.DictOf(T.TEXT, T.ListOf(T.Named(Item)))
    assert (
        err(d, {"k": [{"name": "a", "price": "1"}, {"name": "b", "price": []}]})
        == '$["k"][1].price: expected Decimal, got []'
    )


def test_enum_forms():
    P = T.Named(Plan)
    assert decode(P, "Done") is Done.INSTANCE
    assert decode(P, {"Search": "q"}) == Search("q")
    assert decode(P, {"Span": [1, 2]}) == Span(1, 2)
    assert decode(P, {"Move": {"from": "a", "to": "b"}}) == Move("a", "b")
    assert err(P, {"Search": 1}) == "$.Search: expected Text, got 1"
    assert err(P, {"Span": [1, "x"]}) == '$.Span[1]: expected Int, got "x"'
    assert err(P, {"Span": [1]}) == "$.Span: expected an array of 2 values, got [1]"
    assert err(P, {"Move": {"from": "a"}}) == "$.Move: missing field to"
    assert err(P, {"Move": {"from_": "a", "to": "b"}}) == "$.Move.from_: unknown field of Move"
    assert (
        err(P, "Nope") == '$: expected Plan, got unknown constructor "Nope" (one of Search, Move, Done, Span)'
    )
    assert err(P, "Search") == '$: constructor Search needs a payload: {"Search": ...}'
    assert err(P, {"Done": 1}) == '$.Done: constructor Done has no payload: write "Done"'
    assert err(P, {"Search": "a", "Done": None}).startswith("$: expected Plan, got")


def test_result_option_and_tool_problem():
    R = T.ResultOf(T.Named(Plan), T.TEXT)
    assert decode(R, {"Ok": {"Search": "q"}}) == Ok(Search("q"))
    assert decode(R, {"Err": "bad"}) == Err("bad")
    assert decode(T.OptionOf(T.INT), "None") is NONE
    assert decode(T.OptionOf(T.INT), {"Some": 2}) == Some(2)
    assert err(T.OptionOf(T.INT), None) == "$: expected Option<Int>, got null"
    P = T.ToolProblemOf(T.Named(Plan))
    assert decode(P, {"Failed": "Done"}) == Failed(Done.INSTANCE)
    assert decode(P, {"NotRun": "down"}) == NotRun("down")
    assert decode(P, {"Malformed": "x"}) == Malformed("x")


def test_generic_recursive_enum_with_lazy_field_types():
    d = T.Named(Tree, T.INT)
    v = decode(d, {"Node": [{"Leaf": 1}, {"Node": [{"Leaf": 2}]}]})
    assert v == Node(list_of([Leaf(1), Node(list_of([Leaf(2)]))]))
    assert err(d, {"Node": [{"Leaf": "x"}]}) == '$.Node[0].Leaf: expected Int, got "x"'
    assert type_text(d) == "Tree<Int>"


def test_opaque_types_are_never_decoded():
    assert err(T.Named(Secret), {"value": "x"}) == "$: Secret is opaque: decoding never builds one"
    assert err(T.Named(Secret), Secret("x")) == "$: Secret is opaque: decoding never builds one"


def test_host_tokens_only_in_token_form():
    tok = T.Token("browser::Page")
    assert decode(tok, {"$token": "p1"}) == HostToken("browser::Page", "p1")
    assert decode(tok, HostToken("browser::Page", "p1")) == HostToken("browser::Page", "p1")
    assert err(tok, HostToken("browser::Tab", "p1")) == "$: expected a Page token, got a Tab token"
    assert err(tok, "p1").startswith("$: expected Page (a host token")
    assert to_json(HostToken("browser::Page", "p1")) == {"$token": "p1"}


# ---- runtime values go through the same admission ---------------------------------------------


def test_runtime_values_are_admitted_and_checked():
    v = Ok(list_of([Search("q")]))
    d = T.ResultOf(T.ListOf(T.Named(Plan)), T.TEXT)
    assert decode(d, v) is v  # nothing to convert: the same object comes back
    assert decode(d, {"Ok": [Search("q"), "Done"]}) == Ok(list_of([Search("q"), Done.INSTANCE]))
    assert err(d, Ok(list_of([Search(3)]))) == "$.Ok[0].Search: expected Text, got 3"
    assert err(d, Ok(list_of([Leaf(1)]))) == "$.Ok[0]: expected Plan, got Leaf(1)"
    assert err(T.Named(Item), Item(1, Decimal(1), NONE)) == "$.name: expected Text, got 1"
    assert decode(T.Named(Item), Item("a", 1, NONE)) == Item("a", Decimal(1), NONE)
    assert decode(T.DictOf(T.TEXT, T.INT), dict_of({"a": 1})) == dict_of({"a": 1})
    assert decode(T.SetOf(T.INT), set_of([1])) == set_of([1])
    assert decode(T.TupleOf(T.INT), (1,)) == (1,)


def test_path_argument_prefixes_messages():
    with pytest.raises(DecodeError) as info:
        decode(T.TEXT, 1, path="$.notes[2]")
    assert info.value.path == "$.notes[2]" and info.value.message == "expected Text, got 1"


# ---- to_json --------------------------------------------------------------------------------


def test_to_json_forms():
    assert to_json(Decimal("1.50")) == "1.50"
    assert to_json(b"\x00\x01\x02") == "AAEC"
    assert to_json(None) is None and to_json((1, "a")) == [1, "a"]
    assert to_json(dict_of({"b": 1, "a": 2})) == {"a": 2, "b": 1}
    assert to_json(dict_of({2: "x", 1: "y"})) == [[1, "y"], [2, "x"]]
    assert to_json(set_of([3, 1])) == [1, 3]
    assert to_json(Item("a", Decimal("2"), NONE)) == {"name": "a", "price": "2", "note": "None"}
    assert to_json(Ok(Span(1, 2))) == {"Ok": {"Span": [1, 2]}}
    assert to_json(Move("a", "b")) == {"Move": {"from": "a", "to": "b"}}
    assert to_json(Done.INSTANCE) == "Done"
    assert to_json(Duration(5)) == 5 and to_json(Instant(0)) == "1970-01-01T00:00:00Z"
    with pytest.raises(TypeError):
        to_json(object())


def test_loads_exact_keeps_numbers_exact():
    assert loads_exact('{"a": 0.1, "b": 3}') == {"a": Decimal("0.1"), "b": 3}
    with pytest.raises(ValueError):
        loads_exact("NaN")


def test_type_text():
    assert type_text(T.ListOf(T.TEXT)) == "List<Text>"
    assert type_text(T.DictOf(T.INT, T.SetOf(T.BYTES))) == "Dict<Int, Set<Bytes>>"
    assert type_text(T.ResultOf(T.Named(Plan), T.ToolProblemOf(T.UNIT))) == "Result<Plan, ToolProblem<Unit>>"
    assert type_text(T.TupleOf(T.INT, T.OptionOf(T.DURATION))) == "(Int, Option<Duration>)"
    assert type_text(T.Token("browser::Page")) == "Page" and type_text(T.INSTANT) == "Instant"


def test_descriptors_compare_structurally():
    assert T.ListOf(T.INT) == T.ListOf(T.INT) and hash(T.ListOf(T.INT)) == hash(T.ListOf(T.INT))
    assert T.ListOf(T.INT) != T.SetOf(T.INT) and T.Named(Plan) != T.Named(Tree)


def test_field_types_checks_the_count():
    with pytest.raises(TypeError):
        rt.field_types(Span, (T.INT,))


def test_explicit_flow_field_names():
    @rt.record("main::Odd", fields=("class_x",), names=("class",))
    class Odd(rt.Record):
        __slots__ = ("class_x",)

    rt.field_types(Odd, (T.INT,))
    assert decode(T.Named(Odd), {"class": 1}) == Odd(1) and to_json(Odd(1)) == {"class": 1}
    assert rt.show(Odd(1)) == "Odd { class: 1 }"


def test_keyword_slot_names_work():
    @rt.record("main::Kw", fields=("from", "to"))
    class Kw(rt.Record):
        __slots__ = ("from", "to")

    k = Kw(1, 2)
    assert getattr(k, "from") == 1 and k == Kw(1, 2) and rt.show(k) == "Kw { from: 1, to: 2 }"
