"""Ranking (RNK-*, the `lexical` profile), observed through discovery: with 95 base tools
the first round has no room, so a discovery call with ``limit`` 1 activates exactly the
top-ranked candidate of the first-round scorer (DSC-10.1)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance import Sut, clause
from conformance.suite._fleets import Fleets
from conformance.suite._wire import DISCOVERY, activated, base_tools, fail, open_params, run
from mock_servers import FleetSpec, ServerSpec, ToolSpec

SCHEMA: dict[str, Any] = {"type": "object"}


def tool(name: str, description: str = "Thing.", read_only: bool | None = None) -> ToolSpec:
    annotations = None if read_only is None else {"readOnlyHint": read_only}
    return ToolSpec(name=name, description=description, input_schema=SCHEMA, annotations=annotations)


def top(
    sut: Sut, fleets: Fleets, servers: dict[str, list[ToolSpec]], query: str, limit: int = 1
) -> tuple[list[str], dict[str, Any]]:
    """What one discovery call activates on a run whose first round is empty."""
    spec = FleetSpec(servers=tuple(ServerSpec(id=sid, tool_count=0, tools=tuple(ts)) for sid, ts in servers.items()))
    base = base_tools(95)
    with fleets.serve(spec) as served:

        async def body() -> list[str]:
            async with sut.open(open_params(served.servers, base)) as r:
                return activated(await r.call(DISCOVERY, {"query": query, "limit": limit}))

        return run(body()), served.describe() | {"query": query, "limit": limit, "baseTools": 95}


CASES = [
    ("RNK-8.1", {"s": [tool("beta_thing"), tool("alpha_thing")]}, "thing", ["s__alpha_thing"]),
    (
        "RNK-2.1",
        {"s": [tool("a_thing", "Thing."), tool("b_thing", "Thing with widget.")]},
        "widget thing",
        ["s__b_thing"],
    ),
    ("RNK-1.1", {"s": [tool("a_thing", "Thing."), tool("b_thing", "THING-Widget.")]}, "widget", ["s__b_thing"]),
    ("RNK-3.1", {"alpha": [tool("x_thing")], "beta": [tool("x_thing")]}, "beta thing", ["beta__x_thing"]),
    ("RNK-4.1", {"s": [tool("a_thing"), tool("b_thing", read_only=True)]}, "thing", ["s__b_thing"]),
    ("RNK-5.2", {"s": [tool("a_thing"), tool("b_pull_request_thing")]}, "pr thing", ["s__b_pull_request_thing"]),
    ("RNK-5.1", {"s": [tool("a_thing"), tool("b_issue_thing")]}, "工单 thing", ["s__b_issue_thing"]),
    ("RNK-6.3", {"s": [tool("a_create_thing"), tool("z_view_thing")]}, "list thing", ["s__z_view_thing"]),
    ("RNK-6.5", {"s": [tool("a_create_thing"), tool("z_view_thing")]}, "thing", ["s__a_create_thing"]),
    (
        "RNK-7.2",
        {"s": [tool("a_pull_request", "Fetch."), tool("b_project", "Fetch.")]},
        "project fetch",
        ["s__b_project"],
    ),
    ("RNK-8.1", {"b": [tool("thing")], "a": [tool("thing")]}, "thing", ["a__thing"]),
]


@pytest.mark.parametrize(
    ("sentence", "servers", "query", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give(
    sut: Sut, fleets: Fleets, sentence: str, servers: dict[str, list[ToolSpec]], query: str, expected: list[str]
) -> None:
    got, case = top(sut, fleets, servers, query)
    if got != expected:
        raise fail(
            (sentence,),
            "discovery's top candidate is not the one the lexical scores give",
            expected=expected,
            observed=got,
            case=case,
        )


test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give = clause(
    "DSC-10.1", *sorted({c[0] for c in CASES})
)(test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give)
