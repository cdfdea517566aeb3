"""One mock server on this process's stdin and stdout, and the parameters to spawn one.

The server reads its own stdin rather than through the MCP SDK's stdio transport, so that
a request the SDK cannot read (arguments nested 200 levels deep) is answered with an error
instead of never, and a reply that cannot be written (the client closed our stdout) ends
the process instead of leaving it waiting for input that no one will answer.
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import sys
import threading
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import FrameType
from typing import Any, NoReturn

import anyio
import mcp_types as types
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage

from mock_servers._launch import stdio_command
from mock_servers._ledger import Ledger
from mock_servers._processes import start_time
from mock_servers._raw import serve_raw_stdio
from mock_servers._server import ServerCore, legacy_refusal, sdk_server_for
from mock_servers._spec import FleetSpec, ServerSpec

__all__ = ["run_stdio", "stdio_params"]


def stdio_params(
    spec_source: str | os.PathLike[str] | FleetSpec,
    server_id: str,
    ledger_path: str | os.PathLike[str] | None = None,
    *,
    forkserver: str | None = None,
) -> StdioServerParameters:
    """How to spawn one server of a fleet with the MCP SDK's stdio client: `stdio_command`
    as the SDK's parameters.

    Raises:
        KeyError: the fleet has no server with this id (when given a `FleetSpec`).
    """
    return StdioServerParameters(**stdio_command(spec_source, server_id, ledger_path, forkserver=forkserver))


def run_stdio(server: ServerSpec, ledger_path: str | os.PathLike[str] | None) -> NoReturn:
    """Serve ``server`` on stdin/stdout until stdin closes, then end the process at once.

    The process records ``process_started`` and ``process_exit`` in the ledger, exits
    with status 1 at once for ``fail_to_start``, and ends without interpreter teardown
    (``os._exit``) so a client's close is quick.
    """
    ledger = Ledger(ledger_path, transport="stdio")
    core = ServerCore(server, ledger, "stdio")
    # Written or refused now: a ledger that records nothing must not pass for a clean one.
    ledger.record_or_raise("process_started", server.id, argv=sys.argv[1:3], started=start_time(os.getpid()))

    def on_signal(signum: int, frame: FrameType | None) -> None:
        core.exit_process(128 + signum, signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    _exit_when_stdout_closes(core)
    if server.faults.fail_to_start:
        core.fault("fail_to_start")
        sys.stderr.write(f"mock server {server.id!r}: failing to start (fail_to_start fault)\n")
        sys.stderr.flush()
        core.exit_process(1, "fail_to_start")
    try:
        anyio.run(_serve, core)
    except BaseException as exc:
        if _client_gone(exc):
            # The client died mid-request: its end of our stdout is closed. Not a crash.
            core.exit_process(0, "client gone")
        core.record("process_exit", code=1, reason=f"crashed: {type(exc).__name__}")
        traceback.print_exception(exc)
        sys.stderr.flush()
        os._exit(1)
    core.exit_process(0, "stdin closed")
    raise AssertionError("unreachable")  # pragma: no cover


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` only says that the other end of a pipe went away."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_client_gone(e) for e in exc.exceptions)
    return isinstance(exc, BrokenPipeError | ConnectionResetError)


async def _serve(core: ServerCore) -> None:
    if core.spec.raw:
        await serve_raw_stdio(core)
        return
    sdk_server = sdk_server_for(core)
    async with _wire(core) as (read, write):
        await sdk_server.run(read, write, sdk_server.create_initialization_options())


def _exit_when_stdout_closes(core: ServerCore) -> None:
    """End the process once the client closes its end of our stdout (a pipe), even while idle."""
    try:
        if not stat.S_ISFIFO(os.fstat(1).st_mode):
            return
    except OSError:
        return

    def watch() -> None:
        poller = select.poll()
        poller.register(1, 0)  # no events asked for: only POLLERR and POLLHUP wake it
        while True:
            for _fd, events in poller.poll():
                if events & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                    core.exit_process(0, "stdout closed")

    threading.Thread(target=watch, name="stdout-watch", daemon=True).start()


@asynccontextmanager
async def _wire(core: ServerCore) -> AsyncIterator[tuple[Any, Any]]:
    """The server's MCP streams over this process's stdin and stdout, one JSON-RPC message a line."""
    to_server, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    lock = anyio.Lock()

    async def write(data: bytes) -> None:
        async with lock:
            try:
                await anyio.to_thread.run_sync(_write_out, data)
            except OSError:  # the client closed our stdout: no reply can reach it any more
                core.exit_process(0, "stdout closed")

    async def read_stdin() -> None:
        async with to_server:
            async for line in anyio.wrap_file(sys.stdin.buffer):
                if not line.strip():
                    continue
                if core.spec.legacy_only and (legacy := legacy_refusal(line)) is not None:
                    await write(json.dumps(legacy).encode("utf-8") + b"\n")
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as error:
                    refusal = _refusal(line, error)
                    if refusal is not None:
                        await write(refusal)
                    continue
                await to_server.send(SessionMessage(message))

    async def write_stdout() -> None:
        async with from_server:
            async for session_message in from_server:
                message = session_message.message
                try:
                    data = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
                except (ValueError, UnicodeError) as error:
                    reply_id = getattr(message, "id", None)
                    if reply_id is None:
                        continue
                    data = _error_line(reply_id, types.INTERNAL_ERROR, f"the reply cannot be written as JSON: {error}")
                await write(data + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdin)
        tg.start_soon(write_stdout)
        yield read_stream, write_stream
        tg.cancel_scope.cancel()


def _write_out(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _error_line(request_id: Any, code: int, message: str) -> bytes:
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message[:500]}}
    return json.dumps(error).encode("utf-8")


def _refusal(line: bytes, error: Exception) -> bytes | None:
    """The error reply to a line the SDK cannot read; None for a notification (never answered)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _error_line(None, types.PARSE_ERROR, "parse error: the line is not JSON") + b"\n"
    if not isinstance(message, dict) or "id" not in message:
        return None
    request_id = message["id"]
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    text = str(error).splitlines()
    why = "it nests too deeply for this server" if "recursion" in str(error).lower() else (text[-1] if text else "")
    return _error_line(request_id, types.INVALID_REQUEST, f"invalid request: {why}") + b"\n"
