"""Runtime values: construction, immutability, equality/hash/order, Flow text, persistence."""

import pickle
from decimal import Decimal

import pytest

import flowrt as rt
from flowrt import (
    STD_CLASSES,
    EMPTY_DICT,
    EMPTY_LIST,
    EMPTY_SET,
    NONE,
    Dict,
    Duration,
    Err,
    Failed,
    Hole,
    HostToken,
    Instant,
    List,
    Malformed,
    NotRun,
    Ok,
    Set,
    Some,
    Unknown,
    dict_of,
    list_of,
    set_of,
    show,
)


@rt.record("main::Item", fields=("name", "price"))
class Item(rt.Record):
    __slots__ = ("name", "price")


class Report(rt.Enum):
    __slots__ = ()


@rt.variant("main::Report", "Resolved", tag=0, fields=("_0",))
class Resolved(Report):
    __slots__ = ("_0",)


@rt.variant("main::Report", "Moved", tag=1, fields=("from_", "to"))
class Moved(Report):
    __slots__ = ("from_", "to")


@rt.variant("main::Report", "Empty", tag=2, fields=())
class Empty(Report):
    __slots__ = ()


rt.unit_variant(Empty)


@rt.variant("main::Report", "Pair", tag=3, fields=("_0", "_1"))
class Pair(Report):
    __slots__ = ("_0", "_1")


def test_record_init_is_positional_and_fields_are_readable():
    it = Item("pen", Decimal("1.50"))
    assert (it.name, it.price) == ("pen", Decimal("1.50"))
    assert Item.__match_args__ == ("name", "price")
    match it:
        case Item(n, p):
            assert (n, p) == ("pen", Decimal("1.50"))


def test_classes_carry_flow_metadata_and_a_module_class_table_finds_them():
    assert Item.__flow_decl__ == "main::Item" and Item.__flow_ctor__ == "Item"
    assert Item.__flow_named__ and Item.__flow_fields__ == ("name", "price")
    assert Moved.__flow_tag__ == 1 and Moved.__flow_named__ and not Resolved.__flow_named__
    assert Report.__flow_variants__ == {"Resolved": Resolved, "Moved": Moved, "Empty": Empty, "Pair": Pair}
    table = rt.class_table(test_values_are_immutable)  # this module's globals
    assert table[("main::Report", "Moved")] is Moved and table[("main::Item", "Item")] is Item
    mine = {k for k in table if k[0].startswith("main::")}
    assert mine == {("main::Item", "Item"), *((("main::Report", c)) for c in Report.__flow_variants__)}
    # std's built-in classes come from the shared fallback table, in every table
    assert table[("std@v1/option::Option", "None")] is rt.None_
    assert table[("std@v1/tool::ToolProblem", "NotRun")] is NotRun


def test_decorating_a_class_registers_it_nowhere():
    @rt.record("main::Item", fields=("other",))
    class OtherItem(rt.Record):
        __slots__ = ("other",)

    assert ("main::Item", "Item") not in STD_CLASSES
    assert rt.class_table(test_values_are_immutable)[("main::Item", "Item")] is Item
    assert rt.class_table(OtherItem)[("main::Item", "Item")] is OtherItem


def test_a_class_table_refuses_two_classes_for_one_constructor():
    @rt.record("main::Item", fields=("other",))
    class OtherItem(rt.Record):
        __slots__ = ("other",)

    table = rt.ClassTable([Item])
    table.add(Item)  # the same class again is fine
    with pytest.raises(ValueError, match="two classes for the constructor main::Item.Item"):
        table.add(OtherItem)
    with pytest.raises(TypeError):
        table.add(Report)  # an enum's base class is no constructor


def test_values_are_immutable():
    it = Item("a", 1)
    with pytest.raises(AttributeError):
        it.name = "b"
    with pytest.raises(AttributeError):
        del it.name
    with pytest.raises(AttributeError):
        Ok(1)._0 = 2
    with pytest.raises(AttributeError):
        Duration(1).nanos = 2
    with pytest.raises(AttributeError):
        EMPTY_DICT._m = None


def test_unit_variant_has_one_shared_instance():
    assert rt.unit_variant(Empty) is Empty.INSTANCE
    assert NONE is rt.None_.INSTANCE and Empty() == Empty.INSTANCE


def test_structural_equality_and_hash():
    assert Item("a", 1) == Item("a", 1) and hash(Item("a", 1)) == hash(Item("a", 1))
    assert Item("a", 1) != Item("a", 2)
    assert Ok(1) != Err(1) and Some(1) != Ok(1)
    assert {Ok(list_of([1])), Ok(list_of([1]))} == {Ok(list_of([1]))}
    assert dict_of({"a": 1}) == dict_of([("a", 1)]) and hash(dict_of({"a": 1})) == hash(dict_of({"a": 1}))
    assert set_of([1, 2]) == set_of([2, 1, 2]) and hash(set_of([1, 2])) == hash(set_of([2, 1]))
    assert HostToken("b::Page", "t1") == HostToken("b::Page", "t1") != HostToken("b::Tab", "t1")
    assert Duration(5) == Duration(5) and Instant(5) != Duration(5)


def test_records_order_by_fields_in_order():
    assert Item("a", 9) < Item("b", 0) < Item("b", 1)
    assert sorted([Item("b", 1), Item("a", 2), Item("b", 0)]) == [Item("a", 2), Item("b", 0), Item("b", 1)]


def test_enum_values_order_by_tag_then_payload():
    assert Resolved("z") < Moved("a", "b") < Empty.INSTANCE < Pair(0, 0)
    assert Pair(1, 2) < Pair(1, 3) and Resolved("a") <= Resolved("a")
    assert NONE < Some(-100) and Ok(5) < Err(0) and Some(1) < Some(2)
    assert Failed(1) < Malformed("a") < NotRun("a") < Unknown("a")


def test_collections_order_like_flow_data():
    assert list_of([1, 2]) < list_of([1, 2, 0]) < list_of([1, 3])
    assert dict_of({"a": 2}) < dict_of({"b": 1}) and dict_of({"a": 1}) < dict_of({"a": 2})
    assert set_of([1, 5]) < set_of([2]) and EMPTY_SET < set_of([0])
    assert Duration(1) < Duration(2) and Instant(3) > Instant(2)
    assert sorted([True, False]) == [False, True]
    assert (1, "b") < (1, "c") and [None] == [None]


def test_dict_and_set_iterate_in_sorted_order():
    d = dict_of([("b", 2), ("a", 1), ("c", 3)])
    assert list(d) == ["a", "b", "c"] and d.values() == (1, 2, 3)
    assert list(set_of([3, 1, 2])) == [1, 2, 3]


def test_not_run_is_both_a_flow_value_and_raisable():
    with pytest.raises(NotRun) as info:
        raise NotRun("service down")
    e = info.value
    assert e == NotRun("service down") and e._0 == "service down"
    assert str(e) == "service down" and repr(e) == 'NotRun("service down")'
    assert isinstance(e, rt.ToolProblem) and isinstance(e, Exception)
    assert Err(e) == Err(NotRun("service down")) and hash(e) == hash(NotRun("service down"))
    match Err(e):
        case Err(NotRun(reason)):
            assert reason == "service down"


@pytest.mark.parametrize(
    "value, text",
    [
        ("plain", '"plain"'),
        ('a"b\n\t\\', r'"a\"b\n\t\\"'),
        ("\x01", r'"\u{1}"'),
        ("héllo ☃", '"héllo ☃"'),
        (42, "42"),
        (-7, "-7"),
        (Decimal("1.50"), "1.50"),
        (Decimal("1E-7"), "0.0000001"),
        (Decimal("-0.5"), "-0.5"),
        (True, "true"),
        (False, "false"),
        (None, "()"),
        (b'a"\x00\n', r'b"a\"\x00\n"'),
        (Duration(250_000_000), "250ms"),
        (Duration(5_000_000_000), "5s"),
        (Duration(90 * 10**9), "90s"),
        (Duration(3_600 * 10**9), "1h"),
        (Duration(1500), "1500ns"),
        (Duration(0), "0s"),
        (Instant(1_700_000_000 * 10**9), "instant.from_unix_nanos(1700000000000000000)"),
        (Instant(-500), "instant.from_unix_nanos(-500)"),
        (Decimal("3"), "decimal.from_int(3)"),
        (Decimal("-1E+2"), "decimal.from_int(-100)"),
        ((1, "x"), '(1, "x")'),
        (list_of([1, 2]), "[1, 2]"),
        (EMPTY_LIST, "[]"),
        (dict_of({"k": 1, "a": 2}), '["a": 2, "k": 1]'),
        (EMPTY_DICT, "[:]"),
        (set_of([2, 1]), "set.from_list([1, 2])"),
        (EMPTY_SET, "set.from_list([])"),
        (Item("pen", Decimal("1.50")), 'Item { name: "pen", price: 1.50 }'),
        (Ok(Resolved("q")), 'Ok(Resolved("q"))'),
        (NONE, "None"),
        (Some(NONE), "Some(None)"),
        (Empty.INSTANCE, "Empty"),
        (Moved("a", "b"), 'Moved { from: "a", to: "b" }'),
        (Pair(1, list_of(["x"])), 'Pair(1, ["x"])'),
        (Err(Failed(Empty.INSTANCE)), "Err(Failed(Empty))"),
        (
            Err(Unknown("process ended while the call was out")),
            'Err(Unknown("process ended while the call was out"))',
        ),
        (HostToken("browser::Page", "p-17"), "<Page p-17>"),
        (Hole("ab12"), "<hole blake3:ab12>"),
    ],
)
def test_show_renders_flow_text(value, text):
    assert show(value) == text


def test_show_writes_integers_beyond_pythons_conversion_limit():
    assert show(10**5000) == "1" + "0" * 5000
    assert show(-(10**4321) - 7) == "-1" + "0" * 4320 + "7"
    assert show(list_of([10**8000 + 1])) == "[1" + "0" * 7999 + "1]"


def test_repr_of_flow_classes_is_flow_text():
    assert repr(Item("a", 1)) == 'Item { name: "a", price: 1 }'
    assert repr(dict_of({1: "x"})) == '[1: "x"]' and repr(Duration(1000)) == "1us"


def test_show_renders_unknown_objects_sanely():
    class Task:
        def __flow_text__(self):
            return "<task root/1>"

    assert show(Task()) == "<task root/1>"
    assert show(object()) == "<object>"
    assert show(len) == "<function len>"


def test_lists_are_persistent():
    a = list_of([1, 2])
    b = a.append(3)
    assert list(a) == [1, 2] and list(b) == [1, 2, 3]
    d1 = dict_of({"a": 1})
    d2 = d1.set("b", 2)
    assert len(d1) == 1 and len(d2) == 2 and d1.remove("a") == EMPTY_DICT and len(d1) == 1
    s1 = set_of([1])
    s2 = s1.add(2)
    assert list(s1) == [1] and list(s2) == [1, 2]


def test_hundred_thousand_appends_are_not_quadratic():
    notes = EMPTY_LIST
    for i in range(100_000):
        notes = notes.extend(list_of((i,)))  # `notes ++ [i]`
    assert len(notes) == 100_000 and notes[99_999] == 99_999


def test_hundred_thousand_dict_inserts():
    d = EMPTY_DICT
    for i in range(100_000):
        d = d.set(i, i)
    assert len(d) == 100_000 and d[12345] == 12345


def test_values_pickle_round_trip():
    for v in [
        Item("a", list_of([1])),
        NONE,
        Ok(Some(2)),
        NotRun("x"),
        dict_of({1: 2}),
        set_of([1]),
        Duration(3),
        Instant(4),
        HostToken("a::B", "t"),
        Hole("h"),
    ]:
        assert pickle.loads(pickle.dumps(v)) == v
    assert pickle.loads(pickle.dumps(NONE)) == NONE


def test_isinstance_checks_of_collection_types():
    assert isinstance(EMPTY_LIST, List) and isinstance(EMPTY_DICT, Dict) and isinstance(EMPTY_SET, Set)
    d = dict_of({"a": 1})
    assert dict_of(d) is d and list_of(list_of([1])) == list_of([1])


def test_record_requires_slots_for_its_fields():
    with pytest.raises(TypeError):

        @rt.record("main::Bad", fields=("x",))
        class Bad(rt.Record):
            __slots__ = ()
