"""The run-scoped toolset: definitions every turn, the execution gate, isolation, name mapping and cleanup."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from reference_impl import (
    DISCOVERY_TOOL,
    ConfigurationError,
    Definition,
    SelectionError,
    ServerConfig,
    ServerConnectionError,
    ToolPolicy,
    ToolsetError,
    exposed_name,
    open_toolset,
)

from .servers import RawServer, Recorder, base_tool, base_tools, memory, numbered_tools, raw_server, tool

PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
RELEASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tag": {"type": "string", "pattern": "^v[0-9]+"},
        "notes": {"type": "string"},
        "draft": {"type": "boolean", "default": False},
    },
    "required": ["tag"],
}


def github(recorder: Recorder) -> ServerConfig:
    tools = [
        tool("search", "Search code"),
        *numbered_tools("aa", 11),
        tool("create_release", "Publish a release", schema=RELEASE_SCHEMA),
    ]
    return memory("gh", tools, recorder=recorder)


def names(definitions: list[Definition]) -> list[str]:
    return [d["name"] for d in definitions]


async def test_a_hidden_tool_is_refused_then_discovered_then_visible_with_its_schema_then_executed() -> None:
    recorder = Recorder()
    async with open_toolset([github(recorder)], user_message="search the code") as toolset:
        assert "gh__create_release" not in names(toolset.definitions())

        refused = await toolset.call("gh__create_release", {"tag": "v1"})
        assert refused["isError"] is True
        assert "not active in this run" in refused["content"][0]["text"]
        assert f"Call {DISCOVERY_TOOL}" in refused["content"][0]["text"]
        assert recorder.calls == []

        found = await toolset.call(DISCOVERY_TOOL, {"query": "publish a release"})
        assert [t["name"] for t in found["structuredContent"]["activated"]] == ["gh__create_release"]
        assert recorder.calls == []

        definitions = toolset.definitions()
        assert definitions[-1] == {
            "name": "gh__create_release",
            "description": "Publish a release",
            "inputSchema": RELEASE_SCHEMA,
        }
        assert toolset.can_execute("gh__create_release")

        arguments = {"tag": "v1.2", "notes": "Fixes", "draft": True}
        result = await toolset.call("gh__create_release", arguments)
        assert result["isError"] is False
        assert result["structuredContent"] == {"server": "gh", "tool": "create_release", "arguments": arguments}
        assert result["content"] == [{"type": "text", "text": "gh.create_release ok"}]
        assert recorder.calls == [("create_release", arguments)]


@pytest.mark.parametrize(
    "name",
    [
        "gh__nope",
        "gh__create_release",
        "linear__search",
        "GH__search",
        "gh__Search",
        "gh__SEARCH",
        "search",
        "create_release",
        "gh__",
        "gh",
        "gh_",
        "",
        "gh__search ",
        " gh__search",
        "gh___search",
        "gh__search__",
        "linear__gh__search",
    ],
)
async def test_the_gate_refuses_every_name_that_is_not_active_and_no_call_reaches_a_server(name: str) -> None:
    recorder, other = Recorder(), Recorder()
    linear = memory("linear", [tool("list_issues")], recorder=other)
    async with open_toolset([github(recorder), linear], user_message="search") as toolset:
        assert "gh__search" in toolset.active_names
        result = await toolset.call(name, {"query": "x"})
        assert result["isError"] is True
        assert result["content"][0]["type"] == "text"
        assert not toolset.can_execute(name)
        assert await toolset.call("gh__search", {}) == {
            "content": [{"type": "text", "text": "gh.search ok"}],
            "isError": False,
            "structuredContent": {"server": "gh", "tool": "search", "arguments": {}},
        }
    assert recorder.calls == [("search", {})]
    assert other.calls == []


async def test_a_call_routes_by_prefix_to_the_server_with_the_original_name_and_arguments() -> None:
    first, second = Recorder(), Recorder()
    servers = [memory("github", [tool("search")], recorder=first), memory("linear", [tool("search")], recorder=second)]
    async with open_toolset(servers) as toolset:
        await toolset.call("linear__search", {"q": "bug", "n": [1, 2], "deep": {"x": None}})
        await toolset.call("github__search", {})
        await toolset.call("github__search")
    assert second.calls == [("search", {"q": "bug", "n": [1, 2], "deep": {"x": None}})]
    assert first.calls == [("search", {}), ("search", {})]


async def test_arguments_that_are_not_an_object_are_refused_before_the_server() -> None:
    recorder = Recorder()
    async with open_toolset([github(recorder)], user_message="search") as toolset:
        result = await toolset.call("gh__search", ["not", "an", "object"])
        assert result["isError"] is True
        assert "must be an object" in result["content"][0]["text"]
    assert recorder.calls == []


async def test_a_base_tool_call_is_an_error_result_saying_base_tools_run_outside_the_toolset() -> None:
    async with open_toolset([github(Recorder())], base_tools=base_tools(2)) as toolset:
        result = await toolset.call("base_001", {})
        assert result["isError"] is True
        assert "base tool" in result["content"][0]["text"]


async def test_definitions_are_base_tools_then_discovery_then_active_tools_in_activation_order() -> None:
    recorder = Recorder()
    async with open_toolset([github(recorder)], base_tools=base_tools(2), user_message="search") as toolset:
        request = toolset.request_definitions()
        assert names(request)[:4] == ["base_000", "base_001", DISCOVERY_TOOL, "gh__search"]
        assert request[2:] == toolset.definitions()
        assert names(request)[4:] == [f"gh__aa_{i:03d}" for i in range(11)]
        assert all(set(d) == {"name", "description", "inputSchema"} for d in toolset.definitions())


async def test_definitions_are_read_anew_and_only_grow_within_a_run() -> None:
    server = memory("shop", [tool(f"w_{i:02d}", "widget") for i in range(30)])
    async with open_toolset([server]) as toolset:
        history = [toolset.definitions()]
        assert toolset.definitions() == history[0]
        for limit in (1, 3, 12):
            await toolset.call(DISCOVERY_TOOL, {"query": "widget", "limit": limit})
            history.append(toolset.definitions())
        for before, after in itertools.pairwise(history):
            assert after[: len(before)] == before
        assert [len(h) for h in history] == [13, 14, 17, 25]
        history[-1].clear()
        assert len(toolset.definitions()) == 25


async def test_two_concurrent_runs_do_not_see_each_others_activations() -> None:
    recorder = Recorder()
    shared = memory("shop", [tool(f"aa_{i:02d}") for i in range(12)] + [tool("widget", "widget")], recorder=recorder)
    a_open, b_open, a_discovered, b_checked = anyio.Event(), anyio.Event(), anyio.Event(), anyio.Event()
    seen: dict[str, Any] = {}

    async def run_a() -> None:
        async with open_toolset([shared]) as toolset:
            a_open.set()
            await b_open.wait()
            found = await toolset.call(DISCOVERY_TOOL, {"query": "widget"})
            seen["a_activated"] = found["structuredContent"]["activated"]
            a_discovered.set()
            await b_checked.wait()
            seen["a_call"] = await toolset.call("shop__widget", {"from": "a"})

    async def run_b() -> None:
        async with open_toolset([shared]) as toolset:
            before = toolset.definitions()
            b_open.set()
            await a_open.wait()
            await a_discovered.wait()
            seen["b_unchanged"] = toolset.definitions() == before
            seen["b_call"] = await toolset.call("shop__widget", {"from": "b"})
            b_checked.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run_a)
            group.start_soon(run_b)
    assert seen["a_activated"] == [{"name": "shop__widget", "description": "widget"}]
    assert seen["b_unchanged"] is True
    assert seen["b_call"]["isError"] is True
    assert seen["a_call"]["isError"] is False
    assert recorder.calls == [("widget", {"from": "a"})]


async def test_a_new_run_after_another_runs_discoveries_starts_with_the_same_first_round() -> None:
    config = github(Recorder())
    async with open_toolset([config], user_message="search") as toolset:
        first = toolset.definitions()
        await toolset.call(DISCOVERY_TOOL, {"query": "release"})
        assert toolset.definitions() != first
    assert config.policy == ToolPolicy()
    async with open_toolset([config], user_message="search") as toolset:
        assert toolset.definitions() == first


async def test_names_that_break_the_provider_rule_are_mapped_and_still_execute_under_the_mapped_name() -> None:
    long_name = "summarize_" + "x" * 60
    recorder = Recorder()
    tools = [tool("get.file", "Read a file"), tool("搜索", "Search"), tool(long_name, "Long"), tool("plain")]
    async with open_toolset([memory("files", tools, recorder=recorder)]) as toolset:
        mapped = {
            "get.file": exposed_name("files__get.file"),
            "搜索": exposed_name("files__搜索"),
            long_name: exposed_name(f"files__{long_name}"),
            "plain": "files__plain",
        }
        assert mapped["get.file"].startswith("files__get_file_")
        assert len(mapped[long_name]) == 64
        exposed = names(toolset.definitions())[1:]
        assert sorted(exposed) == sorted(mapped.values())
        assert all(PROVIDER_NAME.match(name) for name in names(toolset.definitions()))
        for original, name in mapped.items():
            result = await toolset.call(name, {"k": original})
            assert result["isError"] is False, result
        for unmapped in ("files__get.file", "files__搜索", f"files__{long_name}"):
            assert (await toolset.call(unmapped, {}))["isError"] is True
    assert recorder.calls == [(original, {"k": original}) for original in mapped]


async def test_a_mapped_name_is_what_discovery_reports_and_the_policy_still_uses_the_original() -> None:
    tools = [*numbered_tools("aa", 13), tool("find.user", "find a user")]
    async with open_toolset([memory("crm", tools, policy=ToolPolicy(denied_tools=("aa_000",)))]) as toolset:
        found = await toolset.call(DISCOVERY_TOOL, {"query": "user"})
        assert found["structuredContent"]["activated"][0]["name"] == exposed_name("crm__find.user")
    async with open_toolset([memory("crm", tools, policy=ToolPolicy(pinned_tools=("find.user",)))]) as toolset:
        assert toolset.active_names[0] == exposed_name("crm__find.user")


@pytest.mark.parametrize(
    ("base", "message"),
    [
        ([{"name": ""}], r"baseTools\[0\] must be an object with a non-empty string 'name'"),
        ([{"description": "x"}], r"baseTools\[0\] must be an object"),
        (["search"], r"baseTools\[0\] must be an object"),
        ([{"name": "a"}, {"name": "a"}], r"baseTools\[1\]\.name 'a' is already taken"),
        ([{"name": DISCOVERY_TOOL}], r"baseTools\[0\] 'search_mcp_tools' collides with the discovery tool"),
    ],
)
async def test_malformed_or_duplicate_base_tools_are_a_configuration_error(base: list[Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        async with open_toolset([], base_tools=base):
            pytest.fail("the run must not open")


async def test_a_base_tool_named_like_an_mcp_tool_of_the_run_is_a_configuration_error_naming_both() -> None:
    recorder = Recorder()
    tools = [*numbered_tools("aa", 20), tool("find.user", "find a user")]
    # Active or not, under its qualified name or the name it is exposed under (CAT-5).
    collisions = [
        ("gh__aa_001", "aa_001"),
        ("gh__aa_019", "aa_019"),
        ("gh__find.user", "find.user"),
        (exposed_name("gh__find.user"), "find.user"),
    ]
    for name, original in collisions:
        base = [base_tool("fine"), base_tool(name)]
        with pytest.raises(ConfigurationError) as caught:
            async with open_toolset([memory("gh", tools, recorder=recorder)], base_tools=base):
                pytest.fail("the run must not open")
        assert f"baseTools[1] {name!r} collides with the MCP tool {original!r} of server 'gh'" in caught.value.message
    assert recorder.calls == []


async def test_a_base_tool_named_search_mcp_tools_is_refused_even_without_discovery() -> None:
    with pytest.raises(ConfigurationError, match="collides with the discovery tool search_mcp_tools"):
        async with open_toolset(
            [memory("gh", numbered_tools("aa", 3), policy=ToolPolicy(mode="all"))],
            base_tools=[base_tool(DISCOVERY_TOOL)],
        ):
            pytest.fail("the run must not open")


# Cleanup: a run that fails to open has closed every server it started (ERR-6), and closing closes (ERR-7).


def _healthy(directory: Path, name: str) -> RawServer:
    return raw_server(directory, name, [[tool("search"), tool("list_things")]])


def _failing_runs() -> dict[str, Callable[[Path], tuple[list[ServerConfig], dict[str, Any], type[ToolsetError], str]]]:
    def over_watermark(d: Path) -> Any:
        return [_healthy(d, "a").config("a")], {"base_tools": base_tools(96)}, SelectionError, "96 watermark"

    def over_max_active(d: Path) -> Any:
        crowded = raw_server(d, "b", [[tool("x"), tool("y"), tool("z")]])
        servers = [_healthy(d, "a").config("a"), crowded.config("b", ToolPolicy(mode="all", max_active_tools=2))]
        return servers, {}, SelectionError, "server 'b' has 3 required tools but maxActiveTools is 2"

    def over_capacity(d: Path) -> Any:
        crowded = raw_server(d, "b", [[tool(f"t{i}") for i in range(10)]])
        servers = [_healthy(d, "a").config("a", ToolPolicy(mode="all")), crowded.config("b", ToolPolicy(mode="all"))]
        return servers, {"base_tools": base_tools(85)}, SelectionError, "12 required tools do not fit"

    def colliding(d: Path) -> Any:
        servers = [raw_server(d, "a_", [[tool("x")]]).config("a_"), raw_server(d, "a", [[tool("_x")]]).config("a")]
        return servers, {}, ConfigurationError, "a___x"

    def duplicate(d: Path) -> Any:
        return [raw_server(d, "a", [[tool("x")], [tool("x")]]).config("a")], {}, ConfigurationError, "'a__x'"

    def base_collision(d: Path) -> Any:
        return [_healthy(d, "a").config("a")], {"base_tools": [{"name": "a__search"}]}, ConfigurationError, "a__search"

    def not_offered(d: Path) -> Any:
        servers = [_healthy(d, "a").config("a", ToolPolicy(pinned_tools=("ghost",))), _healthy(d, "b").config("b")]
        return servers, {}, ConfigurationError, "server 'a' does not offer ['ghost']"

    def malformed(d: Path) -> Any:
        bad = raw_server(d, "b", [[tool("fine")], [{"name": "broken", "inputSchema": "object"}]])
        return [_healthy(d, "a").config("a"), bad.config("b")], {}, ServerConnectionError, "(tool 'broken')"

    def exits(d: Path) -> Any:
        gone = raw_server(d, "b", [[]], exit_at_start=True)
        return [_healthy(d, "a").config("a"), gone.config("b")], {}, ServerConnectionError, "server 'b'"

    def hangs(d: Path) -> Any:
        stuck = raw_server(d, "b", [[]], hang_list=True)
        return [_healthy(d, "a").config("a"), stuck.config("b")], {"list_timeout": 0.2}, ServerConnectionError, "0.2 s"

    return {
        "base tools over the watermark": over_watermark,
        "required tools over maxActiveTools": over_max_active,
        "required tools over the first-round capacity": over_capacity,
        "colliding qualified names": colliding,
        "a name listed twice": duplicate,
        "a base tool named like an MCP tool": base_collision,
        "a pinned name not offered": not_offered,
        "a malformed tool definition": malformed,
        "a server that exits": exits,
        "a server that never finishes listing": hangs,
    }


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(_failing_runs()))
async def test_a_run_that_fails_to_open_has_closed_every_server_it_started(tmp_path: Path, case: str) -> None:
    servers, options, error, fragment = _failing_runs()[case](tmp_path)
    with anyio.fail_after(15), pytest.raises(error) as caught:
        async with open_toolset(servers, **options):
            pytest.fail("the run must not open")
    assert fragment in caught.value.message
    logs = sorted(tmp_path.glob("*.log"))
    assert logs, "no server was started"
    for log in logs:
        lines = log.read_text(encoding="utf-8").splitlines()
        assert lines[0] == "start"
        assert lines[-1] == "exit", f"{log.name} is still running"


@pytest.mark.e2e
async def test_closing_a_run_closes_every_server_of_the_run(tmp_path: Path) -> None:
    servers = [_healthy(tmp_path, "a"), _healthy(tmp_path, "b")]
    async with open_toolset([s.config(n) for s, n in zip(servers, "ab", strict=True)]) as toolset:
        assert all(s.started and not s.exited for s in servers)
        assert (await toolset.call("a__search", {"q": 1}))["isError"] is False
    assert all(s.exited for s in servers)
    assert servers[0].lines() == ["start", 'call search {"q": 1}', "exit"]


@pytest.mark.e2e
async def test_an_error_inside_the_run_closes_every_server_and_propagates(tmp_path: Path) -> None:
    server = _healthy(tmp_path, "a")
    with pytest.raises(KeyError, match="boom"):
        async with open_toolset([server.config("a")]):
            raise KeyError("boom")
    assert server.exited
