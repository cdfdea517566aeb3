"""Discovery over generated fleets: what it may activate, the budgets it respects, what
it reports, and how its tools reach the next request and execute through the gate."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from conformance import OutcomeError, Sut, clause
from conformance.suite._model import (
    DISCOVERY,
    DYNAMIC,
    REQUEST,
    base_tools,
    catalog,
    examples,
    fail,
    first_round,
    fleets_with_policies,
    mcp_definitions,
    names,
    open_params,
    run,
)
from mock_servers import example_arguments

FLEETS = fleets_with_policies(max_servers=3, min_tools=5, max_tools=40)
STEPS = st.lists(
    st.tuples(st.integers(0, 10_000), st.none() | st.integers(1, 20), st.booleans()), min_size=1, max_size=5
)


def _words(tools: dict[str, list[dict[str, Any]]]) -> list[str]:
    words: set[str] = set()
    for ts in tools.values():
        for t in ts:
            words.update(w for w in re.split(r"[^a-z0-9]+", (t["name"] + " " + t.get("description", "")).lower()) if w)
    return sorted(words) or ["tool"]


@clause("BUD-2", "SEL-3", "DSC-4", "DSC-5", "DSC-6", "DSC-9", "DEF-2", "DEF-3", "GATE-3", "CAT-4", "BUD-3")
@examples(12)
@given(FLEETS, st.integers(0, 4) | st.integers(70, 95), STEPS)
def test_discovery_sequence_keeps_every_invariant(
    sut: Sut, fleets: Any, fleet: Any, base_count: int, steps: list[tuple[int, int | None, bool]]
) -> None:
    spec, policies = fleet
    base = base_tools(base_count)
    with fleets.serve(spec, policies) as served:
        model = first_round(served.tools, served.policies, base_count)
        if model.error or not model.discovery:
            return
        words = _words(served.tools)
        cat = catalog(served.tools)
        auto_ids = [sid for sid, m in model.servers.items() if m.mode == "auto"]
        case: dict[str, Any] = served.describe() | {"baseTools": base_count}

        async def body() -> None:
            async with sut.open(open_params(served.servers, base)) as r:
                defs = await r.definitions()
                active = names(mcp_definitions(defs, names(base)))
                for word_index, limit, scoped in steps:
                    args: dict[str, Any] = {"query": words[word_index % len(words)]}
                    scope = [auto_ids[word_index % len(auto_ids)]] if scoped else None
                    if scope:
                        args["server_ids"] = scope
                    if limit is not None:
                        args["limit"] = limit
                    case["steps"] = r.case["steps"]
                    result = await r.call(DISCOVERY, args)
                    if result["isError"]:
                        raise fail(("DSC-5",), "a valid discovery call failed", observed=result, case=case)
                    sc = result.get("structuredContent") or {}
                    activated = [a.get("name") for a in sc.get("activated", [])]
                    cap = min(limit if limit is not None else 6, 12)
                    if len(activated) > cap:
                        raise fail(
                            ("DSC-5",),
                            "discovery activated more than its (clamped) limit",
                            expected=f"<= {cap}",
                            observed=activated,
                            case=case,
                        )
                    for q in activated:
                        if q not in cat or q in active:
                            raise fail(
                                ("DSC-4",),
                                "discovery activated a tool that is unknown or already active",
                                observed=q,
                                case=case,
                            )
                        sid, tool = cat[q]
                        m = model.servers[sid]
                        if m.mode != "auto" or tool["name"] not in m.eligible or (scope and sid not in scope):
                            raise fail(
                                ("DSC-4", "POL-1"),
                                "discovery activated a tool that is not a candidate",
                                expected={"auto": auto_ids, "eligible": m.eligible, "scope": scope},
                                observed=q,
                                case=case,
                            )
                    new_defs = await r.definitions()
                    new_mcp = names(mcp_definitions(new_defs, names(base)))
                    lost = [n for n in active if n not in new_mcp]
                    if lost:
                        raise fail(("DEF-3",), "tools once active were lost", observed=lost, case=case)
                    missing = [q for q in activated if q not in new_mcp]
                    if missing:
                        raise fail(
                            ("DEF-2",), "activated tools are not in the next definitions", observed=missing, case=case
                        )
                    for d in new_defs:
                        if d["name"] in activated and d["inputSchema"] != cat[d["name"]][1]["inputSchema"]:
                            raise fail(("DEF-2",), "an activated tool lacks its complete schema", observed=d, case=case)
                    if len(new_defs) > DYNAMIC:
                        raise fail(
                            ("BUD-2",),
                            "definitions grew past the dynamic watermark",
                            expected=f"<= {DYNAMIC}",
                            observed=len(new_defs),
                            case=case,
                        )
                    if set(new_mcp) != set(active) | set(activated):
                        raise fail(
                            ("DEF-1", "DEF-2"),
                            "the active set changed other than by the activated tools",
                            expected=sorted(set(active) | set(activated)),
                            observed=new_mcp,
                            case=case,
                        )
                    active = new_mcp
                    per: dict[str, int] = {}
                    for n in active:
                        per[cat[n][0]] = per.get(cat[n][0], 0) + 1
                    for sid, count in per.items():
                        m = model.servers[sid]
                        if count > max(m.max_active, len(m.required)):
                            raise fail(
                                ("SEL-3",),
                                f"{sid} has more active tools than its maxActiveTools",
                                expected=m.max_active,
                                observed=count,
                                case=case,
                            )
                    if sc.get("activeCount") != len(active) or sc.get("remainingCapacity") != (
                        model.dynamic_capacity - len(active)
                    ):
                        raise fail(
                            ("DSC-6",),
                            "activeCount / remainingCapacity are wrong",
                            expected={
                                "activeCount": len(active),
                                "remainingCapacity": model.dynamic_capacity - len(active),
                            },
                            observed=sc,
                            case=case,
                        )
                if served.ledger().calls():
                    raise fail(
                        ("DSC-9",), "discovery called a server tool", observed=served.ledger().calls(), case=case
                    )
                # BUD-3: the final check counts everything.
                room = REQUEST - len(active) - base_count - 1
                ok = await r.request(base_tools(room, "extra"))
                if len(ok) != REQUEST:
                    raise fail(
                        ("BUD-3",),
                        "a request of exactly 128 definitions was altered",
                        expected=REQUEST,
                        observed=len(ok),
                        case=case,
                    )
                try:
                    too_many = await r.request(base_tools(room + 1, "extra"))
                except OutcomeError as exc:
                    if exc.kind != "request_too_large":
                        raise fail(
                            ("BUD-3",),
                            "a request over 128 failed with the wrong kind",
                            expected="request_too_large",
                            observed=str(exc),
                            case=case,
                        ) from None
                else:
                    raise fail(
                        ("BUD-3",),
                        "a request over 128 definitions was not refused",
                        expected="request_too_large",
                        observed=len(too_many),
                        case=case,
                    )
                # GATE-3 / CAT-4: the last discovered tool executes with its original name and arguments.
                discovered = [n for n in active if n not in names(mcp_definitions(defs, names(base)))]
                if discovered:
                    q = discovered[-1]
                    sid, tool = cat[q]
                    arguments = example_arguments(tool)
                    result = await r.call(q, arguments)
                    calls = served.ledger().calls(sid, tool["name"])
                    if result["isError"] or not calls:
                        raise fail(
                            ("GATE-3",),
                            "a tool activated by discovery did not execute",
                            observed={"result": result, "ledger": calls},
                            case=case,
                        )
                    if calls[-1].get("arguments") != arguments:
                        raise fail(
                            ("CAT-4",),
                            "the server got other arguments than the call carried",
                            expected=arguments,
                            observed=calls[-1].get("arguments"),
                            case=case,
                        )

        run(body())
