"""The selection trace: first-round outcomes with scores, and discovery calls, as readable text (ISO-3)."""

from __future__ import annotations

from reference_impl import DISCOVERY_TOOL, DiscoveryTrace, ServerConfig, ToolPolicy, open_toolset

from .servers import base_tools, memory, numbered_tools, tool


def _servers() -> list[ServerConfig]:
    return [
        memory(
            "a",
            [*numbered_tools("a", 13), tool("pinned_tool", "pinned"), tool("denied_tool", "denied")],
            policy=ToolPolicy(pinned_tools=("pinned_tool",), denied_tools=("denied_tool",)),
        ),
        memory("b", [tool("reader", read_only=True), tool("writer")], policy=ToolPolicy(side_effects="readOnly")),
        memory("c", [tool("x"), tool("y")], policy=ToolPolicy(mode="allowlist", allowed_tools=("x",))),
    ]


async def test_every_catalog_tool_has_a_first_round_outcome() -> None:
    async with open_toolset(_servers(), user_message="tool number 3") as toolset:
        trace = toolset.trace
        outcomes = {c.qualified_name: c.outcome for c in trace.candidates()}
        assert len(outcomes) == len(toolset.catalog) == 19
        assert outcomes["a__pinned_tool"] == "required"
        assert outcomes["c__x"] == "required"
        assert outcomes["a__a_003"] == "selected"
        assert outcomes["b__reader"] == "selected"
        assert outcomes["a__denied_tool"] == "excluded: denied"
        assert outcomes["b__writer"] == "excluded: read-only policy and readOnlyHint is not true"
        assert outcomes["c__y"] == "excluded: not in allowedTools"
        # The pinned tool and eleven ranked ones fill a's cap of 12; two are left by the cap.
        left = sorted(name for name, outcome in outcomes.items() if outcome == "left: server at its first-round cap")
        assert left == ["a__a_011", "a__a_012"]
        assert sum(outcome == "selected" for outcome in outcomes.values()) == 12


async def test_a_tool_left_by_the_capacity_says_so() -> None:
    async with open_toolset([memory("s", numbered_tools("t", 5))], base_tools=base_tools(93)) as toolset:
        outcomes = [c.outcome for c in toolset.trace.candidates()]
        assert outcomes == ["selected", "selected", *["left: first-round capacity used up"] * 3]


async def test_tools_the_walk_never_reached_are_left_by_their_servers_cap_not_by_the_capacity() -> None:
    # The worked example: the walk stops once all four servers hold 12; 92 slots were never used up.
    servers = [memory(s, numbered_tools(s, 40)) for s in ("a", "b", "c", "d")]
    async with open_toolset(servers, base_tools=base_tools(3)) as toolset:
        outcomes = [c.outcome for c in toolset.trace.candidates()]
        assert outcomes.count("selected") == 48
        assert outcomes.count("left: server at its first-round cap") == 112
        assert toolset.trace.by_name("d__d_039").outcome == "left: server at its first-round cap"


async def test_candidates_carry_score_breakdowns_except_excluded_ones() -> None:
    async with open_toolset(_servers(), user_message="tool number 3", system_prompt="pinned") as toolset:
        trace = toolset.trace
        hit = trace.by_name("a__a_003")
        # Words of a_003: {a, 003, tool, number, 3}; message words {tool, number, 3}: 3 hits = 36.
        assert hit.score is not None
        assert hit.score.total == 36
        assert hit.server_id == "a"
        assert str(hit) == "a__a_003: selected  score 36 (user_words=+36)"
        # pinned_tool: "tool" in the message (12), "pinned" in the system prompt (2).
        pinned = "a__pinned_tool: required  score 14 (user_words=+12, system_words=+2)"
        assert str(trace.by_name("a__pinned_tool")) == pinned
        excluded = trace.by_name("a__denied_tool")
        assert excluded.score is None
        assert str(excluded) == "a__denied_tool: excluded: denied"


async def test_the_rendered_trace_lists_taken_tools_first_then_the_rest_then_discovery_calls() -> None:
    async with open_toolset(_servers(), user_message="tool number 3") as toolset:
        await toolset.call(DISCOVERY_TOOL, {"query": "number 12", "server_ids": ["a"], "limit": 1})
        await toolset.call(DISCOVERY_TOOL, {"query": "nothing at all"})
        text = toolset.trace.render()
        lines = text.splitlines()
        assert lines[0] == "first round:"
        taken = lines[1:15]
        assert all(": required" in line or ": selected" in line for line in taken)
        assert taken[0] == "  a__a_000: selected  score 24 (user_words=+24)"
        assert "  a__denied_tool: excluded: denied" in lines
        assert "discovery 'number 12' servers=['a'] limit=1" in lines
        assert "  + a__a_012  score 24 (user_words=+24)" in lines
        assert lines[-2:] == ["discovery 'nothing at all' servers=all limit=6", "  (no candidate matched)"]
        assert str(toolset.trace) == text
        short = toolset.trace.render(limit=3).splitlines()
        assert short[4] == "  … 16 more"


async def test_a_discovery_trace_records_matches_activations_and_skips_with_scores() -> None:
    tight = memory("tight", [tool(f"w_{i:02d}", "widget") for i in range(15)], policy=ToolPolicy(max_active_tools=13))
    async with open_toolset([tight]) as toolset:
        await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": 2})
        (trace,) = toolset.trace.discoveries
        assert trace.query == "widget"
        assert trace.limit == 2
        assert trace.activated == ("tight__w_12",)
        assert trace.matched == ("tight__w_12", "tight__w_13", "tight__w_14")
        assert trace.skipped == {"tight__w_13": "server at maxActiveTools", "tight__w_14": "server at maxActiveTools"}
        assert str(trace).splitlines() == [
            "discovery 'widget' servers=all limit=2",
            "  + tight__w_12  score 12 (user_words=+12)",
            "  - tight__w_13  score 12 (user_words=+12)  (server at maxActiveTools)",
            "  - tight__w_14  score 12 (user_words=+12)  (server at maxActiveTools)",
        ]


def test_a_discovery_trace_without_a_scorer_renders_without_scores() -> None:
    trace = DiscoveryTrace(query="q", server_ids=("s",), limit=3, matched=("s__a",), activated=("s__a",))
    assert str(trace) == "discovery 'q' servers=['s'] limit=3\n  + s__a"
