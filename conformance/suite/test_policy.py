"""Policy (POL-*): which tools are eligible and required, over generated fleets and policies,
and over small explicit fleets for read-only hints, names the server does not offer, and
omitted fields."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import OutcomeError, Sut, clause
from conformance.suite._first_round import open_first_round, with_examples
from conformance.suite._fleets import Fleets
from conformance.suite._oracle import DEFAULT_MAX_ACTIVE
from conformance.suite._strategies import FleetAndPolicies, examples, fleets_with_policies
from conformance.suite._wire import (
    DISCOVERY,
    base_tools,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    portable,
    run,
)
from mock_servers import AnnotationMix, FleetSpec, ServerSpec, ToolSpec, generate_tools

FLEETS = fleets_with_policies(max_servers=3, max_tools=30)
BASES = st.integers(0, 8) | st.integers(60, 97)

_S0 = [t["name"] for t in generate_tools(ServerSpec(id="s0", tool_count=10))]
# A tool both pinned and denied, in every mode.
PINNED_AND_DENIED: list[tuple[FleetAndPolicies, int]] = [
    ((FleetSpec(servers=(ServerSpec(id="s0", tool_count=10),)), {"s0": policy}), 0)
    for policy in (
        {"pinnedTools": [_S0[0]], "deniedTools": [_S0[0]]},
        {"mode": "all", "pinnedTools": [_S0[0], _S0[1]], "deniedTools": [_S0[1]]},
        {"mode": "allowlist", "allowedTools": _S0[:3], "pinnedTools": [_S0[2]], "deniedTools": [_S0[2]]},
        {"mode": "auto", "allowedTools": _S0[:4], "pinnedTools": [_S0[3]], "deniedTools": [_S0[3]]},
    )
]
# Read-only over a server whose tools are marked true, false or not at all, at random, and
# whose names say nothing about it: only the ones marked true may become active.
READ_ONLY_MIXED: list[tuple[FleetAndPolicies, int]] = [
    (
        (
            FleetSpec(
                servers=(
                    ServerSpec(
                        id="s0",
                        tool_count=20,
                        annotations=AnnotationMix(read_only=0.4, writable=0.3, none=0.3, follow_names=False),
                    ),
                )
            ),
            {"s0": {"mode": mode, "sideEffects": "readOnly"}},
        ),
        0,
    )
    for mode in ("auto", "all")
]
# Allowlists: empty (nothing eligible), and an auto server restricted to three tools.
ALLOWLISTS: list[tuple[FleetAndPolicies, int]] = [
    ((FleetSpec(servers=(ServerSpec(id="s0", tool_count=10), ServerSpec(id="s1", tool_count=5))), policies), 0)
    for policies in (
        {"s0": {"mode": "allowlist", "allowedTools": []}},
        {"s0": {"mode": "allowlist", "allowedTools": _S0[:2]}},
        {"s0": {"mode": "auto", "allowedTools": _S0[5:8]}},
        {"s0": {"mode": "all", "allowedTools": _S0[:1]}},
    )
]


def _why_not(policy: dict[str, Any], tool: dict[str, Any]) -> str:
    """The sentence that excludes ``tool`` under ``policy`` (the most specific one)."""
    name = tool["name"]
    if name in policy.get("deniedTools", []):
        return "POL-2.2" if name in policy.get("pinnedTools", []) else "POL-2.1"
    mode = policy.get("mode", "auto")
    if mode == "allowlist":
        return "POL-3.2" if not policy.get("allowedTools") else "POL-3.1"
    if mode == "auto" and policy.get("allowedTools") and name not in policy["allowedTools"]:
        return "POL-4.1"
    annotations = tool.get("annotations")
    if annotations is None or "readOnlyHint" not in annotations:
        return "POL-5.2"
    return "POL-5.3" if annotations["readOnlyHint"] is False else "POL-5.4"


@clause("POL-1.1", "POL-2.1", "POL-2.2", "POL-3.1", "POL-3.2", "POL-4.1", "POL-5.1", "POL-5.2", "POL-5.3", "POL-5.4")
@examples(15)
@given(FLEETS, BASES)
@with_examples(PINNED_AND_DENIED + READ_ONLY_MIXED + ALLOWLISTS)
def test_only_eligible_tools_are_active(sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int) -> None:
    opened = open_first_round(sut, fleets, fleet, base_count)
    defs = opened.definitions(("POL-1.1",))
    cat = catalog(opened.tools)
    for d in mcp_definitions(defs, opened.base):
        if d["name"] not in cat:
            continue  # DEF-1 judges names that are no tool of the catalog
        sid, tool = cat[d["name"]]
        m = opened.model.servers[sid]
        if tool["name"] not in m.eligible:
            raise fail(
                (_why_not(fleet[1].get(sid, {}), dict(tool)),),
                f"{d['name']} is active although the policy of {sid} does not admit it",
                expected=f"eligible tools of {sid}: {m.eligible}",
                observed={"tool": tool["name"], "annotations": tool.get("annotations")},
                case=opened.case,
            )


@clause("POL-4.4", "POL-5.6", "POL-6.2")
@examples(10)
@given(FLEETS, st.integers(0, 8))
@with_examples(ALLOWLISTS)
def test_an_open_policy_restricts_nothing(sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int) -> None:
    """Every tool of a server in ``all`` mode is active (required), whatever ``allowedTools``
    lists and whatever the annotations say when writes are allowed."""
    spec, policies = fleet
    opened_policies = {
        sid: {**p, "mode": "all", "sideEffects": "allow", "deniedTools": [], "maxActiveTools": 96}
        for sid, p in policies.items()
    }
    opened = open_first_round(sut, fleets, (spec, opened_policies), base_count)
    shown = set(names(opened.definitions(("POL-6.2",))))
    for sid, m in opened.model.servers.items():
        missing = [n for n in m.eligible if f"{sid}__{n}" not in shown]
        if missing:
            listed = bool(policies.get(sid, {}).get("allowedTools"))
            raise fail(
                ("POL-4.4" if listed else "POL-5.6",),
                f"tools of {sid} are not active although its policy restricts nothing",
                expected=m.eligible,
                observed={"missing": missing, "policy": opened_policies[sid]},
                case=opened.case,
            )


@clause("POL-6.2", "POL-6.3", "POL-7.1", "POL-7.2", "POL-7.3", "POL-7.4", "BUD-4.1", "ERR-1.1", "ERR-2.1")
@examples(15)
@given(FLEETS, BASES)
@with_examples(PINNED_AND_DENIED)
def test_required_tools_are_all_active_or_the_run_is_a_selection_error(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    opened = open_first_round(sut, fleets, fleet, base_count, must_open=False)
    if opened.model.error is not None:
        finding = opened.refusal()
        if finding is not None:
            raise finding
        return
    defs = opened.definitions(("POL-6.2",))
    shown = set(names(defs))
    missing = [f"{m.id}__{n}" for m in opened.model.servers.values() for n in m.required if f"{m.id}__{n}" not in shown]
    if missing:
        raise fail(("POL-6.2",), "required tools are missing from the first round", observed=missing, case=opened.case)
    for m in opened.model.servers.values():
        for name in m.pinned_not_eligible:
            if f"{m.id}__{name}" in shown:
                raise fail(
                    ("POL-7.1",),
                    f"{m.id}__{name} is pinned but not eligible, and it is active",
                    observed=name,
                    case=opened.case,
                )


@clause("POL-5.1", "POL-5.2", "POL-5.3", "POL-5.4", "POL-5.5", "POL-1.3")
def test_read_only_needs_the_json_boolean_true(sut: Sut, fleets: Fleets) -> None:
    schema = {"type": "object"}
    tools = (
        ToolSpec(name="list_true", description="List things.", input_schema=schema, annotations={"readOnlyHint": True}),
        ToolSpec(
            name="list_string", description="List things.", input_schema=schema, annotations={"readOnlyHint": "true"}
        ),
        ToolSpec(name="list_number", description="List things.", input_schema=schema, annotations={"readOnlyHint": 1}),
        ToolSpec(
            name="list_false", description="List things.", input_schema=schema, annotations={"readOnlyHint": False}
        ),
        ToolSpec(name="list_none", description="Read-only. List things.", input_schema=schema, annotations=None),
        ToolSpec(name="get_empty", description="Get things.", input_schema=schema, annotations={}),
        ToolSpec(
            name="delete_all", description="Delete things.", input_schema=schema, annotations={"readOnlyHint": True}
        ),
    )
    eligible = {"list_true", "delete_all"}
    reasons = {
        "list_string": "POL-5.4",
        "list_number": "POL-5.4",
        "list_false": "POL-5.3",
        "list_none": "POL-5.5",
        "get_empty": "POL-5.2",
    }
    spec = FleetSpec(servers=(ServerSpec(id="r", tool_count=0, raw=True, tools=tools),))
    for transport in ("http", "stdio"):
        for policy in ({"mode": "all", "sideEffects": "readOnly"}, {"mode": "auto", "sideEffects": "readOnly"}):
            with fleets.serve(spec, {"r": policy}, transport=transport) as served:

                async def body() -> tuple[Any, Any]:
                    async with sut.open(open_params(served.servers)) as r:
                        defs = await r.definitions()
                        calls = {t.name: await r.call(f"r__{t.name}", {}) for t in tools if t.name not in eligible}
                    return defs, calls

                defs, calls = run(body())
                case = served.describe() | {"transport": transport}
                active = {n.removeprefix("r__") for n in names(mcp_definitions(defs, []))}
                if "delete_all" not in active and policy["mode"] == "all":
                    raise fail(
                        ("POL-5.5",),
                        "a tool marked readOnlyHint: true is left out because of its name",
                        observed=sorted(active),
                        case=case,
                    )
                wrong = sorted(active - eligible)
                if wrong:
                    raise fail(
                        (reasons.get(wrong[0], "POL-5.1"),),
                        f"under readOnly, {wrong[0]} is active although its readOnlyHint is not the JSON value true",
                        expected=sorted(eligible),
                        observed=sorted(active),
                        case=case,
                    )
                executed = served.ledger().calls()
                if any(not result["isError"] for result in calls.values()) or executed:
                    raise fail(
                        ("POL-1.3",),
                        "under readOnly a tool without readOnlyHint === true executes",
                        expected="every call refused, no tools/call",
                        observed={"results": calls, "executed": portable(executed)},
                        case=case,
                    )


_SERVER = ServerSpec(id="s0", tool_count=20)
_NAMES = [t["name"] for t in generate_tools(_SERVER)]

# What is eligible when the policy names a tool the server does not offer: None when the
# run must look exactly like the same run without the unknown name.
UNKNOWN_NAMES: dict[str, tuple[dict[str, Any], dict[str, Any], set[str] | None]] = {
    "pinned-unknown": ({"pinnedTools": ["no_such_tool"]}, {}, None),
    "pinned-other-case": ({"pinnedTools": [_NAMES[0].upper()]}, {}, None),
    "pinned-qualified": ({"pinnedTools": [f"s0__{_NAMES[0]}"]}, {}, None),
    "allowlist-with-unknown": (
        {"mode": "allowlist", "allowedTools": [_NAMES[1], "no_such_tool"]},
        {"mode": "allowlist", "allowedTools": [_NAMES[1]]},
        {_NAMES[1]},
    ),
    "auto-allowed-unknown-only": ({"allowedTools": ["no_such_tool"]}, {}, set()),
    "auto-allowed-with-unknown": (
        {"allowedTools": [_NAMES[2], "no_such_tool"]},
        {"allowedTools": [_NAMES[2]]},
        {_NAMES[2]},
    ),
    "all-pinned-unknown": ({"mode": "all", "pinnedTools": ["no_such_tool"]}, {"mode": "all"}, None),
}


async def _observe(sut: Sut, servers: list[dict[str, Any]]) -> list[dict[str, Any]] | OutcomeError:
    """The definitions at open and after a discovery call naming ``s0``; or the refusal."""
    try:
        async with sut.open(open_params(servers)) as r:
            defs = await r.definitions()
            if DISCOVERY in names(defs):
                await r.call(DISCOVERY, {"query": "s0", "limit": 12})
            return defs + [d for d in await r.definitions() if d not in defs]
    except OutcomeError as exc:
        return exc


@clause("POL-8.1", "POL-8.2", "POL-9.5")
@pytest.mark.parametrize("name", sorted(UNKNOWN_NAMES))
def test_a_name_the_server_does_not_offer_brings_no_other_tool(sut: Sut, fleets: Fleets, name: str) -> None:
    policy, without, eligible = UNKNOWN_NAMES[name]
    spec = FleetSpec(servers=(_SERVER,))
    with fleets.serve(spec, {"s0": policy}) as served:
        case = served.describe()
        got = run(_observe(sut, served.servers))
        if isinstance(got, OutcomeError):
            if got.kind == "config_error":
                return  # ID-3: an error is one of the two allowed answers
            raise fail(
                ("POL-8.2",),
                "a policy name the server does not offer failed the run with an unexpected kind",
                expected="config_error, or a run without the name",
                observed=str(got),
                case=case,
            )
        baseline = run(_observe(sut, served.with_policies({"s0": without})))
    active = names(mcp_definitions(got, []))
    if eligible is not None:
        outside = sorted(set(active) - {f"s0__{n}" for n in eligible})
        if outside:
            raise fail(
                ("POL-8.1",),
                "a policy name the server does not offer brought other tools in its place",
                expected=sorted(f"s0__{n}" for n in eligible),
                observed=active,
                case=case,
            )
        return
    if isinstance(baseline, OutcomeError) or names(got) != names(baseline):
        raise fail(
            ("POL-9.5" if "qualified" in name or "case" in name else "POL-8.1",),
            "a policy name the server does not offer changed which tools are active",
            expected=names(baseline) if not isinstance(baseline, OutcomeError) else str(baseline),
            observed=names(got),
            case=case | {"same run without the name": without},
        )


DEFAULTS: dict[str, Any] = {
    "mode": "auto",
    "allowedTools": [],
    "deniedTools": [],
    "pinnedTools": [],
    "maxActiveTools": DEFAULT_MAX_ACTIVE,
    "sideEffects": "allow",
}
# Each field written out with its default, and the sentence that says what omitting it means.
EXPLICIT_DEFAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "every-field": (DEFAULTS, "POL-9.1"),
    "mode-only": ({"mode": "auto"}, "POL-9.1"),
    "lists-only": ({k: DEFAULTS[k] for k in ("allowedTools", "deniedTools", "pinnedTools")}, "POL-9.2"),
    "max-active-only": ({"maxActiveTools": DEFAULT_MAX_ACTIVE}, "POL-9.3"),
    "side-effects-only": ({"sideEffects": "allow"}, "POL-9.4"),
}


async def _up_to_max_active(sut: Sut, servers: list[dict[str, Any]]) -> list[list[str]]:
    """Definition names at open and after each discovery call naming a server, until the
    servers reach their maxActiveTools."""
    seen = []
    async with sut.open(open_params(servers, base_tools(0))) as r:
        seen.append(names(await r.definitions()))
        for _ in range(3):
            for server in servers:
                await r.call(DISCOVERY, {"query": server["id"], "server_ids": [server["id"]], "limit": 12})
                seen.append(names(await r.definitions()))
    return seen


@clause("POL-9.1", "POL-9.2", "POL-9.3", "POL-9.4")
@pytest.mark.parametrize("name", sorted(EXPLICIT_DEFAULTS))
def test_omitted_policy_fields_behave_as_their_defaults(sut: Sut, fleets: Fleets, name: str) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=40), ServerSpec(id="s1", tool_count=30)), seed=5)
    explicit, sentence = EXPLICIT_DEFAULTS[name]
    with fleets.serve(spec) as served:
        case = served.describe() | {"explicit policy": explicit}
        omitted = run(_up_to_max_active(sut, served.servers))
        given_ = run(_up_to_max_active(sut, served.with_policies({s.id: explicit for s in spec.servers})))
    if omitted != given_:
        step = next(i for i, (a, b) in enumerate(zip(omitted, given_, strict=False)) if a != b)
        raise fail(
            (sentence,),
            "an empty policy and the same policy with its defaults written out gave different definitions",
            expected={"step": step, "definitions": omitted[step]},
            observed={"step": step, "definitions": given_[step]},
            case=case,
        )
