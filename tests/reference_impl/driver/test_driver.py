"""The in-process driver: the protocol's methods as Python calls over real stdio servers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from typing import Any

import pytest

from reference_impl import (
    ConfigurationError,
    LexicalIndex,
    RequestTooLargeError,
    SelectionError,
    ServerConnectionError,
    ToolDoc,
)
from reference_impl.driver import DriverError, ReferenceDriver, _session

from ..servers import RawServer, raw_server, tool


def _server(directory: Path, name: str, *tools: dict[str, Any], **options: Any) -> RawServer:
    return raw_server(directory, name, [list(tools) or [tool("search", "Search code"), tool("list_issues")]], **options)


def _base(count: int) -> list[dict[str, Any]]:
    return [{"name": f"base_{i:03d}", "description": "", "inputSchema": {"type": "object"}} for i in range(count)]


class _OtherRanker:
    name = "bm25-ish"

    def index(self, tools: Sequence[ToolDoc], system_prompt: str) -> LexicalIndex:
        return LexicalIndex(tools, system_prompt)


async def test_initialize_reports_the_name_a_version_and_the_core_and_lexical_profiles() -> None:
    driver = ReferenceDriver()
    answer = await driver.initialize({"protocolVersion": "1"})
    assert answer["name"] == "reference_impl"
    assert isinstance(answer["version"], str)
    assert answer["version"]
    assert answer["profiles"] == ["core", "lexical"]
    assert (await driver.initialize(None))["profiles"] == ["core", "lexical"]


async def test_a_driver_with_another_ranker_claims_only_the_core_profile() -> None:
    assert (await ReferenceDriver(ranker=_OtherRanker()).initialize({}))["profiles"] == ["core"]


async def test_the_version_of_a_checkout_that_was_never_installed_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(_session, "version", missing)
    assert (await ReferenceDriver().initialize({}))["version"] == "0+unknown"


async def test_another_protocol_version_is_invalid_params() -> None:
    with pytest.raises(DriverError) as caught:
        await ReferenceDriver().initialize({"protocolVersion": "2"})
    assert (caught.value.kind, caught.value.code) == ("invalid_params", -32602)
    assert "protocolVersion '2' is not supported" in caught.value.message


@pytest.mark.e2e
async def test_a_run_opens_answers_definitions_calls_requests_and_closes_its_servers(tmp_path: Path) -> None:
    github = _server(tmp_path, "github")
    driver = ReferenceDriver()
    run_id = await driver.open_run(
        {
            "servers": [{"id": "github", "transport": github.transport(), "policy": {"maxActiveTools": 10}}],
            "baseTools": _base(2),
            "userMessage": "search the code",
            "systemPrompt": "You are helpful.",
        }
    )
    assert run_id == "run-1"
    definitions = await driver.definitions(run_id)
    assert [d["name"] for d in definitions] == [
        "base_000",
        "base_001",
        "search_mcp_tools",
        "github__search",
        "github__list_issues",
    ]
    result = await driver.call(run_id, "github__search", {"q": "x"})
    assert result == {"content": [{"type": "text", "text": "raw search ok"}], "isError": False}
    refused = await driver.call(run_id, "github__nope", {})
    assert refused["isError"] is True
    found = await driver.call(run_id, "search_mcp_tools", {"query": "anything"})
    assert found["structuredContent"] == {"activated": [], "activeCount": 2, "remainingCapacity": 112 - 2 - 1 - 2}
    extra = [{"name": "extra", "description": "", "inputSchema": {"type": "object"}}]
    assert await driver.request(run_id, extra) == [*definitions, *extra]
    assert await driver.request(run_id) == definitions
    with pytest.raises(RequestTooLargeError):
        await driver.request(run_id, _base(124))
    assert github.started
    assert not github.exited
    await driver.close_run(run_id)
    assert github.lines() == ["start", 'call search {"q": "x"}', "exit"]
    with pytest.raises(DriverError) as caught:
        await driver.definitions(run_id)
    assert caught.value.kind == "unknown_run"


@pytest.mark.e2e
async def test_omitted_run_fields_take_their_defaults(tmp_path: Path) -> None:
    driver = ReferenceDriver()
    run_id = await driver.open_run({"servers": [{"id": "s", "transport": _server(tmp_path, "s").transport()}]})
    assert [d["name"] for d in await driver.definitions(run_id)] == ["search_mcp_tools", "s__list_issues", "s__search"]
    empty = await driver.open_run({})
    assert await driver.definitions(empty) == []
    await driver.aclose()


@pytest.mark.parametrize(
    "server",
    [
        {},
        {"id": None},
        {"id": 5},
        {"id": ["gh"]},
        {"id": ""},
        {"id": "a__b"},
        {"id": "gíthub"},
        {"id": "a b"},
    ],
    ids=["missing", "null", "number", "list", "empty", "double-underscore", "non-ascii", "space"],
)
async def test_a_bad_server_id_is_a_configuration_error_and_starts_nothing(
    tmp_path: Path, server: dict[str, Any]
) -> None:
    good = _server(tmp_path, "good")
    bad = _server(tmp_path, "bad")
    servers = [{"id": "good", "transport": good.transport()}, {**server, "transport": bad.transport()}]
    with pytest.raises(ConfigurationError, match=r"servers\[1\]\.id"):
        await ReferenceDriver().open_run({"servers": servers})
    assert not good.started
    assert not bad.started


async def test_a_duplicate_server_id_is_a_configuration_error_and_starts_nothing(tmp_path: Path) -> None:
    first, second = _server(tmp_path, "first"), _server(tmp_path, "second")
    servers = [{"id": "gh", "transport": first.transport()}, {"id": "gh", "transport": second.transport()}]
    with pytest.raises(ConfigurationError, match=r"'gh' is used by another server"):
        await ReferenceDriver().open_run({"servers": servers})
    assert not first.started
    assert not second.started


@pytest.mark.parametrize(
    "policy",
    [
        {"maxActiveTools": "5"},
        {"maxActiveTools": 97},
        {"maxActiveTools": True},
        {"maxActiveTools": 2.0},
        {"mode": "some"},
        {"sideEffects": "none"},
        {"allowedTools": "search"},
        {"deniedTools": [1]},
        {"pinnedTools": {"a": 1}},
        {"limit": 3},
        ["auto"],
    ],
)
async def test_a_bad_policy_on_the_wire_is_a_configuration_error(tmp_path: Path, policy: Any) -> None:
    server = _server(tmp_path, "s")
    with pytest.raises(ConfigurationError, match=r"servers\[0\] \('s'\)\.policy"):
        await ReferenceDriver().open_run({"servers": [{"id": "s", "transport": server.transport(), "policy": policy}]})
    assert not server.started


def _stdio(**fields: Any) -> dict[str, Any]:
    return {"type": "stdio", "command": "python3", **fields}


_DEFINITION = {"name": "a", "description": "", "inputSchema": {}}


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"servers": {"id": "s"}}, "$.servers"),
        ({"servers": ["s"]}, "$.servers[0]"),
        ({"servers": [{"id": "s"}]}, "$.servers[0]"),
        ({"servers": [{"id": "s", "transport": "stdio"}]}, "$.servers[0].transport"),
        ({"servers": [{"id": "s", "transport": {"type": "ws"}}]}, "$.servers[0].transport.type"),
        ({"servers": [{"id": "s", "transport": {"type": "stdio"}}]}, "$.servers[0].transport"),
        ({"servers": [{"id": "s", "transport": _stdio(command=["python3"])}]}, "$.servers[0].transport.command"),
        ({"servers": [{"id": "s", "transport": _stdio(command="")}]}, "$.servers[0].transport.command"),
        ({"servers": [{"id": "s", "transport": _stdio(args="-m x")}]}, "$.servers[0].transport.args"),
        ({"servers": [{"id": "s", "transport": _stdio(args=["-m", 3])}]}, "$.servers[0].transport.args[1]"),
        ({"servers": [{"id": "s", "transport": _stdio(env=["A=1"])}]}, "$.servers[0].transport.env"),
        ({"servers": [{"id": "s", "transport": _stdio(env={"A": 1})}]}, "$.servers[0].transport.env.A"),
        ({"servers": [{"id": "s", "transport": {"type": "http"}}]}, "$.servers[0].transport"),
        ({"servers": [{"id": "s", "transport": {"type": "http", "url": "ftp://x"}}]}, "$.servers[0].transport.url"),
        ({"baseTools": {"name": "a"}}, "$.baseTools"),
        ({"baseTools": ["a"]}, "$.baseTools[0]"),
        ({"baseTools": [{"name": "a"}]}, "$.baseTools[0]"),
        ({"baseTools": [_DEFINITION | {"name": 3}]}, "$.baseTools[0].name"),
        ({"baseTools": [_DEFINITION | {"name": ""}]}, "$.baseTools[0].name"),
        ({"baseTools": [_DEFINITION | {"inputSchema": "object"}]}, "$.baseTools[0].inputSchema"),
        ({"userMessage": 3}, "$.userMessage"),
        ({"systemPrompt": None}, "$.systemPrompt"),
        ({"listTimeoutSeconds": 0}, "$.listTimeoutSeconds"),
        ({"listTimeoutSeconds": "5"}, "$.listTimeoutSeconds"),
        ({"listTimeoutSeconds": True}, "$.listTimeoutSeconds"),
        ({"listTimeoutSeconds": 86401}, "$.listTimeoutSeconds"),
        ({"callTimeoutSeconds": -1}, "$.callTimeoutSeconds"),
        ({"callTimeoutSeconds": float("inf")}, "$.callTimeoutSeconds"),
        (["servers"], "$"),
    ],
)
async def test_malformed_run_open_params_are_invalid_params_naming_the_path(params: Any, path: str) -> None:
    with pytest.raises(DriverError) as caught:
        await ReferenceDriver().open_run(params)
    assert (caught.value.kind, caught.value.code, caught.value.path) == ("invalid_params", -32602, path)
    assert caught.value.message.startswith(f"run.open: {path}: ")


@pytest.mark.e2e
async def test_a_stdio_transport_keeps_its_args_and_env(tmp_path: Path) -> None:
    server = _server(tmp_path, "s")
    transport = {**server.transport(), "env": {"EXAMPLE": "1"}}
    driver = ReferenceDriver()
    run_id = await driver.open_run({"servers": [{"id": "s", "transport": transport}]})
    assert len(await driver.definitions(run_id)) == 3
    await driver.close_run(run_id)


def _run_methods(driver: ReferenceDriver, run_id: Any) -> list[Any]:
    return [driver.definitions(run_id), driver.call(run_id, "x", {}), driver.request(run_id), driver.close_run(run_id)]


async def test_a_run_id_of_no_open_run_is_refused_as_unknown_run() -> None:
    for method in _run_methods(ReferenceDriver(), "run-99"):
        with pytest.raises(DriverError) as caught:
            await method
        assert (caught.value.kind, caught.value.code) == ("unknown_run", -32602)


@pytest.mark.parametrize("run_id", [5, None, ["run-1"]])
async def test_a_run_id_that_is_not_a_string_is_invalid_params(run_id: Any) -> None:
    for method in _run_methods(ReferenceDriver(), run_id):
        with pytest.raises(DriverError) as caught:
            await method
        assert (caught.value.kind, caught.value.code, caught.value.path) == ("invalid_params", -32602, "$.runId")


@pytest.mark.e2e
async def test_call_and_request_params_are_checked_against_the_schema(tmp_path: Path) -> None:
    driver = ReferenceDriver()
    run_id = await driver.open_run({"servers": [{"id": "s", "transport": _server(tmp_path, "s").transport()}]})
    bad_calls = [((7, {}), "$.name"), (("s__search", ["q"]), "$.arguments")]
    for (name, arguments), path in bad_calls:
        with pytest.raises(DriverError) as caught:
            await driver.call(run_id, name, arguments)
        assert (caught.value.kind, caught.value.path) == ("invalid_params", path)
    for extra, path in (([_DEFINITION | {"name": None}], "$.extraTools[0].name"), (None, "$.extraTools")):
        with pytest.raises(DriverError) as caught:
            await driver.request(run_id, extra)
        assert (caught.value.kind, caught.value.path) == ("invalid_params", path)
    assert (await driver.call(run_id, "s__search", None))["isError"] is False
    await driver.aclose()


@pytest.mark.e2e
async def test_a_failed_open_reports_its_error_after_every_started_server_has_exited(tmp_path: Path) -> None:
    healthy = _server(tmp_path, "healthy")
    gone = _server(tmp_path, "gone", exit_at_start=True)
    crowded = _server(tmp_path, "crowded", tool("a"), tool("b"), tool("c"))
    driver = ReferenceDriver()
    cases: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"servers": [{"id": "h", "transport": healthy.transport()}], "baseTools": _base(96)}, SelectionError),
        (
            {
                "servers": [
                    {"id": "h", "transport": healthy.transport()},
                    {"id": "c", "transport": crowded.transport(), "policy": {"mode": "all", "maxActiveTools": 2}},
                ]
            },
            SelectionError,
        ),
        (
            {"servers": [{"id": "h", "transport": healthy.transport(), "policy": {"pinnedTools": ["ghost"]}}]},
            ConfigurationError,
        ),
        (
            {"servers": [{"id": "h", "transport": healthy.transport()}, {"id": "g", "transport": gone.transport()}]},
            ServerConnectionError,
        ),
    ]
    for params, error in cases:
        with pytest.raises(error):
            await driver.open_run(params)
        started = {log.stem: log.read_text(encoding="utf-8").splitlines() for log in tmp_path.glob("*.log")}
        assert "healthy" in started
        assert all(lines == ["start", "exit"] for lines in started.values()), started
        for log in tmp_path.glob("*.log"):
            log.unlink()


async def test_an_http_server_that_refuses_connections_is_a_connection_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        with pytest.raises(ServerConnectionError, match=r"server 'web'"):
            await ReferenceDriver().open_run({"servers": [{"id": "web", "transport": {"type": "http", "url": url}}]})


@pytest.mark.e2e
async def test_runs_are_isolated_and_closing_the_driver_closes_every_run(tmp_path: Path) -> None:
    servers = [_server(tmp_path, f"s{i}", *(tool(f"t{j:02d}", "widget") for j in range(14))) for i in range(2)]
    driver = ReferenceDriver()
    first = await driver.open_run({"servers": [{"id": "s", "transport": servers[0].transport()}]})
    second = await driver.open_run({"servers": [{"id": "s", "transport": servers[1].transport()}]})
    assert first != second
    before = await driver.definitions(second)
    found = await driver.call(first, "search_mcp_tools", {"query": "widget"})
    assert [t["name"] for t in found["structuredContent"]["activated"]] == ["s__t12", "s__t13"]
    assert await driver.definitions(second) == before
    assert (await driver.call(second, "s__t12", {}))["isError"] is True
    assert (await driver.call(first, "s__t12", {}))["isError"] is False
    await driver.aclose()
    assert all(server.exited for server in servers)
    with pytest.raises(DriverError):
        await driver.definitions(first)


@pytest.mark.e2e
async def test_a_call_past_call_timeout_seconds_is_an_error_result_and_the_run_goes_on(tmp_path: Path) -> None:
    server = _server(tmp_path, "s", tool("stuck"), tool("search"), hang_on="stuck")
    driver = ReferenceDriver()
    run_id = await driver.open_run(
        {"servers": [{"id": "s", "transport": server.transport()}], "callTimeoutSeconds": 0.2}
    )
    hung = await driver.call(run_id, "s__stuck", {})
    assert hung == {
        "content": [{"type": "text", "text": "server 's' did not answer 'stuck' within 0.2 s"}],
        "isError": True,
    }
    assert (await driver.call(run_id, "s__search", {}))["isError"] is False
    await driver.aclose()
    assert server.lines() == ["start", "hang stuck", "call search {}", "exit"]


@pytest.mark.e2e
async def test_without_call_timeout_seconds_the_driver_applies_its_own_limit(tmp_path: Path) -> None:
    server = _server(tmp_path, "s", tool("stuck"), hang_on="stuck")
    driver = ReferenceDriver(call_timeout=0.2)
    run_id = await driver.open_run({"servers": [{"id": "s", "transport": server.transport()}]})
    assert "within 0.2 s" in (await driver.call(run_id, "s__stuck", {}))["content"][0]["text"]
    await driver.aclose()
    assert ReferenceDriver().call_timeout == 20.0


async def test_a_run_beyond_the_drivers_limit_is_a_connection_error_saying_so_and_the_open_ones_stay() -> None:
    driver = ReferenceDriver(max_runs=2)
    opened = [await driver.open_run({"servers": []}) for _ in range(2)]

    with pytest.raises(ServerConnectionError) as refused:
        await driver.open_run({"servers": []})

    assert refused.value.message == (
        "this driver has 2 runs open, its limit; close a run (run.close) before opening another"
    )
    assert [await driver.definitions(run_id) for run_id in opened] == [[], []]
    await driver.close_run(opened[0])
    assert await driver.open_run({"servers": []}) == "run-3"
    await driver.aclose()


async def test_requests_naming_a_run_still_being_opened_wait_for_it_and_keep_their_order(tmp_path: Path) -> None:
    server = raw_server(tmp_path, "s", [[tool("a")]])
    driver = ReferenceDriver()
    opening = asyncio.create_task(driver.open_run({"servers": [{"id": "s", "transport": server.transport()}]}))
    await asyncio.sleep(0)  # run.open has taken its id and is connecting
    listed = asyncio.create_task(driver.definitions("run-1"))
    closed = asyncio.create_task(driver.close_run("run-1"))
    late = asyncio.create_task(driver.definitions("run-1"))

    assert await opening == "run-1"
    assert [tool["name"] for tool in await listed] == ["search_mcp_tools", "s__a"]
    await closed
    with pytest.raises(DriverError, match="no open run with runId 'run-1'"):
        await late
    assert server.exited
