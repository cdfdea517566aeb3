"""Budgets (BUD-*): 96 definitions in the first request, 112 at most as discovery grows the
run, the final check against 128 before every request, and first-round capacities at and
below zero."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance import OutcomeError, Run, Sut, clause
from conformance._wire_types import Definition, ToolPolicy
from conformance.suite._explore import BASES as DISCOVERY_BASES
from conformance.suite._explore import FLEETS as DISCOVERY_FLEETS
from conformance.suite._explore import STEPS, Steps, Trace, explore, saturating_steps
from conformance.suite._first_round import open_first_round, with_examples
from conformance.suite._fleets import Fleets, expect_nothing_left, tools_of
from conformance.suite._named import ask_for, plain_server
from conformance.suite._preconditions import (
    activations_kept,
    discovery_passes_twelve,
    distinct_definitions,
    first_round_capacity_kept,
    nothing_to_check,
    precondition,
)
from conformance.suite._predictions import DYNAMIC, FIRST_ROUND, MAX_LIMIT, REQUEST, first_round
from conformance.suite._strategies import FleetAndPolicies, examples, fleets_with_policies, opening
from conformance.suite._wire import base_tools, fail, names, open_params, qualified, refusal_or, run
from mock_servers import FleetSpec, ServerSpec

FLEETS = fleets_with_policies(max_servers=3, max_tools=30)
BASES = st.integers(0, 8) | st.integers(60, 97)


def _servers(*specs: tuple[int, ToolPolicy]) -> FleetAndPolicies:
    """Servers ``s0``, ``s1``… of ``(tool_count, policy)``."""
    fleet = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, (n, _) in enumerate(specs)), seed=11)
    return fleet, {f"s{i}": p.copy() for i, (_, p) in enumerate(specs)}


# First rounds that fill the 96 definitions exactly, or leave them one short: one more shows.
FULL_FIRST_ROUNDS: list[tuple[FleetAndPolicies, int]] = [
    (_servers((20, {})), 90),  # capacity 5 of 20 eligible tools
    (_servers((20, {}), (20, {}), (20, {})), 60),  # capacity 35 of 36 first-round places
    (_servers((30, {}), (30, {}), (30, {}), (30, {}), (30, {})), 47),  # capacity 48 of 60 places
    (_servers((3, {}), (40, {})), 94),  # capacity 1
    (_servers((3, {}), (40, {})), 95),  # capacity 0
    (_servers((40, {"mode": "all", "maxActiveTools": 40})), 56),  # no discovery tool: 56 + 40 = 96
    (_servers((40, {"mode": "all", "maxActiveTools": 40})), 55),  # one short: 95
    (_servers((10, {}), (40, {"mode": "all", "maxActiveTools": 40})), 45),  # 40 required, 10 ranked: 96
    # The same, with more ranked tools than the places the required ones leave: 10 of 30.
    (_servers((30, {}), (40, {"mode": "all", "maxActiveTools": 40})), 45),
]


@clause("BUD-1.1", "BUD-1.2")
@examples(12)
@given(FLEETS, BASES)
@with_examples(FULL_FIRST_ROUNDS)
def test_the_first_request_carries_at_most_96_definitions(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int
) -> None:
    fleet, base_count = opening(fleet, base_count)
    opened = open_first_round(sut, fleets, fleet, base_count)
    defs = opened.definitions(("BUD-1.2",))
    distinct_definitions(defs)
    mcp = len(defs) - base_count - int(opened.model.discovery)
    over_capacity = mcp > opened.model.capacity
    if len(defs) > FIRST_ROUND or over_capacity:
        raise fail(
            (("BUD-1.1",) if len(defs) > FIRST_ROUND else ()) + (("BUD-1.2",) if over_capacity else ()),
            "the first request carries too many definitions",
            expected=f"<= {FIRST_ROUND}, of which MCP tools <= {opened.model.capacity} "
            f"(96 - {base_count} base tools - {int(opened.model.discovery)} discovery tool)",
            observed={"definitions": len(defs), "mcp": mcp},
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
    fleet, base_count = opening(fleet, base_count, discovery=True)
    _check_watermark(explore(sut, fleets, fleet, base_count, steps), "BUD-2.1")


WATERMARK_CASES: dict[str, tuple[FleetAndPolicies, int, int]] = {
    # base 90: first round 5 MCP tools, dynamic capacity 21 -> 112 after 12 + 4 more.
    "one-server-base-90": (_servers((40, {"maxActiveTools": 40})), 90, 3),
    # no base tools: first round 48, dynamic capacity 111 -> 63 more through discovery.
    "four-servers-no-base": (_servers(*[(40, ToolPolicy(maxActiveTools=40))] * 4), 0, 3),
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
        _named_call_fills_a_small_room(sut, fleets)
        # The servers go past 12 active tools on the way (SEL-1.3's to allow), and keep
        # what earlier calls activated (DEF-3.1).
        discovery_passes_twelve(sut, fleets)
        activations_kept(sut, fleets)
        raise fail(
            ("BUD-2.2",),
            "discovery stopped short of the dynamic watermark although candidates were left",
            expected=DYNAMIC,
            observed=final,
            case=trace.case,
        )


# Base tools 95 and the discovery tool leave a first-round capacity of 0 and a dynamic
# capacity of 16: the 12 tools of f0 and the 4 of f1, asked for by name (which any ranker
# activates, DSC-5.8), fill it exactly; the tools of f2 then find no room.
FILL_BASE = 95
FILL_FLEET = FleetSpec(servers=(plain_server("f0", 12), plain_server("f1", 4), plain_server("f2", 3)))


@clause("BUD-2.2", "BUD-2.1")
def test_discovery_fills_the_dynamic_capacity_and_goes_no_further(sut: Sut, fleets: Fleets) -> None:
    fill = [qualified(s.id, t.name) for s in FILL_FLEET.servers[:2] for t in s.tools]
    past = [qualified("f2", t.name) for t in FILL_FLEET.servers[2].tools]
    with fleets.serve(FILL_FLEET) as served:
        case = served.describe() | {"baseTools": FILL_BASE}

        async def body() -> tuple[int, list[int]]:
            async with sut.open(open_params(served.servers, base_tools(FILL_BASE))) as r:
                await ask_for(r, fill)
                full = len(await r.definitions())
                counts = [len(call.after) for call in await ask_for(r, past)]
                case["steps"] = r.case["steps"]
                return full, counts

        full, counts = run(body())
    if any(count > DYNAMIC for count in [full, *counts]):
        raise fail(
            ("BUD-2.1",),
            "discovery grew the definitions past 112",
            expected=f"<= {DYNAMIC}",
            observed=[full, *counts],
            case=case,
        )
    if full != DYNAMIC:
        _named_call_fills_a_small_room(sut, fleets)
        activations_kept(sut, fleets)
        raise fail(
            ("BUD-2.2",),
            "discovery stopped short of the dynamic capacity although each remaining tool was asked for by name",
            expected=DYNAMIC,
            observed=full,
            case=case,
        )


def _named_call_fills_a_small_room(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a call naming one tool activates it though the room left is below the
    call's limit (DSC-5.8): the checks above reach the watermark with calls whose limit
    passes the last few places, and a host that activates nothing then stops short of the
    watermark with its capacity right. Four places are left (a capacity one short still
    has three), and the call's limit is 12."""
    fill = [qualified("f0", t.name) for t in FILL_FLEET.servers[0].tools]
    target = qualified("f2", FILL_FLEET.servers[2].tools[0].name)
    with fleets.serve(FILL_FLEET) as served:

        async def body() -> bool:
            async with sut.open(open_params(served.servers, base_tools(FILL_BASE))) as r:
                await ask_for(r, fill, limit=1)
                calls = await ask_for(r, [target])
                return not calls or target in names(calls[0].after)

        activated = run(body())
    precondition(
        "DSC-5.8",
        activated,
        f"a call naming {target} with limit {MAX_LIMIT}, with room for four more tools, did not activate it",
    )


_T = TypeVar("_T")


async def _outcome(call: Awaitable[_T]) -> _T | OutcomeError:
    try:
        return await call
    except OutcomeError as exc:
        return exc


@dataclass
class _Requests:
    """What the run answered: a request of exactly 128 definitions, one of 129, then the
    definitions and the request of 128 again."""

    run_definitions: int
    exact: list[Definition] | OutcomeError
    over: list[Definition] | OutcomeError
    after: list[Definition] | OutcomeError
    again: list[Definition] | OutcomeError


async def _fill_request(r: Run, trace: Trace) -> _Requests:
    own = len(await r.definitions())
    room = REQUEST - own
    exact = await _outcome(r.request(base_tools(room, "extra")))
    over = await _outcome(r.request(base_tools(room + 1, "extra")))
    after = await _outcome(r.definitions())
    again = await _outcome(r.request(base_tools(room, "extra")))
    if _closed(after) and _closed(again):
        r.closed_by_sut()  # the other reading of BUD-3.4 (ID-16): the refusal closed the run
    return _Requests(own, exact, over, after, again)


def _closed(answer: list[Definition] | OutcomeError) -> bool:
    return isinstance(answer, OutcomeError) and answer.kind == "unknown_run"


def _shown(answer: list[Definition] | OutcomeError) -> object:
    return str(answer) if isinstance(answer, OutcomeError) else len(answer)


@clause("BUD-3.1", "BUD-3.2", "BUD-3.3", "BUD-3.4")
@examples(6)
@given(DISCOVERY_FLEETS, DISCOVERY_BASES, STEPS)
@example(fleet=_servers((40, {"maxActiveTools": 40})), base_count=0, steps=[(0, 12, True), (0, 12, True)])
@example(fleet=_servers((40, {"maxActiveTools": 40}), (30, {})), base_count=90, steps=[(0, None, False)])
def test_every_request_is_checked_against_128(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    fleet, base_count = opening(fleet, base_count, discovery=True)
    trace = explore(sut, fleets, fleet, base_count, steps, then=_fill_request)
    got: _Requests = trace.after
    grown = got.run_definitions - len(trace.start)
    if isinstance(got.exact, OutcomeError) or len(got.exact) != REQUEST:
        raise fail(
            ("BUD-3.3",),
            "a request of exactly 128 definitions was refused or altered",
            expected=REQUEST,
            observed=_shown(got.exact),
            case=trace.case,
        )
    if not isinstance(got.over, OutcomeError):
        raise fail(
            ("BUD-3.1", "BUD-3.2"),
            f"a request of 129 definitions ({got.run_definitions} of the run, {grown} of them added by "
            f"discovery, and {REQUEST + 1 - got.run_definitions} added by the host) was not refused",
            expected="request_too_large",
            observed=len(got.over),
            case=trace.case,
        )
    if got.over.kind != "request_too_large":
        raise fail(
            ("BUD-3.2",),
            "a request over 128 failed with the wrong kind",
            expected="request_too_large",
            observed=str(got.over),
            case=trace.case,
        )
    last = trace.steps[-1].definitions
    unchanged = got.after == last and not isinstance(got.again, OutcomeError) and len(got.again) == REQUEST
    if not unchanged and not (_closed(got.after) and _closed(got.again)):
        raise fail(
            ("BUD-3.4",),
            "the run was neither left open and unchanged nor closed after a refused request",
            expected={"definitions": len(last), "request of 128": REQUEST, "or": "unknown_run for both (ID-16)"},
            observed={"definitions": _shown(got.after), "request of 128": _shown(got.again)},
            case=trace.case,
        )


@clause("BUD-3.4")
def test_a_run_closed_by_a_refused_request_leaves_no_server_process(sut: Sut, fleets: Fleets) -> None:
    """ID-16's other reading: a refusal may close the run, and then closes it as ``run.close``
    does (ERR-7): its stdio servers end and its sessions close. A run left open is the
    property above's to check."""
    spec = FleetSpec(servers=(ServerSpec(id="a", tool_count=3), ServerSpec(id="b", tool_count=4)), seed=5)
    with fleets.serve(spec, transport="stdio") as served:

        async def body() -> bool:
            async with sut.open(open_params(served.servers)) as r:
                own = len(await r.definitions())
                over = await _outcome(r.request(base_tools(REQUEST - own + 1, "extra")))
                closed = isinstance(over, OutcomeError) and _closed(await _outcome(r.definitions()))
                if closed:
                    r.closed_by_sut()
                return closed

        if not run(body()):
            nothing_to_check("the refused request left the run open (ID-16)")
        expect_nothing_left("BUD-3.4", "a run closed by a refused request", served)


# (servers, base tools, must open): capacities -2, -1, 0 and 1, with and without servers,
# and 0 with a required tool, which the capacity cannot hold (ERR-2.1's: BUD-4.3 allows zero
# only when nothing is required).
CAPACITY_CASES: dict[str, tuple[FleetAndPolicies, int, bool, str]] = {
    "minus-two-auto": (_servers((5, {})), 97, False, "BUD-4.1"),
    "minus-one-auto": (_servers((5, {})), 96, False, "BUD-4.1"),
    "minus-one-non-auto": (_servers((5, {"mode": "allowlist"})), 97, False, "BUD-4.1"),
    "minus-one-no-server": ((FleetSpec(servers=()), {}), 97, False, "BUD-4.2"),
    "zero-no-server": ((FleetSpec(servers=()), {}), 96, True, "BUD-4.3"),
    "zero-auto": (_servers((5, {})), 95, True, "BUD-4.3"),
    "zero-non-auto-nothing-required": (_servers((5, {"mode": "allowlist"})), 96, True, "BUD-4.3"),
    "zero-with-a-required-tool": (_servers((1, {"mode": "all"})), 96, False, "ERR-2.1"),
    "one-auto": (_servers((5, {})), 94, True, "BUD-4.1"),
}


@clause("BUD-4.1", "BUD-4.2", "BUD-4.3", "ERR-2.1")
@pytest.mark.parametrize("name", sorted(CAPACITY_CASES))
def test_a_negative_first_round_capacity_is_a_selection_error_and_zero_is_allowed(
    sut: Sut, fleets: Fleets, name: str
) -> None:
    (spec, policies), base_count, must_open, sentence = CAPACITY_CASES[name]
    model = first_round(tools_of(spec), policies, base_count)
    required = sum(len(m.required) for m in model.servers.values())
    if not spec.servers:
        case: dict[str, Any] = {"servers": [], "baseTools": base_count}
        got = run(refusal_or(sut, open_params([], base_tools(base_count))))
    else:
        with fleets.serve(spec, policies) as served:
            case = served.describe() | {"baseTools": base_count}
            got = run(refusal_or(sut, open_params(served.servers, base_tools(base_count))))
    what = f"a first-round capacity of {model.capacity} with {required} required tools"
    if must_open and isinstance(got, OutcomeError):
        raise fail((sentence,), f"{what} was refused", observed=str(got), case=case)
    if not must_open and not (isinstance(got, OutcomeError) and got.kind == "selection_error"):
        first_round_capacity_kept(sut, fleets)
        raise fail(
            (sentence,),
            f"{what} did not fail the run with a selection error",
            expected="selection_error",
            observed=str(got) if isinstance(got, OutcomeError) else names(got),
            case=case,
        )
