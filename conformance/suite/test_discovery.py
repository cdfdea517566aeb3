"""Discovery (DSC-*): when the discovery tool is registered and what it looks like, which
tools it may activate and how many, what it reports, invalid arguments, and scoping.

The properties drive discovery sequences over generated fleets (:mod:`._explore`) and
each checks one invariant of the trace; example-based tests beside them pin the
boundaries (limits, room, scopes, arguments). Checks of ``core`` sentences never count on
a call to activate anything beyond what DSC-5.8 guarantees (:mod:`._named`).
"""

from __future__ import annotations

import json
from typing import Any, cast

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance import Sut, clause
from conformance._wire_types import Definition, ToolPolicy, ToolResult
from conformance.suite._discovery_cases import (
    ABSENT,
    ASKED_BY_NAME,
    AT_MAX,
    INVALID_DISCOVERY,
    LEXICAL_DISCOVERY,
    LEXICAL_TOOLS,
    LIMITS,
    NOT_AUTO,
    REGISTRATION,
    RELEVANT,
    ROOM_OF_TWO,
    WIDE,
    plain,
    servers,
    tool,
)
from conformance.suite._explore import BASES, FLEETS, STEPS, Steps, explore, plan
from conformance.suite._first_round import open_first_round, with_examples
from conformance.suite._fleets import Fleets
from conformance.suite._named import ask_for, discover_in_turn, plain_server
from conformance.suite._preconditions import (
    activations_kept,
    definitions_follow_activations,
    dynamic_capacity_kept,
    left_out_tools_activatable,
    precondition,
    qualified_names_kept,
    read_only_applied,
)
from conformance.suite._predictions import DEFAULT_LIMIT, MAX_LIMIT, discovery_bound
from conformance.suite._strategies import FleetAndPolicies, examples, opening
from conformance.suite._vectors import Diagnosis
from conformance.suite._wire import (
    DISCOVERY,
    activated,
    base_tools,
    by_name,
    fail,
    named_in,
    names,
    open_params,
    qualified,
    result_text,
    run,
    structured,
)
from mock_servers import FleetSpec, ListedTool, ServerSpec, generate_tools


@clause("DSC-1.1", "DSC-1.2", "DSC-2.1", "DSC-2.2", "DSC-2.3", "DSC-2.4")
@examples(10)
@given(FLEETS, st.integers(0, 5))
@with_examples(REGISTRATION)
def test_the_discovery_tool_is_registered_exactly_with_an_auto_server(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    fleet, base_count = opening(fleet, base_count)
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
    server_id = fleet[0].servers[0].id
    valid = [
        {"query": "x"},
        {"query": "x", "server_ids": []},
        {"query": "x", "server_ids": [server_id]},
        *({"query": "x", "limit": limit} for limit in range(1, MAX_LIMIT + 1)),
    ]
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    refused = [arguments for arguments in valid if not validator.is_valid(arguments)]
    if refused:
        raise fail(
            ("DSC-2.4",),
            "the discovery tool's input schema declares invalid arguments the tool accepts",
            expected=f"every non-empty query, with or without server ids of the run and any limit from 1 to {MAX_LIMIT}",
            observed={"schema": schema, "refused": refused},
        )


# What the description of the discovery tool should say (DSC-3), each as words any of
# which will do: when to call it, and that its tools come on the next turn.
WHEN_TO_CALL = ("not enough", "need", "missing", "lack", "do not have", "don't have", "cannot", "can't", "more tools")
NEXT_TURN = ("next",)
TURN = ("turn", "call", "request", "step", "message", "response")


@clause("DSC-3.1", "DSC-3.2", "DSC-1.1")
def test_the_description_says_when_to_call_it_and_when_tools_arrive(sut: Sut, fleets: Fleets) -> None:
    spec, policies = servers((20, {}))
    with fleets.serve(spec, policies) as served:

        async def body() -> list[Definition]:
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


# Explicit examples: each step is (query word, limit, scoped); word 0 is the first server
# id, which the lexical ranker matches on every tool of that server.
@clause("DSC-4.1", "DSC-4.2", "DSC-4.3", "DSC-5.1", "DSC-5.2", "DSC-5.3", "DSC-5.4", "DSC-5.7")
@clause("POL-1.4", "POL-4.2", "SEL-3.1")
@examples(10)
@given(FLEETS, BASES, STEPS)
@example(fleet=AT_MAX, base_count=0, steps=[(0, 12, True)])
@example(fleet=NOT_AUTO, base_count=0, steps=[(1, 12, False)])
@example(fleet=ROOM_OF_TWO, base_count=0, steps=[(0, 12, True)])
@example(fleet=WIDE, base_count=0, steps=[(0, 1, True), (0, 11, True), (0, 13, True), (0, None, False)])
@example(fleet=WIDE, base_count=94, steps=[(0, 12, True), (0, 5, True)])  # room 4, limit 5
@example(fleet=WIDE, base_count=94, steps=[(0, 12, True), (0, 4, True), (0, 1, True)])  # room 4, limit 4; then 0
@example(fleet=WIDE, base_count=94, steps=[(0, 12, True), (0, 3, True), (0, None, True)])  # room 4, 3; room 1, 6
def test_discovery_activates_only_candidates_within_its_limits(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    fleet, base_count = opening(fleet, base_count, discovery=True)
    model = plan(fleet, base_count)
    trace = explore(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    policies = fleet[1]
    for step in trace.steps:
        if step.result["isError"]:
            if step.limit is None or step.limit <= MAX_LIMIT:
                raise fail(("DSC-5.7",), "a valid discovery call failed", observed=step.result, case=trace.case)
            # A limit above 12 may be refused (ID-11), and a refusal activates nothing.
            new = sorted(set(trace.mcp(step.definitions)) - set(step.before))
            if new:
                raise fail(
                    ("DSC-5.3",),
                    f"a call refused for its limit {step.limit} activated tools",
                    expected=[],
                    observed=new,
                    case=trace.case,
                )
            continue
        room = model.dynamic_capacity - len(step.before)
        bound = discovery_bound(step.limit, room)
        if len(step.activated) > bound:
            sentence = (
                "DSC-5.4"
                if room < min(step.limit or DEFAULT_LIMIT, MAX_LIMIT)
                else ("DSC-5.2" if step.limit is None else "DSC-5.3" if step.limit > MAX_LIMIT else "DSC-5.1")
            )
            if sentence == "DSC-5.4":
                dynamic_capacity_kept(sut, fleets)
            raise fail(
                (sentence,),
                "discovery activated more than its (clamped) limit or the dynamic capacity allows",
                expected=f"<= {bound} (limit {step.limit}, dynamic room {room})",
                observed=step.activated,
                case=trace.case,
            )
        for q in step.activated:
            if q not in cat:
                raise fail(("DSC-4.1",), "discovery activated a tool of no server", observed=q, case=trace.case)
            if q in step.before or step.activated.count(q) > 1:
                # Active before, unless an earlier call's activations were taken back (DEF-3.1).
                activations_kept(sut, fleets)
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
                # Discovery is judged against the policy the SUT applies everywhere else.
                read_only_applied(sut, fleets, *fleet)
                listed = policies.get(sid, {}).get("allowedTools")
                raise fail(
                    ("POL-4.2" if listed and tool["name"] not in listed else "POL-1.4",),
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
                    ("SEL-3.1",),
                    f"discovery activated tools of {sid} beyond its remaining maxActiveTools room",
                    expected=f"<= {m.max_active}",
                    observed={"before": before.get(sid, 0), "after": count},
                    case=trace.case,
                )


@clause("DSC-5.1", "DSC-5.2", "DSC-5.3")
def test_each_call_activates_at_most_its_limit(sut: Sut, fleets: Fleets) -> None:
    """A fresh run per limit: 28 candidates on one server, all of which name it. A limit
    that "counts as" another activates exactly what that other one does; a null limit and
    one above 12 may be refused instead (ID-12, ID-11), activating nothing."""
    spec, policies = WIDE
    got: dict[object, list[str]] = {}
    case: dict[str, Any] = {}
    # Each limit over servers served for it alone: what an earlier run's discoveries could
    # leave behind is for the checks of isolation (ISO-2) to find.
    for limit, sentence in LIMITS:
        with fleets.serve(spec, policies) as served:
            case = served.describe()
            arguments: dict[str, Any] = {"query": "s0", "server_ids": ["s0"]}
            if limit is not ABSENT:
                arguments["limit"] = limit
            [(_, result, before, after)] = run(discover_in_turn(sut, served.servers, 0, [arguments]))
            bound = DEFAULT_LIMIT if limit is None or limit is ABSENT else min(cast(int, limit), MAX_LIMIT)
            if result["isError"] and (limit is None or (isinstance(limit, int) and limit > MAX_LIMIT)):
                if by_name(after) != by_name(before):
                    raise fail(
                        (sentence,),
                        f"a call refused for its limit {_shown(limit)} activated tools",
                        expected="no change to the definitions",
                        observed=sorted(set(names(after)) - set(names(before))),
                        case=case | {"arguments": arguments},
                    )
                continue
            if result["isError"] or len(activated(result)) > bound:
                raise fail(
                    (sentence,),
                    f"a limit of {_shown(limit)} was refused or exceeded",
                    expected=f"success, at most {bound} activated",
                    observed=result,
                    case=case | {"arguments": arguments},
                )
            got[limit] = sorted(activated(result))
    for limit, sentence in LIMITS:
        same_as = DEFAULT_LIMIT if sentence == "DSC-5.2" else MAX_LIMIT if sentence == "DSC-5.3" else limit
        if limit in got and got[limit] != got[same_as]:
            raise fail(
                (sentence,),
                f"a limit of {_shown(limit)} did not activate what a limit of {same_as} does",
                expected=got[same_as],
                observed=got[limit],
                case=case,
            )


def _shown(limit: object) -> str:
    return "(left out)" if limit is ABSENT else json.dumps(limit)


@clause("DSC-4.3")
def test_a_scoped_call_activates_only_tools_of_the_servers_it_names(sut: Sut, fleets: Fleets) -> None:
    spec, policies = servers((20, {}), (20, {}), (20, {}))
    calls = [
        {"query": "s1 list issues", "server_ids": ["s0"]},
        {"query": "s0 s2 pull request", "server_ids": ["s1"]},
        {"query": "s1 search", "server_ids": ["s0", "s2"]},
    ]
    with fleets.serve(spec, policies) as served:
        done = run(discover_in_turn(sut, served.servers, 0, calls))
        case = served.describe() | {"calls": calls}
    for arguments, result, _, _ in done:
        outside = [q for q in activated(result) if q.split("__", 1)[0] not in arguments["server_ids"]]
        if outside:
            raise fail(
                ("DSC-4.3",),
                "discovery activated tools outside server_ids",
                expected=arguments["server_ids"],
                observed=outside,
                case=case,
            )


@clause("POL-1.4")
def test_discovery_never_activates_a_tool_its_policy_excludes(sut: Sut, fleets: Fleets) -> None:
    """Each excluded tool asked for by its qualified name, scoped to its server."""
    server = ServerSpec(id="s0", tool_count=30)
    tools = generate_tools(server)
    denied = [t["name"] for t in tools if (t.get("annotations") or {}).get("readOnlyHint") is True][:3]
    policy: ToolPolicy = {"sideEffects": "readOnly", "deniedTools": denied, "maxActiveTools": 40}
    excluded = [
        t["name"] for t in tools if t["name"] in denied or (t.get("annotations") or {}).get("readOnlyHint") is not True
    ]
    calls = [{"query": qualified("s0", name), "server_ids": ["s0"], "limit": 12} for name in excluded]
    with fleets.serve(FleetSpec(servers=(server,)), {"s0": policy}) as served:
        done = run(discover_in_turn(sut, served.servers, 95, calls))
        case = served.describe() | {"baseTools": 95}
    shown = [q for _, result, _, _ in done for q in activated(result)]
    qualified_names_kept(shown, {qualified("s0", t["name"]) for t in tools})
    wrong = sorted({q for q in shown if q.split("__", 1)[1] in excluded})
    if wrong:
        read_only_applied(sut, fleets, FleetSpec(servers=(server,)), {"s0": policy})
        raise fail(("POL-1.4",), "discovery activated tools its server's policy excludes", observed=wrong, case=case)


@clause("DSC-6.1", "DSC-6.2", "DSC-6.3", "DSC-6.4")
@examples(8)
@given(FLEETS, BASES, STEPS)
@example(fleet=WIDE, base_count=3, steps=[(0, 12, True), (0, None, True)])
def test_the_result_reports_the_activated_tools_and_the_counts(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    fleet, base_count = opening(fleet, base_count, discovery=True)
    model = plan(fleet, base_count)
    trace = explore(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    previous = trace.start
    for step in trace.steps:
        new = set(trace.mcp(step.definitions)) - set(trace.mcp(previous))
        previous = step.definitions
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
        listed = [entry.get("name") if isinstance(entry, dict) else None for entry in content["activated"]]
        if set(listed) != new or len(listed) != len(new):
            if set(listed) > new:
                # More reported than the definitions show: they may be what lags (DEF-2.2).
                definitions_follow_activations(sut, fleets)
            # The definitions lose what an earlier call activated (DEF-3.1).
            activations_kept(sut, fleets)
            raise fail(
                ("DSC-6.1",),
                "activated does not list exactly the tools the call newly activated",
                expected=sorted(new),
                observed=content["activated"],
                case=trace.case,
            )
        for entry in content["activated"]:
            if entry["name"] in cat and entry.get("description") != cat[entry["name"]][1].get("description", ""):
                raise fail(
                    ("DSC-6.1",),
                    "an activated entry does not carry the tool's description",
                    expected=cat[entry["name"]][1].get("description", ""),
                    observed=entry,
                    case=trace.case,
                )
        text = result_text(step.result)
        unsaid = sorted(name for name in new if not named_in(name, text))
        if unsaid:
            raise fail(
                ("DSC-6.4",),
                "the text of a discovery result does not name every tool the call activated",
                expected=sorted(new),
                observed={"not named": unsaid, "text": text},
                case=trace.case,
            )
        active = len(trace.mcp(step.definitions))
        for sentence, key, want in (
            ("DSC-6.2", "activeCount", active),
            ("DSC-6.3", "remainingCapacity", model.dynamic_capacity - active),
        ):
            if content.get(key) != want:
                if sentence == "DSC-6.3":
                    # Right by a capacity of the host's own count: BUD-2 broke first.
                    dynamic_capacity_kept(sut, fleets)
                activations_kept(sut, fleets)
                raise fail((sentence,), f"{key} is wrong", expected=want, observed=content, case=trace.case)


def _own_descriptions(catalog: dict[str, tuple[str, ListedTool]]) -> dict[str, str]:
    """Each tool's description that tells it alone: long enough to be its own, and held by no
    other tool's description (an activated tool's may be told)."""
    descriptions = {q: tool.get("description") for q, (_, tool) in catalog.items()}
    return {
        q: d
        for q, d in descriptions.items()
        if isinstance(d, str)
        and len(d) >= 24
        and not any(isinstance(other, str) and d in other for p, other in descriptions.items() if p != q)
    }


@clause("DSC-9.1", "DSC-9.2")
@examples(6)
@given(FLEETS, BASES, STEPS)
@example(fleet=WIDE, base_count=0, steps=[(0, 1, True), (0, 2, False)])
def test_discovery_never_calls_a_server_tool_nor_names_one_it_did_not_activate(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    fleet, base_count = opening(fleet, base_count, discovery=True)
    trace = explore(sut, fleets, fleet, base_count, steps)
    if trace.calls:
        raise fail(("DSC-9.1",), "discovery called a server tool", observed=trace.calls, case=trace.case)
    previous = trace.start
    own = _own_descriptions(trace.catalog)
    for step in trace.steps:
        said = result_text(step.result) + " " + json.dumps(step.result.get("structuredContent"))
        # What the call activated is what its definitions gained (as DSC-6.1 reads it): a
        # result that names such a tool without listing it in `activated` is DSC-6.1's finding.
        gained = set(trace.mcp(step.definitions)) - set(trace.mcp(previous))
        previous = step.definitions
        # The query is the agent's own text: a result may repeat it.
        others = [
            q
            for q in trace.catalog
            if q not in step.activated and q not in gained and not named_in(q, step.arguments["query"])
        ]
        named = [q for q in others if named_in(q, said)]
        # A definition is also put in by its words: a description no activated tool's holds.
        told = [q for q in others if q in own and own[q] in said and own[q] not in step.arguments["query"]]
        named += [q for q in told if q not in named]
        if named:
            raise fail(
                ("DSC-9.2",),
                "a discovery result names tools the call did not activate",
                expected=step.activated,
                observed={"named": named, "result": step.result},
                case=trace.case,
            )


@clause("DSC-7.1", "DSC-7.2", "DSC-7.3")
@pytest.mark.parametrize("sentence", sorted(INVALID_DISCOVERY))
def test_invalid_arguments_are_an_error_result_that_activates_nothing(sut: Sut, fleets: Fleets, sentence: str) -> None:
    spec, policies = servers((40, {}), (5, {"mode": "all"}))
    with fleets.serve(spec, policies) as served:
        done = run(discover_in_turn(sut, served.servers, 0, INVALID_DISCOVERY[sentence]))
        case = served.describe()
    for arguments, result, before, after in done:
        if not result["isError"] or by_name(after) != by_name(before):
            raise fail(
                (sentence,),
                "invalid discovery arguments were accepted or activated tools",
                expected="isError and unchanged definitions",
                observed={
                    "arguments": arguments,
                    "result": result,
                    "new": sorted(set(names(after)) - set(names(before))),
                },
                case=case,
            )


# Entries that name no server of the run, and the servers of the run they come with: a
# query that names the two auto servers (s0, s2; s1 is not in auto mode) would find tools
# on both if such an entry widened the scope.
UNKNOWN_SCOPES: list[tuple[list[str], set[str]]] = [
    (["nope"], set()),
    (["S0"], set()),
    ([""], set()),
    (["s0__"], set()),
    (["s0", "nope"], {"s0"}),
    (["s1", "nope"], {"s1"}),
]


@clause("DSC-7.4")
def test_a_server_ids_entry_naming_no_server_never_widens_the_scope(sut: Sut, fleets: Fleets) -> None:
    """An error result that activates nothing, or a success that activates tools of the
    named servers of the run only (ID-13)."""
    spec, policies = servers((40, {}), (5, {"mode": "all"}), (10, {}))
    calls = [{"query": "s0 s2", "server_ids": scope} for scope, _ in UNKNOWN_SCOPES]
    with fleets.serve(spec, policies) as served:
        done = run(discover_in_turn(sut, served.servers, 0, calls))
        case = served.describe()
    for (_, named), (arguments, result, before, after) in zip(UNKNOWN_SCOPES, done, strict=True):
        new = sorted(set(names(after)) - set(names(before)))
        outside = [q for q in new if q.split("__", 1)[0] not in named]
        if (result["isError"] and new) or outside:
            raise fail(
                ("DSC-7.4",),
                "a server_ids entry that names no server of the run widened the scope"
                if outside
                else "a call refused for a server_ids entry that names no server activated tools",
                expected=f"an error result activating nothing, or tools of {sorted(named) or 'no server'} only",
                observed={"arguments": arguments, "result": result, "new": new},
                case=case,
            )


def _nothing_found_is_a_success(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a call that can activate nothing, its one server's tools all active
    already, is a success (DSC-5.7): a scope of servers outside ``auto`` finds nothing, and a
    host that makes every empty result an error refuses it for that, not for its scope.

    Raises:
        Inconclusive: naming DSC-5.7.
    """
    spec, policies = plain((3, {}))
    with fleets.serve(spec, policies) as served:
        [(_, result, _, _)] = run(
            discover_in_turn(sut, served.servers, 0, [{"query": "s0__tool_0", "server_ids": ["s0"]}])
        )
    precondition(
        "DSC-5.7",
        not result["isError"],
        "a call that could activate nothing (every tool of the server it names active already) was an error result",
        observed=result,
    )


@clause("DSC-8.1", "DSC-8.2", "DSC-4.1")
def test_an_empty_scope_is_no_scope_and_a_non_auto_server_finds_nothing(sut: Sut, fleets: Fleets) -> None:
    spec, policies = servers((40, {}), (5, {"mode": "all"}), (10, {"mode": "allowlist", "allowedTools": []}))
    target = "s0__" + generate_tools(spec.servers[0])[-1]["name"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("DSC-8.2", {"query": "s1 list create", "server_ids": ["s1"]}),
        ("DSC-8.2", {"query": "s2 list create", "server_ids": ["s2", "s1"]}),
        ("DSC-8.1", {"query": target, "server_ids": []}),
        ("DSC-8.1", {"query": target, "server_ids": None}),
        ("DSC-8.1", {"query": target}),
    ]
    with fleets.serve(spec, policies) as served:
        done = run(discover_in_turn(sut, served.servers, 0, [arguments for _, arguments in calls]))
        case = served.describe()
    for (sentence, arguments), (_, result, _, _) in zip(calls, done, strict=True):
        if result["isError"]:
            if sentence == "DSC-8.2":
                _nothing_found_is_a_success(sut, fleets)
            raise fail(
                (sentence,), "a valid scope was refused", observed={"arguments": arguments, "result": result}, case=case
            )
        if sentence == "DSC-8.2" and activated(result):
            # Tools of servers the call did not name: the scope was not kept (DSC-4.3).
            scope = arguments.get("server_ids") or []
            outside = [q for q in activated(result) if q.split("__", 1)[0] not in scope]
            precondition(
                "DSC-4.3", not outside, "a scoped call activated tools of servers it did not name", observed=outside
            )
            # That they are no candidates is DSC-4.1's; DSC-8.2 adds that the scope is valid.
            raise fail(
                ("DSC-4.1",),
                "discovery scoped to servers not in auto mode found tools",
                expected=[],
                observed=activated(result),
                case=case,
            )


@clause("DSC-8.1", "DSC-10.3")
@pytest.mark.parametrize("scope", [ABSENT, None, []], ids=["left-out", "null", "empty"])
def test_no_scope_searches_every_server(sut: Sut, fleets: Fleets, scope: object) -> None:
    """Lexical: the one tool the query names is on the second server. Its name is the one
    word of the query, and neither server id occurs in the query, so that no other sentence
    of the lexical formula (words, server ids) decides what is relevant. An empty list may
    also be a scope of no server (ID-14): then the call finds nothing."""
    spec = FleetSpec(
        servers=(
            ServerSpec(id="x", tool_count=0, tools=(tool("alpha"), tool("beta"))),
            ServerSpec(id="y", tool_count=0, tools=(tool("gamma"), tool("zebra"))),
        )
    )
    arguments: dict[str, Any] = {"query": "zebra"}
    if scope is not ABSENT:
        arguments["server_ids"] = scope
    with fleets.serve(spec) as served:
        [(_, result, _, _)] = run(discover_in_turn(sut, served.servers, 95, [arguments]))
        case = served.describe() | {"baseTools": 95}
    allowed = [["y__zebra"], []] if scope == [] else [["y__zebra"]]
    if result["isError"] or activated(result) not in allowed:
        if not result["isError"] and not activated(result):
            left_out_tools_activatable(sut, fleets)
        raise fail(
            ("DSC-8.1",),
            f"a server_ids {_shown(scope)} did not search every server",
            expected=allowed[0],
            observed=result,
            case=case | {"arguments": arguments},
        )


def _words_account_for_it(sut: Sut, diagnosis: Diagnosis) -> None:
    """Go on only when, for a SUT that claims the ``lexical`` profile, the vectors find its
    words and server names kept (RNK-1.1, RNK-1.3, RNK-3.3): a ranker that does not split a
    qualified name into the words of the tool and its server finds nothing for it, and its
    words broke first.

    Raises:
        Inconclusive: naming the sentence the vectors find broken.
    """
    if sut.implementation is not None and "lexical" in sut.implementation.profiles:
        diagnosis.accounting(("RNK-1.1", "RNK-1.3", "RNK-3.3"), sut.cited)


@clause("DSC-5.8", "DSC-5.1", "DSC-5.2")
@pytest.mark.parametrize(("count", "limit", "fill"), ASKED_BY_NAME)
def test_a_candidate_asked_for_by_its_qualified_name_is_activated(
    sut: Sut, fleets: Fleets, vector_diagnosis: Diagnosis, count: int, limit: int | None, fill: int
) -> None:
    """Base tools 95 leave the first round empty and a dynamic room of 16: the filler
    server's 12 tools, asked for by name first, are themselves such candidates."""
    spec = FleetSpec(servers=(plain_server("small", count), plain_server("filler", 12)))
    fillers = [f"filler__tool_{i}" for i in range(fill)]
    with fleets.serve(spec) as served:
        case: dict[str, Any] = served.describe() | {"baseTools": 95}

        async def body() -> list[Any]:
            async with sut.open(open_params(served.servers, base_tools(95))) as r:
                calls = await ask_for(r, fillers)
                calls += await ask_for(r, [f"small__tool_{count - 1}"], limit=limit)
                case["steps"] = r.case["steps"]
                return calls

        calls = run(body())
    earlier: set[str] = set()
    for call in calls:
        found = activated(call.result)
        bound = call.arguments.get("limit", DEFAULT_LIMIT)
        # A target an earlier call activated is asked for again only when the definitions
        # did not show it (DEF-2.2's): it is no candidate then.
        if call.target not in found and call.target not in earlier:
            _words_account_for_it(sut, vector_diagnosis)
            raise fail(
                ("DSC-5.8",),
                "a candidate asked for by its qualified name, scoped to its server, was not activated",
                expected=call.target,
                observed={"arguments": call.arguments, "result": structured(call.result) or call.result},
                case=case,
            )
        earlier.update(found)
        if len(found) > bound:
            raise fail(
                ("DSC-5.1" if "limit" in call.arguments else "DSC-5.2",),
                "discovery activated more tools than its limit",
                expected=f"<= {bound}",
                observed=found,
                case=case,
            )


@clause("DSC-5.8")
def test_a_candidate_asked_for_by_name_is_activated_though_tools_outside_the_scope_match_better(
    sut: Sut, fleets: Fleets, vector_diagnosis: Diagnosis
) -> None:
    """The query ``a__pr`` fires the ``pr`` alias, so the lexical ranker puts server b's
    ``pull_request_pr_a`` (three hits) above the one tool of server a (two): a scoped call
    looks past tools its scope leaves out."""
    spec = FleetSpec(
        servers=(
            ServerSpec(id="a", tool_count=0, tools=(tool("pr"),)),
            ServerSpec(id="b", tool_count=0, tools=(tool("pull_request_pr_a"),)),
        )
    )
    arguments = {"query": "a__pr", "server_ids": ["a"]}
    with fleets.serve(spec) as served:
        [(_, result, _, _)] = run(discover_in_turn(sut, served.servers, 95, [arguments]))
        case = served.describe() | {"baseTools": 95}
    if "a__pr" not in activated(result):
        _words_account_for_it(sut, vector_diagnosis)
        raise fail(
            ("DSC-5.8",),
            "a candidate asked for by its qualified name, scoped to its server, was not activated",
            expected="a__pr",
            observed={"arguments": arguments, "result": structured(result) or result},
            case=case,
        )


# Calls that may or must activate nothing, each a success: a server at maxActiveTools 0,
# one whose first round reached it, a full dynamic capacity, a query nothing matches.
@clause("DSC-5.7")
def test_a_call_that_activates_nothing_is_a_success(sut: Sut, fleets: Fleets) -> None:
    spec, policies = plain((12, {}), (4, {}), (3, {"maxActiveTools": 0}))
    fill = [qualified(s.id, t.name) for s in spec.servers[:2] for t in s.tools]
    calls = [
        {"query": "s2__tool_0", "server_ids": ["s2"]},
        {"query": "zebra crossing", "limit": 1},
        {"query": "s0__tool_0", "server_ids": ["s0"], "limit": 12},
    ]
    with fleets.serve(spec, policies) as served:

        async def body() -> list[ToolResult]:
            async with sut.open(open_params(served.servers, base_tools(95))) as r:
                await ask_for(r, fill)
                results = [await r.call(DISCOVERY, cast(Any, arguments)) for arguments in calls]
                case["steps"] = r.case["steps"]
                return results

        case: dict[str, Any] = served.describe() | {"baseTools": 95}
        results = run(body())
    failed = [(arguments, result) for arguments, result in zip(calls, results, strict=True) if result["isError"]]
    if failed:
        raise fail(("DSC-5.7",), "a call that activated nothing was an error", observed=failed, case=case)


# The ranking sentences these calls rely on, and those their isolating lexical vectors
# assume: a call that differs while the vectors find one of them broken is blamed on it.
LEXICAL_RELIES_ON = ("RNK-1.1", "RNK-1.3", "RNK-3.3", "RNK-6.6", "RNK-8.1", "DSC-10.2", "DSC-10.3")


@clause("DSC-10.2", "DSC-10.3", *LEXICAL_RELIES_ON)
def test_lexical_discovery_activates_the_best_ranked_relevant_candidates_in_order(
    sut: Sut, fleets: Fleets, vector_diagnosis: Diagnosis
) -> None:
    spec = FleetSpec(
        servers=tuple(ServerSpec(id=sid, tool_count=0, tools=tuple(ts)) for sid, ts in LEXICAL_TOOLS.items())
    )
    # Each query opens its run over servers served for it alone: what an earlier run's
    # discoveries could leave behind is for the checks of isolation (ISO-2) to find.
    for query, system, limit, expected in LEXICAL_DISCOVERY:
        with fleets.serve(spec) as served:
            [(_, result, before, after)] = run(
                discover_in_turn(sut, served.servers, 95, [{"query": query, "limit": limit}], system=system)
            )
            got = activated(result)
            # When the result and the definitions disagree on what the call activated, DSC-6.1
            # or DEF-2 is broken, which their checks report: there is no ranking to judge.
            if set(got) != set(names(after)) - set(names(before)):
                continue
            if got != expected:
                irrelevant = sorted(set(got) - RELEVANT[query])
                if not got:
                    left_out_tools_activatable(sut, fleets)
                explained = vector_diagnosis.accounting(LEXICAL_RELIES_ON, sut.cited)
                raise fail(
                    explained or (("DSC-10.2",) if irrelevant else ("DSC-10.3",)),
                    f"discovery activated tools without a relevance signal from the query: {irrelevant}"
                    if irrelevant
                    else "discovery did not activate the best-ranked candidates in ranking order",
                    expected=expected,
                    observed=got,
                    case=served.describe() | {"query": query, "systemPrompt": system, "limit": limit, "baseTools": 95},
                )
