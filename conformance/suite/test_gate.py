"""The execution gate (GATE-*): refusals of names that are not active, what a refusal says,
discovered tools executing, failed and timed-out tool calls coming back as results, and the
run going on after each of them."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, cast

import pytest
from hypothesis import example, given

from conformance import DriverSut, OutcomeError, Run, Sut, clause
from conformance._wire_types import ToolPolicy, ToolResult
from conformance.suite._explore import BASES, FLEETS, STEPS, Steps, Trace, explore
from conformance.suite._fleets import Fleet, Fleets
from conformance.suite._named import ask_for
from conformance.suite._preconditions import (
    activations_kept,
    nothing_to_check,
    original_names_sent,
    precondition,
    qualified_names_kept,
)
from conformance.suite._strategies import FleetAndPolicies, examples, opening
from conformance.suite._wire import (
    DISCOVERY,
    activated,
    base_tools,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    portable,
    result_text,
    run,
)
from mock_servers import Faults, FleetSpec, ServerSpec, example_arguments, generate_tools
from mock_servers.strategies import fleet_specs


def _has_message(result: ToolResult) -> bool:
    return bool(result_text(result).strip())


@clause("GATE-1.1", "GATE-1.2", "GATE-4.1", "GATE-4.3")
@examples(10)
@given(fleet_specs(min_servers=1, max_servers=3, min_tools=14, max_tools=30))
def test_gate_refuses_every_name_that_is_not_active(sut: Sut, fleets: Fleets, spec: FleetSpec) -> None:
    with fleets.serve(spec) as served:
        cat = catalog(served.tools)
        case = served.describe()

        async def body() -> None:
            async with sut.open(open_params(served.servers)) as r:
                active = names(mcp_definitions(await r.definitions(), []))
                qualified_names_kept(active, cat)
                inactive = sorted(set(cat) - set(active))
                sample = active[0]
                sid, tool = cat[sample]
                other = next((s.id for s in spec.servers if s.id != sid), None)
                bad = [
                    *inactive[:3],
                    f"{sid}__no_such_tool",
                    sample.upper(),
                    sample[0].swapcase() + sample[1:],
                    f" {sample}",
                    f"{sample} ",
                    tool["name"],
                    f"{sid}__",
                    sid,
                    *([f"{other}__{tool['name']}"] if other else []),
                ]
                bad = [n for n in dict.fromkeys(bad) if n not in active]
                for name in bad:
                    seen = len(served.ledger().calls())
                    result = await r.call(name, example_arguments(tool))
                    if not result["isError"] and not served.ledger().calls()[seen:]:
                        # Nothing reached a server: refused, but without the flag (GATE-4.1).
                        raise fail(
                            ("GATE-4.1",),
                            f"the refusal of {name!r} does not carry the error flag",
                            expected="isError: true",
                            observed=result,
                            case=case | {"active": active},
                        )
                    if not result["isError"]:
                        raise fail(
                            ("GATE-1.1",),
                            f"a call to the inactive name {name!r} was not refused",
                            expected="isError: true",
                            observed=result,
                            case=case | {"active": active},
                        )
                    if not _has_message(result):
                        raise fail(
                            ("GATE-4.1",),
                            f"the refusal of {name!r} carries no message",
                            expected="a text content block saying why",
                            observed=result,
                            case=case,
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
                after = await r.call(sample, example_arguments(tool))
                if after["isError"]:
                    original_names_sent(served.ledger().calls())
                    raise fail(
                        ("GATE-4.3",),
                        f"the active tool {sample!r} did not run after {len(bad)} refusals",
                        observed=after,
                        case=case | {"refused": bad},
                    )

        run(body())


# Each way a call can go wrong (GATE-4.1, GATE-4.2): a refusal by the gate, an error result
# from the server, a JSON-RPC error from the server, a connection dropped mid-call. The
# sentence each one breaks first.
FAILED_CALLS = {
    "refusal": "GATE-4.1",
    "tool_call_error": "GATE-4.2",
    "error_on_call": "GATE-4.2",
    "drop_mid_call": "GATE-4.2",
}


@clause("GATE-4.1", "GATE-4.2", "GATE-4.3")
@pytest.mark.parametrize("how", sorted(FAILED_CALLS))
def test_a_refused_or_failed_call_is_an_error_result_and_the_run_goes_on(sut: Sut, fleets: Fleets, how: str) -> None:
    """After the failure, a call to another server runs; so does a call to another tool of
    the same server, unless the failure was the connection to it being dropped."""
    bad = ServerSpec(id="bad", tool_count=3)
    failing = generate_tools(bad)[0]["name"]
    if how != "refusal":
        bad = dataclasses.replace(bad, faults=Faults(**cast(dict[str, Any], {how: (failing,)})))
    spec = FleetSpec(servers=(bad, ServerSpec(id="good", tool_count=3)), seed=1)
    policies: dict[str, ToolPolicy] = {"bad": {"mode": "all"}, "good": {"mode": "all"}}
    with fleets.serve(spec, policies) as served:
        case = served.describe() | {"call": how}

        async def body() -> None:
            async with sut.open(open_params(served.servers)) as r:
                bad_tool = next(t for t in served.tools["bad"] if t["name"] == failing)
                other_tool = next(t for t in served.tools["bad"] if t["name"] != failing)
                name = "bad__no_such_tool" if how == "refusal" else f"bad__{bad_tool['name']}"
                result = await r.call(name, example_arguments(bad_tool))
                if not result["isError"] or not _has_message(result):
                    raise fail(
                        (FAILED_CALLS[how],),
                        f"a {how} did not come back as an error result with a message",
                        expected="isError: true and a text saying what happened",
                        observed=result,
                        case=case,
                    )
                later = [("good", served.tools["good"][0])]
                if how != "drop_mid_call":
                    later.append(("bad", other_tool))
                for sid, tool in later:
                    before = _calls_elsewhere(served, sid, tool["name"])
                    after = await r.call(f"{sid}__{tool['name']}", example_arguments(tool))
                    if after["isError"]:
                        _not_sent_elsewhere(served, sid, tool["name"], before)
                        original_names_sent(served.ledger().calls())
                        raise fail(
                            ("GATE-4.3",),
                            f"the run was not usable after a {how}: a call to {sid}__{tool['name']} failed",
                            observed=after,
                            case=case,
                        )

        run(body())


@clause("GATE-2.1")
def test_refusing_an_inactive_tool_points_to_discovery(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=30),), seed=6)
    with fleets.serve(spec) as served:
        case = served.describe()
        cat = catalog(served.tools)

        async def body() -> tuple[str, ToolResult]:
            # Base tools beside: refusing a name that is none of them is still a refusal.
            async with sut.open(open_params(served.servers, base_tools(2))) as r:
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


@clause("GATE-2.2")
def test_without_the_discovery_tool_a_refusal_does_not_point_to_it(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=3),), seed=6)
    policies: dict[str, ToolPolicy] = {"s0": {"mode": "all"}}
    with fleets.serve(spec, policies) as served:
        case = served.describe()

        async def body() -> tuple[list[str], ToolResult]:
            async with sut.open(open_params(served.servers)) as r:
                return names(await r.definitions()), await r.call("s0__no_such_tool", {})

        defs, result = run(body())
    if DISCOVERY not in defs and DISCOVERY in result_text(result):
        raise fail(
            ("GATE-2.2",),
            "a refusal tells the agent to use a discovery tool the run does not have",
            expected=f"a message that does not mention {DISCOVERY}",
            observed=result,
            case=case,
        )


@dataclasses.dataclass
class _Executed:
    """The discovered tool a run called after its discovery steps, or why there was none."""

    #: A candidate asked for by name when the steps activated nothing, and whether DSC-5.8
    #: made its activation due.
    asked: str | None = None
    due: bool = False
    tool: str | None = None
    arguments: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The call's result; empty until the call is made.
    result: ToolResult = dataclasses.field(default_factory=lambda: cast(ToolResult, {}))


async def _call_a_discovered_tool(r: Run, trace: Trace) -> _Executed:
    """Call the last tool the steps activated. When they activated none, ask discovery for a
    candidate of the run by its qualified name, scoped to its server, and call that."""
    discovered = [q for step in trace.steps for q in step.activated if q in trace.catalog]
    done = _Executed()
    if not discovered:
        candidate = trace.candidate(trace.mcp(await r.definitions()))
        if candidate is None:
            return done
        done.asked, done.due = candidate
        [asked] = await ask_for(r, [done.asked])
        discovered = [q for q in activated(asked.result) if q in trace.catalog]
        if not discovered:
            return done
    done.tool = discovered[-1]
    done.arguments = example_arguments(trace.catalog[done.tool][1])
    done.result = await r.call(done.tool, done.arguments)
    return done


@clause("GATE-3.1", "CAT-4.1", "CAT-4.2", "CAT-4.3")
@examples(6)
@given(FLEETS, BASES, STEPS)
# A server of 20 tools leaves 8 candidates after the first round: naming one activates it.
@example(
    fleet=(FleetSpec(servers=(ServerSpec(id="s0", tool_count=20),)), {"s0": {}}), base_count=0, steps=[(0, 1, True)]
)
def test_a_discovered_tool_executes_with_its_arguments(
    sut: Sut, fleets: Fleets, fleet: FleetAndPolicies, base_count: int, steps: Steps
) -> None:
    fleet, base_count = opening(fleet, base_count, discovery=True)
    trace = explore(sut, fleets, fleet, base_count, steps, then=_call_a_discovered_tool)
    done: _Executed = trace.after
    if done.tool is None:
        if done.asked is None:
            nothing_to_check("every eligible tool was active or out of room: there was nothing to discover")
        precondition(
            "DSC-5.8",
            not done.due,
            f"discovery did not activate {done.asked}, asked for by its qualified name on a server of few candidates",
        )
        nothing_to_check(f"discovery activated nothing, not even {done.asked} asked for by name (DSC-5.6 allows it)")
    q, arguments, result = done.tool, done.arguments, done.result
    sid, tool = trace.catalog[q]
    calls = [c for c in trace.calls_after if c.get("name") == tool["name"]]
    elsewhere = [c for c in calls if c.get("server") != sid]
    if elsewhere:
        raise fail(
            ("CAT-4.1",), "the call reached another server", expected=sid, observed=portable(elsewhere), case=trace.case
        )
    if result["isError"] or not calls:
        original_names_sent(trace.calls_after)
        activations_kept(sut, fleets)
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


@clause("GATE-3.1")
def test_a_tool_discovery_activated_runs_on_the_very_next_call(sut: Sut, fleets: Fleets) -> None:
    # 16 tools, 12 of them in the first round (SEL-1): the other 4 are the only candidates,
    # and a query naming one of them, scoped to the server, activates it whatever the
    # ranker (DSC-5.8).
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=16),), seed=3)
    with fleets.serve(spec) as served:
        cat = catalog(served.tools)
        case = served.describe()

        async def body() -> tuple[str, ToolResult, ToolResult] | int:
            async with sut.open(open_params(served.servers)) as r:
                left_out = sorted(set(cat) - set(names(await r.definitions())))
                if not left_out or len(left_out) > 6:
                    return len(left_out)
                target = left_out[-1]
                found = await r.call(DISCOVERY, {"query": target, "server_ids": ["s0"], "limit": 6})
                arguments = example_arguments(cat[target][1])
                return target, found, await r.call(target, arguments)

        outcome = run(body())
    if isinstance(outcome, int):
        precondition("SEL-1.1", outcome > 0, "the first round left no tool of 16 out, past the cap of 12")
        precondition("SEL-2.1", False, f"the first round left {outcome} of 16 tools out, short of 12")
        return
    target, found, result = outcome
    precondition("DSC-5.8", target in activated(found), f"discovery did not activate {target}, asked for by name")
    called = [c for c in served.ledger().calls() if c.get("name") == cat[target][1]["name"]]
    if result["isError"] or not called:
        original_names_sent(served.ledger().calls())
        activations_kept(sut, fleets)
        raise fail(
            ("GATE-3.1",),
            "a tool discovery had just activated was refused or did not reach its server",
            expected="a successful call that reaches the server",
            observed={"discovery": found, "call": result, "ledger": portable(called)},
            case=case,
        )


# A server that takes SLOW_SERVER seconds over every call, called under a time-out of
# CALL_LIMIT: far enough apart that a loaded machine cannot blur them, and short enough to
# stay well inside any per-request time-out the suite applies.
SLOW_SERVER = 3.0
CALL_LIMIT = 1.0


def _per_request_limit(sut: Sut) -> float | None:
    adapter = sut.adapter
    return adapter.timeout if isinstance(adapter, DriverSut) else sut.timeout


@clause("GATE-4.4")
def test_a_call_over_the_call_time_out_is_an_error_result_and_the_run_goes_on(sut: Sut, fleets: Fleets) -> None:
    limit = _per_request_limit(sut)
    if limit is not None and limit < 3 * SLOW_SERVER:
        pytest.skip(f"not testable here: the per-request time-out ({limit:g} s) leaves no room for a slow server")
    spec = FleetSpec(
        servers=(
            ServerSpec(id="slow", tool_count=2, faults=Faults(slow_calls=SLOW_SERVER)),
            ServerSpec(id="quick", tool_count=2),
        ),
        seed=5,
    )
    policies: dict[str, ToolPolicy] = {"slow": {"mode": "all"}, "quick": {"mode": "all"}}
    with fleets.serve(spec, policies) as served:
        params = open_params(served.servers) | {"callTimeoutSeconds": CALL_LIMIT}
        case = {"open": params, **served.describe()}

        async def body() -> tuple[ToolResult, ToolResult]:
            async with sut.open(params) as r:
                late = await r.call(f"slow__{slow['name']}", example_arguments(slow))
                before.update(_calls_elsewhere(served, "quick", quick["name"]))
                return late, await r.call(f"quick__{quick['name']}", example_arguments(quick))

        slow, quick = served.tools["slow"][0], served.tools["quick"][0]
        before: dict[str, int] = {}
        try:
            late, after = run(body())
        except OutcomeError as exc:
            pytest.skip(f"not testable here: the run did not open ({exc})")
    if not late["isError"]:
        raise fail(
            ("GATE-4.4",),
            f"a call the server took {SLOW_SERVER:g} s to answer, under callTimeoutSeconds {CALL_LIMIT:g}, "
            "came back as a success",
            expected="isError: true",
            observed=late,
            case=case,
        )
    if after["isError"]:
        _not_sent_elsewhere(served, "quick", quick["name"], before)
        original_names_sent(served.ledger().calls())
        raise fail(
            ("GATE-4.4",), "after a call timed out, a quick call to another server failed", observed=after, case=case
        )


def _calls_elsewhere(served: Fleet, sid: str, tool: str) -> dict[str, int]:
    """How many calls to a tool named ``tool`` each server but ``sid`` has received."""
    return {other: len(served.ledger().calls(other, tool)) for other in served.tools if other != sid}


def _not_sent_elsewhere(served: Fleet, sid: str, tool: str, before: dict[str, int]) -> None:
    """Go on only when the call to ``sid__tool`` just made went to no other server (CAT-4.1):
    a host that routes by the original name sends it to another server listing that name,
    and the failure seen is that server's, not the run's.

    Raises:
        Inconclusive: naming CAT-4.1.
    """
    now = _calls_elsewhere(served, sid, tool)
    reached = sorted(other for other, count in now.items() if count > before.get(other, 0))
    precondition(
        "CAT-4.1",
        not reached,
        f"the call to {sid}__{tool} reached {', '.join(reached)}, not {sid}",
        observed={"reached": reached},
    )


@clause("GATE-4.5")
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_lone_surrogate_in_call_arguments_costs_the_run_no_server(
    sut: Sut, fleets: Fleets, transport: Literal["http", "stdio"]
) -> None:
    """The surrogate goes in an argument of its own, so that the call is well formed otherwise."""
    spec = FleetSpec(servers=(ServerSpec(id="s", tool_count=3),), seed=2)
    with fleets.serve(spec, {"s": {"mode": "all"}}, transport=transport) as served:
        first, second = served.tools["s"][:2]
        odd_arguments = {**example_arguments(first), "note": "\ud800"}
        case = served.describe() | {"call": {"name": f"s__{first['name']}", "arguments": odd_arguments}}

        async def body() -> tuple[ToolResult, ToolResult]:
            async with sut.open(open_params(served.servers)) as r:
                odd = await r.call(f"s__{first['name']}", odd_arguments)
                return odd, await r.call(f"s__{second['name']}", example_arguments(second))

        odd, after = run(body())
        sent = [call.get("arguments") for call in served.ledger().calls("s", first["name"])]
    if after["isError"]:
        original_names_sent(served.ledger().calls())
        raise fail(
            ("GATE-4.5",),
            f"after a call whose arguments held a lone surrogate ({transport}), the server's next call failed",
            expected="the result of s__" + second["name"],
            observed={"odd call": odd, "next call": after},
            case=case,
        )
    # P25: passed on escaped, as they were, or refused with an error result; nothing in between.
    if not sent and not odd["isError"]:
        raise fail(
            ("GATE-4.5",),
            f"a call whose arguments held a lone surrogate ({transport}) was not sent on, yet came back a success",
            expected="an error result",
            observed=odd,
            case=case,
        )
    if sent and sent[0] != odd_arguments:
        raise fail(
            ("GATE-4.5",),
            f"a call whose arguments held a lone surrogate ({transport}) reached the server with other arguments",
            expected=odd_arguments,
            observed=sent[0],
            case=case,
        )
