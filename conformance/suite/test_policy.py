"""Policy (POL-*): which tools are eligible and required, over generated fleets and policies,
and over small explicit fleets for read-only hints, required and pinned tools, discovery
under a policy, names the server does not offer, and omitted fields."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import OutcomeError, Run, Sut, clause
from conformance._wire_types import Definition, OpenParams, ServerConfig, ToolPolicy
from conformance.suite._explore import plan
from conformance.suite._first_round import Opened, open_first_round, with_examples
from conformance.suite._fleets import Fleets, tools_of
from conformance.suite._preconditions import (
    first_round_capped,
    gate_refuses_inactive,
    left_out_tools_activatable,
    named_activation_missed,
    policy_applied,
    precondition,
    read_only_applied,
    required_left_out,
)
from conformance.suite._predictions import DEFAULT_MAX_ACTIVE, ServerModel, read_only
from conformance.suite._strategies import FleetAndPolicies, examples, fleets_with_policies, opening
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
    qualified,
    refusal_or,
    run,
)
from mock_servers import (
    AnnotationMix,
    FleetSpec,
    ListedTool,
    ServerSpec,
    ToolCalled,
    ToolSpec,
    example_arguments,
    generate_tools,
)

FLEETS = fleets_with_policies(max_servers=3, max_tools=30)
BASES = st.integers(0, 8) | st.integers(60, 97)

_S0 = [t["name"] for t in generate_tools(ServerSpec(id="s0", tool_count=10))]
_SERVER = ServerSpec(id="s0", tool_count=20)
_TOOLS = {t["name"]: t for t in generate_tools(_SERVER)}
_NAMES = list(_TOOLS)
# Tools of the 20-tool server by what they are: read-only, writable (readOnlyHint false),
# a name that is the start of another (get_issue, get_issue_comments), destructive.
_READ = ["get_issue", "list_branches", "search_commits"]
_WRITE = ["close_pull_request", "cancel_workflow_run", "create_repository"]
assert all(read_only(_TOOLS[n]) for n in _READ) and not any(read_only(_TOOLS[n]) for n in _WRITE)
assert "get_issue_comments" in _TOOLS and _TOOLS["cancel_workflow_run"]["annotations"]["destructiveHint"] is True


def _s0(policy: ToolPolicy, tool_count: int = 10) -> FleetAndPolicies:
    return FleetSpec(servers=(ServerSpec(id="s0", tool_count=tool_count),)), {"s0": policy}


def _s0_each(*policies: ToolPolicy) -> list[tuple[FleetAndPolicies, int]]:
    """An example of :func:`_s0` under each policy, with no base tools."""
    return [(_s0(policy), 0) for policy in policies]


# A tool both pinned and denied, in every mode.
PINNED_AND_DENIED = _s0_each(
    {"pinnedTools": [_S0[0]], "deniedTools": [_S0[0]]},
    {"mode": "all", "pinnedTools": [_S0[0], _S0[1]], "deniedTools": [_S0[1]]},
    {"mode": "allowlist", "allowedTools": _S0[:3], "pinnedTools": [_S0[2]], "deniedTools": [_S0[2]]},
    {"mode": "auto", "allowedTools": _S0[:4], "pinnedTools": [_S0[3]], "deniedTools": [_S0[3]]},
)
# Denial without pinning, where no list makes it moot: in all mode, and over allowedTools.
DENIALS = _s0_each(
    {"mode": "all", "deniedTools": [_S0[1]]},
    {"mode": "allowlist", "allowedTools": _S0[:3], "deniedTools": [_S0[1]]},
    {"mode": "auto", "allowedTools": _S0[:4], "deniedTools": [_S0[2]]},
)
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
# Allowlists: empty (nothing eligible), short, one name that starts another, an auto server
# restricted to three tools, and all mode, where the list is ignored.
_ALLOWLISTS: tuple[ToolPolicy, ...] = (
    {"mode": "allowlist", "allowedTools": []},
    {"mode": "allowlist", "allowedTools": _S0[:2]},
    {"mode": "auto", "allowedTools": _S0[5:8]},
    {"mode": "all", "allowedTools": _S0[:1]},
)
ALLOWLISTS: list[tuple[FleetAndPolicies, int]] = [
    ((FleetSpec(servers=(ServerSpec(id="s0", tool_count=10), ServerSpec(id="s1", tool_count=5))), {"s0": policy}), 0)
    for policy in _ALLOWLISTS
] + [(_s0({"mode": "allowlist", "allowedTools": ["get_issue"]}, 20), 0)]


def _why_not(policy: ToolPolicy, tool: ListedTool) -> str:
    """The sentence that excludes ``tool`` under ``policy`` (the most specific one)."""
    name = tool["name"]
    if name in policy.get("deniedTools", []):
        if name in policy.get("pinnedTools", []):
            return "POL-2.2"
        return "POL-2.3" if name in policy.get("allowedTools", []) else "POL-2.1"
    mode = policy.get("mode", "auto")
    if mode == "allowlist":
        return "POL-3.2" if not policy.get("allowedTools") else "POL-3.1"
    if mode == "auto" and policy.get("allowedTools") and name not in policy["allowedTools"]:
        return "POL-4.1"
    annotations = tool.get("annotations")
    if annotations is None or "readOnlyHint" not in annotations:
        return "POL-5.2"
    return "POL-5.3" if annotations["readOnlyHint"] is False else "POL-5.4"


def _pinned_why_not(policy: ToolPolicy, tool: ListedTool) -> str:
    """The sentence that keeps a pinned ``tool`` from being required under ``policy``."""
    reason = _why_not(policy, tool)
    if reason.startswith("POL-5."):
        return "POL-7.3"
    return {"POL-2.2": "POL-7.2", "POL-4.1": "POL-7.4"}.get(reason, "POL-7.1")


def _denial_won(sut: Sut, policy: ToolPolicy, shown: list[str], what: str) -> None:
    """Go on only when no tool both pinned and denied under ``policy`` is among ``shown``:
    one that is lost denial to pinning (POL-2.2), which makes it eligible and so required;
    the sentences of pins (POL-7) build on that. A check citing POL-2.2 judges it itself.

    Raises:
        Inconclusive: naming POL-2.2.
    """
    both = set(policy.get("pinnedTools", [])) & set(policy.get("deniedTools", []))
    lost = sorted(both & set(shown))
    if "POL-2.2" not in sut.cited:
        precondition("POL-2.2", not lost, f"{what}: pinned and denied, it was not kept out", observed=lost)


def _denied_pins_stay_out_with_room(sut: Sut, fleets: Fleets, fleet: FleetAndPolicies) -> None:
    """On a refusal of a run whose pins include denied tools: the same run with room for every
    pin. A host that counts a denied pin as required (POL-7.2) opens it without that pin; one
    that lets pinning beat denial opens it with the pin active (POL-2.2)."""
    spec, policies = fleet
    for sid, policy in policies.items():
        if not set(policy.get("pinnedTools", [])) & set(policy.get("deniedTools", [])):
            continue
        roomy: ToolPolicy = {**policy, "maxActiveTools": DEFAULT_MAX_ACTIVE}
        with fleets.serve(spec, {**policies, sid: roomy}) as served:
            got = run(refusal_or(sut, open_params(served.servers)))
        if not isinstance(got, OutcomeError):
            shown = [n.removeprefix(f"{sid}__") for n in names(mcp_definitions(got, []))]
            _denial_won(sut, policy, shown, f"with room for every pin of {sid}, a run opened with a denied pin active")


def _ineligible_to_call(m: ServerModel, tools: list[ListedTool]) -> list[ListedTool]:
    """A few tools of a server that its policy does not admit: the pinned ones, the first, the last."""
    out = [t for t in tools if t["name"] not in m.eligible]
    picked = [t for t in out if t["name"] in m.pinned_not_eligible][:2] + out[:1] + out[-1:]
    return list({t["name"]: t for t in picked}.values())


def _blamed(sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, sid: str, tool: Any, *general: str) -> tuple[str, ...]:
    """The sentences broken by a tool the policy of ``sid`` does not admit, active or run.

    Whether the SUT itself holds the tool eligible under that policy tells which: when it
    does, it misread the rule that excludes it (that rule's sentence alone); when it does
    not, it ignored its own judgement here (the ``general`` sentences alone). When the
    control run tells nothing (a SUT that refuses a run pinning an excluded tool, as ID-9
    allows), both.
    """
    spec, policies = fleet
    policy = policies.get(sid, {})
    why = _why_not(policy, tool)
    held = _held_eligible(sut, fleets, next(s for s in spec.servers if s.id == sid), policy, tool)
    if held is None:
        return (*general, why)
    return (why,) if held else general


def _held_eligible(sut: Sut, fleets: Fleets, server: ServerSpec, policy: ToolPolicy, tool: ListedTool) -> bool | None:
    """Whether the SUT holds ``tool`` of ``server`` eligible under ``policy``, from a run of
    that server alone where an eligible tool is required (POL-6.1): outside ``auto`` mode
    every eligible tool is; in ``auto`` mode the tool is pinned. A pinned tool must also
    execute: a host may list a pinned tool it holds ineligible, and its gate then refuses
    it. None when that run does not open."""
    name = tool["name"]
    pins = sorted({*policy.get("pinnedTools", []), *([name] if policy.get("mode", "auto") == "auto" else [])})
    control: ToolPolicy = {**policy, "pinnedTools": pins, "maxActiveTools": 96}
    target = qualified(server.id, name)

    async def held(params: OpenParams) -> bool | None:
        try:
            async with sut.open(params) as r:
                if target not in names(await r.definitions()):
                    return False
                return name not in pins or not (await r.call(target, example_arguments(tool)))["isError"]
        except OutcomeError:
            return None

    with fleets.serve(FleetSpec(servers=(server,)), {server.id: policy}) as served:
        return run(held(open_params(served.with_policies({server.id: control}))))


def _executed(opened: Opened, qualified: str) -> list[ToolCalled]:
    sid, _, name = qualified.partition("__")
    return [c for c in opened.calls if c.get("server") == sid and c.get("name") == name]


@clause(
    "POL-1.1",
    "POL-1.2",
    "POL-1.3",
    "POL-2.1",
    "POL-2.2",
    "POL-2.3",
    "POL-3.1",
    "POL-3.2",
    "POL-4.1",
    "POL-5.1",
    "POL-5.2",
    "POL-5.3",
    "POL-5.4",
)
@examples(15)
@given(FLEETS, BASES)
@with_examples(PINNED_AND_DENIED + DENIALS + READ_ONLY_MIXED + ALLOWLISTS)
def test_only_eligible_tools_are_active(sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int) -> None:
    fleet, base_count = opening(fleet, base_count)
    models = plan(fleet, base_count).servers
    ineligible = {
        f"{sid}__{t['name']}": t for sid, ts in tools_of(fleet[0]).items() for t in _ineligible_to_call(models[sid], ts)
    }

    async def call_them(r: Run, defs: list[Definition]) -> dict[str, Any]:
        return {q: await r.call(q, example_arguments(t)) for q, t in ineligible.items()}

    opened = open_first_round(sut, fleets, fleet, base_count, then=call_them, blame_excluded_pins=False)
    defs = opened.definitions(("POL-1.1",))
    cat = catalog(opened.tools)
    for d in mcp_definitions(defs, opened.base):
        if d["name"] not in cat:
            continue  # DEF-1 judges names that are no tool of the catalog
        sid, tool = cat[d["name"]]
        if tool["name"] not in models[sid].eligible:
            raise fail(
                _blamed(sut, fleets, fleet, sid, tool, "POL-1.1", "POL-1.2"),
                f"{d['name']} is in the definitions although the policy of {sid} does not admit it",
                expected=f"eligible tools of {sid}: {models[sid].eligible}",
                observed={"tool": tool["name"], "annotations": tool.get("annotations")},
                case=opened.case,
            )
    for name, result in opened.after.items():
        sid, tool = cat[name]
        executed = _executed(opened, name)
        if executed or not result["isError"]:
            gate_refuses_inactive(sut, fleets)
            raise fail(
                _blamed(sut, fleets, fleet, sid, tool, "POL-1.1", "POL-1.3"),
                f"a call to {name}, which the policy of {sid} does not admit, was not refused",
                expected="an error result, and no tools/call",
                observed={"result": result, "tools/call": portable(executed)},
                case=opened.case,
            )


@clause("POL-4.4", "POL-5.6", "POL-6.2")
@examples(10)
@given(FLEETS, st.integers(0, 8))
# In all mode allowedTools restricts nothing, a name the server does not offer included.
@with_examples([*ALLOWLISTS, (_s0({}, 20), 0), (_s0({"allowedTools": ["no_such_tool"]}, 20), 0)])
def test_an_open_policy_restricts_nothing(sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int) -> None:
    """Every tool of a server in ``all`` mode is active (required), whatever ``allowedTools``
    lists and whatever the annotations say when writes are allowed."""
    spec, policies = fleet
    opened_policies: dict[str, ToolPolicy] = {
        s.id: {
            **policies.get(s.id, ToolPolicy()),
            "mode": "all",
            "sideEffects": "allow",
            "deniedTools": [],
            "maxActiveTools": 96,
        }
        for s in spec.servers
    }
    (spec, opened_policies), base_count = opening((spec, opened_policies), base_count)
    opened = open_first_round(sut, fleets, (spec, opened_policies), base_count)
    shown = set(names(opened.definitions(("POL-6.2",))))
    for sid, m in opened.model.servers.items():
        missing = [n for n in m.eligible if f"{sid}__{n}" not in shown]
        if missing:
            listed = bool(policies.get(sid, {}).get("allowedTools"))
            # Left out by the list or the annotations, or because required tools are not all
            # activated even with nothing restricting them (POL-6.2): a control run tells.
            own = "POL-4.4" if listed else "POL-5.6"
            raise fail(
                ("POL-6.2",) if required_left_out(sut, fleets) else (own,),
                f"tools of {sid} are not active (required, as in all mode) although its policy restricts nothing",
                expected=m.eligible,
                observed={"missing": missing, "policy": opened_policies[sid]},
                case=opened.case,
            )


# Required tools that only just fit the first-round capacity (96 - 80 base tools - the
# discovery tool = 15) next to an auto server with more room than that: they come first.
TIGHT: list[tuple[FleetAndPolicies, int]] = [
    (
        (
            FleetSpec(servers=(ServerSpec(id="s0", tool_count=20), ServerSpec(id="s1", tool_count=10))),
            {"s0": {}, "s1": {"mode": "allowlist", "allowedTools": _S0}},
        ),
        80,
    )
]


@clause("POL-6.2", "POL-6.3", "POL-7.1", "POL-7.2", "POL-7.3", "POL-7.4", "BUD-4.1", "ERR-1.1", "ERR-2.1")
@examples(15)
@given(FLEETS, BASES)
@with_examples([*PINNED_AND_DENIED, *TIGHT, (_s0({"mode": "all"}, 20), 0)])
def test_required_tools_are_all_active_or_the_run_is_a_selection_error(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    opened = open_first_round(sut, fleets, fleet, base_count, must_open=False, blame_excluded_pins=False)
    if opened.model.error is not None:
        finding = opened.refusal()
        if finding is not None:
            read_only_applied(sut, fleets, *fleet)  # which tools are required rests on it
            raise finding
        return
    defs = opened.definitions(("POL-6.2",))
    shown = set(names(defs))
    required = {f"{m.id}__{n}" for m in opened.model.servers.values() for n in m.required}
    missing = sorted(required - shown)
    if missing:
        read_only_applied(sut, fleets, *fleet)
        ranked = sorted(set(names(mcp_definitions(defs, opened.base))) - required)
        raise fail(
            ("POL-6.3",) if ranked else ("POL-6.2",),
            "required tools are missing from the first round"
            + (", and ranked tools took their place" if ranked else ""),
            expected=sorted(required),
            observed={"missing": missing, "ranked tools active": ranked},
            case=opened.case,
        )
    for m in opened.model.servers.values():
        for name in m.pinned_not_eligible:
            if f"{m.id}__{name}" in shown:
                tool = next(t for t in opened.tools[m.id] if t["name"] == name)
                read_only_applied(sut, fleets, *fleet)
                _denial_won(sut, fleet[1].get(m.id, {}), [name], f"{m.id}__{name} is active")
                raise fail(
                    ("POL-7.1", _pinned_why_not(fleet[1].get(m.id, {}), tool)),
                    f"{m.id}__{name} is pinned but not eligible, and it is active",
                    observed=name,
                    case=opened.case,
                )


# Which tools are required, where maxActiveTools tells: each case opens (the required tools
# fit) only when the required tools are exactly the eligible pinned ones, and every eligible
# tool outside auto mode. Each names the sentence a wrong set of required tools breaks.
REQUIRED: dict[str, tuple[ToolPolicy, str]] = {
    "allowlist-every-allowed-tool": ({"mode": "allowlist", "allowedTools": _READ, "pinnedTools": _READ[:1]}, "POL-6.1"),
    "all-every-eligible-tool": ({"mode": "all", "deniedTools": _WRITE}, "POL-6.1"),
    "auto-allowed-tools-are-not-required": ({"allowedTools": _READ + _WRITE, "maxActiveTools": 3}, "POL-6.1"),
    "auto-pinned-tools-are-required": ({"pinnedTools": _WRITE[1:], "maxActiveTools": 3}, "POL-6.1"),
    # One eligible pinned tool and two that are not, under maxActiveTools 2: the run opens
    # only when the two are not required.
    "pinned-and-denied": (
        {"pinnedTools": ["get_issue", *_WRITE[:2]], "deniedTools": _WRITE[:2], "maxActiveTools": 2},
        "POL-7.2",
    ),
    "pinned-without-read-only-hint": (
        {"sideEffects": "readOnly", "pinnedTools": ["get_issue", *_WRITE[:2]], "maxActiveTools": 2},
        "POL-7.3",
    ),
    "pinned-outside-auto-allowed-tools": (
        {"allowedTools": _READ[:2], "pinnedTools": ["get_issue", *_WRITE[:2]], "maxActiveTools": 2},
        "POL-7.4",
    ),
    "pinned-outside-the-allowlist": (
        {
            "mode": "allowlist",
            "allowedTools": ["get_issue"],
            "pinnedTools": ["get_issue", *_WRITE[:2]],
            "maxActiveTools": 2,
        },
        "POL-7.1",
    ),
}


@clause("POL-6.1", "POL-6.2", "POL-7.1", "POL-7.2", "POL-7.3", "POL-7.4", "POL-1.3")
@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_required_tools_are_the_eligible_pinned_ones_and_every_eligible_one_outside_auto(
    sut: Sut, fleets: Fleets, name: str
) -> None:
    policy, sentence = REQUIRED[name]
    fleet = _s0(policy, 20)
    m = plan(fleet, 0).servers["s0"]
    outside = [_TOOLS[n] for n in m.pinned_not_eligible]

    async def call_them(r: Run, defs: list[Definition]) -> dict[str, Any]:
        return {t["name"]: await r.call(f"s0__{t['name']}", example_arguments(t)) for t in outside}

    opened = open_first_round(sut, fleets, fleet, 0, then=call_them, blame_excluded_pins=False)
    if isinstance(opened.got, OutcomeError):
        _denied_pins_stay_out_with_room(sut, fleets, fleet)
    shown = names(mcp_definitions(opened.definitions((sentence,)), []))
    active = sorted(q.removeprefix("s0__") for q in shown)
    missing = sorted(set(m.required) - set(active))
    wrong = sorted(set(active) & set(m.pinned_not_eligible))
    if missing or wrong or (m.mode != "auto" and active != sorted(m.required)):
        read_only_applied(sut, fleets, *fleet)
        # An active tool the policy excludes otherwise than as a pin (a deny list or an
        # allowlist misread) makes more tools required: that rule broke first. Excluded pins
        # are this check's own subject.
        others = [f"s0__{n}" for n in active if n not in m.pinned_not_eligible]
        policy_applied(sut, fleets, *fleet, opened.model, others)
        raise fail(
            (sentence, "POL-6.2") if missing else (sentence,),
            "the first round does not hold exactly the required tools it must"
            if m.mode != "auto"
            else "a pinned tool that is eligible is missing, or one that is not is active",
            expected={"required": sorted(m.required), "pinned but not eligible": m.pinned_not_eligible},
            observed={"active": active},
            case=opened.case,
        )
    for tool_name, result in opened.after.items():
        executed = _executed(opened, f"s0__{tool_name}")
        if executed or not result["isError"]:
            read_only_applied(sut, fleets, *fleet)
            gate_refuses_inactive(sut, fleets)
            raise fail(
                # That it runs is the gate's failure (POL-1.3), whatever made it pinned.
                ("POL-1.3",),
                f"s0__{tool_name} is pinned but not eligible, and a call to it was not refused",
                expected="an error result, and no tools/call",
                observed={"result": result, "tools/call": portable(executed)},
                case=opened.case,
            )


# Discovery under a policy: each case asks for tools the policy does not admit, one call
# each, naming the tool exactly (the strongest relevance any ranker can see).
DISCOVERY_UNDER_POLICY: dict[str, tuple[ToolPolicy, list[str], str]] = {
    "denied": ({"deniedTools": _WRITE}, _WRITE, "POL-1.4"),
    "read-only": ({"sideEffects": "readOnly"}, _WRITE, "POL-1.4"),
    "outside-allowed-tools": ({"allowedTools": _READ}, _WRITE, "POL-4.2"),
}


@clause("POL-1.3", "POL-1.4", "POL-4.2")
@pytest.mark.parametrize("name", sorted(DISCOVERY_UNDER_POLICY))
def test_discovery_never_activates_a_tool_the_policy_does_not_admit(sut: Sut, fleets: Fleets, name: str) -> None:
    policy, wanted, sentence = DISCOVERY_UNDER_POLICY[name]
    fleet = _s0(policy, 20)
    m = plan(fleet, 0).servers["s0"]

    async def ask_for_them(r: Run, defs: list[Definition]) -> dict[str, Any]:
        found = []
        for tool in wanted:
            result = await r.call(DISCOVERY, {"query": f"s0__{tool}", "server_ids": ["s0"], "limit": 12})
            found += activated(result)
        active = names(mcp_definitions(await r.definitions(), []))
        calls = {t: await r.call(f"s0__{t}", example_arguments(_TOOLS[t])) for t in wanted}
        return {"activated": found, "active": active, "calls": calls}

    opened = open_first_round(sut, fleets, fleet, 0, then=ask_for_them)
    opened.definitions((sentence,))
    seen = sorted({q.removeprefix("s0__") for q in opened.after["activated"] + opened.after["active"]})
    let_in = [n for n in seen if n not in m.eligible]
    if let_in:
        # Discovery is judged against the policy the SUT applies everywhere else.
        read_only_applied(sut, fleets, *fleet)
        raise fail(
            (sentence,),
            "discovery activated tools the policy does not admit, asked for by their names",
            expected={"eligible": m.eligible},
            observed={"not eligible, yet activated": let_in},
            case=opened.case,
        )
    for tool_name, result in opened.after["calls"].items():
        executed = _executed(opened, f"s0__{tool_name}")
        if executed or not result["isError"]:
            read_only_applied(sut, fleets, *fleet)
            gate_refuses_inactive(sut, fleets)
            raise fail(
                ("POL-1.3",),
                f"s0__{tool_name}, which the policy does not admit, executed after discovery asked for it",
                expected="an error result, and no tools/call",
                observed={"result": result, "tools/call": portable(executed)},
                case=opened.case,
            )


#: Base tools that, with the discovery tool, leave the 20-tool server a first round of 8.
_EIGHT_FIRST = 87


@clause("POL-4.3")
@pytest.mark.parametrize(
    "policy",
    [{"allowedTools": []}, {"mode": "auto", "allowedTools": [], "pinnedTools": []}],
    ids=["allowed-tools-only", "auto-and-empty-lists"],
)
def test_an_empty_allowed_tools_restricts_nothing_in_auto_mode(sut: Sut, fleets: Fleets, policy: ToolPolicy) -> None:
    fleet = _s0(policy, 20)
    model = plan(fleet, _EIGHT_FIRST)

    async def discover_one(r: Run, defs: list[Definition]) -> dict[str, Any]:
        shown = names(mcp_definitions(defs, names(base_tools(_EIGHT_FIRST))))
        left_out = sorted(set(_NAMES) - {q.removeprefix("s0__") for q in shown})
        if not left_out:
            return {}
        # Few enough candidates (12) that naming one activates it (DSC-5.8), and the server
        # stays under 12 active tools (past it is SEL-1.3's).
        target = f"s0__{left_out[0]}"
        result = await r.call(DISCOVERY, {"query": target, "server_ids": ["s0"], "limit": 12})
        if target in names(await r.definitions()):
            return {left_out[0]: True}
        await named_activation_missed(r, target, _TOOLS[left_out[0]], result)
        return {left_out[0]: False}

    opened = open_first_round(sut, fleets, fleet, _EIGHT_FIRST, then=discover_one)
    first = names(mcp_definitions(opened.definitions(("POL-4.3",)), opened.base))
    # Every tool is a candidate, so the first round's count is the cap's (SEL-1).
    first_round_capped(model, opened.tools, first)
    if len(first) != model.mcp_count:
        # As short with every tool allowed: the empty list is not what restricts it (SEL-2's).
        control = open_first_round(sut, fleets, _s0({"allowedTools": _NAMES}, 20), _EIGHT_FIRST)
        unrestricted = names(mcp_definitions(control.definitions(("SEL-2.1",)), control.base))
        precondition(
            "SEL-2",
            len(unrestricted) != len(first),
            f"the first round of s0 holds {len(first)} tools, not {model.mcp_count}, with every tool allowed too",
            observed={"with an empty allowedTools": first, "with every tool allowed": unrestricted},
        )
    if len(first) == model.mcp_count and not all(opened.after.values()):
        # The first round is right; discovery found nothing: any tool left out is lost (CAT-1.3)?
        left_out_tools_activatable(sut, fleets)
    if len(first) != model.mcp_count or not all(opened.after.values()):
        raise fail(
            ("POL-4.3",),
            "an auto server with an empty allowedTools did not get every tool as a candidate",
            expected={"first round": f"{model.mcp_count} tools (the capacity)", "discovery": "activated"},
            observed={"first round": first, "discovery": opened.after},
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
        ToolSpec(
            name="archive_harmless",
            description="Archive things; nothing is lost.",
            input_schema=schema,
            annotations={"readOnlyHint": False, "destructiveHint": False},
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
        "archive_harmless": "POL-5.3",
        "list_none": "POL-5.5",
        "get_empty": "POL-5.2",
    }
    spec = FleetSpec(servers=(ServerSpec(id="r", tool_count=0, raw=True, tools=tools),))
    for transport in ("http", "stdio"):
        read_only_policies: tuple[ToolPolicy, ...] = (
            {"mode": "all", "sideEffects": "readOnly"},
            {"mode": "auto", "sideEffects": "readOnly"},
        )
        for policy in read_only_policies:
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
                        ("POL-5.1", *sorted({reasons.get(w, "POL-5.1") for w in wrong})),
                        f"under readOnly, {wrong[0]} is active although its readOnlyHint is not the JSON value true",
                        expected=sorted(eligible),
                        observed=sorted(active),
                        case=case,
                    )
                executed = served.ledger().calls()
                if any(not result["isError"] for result in calls.values()) or executed:
                    gate_refuses_inactive(sut, fleets)
                    raise fail(
                        ("POL-1.3",),
                        "under readOnly a tool without readOnlyHint === true executes",
                        expected="every call refused, no tools/call",
                        observed={"results": calls, "executed": portable(executed)},
                        case=case,
                    )


# What is eligible when the policy names a tool the server does not offer (or names one in
# another case, or by its qualified name): the policy without the name, whose run the one
# with it must look exactly like; or, where dropping the name changes the policy's meaning,
# the tools that may be active. And the sentence a run that gets it wrong breaks. Pinned
# names go with maxActiveTools 0, where a tool they brought in would be plain to see.
UNKNOWN_NAMES: dict[str, tuple[ToolPolicy, ToolPolicy | None, set[str] | None, str]] = {
    "pinned-unknown": ({"pinnedTools": ["no_such_tool"], "maxActiveTools": 0}, {"maxActiveTools": 0}, None, "POL-8.1"),
    "pinned-other-case": (
        {"pinnedTools": [_NAMES[-1].upper()], "maxActiveTools": 0},
        {"maxActiveTools": 0},
        None,
        "POL-8.1",
    ),
    "pinned-qualified": (
        {"pinnedTools": [f"s0__{_NAMES[-1]}"], "maxActiveTools": 0},
        {"maxActiveTools": 0},
        None,
        "POL-9.5",
    ),
    "allowlist-with-unknown": (
        {"mode": "allowlist", "allowedTools": [_NAMES[1], "no_such_tool"]},
        {"mode": "allowlist", "allowedTools": [_NAMES[1]]},
        {_NAMES[1]},
        "POL-8.1",
    ),
    "allowlist-other-case": ({"mode": "allowlist", "allowedTools": [_NAMES[1].upper()]}, None, set(), "POL-8.1"),
    "allowlist-qualified": ({"mode": "allowlist", "allowedTools": [f"s0__{_NAMES[1]}"]}, None, set(), "POL-9.5"),
    "auto-allowed-unknown-only": ({"allowedTools": ["no_such_tool"]}, None, set(), "POL-8.1"),
    "auto-allowed-with-unknown": (
        {"allowedTools": [_NAMES[2], "no_such_tool"]},
        {"allowedTools": [_NAMES[2]]},
        {_NAMES[2]},
        "POL-8.1",
    ),
    "all-pinned-unknown": ({"mode": "all", "pinnedTools": ["no_such_tool"]}, {"mode": "all"}, None, "POL-8.1"),
    "all-denied-qualified": ({"mode": "all", "deniedTools": [f"s0__{_NAMES[0]}"]}, {"mode": "all"}, None, "POL-9.5"),
}


async def _observe(sut: Sut, servers: list[ServerConfig]) -> list[Definition] | OutcomeError:
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
    policy, without, eligible, sentence = UNKNOWN_NAMES[name]
    spec = FleetSpec(servers=(_SERVER,))
    with fleets.serve(spec, {"s0": policy}) as served:
        case = served.describe()
        got = run(_observe(sut, served.servers))
        if isinstance(got, OutcomeError):
            if got.kind == "config_error":
                return  # ID-3: an error is one of the two allowed answers
            # A qualified name refused otherwise than as a name not offered was read as the
            # tool it qualifies (POL-9.5): then the refusal is that misreading's, not POL-8.2's.
            raise fail(
                (sentence,) if sentence == "POL-9.5" else (sentence, "POL-8.2"),
                f"a policy naming {policy} failed the run with {got.kind}",
                expected="config_error, or a run exactly like one without the name",
                observed=str(got),
                case=case,
                refused=(got, None),
            )
        baseline = run(_observe(sut, served.with_policies({"s0": without}))) if without is not None else None
    active = names(mcp_definitions(got, []))
    phantoms = sorted(set(active) - set(catalog(served.tools)))
    if phantoms:
        raise fail(
            ("POL-8.2",),
            "a run that opened despite a policy name the server does not offer exposes tools it does not offer",
            observed=phantoms,
            case=case,
        )
    if eligible is not None:
        outside = sorted(set(active) - {f"s0__{n}" for n in eligible})
        if outside:
            raise fail(
                (sentence,),
                "a policy name the server does not offer brought other tools in its place",
                expected=sorted(f"s0__{n}" for n in eligible),
                observed=active,
                case=case,
            )
        return
    # Which tools, not their order (DEF-4's).
    if isinstance(baseline, OutcomeError) or baseline is None or by_name(got) != by_name(baseline):
        raise fail(
            (sentence,),
            "a policy name the server does not offer changed which tools are active",
            expected=names(baseline) if isinstance(baseline, list) else str(baseline),
            observed=names(got),
            case=case | {"same run without the name": without},
        )


DEFAULTS: ToolPolicy = {
    "mode": "auto",
    "allowedTools": [],
    "deniedTools": [],
    "pinnedTools": [],
    "maxActiveTools": DEFAULT_MAX_ACTIVE,
    "sideEffects": "allow",
}
_EMPTY_LISTS: ToolPolicy = {
    "allowedTools": DEFAULTS["allowedTools"],
    "deniedTools": DEFAULTS["deniedTools"],
    "pinnedTools": DEFAULTS["pinnedTools"],
}
# A policy with fields left out, the same policy with them written out as their defaults,
# and the sentence that says what leaving them out means.
EXPLICIT_DEFAULTS: dict[str, tuple[ToolPolicy, ToolPolicy, str]] = {
    "mode": ({}, {"mode": "auto"}, "POL-9.1"),
    "lists": ({}, _EMPTY_LISTS, "POL-9.2"),
    "allowlist-lists": ({"mode": "allowlist"}, {"mode": "allowlist", **_EMPTY_LISTS}, "POL-9.2"),
    "max-active": ({}, {"maxActiveTools": DEFAULT_MAX_ACTIVE}, "POL-9.3"),
    "side-effects": ({}, {"sideEffects": "allow"}, "POL-9.4"),
}


async def _up_to_max_active(sut: Sut, servers: list[ServerConfig]) -> list[list[str]] | str:
    """Definition names at open and after each discovery call naming a server, until the
    servers reach their maxActiveTools; or the kind of refusal. Sorted: which tools is the
    policy's business, their order DEF-4's."""
    seen = []
    try:
        async with sut.open(open_params(servers, base_tools(0))) as r:
            seen.append(sorted(names(await r.definitions())))
            if DISCOVERY not in seen[0]:
                return seen
            for _ in range(3):
                for server in servers:
                    await r.call(DISCOVERY, {"query": server["id"], "server_ids": [server["id"]], "limit": 12})
                    seen.append(sorted(names(await r.definitions())))
    except OutcomeError as exc:
        return exc.kind
    return seen


@clause("POL-9.1", "POL-9.2", "POL-9.3", "POL-9.4")
@pytest.mark.parametrize("name", sorted(EXPLICIT_DEFAULTS))
def test_omitted_policy_fields_behave_as_their_defaults(sut: Sut, fleets: Fleets, name: str) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=40), ServerSpec(id="s1", tool_count=30)), seed=5)
    omitted, explicit, sentence = EXPLICIT_DEFAULTS[name]
    # Each policy over servers served for it alone: what the first run's discoveries could
    # leave behind is for the checks of isolation (ISO-2) to find.
    with (
        fleets.serve(spec, {s.id: omitted for s in spec.servers}) as served,
        fleets.serve(spec, {s.id: explicit for s in spec.servers}) as served_explicit,
    ):
        case = served.describe() | {"explicit policy": explicit}
        left_out = run(_up_to_max_active(sut, served.servers))
        given_ = run(_up_to_max_active(sut, served_explicit.servers))
    if left_out != given_:
        if isinstance(left_out, str) or isinstance(given_, str):
            expected: Any = left_out
            observed: Any = given_
        else:
            step = next(i for i, (a, b) in enumerate(zip(left_out, given_, strict=False)) if a != b)
            expected = {"step": step, "definitions": left_out[step]}
            observed = {"step": step, "definitions": given_[step]}
        raise fail(
            (sentence,),
            "a policy with fields left out and the same policy with their defaults written out gave different runs",
            expected=expected,
            observed=observed,
            case=case,
        )
