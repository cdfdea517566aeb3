from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_servers import FleetArgumentError, FleetSpec, ServerSpec, generate_tools, spec_from_dict, spec_to_dict
from mock_servers.strategies import fleet_specs, server_specs, tool_policies, tool_specs

HOST_ID = re.compile(r"^[A-Za-z0-9_-]+$")


@given(fleet_specs(max_servers=5, max_tools=30, explicit_tools=True, faults=True))
@settings(max_examples=40, deadline=None)
def test_generated_fleets_are_valid_specs_with_host_safe_ids(spec: FleetSpec) -> None:
    assert spec_from_dict(spec_to_dict(spec)) == spec
    ids = [s.id for s in spec.servers]
    assert len(set(ids)) == len(ids)
    assert all(HOST_ID.fullmatch(i) and "__" not in i and not i.endswith("_") for i in ids)
    for server in spec.servers:
        assert len(generate_tools(server)) >= server.tool_count


@given(server_specs(faults=True, raw=True, explicit_tools=True))
@settings(max_examples=25, deadline=None)
def test_generated_raw_servers_generate_catalogs(server: ServerSpec) -> None:
    assert server.raw
    generate_tools(server)


@given(st.data())
@settings(max_examples=30, deadline=None)
def test_policies_use_the_wire_form_and_mostly_the_servers_own_tool_names(data: st.DataObject) -> None:
    server = data.draw(server_specs(min_tools=1, max_tools=15))
    policy = data.draw(tool_policies(server))
    assert policy["mode"] in ("auto", "allowlist", "all")
    assert set(policy) <= {"mode", "allowedTools", "deniedTools", "pinnedTools", "maxActiveTools", "sideEffects"}
    names = {t["name"] for t in generate_tools(server)} | {"no_such_tool"}
    for listed in (policy.get("allowedTools", []), policy.get("deniedTools", []), policy.get("pinnedTools", [])):
        assert set(listed) <= names
    assert 0 <= policy.get("maxActiveTools", 0) <= 96
    assert policy.get("sideEffects", "allow") in ("allow", "readOnly")


def test_fleets_shrink_to_one_small_server_named_s0() -> None:
    from hypothesis import find

    smallest = find(fleet_specs(max_servers=4, max_tools=20), lambda spec: len(spec.servers) >= 1)
    assert [s.id for s in smallest.servers] == ["s0"]
    assert smallest.servers[0].tool_count == 0
    assert smallest.servers[0].domain == "code_hosting"


def test_policies_shrink_to_auto_mode_alone() -> None:
    from hypothesis import find

    assert find(tool_policies(ServerSpec(id="s0", tool_count=5)), lambda p: True) == {"mode": "auto"}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: fleet_specs(min_servers=3, max_servers=2), "max_servers must be"),
        (lambda: fleet_specs(max_tools=-1), "max_tools must be"),
        (lambda: fleet_specs(max_servers="4"), "max_servers must be an integer, got '4'"),  # type: ignore[arg-type]
        (lambda: fleet_specs(max_servers=200, max_tools=1000), "must stay within the fleet limit of 100,000 tools"),
        (lambda: server_specs(server_id="bad__id"), "server_id must be"),
        (lambda: server_specs(domains=["knitting"]), "domains must be"),
        (lambda: tool_specs(raw="yes"), "raw must be True or False"),  # type: ignore[arg-type]
        (lambda: tool_policies("github"), "server must be a ServerSpec"),  # type: ignore[arg-type]
    ],
)
def test_invalid_strategy_arguments_fail_at_once_naming_the_argument(make: Any, message: str) -> None:
    with pytest.raises(FleetArgumentError, match=re.escape(message)):
        make()
