"""``python -m reference_impl.driver``: JSON-RPC lines on stdin and stdout, in process and as a child process."""

from __future__ import annotations

import io
import json
import math
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from mock_servers import Faults, FleetSpec, ServerSpec, read_ledger, stdio_params
from reference_impl.driver import ReferenceDriver
from reference_impl.driver.__main__ import Server, main, serve
from reference_impl.driver._session import InitializeResult

from ..servers import RawServer, raw_server, tool

REPO = Path(__file__).resolve().parents[3]


def _request(method: str, params: Any = None, request_id: Any = 1) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def _open_params(server: RawServer, **fields: Any) -> dict[str, Any]:
    return {"servers": [{"id": "s", "transport": server.transport()}], **fields}


def _definitions(prefix: str, count: int) -> list[dict[str, Any]]:
    return [{"name": f"{prefix}{i}", "description": "", "inputSchema": {"type": "object"}} for i in range(count)]


# In process: every branch of the request handler.


@pytest.mark.parametrize("line", ["not json", "{", '{"jsonrpc": "2.0", "method": }', "\ufffd", "\ud800"])
async def test_a_line_that_is_not_json_is_a_parse_error(line: str) -> None:
    answer = await Server(ReferenceDriver()).handle(line)
    assert answer is not None
    assert answer["id"] is None
    assert answer["error"]["code"] == -32700


@pytest.mark.parametrize(
    "line",
    [
        b"\xff\xfe{}",
        b'{"jsonrpc": "2.0", "id": "\xc3", "method": "initialize"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": NaN}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": -Infinity}}',
        b'{"jsonrpc": "2.0", "id": 1e400, "method": "initialize"}',
        b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "initialize"}',
        b"[" * 1000,
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["not-utf-8", "torn-utf-8", "nan", "infinity", "overflow", "huge-integer", "deep", "deep-closed"],
)
async def test_a_line_that_is_not_utf8_json_is_a_parse_error(line: bytes) -> None:
    answer = await Server(ReferenceDriver()).handle(line)
    assert answer is not None
    assert (answer["id"], answer["error"]["code"]) == (None, -32700)
    assert len(answer["error"]["message"]) < 300


@pytest.mark.parametrize("line", ["[]", "[1, 2]", json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "initialize"}])])
async def test_a_batch_is_one_invalid_request_error(line: str) -> None:
    answer = await Server(ReferenceDriver()).handle(line)
    assert answer == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "batches are not supported; send one request per line"},
    }


@pytest.mark.parametrize(
    "notification",
    [
        {"method": "initialize"},
        {"method": "no.such.method"},
        {"method": "run.definitions", "params": {"runId": "run-9"}},
        {"method": "run.open", "params": {"servers": "nope"}},
        {"method": "run.open", "params": [1]},
        {"method": "shutdown"},
    ],
)
async def test_a_notification_gets_no_answer_even_when_it_would_fail(notification: dict[str, Any]) -> None:
    server = Server(ReferenceDriver())
    assert await server.handle(json.dumps({"jsonrpc": "2.0", **notification})) is None
    assert not server.done


@pytest.mark.e2e
async def test_a_notification_is_never_executed(tmp_path: Path) -> None:
    raw = raw_server(tmp_path, "s", [[tool("a")]])
    driver = ReferenceDriver()
    server = Server(driver)
    assert (
        await server.handle(json.dumps({"jsonrpc": "2.0", "method": "run.open", "params": _open_params(raw)})) is None
    )
    opened = await server.handle(_request("run.open", _open_params(raw)))
    assert opened is not None
    assert opened["result"] == {"runId": "run-1"}
    await driver.aclose()
    assert raw.lines() == ["start", "exit"]


async def test_an_id_of_another_type_is_an_invalid_request_answered_with_a_null_id() -> None:
    answer = await Server(ReferenceDriver()).handle(json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}))
    assert answer is not None
    assert (answer["id"], answer["error"]["code"]) == (None, -32600)


async def test_an_unknown_method_is_quoted_only_in_part() -> None:
    answer = await Server(ReferenceDriver()).handle(_request("x" * 10_000_000, {}, 1))
    assert answer is not None
    assert answer["error"]["code"] == -32601
    assert len(json.dumps(answer)) < 400


async def test_invalid_params_carry_the_json_path_in_their_data() -> None:
    answer = await Server(ReferenceDriver()).handle(_request("run.open", {"servers": [{"transport": {"type": "x"}}]}))
    assert answer is not None
    assert answer["error"]["data"]["path"] == "$.servers[0].transport.type"
    assert answer["error"]["message"].startswith("run.open: $.servers[0].transport.type: 'x' is not one of")


@pytest.mark.parametrize(
    ("message", "request_id"),
    [
        (5, None),
        ("initialize", None),
        ({"jsonrpc": "1.0", "id": 3, "method": "initialize"}, 3),
        ({"id": 4, "method": "initialize"}, 4),
        ({"jsonrpc": "2.0", "id": 5}, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": 7}, 6),
    ],
)
async def test_a_message_that_is_not_a_request_object_is_an_invalid_request(message: Any, request_id: Any) -> None:
    answer = await Server(ReferenceDriver()).handle(json.dumps(message))
    assert answer == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32600, "message": "expected a JSON-RPC 2.0 request object with a string 'method'"},
    }


async def test_an_unknown_method_is_method_not_found() -> None:
    answer = await Server(ReferenceDriver()).handle(_request("run.explode", {}, 9))
    assert answer == {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "unknown method 'run.explode'"}}


@pytest.mark.parametrize("params", [[1], "x", 3])
async def test_params_that_are_not_an_object_are_invalid_params(params: Any) -> None:
    answer = await Server(ReferenceDriver()).handle(_request("initialize", params))
    assert answer is not None
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"]["kind"] == "invalid_params"


async def test_null_or_missing_params_count_as_an_empty_object() -> None:
    server = Server(ReferenceDriver())
    for line in (
        _request("initialize"),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": None}),
    ):
        answer = await server.handle(line)
        assert answer is not None
        assert answer["result"]["profiles"] == ["core", "lexical"]


async def test_a_notification_gets_no_answer() -> None:
    answer = await Server(ReferenceDriver()).handle(json.dumps({"jsonrpc": "2.0", "method": "initialize"}))
    assert answer is None


@pytest.mark.parametrize("method", ["run.definitions", "run.call", "run.request", "run.close"])
async def test_an_unknown_run_id_is_invalid_params_of_kind_unknown_run(method: str) -> None:
    answer = await Server(ReferenceDriver()).handle(_request(method, {"runId": "run-7", "name": "x"}))
    assert answer is not None
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"] == {"kind": "unknown_run", "message": "no open run with runId 'run-7'"}


async def test_extra_tools_that_are_not_a_list_are_invalid_params() -> None:
    answer = await Server(ReferenceDriver()).handle(_request("run.request", {"runId": "r", "extraTools": {"a": 1}}))
    assert answer is not None
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"]["kind"] == "invalid_params"


@pytest.mark.e2e
async def test_design_outcomes_are_code_32000_with_their_kind(tmp_path: Path) -> None:
    server = Server(ReferenceDriver())
    healthy = raw_server(tmp_path, "healthy", [[tool("a"), tool("b"), tool("c")]])
    gone = raw_server(tmp_path, "gone", [[]], exit_at_start=True)
    base = _definitions("b", 96)
    outcomes = {
        "selection_error": _open_params(healthy, baseTools=base),
        "config_error": {"servers": [{"id": "a__b", "transport": healthy.transport()}]},
        "connection_error": {"servers": [{"id": "g", "transport": gone.transport()}]},
    }
    for kind, params in outcomes.items():
        answer = await server.handle(_request("run.open", params))
        assert answer is not None
        assert answer["error"]["code"] == -32000
        assert answer["error"]["data"]["kind"] == kind
        assert answer["error"]["data"]["message"] == answer["error"]["message"]
    opened = await server.handle(_request("run.open", _open_params(healthy, baseTools=base[:90])))
    assert opened is not None
    run_id = opened["result"]["runId"]
    extra = _definitions("x", 35)
    too_large = await server.handle(_request("run.request", {"runId": run_id, "extraTools": extra}))
    assert too_large is not None
    assert too_large["error"]["code"] == -32000
    assert too_large["error"]["data"]["kind"] == "request_too_large"
    fits = await server.handle(_request("run.request", {"runId": run_id, "extraTools": extra[:34]}))
    assert fits is not None
    assert len(fits["result"]["tools"]) == 128
    closed = await server.handle(_request("run.close", {"runId": run_id}))
    assert closed == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert healthy.exited


class _BrokenDriver(ReferenceDriver):
    async def initialize(self, params: Mapping[str, object] | None = None) -> InitializeResult:
        raise RuntimeError("a bug")


async def test_an_unexpected_failure_is_an_internal_error_and_logged_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer = await Server(_BrokenDriver()).handle(_request("initialize", {}))
    assert answer == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal error: a bug"}}
    assert "internal error in initialize: RuntimeError('a bug')" in capsys.readouterr().err


def _stdio(monkeypatch: pytest.MonkeyPatch, *lines: str | bytes) -> io.BytesIO:
    data = b"".join((line if isinstance(line, bytes) else line.encode("utf-8")) + b"\n" for line in lines)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8"))
    return out


def _answers(out: io.BytesIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_serve_answers_line_by_line_skips_blank_lines_and_stops_after_shutdown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = _stdio(
        monkeypatch,
        "garbage",
        "",
        "   ",
        _request("initialize", {}, 1),
        _request("shutdown", {}, 2),
        _request("initialize", {}, 3),
    )
    await serve(ReferenceDriver())
    answers = _answers(out)
    assert [a.get("id") for a in answers] == [None, 1, 2]
    assert answers[0]["error"]["code"] == -32700
    assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.e2e
async def test_serve_closes_open_runs_when_stdin_ends(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    server = raw_server(tmp_path, "s", [[tool("a")]])
    out = _stdio(monkeypatch, _request("run.open", _open_params(server)))
    await serve(ReferenceDriver())
    assert _answers(out)[0]["result"] == {"runId": "run-1"}
    assert server.lines() == ["start", "exit"]


async def test_serve_writes_every_reply_as_valid_utf8_json(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _stdio(
        monkeypatch,
        b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "initialize"}',
        b'{"jsonrpc": "2.0", "id": "caf\xc3\xa9", "method": "no.such"}',
    )
    await serve(ReferenceDriver())
    lines = out.getvalue().splitlines()
    assert [json.loads(line.decode("utf-8"))["id"] for line in lines] == ["\ud800", "café"]
    assert b"\\ud800" in lines[0]


async def test_a_reply_that_json_cannot_carry_becomes_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class _NaNDriver(ReferenceDriver):
        async def initialize(self, params: Mapping[str, object] | None = None) -> InitializeResult:
            return cast(InitializeResult, {"name": "x", "version": "1", "profiles": ["core"], "score": math.nan})

    out = _stdio(monkeypatch, _request("initialize", {}, 7))
    await serve(_NaNDriver())
    [answer] = _answers(out)
    assert (answer["id"], answer["error"]["code"]) == (7, -32603)
    assert answer["error"]["message"].startswith("the reply cannot be written as JSON: Out of range float values")


def test_main_parses_the_time_limits_and_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _stdio(monkeypatch, _request("shutdown", {}))
    main(["--list-timeout", "2.5", "--call-timeout", "4"])
    assert _answers(out) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


@pytest.mark.parametrize("option", ["--list-timeout", "--call-timeout"])
@pytest.mark.parametrize("value", ["nan", "0", "-1", "inf", "86401", "soon"])
def test_main_refuses_a_time_limit_that_is_not_a_positive_number_of_seconds(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([option, value])
    assert exited.value.code == 2
    assert f"expected a number of seconds greater than 0 and at most 86400, got {value!r}" in capsys.readouterr().err


# As a child process: the real stdio driver.


class _Child:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "reference_impl.driver", "--list-timeout", "10"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
            env=env,
        )

    def send_line(self, line: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        assert ready, "the driver did not answer within 30 s"
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def send(self, method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
        return self.send_line(_request(method, params, request_id))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def child() -> Iterator[_Child]:
    process = _Child()
    yield process
    process.close()


@pytest.mark.e2e
def test_the_child_driver_answers_initialize(child: _Child) -> None:
    answer = child.send("initialize", {"protocolVersion": "1"}, "init")
    assert answer["id"] == "init"
    assert answer["result"]["name"] == "reference_impl"
    assert answer["result"]["profiles"] == ["core", "lexical"]


@pytest.mark.e2e
def test_a_driver_asked_only_about_the_protocol_never_loads_the_mcp_sdk() -> None:
    """A certification starts a dozen drivers for the protocol's own checks; the SDK costs
    each a second to import, and loads with the first run instead."""
    asked = "\n".join([_request("initialize", {"protocolVersion": "1"}), _request("run.close", {"runId": "nope"}, 2)])
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "reference_impl.driver"],
        input=asked + "\n" + _request("shutdown", None, 3) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    loaded = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}

    assert [answer["id"] for answer in answers] == [1, 2, 3]
    assert answers[1]["error"]["data"]["kind"] == "unknown_run"
    assert "reference_impl.driver._session" in loaded
    assert not {module for module in loaded if module.partition(".")[0] in ("mcp", "mcp_types")}


@pytest.mark.e2e
def test_the_child_driver_answers_garbage_with_a_parse_error_and_keeps_going(child: _Child) -> None:
    assert child.send_line("this is not json")["error"]["code"] == -32700
    assert child.send_line("[]")["error"]["code"] == -32600
    assert child.send("no.such.method", {}, 2)["error"]["code"] == -32601
    assert child.send("run.definitions", {"runId": "nope"}, 3)["error"]["data"]["kind"] == "unknown_run"
    assert child.send("initialize", {}, 4)["result"]["name"] == "reference_impl"


@pytest.mark.e2e
def test_the_child_driver_runs_a_whole_session_over_stdio_servers(child: _Child, tmp_path: Path) -> None:
    # Four pages; "search" ranks first, then hidden_00..10 fill the cap of 12; hidden_11..15 stay in the catalog.
    hidden = [tool(f"hidden_{i:02d}", "widget") for i in range(16)]
    pages = [[tool("search", "Search code"), *hidden[:4]], hidden[4:8], hidden[8:12], hidden[12:]]
    server = raw_server(tmp_path, "s", pages)
    opened = child.send("run.open", _open_params(server, userMessage="search", systemPrompt=""), 10)
    run_id = opened["result"]["runId"]
    definitions = child.send("run.definitions", {"runId": run_id}, 11)["result"]["tools"]
    assert [d["name"] for d in definitions][:3] == ["search_mcp_tools", "s__search", "s__hidden_00"]
    assert len(definitions) == 1 + 12
    refused = child.send("run.call", {"runId": run_id, "name": "s__hidden_11", "arguments": {}}, 12)["result"]
    assert refused["isError"] is True
    arguments = {"query": "widget", "limit": 1}
    found = child.send("run.call", {"runId": run_id, "name": "search_mcp_tools", "arguments": arguments})
    assert [t["name"] for t in found["result"]["structuredContent"]["activated"]] == ["s__hidden_11"]
    called = child.send("run.call", {"runId": run_id, "name": "s__hidden_11", "arguments": {"n": 1}}, 13)["result"]
    assert called == {"content": [{"type": "text", "text": "raw hidden_11 ok"}], "isError": False}
    no_arguments = child.send("run.call", {"runId": run_id, "name": "s__search"}, 14)["result"]
    assert no_arguments["isError"] is False
    null_arguments = child.send("run.call", {"runId": run_id, "name": "s__search", "arguments": None}, 16)["error"]
    assert (null_arguments["code"], null_arguments["data"]["path"]) == (-32602, "$.arguments")
    request = child.send("run.request", {"runId": run_id}, 15)["result"]["tools"]
    assert len(request) == 14
    too_large = child.send("run.request", {"runId": run_id, "extraTools": _definitions("x", 115)})
    assert too_large["error"]["code"] == -32000
    assert too_large["error"]["data"]["kind"] == "request_too_large"
    assert child.send("run.close", {"runId": run_id}, 16) == {"jsonrpc": "2.0", "id": 16, "result": {}}
    assert server.lines() == ["start", 'call hidden_11 {"n": 1}', "call search {}", "exit"]


@pytest.mark.e2e
def test_the_child_driver_reports_open_failures_with_their_kind(child: _Child, tmp_path: Path) -> None:
    gone = raw_server(tmp_path, "gone", [[]], exit_at_start=True)
    failed = child.send("run.open", {"servers": [{"id": "g", "transport": gone.transport()}]})
    assert failed["error"]["code"] == -32000
    assert failed["error"]["data"]["kind"] == "connection_error"
    assert "server 'g'" in failed["error"]["message"]
    healthy = raw_server(tmp_path, "healthy", [[tool("a")]])
    base = _definitions("b", 96)
    over = child.send("run.open", _open_params(healthy, baseTools=base))
    assert over["error"]["code"] == -32000
    assert over["error"]["data"]["kind"] == "selection_error"
    assert healthy.lines() == ["start", "exit"]
    missing_id = child.send("run.open", {"servers": [{"transport": gone.transport()}]})
    assert missing_id["error"]["data"]["kind"] == "config_error"
    bad_transport = child.send("run.open", {"servers": [{"id": "x", "transport": {"type": "carrier-pigeon"}}]})
    assert bad_transport["error"]["code"] == -32602
    assert bad_transport["error"]["data"]["kind"] == "invalid_params"


@pytest.mark.e2e
def test_the_child_driver_turns_a_tool_call_past_call_timeout_seconds_into_an_error_result(
    child: _Child, tmp_path: Path
) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="slow", tool_count=2, faults=Faults(slow=0.6)),))
    ledger = tmp_path / "ledger.jsonl"
    params = stdio_params(spec, "slow", ledger)
    transport = {"type": "stdio", "command": params.command, "args": list(params.args), "env": dict(params.env or {})}
    servers = [{"id": "slow", "transport": transport}]
    opened = child.send("run.open", {"servers": servers, "callTimeoutSeconds": 0.2, "listTimeoutSeconds": 20}, 1)
    run_id = opened["result"]["runId"]
    name = next(d["name"] for d in child.send("run.definitions", {"runId": run_id})["result"]["tools"][1:])
    hung = child.send("run.call", {"runId": run_id, "name": name, "arguments": {}}, 2)["result"]
    assert hung["isError"] is True
    assert f"did not answer {name.removeprefix('slow__')!r} within 0.2 s" in hung["content"][0]["text"]
    assert child.send("initialize", {}, 3)["result"]["name"] == "reference_impl"
    assert child.send("run.close", {"runId": run_id}, 4) == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert read_ledger(ledger).faults("slow", "slow")


@pytest.mark.e2e
def test_shutdown_closes_open_runs_and_ends_the_child_process(tmp_path: Path) -> None:
    process = _Child()
    try:
        server = raw_server(tmp_path, "s", [[tool("a")]])
        assert "runId" in process.send("run.open", _open_params(server))["result"]
        assert process.send("shutdown", {}, "bye") == {"jsonrpc": "2.0", "id": "bye", "result": {}}
        assert process.process.wait(timeout=30) == 0
        assert server.lines() == ["start", "exit"]
    finally:
        process.close()


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_closes_every_run_and_ends_the_child_process(tmp_path: Path, signum: signal.Signals) -> None:
    process = _Child()
    try:
        server = raw_server(tmp_path, "s", [[tool("a")]])
        assert "runId" in process.send("run.open", _open_params(server))["result"]
        process.process.send_signal(signum)
        assert process.process.wait(timeout=30) == 0
        assert server.lines() == ["start", "exit"]
    finally:
        process.close()
