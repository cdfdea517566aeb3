"""Crash fuzzing of the real stdio driver: whatever ``run.open`` params and ``run.call``
arguments hold (lone surrogates, deep nesting, huge strings, wrong types), the answer is a
JSON-RPC reply within a bound, never an internal error, and the driver and the run's
server stay usable.

One driver process serves every example of a test; servers are the raw test server (a few
tens of milliseconds to start) or unreachable HTTP endpoints, never a command Hypothesis
made up.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import EXAMPLES, fuzzing
from tests.json_values import JSON, TEXT

from ..servers import RawServer, raw_server, tool
from ._child import Driver

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the driver's stdio servers need POSIX")

# Seconds one fuzzed request may take: the handshake bound it is given, and a margin.
BOUND = 15

HUGE = st.integers(1, 2_000_000).map(lambda size: "x" * size)


def deep(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


DEEP = st.integers(1, 400).map(deep)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> RawServer:
    return raw_server(tmp_path_factory.mktemp("fuzz"), "s", [[tool("a"), tool("b")]])


@pytest.fixture(scope="module")
def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    child = Driver("--connect-timeout", "5", "--list-timeout", "5")
    child.result("init", "initialize", {"protocolVersion": "1"})
    yield child
    child.close()


def _send(driver: Driver, request_id: int, method: str, params: Any) -> dict[str, Any]:
    """Send a request written with every non-ASCII character escaped (a lone surrogate as ``\\udXXX``)."""
    driver.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())
    reply = driver.read(BOUND)
    assert reply is not None, f"{method} was not answered within {BOUND} s"
    return reply


def _not_internal(reply: dict[str, Any]) -> None:
    """A result, or an error of the protocol's (P32) other than -32603, an internal error."""
    error = reply.get("error")
    assert error is None or error["code"] in (-32700, -32600, -32601, -32602, -32000), reply


def _transports(server: RawServer, closed_port: str) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.just(server.transport()),
        st.just({"type": "http", "url": closed_port}),
        st.fixed_dictionaries({"type": st.sampled_from(["stdio", "http", "pigeon"])}, optional={"url": TEXT}),
        JSON,
    )


def _open_params(server: RawServer, closed_port: str) -> st.SearchStrategy[dict[str, Any]]:
    servers = st.lists(
        st.fixed_dictionaries(
            {"transport": _transports(server, closed_port)},
            optional={"id": st.sampled_from(["s", "t", "a__b", ""]) | TEXT | JSON, "policy": JSON | DEEP},
        ),
        max_size=2,
    )
    seconds = st.sampled_from([0.5, 5, 0, -1, 86401, 1e308]) | st.floats()
    return st.fixed_dictionaries(
        {},
        optional={
            "servers": servers | JSON,
            "baseTools": st.lists(
                st.fixed_dictionaries({"name": TEXT, "description": TEXT | HUGE, "inputSchema": DEEP | JSON}),
                max_size=3,
            )
            | JSON,
            "userMessage": TEXT | HUGE | JSON,
            "systemPrompt": TEXT | JSON,
            "listTimeoutSeconds": seconds,
            "callTimeoutSeconds": seconds,
            "connectTimeoutSeconds": seconds,
        },
    )


@pytest.mark.e2e
@pytest.mark.parametrize("examples", EXAMPLES)
def test_run_open_answers_any_params_with_a_result_or_an_error_and_the_driver_goes_on(
    examples: int, driver: Driver, server: RawServer, closed_port: str
) -> None:
    counter = iter(range(10**9))

    @fuzzing(examples)
    @given(_open_params(server, closed_port))
    def check(params: dict[str, Any]) -> None:
        reply = _send(driver, next(counter), "run.open", params)
        _not_internal(reply)
        if "result" in reply:
            closed = _send(driver, next(counter), "run.close", {"runId": reply["result"]["runId"]})
            assert closed.get("result") == {}, closed
        assert "result" in _send(driver, next(counter), "initialize", {})

    check()


@pytest.mark.e2e
@pytest.mark.parametrize("examples", EXAMPLES)
def test_run_call_answers_any_arguments_with_a_result_and_the_server_stays(
    examples: int, driver: Driver, server: RawServer
) -> None:
    counter = iter(range(10**9))
    policy = {"mode": "all"}
    opened = _send(
        driver, next(counter), "run.open", {"servers": [{"id": "s", "transport": server.transport(), "policy": policy}]}
    )
    run_id = opened["result"]["runId"]

    @fuzzing(examples)
    @given(st.sampled_from(["s__a", "s__b", "s__nope", "search_mcp_tools"]), JSON | DEEP | HUGE.map(lambda s: {"s": s}))
    def check(name: str, arguments: Any) -> None:
        reply = _send(driver, next(counter), "run.call", {"runId": run_id, "name": name, "arguments": arguments})
        _not_internal(reply)
        if "result" in reply:
            assert isinstance(reply["result"]["isError"], bool)
        after = _send(driver, next(counter), "run.call", {"runId": run_id, "name": "s__b", "arguments": {}})
        assert after.get("result", {}).get("isError") is False, after

    try:
        check()
    finally:
        _send(driver, next(counter), "run.close", {"runId": run_id})


@pytest.mark.e2e
@pytest.mark.parametrize("examples", EXAMPLES)
def test_any_line_gets_a_reply_in_order_from_the_real_driver(examples: int, driver: Driver, tmp_path: Path) -> None:
    lines = st.one_of(
        st.binary(max_size=50).filter(lambda line: b"\n" not in line and line.strip()),
        JSON.map(lambda value: json.dumps(value).encode()),
        st.integers(1, 3000).map(lambda depth: b"[" * depth + b"]" * depth),
        st.builds(
            lambda method, params: json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode(),
            st.sampled_from(["initialize", "run.definitions", "run.request", "run.close", "nope"]),
            JSON | DEEP,
        ),
    )

    @fuzzing(examples)
    @given(lines)
    def check(line: bytes) -> None:
        driver.write(line)
        driver.write(b'{"jsonrpc": "2.0", "id": "after", "method": "initialize"}')
        first = driver.read(BOUND)
        assert first is not None, f"no reply to {line[:100]!r}"
        if first.get("id") != "after":
            _not_internal(first)
            after = driver.read(BOUND)
            assert after is not None and after.get("id") == "after", after

    check()
