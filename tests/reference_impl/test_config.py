"""Configuration: server ids and tool policies are checked before anything connects (ERR-3, POL-9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference_impl import ConfigurationError, ServerConfig, ToolPolicy, open_toolset
from reference_impl._config import check_server_id, validate_servers

from .servers import memory, raw_server, tool


def test_omitted_policy_fields_take_the_specified_defaults() -> None:
    for policy in (ToolPolicy(), ToolPolicy.from_wire(None), ToolPolicy.from_wire({})):
        assert policy.mode == "auto"
        assert policy.allowed_tools == ()
        assert policy.denied_tools == ()
        assert policy.pinned_tools == ()
        assert policy.max_active_tools == 24
        assert policy.side_effects == "allow"


def test_a_wire_policy_keeps_every_field_it_is_given() -> None:
    policy = ToolPolicy.from_wire(
        {
            "mode": "allowlist",
            "allowedTools": ["a", "b"],
            "deniedTools": ["c"],
            "pinnedTools": ["a"],
            "maxActiveTools": 96,
            "sideEffects": "readOnly",
        }
    )
    assert policy == ToolPolicy(
        mode="allowlist",
        allowed_tools=("a", "b"),
        denied_tools=("c",),
        pinned_tools=("a",),
        max_active_tools=96,
        side_effects="readOnly",
    )


@pytest.mark.parametrize("maximum", [0, 1, 24, 96])
def test_max_active_tools_from_zero_to_ninety_six_is_accepted(maximum: int) -> None:
    assert ToolPolicy(max_active_tools=maximum).max_active_tools == maximum
    assert ToolPolicy.from_wire({"maxActiveTools": maximum}).max_active_tools == maximum


@pytest.mark.parametrize("maximum", [-1, 97, True, False, 5.0, "5", None])
def test_max_active_tools_outside_zero_to_ninety_six_or_not_an_integer_is_a_configuration_error(maximum: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"maxActiveTools must be an integer from 0 to 96"):
        ToolPolicy.from_wire({"maxActiveTools": maximum})
    with pytest.raises(ConfigurationError, match=r"maxActiveTools"):
        ToolPolicy(max_active_tools=maximum)


@pytest.mark.parametrize("mode", ["Auto", "allow", "", None, 1])
def test_an_unknown_mode_is_a_configuration_error(mode: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"servers\[0\]\.policy\.mode must be one of"):
        ToolPolicy.from_wire({"mode": mode}, "servers[0].policy")
    with pytest.raises(ConfigurationError, match=r"mode"):
        ToolPolicy(mode=mode)


@pytest.mark.parametrize("side_effects", ["readonly", "write", "", None])
def test_an_unknown_side_effects_value_is_a_configuration_error(side_effects: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"sideEffects must be one of \['allow', 'readOnly'\]"):
        ToolPolicy.from_wire({"sideEffects": side_effects})
    with pytest.raises(ConfigurationError, match=r"sideEffects"):
        ToolPolicy(side_effects=side_effects)


@pytest.mark.parametrize("field", ["allowedTools", "deniedTools", "pinnedTools"])
@pytest.mark.parametrize("value", ["search", {"search": True}, 3, None])
def test_a_policy_list_that_is_not_a_list_is_a_configuration_error(field: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=rf"policy\.{field} must be a list of tool names"):
        ToolPolicy.from_wire({field: value})


@pytest.mark.parametrize("field", ["allowedTools", "deniedTools", "pinnedTools"])
def test_a_policy_list_holding_a_non_string_is_a_configuration_error_naming_the_entry(field: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"policy\.{field}\[1\] must be a string, got 7"):
        ToolPolicy.from_wire({field: ["ok", 7]})


@pytest.mark.parametrize("attribute", ["allowed_tools", "denied_tools", "pinned_tools"])
def test_a_policy_built_in_python_checks_its_lists_too(attribute: str) -> None:
    not_a_list: dict[str, Any] = {attribute: "search"}
    with pytest.raises(ConfigurationError, match=r"must be a list of tool names"):
        ToolPolicy(**not_a_list)
    holding_none: dict[str, Any] = {attribute: ("ok", None)}
    with pytest.raises(ConfigurationError, match=r"must be a string"):
        ToolPolicy(**holding_none)


def test_a_wire_policy_that_is_not_an_object_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"policy must be an object"):
        ToolPolicy.from_wire(["auto"])


def test_a_wire_policy_with_an_unknown_field_is_a_configuration_error_listing_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown fields \['maxTools'\]; expected some of"):
        ToolPolicy.from_wire({"maxTools": 3})


@pytest.mark.parametrize("server_id", ["github", "a", "A-b_9", "a_", "_a", "-"])
def test_server_ids_of_ascii_letters_digits_dashes_and_single_underscores_are_valid(server_id: str) -> None:
    assert check_server_id(server_id, "id") == server_id


@pytest.mark.parametrize(
    ("server_id", "message"),
    [
        ("", "non-empty string of ASCII letters"),
        ("a__b", "must not contain '__'"),
        ("__", "must not contain '__'"),
        ("gíthub", "non-empty string of ASCII letters"),
        ("工单", "non-empty string of ASCII letters"),
        ("a b", "non-empty string of ASCII letters"),
        ("a.b", "non-empty string of ASCII letters"),
        ("a\n", "non-empty string of ASCII letters"),
        (None, "must be a string"),
        (5, "must be a string"),
    ],
)
def test_a_malformed_server_id_is_a_configuration_error(server_id: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        check_server_id(server_id, "servers[0].id")


def test_a_server_id_used_twice_in_a_run_is_a_configuration_error() -> None:
    servers = [memory("gh", []), memory("other", []), memory("gh", [])]
    with pytest.raises(ConfigurationError, match=r"servers\[2\]\.id 'gh' is used by another server"):
        validate_servers(servers)


def test_a_policy_that_is_not_a_tool_policy_is_a_configuration_error() -> None:
    server = ServerConfig(id="gh", target=memory("gh", []).target, policy={"mode": "auto"})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"servers\[0\]\.policy must be a ToolPolicy"):
        validate_servers([server])


def test_a_policy_altered_after_construction_is_checked_again_when_the_run_opens() -> None:
    policy = ToolPolicy()
    object.__setattr__(policy, "max_active_tools", 200)
    with pytest.raises(ConfigurationError, match=r"servers\[0\]\.policy\.maxActiveTools"):
        validate_servers([memory("gh", [], policy=policy)])


@pytest.mark.parametrize("bad_id", ["", "a__b", "ümlaut"])
async def test_a_run_with_a_bad_server_id_fails_before_any_server_is_started(tmp_path: Path, bad_id: str) -> None:
    good = raw_server(tmp_path, "good", [[tool("search")]])
    bad = raw_server(tmp_path, "bad", [[tool("search")]])
    with pytest.raises(ConfigurationError):
        async with open_toolset([good.config("good"), bad.config(bad_id)]):
            pytest.fail("the run must not open")
    assert not good.started
    assert not bad.started


async def test_a_run_with_a_duplicate_server_id_fails_before_any_server_is_started(tmp_path: Path) -> None:
    first = raw_server(tmp_path, "first", [[tool("search")]])
    second = raw_server(tmp_path, "second", [[tool("search")]])
    with pytest.raises(ConfigurationError, match=r"'gh' is used by another server"):
        async with open_toolset([first.config("gh"), second.config("gh")]):
            pytest.fail("the run must not open")
    assert not first.started
    assert not second.started
