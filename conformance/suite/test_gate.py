"""The execution gate (GATE-*): refusals of names that are not active, what a refusal says,
discovered tools executing, and failed tool calls coming back as results."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import assume, given

from conformance import Run, Sut, clause
from conformance.suite._explore import BASES, FLEETS, STEPS, Steps, Trace, explore, plan
from conformance.suite._fleets import Fleets
from conformance.suite._strategies import FleetAndPolicies, examples
from conformance.suite._wire import (
    DISCOVERY,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    portable,
    result_text,
    run,
)
from mock_servers import Faults, FleetSpec, ServerSpec, example_arguments
from mock_servers.strategies import fleet_specs


@clause("GATE-1.1", "GATE-1.2")
@examples(10)
@given(fleet_specs(min_servers=1, max_servers=3, min_tools=14, max_tools=30))
def test_gate_refuses_every_name_that_is_not_active(sut: Sut, fleets: Fleets, spec: FleetSpec) -> None:
    with fleets.serve(spec) as served:
        cat = catalog(served.tools)
        case = served.describe()

        async def body() -> None:
            async with sut.open(open_params(served.servers)) as r:
                active = names(mcp_definitions(await r.definitions(), []))
                inactive = sorted(set(cat) - set(active))
                sample = active[0]
                sid, tool = cat[sample]
                other = next((s.id for s in spec.servers if s.id != sid), None)
                bad = [
                    *inactive[:3],
                    f"{sid}__no_such_tool",
                    sample.upper(),
                    sample[0].swapcase() + sample[1:],
                    tool["name"],
                    f"{sid}__",
                    sid,
                    *([f"{other}__{tool['name']}"] if other else []),
                ]
                bad = [n for n in dict.fromkeys(bad) if n not in active]
                for name in bad:
                    result = await r.call(name, example_arguments(tool))
                    if not result["isError"]:
                        raise fail(
                            ("GATE-1.1",),
                            f"a call to the inactive name {name!r} was not refused",
                            expected="isError: true",
                            observed=result,
                            case=case | {"active": active},
                        )
                called = served.ledger().calls()
                if called:
                    raise fail(
                        ("GATE-1.2",),
                        "the server's tools/call ran for a refused name",
                        expected=[],
                        observed=called,
                        case=case | {"refused": bad},
                    )

        run(body())


@clause("GATE-4.1", "GATE-4.2", "GATE-4.3")
@pytest.mark.parametrize("fault", ["tool_call_error", "drop_mid_call"])
def test_failed_tool_call_is_an_error_result_and_the_run_goes_on(sut: Sut, fleets: Fleets, fault: str) -> None:
    spec = FleetSpec(
        servers=(
            ServerSpec(id="bad", tool_count=3, faults=Faults(**cast(dict[str, Any], {fault: ("*",)}))),
            ServerSpec(id="good", tool_count=3),
        ),
        seed=1,
    )
    policies = {"bad": {"mode": "all"}, "good": {"mode": "all"}}
    with fleets.serve(spec, policies) as served:
        case = served.describe()

        async def body() -> None:
            async with sut.open(open_params(served.servers)) as r:
                bad_tool = served.tools["bad"][0]
                result = await r.call(f"bad__{bad_tool['name']}", example_arguments(bad_tool))
                if not result["isError"] or not result["content"]:
                    raise fail(
                        ("GATE-4.2",),
                        f"a {fault} did not come back as an error result with a message",
                        observed=result,
                        case=case,
                    )
                good_tool = served.tools["good"][0]
                after = await r.call(f"good__{good_tool['name']}", example_arguments(good_tool))
                if after["isError"]:
                    raise fail(
                        ("GATE-4.3",), "the run was not usable after a failed tool call", observed=after, case=case
                    )

        run(body())


@clause("GATE-2.1")
def test_refusing_an_inactive_tool_points_to_discovery(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=30),), seed=6)
    with fleets.serve(spec) as served:
        case = served.describe()
        cat = catalog(served.tools)

        async def body() -> tuple[str, dict[str, Any]]:
            async with sut.open(open_params(served.servers)) as r:
                active = names(await r.definitions())
                left_out = sorted(set(cat) - set(active))
                if not left_out:
                    # Everything is active (SEL-1 judges that): refuse a name no server offers.
                    return "s0__no_such_tool", await r.call("s0__no_such_tool", {})
                inactive = left_out[0]
                return inactive, await r.call(inactive, example_arguments(cat[inactive][1]))

        inactive, result = run(body())
    if result["isError"] and DISCOVERY not in result_text(result):
        raise fail(
            ("GATE-2.1",),
            "the refusal of an inactive tool does not tell the agent to use the discovery tool",
            expected=f"a message mentioning {DISCOVERY}",
            observed={"tool": inactive, "result": result},
            case=case,
        )


async def _call_last_discovered(r: Run, trace: Trace) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    discovered = [q for step in trace.steps for q in step.activated if q in trace.catalog]
    if not discovered:
        return None
    q = discovered[-1]
    arguments = example_arguments(trace.catalog[q][1])
    return q, arguments, await r.call(q, arguments)


@clause("GATE-3.1", "CAT-4.1", "CAT-4.2", "CAT-4.3")
@examples(6)
@given(FLEETS, BASES, STEPS)
def test_a_discovered_tool_executes_with_its_arguments(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    model = plan(fleet, base_count)
    assume(model.error is None and model.discovery)
    trace = explore(sut, fleets, fleet, base_count, steps, then=_call_last_discovered)
    assume(trace.after is not None)  # nothing was discovered: nothing to execute
    q, arguments, result = trace.after
    sid, tool = trace.catalog[q]
    calls = [c for c in trace.calls_after if c.get("name") == tool["name"]]
    elsewhere = [c for c in calls if c.get("server") != sid]
    if elsewhere:
        raise fail(
            ("CAT-4.1",), "the call reached another server", expected=sid, observed=portable(elsewhere), case=trace.case
        )
    if result["isError"] or not calls:
        raise fail(
            ("GATE-3.1",),
            "a tool activated by discovery did not execute",
            observed={"result": result, "ledger": portable(calls)},
            case=trace.case,
        )
    if calls[-1].get("arguments") != arguments:
        raise fail(
            ("CAT-4.3",),
            "the server got other arguments than the call carried",
            expected=arguments,
            observed=calls[-1].get("arguments"),
            case=trace.case,
        )
