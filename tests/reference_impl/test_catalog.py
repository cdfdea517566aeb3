"""The catalog: qualified names, name mapping, full definitions, collisions and malformed tools."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from reference_impl import (
    Catalog,
    ConfigurationError,
    ServerConnectionError,
    ToolPolicy,
    exposed_name,
    open_toolset,
    qualified_name,
)

from .servers import memory, numbered_tools, tool

RICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "repo": {"type": "string", "description": "owner/name"},
        "labels": {"type": "array", "items": {"type": "string"}},
        "limit": {"type": "integer", "minimum": 1},
    },
    "required": ["repo"],
    "additionalProperties": False,
}


def _sha8(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def test_a_qualified_name_is_the_server_id_two_underscores_and_the_original_name() -> None:
    assert qualified_name("github", "search") == "github__search"
    assert qualified_name("linear", "search") == "linear__search"


@pytest.mark.parametrize("name", ["github__search", "a-b__c_d-9", "x" * 64])
def test_a_name_that_meets_the_provider_rule_is_exposed_unchanged(name: str) -> None:
    assert exposed_name(name) == name


def test_a_name_with_other_characters_has_them_replaced_and_gets_a_hash_suffix() -> None:
    # "." is outside [A-Za-z0-9_-]: "gh__get.file" -> "gh__get_file", then "_" + sha256[:8].
    assert exposed_name("gh__get.file") == "gh__get_file_" + _sha8("gh__get.file")
    assert exposed_name("gh__get.file") == "gh__get_file_a8ff9398"


def test_a_chinese_tool_name_is_mapped_character_by_character() -> None:
    # "gh__搜索": both Chinese characters become "_", giving "gh____", then "_" + hash.
    assert exposed_name("gh__搜索") == "gh_____" + _sha8("gh__搜索")


def test_a_name_longer_than_64_characters_is_cut_to_55_plus_a_hash_suffix() -> None:
    long = "s__" + "a" * 62  # 65 characters
    mapped = exposed_name(long)
    assert mapped == long[:55] + "_" + _sha8(long)
    assert len(mapped) == 64
    assert exposed_name("s__" + "a" * 61) == "s__" + "a" * 61  # exactly 64: unchanged


def test_two_names_that_map_to_the_same_characters_stay_different() -> None:
    assert exposed_name("gh__a.b") != exposed_name("gh__a b")


def _listing(*tools: Any) -> list[Any]:
    return list(tools)


def test_entries_are_ordered_by_qualified_name_whatever_the_listing_order() -> None:
    catalog = Catalog.from_listings({"zeta": _listing(tool("b"), tool("a")), "alpha": _listing(tool("z"), tool("Y"))})
    assert [e.qualified_name for e in catalog.entries] == ["alpha__Y", "alpha__z", "zeta__a", "zeta__b"]
    assert [e.index for e in catalog.entries] == [0, 1, 2, 3]
    assert len(catalog) == 4
    assert [e.name for e in catalog.by_server["zeta"]] == ["a", "b"]


def test_an_entry_keeps_server_id_original_name_annotations_and_the_complete_definition() -> None:
    raw = {
        "name": "search.code",
        "description": "Search code",
        "inputSchema": RICH_SCHEMA,
        "annotations": {"readOnlyHint": True, "title": "Search"},
    }
    (entry,) = Catalog.from_listings({"gh": [raw]}).entries
    assert entry.server_id == "gh"
    assert entry.name == "search.code"
    assert entry.qualified_name == "gh__search.code"
    assert entry.exposed_name == exposed_name("gh__search.code")
    assert entry.annotations == {"readOnlyHint": True, "title": "Search"}
    assert entry.read_only
    assert entry.definition() == {"name": entry.exposed_name, "description": "Search code", "inputSchema": RICH_SCHEMA}


def test_a_missing_description_becomes_an_empty_string() -> None:
    (entry,) = Catalog.from_listings({"gh": [{"name": "x", "inputSchema": {"type": "object"}}]}).entries
    assert entry.description == ""
    assert entry.annotations is None
    assert not entry.read_only


@pytest.mark.parametrize(
    ("annotations", "read_only"),
    [
        ({"readOnlyHint": True}, True),
        ({"readOnlyHint": False}, False),
        ({}, False),
        ({"destructiveHint": False}, False),
        ({"readOnlyHint": "true"}, False),
        ({"readOnlyHint": 1}, False),
        ({"readOnlyHint": None}, False),
        ("not an object", False),
    ],
)
def test_read_only_is_true_only_for_the_json_value_true(annotations: Any, read_only: bool) -> None:
    raw = {"name": "x", "inputSchema": {"type": "object"}, "annotations": annotations}
    (entry,) = Catalog.from_listings({"gh": [raw]}).entries
    assert entry.read_only is read_only


def test_tools_of_ids_a_underscore_and_a_whose_qualified_names_coincide_are_a_configuration_error() -> None:
    # "a_" + "__" + "x" and "a" + "__" + "_x" are both "a___x".
    with pytest.raises(ConfigurationError, match=r"'x' of server 'a_' and '_x' of server 'a'|'_x' of server 'a'"):
        Catalog.from_listings({"a_": [tool("x")], "a": [tool("_x")]})


def test_a_server_listing_one_name_twice_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"would both be named 'gh__search'"):
        Catalog.from_listings({"gh": [tool("search"), tool("search", "again")]})


def test_a_mapped_name_that_equals_another_tools_name_is_a_configuration_error() -> None:
    mapped = exposed_name("gh__get.file")  # gh__get_file_a8ff9398
    with pytest.raises(ConfigurationError, match=rf"would both be named '{mapped}'"):
        Catalog.from_listings({"gh": [tool("get.file"), tool(mapped.removeprefix("gh__"))]})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("search", r"position 1: expected an object"),
        ({"inputSchema": {}}, r"position 1: 'name' must be a non-empty string, got None"),
        ({"name": "", "inputSchema": {}}, r"position 1: 'name' must be a non-empty string, got ''"),
        ({"name": 7, "inputSchema": {}}, r"position 1: 'name' must be a non-empty string, got 7"),
        ({"name": "x"}, r"position 1 \('x'\): 'inputSchema' must be an object, got None"),
        ({"name": "x", "inputSchema": "object"}, r"position 1 \('x'\): 'inputSchema' must be an object"),
        ({"name": "x", "inputSchema": {}, "description": 3}, r"position 1 \('x'\): 'description' must be a string"),
    ],
)
def test_a_malformed_raw_tool_is_a_connection_error_naming_the_server_and_the_tool(raw: Any, message: str) -> None:
    with pytest.raises(ServerConnectionError, match=r"server 'gh' listed a malformed tool at " + message) as caught:
        Catalog.from_listings({"gh": [tool("fine"), raw]})
    assert caught.value.server_id == "gh"
    assert caught.value.kind == "connection_error"


async def test_a_tool_left_out_of_the_first_round_keeps_its_complete_definition_in_the_catalog() -> None:
    tools = [*numbered_tools("filler", 12), tool("zz_deep", "A deep tool", schema=RICH_SCHEMA, read_only=False)]
    async with open_toolset([memory("gh", tools)]) as toolset:
        assert "gh__zz_deep" not in toolset.active_names
        entry = next(e for e in toolset.catalog.entries if e.name == "zz_deep")
        assert entry.definition() == {"name": "gh__zz_deep", "description": "A deep tool", "inputSchema": RICH_SCHEMA}
        assert entry.annotations == {"readOnlyHint": False}
        assert len(toolset.catalog) == 13


async def test_two_servers_offering_the_same_original_name_give_two_qualified_names() -> None:
    servers = [memory("github", [tool("search")]), memory("linear", [tool("search")])]
    async with open_toolset(servers) as toolset:
        names = [d["name"] for d in toolset.definitions()]
        assert names == ["search_mcp_tools", "github__search", "linear__search"]


async def test_colliding_qualified_names_across_servers_fail_the_run_as_a_configuration_error() -> None:
    servers = [memory("a_", [tool("x")]), memory("a", [tool("_x")])]
    with pytest.raises(ConfigurationError, match=r"a___x"):
        async with open_toolset(servers):
            pytest.fail("the run must not open")


async def test_policy_names_are_original_names_not_qualified_ones() -> None:
    policy = ToolPolicy(mode="allowlist", allowed_tools=("search",))
    async with open_toolset([memory("gh", [tool("search"), tool("other")], policy=policy)]) as toolset:
        assert toolset.active_names == ("gh__search",)
    with pytest.raises(ConfigurationError, match=r"does not offer \['gh__search'\]"):
        async with open_toolset([memory("gh", [tool("search")], policy=ToolPolicy(pinned_tools=("gh__search",)))]):
            pytest.fail("the run must not open")
