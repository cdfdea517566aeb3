"""The driver protocol itself (PRO-*), then a smoke check that the SUT answers at all.

The PRO checks write raw lines to a process of the driver's command of their own (so that a
driver that dies of a bad line does not take the shared one along) and read exactly what
comes back. A check that passes hands its process on to the next, once a last request shows
that no line is left unread: a check that fails, or leaves the driver out of step, ends it,
so that what it did cannot show in another check. An in-process SUT speaks no protocol:
for it they are not applicable.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from conformance import DriverSut, Inconclusive, Nonconformance, Sut, clause
from conformance._channel import ChannelError, RawChannel
from conformance._protocol import PROTOCOL_VERSION, reply_problem
from conformance._wire_types import Definition
from conformance.suite._fleets import Fleet, Fleets
from conformance.suite._preconditions import precondition
from conformance.suite._wire import DISCOVERY, base_tools, catalog, fail, names, open_params, portable, run
from mock_servers import Faults, FleetSpec, ServerSpec, ToolSpec, example_arguments

INITIALIZE: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION}
FLEET = FleetSpec(servers=(ServerSpec(id="s0", tool_count=20),), seed=11)


def _request(request_id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def _notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


class _Checked:
    """A raw channel whose failures are findings on one clause, each carrying the exchange so far."""

    def __init__(self, channel: RawChannel, clause_id: str) -> None:
        self.channel, self.clause = channel, clause_id
        self.exchange: list[Any] = []

    def fail(self, message: str, *, expected: object = None, observed: object = None) -> Nonconformance | Inconclusive:
        case = {"exchange": self.exchange[-12:], "stderr": self.channel.stderr_tail()[-2000:]}
        return fail((self.clause,), message, expected=expected, observed=observed, case=case)

    def write(self, *lines: bytes) -> None:
        self.exchange += [line.decode("utf-8", "replace")[:200] for line in lines]
        try:
            self.channel.write(*lines)
        except ChannelError as exc:
            raise self.fail(str(exc)) from None

    def send(self, *messages: Mapping[str, Any]) -> None:
        self.exchange += list(messages)
        try:
            self.channel.send(*messages)
        except ChannelError as exc:
            raise self.fail(str(exc)) from None

    def read(self, waiting_for: str) -> Any:
        try:
            reply = self.channel.read()
        except ChannelError as exc:
            raise self.fail(f"{exc}; it owed the reply to {waiting_for}") from None
        self.exchange.append(reply)
        return reply

    def reply(self, request_id: Any, method: str, params: Any) -> dict[str, Any]:
        """Send one request; its reply, which must be a JSON-RPC response carrying its id."""
        self.send(_request(request_id, method, params))
        reply = self.read(f"{method} (id {request_id!r})")
        if not isinstance(reply, dict) or reply.get("id") != request_id or not _same_type(reply["id"], request_id):
            raise self.fail(
                f"the next line after {method} (id {request_id!r}) is not its reply",
                expected=f"a response with id {request_id!r}",
                observed=reply,
            )
        return reply

    def result(self, request_id: Any, method: str, params: Any) -> Any:
        reply = self.reply(request_id, method, params)
        if "result" not in reply:
            raise self.fail(f"{method} (id {request_id!r}) failed", expected="a result", observed=reply)
        return reply["result"]

    def error_code(self, request_id: Any, method: str, params: Any, code: int, what: str) -> dict[str, Any]:
        reply = self.reply(request_id, method, params)
        error = reply.get("error")
        if not isinstance(error, dict) or error.get("code") != code:
            raise self.fail(f"{what} was not answered with code {code}", expected=f"error code {code}", observed=reply)
        return error

    def still_serving(self, after: str) -> None:
        result = self.result(f"alive after {after}", "initialize", INITIALIZE)
        if not isinstance(result, dict):
            raise self.fail(f"initialize after {after} answered {result!r}", observed=result)


def _same_type(left: Any, right: Any) -> bool:
    return isinstance(left, str) == isinstance(right, str)


class _Spare:
    """The driver process the last passing check handed on (starting one costs a second)."""

    def __init__(self) -> None:
        self.channel: RawChannel | None = None
        self._syncs = 0

    def take(self) -> RawChannel | None:
        channel, self.channel = self.channel, None
        return channel

    def keep(self, channel: RawChannel) -> None:
        """Keep ``channel`` for the next check if the very next line answers a last request; end it otherwise."""
        self._syncs += 1
        sync = f"in step {self._syncs}"
        try:
            reply = channel.request(sync, "initialize", INITIALIZE)
        except ChannelError:
            reply = None
        if isinstance(reply, dict) and reply.get("id") == sync and "result" in reply:
            self.channel = channel
        else:
            channel.close()

    def close(self) -> None:
        channel = self.take()
        if channel is not None:
            channel.close()


@pytest.fixture(scope="module")
def spare() -> Iterator[_Spare]:
    held = _Spare()
    yield held
    held.close()


@contextmanager
def _channel(
    sut: Sut, clause_id: str, *, initialized: bool = True, spare: _Spare | None = None, hand_on: bool = True
) -> Iterator[_Checked]:
    """A raw channel to a driver process of this check's own.

    ``initialized``: after an ``initialize`` of version 1 (a fresh process sees it first).
    ``spare``: take the process a passing check handed on, if any, and hand this one on
    when the check passes (``hand_on``: the check leaves the process running).
    """
    adapter = sut.adapter
    if not isinstance(adapter, DriverSut):
        pytest.skip(
            "not applicable: the driver protocol is checked only for an implementation run as a driver "
            "(--sut-cmd); this one is an in-process adapter"
        )
    channel = spare.take() if spare is not None else None
    if channel is None:
        channel = adapter.raw_channel()
    passed = False
    try:
        checked = _Checked(channel, clause_id)
        if initialized:
            checked.result("init", "initialize", INITIALIZE)
        yield checked
        passed = True
    finally:
        if passed and hand_on and spare is not None:
            spare.keep(channel)
        else:
            channel.close()


def _listings(served: Fleet) -> int:
    count: int = served.ledger().listed_pages("s0").count(0)
    return count


@clause("PRO-1.1", "PRO-1.2")
def test_every_request_gets_one_reply_in_the_order_it_was_sent(sut: Sut, fleets: Fleets, spare: _Spare) -> None:
    with fleets.serve(FLEET) as served, _channel(sut, "PRO-1", spare=spare) as channel:
        # run.open has servers to reach; the requests behind it have nothing to wait for.
        # Ids a driver may mistake for "no id" (0, ""), or turn into another type ("4").
        requests = [
            _request(1, "run.open", open_params(served.servers)),
            _request("second", "initialize", INITIALIZE),
            _request(0, "run.definitions", {"runId": "no-such-run"}),
            _request("4", "initialize", INITIALIZE),
            _request(-7, "initialize", INITIALIZE),
            _request("", "no.such.method", {}),
            _request(2**31, "initialize", INITIALIZE),
        ]
        last = _request("last", "initialize", INITIALIZE)
        channel.send(*requests, last)
        # Read up to the reply to the last request: a reply missing before it, or one too many,
        # shows without waiting for a time-out.
        replies: list[Any] = []
        while len(replies) <= len(requests):
            reply = channel.read(f"request {len(replies) + 1} of {len(requests) + 1}")
            replies.append(reply)
            if isinstance(reply, dict) and reply.get("id") == "last":
                break
        ids = [reply.get("id") if isinstance(reply, dict) else reply for reply in replies]
        wanted = [request["id"] for request in [*requests, last]]
        if ids != wanted or not all(map(_same_type, ids, wanted)):
            raise channel.fail(
                "requests written together were not answered once each, in order, with their ids",
                expected=wanted,
                observed=ids,
            )
        run_id = replies[0].get("result", {}).get("runId")
        if isinstance(run_id, str):
            channel.result(5, "run.close", {"runId": run_id})


NOT_JSON = {
    "prose": b"this is not json",
    "truncated": b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"',
    "not-utf-8": b"\xff\xfe{}",
    "nan": b'{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"x": NaN}}',
    "infinity": b'{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"x": -Infinity}}',
    "two-values": b'{"jsonrpc": "2.0", "id": 4, "method": "initialize"} {}',
    "single-quotes": b"{'jsonrpc': '2.0', 'id': 5, 'method': 'initialize'}",
    "deep": b"[" * 1000,
}


@clause("PRO-2.1", "PRO-2.2")
def test_a_line_that_is_not_json_is_a_parse_error_and_the_driver_goes_on(sut: Sut, spare: _Spare) -> None:
    with _channel(sut, "PRO-2", spare=spare) as channel:
        for what, line in NOT_JSON.items():
            channel.write(line)
            reply = channel.read(f"the line that is not JSON ({what})")
            error = reply.get("error") if isinstance(reply, dict) else None
            if not isinstance(error, dict) or error.get("code") != -32700 or reply.get("id") is not None:
                raise channel.fail(
                    f"a line that is not JSON ({what}) was not answered with a parse error",
                    expected={"id": None, "error": {"code": -32700}},
                    observed=reply,
                )
            channel.still_serving(f"a line that is not JSON ({what})")


@clause("PRO-3.1")
def test_an_unknown_method_is_method_not_found_and_the_driver_goes_on(sut: Sut, spare: _Spare) -> None:
    with _channel(sut, "PRO-3", spare=spare) as channel:
        for i, method in enumerate(("run.explode", "tools/list", "Initialize", "run.open ", "")):
            channel.error_code(f"m{i}", method, {}, -32601, f"the unknown method {method!r}")
        channel.still_serving("unknown methods")


@clause("PRO-4.1", "PRO-4.2")
def test_invalid_params_are_refused_with_invalid_params_and_have_no_effect(
    sut: Sut, fleets: Fleets, spare: _Spare
) -> None:
    with fleets.serve(FLEET) as served, _channel(sut, "PRO-4", spare=spare) as channel:
        # The largest time limits the protocol allows (P22): the valid side of the two below.
        good = open_params(served.servers) | {"listTimeoutSeconds": 86400, "callTimeoutSeconds": 86400}
        run_id = channel.result("open", "run.open", good).get("runId")
        invalid: list[tuple[str, Any]] = [
            ("initialize", "1"),
            ("run.open", [good]),
            ("run.open", {"servers": "s0"}),
            ("run.open", {"servers": [{"id": "s0", "transport": {"type": "pigeon"}}]}),
            ("run.open", {"servers": [{"id": "s0"}]}),
            ("run.open", good | {"baseTools": "none"}),
            ("run.open", good | {"userMessage": 7}),
            ("run.open", good | {"callTimeoutSeconds": 0}),
            ("run.open", good | {"listTimeoutSeconds": 86401}),
            ("run.definitions", {}),
            ("run.call", {"runId": run_id, "arguments": {}}),
            ("run.call", {"runId": run_id, "name": 7, "arguments": {}}),
            ("run.call", {"runId": run_id, "name": DISCOVERY, "arguments": "find issues"}),
            # null is not a left-out object (P25).
            ("run.call", {"runId": run_id, "name": DISCOVERY, "arguments": None}),
            ("run.request", {"runId": run_id, "extraTools": "none"}),
            ("run.close", {"runId": [run_id]}),
        ]
        for i, (method, params) in enumerate(invalid, start=1):
            error = channel.error_code(i, method, params, -32602, f"{method} with invalid params {params!r:.200}")
            data = error.get("data")
            if data is not None and (not isinstance(data, dict) or data.get("kind") != "invalid_params"):
                raise channel.fail(
                    f"{method} with invalid params was refused with another kind",
                    expected="data.kind invalid_params",
                    observed=error,
                )
        if _listings(served) != 1:
            raise channel.fail(
                "a run.open with invalid params reached the server",
                expected="one listing (the valid run.open)",
                observed=served.ledger().summary(),
            )
        channel.result("still open", "run.definitions", {"runId": run_id})
        channel.result("close", "run.close", {"runId": run_id})


# Versions no driver speaks: a later one, an earlier one, and an MCP version, which a
# driver built on an MCP library may mistake for its own.
UNSUPPORTED_VERSIONS = ("2", "0.9", "2025-11-25")


@clause("PRO-4.3")
def test_an_unsupported_protocol_version_is_refused_with_invalid_params(sut: Sut) -> None:
    # The refusal is checked as the process's first request (P17 makes initialize the
    # first), then again once the driver has accepted version 1.
    with _channel(sut, "PRO-4", initialized=False) as channel:
        for i, version in enumerate(UNSUPPORTED_VERSIONS):
            params = {"protocolVersion": version}
            error = channel.error_code(f"v{i}", "initialize", params, -32602, f"initialize with {params}")
            data = error.get("data")
            if data is not None and (not isinstance(data, dict) or data.get("kind") != "invalid_params"):
                raise channel.fail(
                    f"initialize with the unsupported protocolVersion {version!r} was refused with another kind",
                    expected="data.kind invalid_params",
                    observed=error,
                )
            if i == 0:
                channel.still_serving(f"initialize with protocolVersion {version!r}")
        channel.still_serving("initialize with unsupported protocol versions")


# How to comply (P11), said in every PRO-5 finding: many JSON-RPC libraries run a
# notification's handler, as JSON-RPC 2.0 servers do for the notifications they offer.
_NOT_A_REQUEST = (
    " (P11: the protocol has no notifications; answer and execute only messages with an 'id'. "
    "With a library that runs notification handlers, such as json-rpc-2.0's JSONRPCServer.receive "
    "or Python's jsonrpcserver.dispatch, drop every message without an 'id' before dispatching it.)"
)


@clause("PRO-5.1", "PRO-5.2")
def test_a_notification_gets_no_reply_and_has_no_effect(sut: Sut, fleets: Fleets, spare: _Spare) -> None:
    with fleets.serve(FLEET) as served, _channel(sut, "PRO-5", spare=spare) as channel:
        notifications = [
            _notification("run.open", open_params(served.servers)),
            _notification("run.definitions", {"runId": "no-such-run"}),
            _notification("no.such.method", {}),
            _notification("run.open", {"servers": "none"}),
        ]
        channel.send(*notifications, _request("after", "initialize", INITIALIZE))
        reply = channel.read("initialize (id 'after'), written after four notifications")
        if not isinstance(reply, dict) or reply.get("id") != "after":
            raise channel.fail(
                "a notification was answered" + _NOT_A_REQUEST, expected="the reply to id 'after'", observed=reply
            )
        if "result" not in reply:
            raise channel.fail("initialize after the notifications failed", observed=reply)
        if _listings(served) != 0:
            raise channel.fail(
                "a run.open sent as a notification reached the server" + _NOT_A_REQUEST,
                expected="no listing",
                observed=served.ledger().summary(),
            )
        channel.send(_notification("shutdown", {}))
        channel.still_serving("a shutdown notification")
        # The control: the same run.open as a request does reach the server.
        run_id = channel.result("open", "run.open", open_params(served.servers)).get("runId")
        channel.send(_notification("run.close", {"runId": run_id}))
        reply = channel.reply("still open", "run.definitions", {"runId": run_id})
        if "result" not in reply:
            raise channel.fail(
                "a run.close sent as a notification closed the run" + _NOT_A_REQUEST,
                expected="the run's definitions",
                observed=reply,
            )
        channel.result("close", "run.close", {"runId": run_id})
        if _listings(served) != 1:
            raise channel.fail(
                "the server was listed more than once for one run.open request: the notification ran too"
                + _NOT_A_REQUEST,
                expected="exactly one listing",
                observed=served.ledger().summary(),
            )


def _session(served: Fleet, run_id: str, definitions: Sequence[Definition]) -> list[tuple[str, dict[str, Any]]]:
    """One request of every kind the suite makes inside a run, each answered with a result or an error."""
    tools = catalog(served.tools)
    active = [name for name in names(definitions) if name in tools]
    extra = base_tools(1, "extra")
    return [
        ("run.call", {"runId": run_id, "name": DISCOVERY, "arguments": {"query": "list search", "limit": 3}}),
        ("run.call", {"runId": run_id, "name": "s0__no_such_tool", "arguments": {}}),
        *(
            ("run.call", {"runId": run_id, "name": name, "arguments": example_arguments(tools[name][1])})
            for name in active[:1]
        ),
        ("run.request", {"runId": run_id, "extraTools": extra}),
        ("run.request", {"runId": run_id, "extraTools": base_tools(130, "extra")}),
        ("run.definitions", {"runId": "no-such-run"}),
        ("run.open", {"servers": [{**served.servers[0], "id": "s__0"}]}),
        ("run.close", {"runId": run_id}),
        ("shutdown", {}),
    ]


@clause("PRO-6.1", "PRO-6.2")
def test_every_reply_validates_against_the_protocol_schemas(sut: Sut, fleets: Fleets, spare: _Spare) -> None:
    with fleets.serve(FLEET) as served, _channel(sut, "PRO-6", spare=spare) as channel:

        def check(request_id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
            reply = channel.reply(request_id, method, params)
            problem = reply_problem(method, params, reply)
            if problem is not None or reply.get("jsonrpc") != "2.0" or ("result" in reply) == ("error" in reply):
                raise channel.fail(
                    problem or f"{method}: the reply is not a JSON-RPC 2.0 response with a result or an error",
                    observed=reply,
                )
            return reply

        # Ids from 1: that 0 is an id like any other is PRO-1.1's to check, not this one's.
        check(1, "initialize", INITIALIZE)
        params = open_params(served.servers, base_tools(2), "list the latest items")
        run_id = check(2, "run.open", params).get("result", {}).get("runId")
        if not isinstance(run_id, str):
            raise channel.fail("run.open did not open a run", observed=run_id)
        definitions = check(3, "run.definitions", {"runId": run_id}).get("result", {}).get("tools", [])
        for i, (method, step) in enumerate(_session(served, run_id, definitions), start=4):
            check(i, method, step)


@clause("PRO-8.1", "PRO-8.2")
def test_a_run_id_of_no_open_run_is_unknown_run_and_the_driver_goes_on(sut: Sut, fleets: Fleets, spare: _Spare) -> None:
    with fleets.serve(FLEET) as served, _channel(sut, "PRO-8", spare=spare) as channel:
        open_id = channel.result("open", "run.open", open_params(served.servers)).get("runId")
        closed_id = channel.result("open another", "run.open", open_params(served.servers)).get("runId")
        channel.result("close it", "run.close", {"runId": closed_id})
        for run_id in ("no-such-run", closed_id):
            for method, params in (
                ("run.definitions", {}),
                ("run.call", {"name": DISCOVERY, "arguments": {"query": "issues"}}),
                ("run.request", {"extraTools": []}),
                ("run.close", {}),
            ):
                what = f"{method} for {'a closed run' if run_id == closed_id else 'a run never opened'}"
                error = channel.error_code(f"{method} {run_id}", method, params | {"runId": run_id}, -32602, what)
                data = error.get("data")
                if not isinstance(data, dict) or data.get("kind") != "unknown_run":
                    raise channel.fail(
                        f"{what} was refused with another kind", expected="data.kind unknown_run", observed=error
                    )
        channel.result("still open", "run.definitions", {"runId": open_id})
        channel.result("close", "run.close", {"runId": open_id})
        with fleets.serve(SLOW_FLEET, {"s0": {"mode": "all", "pinnedTools": ["wait"]}}) as slow:
            _two_closes_of_one_run(channel, slow)


# A pinned tool (active in every reading) whose server keeps each call waiting, so that the
# requests written behind a call are in flight with it.
SLOW_FLEET = FleetSpec(
    servers=(
        ServerSpec(
            id="s0", tool_count=0, tools=(ToolSpec(name="wait", description="Waits."),), faults=Faults(slow_calls=0.5)
        ),
    ),
    seed=11,
)


def _two_closes_of_one_run(channel: _Checked, served: Fleet) -> None:
    """Two ``run.close`` of one run, written behind a call of the run that is still waiting
    for its server: a driver working on requests at once (P9) has both in flight together.
    One closes the run and the other finds it closed, in either order."""
    run_id = channel.result("open a run", "run.open", open_params(served.servers)).get("runId")
    arguments = example_arguments(served.tools["s0"][0])
    channel.send(
        _request("call", "run.call", {"runId": run_id, "name": "s0__wait", "arguments": arguments}),
        _request("close", "run.close", {"runId": run_id}),
        _request("close again", "run.close", {"runId": run_id}),
    )
    replies = [channel.read(f"request {i} of 3 written together") for i in (1, 2, 3)]
    closes = [r for r in replies if isinstance(r, dict) and r.get("id") in ("close", "close again")]
    closed = [r for r in closes if "result" in r]
    refused = [
        r
        for r in closes
        if isinstance(r.get("error"), dict)
        and r["error"].get("code") == -32602
        and isinstance(r["error"].get("data"), dict)
        and r["error"]["data"].get("kind") == "unknown_run"
    ]
    if len(closed) != 1 or len(refused) != 1:
        raise channel.fail(
            "of two run.close of one run written together, not one closed it and the other was unknown_run",
            expected="one result, and one error -32602 with data.kind unknown_run, in either order",
            observed=closes,
        )
    channel.still_serving("two run.close of one run")


# Seconds a driver may take to exit after answering shutdown (PROTOCOL.md's grace).
SHUTDOWN_GRACE = 5.0


@clause("PRO-7.1")
def test_after_shutdown_the_driver_and_the_servers_it_started_have_ended(
    sut: Sut, fleets: Fleets, spare: _Spare
) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="a", tool_count=3), ServerSpec(id="b", tool_count=4)))
    with (
        fleets.serve(spec, transport="stdio") as served,
        _channel(sut, "PRO-7.1", spare=spare, hand_on=False) as channel,
    ):
        # A run left open: shutdown must close it and end its stdio servers.
        channel.result(1, "run.open", open_params(served.servers))
        channel.result(2, "shutdown", {})
        code = channel.channel.exit_code(SHUTDOWN_GRACE)
        if code is None:
            raise channel.fail(f"the driver still runs {SHUTDOWN_GRACE:g} s after answering shutdown", expected="exit")
        alive = served.processes_alive()
        if alive:
            raise channel.fail(
                "stdio servers the driver started still run after it shut down",
                expected=[],
                observed=portable(alive),
            )


# How long a driver has to exit after SIGTERM, a request still in flight.
SIGNAL_GRACE = 5.0


@clause("PRO-7.2")
def test_sigterm_with_a_run_open_in_flight_ends_the_driver_and_the_servers_it_started(
    sut: Sut, fleets: Fleets, spare: _Spare
) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="stuck", tool_count=3, faults=Faults(hang_on_list=0)),))
    with (
        fleets.serve(spec, transport="stdio") as served,
        _channel(sut, "PRO-7.2", spare=spare, hand_on=False) as channel,
    ):
        # A listing that never ends, under a list time-out far beyond the wait: run.open is in flight.
        channel.send(_request(1, "run.open", open_params(served.servers) | {"listTimeoutSeconds": 3600}))
        deadline = time.monotonic() + channel.channel.timeout
        while not served.ledger().faults("stuck", "hang_on_list"):
            if time.monotonic() > deadline:
                raise channel.fail(
                    f"run.open did not reach the server's listing within {channel.channel.timeout:g} s",
                    expected="a tools/list request to the server",
                    observed=served.ledger().summary(),
                )
            time.sleep(0.05)
        os.kill(channel.channel.pid, signal.SIGTERM)
        if channel.channel.exit_code(SIGNAL_GRACE) is None:
            raise channel.fail(
                f"the driver still runs {SIGNAL_GRACE:g} s after SIGTERM, with a run.open in flight",
                expected="exit",
            )
        alive = served.processes_alive(SIGNAL_GRACE)
        if alive:
            raise channel.fail(
                "stdio servers the driver started still run after SIGTERM ended it",
                expected=[],
                observed=portable(alive),
            )


# The handshake bound the check asks for (connectTimeoutSeconds), and how long past it a
# driver may take to answer: a server that never answered gets a grace to leave, then a signal.
HANDSHAKE_LIMIT = 1
HANDSHAKE_SLACK = 10.0
# Reads its input and never writes a byte.
SILENT = "import sys; sys.stdin.buffer.read()"


@contextmanager
def _black_hole() -> Iterator[str]:
    """An HTTP URL whose port accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"


def _unstartable_server_refused(channel: _Checked, request_id: str) -> None:
    """Go on only when a run whose one server exits as soon as it starts is refused
    (ERR-5.1): a host that opens runs without the servers it cannot reach opens that one
    too, and the silent server PRO-9.1 adds is not what it got wrong.

    Raises:
        Inconclusive: naming ERR-5.1.
    """
    dead = {"type": "stdio", "command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
    reply = channel.reply(request_id, "run.open", {"servers": [{"id": "dead", "transport": dead}]})
    precondition("ERR-5.1", "result" not in reply, "a run whose one server exits as it starts opened", observed=reply)


@clause("PRO-9.1", "PRO-9.2")
def test_a_server_that_never_completes_the_handshake_fails_run_open_and_the_driver_goes_on(
    sut: Sut, spare: _Spare
) -> None:
    with _black_hole() as url, _channel(sut, "PRO-9.1", spare=spare) as channel:
        servers = {
            "a stdio server that never answers": {"type": "stdio", "command": sys.executable, "args": ["-c", SILENT]},
            "an HTTP endpoint that never replies": {"type": "http", "url": url},
        }
        for i, (what, transport) in enumerate(servers.items(), start=1):
            params = {
                "servers": [{"id": "mute", "transport": transport}],
                "connectTimeoutSeconds": HANDSHAKE_LIMIT,
                "listTimeoutSeconds": HANDSHAKE_LIMIT,
            }
            started = time.monotonic()
            reply = channel.reply(i, "run.open", params)
            took = time.monotonic() - started
            if "result" in reply:
                _unstartable_server_refused(channel, f"control-{i}")
            error = reply.get("error")
            if not isinstance(error, dict):
                error = {}
            data = error.get("data")
            if (
                not isinstance(data, dict)
                or error.get("code") != -32000
                or data.get("kind") != "connection_error"
                or "mute" not in str(error.get("message"))
            ):
                raise channel.fail(
                    f"run.open with {what} was not refused as a connection error naming the server",
                    expected="code -32000, data.kind connection_error, a message naming 'mute'",
                    observed=reply,
                )
            if took > HANDSHAKE_LIMIT + HANDSHAKE_SLACK:
                case = {"exchange": channel.exchange[-12:], "stderr": channel.channel.stderr_tail()[-2000:]}
                raise fail(
                    ("PRO-9.2",),
                    f"run.open with {what} failed only after {took:.1f} s, although connectTimeoutSeconds was "
                    f"{HANDSHAKE_LIMIT}",
                    expected=f"a connection_error within about {HANDSHAKE_LIMIT} s",
                    observed=f"{took:.1f} s",
                    case=case,
                )
            channel.still_serving(f"run.open with {what}")


@clause("RNK-9.1")
def test_initialize_claims_the_core_profile(sut: Sut) -> None:
    implementation = run(sut.initialize())

    assert "core" in implementation.profiles, (
        f"{implementation.name} {implementation.version} claims {list(implementation.profiles)}; "
        "every implementation claims the 'core' profile"
    )
