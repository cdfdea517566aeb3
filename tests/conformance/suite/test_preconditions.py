"""The controls a check runs before it blames its own sentence, against the reference and
against hosts that break the sentence the control names."""

from __future__ import annotations

import pytest

from conformance import Inconclusive, Sut
from conformance._wire_types import Definition, ToolPolicy, ToolResult
from conformance.suite._explore import plan
from conformance.suite._fleets import Fleets
from conformance.suite._named import plain_server
from conformance.suite._preconditions import (
    activations_kept,
    definitions_follow_activations,
    discovery_passes_twelve,
    distinct_definitions,
    dynamic_capacity_kept,
    exclusion_clause,
    first_round_capacity_kept,
    gate_refuses_inactive,
    left_out_tools_activatable,
    named_activation_missed,
    original_names_sent,
    policy_applied,
    read_only_applied,
    required_all_active,
    required_left_out,
    writes_allowed_by_default,
)
from conformance.suite._preconditions import twelve_per_server as cap_of_twelve
from conformance.suite._wire import open_params, run
from mock_servers import FleetSpec, ListedTool
from tests.conformance.suite.hosts import Front, misreading, one_more, twelve_per_server


@pytest.mark.e2e
def test_the_reference_passes_the_controls(front: Front, fleets: Fleets) -> None:
    sut = front(None)

    required_all_active(sut, fleets)
    first_round_capacity_kept(sut, fleets)
    assert required_left_out(sut, fleets) == ""


@pytest.mark.e2e
def test_the_reference_passes_the_controls_of_gate_names_policy_caps_and_discovery(
    front: Front, fleets: Fleets
) -> None:
    sut = front(None)

    gate_refuses_inactive(sut, fleets)
    writes_allowed_by_default(sut, fleets)
    cap_of_twelve(sut, fleets)
    discovery_passes_twelve(sut, fleets)
    definitions_follow_activations(sut, fleets)
    dynamic_capacity_kept(sut, fleets)
    activations_kept(sut, fleets)
    left_out_tools_activatable(sut, fleets)


def test_a_definition_listed_twice_leaves_a_count_inconclusive_naming_def_1_1() -> None:
    tool: Definition = {"name": "s0__a", "description": "A.", "inputSchema": {"type": "object"}}
    distinct_definitions([tool])

    with pytest.raises(Inconclusive) as caught:
        distinct_definitions([tool, tool])
    assert caught.value.because == "DEF-1.1"


def test_a_call_sent_under_its_qualified_name_leaves_the_checks_of_calls_inconclusive_naming_cat_4_2() -> None:
    original_names_sent([{"server": "s0", "name": "no_such_tool", "unknown": True}])

    with pytest.raises(Inconclusive) as caught:
        original_names_sent([{"server": "s0", "name": "s0__list_issues", "unknown": True}])
    assert caught.value.because == "CAT-4.2"


@pytest.mark.e2e
def test_a_host_that_leaves_required_tools_out_leaves_other_checks_inconclusive_naming_pol_6_2(
    front: Front, fleets: Fleets
) -> None:
    sut = front(twelve_per_server)

    assert required_left_out(sut, fleets).startswith("18 of them")
    with pytest.raises(Inconclusive) as caught:
        required_all_active(sut, fleets)
    assert caught.value.because == "POL-6.2"

    sut.cited = frozenset({"POL-6.2"})  # the checks of POL-6.2 report it themselves
    required_all_active(sut, fleets)


@pytest.mark.e2e
def test_a_host_whose_capacity_is_one_too_many_leaves_the_checks_of_refusals_inconclusive_naming_bud_1_2(
    front: Front, fleets: Fleets
) -> None:
    sut = front(one_more)

    sut.cited = frozenset({"ERR-2.1"})  # a check of refusals at the capacity's edge
    with pytest.raises(Inconclusive) as caught:
        first_round_capacity_kept(sut, fleets)
    assert caught.value.because == "BUD-1.2"

    sut.cited = frozenset()  # any other check stops at the watermark first
    with pytest.raises(Inconclusive) as caught:
        first_round_capacity_kept(sut, fleets)
    assert caught.value.because == "BUD-1.1"

    sut.cited = frozenset({"BUD-1.2"})
    first_round_capacity_kept(sut, fleets)


def _no_mcp_tools(defs: list[Definition]) -> list[Definition]:
    """A host whose definitions list no MCP tool, whatever is active."""
    return [d for d in defs if "__" not in d["name"]]


@pytest.mark.e2e
def test_a_host_whose_definitions_show_no_mcp_tool_fails_the_gate_and_default_policy_controls(
    front: Front, fleets: Fleets
) -> None:
    sut = front(_no_mcp_tools)

    with pytest.raises(Inconclusive) as gate:
        gate_refuses_inactive(sut, fleets)
    with pytest.raises(Inconclusive) as writes:
        writes_allowed_by_default(sut, fleets)
    with pytest.raises(Inconclusive) as fill:
        dynamic_capacity_kept(sut, fleets)
    assert (gate.value.because, writes.value.because, fill.value.because) == ("GATE-1", "POL-9.4", "BUD-2.2")


@pytest.mark.e2e
def test_definitions_capped_at_twelve_leave_discovery_checks_inconclusive_naming_def_2_2(
    front: Front, fleets: Fleets
) -> None:
    with pytest.raises(Inconclusive) as caught:
        definitions_follow_activations(front(twelve_per_server), fleets)
    assert caught.value.because == "DEF-2.2"


@pytest.mark.e2e
def test_a_named_query_missed_is_blamed_on_the_definitions_or_on_the_qualified_query(
    front: Front, fleets: Fleets
) -> None:
    """The first round takes 12 of 14 tools, ``tool_8`` and ``tool_9`` left out (ties go by
    qualified name). A result that reported ``tool_9`` activated while the gate refuses it
    leaves nothing else to blame; the reference activates ``tool_8`` asked for by its
    original name, so a qualified query that did not was misread (DSC-5.8)."""
    sut = front(None)
    with fleets.serve(FleetSpec(servers=(plain_server("s0", 14),))) as served:
        tools = {t["name"]: t for t in served.tools["s0"]}

        async def body() -> None:
            async with sut.open(open_params(served.servers)) as r:
                reported: ToolResult = {
                    "content": [],
                    "isError": False,
                    "structuredContent": {"activated": [{"name": "s0__tool_9"}]},
                }
                await named_activation_missed(r, "s0__tool_9", tools["tool_9"], reported)
                with pytest.raises(Inconclusive) as caught:
                    await named_activation_missed(r, "s0__tool_8", tools["tool_8"], {"content": [], "isError": False})
                assert caught.value.because == "DSC-5.8"

        run(body())


@pytest.mark.e2e
def test_a_check_that_cites_the_sentence_a_control_names_judges_it_itself(front: Front, fleets: Fleets) -> None:
    """No control runs: a host that lists no MCP tool would fail every one of them."""
    sut = front(_no_mcp_tools)
    sut.cited = frozenset({"SEL-1.2", "SEL-1.3", "DEF-2.2", "CAT-1.3", "DEF-3.1", "BUD-2.1"})

    cap_of_twelve(sut, fleets)
    discovery_passes_twelve(sut, fleets)
    definitions_follow_activations(sut, fleets)
    left_out_tools_activatable(sut, fleets)
    activations_kept(sut, fleets)
    dynamic_capacity_kept(sut, fleets)


@pytest.mark.e2e
def test_the_reference_keeps_read_only_to_the_json_value_true(front: Front, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(plain_server("s0", 3),))

    read_only_applied(front(None), fleets, spec, {"s0": {"sideEffects": "readOnly"}})


@pytest.mark.parametrize(
    ("policy", "clause"),
    [
        ({"deniedTools": ["x"], "mode": "allowlist"}, "POL-2"),
        ({"mode": "allowlist", "allowedTools": ["y"]}, "POL-3"),
        ({"allowedTools": ["y"]}, "POL-4"),
        ({"sideEffects": "readOnly"}, "POL-5"),
        ({}, "POL-1"),
    ],
)
def test_the_rule_that_keeps_a_tool_out_is_denial_then_the_lists_then_read_only(
    policy: ToolPolicy, clause: str
) -> None:
    tool: ListedTool = {"name": "x", "description": "X.", "inputSchema": {"type": "object"}}

    assert exclusion_clause(policy, tool) == clause


def _read_only_ignored(_server: str, policy: ToolPolicy) -> None:
    policy.pop("sideEffects", None)


@pytest.mark.e2e
def test_a_host_that_ignores_read_only_fails_the_read_only_control_naming_pol_5_1(front: Front, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(plain_server("s0", 3),))

    with pytest.raises(Inconclusive) as caught:
        read_only_applied(
            front(opening=misreading(_read_only_ignored)), fleets, spec, {"s0": {"sideEffects": "readOnly"}}
        )
    assert caught.value.because == "POL-5.1"


@pytest.mark.e2e
def test_an_active_tool_its_policy_keeps_out_is_blamed_on_the_rule_that_should_have(
    front: Front, fleets: Fleets
) -> None:
    """Tools without annotations are writes to read-only handling: a host that lets them in
    has read-only handling to blame (POL-5.1); when read-only handling holds, the active set
    broke the policy as a whole (POL-1.1). A denied tool is denial's (POL-2)."""
    spec = FleetSpec(servers=(plain_server("s0", 3),))
    read_only: dict[str, ToolPolicy] = {"s0": {"sideEffects": "readOnly"}}
    denied: dict[str, ToolPolicy] = {"s0": {"deniedTools": ["tool_1"]}}
    everything = ["s0__tool_0", "s0__tool_1", "s0__tool_2", "base_tool_not_in_the_catalog"]

    def blamed(sut: Sut, policies: dict[str, ToolPolicy]) -> str:
        with pytest.raises(Inconclusive) as caught:
            policy_applied(sut, fleets, spec, policies, plan((spec, policies), 0), everything)
        return caught.value.because

    assert blamed(front(opening=misreading(_read_only_ignored)), read_only) == "POL-5.1"
    assert blamed(front(None), read_only) == "POL-1.1"
    assert blamed(front(None), denied) == "POL-2"
