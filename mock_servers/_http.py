"""Serving a `FleetApp` over Streamable HTTP with uvicorn, on 127.0.0.1.

Three ways, all built on `run_host`:

- `serve_http`: in this process, for one fleet (an async context manager);
- ``mcp-fleet serve``: a process serving one fleet until Ctrl-C or SIGTERM;
- ``mcp-fleet host`` (`host_main`): a long-lived process driven over the control API by a
  `FleetHost` in another process, ending when its stdin closes or on a signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator

import anyio
import uvicorn

from mock_servers._app import FleetApp
from mock_servers._control import SESSION_IDLE_SECONDS, FleetUrls
from mock_servers._errors import FleetArgumentError, HostError
from mock_servers._ledger import Ledger
from mock_servers._server import DropConnection
from mock_servers._spec import FleetSpec
from mock_servers._spec_reader import resolve_spec

__all__ = ["bind", "host_main", "run_host", "serve_http"]

_HOST = "127.0.0.1"


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: the caller decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _DroppedConnectionFilter(logging.Filter):
    """Keeps deliberate connection drops out of uvicorn's error log, and the requests it
    cancels when it stops with calls still in flight (SIGTERM while a slow call runs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return not isinstance(exc, DropConnection | asyncio.CancelledError)


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: any free port).

    Raises:
        FleetArgumentError: the port is outside 0-65535, in use, or not ours to take.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise FleetArgumentError(f"port must be an integer from 0 to 65535, got {port!r}")
    # IPPROTO_TCP, not the default 0: asyncio turns Nagle's algorithm off only on accepted
    # sockets whose protocol says TCP, and with it on every response waits ~40 ms for a
    # delayed ACK between its head and its body.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((_HOST, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise FleetArgumentError(f"cannot listen on {_HOST}:{port}: {reason}") from None
    sock.set_inheritable(False)
    return sock


@contextlib.asynccontextmanager
async def run_host(
    port: int = 0, *, token: str | None = None, session_idle_seconds: float = SESSION_IDLE_SECONDS
) -> AsyncIterator[FleetApp]:
    """Serve a `FleetApp` with uvicorn on 127.0.0.1 (``port`` 0 picks a free one) while inside.

    Raises:
        FleetArgumentError: the port cannot be listened on.
        HostError: uvicorn did not start.
    """
    sock = bind(port)
    app = FleetApp(token=token, session_idle_seconds=session_idle_seconds)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none", timeout_graceful_shutdown=2)
    server = _Uvicorn(config)
    logging.getLogger("uvicorn.error").addFilter(_DroppedConnectionFilter())
    with sock:
        async with app.running(), anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(30):
                while not server.started:
                    if server.should_exit:
                        raise HostError(f"uvicorn could not serve on {_HOST}:{port}")
                    await anyio.sleep(0.005)
            app.base_url = f"http://{_HOST}:{sock.getsockname()[1]}"
            try:
                yield app
            finally:
                with anyio.CancelScope(shield=True):
                    await app.stop_all()
                server.should_exit = True


@contextlib.asynccontextmanager
async def serve_http(
    spec: FleetSpec | str | os.PathLike[str],
    ledger: Ledger | str | os.PathLike[str] | None = None,
    *,
    port: int = 0,
    fleet: str = "fleet",
    session_idle_seconds: float = SESSION_IDLE_SECONDS,
) -> AsyncIterator[FleetUrls]:
    """Serve a fleet over Streamable HTTP in this process; yields server id → URL.

    ``spec`` is a `FleetSpec`, a preset name or a spec file. Must run on asyncio.
    """
    async with run_host(port, session_idle_seconds=session_idle_seconds) as app:
        yield await app.add_fleet(resolve_spec(spec), ledger, name=fleet)


# ---------------------------------------------------------------------------------------------
# The host process


async def host_main(
    port: int = 0, session_idle_seconds: float = SESSION_IDLE_SECONDS, forkserver_pid: int | None = None
) -> None:
    """``mcp-fleet host``: print one JSON line (url, port, token, pid and the fork server's
    pid, if any), serve until stdin closes or a signal."""
    token = secrets.token_hex(16)
    async with run_host(port, token=token, session_idle_seconds=session_idle_seconds) as app:
        bound = int(app.base_url.rsplit(":", 1)[1])
        info = {"url": app.base_url, "port": bound, "token": token, "pid": os.getpid(), "forkserver": forkserver_pid}
        sys.stdout.write(json.dumps(info) + "\n")
        sys.stdout.flush()
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_wait_signal, stop)
            tg.start_soon(_wait_stdin_closed, stop)
            await stop.wait()
            tg.cancel_scope.cancel()


async def _wait_signal(stop: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            stop.set()
            return


async def _wait_stdin_closed(stop: anyio.Event) -> None:
    # A daemon thread: it may stay blocked in read() until the process ends.
    closed = anyio.Event()
    token = anyio.lowlevel.current_token()

    def wait() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(65536):
                pass
        anyio.from_thread.run_sync(closed.set, token=token)

    threading.Thread(target=wait, daemon=True).start()
    await closed.wait()
    stop.set()
