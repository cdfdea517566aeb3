"""``mcp-fleet capture``: a real server's tools, snapshotted into a spec and served again."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mock_servers import (
    CaptureError,
    FleetHost,
    ServerSpec,
    call_result,
    generate_tools,
    load_spec,
    preset,
    read_ledger,
    stdio_params,
)
from mock_servers._capture import capture, captured_spec, guess_domain
from mock_servers._cli import main
from mock_servers._vocabulary import DOMAINS
from tests.mock_servers.capture_target import TOOLS
from tests.mock_servers.mock_fleet_helpers import run_ts_client

TARGET = [sys.executable, str(Path(__file__).with_name("capture_target.py"))]
MCPSERVER_TARGET = [sys.executable, str(Path(__file__).with_name("capture_mcpserver.py"))]
STRICT = [sys.executable, str(Path(__file__).with_name("strict_server.py"))]
#: The official reference server, pinned: capture must work on the servers people run.
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"


def capture_cli(out: Path, *args: str) -> int:
    return main(["capture", "--out", str(out), *args])


@pytest.mark.slow
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
    # Verbs are no evidence: closing and getting tickets is not browsing.
    assert guess_domain(TOOLS) == "issue_tracker"
    assert guess_domain(named("getTicket", "closeTicket", "list-tickets")) == "issue_tracker"


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_the_guess_recovers_the_domain_of_every_generated_server(domain: str) -> None:
    for seed in range(3):
        tools = generate_tools(ServerSpec(id="s", domain=domain, tool_count=10, seed=seed))
        assert guess_domain(tools) == domain, [t["name"] for t in tools]


@pytest.mark.e2e
def test_unrecorded_calls_of_a_captured_tool_honour_its_limit_and_filters(tmp_path: Path) -> None:
    out = tmp_path / "desk.json"
    assert capture_cli(out, "--", *TARGET) == 0
    [server] = load_spec(out).servers
    assert server.domain == "issue_tracker"
    # One tool with an output schema, one without (its result is shaped by its name).
    for tool, limit, given in (("search_tickets", "limit", {"q": "printer"}), ("listTickets", "maxResults", {})):
        for n in (0, 1, 2):
            listed = call_result(server, tool, {**given, limit: n, "status": "pending"})["structuredContent"]
            assert len(listed["tickets"]) <= n
            assert all(ticket["status"] == "pending" for ticket in listed["tickets"])
        unbounded = call_result(server, tool, {**given, "status": "closed"})["structuredContent"]["tickets"]
        assert unbounded and all(ticket["status"] == "closed" for ticket in unbounded)


@pytest.mark.e2e
def test_requests_without_params_carry_no_params_member(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    captured = anyio.run(lambda: capture([*STRICT, str(log)], timeout=30))
    assert [t["name"] for t in captured.tools] == ["echo"]
    received = [json.loads(line) for line in log.read_text().splitlines()]
    assert [m["method"] for m in received] == ["initialize", "notifications/initialized", "tools/list"]
    assert "params" not in received[2]
    assert all(m.get("params", {}) is not None for m in received)


@pytest.mark.e2e
def test_a_time_out_says_what_was_sent_and_what_came_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.json"
    assert capture_cli(out, "--timeout", "1", "--", *STRICT, str(tmp_path / "log"), "silent") == 1
    err = capsys.readouterr().err
    assert (
        'tools/list: the server did not answer within 1 s; sent {"jsonrpc":"2.0","id":2,"method":"tools/list"}' in err
    )
    assert "meanwhile it sent: notifications/tools/list_changed" in err
    assert not out.exists()


@pytest.mark.e2e
def test_a_server_written_with_the_sdks_mcpserver_is_captured(tmp_path: Path) -> None:
    out = tmp_path / "helpdesk.json"
    assert capture_cli(out, "--", *MCPSERVER_TARGET) == 0
    [server] = load_spec(out).servers
    assert server.id == "Helpdesk"
    assert [t["name"] for t in generate_tools(server)] == ["list_tickets", "add"]
    listed = call_result(server, "list_tickets", {"queue": "billing", "limit": 1})
    assert listed["isError"] is False


@pytest.fixture(scope="session")
def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        pytest.skip("npx is not installed: the official everything server runs with it")
    return found


@pytest.mark.e2e
def test_the_official_everything_server_is_captured_and_served_again(npx: str, tmp_path: Path) -> None:
    out = tmp_path / "everything.json"
    # The first run downloads the package before the server answers: a long time-out.
    assert capture_cli(out, "--timeout", "180", "--", npx, "-y", EVERYTHING, "stdio") == 0
    [server] = load_spec(out).servers
    tools = generate_tools(server)
    assert {"echo", "get-sum"} <= {t["name"] for t in tools}
    replay = stdio_params(load_spec(out), server.id)
    again = anyio.run(lambda: capture([replay.command, *replay.args]))
    assert again.tools == tools


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "0"], "--timeout 0: expected a number of seconds above 0 and at most 86400"),
        (["--timeout", "-1"], "--timeout -1: expected a number of seconds above 0"),
        (["--timeout", "nan"], "--timeout nan: expected a number of seconds above 0"),
        (["--timeout", "1e308"], "--timeout 1e+308: expected a number of seconds above 0 and at most 86400"),
        (["--sample", "-3"], "--sample -3: expected a number of calls, 0 or more"),
    ],
)
def test_an_option_out_of_range_is_refused_before_the_server_starts(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "received.jsonl"
    assert main(["capture", "--out", str(tmp_path / "x.json"), *args, "--", *STRICT, str(log)]) == 2
    assert message in capsys.readouterr().err
    assert not log.exists()  # the server was never started


def test_an_output_in_a_missing_directory_is_refused_before_the_server_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "received.jsonl"
    out = tmp_path / "missing" / "desk.json"
    assert main(["capture", "--out", str(out), "--", *STRICT, str(log)]) == 2
    assert f"--out {out}: the directory {out.parent} does not exist" in capsys.readouterr().err
    assert main(["capture", "--out", str(tmp_path), "--", *STRICT, str(log)]) == 2
    assert "captured specs are JSON" in capsys.readouterr().err
    (tmp_path / "dir.json").mkdir()
    assert main(["capture", "--out", str(tmp_path / "dir.json"), "--", *STRICT, str(log)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert not log.exists()


@pytest.mark.e2e
def test_a_bad_server_id_is_refused() -> None:
    with pytest.raises(CaptureError, match="server id 'a b'"):
        captured_spec(anyio.run(lambda: capture(TARGET)), server_id="a b")
