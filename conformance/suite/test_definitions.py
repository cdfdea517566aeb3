"""Definitions (DEF-*): what the definition list of a run holds, that it is produced anew
for every request and only grows, its order, and base tools that collide with tools of
the run."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance import OutcomeError, Run, Sut, clause
from conformance._wire_types import Definition, ServerConfig, ToolPolicy, ToolResult
from conformance.suite._explore import BASES, FLEETS, STEPS, Steps, Trace, explore, plan
from conformance.suite._fleets import Fleet, Fleets
from conformance.suite._preconditions import named_activation_is_due, precondition
from conformance.suite._predictions import DEFAULT_MAX_ACTIVE, DYNAMIC
from conformance.suite._strategies import FleetAndPolicies, examples, opening
from conformance.suite._wire import (
    DISCOVERY,
    activated,
    base_tools,
    by_name,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    portable,
    refusal_or,
    run,
)
from mock_servers import FleetSpec, ServerSpec, ToolCalled, ToolSpec, example_arguments, generate_tools

_SERVER = ServerSpec(id="s0", tool_count=20)
_TOOLS = {t["name"]: t for t in generate_tools(_SERVER)}
_NAMES = list(_TOOLS)


def _carried_as_given(base: list[Definition]) -> list[Definition]:
    """``base`` with fields a definition may carry beyond the three a host needs, on the first."""
    if not base:
        return base
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "What to look up."}, "n": {"type": "integer"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    # Fields a definition may carry (P19) that the protocol's type does not name.
    first = cast(
        Definition, {**base[0], "inputSchema": schema, "title": "Look it up", "annotations": {"readOnlyHint": True}}
    )
    return [first, *base[1:]]


@clause("DEF-1.1", "DEF-1.2", "DEF-1.3", "DEF-4.2", "CAT-3.1")
@examples(10)
@given(FLEETS, st.integers(0, 5))
@example(fleet=(FleetSpec(servers=(_SERVER,)), {"s0": {"pinnedTools": [_NAMES[-1]]}}), base_count=2)
def test_definitions_are_the_base_tools_the_discovery_tool_and_the_active_tools_as_listed(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    fleet, base_count = opening(fleet, base_count)
    model = plan(fleet, base_count)
    spec, policies = fleet
    base = _carried_as_given(base_tools(base_count))
    with fleets.serve(spec, policies) as served:
        case = served.describe() | {"baseTools": base_count}

        async def body(servers: list[ServerConfig]) -> tuple[Any, Any]:
            async with sut.open(open_params(servers, base)) as r:
                return await r.definitions(), await r.definitions()

        try:
            first, second = run(body(served.servers))
        except OutcomeError as refused:
            # Refused for a pinned tool its policy excludes (POL-7, ID-9): the same run
            # without those pins has the same definitions.
            if not model.refused_for_a_pin(refused.kind, refused.message):
                raise
            case["policies"] = model.without_excluded_pins(served.policies)
            first, second = run(body(served.with_policies(case["policies"])))
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
            shown = next((d for d in first if d["name"] == b["name"]), None)
            raise fail(("DEF-1.3",), "a base tool is missing or altered", expected=b, observed=shown, case=case)
    cat = catalog(served.tools)
    for d in mcp_definitions(first, names(base)):
        if d["name"] not in cat:
            raise fail(
                ("CAT-3.1", "DEF-1.1"),
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


#: Two servers whose tools all fit the first round, and a message whose words reach some of
#: them: a ranking that merges the tools the message scores with the rest must meet each once.
_PAGES = tuple(
    ToolSpec(name=name, description=f"{name.replace('_', ' ').capitalize()}.")
    for name in ("get_page", "list_pages", "delete_page", "create_issue", "close_issue")
)
_PAGED = FleetSpec(servers=tuple(ServerSpec(id=sid, tool_count=0, tools=_PAGES) for sid in ("a", "b")))


@clause("DEF-1.1")
def test_a_first_round_ranked_by_its_message_defines_each_tool_once(sut: Sut, fleets: Fleets) -> None:
    message = "please get the page"
    with fleets.serve(_PAGED) as served:
        case = served.describe() | {"userMessage": message}
        got = run(refusal_or(sut, open_params(served.servers, [], message)))
    if isinstance(got, OutcomeError):
        raise AssertionError(f"run.open refused ten tools that fit every budget: {got}")
    shown = names(got)
    if len(set(shown)) != len(shown):
        raise fail(
            ("DEF-1.1",),
            "a definition appears twice in a first round ranked by the user message",
            observed=shown,
            case=case,
        )


# A tool listed with no description at all: the field is absent from its definition.
_UNDESCRIBED = ToolSpec(name="ping", wire={"name": "ping", "inputSchema": {"type": "object"}})


@clause("DEF-1.1", "DEF-1.2")
def test_a_tool_listed_without_a_description_is_defined_without_one(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(dataclasses.replace(_SERVER, tool_count=3, tools=(_UNDESCRIBED,)),))
    with fleets.serve(spec, {"s0": {"pinnedTools": ["ping"]}}) as served:
        case = served.describe()
        listed = next(t for t in served.tools["s0"] if t["name"] == "ping")

        async def body() -> list[Definition]:
            async with sut.open(open_params(served.servers)) as r:
                return await r.definitions()

        defs = run(body())
    shown = next((d for d in defs if d["name"] == "s0__ping"), None)
    if shown is None:
        raise fail(("DEF-1.1",), "the pinned tool s0__ping is not in the definitions", observed=names(defs), case=case)
    if shown.get("description", "") != listed.get("description", ""):
        raise fail(
            ("DEF-1.2",),
            "a tool listed without a description reaches the model with one",
            expected={"description": "absent or empty"},
            observed={"description": shown["description"]},
            case=case,
        )


@clause("DEF-1.1", "DEF-2.2", "DEF-3.1")
@examples(8)
@given(FLEETS, BASES, STEPS)
# Two calls in a row that each name the server, scoped to it: both activate, as a rule.
@example(
    fleet=(FleetSpec(servers=(ServerSpec(id="s0", tool_count=40),)), {"s0": {}}),
    base_count=0,
    steps=[(0, 12, True)] * 2,
)
def test_discovered_tools_are_in_every_later_definition_list(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    fleet, base_count = opening(fleet, base_count, discovery=True)
    trace = explore(sut, fleets, fleet, base_count, steps, then=_call_an_unreported_gain)
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
            # Tools the definitions gained that the result did not report: if the gate runs
            # them, they are active, and the result is what is wrong: its report (DSC-6.1), or
            # an error result for a limit over 12 that activated tools anyway (DSC-5.3).
            if trace.after is not None:
                unreported, sentence = trace.after
                precondition(
                    sentence,
                    not _executed(trace.calls_after, unreported),
                    f"{unreported} joined the definitions and runs, but the discovery result did not report it",
                )
            raise fail(
                ("DEF-1.1",),
                "the active set changed other than by the activated tools",
                expected=sorted(set(shown) | set(step.activated)),
                observed=now,
                case=trace.case,
            )
        shown = now


async def _call_an_unreported_gain(r: Run, trace: Trace) -> tuple[str, str] | None:
    """Call the first tool a discovery call added to the definitions without reporting it;
    its qualified name and the sentence its result broke, or None when every gain was
    reported."""
    previous = trace.mcp(trace.start)
    for step in trace.steps:
        now = trace.mcp(step.definitions)
        gained = [n for n in now if n not in previous and n not in step.activated and n in trace.catalog]
        if gained:
            tool = trace.catalog[gained[0]][1]
            await r.call(gained[0], example_arguments(tool))
            return gained[0], "DSC-5.3" if step.result["isError"] else "DSC-6.1"
        previous = now
    return None


def _executed(calls: Sequence[ToolCalled], qualified_name: str) -> bool:
    sid, _, name = qualified_name.partition("__")
    return any(c.get("server") == sid and c.get("name") == name for c in calls)


def _extra(name: str) -> Definition:
    return {
        "name": name,
        "description": f"A tool the host adds to one request ({name}).",
        "inputSchema": {"type": "object"},
    }


@clause("DEF-2.1", "DEF-2.2")
def test_every_request_is_assembled_anew_from_the_run(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(_SERVER,))
    with fleets.serve(spec) as served:
        case = served.describe()

        async def body() -> tuple[list[tuple[str, list[str], list[str]]], str | None, list[str], list[str], int]:
            async with sut.open(open_params(served.servers)) as r:
                defs = names(await r.definitions())
                steps = [("a request with extra_a", names(await r.request([_extra("extra_a")])), [*defs, "extra_a"])]
                steps.append(("the next request, with no extra tool", names(await r.request([])), defs))
                # An implementation that made every tool active leaves nothing to discover;
                # the requests before still have to be assembled anew.
                inactive = sorted(set(catalog(served.tools)) - set(defs))
                target = inactive[0] if inactive else None
                found: list[str] = []
                if target is not None:
                    # Few enough candidates that naming one activates it (DSC-5.8).
                    found = activated(await r.call(DISCOVERY, {"query": target, "server_ids": ["s0"], "limit": 12}))
                now = names(await r.definitions())
                after = names(await r.request([_extra("extra_b")]))
                steps.append(("a request with extra_b, after discovery", after, [*now, "extra_b"]))
                case["steps"] = r.case["steps"]
                return steps, target, now, found, len(inactive)

        steps, target, now, found, candidates = run(body())
    if target is not None and target not in now and target not in found:
        precondition(
            "DSC-5.8",
            not named_activation_is_due(candidates, DEFAULT_MAX_ACTIVE - (len(_NAMES) - candidates), DYNAMIC),
            f"discovery did not activate {target}, asked for by its qualified name",
        )
        target = None  # nothing activated, as DSC-5.6 allows with that many candidates
    if target is not None and (target not in now or target not in steps[-1][1]):
        raise fail(
            ("DEF-2.2",),
            f"{target}, activated by discovery, is not in the next definition list and request",
            expected=target,
            observed={"definitions": now, "request": steps[-1][1]},
            case=case,
        )
    for what, got, expected in steps:
        if sorted(got) != sorted(expected):
            raise fail(
                ("DEF-2.1",),
                f"{what} does not carry exactly the run's definitions and that request's own extra tools",
                expected=sorted(expected),
                observed={"extra": sorted(set(got) - set(expected)), "missing": sorted(set(expected) - set(got))},
                case=case,
            )


@clause("DEF-4.1")
def test_the_same_inputs_give_the_same_definitions_in_the_same_order(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(_SERVER, ServerSpec(id="s1", domain="chat", tool_count=6)), seed=8)
    policies: dict[str, ToolPolicy] = {"s0": {"pinnedTools": [_NAMES[-1]]}, "s1": {"mode": "all"}}
    with fleets.serve(spec, policies) as served:
        params = open_params(served.servers, base_tools(2), user="show the open issues")
        case = served.describe() | {"baseTools": 2, "userMessage": params["userMessage"]}

        async def body() -> list[list[str]]:
            async with sut.open(params) as r:
                first = names(await r.definitions())
                # Nothing to discover when every tool is already active; then the second
                # step repeats the first.
                inactive = sorted(set(catalog(served.tools)) - set(first))
                if inactive:
                    await r.call(DISCOVERY, {"query": inactive[0], "server_ids": ["s0"], "limit": 12})
                return [first, names(await r.definitions())]

        one, two = run(body()), run(body())
    # The second run opens after the first one's discovery: starting with other tools is
    # what ISO-2.1 forbids, and the order of the lists is then no longer comparable.
    precondition(
        "ISO-2.1",
        sorted(one[0]) == sorted(two[0]),
        "a run opened with the same inputs after another run's discovery started with other tools",
        observed={"first run": one[0], "second run": two[0]},
    )
    for step, (a, b) in enumerate(zip(one, two, strict=True)):
        if a != b:
            raise fail(
                ("DEF-4.1",),
                "two runs opened with the same inputs, after the same discovery call, list their definitions "
                + ("differently" if sorted(a) == sorted(b) else "with different tools"),
                expected={"step": ["open", "after discovery"][step], "definitions": a},
                observed={"step": ["open", "after discovery"][step], "definitions": b},
                case=case,
            )


@clause("DEF-5.5")
def test_two_base_tools_with_one_name_are_a_config_error(sut: Sut, fleets: Fleets) -> None:
    """A request with two tools of one name is one a provider refuses, and a call by that
    name could mean either."""
    base: list[Definition] = [
        {"name": "read_file", "description": "Reads a file.", "inputSchema": {"type": "object"}},
        {"name": "read_file", "description": "Reads a file, again.", "inputSchema": {"type": "object"}},
    ]
    with fleets.serve(FleetSpec(servers=(_SERVER,))) as served:
        got = run(refusal_or(sut, open_params(served.servers, base)))
        case = served.describe() | {"baseTools": base}
    if not isinstance(got, OutcomeError) or got.kind != "config_error" or "read_file" not in got.message:
        raise fail(
            ("DEF-5.5",),
            "two base tools named read_file did not fail the run with a configuration error naming it",
            expected="config_error naming 'read_file'",
            observed=names(got) if not isinstance(got, OutcomeError) else str(got),
            case=case,
        )


# A base tool named like a tool of the run: (policy of s0, the base tool's name, sentence).
# The tool is active (pinned), in the catalog but never active (denied), or the discovery
# tool, registered with an auto server (without one, see the test after next).
BASE_COLLISIONS: dict[str, tuple[ToolPolicy, str, str]] = {
    "active-mcp-tool": ({"pinnedTools": [_NAMES[0]]}, f"s0__{_NAMES[0]}", "DEF-5.1"),
    "inactive-mcp-tool": ({"deniedTools": [_NAMES[1]]}, f"s0__{_NAMES[1]}", "DEF-5.1"),
    "discovery-tool": ({}, DISCOVERY, "DEF-5.2"),
    # The qualified name of a tool whose name breaks the provider rule (CAT-5), which the
    # model may see under another name or not at all: it is in the catalog all the same.
    "qualified-name-of-a-mapped-tool": ({}, "s0__get.item", "DEF-5.1"),
}
# s0 with one more tool, whose qualified name breaks the provider rule.
_WITH_MAPPED = dataclasses.replace(
    _SERVER, tools=(ToolSpec(name="get.item", description="Fetches one item by its dotted name."),)
)


@clause("DEF-5.1", "DEF-5.2", "DEF-5.3", "DEF-5.4")
@pytest.mark.parametrize("name", sorted(BASE_COLLISIONS))
def test_a_base_tool_named_like_a_tool_of_the_run_is_a_config_error(sut: Sut, fleets: Fleets, name: str) -> None:
    policy, colliding, sentence = BASE_COLLISIONS[name]
    server = _WITH_MAPPED if colliding == "s0__get.item" else _SERVER
    with fleets.serve(FleetSpec(servers=(server,)), {"s0": policy}) as served:
        _expect_collision_refused(sut, served, colliding, sentence)


@clause("DEF-5.2", "DEF-5.3", "DEF-5.4")
def test_a_base_tool_named_search_mcp_tools_without_the_discovery_tool_is_refused_or_kept(
    sut: Sut, fleets: Fleets
) -> None:
    """No server in auto mode: no discovery tool to collide with. The run fails with a
    configuration error naming it, or opens with the base tool as given (ID-15); a call by
    its name then activates nothing and reaches no server."""
    base: list[Definition] = [
        {"name": DISCOVERY, "description": "A built-in search.", "inputSchema": {"type": "object"}}
    ]
    query = {"query": f"s0 {_NAMES[0]}", "server_ids": ["s0"]}
    with fleets.serve(
        FleetSpec(servers=(_SERVER,)), {"s0": {"mode": "allowlist", "allowedTools": _NAMES[:2]}}
    ) as served:
        case = served.describe() | {"baseTools": base, "call": query}

        async def body() -> tuple[list[Definition], ToolResult, list[Definition]] | OutcomeError:
            try:
                async with sut.open(open_params(served.servers, base)) as r:
                    return await r.definitions(), await r.call(DISCOVERY, query), await r.definitions()
            except OutcomeError as exc:
                return exc

        got = run(body())
        reached = served.ledger().calls()
    if isinstance(got, OutcomeError):
        if got.kind != "config_error" or DISCOVERY not in got.message:
            raise fail(
                ("DEF-5.3",) if got.kind == "config_error" else ("DEF-5.2",),
                f"the run with a base tool named {DISCOVERY} failed, but not with a config_error naming it",
                expected=f"config_error naming {DISCOVERY!r}, or an open run",
                observed=str(got),
                case=case,
            )
        return
    before, result, after = got
    carried = [d for d in before if d["name"] == DISCOVERY]
    if carried != base or by_name(after) != by_name(before):
        raise fail(
            ("DEF-5.2",),
            f"a run without the discovery tool did not keep the base tool {DISCOVERY} as given"
            if carried != base
            else f"a call to the base tool {DISCOVERY} changed the run's definitions",
            expected={"base tool": base, "definitions after the call": names(before)},
            observed={"named so": carried, "definitions after the call": names(after), "call": result},
            case=case,
        )
    if reached:
        raise fail(
            ("DEF-5.4",),
            "a call by a base tool's name reached an MCP server",
            expected="no tools/call",
            observed=portable(reached),
            case=case,
        )


@clause("DEF-5.1", "DEF-5.3", "DEF-5.4")
def test_a_base_tool_named_like_the_exposed_name_of_a_mapped_tool_is_a_config_error(sut: Sut, fleets: Fleets) -> None:
    # The name the model sees for a tool whose qualified name breaks the provider rule is the
    # implementation's (ID-2): a first run reads it, a second one brings a base tool of that name.
    with fleets.serve(FleetSpec(servers=(_WITH_MAPPED,)), {"s0": {"pinnedTools": ["get.item"]}}) as served:

        async def first_run() -> list[Definition]:
            async with sut.open(open_params(served.servers)) as r:
                return await r.definitions()

        defs = run(first_run())
        mapped = [
            d["name"]
            for d in mcp_definitions(defs, [])
            if d.get("description") == _WITH_MAPPED.tools[0].description and d["name"] != "s0__get.item"
        ]
        # Left out of the active set rather than mapped (ID-2): no other name to collide with.
        for exposed in mapped:
            _expect_collision_refused(sut, served, exposed, "DEF-5.1")


def _expect_collision_refused(sut: Sut, served: Fleet, colliding: str, sentence: str) -> None:
    """A run of ``served`` with a base tool named ``colliding`` fails with a config_error naming it."""
    base: list[Definition] = [{"name": colliding, "description": "A built-in tool.", "inputSchema": {"type": "object"}}]
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


@clause("DEF-5.4")
def test_a_call_by_a_base_tool_name_reaches_no_server(sut: Sut, fleets: Fleets) -> None:
    # Named with a server's prefix, but no tool of the run has that name: not a collision.
    base: list[Definition] = [
        {"name": "s0__helper", "description": "A built-in helper.", "inputSchema": {"type": "object"}}
    ]
    with fleets.serve(FleetSpec(servers=(_SERVER,))) as served:
        case = served.describe() | {"baseTools": base, "call": "s0__helper"}

        async def body() -> ToolResult:
            async with sut.open(open_params(served.servers, base)) as r:
                return await r.call("s0__helper", {})

        result = run(body())
        reached = served.ledger().calls()
    if reached:
        raise fail(
            ("DEF-5.4",),
            "a call by a base tool's name reached an MCP server",
            expected="no tools/call (what the call returns is the implementation's, ID-6)",
            observed={"result": result, "tools/call": portable(reached)},
            case=case,
        )
