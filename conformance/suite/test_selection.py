"""Selection (SEL-*): fairness caps and fill of the first round, maxActiveTools across the
run, determinism under reordering, the global ranking walk, and the worked example."""

from __future__ import annotations

import dataclasses
from typing import Any, Unpack

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance import OutcomeError, Sut, clause
from conformance._wire_types import Definition, OpenParams, ToolPolicy
from conformance.suite._explore import BASES as DISCOVERY_BASES
from conformance.suite._explore import FLEETS as DISCOVERY_FLEETS
from conformance.suite._explore import STEPS, Steps, Trace, explore, saturating_steps
from conformance.suite._first_round import open_first_round, with_examples
from conformance.suite._fleets import Fleets, tools_of
from conformance.suite._named import ask_for, plain_server
from conformance.suite._preconditions import (
    distinct_definitions,
    excluded_pins_not_required,
    first_round_capped,
    left_out_tools_activatable,
    named_activation_missed,
    policy_applied,
    precondition,
    twelve_per_server,
)
from conformance.suite._predictions import first_round
from conformance.suite._strategies import FleetAndPolicies, examples, fleets_with_policies, opening
from conformance.suite._vectors import Diagnosis
from conformance.suite._wire import (
    DISCOVERY,
    base_tools,
    by_name,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    qualified,
    refusal_or,
    run,
)
from mock_servers import FleetSpec, ServerSpec, ToolSpec, generate_tools, preset
from mock_servers.strategies import fleet_specs

FLEETS = fleets_with_policies(max_servers=3, max_tools=30)
BASES = st.integers(0, 8) | st.integers(60, 97)


def _auto(*tool_counts: int, **policy: Unpack[ToolPolicy]) -> FleetAndPolicies:
    """``len(tool_counts)`` servers ``s0``, ``s1``… with the same policy (``auto`` unless given)."""
    spec = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, n in enumerate(tool_counts)), seed=7)
    return spec, {s.id: policy.copy() for s in spec.servers}


def _pinning(count: int, tools: int, **policy: Unpack[ToolPolicy]) -> FleetAndPolicies:
    """One server ``s0`` of ``tools`` tools whose first ``count`` tools are pinned."""
    spec, _ = _auto(tools)
    pinned = [t["name"] for t in generate_tools(spec.servers[0])[:count]]
    return spec, {"s0": {**policy, "pinnedTools": pinned}}


def _pinning_beside(count: int, tools: int, other: int, **policy: Unpack[ToolPolicy]) -> FleetAndPolicies:
    """As :func:`_pinning`, beside a second server ``s1`` of ``other`` tools that the walk takes from."""
    spec, _ = _auto(tools, other)
    pinned = [t["name"] for t in generate_tools(spec.servers[0])[:count]]
    return spec, {"s0": {**policy, "pinnedTools": pinned}, "s1": {}}


# Fleets whose first round fills the 96 definitions exactly (base tools, the discovery
# tool and as many ranked tools as the capacity takes): one definition more shows.
FULL_FIRST_ROUNDS: list[tuple[FleetAndPolicies, int]] = [
    (_auto(20), 90),  # capacity 5 of 20 eligible tools
    (_auto(20, 20, 20), 60),  # capacity 35 of 36 first-round places
    (_auto(30, 30, 30, 30, 30), 47),  # capacity 48 of 60 first-round places
    (_auto(3, 40), 94),  # capacity 1
    (_auto(3, 40), 95),  # capacity 0
]
# Servers with more than 12 eligible tools and a maxActiveTools above 12, and at 11, 12, 13.
OVER_FAIRNESS_CAP: list[tuple[FleetAndPolicies, int]] = [
    (_auto(30), 0),
    (_auto(25, 25, maxActiveTools=40), 3),
    (_auto(20, 4, maxActiveTools=96), 0),
    (_auto(20, maxActiveTools=11), 0),
    (_auto(20, maxActiveTools=12), 0),
    (_auto(20, maxActiveTools=13), 0),
    (_auto(13), 0),
    (_auto(12), 0),
]
# Required tools against the cap: max(required, min(12, maxActiveTools)), or, where the cap
# counts only ranked tools, min(maxActiveTools, required + 12) (ID-10).
REQUIRED_AND_CAP: list[tuple[FleetAndPolicies, int]] = [
    (_pinning(13, 20, maxActiveTools=20), 0),  # 13 pinned: the cap is 13, nothing ranked
    (_pinning_beside(13, 20, 5, maxActiveTools=20), 0),  # the same while the walk takes s1's tools
    (_pinning(12, 20, maxActiveTools=20), 0),  # 12 pinned: the cap is 12, nothing ranked
    (_pinning(5, 30), 0),  # 5 pinned and 7 ranked: the pinned tools count against the 12 (or 12 ranked)
    (_pinning(5, 30, maxActiveTools=14), 0),  # 5 pinned and 7 ranked, or 9 where maxActiveTools binds
    (_auto(20, mode="all", maxActiveTools=20), 0),  # not auto: its 20 required tools, nothing ranked
    (_auto(20, 20, mode="allowlist", allowedTools=[]), 0),  # not auto, nothing required: nothing at all
    ((_auto(10, 10)[0], {"s0": {"maxActiveTools": 0}, "s1": {}}), 0),  # maxActiveTools 0 and 1
    ((_auto(10, 10)[0], {"s0": {"maxActiveTools": 1}, "s1": {}}), 0),
]


def _cap_sentence(model_capacity: int, max_active: int, required: int, max_zero: bool) -> str:
    if max_zero and required == 0:
        return "SEL-3.3"
    return "SEL-1.2" if max_active > 12 and model_capacity > 12 else "SEL-1.1"


@clause("SEL-1.1", "SEL-1.2", "SEL-2.1", "SEL-2.2", "SEL-2.3", "SEL-3.3")
@examples(15)
@given(FLEETS, BASES)
@with_examples(OVER_FAIRNESS_CAP + FULL_FIRST_ROUNDS + REQUIRED_AND_CAP)
def test_first_round_fills_to_the_policy_determined_count(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    fleet, base_count = opening(fleet, base_count)
    opened = open_first_round(sut, fleets, fleet, base_count)
    mcp = mcp_definitions(opened.definitions(("SEL-2.1",)), opened.base)
    distinct_definitions(mcp)
    # The counts below are those of the policy applied: a tool it does not admit breaks POL first.
    policy_applied(sut, fleets, *fleet, opened.model, names(mcp))
    per_server: dict[str, int] = {}
    for d in mcp:
        sid = str(d["name"]).split("__", 1)[0]
        per_server[sid] = per_server.get(sid, 0) + 1
    # SEL-1.1's cap of 12 counts the required tools (the oracle's model) or only the ranked
    # ones (ID-10): a server may reach the larger of the two caps, and the whole round must
    # be the one of either reading.
    ranked_only = first_round(opened.tools, fleet[1], base_count, cap_counts_required=False)
    for sid, m in opened.model.servers.items():
        if per_server.get(sid, 0) > max(m.first_round_cap, ranked_only.servers[sid].first_round_cap):
            raise fail(
                (_cap_sentence(opened.model.capacity, m.max_active, len(m.required), m.max_active == 0),),
                f"{sid} has more first-round tools than its fairness cap",
                expected=f"<= max(required {len(m.required)}, min(12, maxActiveTools {m.max_active})), or "
                f"min(maxActiveTools, required + 12) where the cap counts only ranked tools (ID-10)",
                observed=per_server.get(sid, 0),
                case=opened.case,
            )
        if m.mode != "auto" and per_server.get(sid, 0) != len(m.required):
            raise fail(
                ("SEL-2.3",),
                f"{sid} is not in auto mode and contributes other than its required tools",
                expected=len(m.required),
                observed=per_server.get(sid, 0),
                case=opened.case,
            )
    # The count assumes the required tools of auto servers in (those of the others are
    # SEL-2.3's, above): one left out leaves a place the oracle does not count free.
    shown = set(names(mcp))
    missing = sorted(
        qualified(sid, name)
        for sid, m in opened.model.servers.items()
        if m.mode == "auto"
        for name in m.required
        if qualified(sid, name) not in shown
    )
    precondition(
        "POL-6.2",
        not missing,
        f"the run opened without {len(missing)} of the pinned tools its policies require",
        observed={"required, not active": missing[:10]},
    )
    readings = (opened.model, ranked_only)
    if len(mcp) not in {model.mcp_count for model in readings}:
        raise fail(
            ("SEL-2.1", "SEL-2.2"),
            "the first round did not fill to the count policy and budgets determine",
            expected=opened.model.mcp_count
            if opened.model.mcp_count == ranked_only.mcp_count
            else {
                "cap counting required tools": opened.model.mcp_count,
                "cap counting ranked ones": ranked_only.mcp_count,
            },
            observed={"count": len(mcp), "active": names(mcp)},
            case=opened.case,
        )
    if not any(
        len(mcp) == model.mcp_count
        and all(per_server.get(sid, 0) <= m.first_round_cap for sid, m in model.servers.items())
        for model in readings
    ):
        raise fail(
            ("SEL-1.1",),
            "the first round takes as many tools as one reading of the cap of 12 and spreads them as the other",
            expected="one reading for every server (ID-10)",
            observed=per_server,
            case=opened.case,
        )


def _tool(name: str, description: str = "Thing.") -> ToolSpec:
    return ToolSpec(name=name, description=description, input_schema={"type": "object"})


def _one_server(*tools: ToolSpec) -> FleetSpec:
    return FleetSpec(servers=(ServerSpec(id="s0", tool_count=0, tools=tools),))


_WRITES = tuple(_tool(f"{verb}_note") for verb in ("create", "delete", "update", "push", "send"))
# (fleet, base tools, user message): whatever a ranker makes of the message, the number of
# first-round tools is the one policy and budgets determine.
SCORELESS: dict[str, tuple[FleetSpec, int, str]] = {
    # No word of the message occurs in any tool.
    "no-matching-word": (_one_server(_tool("alpha"), _tool("beta"), _tool("gamma")), 0, "zebra crossing"),
    # A read signal ("show") against write-named tools: the lexical scorer gives each -32.
    "negative-scores": (_one_server(*_WRITES), 0, "show me the notes"),
    # The same with room for two of them only.
    "negative-scores-short-capacity": (_one_server(*_WRITES), 93, "show me the notes"),
    "empty-message": (FleetSpec(servers=(plain_server("s0", 13),)), 0, ""),
}


@clause("SEL-2.2", "SEL-2.1")
@pytest.mark.parametrize("name", sorted(SCORELESS))
def test_tools_are_taken_whatever_they_score(sut: Sut, fleets: Fleets, name: str) -> None:
    spec, base_count, message = SCORELESS[name]
    expected = first_round(tools_of(spec), {}, base_count).mcp_count
    base = base_tools(base_count)
    with fleets.serve(spec) as served:
        case = served.describe() | {"baseTools": base_count, "userMessage": message}
        got = run(refusal_or(sut, open_params(served.servers, base, message)))
    if isinstance(got, OutcomeError):
        raise fail(("SEL-2.1",), "run.open refused a run that fits every budget", observed=str(got), case=case)
    mcp = names(mcp_definitions(got, names(base)))
    # A server past its cap takes a place the count gives another tool: SEL-1 broke first.
    first_round_capped(first_round(tools_of(spec), {}, base_count), tools_of(spec), mcp)
    if len(mcp) != expected:
        raise fail(
            ("SEL-2.2",),
            "the first round left out tools because of how they score",
            expected=expected,
            observed=mcp,
            case=case,
        )


def _check_max_active(trace: Trace) -> None:
    # (tools known to be active, definitions read, where): the first round, then each call.
    lists: list[tuple[list[str], list[Definition], dict[str, Any]]] = [([], trace.start, {"first round": True})]
    lists += [
        (step.before + step.activated, step.definitions, {"discovery call": step.arguments}) for step in trace.steps
    ]
    for known, defs, where in lists:
        active = set(trace.mcp(defs)) | set(known)
        for sid, count in trace.per_server(active).items():
            m = trace.model.servers[sid]
            if count > max(m.max_active, len(m.required)):
                # A first round past maxActiveTools is past its first-round cap, max(required,
                # min(12, maxActiveTools)), first: SEL-1.1 broke (but 0 is SEL-3.3's own case).
                precondition(
                    "SEL-1.1",
                    "first round" not in where or m.max_active == 0,
                    f"{sid} has {count} tools in the first round, over its maxActiveTools of {m.max_active}",
                    observed={"server": sid, "first-round tools": count},
                )
                raise fail(
                    ("SEL-3.3" if m.max_active == 0 else "SEL-3.1",),
                    f"{sid} has more active tools than its maxActiveTools",
                    expected=f"<= {m.max_active}",
                    observed={"count": count, **where},
                    case=trace.case,
                )


@clause("SEL-3.1", "SEL-3.3")
@examples(8)
@given(DISCOVERY_FLEETS, DISCOVERY_BASES, STEPS)
@example(fleet=_auto(30, maxActiveTools=14), base_count=0, steps=[(0, 12, True), (0, 12, True)])
@example(fleet=_auto(30, maxActiveTools=0), base_count=0, steps=[(0, 12, True)])
@example(fleet=_auto(30, maxActiveTools=1), base_count=0, steps=[(0, 12, True), (0, None, False)])
def test_no_server_passes_its_max_active_tools(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    fleet, base_count = opening(fleet, base_count, discovery=True)
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


@clause("SEL-3.1", "SEL-3.3")
@pytest.mark.parametrize("name", sorted(MAX_ACTIVE_CASES))
def test_discovery_stops_at_max_active_tools(sut: Sut, fleets: Fleets, name: str) -> None:
    fleet, rounds = MAX_ACTIVE_CASES[name]
    _check_max_active(explore(sut, fleets, fleet, 0, saturating_steps(*fleet, rounds)))


# (tools of the one server, its maxActiveTools): 12 in the first round, the rest asked for
# by name, which any ranker activates (DSC-5.8): 13 and 14 active, past the cap of 12.
PAST_THE_FIRST_ROUND_CAP = [(13, 13), (14, 14), (14, 24)]


@clause("SEL-1.3", "SEL-3.1")
@pytest.mark.parametrize(("tools", "max_active"), PAST_THE_FIRST_ROUND_CAP)
def test_discovery_takes_a_server_past_12_up_to_its_max_active_tools(
    sut: Sut, fleets: Fleets, tools: int, max_active: int
) -> None:
    spec = FleetSpec(servers=(plain_server("s0", tools),))
    policies: dict[str, ToolPolicy] = {"s0": {"maxActiveTools": max_active}}
    targets = [qualified("s0", f"tool_{i}") for i in range(tools)]
    with fleets.serve(spec, policies) as served:
        case = served.describe() | {"baseTools": 0}

        async def body() -> list[Definition]:
            async with sut.open(open_params(served.servers)) as r:
                calls = await ask_for(r, targets)
                case["steps"] = r.case["steps"]
                shown = await r.definitions()
                if len([n for n in names(shown) if n.startswith("s0__")]) < tools:
                    listed = catalog(served.tools)
                    for call in calls:
                        if call.target not in names(call.after):
                            await named_activation_missed(r, call.target, listed[call.target][1], call.result)
                return shown

        active = [n for n in names(run(body())) if n.startswith("s0__")]
    if len(active) > max_active:
        raise fail(("SEL-3.1",), "s0 has more active tools than its maxActiveTools", observed=active, case=case)
    if len(active) != tools:
        left_out_tools_activatable(sut, fleets)
        raise fail(
            ("SEL-1.3",),
            "discovery did not take the server past 12 active tools although each was asked for by name",
            expected=tools,
            observed=active,
            case=case,
        )


def _required(count: int, tools: int, mode: str, max_active: int, **policy: Any) -> tuple[FleetSpec, dict[str, Any]]:
    """One server of ``tools`` plain tools whose first ``count`` are pinned (auto) or listed (allowlist)."""
    listed = [f"tool_{i}" for i in range(count)]
    key = "pinnedTools" if mode == "auto" else "allowedTools"
    return FleetSpec(servers=(plain_server("s0", tools),)), {
        "s0": {"mode": mode, key: listed, "maxActiveTools": max_active, **policy}
    }


# (fleet, must the run open): required tools over maxActiveTools refuse the run when it
# opens; at maxActiveTools it opens; only eligible pinned tools are required.
REQUIRED_AGAINST_MAX: dict[str, tuple[tuple[FleetSpec, dict[str, Any]], bool]] = {
    "allowlist-over-by-one": (_required(5, 6, "allowlist", 4), False),
    "allowlist-at": (_required(5, 6, "allowlist", 5), True),
    "pinned-over-by-one": (_required(3, 20, "auto", 2), False),
    "pinned-at": (_required(3, 20, "auto", 3), True),
    "all-over-by-one": (
        (FleetSpec(servers=(plain_server("s0", 10),)), {"s0": {"mode": "all", "maxActiveTools": 9}}),
        False,
    ),
    "one-required-max-zero": (
        (FleetSpec(servers=(plain_server("s0", 1),)), {"s0": {"mode": "all", "maxActiveTools": 0}}),
        False,
    ),
    "denied-pin-not-required": (_required(3, 20, "auto", 2, deniedTools=["tool_2"]), True),
}


@clause("ERR-1.1", "ERR-1.2")
@pytest.mark.parametrize("name", sorted(REQUIRED_AGAINST_MAX))
def test_required_tools_are_checked_against_max_active_tools_when_the_run_opens(
    sut: Sut, fleets: Fleets, name: str
) -> None:
    (spec, policies), must_open = REQUIRED_AGAINST_MAX[name]
    with fleets.serve(spec, policies) as served:
        case = served.describe()
        got = run(refusal_or(sut, open_params(served.servers)))
        model = first_round(served.tools, served.policies, 0)
        if isinstance(got, OutcomeError) and model.refused_for_a_pin(got.kind, got.message):
            return  # the other reading of POL-7 (ID-9): refused for the pin its policy excludes
        if must_open and isinstance(got, OutcomeError):
            excluded_pins_not_required(sut, served, model)
    if must_open and isinstance(got, OutcomeError):
        raise fail(("ERR-1.2",), "required tools exactly at maxActiveTools were refused", observed=str(got), case=case)
    if not must_open and not (isinstance(got, OutcomeError) and got.kind == "selection_error"):
        raise fail(
            ("ERR-1.1",),
            "required tools over maxActiveTools did not fail the run with a selection error when it opened",
            expected="selection_error",
            observed=str(got) if isinstance(got, OutcomeError) else names(got),
            case=case,
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


# Three servers of equal tools and a first-round capacity of 5: which five the first round
# takes is decided by ties, never by where a server or a tool stands in the configuration.
_CROWDED = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=8) for i in range(3)), seed=3)


def _ties_by_name(sut: Sut, diagnosis: Diagnosis) -> None:
    """Go on only when, for a SUT that claims the ``lexical`` profile, the vectors that isolate
    its tie order (RNK-8.1) find it kept: ties broken otherwise (by listing order, say) make
    which tools tie in at the edge of the first round follow the order of the configuration,
    and the ranking broke first."""
    if sut.implementation is None or "lexical" not in sut.implementation.profiles:
        return
    broken = diagnosis.explain(("RNK-8.1",))
    precondition(
        broken[0] if broken else "RNK-8.1",
        not broken,
        "the lexical vectors find equal scores ordered otherwise than by qualified name",
        observed=list(broken),
    )


# Any message: every character but the surrogates, which is what `st.text()` draws from, named
# so that Hypothesis need not work out which characters UTF-8 encodes (3 s in each process).
_MESSAGES = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)


@clause("SEL-4.1", "SEL-4.2", "SEL-4.3", "SEL-4.5")
@examples(8)
@given(fleet_specs(min_servers=2, max_servers=4, min_tools=5, max_tools=25), _MESSAGES, st.integers(0, 3))
@example(spec=_CROWDED, message="", base_count=90)
def test_same_input_same_definitions_whatever_the_order(
    sut: Sut, fleets: Fleets, vector_diagnosis: Diagnosis, spec: FleetSpec, message: str, base_count: int
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
    if by_name(first) != by_name(again):
        raise fail(
            ("SEL-4.1",),
            "the same input gave different definitions",
            expected=names(first),
            observed=names(again),
            case=case,
        )
    reordered = (("SEL-4.2", by_server, "the servers"), ("SEL-4.3", by_listing, "the tools in the listings"))
    if any(names(first) != names(other) for _, other, _ in reordered):
        _ties_by_name(sut, vector_diagnosis)
    for sentence, other, what in reordered:
        if sorted(names(first)) != sorted(names(other)):
            raise fail(
                (sentence,),
                f"reordering {what} changed which tools are active",
                expected=sorted(set(names(first)) - set(names(other))),
                observed={"active instead": sorted(set(names(other)) - set(names(first)))},
                case=case,
            )
    # The order itself is the implementation's (ID-1); keeping it is recommended. An order that
    # differs between two runs of the same input is DEF-4.1 broken, which its checks report:
    # then no order is there to keep.
    if names(first) != names(again):
        return
    for _, other, what in reordered:
        if names(first) != names(other):
            raise fail(
                ("SEL-4.5",),
                f"reordering {what} changed the order of the definitions",
                expected=names(first),
                observed=names(other),
                case=case,
            )


def _outcome(opened: list[Definition] | OutcomeError) -> object:
    """What a run.open gave, to compare: the refusal's kind, or the definitions' names, sorted
    (their order is DEF-4's)."""
    return opened.kind if isinstance(opened, OutcomeError) else sorted(names(opened))


@clause("SEL-4.4")
def test_left_out_run_fields_count_as_none_and_empty(sut: Sut, fleets: Fleets) -> None:
    """Each pair opens alike: the fields left out, and the same fields given as ``[]``/``""``.
    Two auto servers with more than 12 tools each, so the first round is a ranking."""
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=30), ServerSpec(id="s1", tool_count=20)), seed=5)
    with fleets.serve(spec) as served:
        given = open_params(served.servers)
        pairs: dict[str, tuple[OpenParams, OpenParams]] = {
            "baseTools, userMessage and systemPrompt left out": ({"servers": served.servers}, given),
            "every field left out": ({}, open_params([])),
        }
        got = {what: (run(refusal_or(sut, bare)), run(refusal_or(sut, full))) for what, (bare, full) in pairs.items()}
        case = served.describe()

    for what, (bare, full) in got.items():
        if _outcome(bare) != _outcome(full):
            raise fail(
                ("SEL-4.4",),
                f"a run.open with {what} did not open as one with none and empty ones",
                expected=_outcome(full),
                observed=str(bare) if isinstance(bare, OutcomeError) else _outcome(bare),
                case=case | {"params": pairs[what][0]},
            )


# Texts a host may put where a message was left out: what `str()` of a missing value gives
# in Python and JavaScript, JSON's null, and the usual placeholders.
PLACEHOLDER_WORDS = (
    "none", "null", "nil", "undefined", "nan", "xxxx", "xxx", "todo", "tbd", "placeholder",
    "default", "empty", "missing", "unknown", "hello", "test", "message", "prompt", "user", "lorem",
)  # fmt: skip


@clause("SEL-4.4")
def test_a_left_out_message_is_no_placeholder_text(sut: Sut, fleets: Fleets) -> None:
    """One server of 12 tools that only numbers tell apart, and one tool per placeholder
    word, named so that it comes after them: the empty message and prompt take the 12,
    and a host that ranks a left-out one as a placeholder text takes a placeholder's tool."""
    numbered = plain_server("p", 12).tools
    placeholders = tuple(
        ToolSpec(name=f"zz_{word}", description=f"Handles the {word} case.", input_schema={"type": "object"})
        for word in PLACEHOLDER_WORDS
    )
    spec = FleetSpec(servers=(ServerSpec(id="p", tool_count=0, tools=numbered + placeholders),), seed=5)
    with fleets.serve(spec) as served:
        left_out: OpenParams = {"servers": served.servers}
        bare, full = run(refusal_or(sut, left_out)), run(refusal_or(sut, open_params(served.servers)))
        case = served.describe() | {"params": left_out}

    if _outcome(bare) != _outcome(full):
        raise fail(
            ("SEL-4.4",),
            "a run.open with userMessage and systemPrompt left out did not open as one with both empty: "
            "a left-out text was ranked as some other text",
            expected=_outcome(full),
            observed=str(bare) if isinstance(bare, OutcomeError) else _outcome(bare),
            case=case,
        )


def _walk_goes_past_a_capped_server(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a first round over a server of 20 tools and one of 5 holds 12 + 5
    (SEL-2.1): a walk that stops at the first server at its cap, or short of the capacity,
    leaves the worked example short for that reason.

    Raises:
        Inconclusive: naming SEL-2.1.
    """
    with fleets.serve(FleetSpec(servers=(plain_server("s0", 20), plain_server("s1", 5)))) as served:
        got = run(refusal_or(sut, open_params(served.servers)))
    shown = [] if isinstance(got, OutcomeError) else names(mcp_definitions(got, []))
    precondition(
        "SEL-2.1",
        isinstance(got, OutcomeError) or len(shown) >= 12 + 5,
        f"a first round over s0 (20 tools) and s1 (5 tools) holds {len(shown)} tools, not 17",
        observed=shown,
    )


@clause("SEL-6.1")
def test_worked_example(sut: Sut, fleets: Fleets) -> None:
    spec = preset("seed-example")
    base = base_tools(3)
    with fleets.serve(spec) as served:

        async def body() -> list[Definition]:
            async with sut.open(open_params(served.servers, base)) as r:
                return await r.definitions()

        defs = run(body())
        case = served.describe() | {"baseTools": 3}
    mcp = names(mcp_definitions(defs, names(base)))
    per = {s.id: sum(1 for n in mcp if n.startswith(s.id + "__")) for s in spec.servers}
    # More than 12 tools of a server is the cap of SEL-1 broken, not the example.
    first_round_capped(first_round(tools_of(spec), {}, 3), tools_of(spec), mcp)
    if len(defs) != 52 or len(mcp) != 48 or set(per.values()) != {12} or DISCOVERY not in names(defs):
        _walk_goes_past_a_capped_server(sut, fleets)
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
    # capacity 3: the global ranking takes the three matching tools of s1, whatever the
    # servers' order, and none of s0's, which come first in the configuration.
    "global-not-server-by-server": (
        {
            "s0": [_tool("alpha_1"), _tool("alpha_2"), _tool("alpha_3")],
            "s1": [_tool("deploy_1"), _tool("deploy_2"), _tool("deploy_3")],
        },
        {},
        92,
        "deploy",
        {"s1__deploy_1", "s1__deploy_2", "s1__deploy_3"},
        "SEL-5.1",
    ),
    # capacity 4: s0 may take two tools (maxActiveTools 2); after its cap, the walk goes
    # on past s0's better tools to s1's, in score order, then by name.
    "skip-until-the-capacity-is-used": (
        {
            "s0": [_tool("deploy_now", "Deploy."), _tool("deploy_later", "Deploy."), _tool("deploy_never", "Deploy.")],
            "s1": [_tool("deploy_x"), _tool("zeta"), _tool("alpha")],
        },
        {"s0": {"maxActiveTools": 2}},
        91,
        "deploy",
        {"s0__deploy_later", "s0__deploy_never", "s1__deploy_x", "s1__alpha"},
        "SEL-5.2",
    ),
    # capacity 1: create_list_alpha_beta (two words, a read verb and a write verb, read-only:
    # 24 + 8 - 32 + 3) ties with zz_thing (read-only, no word: 3), the best tool before the
    # message is read; the name decides, whatever the tools scored before the message.
    "tie-between-a-matching-tool-and-the-best-other": (
        {
            "s0": [
                ToolSpec(name="zz_thing", description="Thing.", annotations={"readOnlyHint": True}),
                ToolSpec(name="create_list_alpha_beta", description="Thing.", annotations={"readOnlyHint": True}),
                _tool("aa_x"),
            ]
        },
        {},
        94,
        "show alpha beta",
        {"s0__create_list_alpha_beta"},
        "SEL-5.1",
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


# The ranking sentences these cases rely on, and those their isolating lexical vectors
# assume: a case that differs while the vectors find one of them broken is blamed on it.
FIRST_ROUND_RELIES_ON = (
    *("RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-4.1", "RNK-6.2", "RNK-6.3", "RNK-6.4", "RNK-6.6"),
    *("RNK-8.1", "DSC-10.2", "DSC-10.3"),
)


@clause("SEL-5.1", "SEL-5.2", *FIRST_ROUND_RELIES_ON)
@pytest.mark.parametrize("name", sorted(FIRST_ROUND_CASES))
def test_the_first_round_walks_one_global_ranking(
    sut: Sut, fleets: Fleets, vector_diagnosis: Diagnosis, name: str
) -> None:
    servers, policies, base, user, expected, sentence = FIRST_ROUND_CASES[name]
    got, case = _first_round_names(sut, fleets, servers, policies, base, user)
    tools = tools_of(
        FleetSpec(servers=tuple(ServerSpec(id=sid, tool_count=0, tools=tuple(ts)) for sid, ts in servers.items()))
    )
    # The walk skips a server at its cap: a server past it broke SEL-1 first.
    first_round_capped(first_round(tools, policies, base), tools, got)
    # How many tools the round takes is SEL-2.1's and the budgets' to say: a round that took
    # fewer is held to taking only tools of the case's answer, one that took more to all of them.
    if not (got <= expected or expected <= got):
        twelve_per_server(sut, fleets)
        explained = vector_diagnosis.accounting(FIRST_ROUND_RELIES_ON, sut.cited)
        raise fail(
            explained or (sentence,),
            "the first round did not take the tools one global ranking gives"
            + (f"; the lexical vectors find {', '.join(explained)} broken, which accounts for it" if explained else ""),
            expected=sorted(expected),
            observed=sorted(got),
            case=case,
        )
