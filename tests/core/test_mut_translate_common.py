"""The translators' typed readers: each names the offending field path and the value's type in its error."""

from __future__ import annotations

import re

import pytest

from routeproof.core.errors import TranslationError
from routeproof.core.formats.translate_common import (
    _args_json,
    _int,
    _list,
    _merge_turns,
    _num,
    _obj,
    _only_keys,
    _opt_bool,
    _opt_int,
    _parsed_args,
    _request,
    _str,
    is_o_series,
)
from routeproof.core.types import Message, Role, TextBlock


class _Listish(list[int]):
    """A list subclass whose len() lies, as CrossHair's email.header._Accumulator did."""

    def __len__(self) -> int:
        return 0


def _raises(exact: str) -> pytest.RaisesExc[TranslationError]:
    return pytest.raises(TranslationError, match=f"^{re.escape(exact)}$")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("o1", True),
        ("o3-mini", True),
        ("openai/o4-mini", True),
        ("a/b/o1", True),
        ("o", False),
        ("o1x", False),
        ("gpt-4o", False),
        ("xo1", False),
        ("o1/gpt-4o", False),
    ],
)
def test_is_o_series_reads_the_last_path_segment(model: str, expected: bool) -> None:
    """Only a last path segment of 'o<digits>' alone or followed by '-' is a reasoning model."""
    assert is_o_series(model) is expected


def test_obj_names_field_and_type() -> None:
    """A non-object is refused with '<where> must be an object, got <type>'; an object is returned as is."""
    body = {"a": 1}
    assert _obj(body, "w") is body
    with _raises("messages[0] must be an object, got list"):
        _obj([], "messages[0]")


def test_list_names_field_and_type_and_reads_subclass_items() -> None:
    """A non-array is refused naming field and type; a list is returned as is; a subclass is read by iteration."""
    items = [1, 2]
    assert _list(items, "w") is items
    copied = _list(_Listish([3, 4]), "w")
    assert copied == [3, 4]
    assert type(copied) is list
    with _raises("tools must be an array, got dict"):
        _list({}, "tools")


def test_str_names_field_and_type() -> None:
    """A non-string is refused with '<where> must be a string, got <type>'."""
    assert _str("x", "w") == "x"
    with _raises("model must be a string, got int"):
        _str(3, "model")


@pytest.mark.parametrize("value", [True, False, "1", None])
def test_num_refuses_bools_and_non_numbers(value: object) -> None:
    """A bool or a non-number is refused naming field and type."""
    with _raises(f"temperature must be a number, got {type(value).__name__}"):
        _num(value, "temperature")


@pytest.mark.parametrize("value", [0, 7, 0.5])
def test_num_keeps_ints_and_floats(value: float) -> None:
    """Ints and floats pass through unchanged."""
    assert _num(value, "w") == value


@pytest.mark.parametrize("value", [True, False, -1, 1.0, "2", None])
def test_int_refuses_non_counts_showing_the_value(value: object) -> None:
    """A bool, a negative, a float or a non-number is refused showing its repr."""
    with _raises(f"usage.input_tokens must be a non-negative integer, got {value!r}"):
        _int(value, "usage.input_tokens")


@pytest.mark.parametrize("value", [0, 1, 10**12])
def test_int_keeps_non_negative_ints(value: int) -> None:
    """Zero and positive ints pass through unchanged."""
    assert _int(value, "w") == value


def test_opt_int_absent_is_zero_false_is_not() -> None:
    """None reads as 0, a count as itself, and False is refused naming the field."""
    assert _opt_int(None, "w") == 0
    assert _opt_int(5, "w") == 5
    with _raises("n must be a non-negative integer, got False"):
        _opt_int(False, "n")


def test_only_keys_names_the_first_foreign_key() -> None:
    """An allowed key set passes; a foreign key is refused as '<where>.<key> has no equivalent...'."""
    _only_keys({"a": 1, "b": 2}, frozenset({"a", "b"}), "body")
    with _raises("body.c has no equivalent in the other format"):
        _only_keys({"a": 1, "c": 2}, frozenset({"a", "b"}), "body")


def test_args_json_is_compact_and_names_a_non_object() -> None:
    """An object becomes compact JSON in key order; a non-object or non-JSON value is refused naming the field."""
    assert _args_json({"b": 1, "a": [1, 2]}, "w") == '{"b":1,"a":[1,2]}'
    with _raises("input must be an object, got str"):
        _args_json("x", "input")
    with pytest.raises(TranslationError, match=r"^input is not representable as JSON: ") as caught:
        _args_json({"x": float("nan")}, "input")
    assert caught.value.__cause__ is not None


def test_parsed_args_names_field_and_shows_the_first_80_characters() -> None:
    """Arguments that are not a JSON object are refused naming the field and quoting at most 80 characters."""
    assert _parsed_args('{"a": 1}', "w") == {"a": 1}
    text = "[" + "1," * 60 + "1]"
    with _raises(f"function.arguments is not a JSON object: {text[:80]!r}"):
        _parsed_args(text, "function.arguments")


def test_merge_turns_joins_only_adjacent_same_role_messages() -> None:
    """Adjacent messages of one role merge their content in order; a role change starts a new turn."""
    u1, u2 = Message.user("a"), Message.user("b")
    a1 = Message.assistant("c")
    merged = _merge_turns([u1, u2, a1, Message.user("d")])
    assert [m.role for m in merged] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert merged[0].content == (TextBlock(text="a"), TextBlock(text="b"))
    assert merged[1] == a1
    assert _merge_turns([]) == ()


def test_request_turns_a_value_error_into_a_translation_error() -> None:
    """A ChatRequest that refuses its fields becomes a TranslationError with the same text, chained."""
    assert _request([Message.user("hi")], max_tokens=5).max_tokens == 5
    with pytest.raises(TranslationError) as caught:
        _request([Message.user("hi")], max_tokens=5, temperature=9.0)
    assert isinstance(caught.value.__cause__, ValueError)
    assert str(caught.value) == str(caught.value.__cause__)


def test_opt_bool_names_the_field() -> None:
    """None and booleans pass; anything else is refused as '<where> must be a boolean'."""
    assert _opt_bool(None, "w") is None
    assert _opt_bool(True, "w") is True
    assert _opt_bool(False, "w") is False
    with _raises("stream must be a boolean"):
        _opt_bool(1, "stream")
