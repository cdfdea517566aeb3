"""Determinism, the worked example, pagination, raw read-only hints and run isolation."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from conformance import Sut, clause
from conformance.suite._model import (
    DISCOVERY,
    base_tools,
    catalog,
    examples,
    fail,
    mcp_definitions,
    names,
    open_params,
    portable,
    run,
)
from mock_servers import FleetSpec, ServerSpec, ToolSpec, example_arguments, generate_tools, preset
from mock_servers.strategies import fleet_specs


def _explicit(server: ServerSpec, reverse: bool) -> ServerSpec:
    tools = [
        ToolSpec(
            name=t["name"],
            description=t.get("description", ""),
            input_schema=t["inputSchema"],
            annotations=t.get("annotations"),
        )
        for t in generate_tools(server)
    ]
    if reverse:
        tools.reverse()
    return dataclasses.replace(server, tool_count=0, tools=tuple(tools))


@clause("SEL-4", "DEF-4")
@examples(8)
@given(fleet_specs(min_servers=2, max_servers=4, min_tools=5, max_tools=25), st.text(max_size=30), st.integers(0, 3))
def test_same_input_same_definitions_whatever_the_order(
    sut: Sut, fleets: Any, spec: FleetSpec, message: str, base_count: int
) -> None:
    base = base_tools(base_count)
    forward = FleetSpec(servers=tuple(_explicit(s, False) for s in spec.servers), seed=spec.seed)
    backward = FleetSpec(servers=tuple(_explicit(s, True) for s in reversed(spec.servers)), seed=spec.seed)
    with fleets.serve(forward) as a, fleets.serve(backward) as b:

        async def body() -> tuple[Any, Any, Any]:
            async with sut.open(open_params(a.servers, base, message)) as r1:
                first = await r1.definitions()
            async with sut.open(open_params(a.servers, base, message)) as r2:
                again = await r2.definitions()
            async with sut.open(open_params(b.servers, base, message)) as r3:
                other = await r3.definitions()
            return first, again, other

        first, again, other = run(body())
        case = {"fleet": a.describe(), "reordered": b.describe(), "userMessage": message, "baseTools": base_count}
    if names(first) != names(again) or first != again:
        raise fail(
            ("SEL-4",),
            "the same input gave different definitions",
            expected=names(first),
            observed=names(again),
            case=case,
        )
    if names(first) != names(other):
        raise fail(
            ("SEL-4",),
            "reordering the servers and their listings changed the definitions",
            expected=names(first),
            observed=names(other),
            case=case,
        )


@clause("SEL-6")
def test_worked_example(sut: Sut, fleets: Any) -> None:
    spec = preset("seed-example")
    base = base_tools(3)
    with fleets.serve(spec) as served:

        async def body() -> list[dict[str, Any]]:
            async with sut.open(open_params(served.servers, base)) as r:
                return await r.definitions()

        defs = run(body())
        mcp = names(mcp_definitions(defs, names(base)))
        per = {s.id: sum(1 for n in mcp if n.startswith(s.id + "__")) for s in spec.servers}
        if len(defs) != 52 or len(mcp) != 48 or set(per.values()) != {12} or DISCOVERY not in names(defs):
            raise fail(
                ("SEL-6",),
                "the worked example does not come out as specified",
                expected={"definitions": 52, "mcp": 48, "per_server": 12, "discovery": True},
                observed={"definitions": len(defs), "mcp": len(mcp), "per_server": per},
                case=served.describe() | {"baseTools": 3},
            )


@clause("CAT-1", "CAT-2")
@examples(6)
@given(st.sampled_from((1, 2, 3, 7)), st.integers(15, 40), st.integers(0, 1000))
def test_tools_on_later_pages_are_in_the_catalog(sut: Sut, fleets: Any, page_size: int, count: int, seed: int) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=count, page_size=page_size, seed=seed),), seed=seed)
    tools = generate_tools(spec.servers[0])
    last = tools[-1]["name"]
    with fleets.serve(spec, {"s0": {"pinnedTools": [last], "maxActiveTools": 40}}) as served:
        case = served.describe()

        async def body() -> tuple[Any, Any]:
            async with sut.open(open_params(served.servers)) as r:
                pinned = await r.definitions()
            async with sut.open(
                open_params([{**served.servers[0], "policy": {"mode": "all", "maxActiveTools": 40}}])
            ) as r:
                every = await r.definitions()
            return pinned, every

        pinned, every = run(body())
    want = f"s0__{last}"
    got = {d["name"]: d for d in pinned}
    if want not in got or got[want]["inputSchema"] != tools[-1]["inputSchema"]:
        raise fail(
            ("CAT-2", "CAT-1"),
            "a pinned tool from the last tools/list page is not active with its schema",
            expected=want,
            observed=sorted(got),
            case=case,
        )
    if sorted(names(every)) != sorted(f"s0__{t['name']}" for t in tools):
        raise fail(
            ("CAT-2",),
            "mode 'all' did not expose every tool of every page",
            expected=len(tools),
            observed=len(every),
            case=case,
        )


@clause("POL-5")
def test_read_only_needs_the_json_boolean_true(sut: Sut, fleets: Any) -> None:
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
        ToolSpec(name="list_none", description="List things.", input_schema=schema, annotations=None),
        ToolSpec(name="get_empty", description="Get things.", input_schema=schema, annotations={}),
    )
    spec = FleetSpec(servers=(ServerSpec(id="r", tool_count=0, raw=True, tools=tools),))
    for transport in ("http", "stdio"):
        for policy in ({"mode": "all", "sideEffects": "readOnly"}, {"mode": "auto", "sideEffects": "readOnly"}):
            with fleets.serve(spec, {"r": policy}, transport=transport) as served:

                async def body() -> tuple[Any, Any]:
                    async with sut.open(open_params(served.servers)) as r:
                        defs = await r.definitions()
                        calls = [await r.call(f"r__{t.name}", {}) for t in tools[1:]]
                    return defs, calls

                defs, calls = run(body())
                active = names(mcp_definitions(defs, []))
                if active != ["r__list_true"] or any(not c["isError"] for c in calls) or served.ledger().calls():
                    raise fail(
                        ("POL-5",),
                        "under readOnly a tool without readOnlyHint === true is active or executes",
                        expected=["r__list_true"],
                        observed={"active": active, "executed": portable(served.ledger().calls())},
                        case=served.describe() | {"transport": transport},
                    )


@clause("ISO-1", "ISO-2")
@examples(5)
@given(fleet_specs(min_servers=1, max_servers=3, min_tools=20, max_tools=40))
def test_runs_never_see_each_others_activations(sut: Sut, fleets: Any, spec: FleetSpec) -> None:
    with fleets.serve(spec) as served:
        cat = catalog(served.tools)
        case = served.describe()

        async def body() -> None:
            one, two = await asyncio.gather(
                sut.open(open_params(served.servers)), sut.open(open_params(served.servers))
            )
            try:
                start1, start2 = await asyncio.gather(one.definitions(), two.definitions())
                inactive = sorted(set(cat) - set(names(start1)))
                if not inactive:
                    return
                target = inactive[0]
                sid, tool = cat[target]
                words = " ".join([tool["name"].replace("_", " "), sid])
                results = await asyncio.gather(one.call(DISCOVERY, {"query": words, "limit": 12}), two.definitions())
                activated = [a["name"] for a in (results[0].get("structuredContent") or {}).get("activated", [])]
                after2 = await two.definitions()
                if after2 != start2:
                    raise fail(
                        ("ISO-1",),
                        "discovery in one run changed another run's definitions",
                        expected=names(start2),
                        observed=names(after2),
                        case=case | {"activated": activated},
                    )
                for q in activated:
                    owner, t = cat[q]
                    result = await two.call(q, example_arguments(t))
                    if not result["isError"] or served.ledger().calls(owner, t["name"]):
                        raise fail(("ISO-1",), "a tool activated in one run executed in another", observed=q, case=case)
                async with sut.open(open_params(served.servers)) as three:
                    fresh = await three.definitions()
                if fresh != start1:
                    raise fail(
                        ("ISO-2",),
                        "a new run after another run's discoveries starts differently",
                        expected=names(start1),
                        observed=names(fresh),
                        case=case,
                    )
            finally:
                await one.close()
                await two.close()

        run(body())
