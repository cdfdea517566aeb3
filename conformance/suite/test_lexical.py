"""The lexical ranker, observed through discovery: with 95 base tools the first round has
no room, so a discovery call with ``limit`` 1 activates exactly the top-ranked candidate."""

from __future__ import annotations

from typing import Any

import pytest

from conformance import Sut, clause
from conformance.suite._model import DISCOVERY, base_tools, fail, open_params, run
from mock_servers import FleetSpec, ServerSpec, ToolSpec

SCHEMA = {"type": "object"}


def _tool(name: str, description: str = "Thing.", read_only: bool | None = None) -> ToolSpec:
    annotations = None if read_only is None else {"readOnlyHint": read_only}
    return ToolSpec(name=name, description=description, input_schema=SCHEMA, annotations=annotations)


def top(sut: Sut, fleets: Any, servers: dict[str, list[ToolSpec]], query: str, limit: int = 1) -> tuple[list[str], Any]:
    spec = FleetSpec(servers=tuple(ServerSpec(id=sid, tool_count=0, tools=tuple(ts)) for sid, ts in servers.items()))
    base = base_tools(95)
    with fleets.serve(spec) as served:

        async def body() -> list[str]:
            async with sut.open(open_params(served.servers, base)) as r:
                result = await r.call(DISCOVERY, {"query": query, "limit": limit})
                return [a["name"] for a in (result.get("structuredContent") or {}).get("activated", [])]

        return run(body()), served.describe() | {"query": query, "limit": limit, "baseTools": 95}


CASES = [
    ("RNK-8", {"s": [_tool("beta_thing"), _tool("alpha_thing")]}, "thing", ["s__alpha_thing"]),
    (
        "RNK-2",
        {"s": [_tool("a_thing", "Thing."), _tool("b_thing", "Thing with widget.")]},
        "widget thing",
        ["s__b_thing"],
    ),
    ("RNK-1", {"s": [_tool("a_thing", "Thing."), _tool("b_thing", "THING-Widget.")]}, "widget", ["s__b_thing"]),
    ("RNK-3", {"alpha": [_tool("x_thing")], "beta": [_tool("x_thing")]}, "beta thing", ["beta__x_thing"]),
    ("RNK-4", {"s": [_tool("a_thing"), _tool("b_thing", read_only=True)]}, "thing", ["s__b_thing"]),
    ("RNK-5", {"s": [_tool("a_thing"), _tool("b_pull_request_thing")]}, "pr thing", ["s__b_pull_request_thing"]),
    ("RNK-5", {"s": [_tool("a_thing"), _tool("b_issue_thing")]}, "工单 thing", ["s__b_issue_thing"]),
    ("RNK-6", {"s": [_tool("a_create_thing"), _tool("z_view_thing")]}, "list thing", ["s__z_view_thing"]),
    ("RNK-6", {"s": [_tool("a_create_thing"), _tool("z_view_thing")]}, "thing", ["s__a_create_thing"]),
    (
        "RNK-7",
        {"s": [_tool("a_pull_request", "Fetch."), _tool("b_project", "Fetch.")]},
        "project fetch",
        ["s__b_project"],
    ),
    ("RNK-8", {"b": [_tool("thing")], "a": [_tool("thing")]}, "thing", ["a__thing"]),
]


@pytest.mark.parametrize(
    ("clause_id", "servers", "query", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_top_discovery_candidate(
    sut: Sut, fleets: Any, clause_id: str, servers: Any, query: str, expected: list[str]
) -> None:
    got, case = top(sut, fleets, servers, query)
    if got != expected:
        raise fail(
            (clause_id, "DSC-10"),
            "discovery's top candidate is not the one the lexical scores give",
            expected=expected,
            observed=got,
            case=case,
        )


test_top_discovery_candidate = clause("DSC-10", *sorted({c[0] for c in CASES}))(test_top_discovery_candidate)


@clause("DSC-10")
def test_discovery_without_relevance_activates_nothing(sut: Sut, fleets: Any) -> None:
    got, case = top(sut, fleets, {"s": [_tool("a_thing"), _tool("b_other", "Other.")]}, "zebra", limit=6)
    if got:
        raise fail(
            ("DSC-10",),
            "discovery activated tools with no relevance signal from the query",
            expected=[],
            observed=got,
            case=case,
        )
