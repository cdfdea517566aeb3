"""Definitions (DEF-*): what the definition list of a run holds, that it is produced anew
for every request and only grows, its order, and base tools that collide with tools of
the run."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance import OutcomeError, Sut, clause
from conformance.suite._explore import BASES, FLEETS, STEPS, Steps, explore, plan
from conformance.suite._fleets import Fleets
from conformance.suite._strategies import FleetAndPolicies, examples
from conformance.suite._wire import (
    DISCOVERY,
    base_tools,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    run,
)
from mock_servers import FleetSpec, ServerSpec, example_arguments, generate_tools


@clause("DEF-1.1", "DEF-1.2", "DEF-1.3", "DEF-4.2", "CAT-3.1")
@examples(10)
@given(FLEETS, st.integers(0, 5))
def test_definitions_are_the_base_tools_the_discovery_tool_and_the_active_tools_as_listed(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None)
    spec, policies = fleet
    base = base_tools(base_count)
    with fleets.serve(spec, policies) as served:
        case = served.describe() | {"baseTools": base_count}

        async def body() -> tuple[Any, Any]:
            async with sut.open(open_params(served.servers, base)) as r:
                return await r.definitions(), await r.definitions()

        first, second = run(body())
    if first != second:
        raise fail(
            ("DEF-4.2",),
            "two reads of an unchanged run differ",
            expected=names(first),
            observed=names(second),
            case=case,
        )
    got_names = names(first)
    if len(set(got_names)) != len(got_names):
        raise fail(("DEF-1.1",), "a definition appears twice", observed=got_names, case=case)
    for b in base:
        if b not in first:
            raise fail(("DEF-1.3",), "a base tool is missing or altered", expected=b, observed=got_names, case=case)
    cat = catalog(served.tools)
    for d in mcp_definitions(first, names(base)):
        if d["name"] not in cat:
            raise fail(
                ("CAT-3.1",),
                "a definition is neither a base tool, the discovery tool nor a qualified MCP tool name "
                "(serverId__toolName)",
                observed=d["name"],
                case=case,
            )
        _, tool = cat[d["name"]]
        if d["description"] != tool.get("description", "") or d["inputSchema"] != tool["inputSchema"]:
            raise fail(
                ("DEF-1.2",),
                f"{d['name']} does not carry the description and schema its server listed",
                expected={"description": tool.get("description"), "inputSchema": tool["inputSchema"]},
                observed={"description": d["description"], "inputSchema": d["inputSchema"]},
                case=case,
            )


@clause("DEF-1.1", "DEF-2.2", "DEF-3.1")
@examples(8)
@given(FLEETS, BASES, STEPS)
def test_discovered_tools_are_in_every_later_definition_list(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    trace = explore(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    shown = trace.mcp(trace.start)
    for step in trace.steps:
        now = trace.mcp(step.definitions)
        lost = [n for n in shown if n not in now]
        if lost:
            raise fail(("DEF-3.1",), "tools once active were lost", observed=lost, case=trace.case)
        missing = [q for q in step.activated if q not in now]
        if missing:
            raise fail(
                ("DEF-2.2",), "activated tools are not in the next definitions", observed=missing, case=trace.case
            )
        for d in step.definitions:
            if (
                d["name"] in step.activated
                and d["name"] in cat
                and d["inputSchema"] != cat[d["name"]][1]["inputSchema"]
            ):
                raise fail(("DEF-2.2",), "an activated tool lacks its complete schema", observed=d, case=trace.case)
        if set(now) != set(shown) | set(step.activated):
            raise fail(
                ("DEF-1.1",),
                "the active set changed other than by the activated tools",
                expected=sorted(set(shown) | set(step.activated)),
                observed=now,
                case=trace.case,
            )
        shown = now


_SERVER = ServerSpec(id="s0", tool_count=20)
_TOOLS = {t["name"]: t for t in generate_tools(_SERVER)}
_NAMES = list(_TOOLS)

# A base tool named like a tool of the run: (policy of s0, the base tool's name, sentence).
# The tool is active (pinned), in the catalog but never active (denied), or the discovery
# tool, with and without an auto server to register it.
BASE_COLLISIONS: dict[str, tuple[dict[str, Any], str, str]] = {
    "active-mcp-tool": ({"pinnedTools": [_NAMES[0]]}, f"s0__{_NAMES[0]}", "DEF-5.1"),
    "inactive-mcp-tool": ({"deniedTools": [_NAMES[1]]}, f"s0__{_NAMES[1]}", "DEF-5.1"),
    "discovery-tool": ({}, DISCOVERY, "DEF-5.2"),
    "discovery-tool-unregistered": ({"mode": "all", "maxActiveTools": 20}, DISCOVERY, "DEF-5.2"),
}


@clause("DEF-5.1", "DEF-5.2", "DEF-5.3", "DEF-5.4")
@pytest.mark.parametrize("name", sorted(BASE_COLLISIONS))
def test_a_base_tool_named_like_a_tool_of_the_run_is_a_config_error(sut: Sut, fleets: Fleets, name: str) -> None:
    policy, colliding, sentence = BASE_COLLISIONS[name]
    base = [{"name": colliding, "description": "A built-in tool.", "inputSchema": {"type": "object"}}]
    with fleets.serve(FleetSpec(servers=(_SERVER,)), {"s0": policy}) as served:
        case = served.describe() | {"baseTools": base}

        async def body() -> None:
            try:
                async with sut.open(open_params(served.servers, base)) as r:
                    defs = await r.definitions()
                    tool = _TOOLS.get(colliding.removeprefix("s0__"), {"inputSchema": {"type": "object"}})
                    result = await r.call(colliding, example_arguments(tool))
            except OutcomeError as exc:
                if exc.kind != "config_error":
                    raise fail(
                        (sentence,),
                        f"the run with a base tool named {colliding!r} failed, but not with a config_error",
                        expected=f"config_error naming {colliding!r}",
                        observed=str(exc),
                        case=case,
                    ) from None
                if colliding not in exc.message:
                    raise fail(
                        ("DEF-5.3",),
                        "the configuration error does not name the colliding base tool",
                        expected=f"a message naming {colliding!r}",
                        observed=exc.message,
                        case=case,
                    ) from None
                return
            reached = served.ledger().calls("s0")
            raise fail(
                ("DEF-5.4",) if reached else (sentence,),
                f"a run opened with a base tool named {colliding!r}"
                + (", and a call by that name reached the server" if reached else ""),
                expected=f"config_error naming {colliding!r}",
                observed={"definitions": names(defs), "call": result, "server calls": len(reached)},
                case=case,
            )

        run(body())
