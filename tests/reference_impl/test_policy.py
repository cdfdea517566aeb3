"""Policy before ranking: deny, allow lists, read-only fail-closed, pinned and required tools (POL-1..9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference_impl import Catalog, ConfigurationError, ToolPolicy, open_toolset
from reference_impl._policy import exclusion_reason

from .servers import Recorder, memory, numbered_tools, raw_server, tool

DISCOVERY = "search_mcp_tools"


def _entry(name: str = "x", annotations: dict[str, Any] | None = None) -> Any:
    raw: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
    if annotations is not None:
        raw["annotations"] = annotations
    return Catalog.from_listings({"s": [raw]}).entries[0]


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        (ToolPolicy(denied_tools=("x",)), "denied"),
        (ToolPolicy(mode="allowlist", allowed_tools=("x",), denied_tools=("x",)), "denied"),
        (ToolPolicy(pinned_tools=("x",), denied_tools=("x",)), "denied"),
        (ToolPolicy(mode="all", denied_tools=("x",)), "denied"),
        (ToolPolicy(mode="allowlist", allowed_tools=("y",)), "not in allowedTools"),
        (ToolPolicy(mode="allowlist"), "not in allowedTools"),
        (ToolPolicy(mode="auto", allowed_tools=("y",)), "not in allowedTools"),
        (ToolPolicy(side_effects="readOnly"), "read-only policy and readOnlyHint is not true"),
        (ToolPolicy(), None),
        (ToolPolicy(mode="all", allowed_tools=("y",)), None),
        (ToolPolicy(mode="auto", allowed_tools=("x",)), None),
        (ToolPolicy(mode="allowlist", allowed_tools=("x",)), None),
    ],
)
def test_the_exclusion_reason_follows_deny_then_allow_list_then_read_only(
    policy: ToolPolicy, reason: str | None
) -> None:
    assert exclusion_reason(_entry(), policy) == reason


@pytest.mark.parametrize(
    ("annotations", "eligible"),
    [(None, False), ({}, False), ({"readOnlyHint": False}, False), ({"readOnlyHint": True}, True)],
)
def test_read_only_admits_only_an_explicit_read_only_hint_true(annotations: Any, eligible: bool) -> None:
    reason = exclusion_reason(_entry("list_things", annotations), ToolPolicy(side_effects="readOnly"))
    assert (reason is None) is eligible


async def test_deny_wins_over_pinned_and_allowlist_and_the_denied_tool_never_runs() -> None:
    recorder = Recorder()
    policy = ToolPolicy(
        mode="allowlist", allowed_tools=("drop", "keep"), denied_tools=("drop",), pinned_tools=("drop",)
    )
    async with open_toolset([memory("db", [tool("drop"), tool("keep")], policy=policy, recorder=recorder)]) as toolset:
        assert [d["name"] for d in toolset.request_definitions()] == ["db__keep"]
        assert not toolset.eligible("db__drop")
        assert toolset.eligible("db__keep")
        assert not toolset.eligible("db__missing")
        refused = await toolset.call("db__drop", {})
        assert refused["isError"]
    assert recorder.calls == []


async def test_a_denied_tool_is_never_activated_by_discovery_whatever_its_score() -> None:
    tools = [*numbered_tools("filler", 12), tool("wipe_widget", "widget widget widget")]
    async with open_toolset([memory("db", tools, policy=ToolPolicy(denied_tools=("wipe_widget",)))]) as toolset:
        result = await toolset.call(DISCOVERY, {"query": "wipe widget", "limit": 12})
        assert result["structuredContent"]["activated"] == []
        assert "db__wipe_widget" not in toolset.active_names


async def test_allowlist_mode_makes_exactly_the_allowed_tools_active_and_registers_no_discovery() -> None:
    policy = ToolPolicy(mode="allowlist", allowed_tools=("b", "d"))
    tools = [tool("a"), tool("b"), tool("c"), tool("d")]
    async with open_toolset([memory("s", tools, policy=policy)]) as toolset:
        assert [d["name"] for d in toolset.definitions()] == ["s__b", "s__d"]
        assert not toolset.discovery_registered
        refused = await toolset.call(DISCOVERY, {"query": "a"})
        assert refused["isError"]
        assert f"Call {DISCOVERY}" not in refused["content"][0]["text"]


async def test_auto_mode_with_an_allowed_list_chooses_only_inside_it_for_the_first_round_and_discovery() -> None:
    # Twenty allowed tools compete for twelve first-round slots; the others, however relevant, never enter.
    allowed = [f"ok_{i:02d}" for i in range(20)]
    tools = [tool(name, "widget tool") for name in allowed] + [tool("zz_widget", "widget widget")]
    tools += [tool("aa_widget", "widget")]
    policy = ToolPolicy(allowed_tools=tuple(allowed))
    async with open_toolset([memory("s", tools, policy=policy)], user_message="widget") as toolset:
        assert len(toolset.active_names) == 12
        assert all(name.startswith("s__ok_") for name in toolset.active_names)
        found = await toolset.call(DISCOVERY, {"query": "widget zz aa", "limit": 12})
        activated = [t["name"] for t in found["structuredContent"]["activated"]]
        assert activated == [f"s__ok_{i:02d}" for i in range(12, 20)]
        assert toolset.trace.by_name("s__zz_widget").outcome == "excluded: not in allowedTools"


async def test_auto_mode_with_an_empty_allowed_list_and_all_mode_restrict_nothing() -> None:
    tools = [tool("a"), tool("b")]
    async with open_toolset(
        [
            memory("auto", tools),
            memory("every", tools, policy=ToolPolicy(mode="all", allowed_tools=("a",))),
        ]
    ) as toolset:
        assert sorted(toolset.active_names) == ["auto__a", "auto__b", "every__a", "every__b"]


async def test_read_only_fails_closed_for_tools_without_annotations_or_with_a_false_or_missing_hint() -> None:
    tools = [
        tool("marked", read_only=True),
        tool("unmarked"),
        tool("false", read_only=False),
        {"name": "other_hints", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": False}},
        tool("list_everything", "Read-only listing, safe to call"),
    ]
    async with open_toolset([memory("s", tools, policy=ToolPolicy(side_effects="readOnly"))]) as toolset:
        assert toolset.active_names == ("s__marked",)
        for name in ("unmarked", "false", "other_hints", "list_everything"):
            outcome = toolset.trace.by_name(f"s__{name}").outcome
            assert outcome == "excluded: read-only policy and readOnlyHint is not true"
        found = await toolset.call(DISCOVERY, {"query": "list everything read only safe"})
        assert found["structuredContent"]["activated"] == []


@pytest.mark.e2e
async def test_read_only_excludes_a_string_true_and_a_number_one_sent_as_raw_json(tmp_path: Path) -> None:
    def annotated(name: str, hint: Any) -> dict[str, Any]:
        return {"name": name, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": hint}}

    pages = [[annotated("json_true", True), annotated("string_true", "true"), annotated("number_one", 1)]]
    server = raw_server(tmp_path, "raw", pages)
    async with open_toolset([server.config("raw", ToolPolicy(side_effects="readOnly"))]) as toolset:
        assert toolset.active_names == ("raw__json_true",)
        for name in ("string_true", "number_one"):
            assert toolset.trace.by_name(f"raw__{name}").outcome.startswith("excluded: read-only")
            entry = next(e for e in toolset.catalog.entries if e.name == name)
            assert entry.annotations is not None
            assert not entry.read_only
    async with open_toolset([server.config("raw")], user_message="") as toolset:
        # Under "allow" all three are active, but only the JSON true earns the ranker's +3.
        scores = {c.qualified_name: c.score for c in toolset.trace.candidates()}
        assert {name: s.read_only for name, s in scores.items() if s is not None} == {
            "raw__json_true": True,
            "raw__number_one": False,
            "raw__string_true": False,
        }


@pytest.mark.parametrize(
    "policy",
    [
        ToolPolicy(pinned_tools=("pin",), denied_tools=("pin",)),
        ToolPolicy(pinned_tools=("pin",), side_effects="readOnly"),
        ToolPolicy(pinned_tools=("pin",), allowed_tools=("other",)),
    ],
    ids=["denied", "read-only", "outside-auto-allowed-list"],
)
async def test_a_pinned_tool_that_is_not_eligible_is_left_out_with_a_warning(
    policy: ToolPolicy, caplog: pytest.LogCaptureFixture
) -> None:
    tools = [tool("pin"), tool("other", read_only=True)]
    async with open_toolset([memory("s", tools, policy=policy)]) as toolset:
        assert "s__pin" not in toolset.active_names
        assert toolset.trace.by_name("s__pin").outcome.startswith("excluded")
    [warning] = [r for r in caplog.records if r.name == "reference_impl"]
    assert warning.levelname == "WARNING"
    assert "'s'" in warning.getMessage() and "'pin'" in warning.getMessage()


async def test_pinned_tools_are_active_first_even_when_they_rank_last() -> None:
    tools = [*numbered_tools("hot", 20), tool("zz_cold_1"), tool("zz_cold_2")]
    policy = ToolPolicy(pinned_tools=("zz_cold_2", "zz_cold_1"))
    async with open_toolset([memory("s", tools, policy=policy)], user_message="hot tool") as toolset:
        names = toolset.active_names
        assert names[:2] == ("s__zz_cold_1", "s__zz_cold_2")
        assert len(names) == 12
        assert all(name.startswith("s__hot_") for name in names[2:])
        assert toolset.trace.by_name("s__zz_cold_1").outcome == "required"


async def test_every_eligible_tool_of_a_non_auto_server_is_required() -> None:
    tools = [tool(f"t{i:02d}", read_only=i % 2 == 0) for i in range(20)]
    policy = ToolPolicy(mode="all", side_effects="readOnly")
    async with open_toolset([memory("s", tools, policy=policy)]) as toolset:
        assert toolset.active_names == tuple(f"s__t{i:02d}" for i in range(0, 20, 2))


@pytest.mark.parametrize(
    ("pinned", "maximum", "expected"),
    [
        (0, 24, 12),  # max(0, min(12, 24))
        (3, 24, 12),  # max(3, min(12, 24))
        (14, 20, 14),  # max(14, min(12, 20))
        (0, 5, 5),  # max(0, min(12, 5))
        (2, 5, 5),
        (5, 5, 5),
        (0, 0, 0),
        (12, 96, 12),
        (16, 96, 16),
    ],
)
async def test_the_first_round_of_an_auto_server_is_capped_at_max_of_required_and_min_12_max_active(
    pinned: int, maximum: int, expected: int
) -> None:
    tools = numbered_tools("t", 40)
    policy = ToolPolicy(
        pinned_tools=tuple(t["name"] for t in tools[-pinned:]) if pinned else (), max_active_tools=maximum
    )
    async with open_toolset([memory("s", tools, policy=policy)]) as toolset:
        assert len(toolset.active_names) == expected


async def test_an_allowlist_server_may_exceed_twelve_with_its_required_tools() -> None:
    tools = numbered_tools("t", 30)
    policy = ToolPolicy(mode="allowlist", allowed_tools=tuple(t["name"] for t in tools[:20]))
    async with open_toolset([memory("s", tools, policy=policy)]) as toolset:
        assert len(toolset.active_names) == 20


@pytest.mark.parametrize(
    ("policy", "missing"),
    [
        (ToolPolicy(pinned_tools=("search", "ghost")), "['ghost']"),
        (ToolPolicy(mode="allowlist", allowed_tools=("search", "ghost", "phantom")), "['ghost', 'phantom']"),
        (ToolPolicy(mode="all", pinned_tools=("ghost",)), "['ghost']"),
        (ToolPolicy(mode="auto", allowed_tools=("search", "ghost")), "['ghost']"),
    ],
)
async def test_a_pinned_or_allowlisted_name_the_server_does_not_offer_is_a_configuration_error(
    policy: ToolPolicy, missing: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        async with open_toolset([memory("gh", [tool("search"), tool("ghostly")], policy=policy)]):
            pytest.fail("the run must not open")
    assert f"server 'gh' does not offer {missing}" in caught.value.message


async def test_allowed_tools_are_not_checked_in_all_mode_where_they_restrict_nothing() -> None:
    policy = ToolPolicy(mode="all", allowed_tools=("ghost",))
    async with open_toolset([memory("gh", [tool("search")], policy=policy)]) as toolset:
        assert toolset.active_names == ("gh__search",)
