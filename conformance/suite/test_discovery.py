"""Discovery over generated fleets: what it may activate, the budgets it respects, what
it reports, and how its tools reach the next request and execute through the gate.

Every property drives the same kind of discovery sequence (:func:`explore`) and checks
one invariant of the trace, so that a failure reports the clause it breaks rather than
the first of several checks that happens to fail. Example-based tests beside them drive
discovery up to the watermarks (BUD-2) and the servers' ``maxActiveTools`` (SEL-3).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance import OutcomeError, Run, Sut, clause
from conformance.suite._model import (
    DISCOVERY,
    DYNAMIC,
    REQUEST,
    FirstRound,
    base_tools,
    catalog,
    examples,
    fail,
    first_round,
    fleets_with_policies,
    mcp_definitions,
    names,
    open_params,
    portable,
    run,
)
from mock_servers import FleetSpec, ServerSpec, example_arguments, generate_tools

FLEETS = fleets_with_policies(max_servers=3, min_tools=5, max_tools=40)
BASES = st.integers(0, 4) | st.integers(70, 95)
STEPS = st.lists(
    st.tuples(st.integers(0, 10_000), st.none() | st.integers(1, 20), st.booleans()), min_size=1, max_size=5
)
Steps = list[tuple[int, int | None, bool]]


def _words(tools: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Query words: the servers' ids (which match every tool of a server) and the words of the tools."""
    words: set[str] = set()
    for ts in tools.values():
        for t in ts:
            words.update(w for w in re.split(r"[^a-z0-9]+", (t["name"] + " " + t.get("description", "")).lower()) if w)
    return sorted(tools) + (sorted(words) or ["tool"])


@dataclass
class Step:
    """One discovery call and the definitions read right after it."""

    arguments: dict[str, Any]
    scope: list[str] | None
    limit: int | None
    result: dict[str, Any]
    activated: list[str]
    before: list[str]  # MCP tools active before the call (first round and reported activations)
    definitions: list[dict[str, Any]]


@dataclass
class Trace:
    """A discovery sequence on one run, with what the suite predicts about it."""

    model: FirstRound
    tools: dict[str, list[dict[str, Any]]]
    base: list[str]
    start: list[dict[str, Any]]
    case: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)  # tools/call seen by the servers after the steps
    after: Any = None  # what ``then`` returned
    calls_after: list[dict[str, Any]] = field(default_factory=list)  # tools/call seen after ``then``

    @property
    def catalog(self) -> dict[str, tuple[str, Any]]:
        return catalog(self.tools)

    @property
    def auto_ids(self) -> list[str]:
        return [sid for sid, m in self.model.servers.items() if m.mode == "auto"]

    def mcp(self, defs: list[dict[str, Any]]) -> list[str]:
        return names(mcp_definitions(defs, self.base))

    def per_server(self, active: set[str]) -> dict[str, int]:
        per: dict[str, int] = {}
        cat = self.catalog
        for n in active:
            if n in cat:
                per[cat[n][0]] = per.get(cat[n][0], 0) + 1
        return per


Then = Callable[[Run, Trace], Awaitable[Any]]


def explore(
    sut: Sut,
    fleets: Any,
    spec: FleetSpec,
    policies: dict[str, dict[str, Any]],
    base_count: int,
    steps: Steps,
    then: Then | None = None,
) -> Trace | None:
    """Open a run, make the discovery calls ``steps`` describe, read the definitions after
    each, then run ``then`` on the open run. None when the run must fail to open or has
    no discovery tool (the first-round properties cover both)."""
    base = base_tools(base_count)
    with fleets.serve(spec, policies) as served:
        model = first_round(served.tools, served.policies, base_count)
        if model.error or not model.discovery:
            return None
        trace = Trace(model, served.tools, names(base), [], served.describe() | {"baseTools": base_count})
        words = _words(served.tools)
        auto_ids = trace.auto_ids

        async def body() -> None:
            async with sut.open(open_params(served.servers, base)) as r:
                trace.start = await r.definitions()
                active = list(trace.mcp(trace.start))
                for word_index, limit, scoped in steps:
                    args: dict[str, Any] = {"query": words[word_index % len(words)]}
                    scope = [auto_ids[word_index % len(auto_ids)]] if scoped else None
                    if scope:
                        args["server_ids"] = scope
                    if limit is not None:
                        args["limit"] = limit
                    result = await r.call(DISCOVERY, args)
                    sc = result.get("structuredContent") or {}
                    activated = [str(a.get("name")) for a in sc.get("activated", []) if isinstance(a, dict)]
                    defs = await r.definitions()
                    trace.steps.append(Step(args, scope, limit, result, activated, list(active), defs))
                    active += [q for q in activated if q not in active]
                    trace.case["steps"] = r.case["steps"]
                trace.calls = served.ledger().calls()
                if then is not None:
                    trace.after = await then(r, trace)
                    trace.case["steps"] = r.case["steps"]
                    trace.calls_after = served.ledger().calls()

        run(body())
        return trace


def explored(sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps, then: Then | None = None) -> Trace:
    """:func:`explore` for a property: an example whose run has no discovery to explore is
    discarded, so that it counts neither as a pass nor against the example budget."""
    trace = explore(sut, fleets, fleet[0], fleet[1], base_count, steps, then)
    assume(trace is not None)
    assert trace is not None
    return trace


def _sequence(test: Any) -> Any:
    """The shared strategy of the discovery-sequence properties."""
    return given(FLEETS, BASES, STEPS)(test)


@clause("DSC-4", "DSC-5", "POL-1")
@examples(10)
@_sequence
def test_discovery_activates_only_candidates_within_its_limits(
    sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps
) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    for step in trace.steps:
        if step.result["isError"]:
            raise fail(("DSC-5",), "a valid discovery call failed", observed=step.result, case=trace.case)
        cap = min(step.limit if step.limit is not None else 6, 12)
        room = trace.model.dynamic_capacity - len(step.before)
        if len(step.activated) > min(cap, max(room, 0)):
            raise fail(
                ("DSC-5",),
                "discovery activated more than its (clamped) limit or the dynamic capacity allows",
                expected=f"<= min(limit {cap}, dynamic room {room})",
                observed=step.activated,
                case=trace.case,
            )
        for q in step.activated:
            if q not in cat or q in step.before or step.activated.count(q) > 1:
                raise fail(
                    ("DSC-4",),
                    "discovery activated a tool that is unknown or already active",
                    observed=q,
                    case=trace.case,
                )
            sid, tool = cat[q]
            m = trace.model.servers[sid]
            if m.mode != "auto" or tool["name"] not in m.eligible or (step.scope and sid not in step.scope):
                raise fail(
                    ("DSC-4", "POL-1"),
                    "discovery activated a tool that is not a candidate",
                    expected={"auto": trace.auto_ids, "eligible": m.eligible, "scope": step.scope},
                    observed=q,
                    case=trace.case,
                )
        before = trace.per_server(set(step.before))
        after = trace.per_server(set(step.before) | set(step.activated))
        for sid, count in after.items():
            m = trace.model.servers[sid]
            if count > before.get(sid, 0) and count > m.max_active:
                raise fail(
                    ("DSC-5", "DSC-4"),
                    f"discovery activated tools of {sid} beyond its remaining maxActiveTools room",
                    expected=f"<= {m.max_active}",
                    observed={"before": before.get(sid, 0), "after": count},
                    case=trace.case,
                )


@clause("DSC-6")
@examples(8)
@_sequence
def test_discovery_result_reports_activated_tools_and_counts(
    sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps
) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    for step in trace.steps:
        if step.result["isError"]:
            continue
        sc = step.result.get("structuredContent")
        if not isinstance(sc, dict) or not isinstance(sc.get("activated"), list):
            raise fail(
                ("DSC-6",),
                "a successful discovery result has no structuredContent.activated list",
                observed=step.result,
                case=trace.case,
            )
        for entry in sc["activated"]:
            name = entry.get("name") if isinstance(entry, dict) else None
            if name in cat and entry.get("description") != cat[name][1].get("description", ""):
                raise fail(
                    ("DSC-6",),
                    "an activated entry does not carry the tool's description",
                    expected=cat[name][1].get("description", ""),
                    observed=entry,
                    case=trace.case,
                )
        active = len(set(step.before) | set(step.activated))
        want = {"activeCount": active, "remainingCapacity": trace.model.dynamic_capacity - active}
        got = {k: sc.get(k) for k in want}
        if got != want:
            raise fail(
                ("DSC-6",), "activeCount / remainingCapacity are wrong", expected=want, observed=sc, case=trace.case
            )


@clause("DEF-1", "DEF-2", "DEF-3")
@examples(8)
@_sequence
def test_discovered_tools_are_in_every_later_definition_list(
    sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps
) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps)
    cat = trace.catalog
    shown = trace.mcp(trace.start)
    for step in trace.steps:
        now = trace.mcp(step.definitions)
        lost = [n for n in shown if n not in now]
        if lost:
            raise fail(("DEF-3",), "tools once active were lost", observed=lost, case=trace.case)
        missing = [q for q in step.activated if q not in now]
        if missing:
            raise fail(("DEF-2",), "activated tools are not in the next definitions", observed=missing, case=trace.case)
        for d in step.definitions:
            if (
                d["name"] in step.activated
                and d["name"] in cat
                and d["inputSchema"] != cat[d["name"]][1]["inputSchema"]
            ):
                raise fail(("DEF-2",), "an activated tool lacks its complete schema", observed=d, case=trace.case)
        if set(now) != set(shown) | set(step.activated):
            raise fail(
                ("DEF-1", "DEF-2"),
                "the active set changed other than by the activated tools",
                expected=sorted(set(shown) | set(step.activated)),
                observed=now,
                case=trace.case,
            )
        shown = now


@clause("BUD-2")
@examples(8)
@_sequence
def test_definitions_never_grow_past_112(sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps)
    for step in trace.steps:
        if len(step.definitions) > DYNAMIC:
            raise fail(
                ("BUD-2",),
                "definitions grew past the dynamic watermark",
                expected=f"<= {DYNAMIC}",
                observed=len(step.definitions),
                case=trace.case,
            )


@clause("SEL-3")
@examples(8)
@_sequence
def test_no_server_passes_its_max_active_tools(
    sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps
) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps)
    _check_max_active(trace)


def _check_max_active(trace: Trace) -> None:
    for step in trace.steps:
        active = set(trace.mcp(step.definitions)) | set(step.before) | set(step.activated)
        for sid, count in trace.per_server(active).items():
            m = trace.model.servers[sid]
            if count > max(m.max_active, len(m.required)):
                raise fail(
                    ("SEL-3",),
                    f"{sid} has more active tools than its maxActiveTools",
                    expected=f"<= {m.max_active}",
                    observed={"count": count, "discovery call": step.arguments, "activated": step.activated},
                    case=trace.case,
                )


@clause("DSC-9")
@examples(6)
@_sequence
def test_discovery_never_calls_a_server_tool(sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps)
    if trace.calls:
        raise fail(("DSC-9",), "discovery called a server tool", observed=trace.calls, case=trace.case)


async def _fill_request(r: Run, trace: Trace) -> tuple[int, list[dict[str, Any]] | OutcomeError]:
    """A request of exactly 128 definitions, then one of 129."""
    room = REQUEST - len(await r.definitions())
    exact = len(await r.request(base_tools(room, "extra")))
    try:
        return exact, await r.request(base_tools(room + 1, "extra"))
    except OutcomeError as exc:
        return exact, exc


@clause("BUD-3")
@examples(6)
@_sequence
def test_every_request_is_checked_against_128(sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps, then=_fill_request)
    exact, over = trace.after
    if exact != REQUEST:
        raise fail(
            ("BUD-3",),
            "a request of exactly 128 definitions was altered",
            expected=REQUEST,
            observed=exact,
            case=trace.case,
        )
    if not isinstance(over, OutcomeError):
        raise fail(
            ("BUD-3",),
            "a request over 128 definitions was not refused",
            expected="request_too_large",
            observed=len(over),
            case=trace.case,
        )
    if over.kind != "request_too_large":
        raise fail(
            ("BUD-3",),
            "a request over 128 failed with the wrong kind",
            expected="request_too_large",
            observed=str(over),
            case=trace.case,
        )


async def _call_last_discovered(r: Run, trace: Trace) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    discovered = [q for step in trace.steps for q in step.activated if q in trace.catalog]
    if not discovered:
        return None
    q = discovered[-1]
    arguments = example_arguments(trace.catalog[q][1])
    return q, arguments, await r.call(q, arguments)


@clause("GATE-3", "CAT-4")
@examples(6)
@_sequence
def test_a_discovered_tool_executes_with_its_arguments(
    sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: Steps
) -> None:
    trace = explored(sut, fleets, fleet, base_count, steps, then=_call_last_discovered)
    if trace.after is None:  # nothing was discovered: nothing to execute
        return
    q, arguments, result = trace.after
    sid, tool = trace.catalog[q]
    calls = [c for c in trace.calls_after if c.get("server") == sid and c.get("name") == tool["name"]]
    if result["isError"] or not calls:
        raise fail(
            ("GATE-3",),
            "a tool activated by discovery did not execute",
            observed={"result": result, "ledger": portable(calls)},
            case=trace.case,
        )
    if calls[-1].get("arguments") != arguments:
        raise fail(
            ("CAT-4",),
            "the server got other arguments than the call carried",
            expected=arguments,
            observed=calls[-1].get("arguments"),
            case=trace.case,
        )


# Explicit cases -----------------------------------------------------------------------------


def _servers(*specs: tuple[int, dict[str, Any]]) -> tuple[FleetSpec, dict[str, dict[str, Any]]]:
    """Servers ``s0``, ``s1``… of ``(tool_count, policy)``."""
    fleet = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, (n, _) in enumerate(specs)), seed=11)
    return fleet, {f"s{i}": dict(p) for i, (_, p) in enumerate(specs)}


def _saturate(
    sut: Sut, fleets: Any, fleet: tuple[FleetSpec, dict[str, dict[str, Any]]], base_count: int, rounds: int
) -> Trace:
    """Discovery calls, each naming one auto server (a relevance signal for every tool of
    it) scoped to that server with limit 12, ``rounds`` times over the auto servers."""
    spec, policies = fleet
    auto = [s.id for s in spec.servers if policies.get(s.id, {}).get("mode", "auto") == "auto"]
    # The query words of explore() start with the sorted server ids, and its scope picks
    # from the auto servers in fleet order: the cases keep both orders the same.
    ids = sorted(s.id for s in spec.servers)
    steps: Steps = [(ids.index(sid), 12, True) for _ in range(rounds) for sid in auto]
    trace = explore(sut, fleets, spec, policies, base_count, steps)
    assert trace is not None, "an explicit case must open with the discovery tool"
    assert all(step.scope == [step.arguments["query"]] for step in trace.steps), "a case names servers out of order"
    return trace


WATERMARK_CASES = {
    # base 90: first round 5 MCP tools, dynamic capacity 21 -> 112 after 12 + 4 more.
    "one-server-base-90": (_servers((40, {"maxActiveTools": 40})), 90, 3),
    # no base tools: first round 48, dynamic capacity 111 -> 63 more through discovery.
    "four-servers-no-base": (_servers(*[(40, {"maxActiveTools": 40})] * 4), 0, 3),
    # a non-auto server's required tools count too.
    "with-required-tools": (_servers((40, {"maxActiveTools": 40}), (20, {"mode": "all"})), 60, 4),
}


@clause("BUD-2")
@pytest.mark.parametrize("name", sorted(WATERMARK_CASES))
def test_discovery_up_to_the_dynamic_watermark(sut: Sut, fleets: Any, name: str) -> None:
    fleet, base_count, rounds = WATERMARK_CASES[name]
    trace = _saturate(sut, fleets, fleet, base_count, rounds)
    for step in trace.steps:
        if len(step.definitions) > DYNAMIC:
            raise fail(
                ("BUD-2",),
                "discovery grew the definitions past the dynamic watermark",
                expected=f"<= {DYNAMIC} (dynamic MCP capacity {trace.model.dynamic_capacity})",
                observed={"definitions": len(step.definitions), "discovery call": step.arguments},
                case=trace.case,
            )


_FIRST_OF_S0_30 = generate_tools(ServerSpec(id="s0", tool_count=30))[0]["name"]
MAX_ACTIVE_CASES = {
    # first round takes 12 of 30; discovery may add 2 more, no further.
    "room-of-two": (_servers((30, {"maxActiveTools": 14})), 0, 2),
    # the first round already reaches maxActiveTools 3; discovery may add none.
    "full-after-first-round": (_servers((20, {"maxActiveTools": 3}), (20, {})), 0, 2),
    # maxActiveTools 0: the server never has an active tool.
    "zero": (_servers((10, {"maxActiveTools": 0}), (10, {})), 0, 2),
    # a pinned tool counts against maxActiveTools.
    "pinned-counts": (_servers((30, {"maxActiveTools": 13, "pinnedTools": [_FIRST_OF_S0_30]})), 0, 2),
}


@clause("SEL-3")
@pytest.mark.parametrize("name", sorted(MAX_ACTIVE_CASES))
def test_discovery_stops_at_max_active_tools(sut: Sut, fleets: Any, name: str) -> None:
    fleet, base_count, rounds = MAX_ACTIVE_CASES[name]
    trace = _saturate(sut, fleets, fleet, base_count, rounds)
    _check_max_active(trace)


# What the description of the discovery tool should say (DSC-3), each as words any of
# which will do: when to call it, and that its tools come on the next turn.
WHEN_TO_CALL = ("not enough", "need", "missing", "lack", "do not have", "don't have", "cannot", "can't", "more tools")
NEXT_TURN = ("next",)
TURN = ("turn", "call", "request", "step", "message", "response")


@clause("DSC-3")
def test_discovery_description_says_when_to_call_it_and_when_tools_arrive(sut: Sut, fleets: Any) -> None:
    spec, policies = _servers((20, {}))
    with fleets.serve(spec, policies) as served:

        async def body() -> list[dict[str, Any]]:
            async with sut.open(open_params(served.servers)) as r:
                return await r.definitions()

        defs = run(body())
    found = [d for d in defs if d["name"] == DISCOVERY]
    if not found:
        raise fail(("DSC-1",), "the discovery tool is missing with an auto server", observed=names(defs))
    text = " ".join(str(found[0].get("description", "")).casefold().split())
    said = {
        "when to call it": any(w in text for w in WHEN_TO_CALL),
        "activated tools appear on the next turn": any(w in text for w in NEXT_TURN) and any(w in text for w in TURN),
    }
    if not all(said.values()):
        raise fail(
            ("DSC-3",),
            "the discovery tool's description does not tell the agent "
            + " and ".join(k for k, v in said.items() if not v),
            expected="call it when the current tools are not enough; activated tools appear on the next turn",
            observed=found[0].get("description"),
        )
