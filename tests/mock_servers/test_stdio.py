"""Servers as stdio subprocesses: process lifecycle, process-level faults, raw wire output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mock_servers import Faults, FleetSpec, ServerSpec, example_arguments, generate_tools, read_ledger, stdio_params
from tests.mock_servers.mock_fleet_helpers import list_all

GITHUB = ServerSpec(id="github", tool_count=30, page_size=12, seed=9)
RAW = ServerSpec(
    id="raw",
    domain="cloud",
    tool_count=8,
    page_size=3,
    raw=True,
    faults=Faults(read_only_hint_string=1, read_only_hint_number=1),
)
FLEET = FleetSpec(servers=(GITHUB, RAW))


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["auto", pytest.param("legacy", marks=pytest.mark.slow)])
@pytest.mark.parametrize("server", [GITHUB, RAW], ids=["sdk", "raw"])
async def test_a_stdio_server_lists_calls_and_records_its_whole_life(
    server: ServerSpec, mode: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    tool = generate_tools(server)[0]
    async with Client(stdio_params(FLEET, server.id, ledger), mode=mode) as client:
        tools = await list_all(client)
        result = await client.call_tool(tool["name"], example_arguments(tool))
    assert len(tools) == server.tool_count
    assert result.is_error is False
    view = read_ledger(ledger)
    assert [e["event"] for e in view if e["event"] != "fault"] == [
        "process_started",
        "session_opened",
        "discovered" if mode == "auto" else "initialized",
        *["tools_listed"] * -(-server.tool_count // server.page_size),
        "tool_called",
        "session_closed",
        "process_exit",
    ]
    assert view.every_session_closed()
    assert view.processes_alive() == []


@pytest.mark.e2e
async def test_a_server_that_fails_to_start_exits_at_once_with_status_1(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = FleetSpec(servers=(ServerSpec(id="dead", faults=Faults(fail_to_start=True)),))
    params = stdio_params(spec, "dead", ledger)
    done = subprocess.run([params.command, *params.args], env=params.env, capture_output=True, timeout=60)
    assert done.returncode == 1
    assert b"fail_to_start" in done.stderr
    view = read_ledger(ledger)
    assert [e["event"] for e in view] == ["process_started", "fault", "process_exit"]
    assert view.of("process_exit")[0]["code"] == 1


@pytest.mark.e2e
async def test_crash_on_list_ends_the_process_during_the_listing(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = FleetSpec(servers=(ServerSpec(id="s", tool_count=6, page_size=3, faults=Faults(crash_on_list=1)),))
    async with Client(stdio_params(spec, "s", ledger)) as client:
        first = await client.list_tools()
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor=first.next_cursor)
    assert caught.value.code == types.CONNECTION_CLOSED
    view = read_ledger(ledger)
    assert view.faults("s", "crash_on_list")[0]["page"] == 1
    assert view.of("process_exit")[0]["reason"] == "crash_on_list"
    assert view.processes_alive() == []


@pytest.mark.e2e
async def test_drop_mid_call_ends_the_process_after_the_call_arrived(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=3, faults=Faults(drop_mid_call=("*",)))
    tool = generate_tools(server)[1]
    async with Client(stdio_params(FleetSpec(servers=(server,)), "s", ledger), mode="legacy") as client:
        await list_all(client)
        with pytest.raises(MCPError) as caught:
            await client.call_tool(tool["name"], example_arguments(tool))
    assert caught.value.code == types.CONNECTION_CLOSED
    view = read_ledger(ledger)
    assert [c["name"] for c in view.calls("s")] == [tool["name"]]
    assert view.of("process_exit")[0]["reason"] == "drop_mid_call"


@pytest.mark.e2e
async def test_a_hanging_listing_still_lets_the_client_close_the_server(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = FleetSpec(servers=(ServerSpec(id="s", tool_count=3, faults=Faults(hang_on_list=0)),))
    async with Client(stdio_params(spec, "s", ledger), read_timeout_seconds=0.3) as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools()
    assert caught.value.code == types.REQUEST_TIMEOUT
    view = read_ledger(ledger)
    assert view.of("process_exit")[0]["reason"] == "stdin closed"
    assert view.processes_alive() == []


@pytest.mark.e2e
def test_a_raw_server_sends_non_boolean_read_only_hints_verbatim(tmp_path: Path) -> None:
    params = stdio_params(FLEET, "raw")
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *(
            {"jsonrpc": "2.0", "id": 2 + n, "method": "tools/list", "params": {"cursor": c}}
            for n, c in enumerate([None])
        ),
    ]
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run(
        [params.command, *params.args], env=params.env, input=lines.encode(), capture_output=True, timeout=60
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"
    tools = answers[1]["result"]["tools"]
    assert tools == generate_tools(RAW)[:3]
    all_hints = [t.get("annotations", {}).get("readOnlyHint") for t in generate_tools(RAW)]
    assert "true" in all_hints and any(h == 1 and h is not True for h in all_hints)


def test_stdio_params_use_this_interpreter_and_carry_the_package_path() -> None:
    params = stdio_params("seed-example", "github", "ledger.jsonl")
    assert params.args[:5] == ["-m", "mock_servers", "stdio", "seed-example", "--server-id"]
    assert params.env is not None and Path(params.env["PYTHONPATH"], "mock_servers", "__init__.py").exists()
    assert Path(params.args[-1]).is_absolute()


@pytest.mark.e2e
@pytest.mark.parametrize("raw", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["sdk", "raw"])
def test_a_client_dying_mid_call_ends_the_server_quietly_with_a_record(raw: bool, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = ServerSpec(id="s", tool_count=2, raw=raw, faults=Faults(slow=60))
    params = stdio_params(FleetSpec(servers=(server,)), "s", ledger)
    process = subprocess.Popen(
        [params.command, *params.args],
        env=params.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    tool = generate_tools(server)[0]
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool["name"], "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    process.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
    process.stdin.flush()
    answered = [json.loads(process.stdout.readline())["id"] for _ in range(2)]
    assert answered == [1, 3]  # the call is under way, delayed by the `slow` fault
    process.stdout.close()
    process.stdin.close()

    assert process.wait(30) == 0
    assert b"Traceback" not in process.stderr.read()
    process.stderr.close()
    exits = read_ledger(ledger).of("process_exit")
    assert [e["reason"] for e in exits] in (["client gone"], ["stdin closed"], ["stdout closed"])


def _start(ledger: Path) -> subprocess.Popen[bytes]:
    params = stdio_params("seed-example", "github", ledger)
    return subprocess.Popen(
        [params.command, *params.args], env=params.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


def _exchange(process: subprocess.Popen[bytes], *messages: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    process.stdin.flush()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


@pytest.mark.e2e
@pytest.mark.parametrize("depth", [199, *(pytest.param(d, marks=pytest.mark.slow) for d in (250, 900))])
def test_a_call_nested_deeper_than_the_server_reads_is_answered_with_an_error(tmp_path: Path, depth: int) -> None:
    process = _start(tmp_path / "ledger.jsonl")
    assert process.stdout is not None and process.stdin is not None
    deep: object = 1
    for _ in range(depth):
        deep = {"a": deep}
    try:
        _exchange(process, INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert json.loads(process.stdout.readline())["id"] == 1
        call = {"name": "get_branch", "arguments": {"deep": deep}}
        _exchange(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        refused = json.loads(process.stdout.readline())
        _exchange(process, {"jsonrpc": "2.0", "id": 3, "method": "ping"})
        after = json.loads(process.stdout.readline())
    finally:
        process.stdin.close()
        process.wait(30)
        process.stdout.close()

    assert refused["id"] == 2 and refused["error"]["code"] == -32600, refused
    assert after == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.e2e
def test_a_server_whose_stdout_the_client_closed_exits_and_records_why(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    process = _start(ledger)
    assert process.stdout is not None and process.stdin is not None
    _exchange(process, INITIALIZE)
    assert json.loads(process.stdout.readline())["id"] == 1

    process.stdout.close()  # its stdin stays open

    assert process.wait(30) == 0
    process.stdin.close()
    assert [e["reason"] for e in read_ledger(ledger).of("process_exit")] == ["stdout closed"]
