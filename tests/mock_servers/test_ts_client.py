"""A client this project did not write: the official TypeScript SDK (npm @modelcontextprotocol/sdk)."""

from __future__ import annotations

import json
import shutil
import subprocess
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

NODE_DIR = Path(__file__).parent / "node"
SERVER = ServerSpec(id="github", tool_count=23, page_size=10, seed=3)
FLEET = FleetSpec(servers=(SERVER,))


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: the TypeScript SDK client check needs them")
    if not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, timeout=300, capture_output=True
        )
    return node


def run_ts_client(node: str, *target: str, child_env: dict[str, str] | None = None) -> dict[str, Any]:
    tool = generate_tools(SERVER)[0]
    env = {"TOOL": tool["name"], "ARGS": json.dumps(example_arguments(tool)), "CHILD_ENV": json.dumps(child_env or {})}
    done = subprocess.run(
        [node, "ts_client.mjs", *target],
        cwd=NODE_DIR,
        env={**env, "PATH": str(Path(node).parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def expected_tools() -> list[list[Any]]:
    return [[t["name"], t.get("annotations")] for t in generate_tools(SERVER)]


def test_the_typescript_client_lists_every_page_and_calls_a_stdio_server(node: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    params = stdio_params(FLEET, "github", ledger)
    assert params.env is not None
    result = run_ts_client(node, "stdio", params.command, *params.args, child_env=params.env)
    assert result["pages"] == 3
    assert result["tools"] == expected_tools()
    assert result["call"]["isError"] is False
    # Made in another process, the result is the one made here for the same call.
    tool = generate_tools(SERVER)[0]
    assert {k: result["call"].get(k) for k in ("content", "structuredContent", "isError")} == call_result(
        SERVER, tool["name"], example_arguments(tool)
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
        result = run_ts_client(node, "http", urls["github"])
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
