"""The stdio transport of the reference's MCP client: one server process, ended with its whole group.

The MCP SDK's own stdio client ends a server's process group only when the server does not
exit by itself, so whatever the server started in its group outlives a server that leaves
politely; it copies the server's stderr to ours without bound, and logs a traceback for
every line of garbage on its stdout. This transport differs in four ways:

- the server leads a process group of its own (a new session), and when the connection
  closes the whole group is ended, whether the server left by itself or not;
- a line on stdout is at most :data:`MAX_LINE` bytes, and after :data:`MAX_GARBAGE` lines
  that are not JSON-RPC the connection is given up (a server writing ``yes`` cannot keep a
  client busy, nor fill its log);
- at most :data:`STDERR_FORWARD` bytes of the server's stderr reach ours; the rest is
  drained (the server never blocks on it) and counted;
- a message that cannot be written as UTF-8 JSON (a lone surrogate in a tool's
  arguments) fails its own request with an error, and the connection stays up.

Every live group is in :data:`reference_impl._groups.GROUPS`, so that a host ending in a hurry (a signal) can end
them all at once, and a watchdog can be told which groups to end should the host die.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import anyio.abc
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from ._groups import GROUPS, kill_group

__all__ = ["MAX_GARBAGE", "MAX_LINE", "STDERR_FORWARD", "stdio_transport"]

#: Bytes of one line a server writes on stdout (a page of a large catalog fits many times).
MAX_LINE: Final = 64 * 1024 * 1024
#: Lines that are not JSON-RPC messages after which a server is given up.
MAX_GARBAGE: Final = 100
#: Bytes of a server's stderr copied to the host's stderr; the rest is counted and dropped.
STDERR_FORWARD: Final = 64 * 1024
#: Seconds a server gets to exit once its stdin is closed, then again after SIGTERM.
EXIT_GRACE: Final = 2.0
#: The same when the host is ending in a hurry (``GROUPS.hurry``).
HURRY_GRACE: Final = 0.25
#: Seconds the writer gets to flush what it accepted before stdin is closed.
_FLUSH: Final = 0.5
_POLL: Final = 0.01
_CHUNK: Final = 65536


def _note(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


@asynccontextmanager
async def stdio_transport(
    params: StdioServerParameters, *, name: str, problems: list[str] | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server of ``params`` and yield the MCP streams to it; end its group on exit.

    ``name`` names the server in what this writes to stderr; why the transport gave the
    server up, if it did, is appended to ``problems``.

    Raises:
        OSError: the server could not be started.
    """
    # CAT-1.4: the configured variables are set over the default environment; the args are passed as given.
    env = get_default_environment() | (params.env or {})
    process = await anyio.open_process(
        [params.command, *params.args],
        env=env,
        cwd=params.cwd,
        # PRO-7.1: a group of its own, so that ending the server ends what it started.
        start_new_session=True,
    )
    pgid = process.pid
    GROUPS.add(pgid)
    # No await until the task group runs: a cancellation in between would leak the process.
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    link = _Link(name, process, to_session, from_session, writer_done, problems if problems is not None else [])
    async with anyio.create_task_group() as tg:
        tg.start_soon(link.read_stdout)
        tg.start_soon(link.write_stdin)
        tg.start_soon(link.forward_stderr)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_FLUSH):
                    await writer_done.wait()
                await _end_group(process, pgid)
                for stream in (read_stream, write_stream, to_session, from_session):
                    await stream.aclose()
                link.report_dropped()
            tg.cancel_scope.cancel()


class _Link:
    """The three pipe tasks of one server process."""

    def __init__(
        self,
        name: str,
        process: anyio.abc.Process,
        to_session: Any,
        from_session: Any,
        writer_done: anyio.Event,
        problems: list[str],
    ) -> None:
        self.name = name
        self.process = process
        self.to_session = to_session
        self.from_session = from_session
        self.writer_done = writer_done
        self.problems = problems
        self.garbage = 0
        self.dropped = 0

    async def read_stdout(self) -> None:
        assert self.process.stdout is not None
        buffer = bytearray()
        try:
            async with self.to_session:
                while True:
                    try:
                        chunk = await self.process.stdout.receive(_CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                        return
                    buffer += chunk
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        if not await self._deliver(line):
                            return
                    if len(buffer) > MAX_LINE:
                        self._give_up(f"it wrote a line longer than {MAX_LINE:,} bytes")
                        return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session is gone
        finally:
            await self._drain()

    async def _deliver(self, line: bytes) -> bool:
        """Pass one line on; False once the server has written too much garbage to go on."""
        if not line.strip():
            return True
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception:
            self.garbage += 1
            if self.garbage == 1:
                _note(f"server {self.name!r} wrote a line that is not a JSON-RPC message: {line[:200]!r}")
            if self.garbage >= MAX_GARBAGE:
                self._give_up(f"it wrote {self.garbage} lines that are not JSON-RPC messages")
                return False
            return True
        await self.to_session.send(SessionMessage(message))
        return True

    def _give_up(self, why: str) -> None:
        self.problems.append(why)
        _note(f"server {self.name!r}: {why}; giving it up")

    async def _drain(self) -> None:
        """Read and drop what is left, so that a server flushing its output can still exit."""
        assert self.process.stdout is not None
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            while True:
                await self.process.stdout.receive(_CHUNK)

    async def write_stdin(self) -> None:
        assert self.process.stdin is not None
        try:
            async with self.from_session:
                async for session_message in self.from_session:
                    try:
                        data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        line = (data + "\n").encode("utf-8")
                    except (ValueError, UnicodeError) as error:
                        await self._refuse(session_message.message, error)
                        continue
                    await self.process.stdin.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server no longer reads: end the session's wait rather than leave a request hanging.
            await self.to_session.aclose()
        finally:
            self.writer_done.set()

    async def _refuse(self, message: Any, error: Exception) -> None:
        """Fail the one request that cannot be written; a notification is dropped."""
        if not isinstance(message, types.JSONRPCRequest):
            return
        text = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        refusal = types.JSONRPCError(
            jsonrpc="2.0",
            id=message.id,
            error=types.ErrorData(
                code=types.INVALID_PARAMS, message=f"the request cannot be written as UTF-8 JSON: {text}"
            ),
        )
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.to_session.send(SessionMessage(refusal))

    async def forward_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        out = getattr(sys.stderr, "buffer", None)
        left = STDERR_FORWARD
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                chunk = await stream.receive(_CHUNK)
                kept, self.dropped = chunk[:left], self.dropped + max(0, len(chunk) - left)
                left -= len(kept)
                if kept and out is not None:
                    with contextlib.suppress(OSError, ValueError):
                        out.write(kept)
                        out.flush()

    def report_dropped(self) -> None:
        if self.dropped:
            _note(f"[server {self.name!r}: {self.dropped:,} more bytes of stderr dropped]")


async def _end_group(process: anyio.abc.Process, pgid: int) -> None:
    """Close stdin, give the server its grace, then end the group, whatever is left of it.

    Closing a run ends its stdio servers this way (ERR-7.1), and so does a driver's shutdown or
    SIGTERM (PRO-7.1, PRO-7.2), the grace cut short when it hurries.
    """
    assert process.stdin is not None
    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    grace = HURRY_GRACE if GROUPS.hurry else EXIT_GRACE
    for signum in (None, signal.SIGTERM, signal.SIGKILL):
        if signum is not None:
            kill_group(pgid, signum)
        if await _exited(process, grace if signum != signal.SIGKILL else EXIT_GRACE):
            break
    # The server has gone; what it started in its group has not, unless it saw to it.
    kill_group(pgid, signal.SIGKILL)
    GROUPS.discard(pgid)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()


async def _exited(process: anyio.abc.Process, timeout: float) -> bool:
    # Not process.wait(): it also waits for the pipes to close, which a child of the server
    # holding them open would delay.
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(_POLL)
    return process.returncode is not None
