"""std's @lang bodies (flowrt.data.lang): pure versions and the generator (`__tool`) versions."""

import re
from decimal import Decimal
from pathlib import Path

import pytest

import flowrt as rt
from flowrt import NONE, EMPTY_LIST, Duration, Fault, Instant, Some, dict_of, list_of, set_of
from flowrt.data import lang as L

STD = Path(__file__).resolve().parent.parent / "std"


def run(gen):
    """A minimal trampoline for tests: every yielded request is a generator object (an effectful
    call) run to completion, its result sent back."""
    try:
        req = next(gen)
        while True:
            req = gen.send(run(req))
    except StopIteration as stop:
        return stop.value


def effectful(f):
    """An effectful function value: a generator function computing f."""

    def g(*args):
        return f(*args)
        yield  # unreachable: its presence makes g a generator function

    return g


def test_every_std_lang_function_has_a_body_except_tasks():
    names = set()
    for f in STD.glob("*.flow"):
        names.update(
            m.group(1) + "_" + m.group(2)
            for m in re.finditer(r'@lang\("([a-z_]+)\.([a-z_]+)"', f.read_text())
        )
    assert names, "std/*.flow declares @lang functions"
    missing = sorted(n for n in names if not n.startswith("task_") and not hasattr(L, n))
    assert missing == []
    assert set(L.__all__) >= {n for n in names if not n.startswith("task_")}


def test_list_basics():
    xs = list_of([3, 1, 2])
    assert L.list_length(xs) == 3 and L.list_get(xs, 0) == Some(3) and L.list_get(xs, 3) is NONE
    assert L.list_get(xs, -1) is NONE
    assert L.list_append(xs, 4) == list_of([3, 1, 2, 4]) and xs == list_of([3, 1, 2])
    assert L.list_prepend(xs, 0) == list_of([0, 3, 1, 2])
    assert L.list_concat(xs, list_of([9])) == list_of([3, 1, 2, 9])
    assert L.list_concat(EMPTY_LIST, xs) is xs
    assert L.list_reverse(xs) == list_of([2, 1, 3]) and L.list_sort(xs) == list_of([1, 2, 3])
    assert L.list_slice(xs, -5, 2) == list_of([3, 1]) and L.list_slice(xs, 2, 1) == EMPTY_LIST
    assert L.list_range(2, 5) == list_of([2, 3, 4]) and L.list_range(5, 2) == EMPTY_LIST
    assert L.list_contains(xs, 2) and not L.list_contains(xs, 7)
    assert L.list_zip(xs, list_of(["a"])) == list_of([(3, "a")])
    assert L.list_sort_by(list_of(["bb", "a", "cc"]), len) == list_of(["a", "bb", "cc"])


def test_list_callbacks_pure_and_effectful_agree():
    xs = list_of([1, 2, 3, 4])
    cases = [
        (L.list_map, L.list_map__tool, (lambda x: x * 10,), list_of([10, 20, 30, 40])),
        (L.list_filter, L.list_filter__tool, (lambda x: x % 2 == 0,), list_of([2, 4])),
        (
            L.list_flat_map,
            L.list_flat_map__tool,
            (lambda x: list_of([x, x]),),
            list_of([1, 1, 2, 2, 3, 3, 4, 4]),
        ),
        (L.list_find, L.list_find__tool, (lambda x: x > 2,), Some(3)),
        (L.list_sort_by, L.list_sort_by__tool, (lambda x: -x,), list_of([4, 3, 2, 1])),
        (L.list_each, L.list_each__tool, (lambda x: None,), None),
    ]
    for pure, tool, (f,), want in cases:
        assert pure(xs, f) == want
        assert run(tool(xs, effectful(f))) == want
    assert L.list_fold(xs, 0, lambda a, x: a + x) == 10
    assert run(L.list_fold__tool(xs, 0, effectful(lambda a, x: a + x))) == 10


def test_effectful_find_stops_calling_at_the_first_match():
    seen = []

    def test(x):
        seen.append(x)
        return x == 2

    assert run(L.list_find__tool(list_of([1, 2, 3]), effectful(test))) == Some(2)
    assert seen == [1, 2]


def test_text_functions_work_on_code_points():
    assert L.text_length("héllo☃") == 6 and L.text_slice("héllo", 1, 3) == "él"
    assert L.text_split("a,b,,c", ",") == list_of(["a", "b", "", "c"])
    with pytest.raises(Fault):
        L.text_split("a", "")
    assert L.text_join(list_of(["a", "b"]), "-") == "a-b"
    assert L.text_index_of("abc", "c") == Some(2) and L.text_index_of("abc", "x") is NONE
    assert L.text_trim("  x \n") == "x" and L.text_to_upper("ab") == "AB" and L.text_to_lower("AB") == "ab"
    assert L.text_lines("a\r\nb\n") == list_of(["a", "b"]) and L.text_lines("") == EMPTY_LIST
    assert L.text_lines("a\n\nb") == list_of(["a", "", "b"])
    assert L.text_to_bytes("é") == b"\xc3\xa9" and L.text_replace("aXa", "a", "b") == "bXb"
    assert L.text_starts_with("abc", "ab") and L.text_ends_with("abc", "bc") and L.text_contains("abc", "b")


def test_int_and_decimal():
    assert L.int_div(-7, 2) == -4 and L.int_rem(-7, 2) == 1 and L.int_rem(7, -2) == -1
    with pytest.raises(Fault, match="integer division by zero"):
        L.int_div(1, 0)
    with pytest.raises(Fault):
        L.int_rem(1, 0)
    assert L.int_parse("-12") == Some(-12) and L.int_parse("1_0") is NONE and L.int_parse("٣") is NONE
    assert L.int_to_text(-5) == "-5" and L.int_to_decimal(2) == Decimal(2)
    assert L.decimal_add(Decimal("0.1"), Decimal("0.2")) == Decimal("0.3")
    big = Decimal("1" * 60)
    assert L.decimal_mul(big, big) == Decimal(int("1" * 60) ** 2)  # no rounding at 28 digits
    assert str(L.decimal_div(Decimal("1.00"), Decimal(4))) == "0.25"
    assert str(L.decimal_div(Decimal(2), Decimal(3))) == "0.6666666666666666666666666667"
    with pytest.raises(Fault, match="decimal division by zero"):
        L.decimal_div(Decimal(1), Decimal(0))
    assert L.decimal_parse("1.50") == Some(Decimal("1.50")) and L.decimal_parse("1e3") is NONE
    assert L.decimal_floor(Decimal("-1.5")) == -2 and L.decimal_to_text(Decimal("1E-3")) == "0.001"
    assert (
        str(L.decimal_round(Decimal("2.345"), 2)) == "2.34"
        and str(L.decimal_round(Decimal("2.355"), 2)) == "2.36"
    )
    assert L.decimal_neg(Decimal("1.5")) == Decimal("-1.5")


def test_bytes_bool_data():
    assert L.bytes_get(b"\x05", 0) == Some(5) and L.bytes_get(b"", 0) is NONE
    assert L.bytes_to_text(b"\xff") is NONE and L.bytes_to_text(b"ok") == Some("ok")
    assert L.bytes_to_hex(b"\x0a\xff") == "0aff" and L.bytes_slice(b"abc", 1, 9) == b"bc"
    assert L.bool_and(True, False) is False and L.bool_not(False) is True
    assert (
        L.data_compare(Some(1), rt.NONE) == 1 and L.data_compare(1, 1) == 0 and L.data_compare("a", "b") == -1
    )
    assert L.data_to_text(list_of(["a"])) == '["a"]' and L.data_lt(list_of([1]), list_of([1, 0]))


def test_dict_and_set():
    d = dict_of({"b": 2, "a": 1})
    assert L.dict_get(d, "a") == Some(1) and L.dict_get(d, "z") is NONE
    assert L.dict_keys(d) == list_of(["a", "b"]) and L.dict_values(d) == list_of([1, 2])
    assert L.dict_to_list(d) == list_of([("a", 1), ("b", 2)])
    assert (
        L.dict_insert(d, "c", 3) != d and L.dict_size(d) == 2 and L.dict_remove(d, "a") == dict_of({"b": 2})
    )
    assert L.dict_from_list(list_of([(1, "x"), (1, "y")])) == dict_of({1: "y"})
    assert L.dict_contains(d, "a") and L.dict_empty() == rt.EMPTY_DICT
    s = set_of([2, 1])
    assert L.set_to_list(s) == list_of([1, 2]) and L.set_insert(s, 3) == set_of([1, 2, 3])
    assert L.set_union(s, set_of([5])) == set_of([1, 2, 5]) and L.set_intersection(
        s, set_of([2, 9])
    ) == set_of([2])
    assert L.set_difference(s, set_of([1])) == set_of([2]) and L.set_remove(s, 1) == set_of([2])
    assert L.set_contains(s, 1) and L.set_size(s) == 2 and L.set_from_list(list_of([1, 1])) == set_of([1])


def test_duration_and_instant():
    a = Duration(1_000)
    assert L.duration_add(a, a) == Duration(2_000) and L.duration_scale(a, 3) == Duration(3_000)
    assert L.duration_sub(a, a) == Duration(0) and L.duration_neg(a) == Duration(-1_000)
    assert L.duration_to_nanos(L.duration_from_nanos(5)) == 5
    t = Instant(1_700_000_000 * 10**9)
    assert L.instant_add(t, a) == Instant(t.nanos + 1000) and L.instant_since(t, Instant(0)).nanos == t.nanos
    assert L.instant_to_text(t) == "2023-11-14T22:13:20Z" and L.instant_parse("2023-11-14T22:13:20Z") == Some(
        t
    )
    assert L.instant_parse("nope") is NONE and L.instant_to_unix_nanos(L.instant_from_unix_nanos(7)) == 7
