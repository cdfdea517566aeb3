"""Selection (SEL-*): fairness caps and fill of the first round, maxActiveTools across the
run, determinism under reordering, the global ranking walk, and the worked example."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance import Sut, clause
from conformance.suite._explore import BASES as DISCOVERY_BASES
from conformance.suite._explore import FLEETS as DISCOVERY_FLEETS
from conformance.suite._explore import STEPS, Steps, Trace, explore, plan, saturating_steps
from conformance.suite._first_round import open_first_round, with_examples
from conformance.suite._fleets import Fleets
from conformance.suite._strategies import FleetAndPolicies, examples, fleets_with_policies
from conformance.suite._wire import DISCOVERY, base_tools, fail, mcp_definitions, names, open_params, run
from mock_servers import FleetSpec, ServerSpec, ToolSpec, generate_tools, preset
from mock_servers.strategies import fleet_specs

FLEETS = fleets_with_policies(max_servers=3, max_tools=30)
BASES = st.integers(0, 8) | st.integers(60, 97)


def _auto(*tool_counts: int, **policy: Any) -> FleetAndPolicies:
    """``len(tool_counts)`` servers ``s0``, ``s1``… with the same policy (``auto`` unless given)."""
    spec = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, n in enumerate(tool_counts)), seed=7)
    return spec, {s.id: dict(policy) for s in spec.servers}


# Fleets whose first round fills the 96 definitions exactly (base tools, the discovery
# tool and as many ranked tools as the capacity takes): one definition more shows.
FULL_FIRST_ROUNDS = [
    (_auto(20), 90),  # capacity 5 of 20 eligible tools
    (_auto(20, 20, 20), 60),  # capacity 35 of 36 first-round places
    (_auto(30, 30, 30, 30, 30), 47),  # capacity 48 of 60 first-round places
    (_auto(3, 40), 94),  # capacity 1
    (_auto(3, 40), 95),  # capacity 0
]
# Servers with more than 12 eligible tools and a maxActiveTools above 12, and at 11, 12, 13.
OVER_FAIRNESS_CAP = [
    (_auto(30), 0),
    (_auto(25, 25, maxActiveTools=40), 3),
    (_auto(20, 4, maxActiveTools=96), 0),
    (_auto(20, maxActiveTools=11), 0),
    (_auto(20, maxActiveTools=12), 0),
    (_auto(20, maxActiveTools=13), 0),
    (_auto(13), 0),
    (_auto(12), 0),
]


@clause("SEL-1.1", "SEL-1.2", "SEL-2.1", "SEL-2.2", "SEL-2.3")
@examples(15)
@given(FLEETS, BASES)
@with_examples(OVER_FAIRNESS_CAP + FULL_FIRST_ROUNDS)
def test_first_round_fills_to_the_policy_determined_count(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    opened = open_first_round(sut, fleets, fleet, base_count)
    mcp = mcp_definitions(opened.definitions(("SEL-2.1",)), opened.base)
    per_server: dict[str, int] = {}
    for d in mcp:
        sid = str(d["name"]).split("__", 1)[0]
        per_server[sid] = per_server.get(sid, 0) + 1
    for sid, m in opened.model.servers.items():
        if per_server.get(sid, 0) > m.first_round_cap:
            raise fail(
                ("SEL-1.2" if m.max_active > 12 and opened.model.capacity > 12 else "SEL-1.1",),
                f"{sid} has more first-round tools than its fairness cap",
                expected=f"<= max(required {len(m.required)}, min(12, maxActiveTools {m.max_active}))",
                observed=per_server.get(sid, 0),
                case=opened.case,
            )
        if m.mode != "auto" and per_server.get(sid, 0) > len(m.required):
            raise fail(
                ("SEL-2.3",),
                f"{sid} is not in auto mode and contributes more than its required tools",
                expected=len(m.required),
                observed=per_server.get(sid, 0),
                case=opened.case,
            )
    if len(mcp) != opened.model.mcp_count:
        raise fail(
            ("SEL-2.1",),
            "the first round did not fill to the count policy and budgets determine",
            expected=opened.model.mcp_count,
            observed={"count": len(mcp), "active": names(mcp)},
            case=opened.case,
        )


def _check_max_active(trace: Trace) -> None:
    for step in trace.steps:
        active = set(trace.mcp(step.definitions)) | set(step.before) | set(step.activated)
        for sid, count in trace.per_server(active).items():
            m = trace.model.servers[sid]
            if count > max(m.max_active, len(m.required)):
                raise fail(
                    ("SEL-3.3" if m.max_active == 0 else "SEL-3.1",),
                    f"{sid} has more active tools than its maxActiveTools",
                    expected=f"<= {m.max_active}",
                    observed={"count": count, "discovery call": step.arguments, "activated": step.activated},
                    case=trace.case,
                )


@clause("SEL-3.1", "SEL-3.3")
@examples(8)
@given(DISCOVERY_FLEETS, DISCOVERY_BASES, STEPS)
def test_no_server_passes_its_max_active_tools(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    _check_max_active(explore(sut, fleets, fleet, base_count, steps))


_FIRST_OF_S0_30 = generate_tools(ServerSpec(id="s0", tool_count=30))[0]["name"]
MAX_ACTIVE_CASES: dict[str, tuple[FleetAndPolicies, int]] = {
    # first round takes 12 of 30; discovery may add 2 more, no further.
    "room-of-two": (_auto(30, maxActiveTools=14), 2),
    # the first round already reaches maxActiveTools 3; discovery may add none.
    "full-after-first-round": ((_auto(20, 20)[0], {"s0": {"maxActiveTools": 3}, "s1": {}}), 2),
    # maxActiveTools 0: the server never has an active tool.
    "zero": ((_auto(10, 10)[0], {"s0": {"maxActiveTools": 0}, "s1": {}}), 2),
    # a pinned tool counts against maxActiveTools.
    "pinned-counts": (_auto(30, maxActiveTools=13, pinnedTools=[_FIRST_OF_S0_30]), 2),
}


@clause("SEL-1.3", "SEL-3.1", "SEL-3.3")
@pytest.mark.parametrize("name", sorted(MAX_ACTIVE_CASES))
def test_discovery_stops_at_max_active_tools(sut: Sut, fleets: Fleets, name: str) -> None:
    fleet, rounds = MAX_ACTIVE_CASES[name]
    trace = explore(sut, fleets, fleet, 0, saturating_steps(*fleet, rounds))
    _check_max_active(trace)
    if name == "room-of-two":
        active = set(trace.mcp(trace.steps[-1].definitions))
        if len(active) != 14:
            raise fail(
                ("SEL-1.3",),
                "discovery did not take the server past 12 active tools up to its maxActiveTools",
                expected=14,
                observed=len(active),
                case=trace.case,
            )


def _explicit(server: ServerSpec, reverse: bool) -> ServerSpec:
    tools = [
        ToolSpec(
            name=t["name"],
            description=t.get("description", ""),
            input_schema=t["inputSchema"],
            annotations=t.get("annotations"),
        )
        for t in generate_tools(server)
    ]
    if reverse:
        tools.reverse()
    return dataclasses.replace(server, tool_count=0, tools=tuple(tools))


@clause("SEL-4.1", "SEL-4.2", "SEL-4.3")
@examples(8)
@given(fleet_specs(min_servers=2, max_servers=4, min_tools=5, max_tools=25), st.text(max_size=30), st.integers(0, 3))
def test_same_input_same_definitions_whatever_the_order(
    sut: Sut, fleets: Fleets, spec: FleetSpec, message: str, base_count: int
) -> None:
    base = base_tools(base_count)
    forward = FleetSpec(servers=tuple(_explicit(s, False) for s in spec.servers), seed=spec.seed)
    servers_reversed = FleetSpec(servers=tuple(_explicit(s, False) for s in reversed(spec.servers)), seed=spec.seed)
    listings_reversed = FleetSpec(servers=tuple(_explicit(s, True) for s in spec.servers), seed=spec.seed)
    with (
        fleets.serve(forward) as a,
        fleets.serve(servers_reversed) as b,
        fleets.serve(listings_reversed) as c,
    ):

        async def body() -> tuple[Any, Any, Any, Any]:
            async with sut.open(open_params(a.servers, base, message)) as r1:
                first = await r1.definitions()
            async with sut.open(open_params(a.servers, base, message)) as r2:
                again = await r2.definitions()
            async with sut.open(open_params(b.servers, base, message)) as r3:
                by_server = await r3.definitions()
            async with sut.open(open_params(c.servers, base, message)) as r4:
                by_listing = await r4.definitions()
            return first, again, by_server, by_listing

        first, again, by_server, by_listing = run(body())
        case = {"fleet": a.describe(), "userMessage": message, "baseTools": base_count}
    for sentence, other, what in (
        ("SEL-4.1", again, "the same input gave different definitions"),
        ("SEL-4.2", by_server, "reordering the servers changed the definitions"),
        ("SEL-4.3", by_listing, "reordering the tools in the listings changed the definitions"),
    ):
        if names(first) != names(other) or (sentence == "SEL-4.1" and first != other):
            raise fail((sentence,), what, expected=names(first), observed=names(other), case=case)


@clause("SEL-6.1")
def test_worked_example(sut: Sut, fleets: Fleets) -> None:
    spec = preset("seed-example")
    base = base_tools(3)
    with fleets.serve(spec) as served:

        async def body() -> list[dict[str, Any]]:
            async with sut.open(open_params(served.servers, base)) as r:
                return await r.definitions()

        defs = run(body())
        case = served.describe() | {"baseTools": 3}
    mcp = names(mcp_definitions(defs, names(base)))
    per = {s.id: sum(1 for n in mcp if n.startswith(s.id + "__")) for s in spec.servers}
    if len(defs) != 52 or len(mcp) != 48 or set(per.values()) != {12} or DISCOVERY not in names(defs):
        raise fail(
            ("SEL-6.1",),
            "the worked example does not come out as specified",
            expected={"definitions": 52, "mcp": 48, "per_server": 12, "discovery": True},
            observed={"definitions": len(defs), "mcp": len(mcp), "per_server": per},
            case=case,
        )


def _first_round_names(
    sut: Sut,
    fleets: Fleets,
    servers: dict[str, list[ToolSpec]],
    policies: dict[str, Any],
    base: int,
    user: str,
) -> tuple[set[str], dict[str, Any]]:
    spec = FleetSpec(servers=tuple(ServerSpec(id=sid, tool_count=0, tools=tuple(ts)) for sid, ts in servers.items()))
    with fleets.serve(spec, policies) as served:

        async def body() -> list[str]:
            async with sut.open(open_params(served.servers, base_tools(base), user)) as r:
                return names(await r.definitions())

        got = run(body())
        case = served.describe() | {"userMessage": user, "baseTools": base}
    return {n for n in got if "__" in n}, case


def _tool(name: str) -> ToolSpec:
    return ToolSpec(name=name, description="Thing.", input_schema={"type": "object"})


_WIDGETS = [_tool(f"widget_{c}") for c in "abcdefghijklmn"]  # 14 tools that all score on "widget"
FIRST_ROUND_CASES: dict[str, tuple[dict[str, list[ToolSpec]], dict[str, Any], int, str, set[str], str]] = {
    # capacity 3; s0 may take one tool (maxActiveTools 1): the walk skips its second
    # widget and takes s1's, then the best zero-score tool by qualified name.
    "server-cap-skips": (
        {
            "s0": [_tool("widget_alpha"), _tool("widget_beta"), _tool("plain_x")],
            "s1": [_tool("widget_gamma"), _tool("plain_z"), _tool("plain_y")],
        },
        {"s0": {"maxActiveTools": 1}},
        92,
        "widget",
        {"s0__widget_alpha", "s1__widget_gamma", "s1__plain_y"},
        "SEL-5.2",
    ),
    # capacity 2: the scorer's winner, then the tie broken by qualified name, not by
    # the servers' order.
    "score-then-name": (
        {"zz": [_tool("report_a")], "aa": [_tool("report_b")], "mm": [_tool("deploy_c")]},
        {},
        93,
        "deploy",
        {"mm__deploy_c", "aa__report_b"},
        "SEL-5.1",
    ),
    # capacity 15: s0's 14 matching tools stop at the first-round cap of 12 (the first
    # 12 by name), and the walk goes on to s1's tools, which score nothing.
    "fairness-cap-in-the-walk": (
        {"s0": _WIDGETS, "s1": [_tool("other_1"), _tool("other_2"), _tool("other_3")]},
        {},
        80,
        "widget",
        {f"s0__widget_{c}" for c in "abcdefghijkl"} | {"s1__other_1", "s1__other_2", "s1__other_3"},
        "SEL-5.2",
    ),
    # capacity 4: read intent lifts the read tools over the write tools of equal words.
    "read-intent": (
        {"s0": [_tool("create_note"), _tool("delete_note"), _tool("list_note"), _tool("get_note"), _tool("view_x")]},
        {},
        91,
        "show note",
        {"s0__list_note", "s0__get_note", "s0__view_x", "s0__create_note"},
        "SEL-5.1",
    ),
}


@clause("SEL-5.1", "SEL-5.2")
@pytest.mark.parametrize("name", sorted(FIRST_ROUND_CASES))
def test_the_first_round_walks_one_global_ranking(sut: Sut, fleets: Fleets, name: str) -> None:
    servers, policies, base, user, expected, sentence = FIRST_ROUND_CASES[name]
    got, case = _first_round_names(sut, fleets, servers, policies, base, user)
    if got != expected:
        raise fail(
            (sentence,),
            "the first round did not take the tools one global ranking gives",
            expected=sorted(expected),
            observed=sorted(got),
            case=case,
        )
