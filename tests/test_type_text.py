"""Type texts read back as descriptors (`flowrt.parse_type_text`): what restores a checkpoint's
type arguments and admits a delivered reply at a generic Tool call's recorded type."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowrt as rt
from flowrt import T, TypeTextError, parse_type_text, type_text


@rt.record("a::Item", fields=("n",))
class ItemA(rt.Record):
    __slots__ = ("n",)


@rt.record("b::Item", fields=("n",))
class ItemB(rt.Record):
    __slots__ = ("n",)


@rt.record("a::Box", fields=("n",))
class Box(rt.Record):
    __slots__ = ("n",)


class Shape(rt.Enum):
    __slots__ = ()


@rt.variant("a::Shape", "Dot", tag=0, fields=())
class Dot(Shape):
    __slots__ = ()


PAGE = T.Token("web::Page")
PROGRAM = rt.class_table({"Box": Box, "Shape": Shape, "Page": PAGE, "ItemA": ItemA})
TWO_ITEMS = rt.class_table({"ItemA": ItemA, "ItemB": ItemB})

_atoms = st.sampled_from(
    [
        T.INT,
        T.TEXT,
        T.DECIMAL,
        T.BOOL,
        T.UNIT,
        T.BYTES,
        T.DURATION,
        T.INSTANT,
        T.Named(Box),
        T.Named(Shape),
        PAGE,
        T.Named(ItemA),
    ]
)
descriptors = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.builds(T.ListOf, inner),
        st.builds(T.SetOf, inner),
        st.builds(T.DictOf, inner, inner),
        st.builds(T.OptionOf, inner),
        st.builds(T.ResultOf, inner, inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: T.TupleOf(*xs)),
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(descriptors)
def test_every_descriptor_reads_back_from_its_text(d):
    assert parse_type_text(type_text(d), PROGRAM) == d


def test_tool_types_and_enums_are_known_by_name_from_module_constants():
    assert parse_type_text("List<Page>", PROGRAM) == T.ListOf(PAGE)
    assert parse_type_text("Result<Shape, Text>", PROGRAM) == T.ResultOf(T.Named(Shape), T.TEXT)


def test_a_name_two_modules_declare_is_refused_naming_both():
    with pytest.raises(TypeTextError, match=r"more than one type of the program \(a::Item, b::Item\)"):
        parse_type_text("List<Item>", TWO_ITEMS)


@pytest.mark.parametrize(
    "text", ["Nope", "List<Int", "List<Int, Text>", "Int<Text>", "(Int, ", "Int>", "Page<Int>", "$0"]
)
def test_a_text_that_is_not_one_of_the_programs_types_is_refused(text):
    with pytest.raises(TypeTextError):
        parse_type_text(text, PROGRAM)


def test_a_text_nested_beyond_the_bound_is_refused_not_a_recursion_error():
    with pytest.raises(TypeTextError, match="nested too deeply"):
        parse_type_text("List<" * 5000 + "Int" + ">" * 5000, PROGRAM)
