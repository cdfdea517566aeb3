"""The lexical ranker, observed through discovery: with 95 base tools the first round has
no room, so a discovery call with ``limit`` 1 activates exactly the top-ranked candidate.
And the first round's one global ranking (SEL-5), observed under a tight capacity."""

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


def _first_round(
    sut: Sut, fleets: Any, servers: dict[str, list[ToolSpec]], policies: dict[str, Any], base: int, user: str
) -> tuple[set[str], Any]:
    spec = FleetSpec(servers=tuple(ServerSpec(id=sid, tool_count=0, tools=tuple(ts)) for sid, ts in servers.items()))
    with fleets.serve(spec, policies) as served:

        async def body() -> list[str]:
            async with sut.open(open_params(served.servers, base_tools(base), user)) as r:
                return [d["name"] for d in await r.definitions()]

        got = run(body())
        case = served.describe() | {"userMessage": user, "baseTools": base}
    return {n for n in got if "__" in n}, case


_WIDGETS = [_tool(f"widget_{c}") for c in "abcdefghijklmn"]  # 14 tools that all score on "widget"
FIRST_ROUND_CASES = {
    # capacity 3; s0 may take one tool (maxActiveTools 1): the walk skips its second
    # widget and takes s1's, then the best zero-score tool by qualified name.
    "server-cap-skips": (
        {
            "s0": [_tool("widget_alpha"), _tool("widget_beta"), _tool("plain_x")],
            "s1": [_tool("widget_gamma"), _tool("plain_z"), _tool("plain_y")],
        },
        {"s0": {"maxActiveTools": 1}},
        92,
        "widget",
        {"s0__widget_alpha", "s1__widget_gamma", "s1__plain_y"},
    ),
    # capacity 2: the scorer's winner, then the tie broken by qualified name, not by
    # the servers' order.
    "score-then-name": (
        {"zz": [_tool("report_a")], "aa": [_tool("report_b")], "mm": [_tool("deploy_c")]},
        {},
        93,
        "deploy",
        {"mm__deploy_c", "aa__report_b"},
    ),
    # capacity 15: s0's 14 matching tools stop at the first-round cap of 12 (the first
    # 12 by name), and the walk goes on to s1's tools, which score nothing.
    "fairness-cap-in-the-walk": (
        {"s0": _WIDGETS, "s1": [_tool("other_1"), _tool("other_2"), _tool("other_3")]},
        {},
        80,
        "widget",
        {f"s0__widget_{c}" for c in "abcdefghijkl"} | {"s1__other_1", "s1__other_2", "s1__other_3"},
    ),
    # capacity 4: read intent lifts the read tools over the write tools of equal words.
    "read-intent": (
        {"s0": [_tool("create_note"), _tool("delete_note"), _tool("list_note"), _tool("get_note"), _tool("view_x")]},
        {},
        91,
        "show note",
        {"s0__list_note", "s0__get_note", "s0__view_x", "s0__create_note"},
    ),
}


@clause("SEL-5")
@pytest.mark.parametrize("name", sorted(FIRST_ROUND_CASES))
def test_first_round_walks_one_global_ranking(sut: Sut, fleets: Any, name: str) -> None:
    servers, policies, base, user, expected = FIRST_ROUND_CASES[name]
    got, case = _first_round(sut, fleets, servers, policies, base, user)
    if got != expected:
        raise fail(
            ("SEL-5",),
            "the first round did not take the tools one global ranking gives",
            expected=sorted(expected),
            observed=sorted(got),
            case=case,
        )
