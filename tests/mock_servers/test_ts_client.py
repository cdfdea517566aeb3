"""A client this project did not write: the official TypeScript SDK (npm @modelcontextprotocol/sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mock_servers import (
    FleetHost,
    FleetSpec,
    ServerSpec,
    call_result,
    example_arguments,
    generate_tools,
    read_ledger,
    stdio_params,
)
from tests.mock_servers.mock_fleet_helpers import run_ts_client

pytestmark = pytest.mark.e2e

SERVER = ServerSpec(id="github", tool_count=23, page_size=10, seed=3)
FLEET = FleetSpec(servers=(SERVER,))
TOOL = generate_tools(SERVER)[0]


def expected_tools() -> list[list[Any]]:
    return [[t["name"], t.get("annotations")] for t in generate_tools(SERVER)]


def test_the_typescript_client_lists_every_page_and_calls_a_stdio_server(node: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    params = stdio_params(FLEET, "github", ledger)
    assert params.env is not None
    result = run_ts_client(node, "stdio", params.command, *params.args, tool=TOOL, child_env=params.env)
    assert result["pages"] == 3
    assert result["tools"] == expected_tools()
    assert result["call"]["isError"] is False
    # Made in another process, the result is the one made here for the same call.
    assert {k: result["call"].get(k) for k in ("content", "structuredContent", "isError")} == call_result(
        SERVER, TOOL["name"], example_arguments(TOOL)
    )
    view = read_ledger(ledger)
    assert view.listed_pages("github") == [0, 1, 2]
    assert view.of("initialized")[0]["protocolVersion"] == "2025-11-25"
    assert view.processes_alive() == []


def test_the_typescript_client_lists_every_page_and_calls_the_http_fleet(
    node: str, fleet_host: FleetHost, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    urls = fleet_host.add_fleet(FLEET, ledger)
    try:
        result = run_ts_client(node, "http", urls["github"], tool=TOOL)
    finally:
        fleet_host.remove_fleet(urls)
    assert result["protocol"] == "2025-11-25"
    assert result["pages"] == 3
    assert result["tools"] == expected_tools()
    assert result["call"]["isError"] is False
    view = read_ledger(ledger)
    assert len(view.calls("github")) == 1
    # The v1 client does not DELETE its session on close: the session ended with the fleet.
    [opened] = view.of("session_opened", "github")
    assert [e["sessionId"] for e in view.of("session_closed", "github")] == [opened["sessionId"]]
