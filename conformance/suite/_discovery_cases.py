"""What the discovery checks feed the SUT: fleets, arguments, limits and lexical cases.

Kept apart from ``test_discovery.py`` so that the checks read in one sitting; every table
names the sentence each case is for, or says what makes it a boundary.
"""

from __future__ import annotations

from typing import Any, Final

from conformance._wire_types import ToolPolicy
from conformance.suite._named import plain_server
from conformance.suite._strategies import FleetAndPolicies
from mock_servers import FleetSpec, ServerSpec, ToolSpec, generate_tools

__all__ = [
    "ABSENT",
    "ASKED_BY_NAME",
    "AT_MAX",
    "INVALID_DISCOVERY",
    "LEXICAL_DISCOVERY",
    "LEXICAL_TOOLS",
    "LIMITS",
    "NOT_AUTO",
    "REGISTRATION",
    "RELEVANT",
    "ROOM_OF_TWO",
    "WIDE",
    "plain",
    "servers",
    "tool",
]


def servers(*specs: tuple[int, ToolPolicy]) -> FleetAndPolicies:
    """Servers ``s0``, ``s1``… of ``(tool_count, policy)``."""
    fleet = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, (n, _) in enumerate(specs)), seed=11)
    return fleet, {f"s{i}": p.copy() for i, (_, p) in enumerate(specs)}


def plain(*specs: tuple[int, ToolPolicy]) -> FleetAndPolicies:
    """Servers ``s0``, ``s1``… of ``(count, policy)`` plain tools ``tool_0``, ``tool_1``…"""
    fleet = FleetSpec(servers=tuple(plain_server(f"s{i}", n) for i, (n, _) in enumerate(specs)))
    return fleet, {f"s{i}": p.copy() for i, (_, p) in enumerate(specs)}


def tool(name: str, description: str = "Thing.", read_only: bool = False) -> ToolSpec:
    annotations = {"readOnlyHint": True} if read_only else None
    return ToolSpec(name=name, description=description, input_schema={"type": "object"}, annotations=annotations)


# The discovery tool is registered with one auto server whatever its tools, and never
# without one: all tools denied, none read-only under readOnly, maxActiveTools 0; no
# server in auto mode; no server at all.
REGISTRATION = [
    (plain((3, {"deniedTools": ["tool_0", "tool_1", "tool_2"]})), 0),
    (plain((3, {"sideEffects": "readOnly"})), 0),
    (plain((3, {"maxActiveTools": 0}), (3, {"mode": "all"})), 0),
    (plain((3, {"mode": "all"}), (3, {"mode": "allowlist", "allowedTools": ["tool_1"]})), 0),
    (plain((3, {"mode": "allowlist", "allowedTools": []})), 0),
    ((FleetSpec(servers=()), {}), 0),
    ((FleetSpec(servers=()), {}), 96),
]


AT_MAX = servers((20, {"maxActiveTools": 3}))  # the first round reaches maxActiveTools
ROOM_OF_TWO = servers((30, {"maxActiveTools": 14}))  # 12 in the first round, room for 2 more
WIDE = servers((40, {"maxActiveTools": 40}))
NOT_AUTO = (
    FleetSpec(servers=(ServerSpec(id="s0", tool_count=5), ServerSpec(id="s1", tool_count=10)), seed=11),
    {
        "s0": {},
        "s1": {"mode": "allowlist", "allowedTools": [generate_tools(ServerSpec(id="s1", tool_count=10))[0]["name"]]},
    },
)


# (limit argument, the sentence that bounds it): left out, null, 1, around 6 and 12, large.
ABSENT: Final = object()
LIMITS: list[tuple[object, str]] = [
    (ABSENT, "DSC-5.2"),
    (None, "DSC-5.2"),
    (1, "DSC-5.1"),
    (5, "DSC-5.1"),
    (6, "DSC-5.1"),
    (7, "DSC-5.1"),
    (11, "DSC-5.1"),
    (12, "DSC-5.1"),
    (13, "DSC-5.3"),
    (100, "DSC-5.3"),
    (2**31, "DSC-5.3"),
    (2**53, "DSC-5.3"),
]


# Invalid arguments by the sentence that makes them invalid; each call of a run must be
# an error result that activates nothing.
INVALID_DISCOVERY: dict[str, list[dict[str, Any]]] = {
    "DSC-7.1": [
        {},
        {"query": ""},
        {"query": "   "},
        {"query": "\t\n \u3000"},
        {"query": 5},
        {"query": None},
        {"query": False},
        {"query": ["issue"]},
        {"query": {"text": "issue"}},
    ],
    "DSC-7.2": [
        {"query": "issue", "limit": 0},
        {"query": "issue", "limit": -1},
        {"query": "issue", "limit": -3},
        {"query": "issue", "limit": 0.5},
        {"query": "issue", "limit": 2.5},
        {"query": "issue", "limit": "3"},
        {"query": "issue", "limit": ""},
        {"query": "issue", "limit": True},
        {"query": "issue", "limit": False},
        {"query": "issue", "limit": [3]},
    ],
    "DSC-7.3": [
        {"query": "issue", "server_ids": "s0"},
        {"query": "issue", "server_ids": [1]},
        {"query": "issue", "server_ids": [None]},
        {"query": "issue", "server_ids": ["s0", 1]},
        {"query": "issue", "server_ids": [["s0"]]},
        {"query": "issue", "server_ids": {"s0": True}},
        {"query": "issue", "server_ids": True},
    ],
}


# (tools of the target server, limit, filler tools activated first): the target server has
# at most `limit` candidates and the room left fits all of them, the last case with a
# dynamic room (4) below the limit (6 and 12).
ASKED_BY_NAME = [(1, 1, 0), (6, None, 0), (6, 6, 0), (7, 12, 0), (12, 12, 0), (3, None, 12), (3, 12, 12), (4, 12, 12)]


# Lexical discovery (DSC-10.2, DSC-10.3) on one run per query, whose first round is empty:
# (query, system prompt, limit, the activated tools in order). Relevance comes from the
# query alone: a word hit, an alias or the server id; a read-only hint, a read intent or
# words of the system prompt add to a score but make nothing a candidate.
LEXICAL_TOOLS = {
    "s": [
        tool("alpha_beta", "Gamma."),
        tool("alpha_x"),
        tool("beta_gamma"),
        tool("zz_alpha", "Beta."),
        tool("other", "Nothing."),
        tool("alpha_ro", read_only=True),
        tool("list_items", "Items."),
        tool("create_items", "Items."),
        tool("get_report", "Report.", read_only=True),
        tool("get_pull_request", "Fetch one."),
    ],
    "t": [tool("one"), tool("two")],
    # One tool on three servers; the query names the server whose copy ranks in the middle.
    "a": [tool("deploy_thing")],
    "b": [tool("deploy_thing", read_only=True)],
    "c": [tool("deploy_thing")],
}
ALPHA_BETA_GAMMA = ["s__alpha_beta", "s__beta_gamma", "s__zz_alpha", "s__alpha_ro", "s__alpha_x"]
#: Query -> the tools with a relevance signal from it.
RELEVANT = {
    "alpha beta gamma": set(ALPHA_BETA_GAMMA),
    "alpha": {"s__alpha_ro", "s__alpha_beta", "s__alpha_x", "s__zz_alpha"},
    "show items": {"s__list_items", "s__create_items"},
    "pr": {"s__get_pull_request"},
    "t": {"t__one", "t__two"},
    "zebra": set(),
    "a deploy": {"a__deploy_thing", "b__deploy_thing", "c__deploy_thing"},
}
LEXICAL_DISCOVERY: list[tuple[str, str, int, list[str]]] = [
    ("alpha beta gamma", "", 12, ALPHA_BETA_GAMMA),
    ("alpha beta gamma", "", 2, ["s__alpha_beta", "s__beta_gamma"]),
    ("alpha", "other nothing", 12, ["s__alpha_ro", "s__alpha_beta", "s__alpha_x", "s__zz_alpha"]),
    ("show items", "", 12, ["s__list_items", "s__create_items"]),
    ("pr", "", 12, ["s__get_pull_request"]),
    ("t", "", 1, ["t__one"]),
    ("zebra", "report", 6, []),
    # a's copy (12 + 16 for naming a) first; then b's (12 + 3 read-only) and c's (12): the
    # walk past a named server's copy goes on to every copy after it.
    ("a deploy", "", 12, ["a__deploy_thing", "b__deploy_thing", "c__deploy_thing"]),
]
