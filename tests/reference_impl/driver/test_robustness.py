"""The stdio driver under hostile input: whatever a line holds, the answer is a JSON-RPC
reply (or nothing, for a notification), never a crash.

Hypothesis writes the lines: JSON of every shape (deeply nested, huge, wrong types,
batches, notifications, requests with broken params), bytes that are not UTF-8, and text
that is not JSON. The properties run in-process against the driver's line handler; one
test feeds a generated stream to a real driver process and checks that it answers every
request in order and exits cleanly.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.driver import ReferenceDriver
from reference_impl.driver.__main__ import Server, encode

METHODS = ["initialize", "run.open", "run.definitions", "run.call", "run.request", "run.close", "nope", ""]
IDS = st.one_of(st.integers(-(2**63), 2**63), st.text(max_size=20), st.none(), st.floats(), st.booleans())
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
# Params a real method would take, with one field broken at a time.
OPEN_PARAMS = st.fixed_dictionaries(
    {
        "servers": st.one_of(
            st.just([]),
            st.lists(
                st.fixed_dictionaries(
                    {"id": st.one_of(st.text(max_size=8), st.integers()), "transport": JSON, "policy": JSON}
                ),
                max_size=2,
            ),
            JSON,
        ),
        "baseTools": st.one_of(st.just([]), JSON),
        "userMessage": st.one_of(st.text(max_size=20), JSON),
    }
)
REQUESTS = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "method": st.sampled_from(METHODS) | st.text(max_size=10)},
    optional={"id": IDS, "params": st.one_of(JSON, OPEN_PARAMS)},
)


def _line(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


LINES = st.one_of(
    REQUESTS.map(_line),
    JSON.map(_line),
    st.lists(REQUESTS, min_size=0, max_size=3).map(_line),
    st.binary(max_size=60),
    st.text(max_size=60).map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.integers(1, 3000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 3000).map(lambda depth: b'{"a":' * depth + b"1" + b"}" * depth),
    st.sampled_from([b"NaN", b'{"x": Infinity}', b"1e999999", b'"\\ud800"', b"\xff\xfe", b"", b"   "]),
)


def _handle(line: bytes) -> dict[str, Any] | None:
    async def body() -> dict[str, Any] | None:
        driver = ReferenceDriver()
        try:
            return await Server(driver).handle(line)
        finally:
            await driver.aclose()

    return asyncio.run(body())


def _is_notification(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0" and "id" not in message


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES)
def test_every_line_gets_a_json_rpc_reply_or_none_for_a_notification(line: bytes) -> None:
    reply = _handle(line)

    if reply is None:
        assert _is_notification(line), f"no reply to a line that is not a notification: {line[:200]!r}"
        return
    assert reply["jsonrpc"] == "2.0"
    assert ("result" in reply) != ("error" in reply)
    if "error" in reply:
        assert isinstance(reply["error"]["code"], int) and isinstance(reply["error"]["message"], str)
    # What goes out is always one line of valid UTF-8 JSON.
    out = encode(reply)
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    json.loads(out.decode("utf-8"))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.integers(1, 10**6))
def test_a_value_echoed_in_an_error_is_clipped(text: str, size: int) -> None:
    huge = {"jsonrpc": "2.0", "id": 1, "method": "run.definitions", "params": {"runId": text * size}}

    reply = _handle(_line(huge)[:2_000_000])

    assert reply is not None and "error" in reply
    assert len(encode(reply)) < 20_000


@pytest.mark.e2e
def test_a_stream_of_hostile_lines_is_answered_in_order_by_the_real_driver() -> None:
    lines = [
        b"[" * 5000,
        b"\xff\xfe not utf-8",
        b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "initialize", "params": {"protocolVersion": "1"}}',
        b'{"jsonrpc": "2.0", "method": "run.open", "params": {"servers": []}}',
        b'{"jsonrpc": "2.0", "id": 7, "method": "run.open", "params": {"servers": "x"}}',
        b'{"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {"protocolVersion": "1", "x": NaN}}',
        b'[{"jsonrpc": "2.0", "id": 9, "method": "initialize"}]',
        b'{"jsonrpc": "2.0", "id": 10, "method": "shutdown", "params": {}}',
    ]

    done = subprocess.run(
        [sys.executable, "-m", "reference_impl.driver"],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        timeout=60,
        check=False,
    )

    replies = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert [r.get("id") for r in replies] == [None, None, "\ud800", 7, None, None, 10]
    assert [r.get("error", {}).get("code") for r in replies] == [-32700, -32700, None, -32602, -32700, -32600, None]
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    assert b"Traceback" not in done.stderr
