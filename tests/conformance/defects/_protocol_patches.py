"""Defects of the driver protocol (PRO-*), one function each.

They patch the reference's stdio driver (``reference_impl.driver.__main__``) where it
frames, parses and dispatches lines, so that the toolset behind it stays conformant and
each defect shows on its own clause.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from typing import Any

from reference_impl.driver import __main__ as stdio
from reference_impl.driver import _session
from tests.conformance.defects._registry import defect

__all__: list[str] = []

_handle = stdio.Server.handle


@defect("PRO-1.2", "requests run concurrently; a quick reply overtakes a slow one")
def answers_out_of_order() -> None:
    """Each reply is written as soon as its request finishes, not in the order the requests
    came; reading, shutdown and the exit stay the reference's, so that only the order shows."""
    add = stdio._Replies.add

    def add_unordered(self: Any, answer: asyncio.Future[dict[str, Any] | None]) -> None:
        async def write_when_ready() -> None:
            reply = await answer
            if reply is not None and not self.broken:
                self._write(reply)

        # The reference's writer still awaits the requests in order, writing nothing itself.
        add(self, asyncio.ensure_future(write_when_ready()))

    stdio._Replies.add = add_unordered  # type: ignore[method-assign]


@defect("PRO-2.2", "a line that is not JSON ends the driver")
def dies_on_garbage() -> None:
    """A line that is not JSON ends the driver."""
    parse = stdio.parse

    def parse_or_die(line: bytes) -> Any:
        try:
            return parse(line)
        except ValueError as error:
            sys.stderr.write(f"cannot parse a line ({error}); giving up\n")
            raise SystemExit(1) from None

    stdio.parse = parse_or_die


@defect("PRO-3.1", "an unknown method is answered with an empty result")
def unknown_method_is_a_result() -> None:
    """A request for an unknown method is answered with an empty result."""

    async def handle(self: stdio.Server, line: bytes | str) -> dict[str, Any] | None:
        reply = await _handle(self, line)
        if reply is not None and reply.get("error", {}).get("code") == stdio.METHOD_NOT_FOUND:
            return {"jsonrpc": "2.0", "id": reply["id"], "result": {}}
        return reply

    stdio.Server.handle = handle  # type: ignore[method-assign]


@defect("PRO-4.1", "params are not checked; a wrong type becomes an internal error")
def no_params_check() -> None:
    """Params are used as they come; a wrong type surfaces as an internal error."""
    _session.check_params = lambda method, params: None


def _notification(line: bytes | str) -> Mapping[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # a line nested past the parser's depth is not JSON either
        return None
    return message if isinstance(message, dict) and "id" not in message and "method" in message else None


@defect("PRO-5.1", "a notification naming an unknown method is answered")
def answers_notifications() -> None:
    """A notification naming an unknown method is answered with an error of id null."""

    async def handle(self: stdio.Server, line: bytes | str) -> dict[str, Any] | None:
        message = _notification(line)
        if message is not None and message["method"] not in self._methods:
            return stdio._error(None, stdio.METHOD_NOT_FOUND, f"unknown method {message['method']!r}")
        return await _handle(self, line)

    stdio.Server.handle = handle  # type: ignore[method-assign]


@defect("PRO-5.2", "a notification is executed, only not answered")
def executes_notifications() -> None:
    """A notification is executed like a request; only its reply is dropped."""

    async def handle(self: stdio.Server, line: bytes | str) -> dict[str, Any] | None:
        message = _notification(line)
        if message is not None:
            await _handle(self, json.dumps({**message, "id": "notification"}))
            return None
        return await _handle(self, line)

    stdio.Server.handle = handle  # type: ignore[method-assign]


@defect("PRO-6.1", "tool results carry content blocks without their type")
def content_without_type() -> None:
    """Tool results carry their content blocks without ``type``."""
    call = stdio.Server._call

    async def _call(self: stdio.Server, params: Mapping[str, Any]) -> Any:
        result = await call(self, params)
        blocks = [{key: value for key, value in block.items() if key != "type"} for block in result["content"]]
        return {**result, "content": blocks}

    stdio.Server._call = _call  # type: ignore[method-assign]
