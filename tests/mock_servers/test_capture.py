"""``mcp-fleet capture``: a real server's tools, snapshotted into a spec and served again."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mock_servers import (
    CaptureError,
    FleetHost,
    generate_tools,
    load_spec,
    preset,
    read_ledger,
    stdio_params,
)
from mock_servers._capture import capture, captured_spec, guess_domain
from mock_servers._cli import main
from tests.mock_servers.capture_target import TOOLS
from tests.mock_servers.mock_fleet_helpers import run_ts_client

TARGET = [sys.executable, str(Path(__file__).with_name("capture_target.py"))]


def capture_cli(out: Path, *args: str) -> int:
    return main(["capture", "--out", str(out), *args])


@pytest.mark.e2e
def test_a_captured_stdio_server_lists_exactly_the_same_tools_to_the_typescript_client(
    node: str, tmp_path: Path
) -> None:
    out = tmp_path / "desk.json"
    assert capture_cli(out, "--", *TARGET) == 0
    spec = load_spec(out)
    [server] = spec.servers
    assert (server.id, server.page_size, server.raw) == ("Ticket-Desk", 3, False)
    assert generate_tools(server) == TOOLS

    search = TOOLS[0]
    original = run_ts_client(node, "stdio", *TARGET, tool=search)
    ledger = tmp_path / "ledger.jsonl"
    params = stdio_params(out, server.id, ledger)
    replay = run_ts_client(node, "stdio", params.command, *params.args, tool=search, child_env=params.env)
    assert replay["definitions"] == original["definitions"]
    assert (replay["pages"], original["pages"]) == (3, 3)
    # The TypeScript client checks structuredContent against the output schema: the made-up result passes.
    assert replay["call"]["isError"] is False
    assert set(replay["call"]["structuredContent"]) >= {"tickets", "total"}
    assert read_ledger(ledger).listed_pages(server.id) == [0, 1, 2]


@pytest.mark.e2e
def test_recorded_calls_are_replayed_and_writes_need_leave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "desk.json"
    assert capture_cli(out, "--call", 'close_ticket={"id": 4}', "--", *TARGET) == 1
    assert "not marked readOnlyHint: true; pass --allow-writes" in capsys.readouterr().err
    assert not out.exists()
    calls = ["--call", 'get_ticket={"id": 4}', "--call", 'close_ticket={"id": 4}', "--allow-writes", "--sample", "5"]
    assert capture_cli(out, *calls, "--", *TARGET) == 0
    tools = {t.name: t for t in load_spec(out).servers[0].tools}
    assert [s["arguments"] for s in tools["get_ticket"].samples] == [{"id": 4}]
    assert tools["close_ticket"].samples[0]["result"]["content"] == [{"type": "text", "text": "real close_ticket"}]
    # --sample calls read-only tools that need no arguments, and only those.
    assert [s["arguments"] for s in tools["ping_upstream"].samples] == [{}]
    assert not tools["who_am_i"].samples and not tools["export_report"].samples


@pytest.mark.e2e
def test_a_raw_server_is_captured_with_its_non_boolean_hints_and_replayed_raw(tmp_path: Path) -> None:
    liar = preset("adversarial").server("raw-liar")
    original = generate_tools(liar)
    assert {t.get("annotations", {}).get("readOnlyHint") for t in original} >= {"true", 1}
    out = tmp_path / "liar.json"
    params = stdio_params("adversarial", "raw-liar")
    assert capture_cli(out, "--", params.command, *params.args) == 0
    [server] = load_spec(out).servers
    assert server.raw is True
    assert generate_tools(server) == original
    # Captured again from the replay, the tools are the same JSON values.
    replay = stdio_params(load_spec(out), server.id)
    again = anyio.run(lambda: capture([replay.command, *replay.args]))
    assert again.tools == original


@pytest.mark.e2e
def test_a_server_over_http_is_captured_with_its_pages(fleet_host: FleetHost, tmp_path: Path) -> None:
    spec = preset("seed-example")
    urls = fleet_host.add_fleet(spec)
    try:
        out = tmp_path / "linear.json"
        assert capture_cli(out, "--url", urls["linear"], "--id", "tracker") == 0
    finally:
        fleet_host.remove_fleet(urls)
    [server] = load_spec(out).servers
    assert (server.id, server.domain, server.page_size) == ("tracker", "issue_tracker", 20)
    assert generate_tools(server) == generate_tools(spec.server("linear"))


@pytest.mark.e2e
def test_append_adds_the_server_to_an_existing_fleet(tmp_path: Path) -> None:
    out = tmp_path / "fleet.json"
    out.write_text(json.dumps({"seed": 4, "servers": [{"id": "github", "tool_count": 3}]}))
    assert capture_cli(out, "--append", "--id", "desk", "--", *TARGET) == 0
    spec = load_spec(out)
    assert [s.id for s in spec.servers] == ["github", "desk"]
    assert spec.seed == 4


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--", sys.executable, "-c", "pass"], "the server closed the connection"),
        (["--", "/nonexistent/server"], "could not start or reach the server"),
        (["--timeout", "20", "--", *TARGET, "loop"], "handed out the cursor '3' again: the listing loops"),
    ],
    ids=["exits-at-once", "missing-command", "cursor-loop"],
)
def test_a_server_that_cannot_be_captured_exits_1_with_the_reason(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.json"
    assert capture_cli(out, *args) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "http://127.0.0.1:9/mcp", "--", "cmd"], "give either -- CMD ARGS... (stdio) or --url URL"),
        ([], "give either -- CMD ARGS... (stdio) or --url URL"),
        (["--call", "get_ticket={oops", "--", "cmd"], "expected TOOL or TOOL={json object of arguments}"),
    ],
)
def test_a_bad_capture_command_line_exits_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "--out", "x.json", *args]) == 2
    assert message in capsys.readouterr().err


def test_a_toml_output_is_refused_because_toml_has_no_null(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "--out", "x.toml", "--", "cmd"]) == 2
    assert "captured specs are JSON" in capsys.readouterr().err


def test_the_domain_is_guessed_from_the_tool_names() -> None:
    def named(*names: str) -> list[dict[str, Any]]:
        return [{"name": n} for n in names]

    assert guess_domain(named("list_channels", "send_message", "add_reaction")) == "chat"
    assert guess_domain(named("run_sql_query", "list_datasets")) == "data_platform"
    assert guess_domain(named("frobnicate")) == "code_hosting"


@pytest.mark.e2e
def test_a_bad_server_id_is_refused() -> None:
    with pytest.raises(CaptureError, match="server id 'a b'"):
        captured_spec(anyio.run(lambda: capture(TARGET)), server_id="a b")
