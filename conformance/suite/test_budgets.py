"""Budgets (BUD-*): 96 definitions in the first request, 112 at most as discovery grows the
run, the final check against 128 before every request, and first-round capacities at and
below zero."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance import OutcomeError, Run, Sut, clause
from conformance.suite._explore import BASES as DISCOVERY_BASES
from conformance.suite._explore import FLEETS as DISCOVERY_FLEETS
from conformance.suite._explore import STEPS, Steps, Trace, explore, plan, saturating_steps
from conformance.suite._first_round import open_first_round, with_examples
from conformance.suite._fleets import Fleets
from conformance.suite._oracle import DYNAMIC, FIRST_ROUND, REQUEST
from conformance.suite._strategies import FleetAndPolicies, examples, fleets_with_policies
from conformance.suite._wire import base_tools, fail, names, open_params, refusal_or, run
from mock_servers import FleetSpec, ServerSpec

FLEETS = fleets_with_policies(max_servers=3, max_tools=30)
BASES = st.integers(0, 8) | st.integers(60, 97)


def _servers(*specs: tuple[int, dict[str, Any]]) -> FleetAndPolicies:
    """Servers ``s0``, ``s1``… of ``(tool_count, policy)``."""
    fleet = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, (n, _) in enumerate(specs)), seed=11)
    return fleet, {f"s{i}": dict(p) for i, (_, p) in enumerate(specs)}


# First rounds that fill the 96 definitions exactly, or leave them one short: one more shows.
FULL_FIRST_ROUNDS: list[tuple[FleetAndPolicies, int]] = [
    (_servers((20, {})), 90),  # capacity 5 of 20 eligible tools
    (_servers((20, {}), (20, {}), (20, {})), 60),  # capacity 35 of 36 first-round places
    (_servers((30, {}), (30, {}), (30, {}), (30, {}), (30, {})), 47),  # capacity 48 of 60 places
    (_servers((3, {}), (40, {})), 94),  # capacity 1
    (_servers((3, {}), (40, {})), 95),  # capacity 0
    (_servers((40, {"mode": "all", "maxActiveTools": 40})), 56),  # no discovery tool: 56 + 40 = 96
]


@clause("BUD-1.1", "BUD-1.2")
@examples(12)
@given(FLEETS, BASES)
@with_examples(FULL_FIRST_ROUNDS)
def test_the_first_request_carries_at_most_96_definitions(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    opened = open_first_round(sut, fleets, fleet, base_count)
    defs = opened.definitions(("BUD-1.1",))
    if len(defs) > FIRST_ROUND:
        raise fail(
            ("BUD-1.1",),
            "the first request carries too many definitions",
            expected=f"<= {FIRST_ROUND}",
            observed=len(defs),
            case=opened.case,
        )
    mcp = len(defs) - base_count - int(opened.model.discovery)
    if mcp > opened.model.capacity:
        raise fail(
            ("BUD-1.2",),
            "the first round took more MCP tools than its capacity",
            expected=f"<= {opened.model.capacity} (96 - {base_count} base tools - discovery tool)",
            observed=mcp,
            case=opened.case,
        )


def _check_watermark(trace: Trace, sentence: str) -> None:
    for step in trace.steps:
        if len(step.definitions) > DYNAMIC:
            raise fail(
                (sentence,),
                "discovery grew the definitions past the dynamic watermark",
                expected=f"<= {DYNAMIC} (dynamic MCP capacity {trace.model.dynamic_capacity})",
                observed={"definitions": len(step.definitions), "discovery call": step.arguments},
                case=trace.case,
            )


@clause("BUD-2.1")
@examples(8)
@given(DISCOVERY_FLEETS, DISCOVERY_BASES, STEPS)
def test_definitions_never_grow_past_112(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    _check_watermark(explore(sut, fleets, fleet, base_count, steps), "BUD-2.1")


WATERMARK_CASES: dict[str, tuple[FleetAndPolicies, int, int]] = {
    # base 90: first round 5 MCP tools, dynamic capacity 21 -> 112 after 12 + 4 more.
    "one-server-base-90": (_servers((40, {"maxActiveTools": 40})), 90, 3),
    # no base tools: first round 48, dynamic capacity 111 -> 63 more through discovery.
    "four-servers-no-base": (_servers(*[(40, {"maxActiveTools": 40})] * 4), 0, 3),
    # a non-auto server's required tools count too.
    "with-required-tools": (_servers((40, {"maxActiveTools": 40}), (20, {"mode": "all"})), 60, 4),
}


@clause("BUD-2.1", "BUD-2.2")
@pytest.mark.parametrize("name", sorted(WATERMARK_CASES))
def test_discovery_stops_at_the_dynamic_watermark(sut: Sut, fleets: Fleets, name: str) -> None:
    fleet, base_count, rounds = WATERMARK_CASES[name]
    trace = explore(sut, fleets, fleet, base_count, saturating_steps(*fleet, rounds))
    _check_watermark(trace, "BUD-2.2")


@clause("BUD-2.2", "DSC-10.2")
@pytest.mark.parametrize("name", sorted(WATERMARK_CASES))
def test_lexical_discovery_fills_exactly_up_to_the_dynamic_watermark(sut: Sut, fleets: Fleets, name: str) -> None:
    """Every tool of a server named in the query is a lexical candidate (DSC-10.2), so
    saturating calls reach the watermark exactly: one tool short shows."""
    fleet, base_count, rounds = WATERMARK_CASES[name]
    trace = explore(sut, fleets, fleet, base_count, saturating_steps(*fleet, rounds))
    final = len(trace.steps[-1].definitions)
    if final != DYNAMIC:
        raise fail(
            ("BUD-2.2",),
            "discovery stopped short of the dynamic watermark although candidates were left",
            expected=DYNAMIC,
            observed=final,
            case=trace.case,
        )


async def _fill_request(r: Run, trace: Trace) -> tuple[int, list[dict[str, Any]] | OutcomeError, int]:
    """A request of exactly 128 definitions, then one of 129, then the definitions again."""
    room = REQUEST - len(await r.definitions())
    exact = len(await r.request(base_tools(room, "extra")))
    try:
        over: list[dict[str, Any]] | OutcomeError = await r.request(base_tools(room + 1, "extra"))
    except OutcomeError as exc:
        over = exc
    return exact, over, len(await r.definitions())


@clause("BUD-3.1", "BUD-3.2", "BUD-3.3", "BUD-3.4")
@examples(6)
@given(DISCOVERY_FLEETS, DISCOVERY_BASES, STEPS)
def test_every_request_is_checked_against_128(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    trace = explore(sut, fleets, fleet, base_count, steps, then=_fill_request)
    exact, over, after = trace.after
    if exact != REQUEST:
        raise fail(
            ("BUD-3.3",),
            "a request of exactly 128 definitions was refused or altered",
            expected=REQUEST,
            observed=exact,
            case=trace.case,
        )
    if not isinstance(over, OutcomeError):
        raise fail(
            ("BUD-3.2",),
            "a request over 128 definitions was not refused",
            expected="request_too_large",
            observed=len(over),
            case=trace.case,
        )
    if over.kind != "request_too_large":
        raise fail(
            ("BUD-3.2",),
            "a request over 128 failed with the wrong kind",
            expected="request_too_large",
            observed=str(over),
            case=trace.case,
        )
    if after != len(trace.steps[-1].definitions):
        raise fail(
            ("BUD-3.4",),
            "the run changed after a refused request",
            expected=len(trace.steps[-1].definitions),
            observed=after,
            case=trace.case,
        )


# (servers, base tools, must open): capacity -1 with and without servers, 0 with nothing required.
CAPACITY_CASES: dict[str, tuple[FleetAndPolicies, int, bool, str]] = {
    "minus-one-auto": (_servers((5, {})), 96, False, "BUD-4.1"),
    "minus-one-no-server": ((FleetSpec(servers=()), {}), 97, False, "BUD-4.2"),
    "zero-no-server": ((FleetSpec(servers=()), {}), 96, True, "BUD-4.3"),
    "zero-auto": (_servers((5, {})), 95, True, "BUD-4.3"),
    "zero-non-auto-nothing-required": (_servers((5, {"mode": "allowlist"})), 96, True, "BUD-4.3"),
}


@clause("BUD-4.1", "BUD-4.2", "BUD-4.3")
@pytest.mark.parametrize("name", sorted(CAPACITY_CASES))
def test_a_negative_first_round_capacity_is_a_selection_error_and_zero_is_allowed(
    sut: Sut, fleets: Fleets, name: str
) -> None:
    (spec, policies), base_count, must_open, sentence = CAPACITY_CASES[name]
    if not spec.servers:
        case: dict[str, Any] = {"servers": [], "baseTools": base_count}
        got = run(refusal_or(sut, open_params([], base_tools(base_count))))
    else:
        with fleets.serve(spec, policies) as served:
            case = served.describe() | {"baseTools": base_count}
            got = run(refusal_or(sut, open_params(served.servers, base_tools(base_count))))
    if must_open and isinstance(got, OutcomeError):
        raise fail((sentence,), "a first-round capacity of zero was refused", observed=str(got), case=case)
    if not must_open and not (isinstance(got, OutcomeError) and got.kind == "selection_error"):
        raise fail(
            (sentence,),
            "a first-round capacity below zero did not fail the run with a selection error",
            expected="selection_error",
            observed=str(got) if isinstance(got, OutcomeError) else names(got),
            case=case,
        )
