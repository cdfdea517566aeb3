"""Discovery (DSC-*): when the discovery tool is registered and what it looks like, which
tools it may activate and how many, what it reports, invalid arguments, and scoping.

The properties drive discovery sequences over generated fleets (:mod:`._explore`) and
each checks one invariant of the trace; example-based tests beside them pin the
boundaries (limits, scopes, arguments).
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance import Sut, clause
from conformance.suite._explore import BASES, FLEETS, STEPS, Steps, explore, plan
from conformance.suite._first_round import open_first_round
from conformance.suite._fleets import Fleets
from conformance.suite._oracle import DEFAULT_LIMIT, MAX_LIMIT, discovery_bound
from conformance.suite._strategies import FleetAndPolicies, examples
from conformance.suite._wire import DISCOVERY, activated, base_tools, fail, names, open_params, run, structured
from mock_servers import FleetSpec, ServerSpec, ToolSpec


def _servers(*specs: tuple[int, dict[str, Any]]) -> FleetAndPolicies:
    """Servers ``s0``, ``s1``… of ``(tool_count, policy)``."""
    fleet = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, (n, _) in enumerate(specs)), seed=11)
    return fleet, {f"s{i}": dict(p) for i, (_, p) in enumerate(specs)}


@clause("DSC-1.1", "DSC-1.2", "DSC-2.1", "DSC-2.2", "DSC-2.3")
@examples(10)
@given(FLEETS, st.integers(0, 5))
def test_the_discovery_tool_is_registered_exactly_with_an_auto_server(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    opened = open_first_round(sut, fleets, fleet, base_count)
    defs = opened.definitions(("DSC-1.1",))
    found = [d for d in defs if d["name"] == DISCOVERY]
    if bool(found) != opened.model.discovery:
        raise fail(
            ("DSC-1.1" if opened.model.discovery else "DSC-1.2",),
            "the discovery tool's presence does not match the servers' modes",
            expected=opened.model.discovery,
            observed=bool(found),
            case=opened.case,
        )
    if not found:
        return
    schema = found[0]["inputSchema"]
    props = schema.get("properties", {})
    required = schema.get("required", [])
    checks = {
        "DSC-2.1": schema.get("type") == "object"
        and props.get("query", {}).get("type") == "string"
        and "query" in required,
        "DSC-2.2": props.get("server_ids", {}).get("type") == "array"
        and props.get("server_ids", {}).get("items", {}).get("type") == "string"
        and "server_ids" not in required,
        "DSC-2.3": props.get("limit", {}).get("type") == "integer" and "limit" not in required,
    }
    for sentence, ok in checks.items():
        if not ok:
            raise fail(
                (sentence,),
                "the discovery tool's input schema is not as specified",
                expected="object; required string query; optional string-array server_ids, integer limit",
                observed=schema,
            )


# What the description of the discovery tool should say (DSC-3), each as words any of
# which will do: when to call it, and that its tools come on the next turn.
WHEN_TO_CALL = ("not enough", "need", "missing", "lack", "do not have", "don't have", "cannot", "can't", "more tools")
NEXT_TURN = ("next",)
TURN = ("turn", "call", "request", "step", "message", "response")


@clause("DSC-3.1", "DSC-3.2", "DSC-1.1")
def test_the_description_says_when_to_call_it_and_when_tools_arrive(sut: Sut, fleets: Fleets) -> None:
    spec, policies = _servers((20, {}))
    with fleets.serve(spec, policies) as served:

        async def body() -> list[dict[str, Any]]:
            async with sut.open(open_params(served.servers)) as r:
                return await r.definitions()

        defs = run(body())
    found = [d for d in defs if d["name"] == DISCOVERY]
    if not found:
        raise fail(("DSC-1.1",), "the discovery tool is missing with an auto server", observed=names(defs))
    text = " ".join(str(found[0].get("description", "")).casefold().split())
    said = {
        "DSC-3.1": any(w in text for w in WHEN_TO_CALL),
        "DSC-3.2": any(w in text for w in NEXT_TURN) and any(w in text for w in TURN),
    }
    for sentence, ok in said.items():
        if not ok:
            raise fail(
                (sentence,),
                "the discovery tool's description does not say "
                + ("when to call it" if sentence == "DSC-3.1" else "that activated tools appear on the next turn"),
                expected="call it when the current tools are not enough; activated tools appear on the next turn",
                observed=found[0].get("description"),
            )


@clause("DSC-4.1", "DSC-4.2", "DSC-4.3", "DSC-4.4", "DSC-4.5", "DSC-5.1", "DSC-5.2", "DSC-5.3", "DSC-5.4", "DSC-5.5")
@clause("DSC-5.7", "POL-1.4", "POL-4.2")
@examples(10)
@given(FLEETS, BASES, STEPS)
def test_discovery_activates_only_candidates_within_its_limits(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    trace = explore(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    policies = fleet[1]
    for step in trace.steps:
        if step.result["isError"]:
            raise fail(("DSC-5.7",), "a valid discovery call failed", observed=step.result, case=trace.case)
        room = model.dynamic_capacity - len(step.before)
        bound = discovery_bound(step.limit, room)
        if len(step.activated) > bound:
            sentence = (
                "DSC-5.4"
                if room < min(step.limit or DEFAULT_LIMIT, MAX_LIMIT)
                else ("DSC-5.2" if step.limit is None else "DSC-5.3" if step.limit > MAX_LIMIT else "DSC-5.1")
            )
            raise fail(
                (sentence,),
                "discovery activated more than its (clamped) limit or the dynamic capacity allows",
                expected=f"<= {bound} (limit {step.limit}, dynamic room {room})",
                observed=step.activated,
                case=trace.case,
            )
        for q in step.activated:
            if q not in cat:
                raise fail(("DSC-4.4",), "discovery activated a tool of no server", observed=q, case=trace.case)
            if q in step.before or step.activated.count(q) > 1:
                raise fail(("DSC-4.2",), "discovery activated a tool already active", observed=q, case=trace.case)
            sid, tool = cat[q]
            m = model.servers[sid]
            if m.mode != "auto":
                raise fail(
                    ("DSC-4.1",),
                    f"discovery activated a tool of {sid}, which is not in auto mode",
                    observed=q,
                    case=trace.case,
                )
            if step.scope and sid not in step.scope:
                raise fail(
                    ("DSC-4.3",),
                    "discovery activated a tool outside server_ids",
                    expected=step.scope,
                    observed=q,
                    case=trace.case,
                )
            if tool["name"] not in m.eligible:
                listed = policies.get(sid, {}).get("allowedTools")
                sentence = "POL-4.2" if listed and tool["name"] not in listed else "POL-1.4"
                raise fail(
                    (sentence,),
                    "discovery activated a tool its server's policy does not admit",
                    expected={"eligible": m.eligible},
                    observed=q,
                    case=trace.case,
                )
        before = trace.per_server(set(step.before))
        after = trace.per_server(set(step.before) | set(step.activated))
        for sid, count in after.items():
            m = model.servers[sid]
            if count > before.get(sid, 0) and count > m.max_active:
                raise fail(
                    ("DSC-5.5" if before.get(sid, 0) < m.max_active else "DSC-4.5",),
                    f"discovery activated tools of {sid} beyond its remaining maxActiveTools room",
                    expected=f"<= {m.max_active}",
                    observed={"before": before.get(sid, 0), "after": count},
                    case=trace.case,
                )


@clause("DSC-6.1", "DSC-6.2", "DSC-6.3")
@examples(8)
@given(FLEETS, BASES, STEPS)
def test_the_result_reports_the_activated_tools_and_the_counts(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    trace = explore(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    for step in trace.steps:
        if step.result["isError"]:
            continue
        content = step.result.get("structuredContent")
        if not isinstance(content, dict) or not isinstance(content.get("activated"), list):
            raise fail(
                ("DSC-6.1",),
                "a successful discovery result has no structuredContent.activated list",
                observed=step.result,
                case=trace.case,
            )
        now = trace.mcp(step.definitions)
        for entry in content["activated"]:
            name = entry.get("name") if isinstance(entry, dict) else None
            if name not in now or name in step.before:
                raise fail(
                    ("DSC-6.1",), "activated names a tool that was not newly activated", observed=entry, case=trace.case
                )
            if name in cat and entry.get("description") != cat[name][1].get("description", ""):
                raise fail(
                    ("DSC-6.1",),
                    "an activated entry does not carry the tool's description",
                    expected=cat[name][1].get("description", ""),
                    observed=entry,
                    case=trace.case,
                )
        active = len(set(step.before) | set(step.activated))
        for sentence, key, want in (
            ("DSC-6.2", "activeCount", active),
            ("DSC-6.3", "remainingCapacity", model.dynamic_capacity - active),
        ):
            if content.get(key) != want:
                raise fail((sentence,), f"{key} is wrong", expected=want, observed=content, case=trace.case)


@clause("DSC-9.1")
@examples(6)
@given(FLEETS, BASES, STEPS)
def test_discovery_never_calls_a_server_tool(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    trace = explore(sut, fleets, fleet, base_count, steps)
    if trace.calls:
        raise fail(("DSC-9.1",), "discovery called a server tool", observed=trace.calls, case=trace.case)


# Invalid arguments, each with the sentence that makes it invalid.
INVALID_DISCOVERY: list[tuple[str, dict[str, Any]]] = [
    ("DSC-7.1", {}),
    ("DSC-7.1", {"query": ""}),
    ("DSC-7.1", {"query": "   "}),
    ("DSC-7.1", {"query": 5}),
    ("DSC-7.1", {"query": None}),
    ("DSC-7.1", {"query": ["issue"]}),
    ("DSC-7.2", {"query": "issue", "limit": 0}),
    ("DSC-7.2", {"query": "issue", "limit": -3}),
    ("DSC-7.2", {"query": "issue", "limit": "3"}),
    ("DSC-7.2", {"query": "issue", "limit": 2.5}),
    ("DSC-7.2", {"query": "issue", "limit": True}),
    ("DSC-7.3", {"query": "issue", "server_ids": "s0"}),
    ("DSC-7.3", {"query": "issue", "server_ids": [1]}),
    ("DSC-7.4", {"query": "issue", "server_ids": ["nope"]}),
    ("DSC-7.4", {"query": "issue", "server_ids": ["s0", "nope"]}),
]


@clause("DSC-7.1", "DSC-7.2", "DSC-7.3", "DSC-7.4")
@pytest.mark.parametrize(("sentence", "arguments"), INVALID_DISCOVERY, ids=[repr(a) for _, a in INVALID_DISCOVERY])
def test_invalid_arguments_are_an_error_result_that_activates_nothing(
    sut: Sut, fleets: Fleets, sentence: str, arguments: dict[str, Any]
) -> None:
    spec, policies = _servers((40, {}), (5, {"mode": "all"}))
    with fleets.serve(spec, policies) as served:
        case = served.describe()

        async def body() -> tuple[Any, Any, Any]:
            async with sut.open(open_params(served.servers)) as r:
                before = await r.definitions()
                result = await r.call(DISCOVERY, cast(Any, arguments))
                return before, result, await r.definitions()

        before, result, after = run(body())
    if not result["isError"] or after != before:
        raise fail(
            (sentence,),
            "invalid discovery arguments were accepted or activated tools",
            expected="isError and unchanged definitions",
            observed={"arguments": arguments, "result": result, "new": sorted(set(names(after)) - set(names(before)))},
            case=case,
        )


@clause("DSC-8.1", "DSC-8.2")
def test_an_empty_scope_is_no_scope_and_a_non_auto_server_finds_nothing(sut: Sut, fleets: Fleets) -> None:
    spec, policies = _servers((40, {}), (5, {"mode": "all"}))
    with fleets.serve(spec, policies) as served:
        case = served.describe()

        async def body() -> tuple[Any, Any]:
            async with sut.open(open_params(served.servers, base_tools(0))) as r:
                scoped = await r.call(DISCOVERY, {"query": "s1 list create", "server_ids": ["s1"]})
                target = "s0__" + served.tools["s0"][-1]["name"]
                scopes: list[list[str] | None] = [[], None]
                empty = [await r.call(DISCOVERY, {"query": target, "server_ids": scope}) for scope in scopes]
                return scoped, empty

        scoped, empty = run(body())
    if scoped["isError"] or activated(scoped):
        raise fail(
            ("DSC-8.2",),
            "discovery scoped to a non-auto server failed or found tools",
            expected="success, nothing activated",
            observed=scoped,
            case=case,
        )
    refused = [result for result in empty if result["isError"]]
    if refused:
        raise fail(("DSC-8.1",), "an empty or null server_ids was refused", observed=refused, case=case)


# Small servers (at most 12 candidates each) for DSC-5.8: a query that is a candidate's
# qualified name, scoped to its server, finds it.
def _small(count: int) -> ServerSpec:
    return ServerSpec(
        id="small",
        tool_count=0,
        tools=tuple(
            ToolSpec(name=f"tool_{i}", description=f"Does thing number {i}.", input_schema={"type": "object"})
            for i in range(count)
        ),
    )


@clause("DSC-5.8", "DSC-5.1", "DSC-5.2")
@pytest.mark.parametrize(("count", "limit"), [(1, 1), (6, None), (6, 6), (7, 12), (12, 12)])
def test_a_candidate_asked_for_by_its_qualified_name_is_activated(
    sut: Sut, fleets: Fleets, count: int, limit: int | None
) -> None:
    spec = FleetSpec(servers=(_small(count),))
    target = f"small__tool_{count - 1}"
    arguments: dict[str, Any] = {"query": target, "server_ids": ["small"]}
    if limit is not None:
        arguments["limit"] = limit
    with fleets.serve(spec) as served:
        case = served.describe() | {"baseTools": 95, "arguments": arguments}

        async def body() -> dict[str, Any]:
            async with sut.open(open_params(served.servers, base_tools(95))) as r:
                return await r.call(DISCOVERY, arguments)

        result = run(body())
    found = activated(result)
    if count <= (limit or DEFAULT_LIMIT) and target not in found:
        raise fail(
            ("DSC-5.8",),
            "a candidate asked for by its qualified name, scoped to its server, was not activated",
            expected=target,
            observed=structured(result) or result,
            case=case,
        )
    if len(found) > (limit or DEFAULT_LIMIT):
        raise fail(
            ("DSC-5.2" if limit is None else "DSC-5.1",),
            "discovery activated more tools than its limit",
            expected=f"<= {limit or DEFAULT_LIMIT}",
            observed=found,
            case=case,
        )


@clause("DSC-10.2")
def test_discovery_without_relevance_activates_nothing(sut: Sut, fleets: Fleets) -> None:
    tools = (
        ToolSpec(name="a_thing", description="Thing.", input_schema={"type": "object"}),
        ToolSpec(name="b_other", description="Other.", input_schema={"type": "object"}),
    )
    spec = FleetSpec(servers=(ServerSpec(id="s", tool_count=0, tools=tools),))
    with fleets.serve(spec) as served:

        async def body() -> list[str]:
            async with sut.open(open_params(served.servers, base_tools(95))) as r:
                return activated(await r.call(DISCOVERY, {"query": "zebra", "limit": 6}))

        got = run(body())
        case = served.describe() | {"query": "zebra", "baseTools": 95}
    if got:
        raise fail(
            ("DSC-10.2",),
            "discovery activated tools with no relevance signal from the query",
            expected=[],
            observed=got,
            case=case,
        )
