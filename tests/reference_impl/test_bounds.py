"""Error texts quote what they refuse within bounds, whatever size the caller gave it."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl import ConfigurationError, ToolPolicy
from reference_impl._bounds import clip, deeper_than, listed, shown, unencodable
from reference_impl._discovery import InvalidDiscoveryArguments, parse_arguments


def test_a_long_text_is_cut_saying_how_much_was_left_out() -> None:
    assert clip("x" * 100, 80) == "x" * 80 + "… 20 more characters"
    assert clip("short") == "short"


def test_a_list_is_quoted_by_its_first_items_and_a_count_of_the_rest() -> None:
    assert listed([f"s{i}" for i in range(20_000)]) == ", ".join(f"'s{i}'" for i in range(10)) + ", … 19,990 more"
    assert shown(list(range(12))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, … 2 more]"
    assert shown({str(i): i for i in range(11)}).endswith(", … 1 more}")
    assert shown("é" * 3) == repr("é" * 3)


def test_twenty_thousand_unknown_server_ids_make_an_error_of_a_few_hundred_characters() -> None:
    strangers = [f"server-{i}" for i in range(20_000)]

    with pytest.raises(InvalidDiscoveryArguments) as refused:
        parse_arguments({"query": "x", "server_ids": strangers}, frozenset({"github"}))

    message = str(refused.value)
    assert len(message) < 400
    assert "'server-9', … 19,990 more], not servers of this run; known servers: ['github']" in message


@pytest.mark.parametrize(
    "arguments",
    [{"query": "q" * 1_000_000, "x": 1}, {"query": ["q"] * 100_000}, {"query": "q", "limit": "9" * 1_000_000}],
)
def test_hostile_discovery_arguments_are_refused_in_a_short_message(arguments: dict[str, Any]) -> None:
    with pytest.raises(InvalidDiscoveryArguments) as refused:
        parse_arguments(arguments, frozenset({"github"}))

    assert len(str(refused.value)) < 400


def test_a_policy_with_thousands_of_unknown_fields_is_refused_in_a_short_message() -> None:
    with pytest.raises(ConfigurationError) as refused:
        ToolPolicy.from_wire({f"field{i}": i for i in range(5000)})

    assert len(refused.value.message) < 400
    assert "… 4,990 more" in refused.value.message


def test_strings_utf8_cannot_encode_are_found_with_their_path() -> None:
    assert unencodable({"a": [1, {"b": "\ud800"}]}) == "$.a[1].b"
    assert unencodable({"\udfff": 1}, "arguments") == "arguments (a key)"
    assert unencodable({"fine": ["é", "😀"]}) is None


def test_nesting_is_measured_without_recursion() -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]

    assert deeper_than(deep, 128)
    assert not deeper_than([[1]], 2)
    assert deeper_than([[[1]]], 2)
