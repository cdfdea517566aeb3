"""The catalog (CAT-*): every page listed, every tool kept with its definition, qualified
names, calls routed by prefix with names and arguments unchanged, and names that break
the provider rule."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import OutcomeError, Sut, clause
from conformance.suite._fleets import Fleets
from conformance.suite._strategies import examples
from conformance.suite._wire import catalog, fail, mcp_definitions, names, open_params, portable, run
from mock_servers import Faults, FleetSpec, ServerSpec, ToolSpec, example_arguments, generate_tools

PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@clause("CAT-1.1", "CAT-1.2", "CAT-1.3", "CAT-2.1", "CAT-2.2")
@examples(6)
@given(st.sampled_from((1, 2, 3, 7)), st.integers(15, 40), st.integers(0, 1000))
def test_tools_on_later_pages_are_in_the_catalog(
    sut: Sut, fleets: Fleets, page_size: int, count: int, seed: int
) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=count, page_size=page_size, seed=seed),), seed=seed)
    tools = generate_tools(spec.servers[0])
    last = tools[-1]["name"]
    pinned_policy = {"pinnedTools": [last], "maxActiveTools": 40}
    every_policy = {"mode": "all", "maxActiveTools": 40}
    with fleets.serve(spec, {"s0": pinned_policy}) as served:

        async def body() -> tuple[Any, Any]:
            async with sut.open(open_params(served.servers)) as r:
                pinned = await r.definitions()
            async with sut.open(open_params(served.with_policies({"s0": every_policy}))) as r:
                every = await r.definitions()
            return pinned, every

        pinned, every = run(body())
        fleet = served.describe()["fleet"]
    want = f"s0__{last}"
    got = {d["name"]: d for d in pinned}
    if want not in got:
        raise fail(
            ("CAT-2.2",),
            "a pinned tool from the last tools/list page is not active",
            expected=want,
            observed=sorted(got),
            case={"fleet": fleet, "policies": {"s0": pinned_policy}},
        )
    if got[want]["inputSchema"] != tools[-1]["inputSchema"]:
        raise fail(
            ("CAT-1.2",),
            "a tool from the last tools/list page lacks its listed input schema",
            expected=tools[-1]["inputSchema"],
            observed=got[want]["inputSchema"],
            case={"fleet": fleet, "policies": {"s0": pinned_policy}},
        )
    listed = sorted(f"s0__{t['name']}" for t in tools)
    shown = sorted(names(mcp_definitions(every, [])))
    if shown != listed:
        raise fail(
            ("CAT-2.1",),
            "mode 'all' did not expose every tool of every page",
            expected=listed,
            observed={"missing": sorted(set(listed) - set(shown)), "extra": sorted(set(shown) - set(listed))},
            case={"fleet": fleet, "policies": {"s0": every_policy}},
        )


@clause("CAT-3.2")
def test_two_servers_may_offer_the_same_tool_name(sut: Sut, fleets: Fleets) -> None:
    same = ToolSpec(name="search", description="Searches.", input_schema={"type": "object"})
    spec = FleetSpec(
        servers=(
            ServerSpec(id="github", tool_count=0, tools=(same,)),
            ServerSpec(id="linear", tool_count=0, tools=(same,)),
        )
    )
    with fleets.serve(spec, {"github": {"mode": "all"}, "linear": {"mode": "all"}}) as served:
        defs = run(_definitions(sut, served.servers))
        case = served.describe()
    shown = sorted(names(mcp_definitions(defs, [])))
    if shown != ["github__search", "linear__search"]:
        raise fail(
            ("CAT-3.2",),
            "two servers offering the same tool name are not both exposed under their qualified names",
            expected=["github__search", "linear__search"],
            observed=shown,
            case=case,
        )


async def _definitions(sut: Sut, servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    async with sut.open(open_params(servers)) as r:
        return await r.definitions()


@clause("CAT-4.1", "CAT-4.2", "CAT-4.3")
def test_a_call_reaches_the_server_its_prefix_names_with_the_original_name_and_arguments(
    sut: Sut, fleets: Fleets
) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}
    same = ToolSpec(name="search", description="Searches.", input_schema=schema)
    spec = FleetSpec(
        servers=(
            ServerSpec(id="github", tool_count=0, tools=(same,)),
            ServerSpec(id="linear", tool_count=0, tools=(same,)),
        )
    )
    arguments = {"q": "flaky login test ✓", "n": 7, "nested": {"keep": [1, "two", None]}}
    with fleets.serve(spec, {"github": {"mode": "all"}, "linear": {"mode": "all"}}) as served:

        async def body() -> dict[str, Any]:
            async with sut.open(open_params(served.servers)) as r:
                return await r.call("linear__search", arguments)

        result = run(body())
        calls = served.ledger().calls()
        case = served.describe() | {"call": {"name": "linear__search", "arguments": arguments}}
    if [c.get("server") for c in calls] != ["linear"]:
        raise fail(
            ("CAT-4.1",),
            "the call did not reach exactly the server its prefix names",
            expected=["linear"],
            observed={"result": result, "tools/call": portable(calls)},
            case=case,
        )
    if calls[0].get("name") != "search":
        raise fail(
            ("CAT-4.2",),
            "the server got another tool name",
            expected="search",
            observed=calls[0].get("name"),
            case=case,
        )
    if calls[0].get("arguments") != arguments:
        raise fail(
            ("CAT-4.3",),
            "the server got other arguments",
            expected=arguments,
            observed=calls[0].get("arguments"),
            case=case,
        )


BAD_NAME_KINDS = ("dot", "space", "slash", "non_ascii", "too_long")
_EXPLICIT_BAD = (
    ToolSpec(name="get.item", description="Fetches one item by its dotted name."),
    ToolSpec(name="list items", description="Lists the items with a space in the name."),
    ToolSpec(name="repo/files", description="Reads repository files behind a slash."),
    ToolSpec(name="café_menu", description="Shows the menu with an accented name."),
    ToolSpec(name="search_" + "very_long_name_" * 5, description="Searches with a name over the limit."),
    ToolSpec(name="plain_tool", description="A tool whose name is fine."),
)
BAD_NAME_FLEETS = {
    "generated": FleetSpec(
        servers=(ServerSpec(id="s0", tool_count=10, faults=Faults(bad_names=BAD_NAME_KINDS)),), seed=2
    ),
    "explicit": FleetSpec(servers=(ServerSpec(id="names", tool_count=0, tools=_EXPLICIT_BAD),)),
}


@clause("CAT-5.1", "CAT-5.2")
@pytest.mark.parametrize("mode", ["all", "auto"])
@pytest.mark.parametrize("fleet", sorted(BAD_NAME_FLEETS))
def test_no_definition_breaks_the_provider_name_rule(sut: Sut, fleets: Fleets, fleet: str, mode: str) -> None:
    spec = BAD_NAME_FLEETS[fleet]
    sid = spec.servers[0].id
    with fleets.serve(spec, {sid: {"mode": mode}}) as served:
        case = served.describe()
        cat = catalog(served.tools)
        tools = served.tools[sid]

        async def body() -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any], Any, Any]]]:
            async with sut.open(open_params(served.servers)) as r:
                defs = await r.definitions()
                mapped = []
                for d in mcp_definitions(defs, []):
                    if d["name"] in cat or not PROVIDER_NAME.match(d["name"]):
                        continue
                    # Exposed under another name: the original is the one it describes.
                    same = [
                        t
                        for t in tools
                        if t.get("description", "") == d["description"] and t["inputSchema"] == d["inputSchema"]
                    ]
                    if len(same) != 1:
                        continue
                    arguments = example_arguments(same[0])
                    seen = len(served.ledger().calls(sid))
                    result = await r.call(d["name"], arguments)
                    executed = [(c.get("name"), c.get("arguments")) for c in served.ledger().calls(sid)[seen:]]
                    mapped.append((d["name"], same[0], result, executed))
                return defs, mapped

        try:
            defs, mapped = run(body())
        except OutcomeError as exc:
            raise fail(
                ("CAT-5.2",),
                "a tool name that breaks the provider rule failed the run instead of being mapped or left out",
                observed=str(exc),
                case=case,
            ) from None
    broken = [n for n in names(defs) if not PROVIDER_NAME.match(n)]
    if broken:
        raise fail(
            ("CAT-5.1",),
            "definitions leave the host with names that break ^[A-Za-z0-9_-]{1,64}$",
            expected=[],
            observed=broken,
            case=case,
        )
    for exposed, tool, result, executed in mapped:
        want = [(tool["name"], example_arguments(tool))]
        if result["isError"] or executed != want:
            raise fail(
                ("CAT-5.2",),
                f"calling the mapped name {exposed!r} did not execute the original tool {tool['name']!r}",
                expected={"tools/call": want},
                observed={"result": result, "tools/call": executed},
                case=case,
            )
