"""Streamable HTTP fleets: many servers in one process, each on its own path.

A `FleetApp` is one ASGI application that serves any number of fleets, added and
removed while it runs; server ``s`` of fleet ``f`` lives at ``/f/s/mcp``. It is served by
uvicorn on 127.0.0.1 in three ways:

- `serve_http`: in this process, for one fleet (an async context manager);
- ``mcp-fleet serve``: a process serving one fleet until Ctrl-C or SIGTERM;
- `FleetHost`: a long-lived ``mcp-fleet host`` subprocess to which fleets are added over a
  small control API (``POST /_fleet/fleets``), so a test session starts one process and
  serves many generated fleets from it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from mock_servers._errors import HostError, SpecError
from mock_servers._ledger import Ledger
from mock_servers._raw import Receive, Scope, Send, abort, raw_http_app, read_body
from mock_servers._server import DropConnection, ServerCore, sdk_server_for
from mock_servers._spec import FleetSpec, resolve_spec, spec_from_dict, spec_to_dict
from mock_servers._stdio import _PACKAGE_ROOT

__all__ = ["FleetApp", "FleetHost", "FleetUrls", "run_host", "serve_http"]

_SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)
_CONTROL = "_fleet"


class FleetUrls(dict[str, str]):
    """Server id → endpoint URL of one fleet being served; ``.fleet`` is the fleet's name."""

    def __init__(self, fleet: str, urls: Mapping[str, str]) -> None:
        super().__init__(urls)
        self.fleet = fleet


@dataclass(slots=True)
class _Mount:
    core: ServerCore
    handle: Any
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)


@dataclass(slots=True)
class _Fleet:
    name: str
    ledger: Ledger
    mounts: dict[str, _Mount]
    stopping: anyio.Event


class FleetApp:
    """The ASGI application of a fleet host (see the module docstring)."""

    def __init__(self, *, token: str | None = None) -> None:
        self.token = token
        self.base_url = ""
        self._fleets: dict[str, _Fleet] = {}
        self._tg: TaskGroup | None = None
        self._counter = 0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FleetApp]:
        """Run the task group that owns every server's session manager."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    for name in list(self._fleets):
                        await self.remove_fleet(name)
                self._tg = None
                tg.cancel_scope.cancel()

    def fleets(self) -> dict[str, FleetUrls]:
        return {name: self._urls(f) for name, f in self._fleets.items()}

    async def add_fleet(
        self, spec: FleetSpec, ledger: Ledger | str | os.PathLike[str] | None = None, *, name: str | None = None
    ) -> FleetUrls:
        """Start serving a fleet; returns the URL of each server.

        Raises:
            HostError: the host is not running, or the fleet name is taken or unusable.
        """
        if self._tg is None:
            raise HostError("the fleet host is not running")
        if name is None:
            self._counter += 1
            name = f"f{self._counter}"
        if name in self._fleets or name == _CONTROL or not name.replace("-", "").replace("_", "").isalnum():
            raise HostError(f"fleet name {name!r} is taken or not made of letters, digits, '-' and '_'")
        ledger = ledger if isinstance(ledger, Ledger) else Ledger(ledger, transport="http")
        ledger = ledger.for_transport("http")
        fleet = _Fleet(name, ledger, {}, anyio.Event())
        for server in spec.servers:
            core = ServerCore(server, ledger, "http", fleet.stopping)
            mount = _Mount(core, None)
            if server.raw:
                mount.handle = raw_http_app(core)
                mount.done.set()
            else:
                manager = StreamableHTTPSessionManager(app=sdk_server_for(core), security_settings=_SECURITY)
                mount.handle = manager.handle_request
                await self._tg.start(_own_manager, manager, mount)
            fleet.mounts[server.id] = mount
        self._fleets[name] = fleet
        ledger.record("fleet_added", None, fleet=name, servers=[s.id for s in spec.servers])
        return self._urls(fleet)

    async def remove_fleet(self, name: str) -> None:
        """Stop serving a fleet: its sessions end and its paths answer 404.

        Raises:
            HostError: there is no fleet of that name.
        """
        fleet = self._fleets.pop(name, None)
        if fleet is None:
            raise HostError(f"no fleet named {name!r}")
        fleet.stopping.set()
        for mount in fleet.mounts.values():
            mount.stop.set()
        for mount in fleet.mounts.values():
            await mount.done.wait()
        fleet.ledger.record("fleet_removed", None, fleet=name)

    async def stop_all(self) -> None:
        for name in list(self._fleets):
            await self.remove_fleet(name)

    def _urls(self, fleet: _Fleet) -> FleetUrls:
        return FleetUrls(fleet.name, {sid: f"{self.base_url}/{fleet.name}/{sid}/mcp" for sid in fleet.mounts})

    # -- ASGI -----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        parts = scope["path"].strip("/").split("/")
        if parts[0] == _CONTROL:
            await self._control(scope, receive, send, parts[1:])
            return
        fleet = self._fleets.get(parts[0])
        mount = fleet.mounts.get(parts[1]) if fleet and len(parts) == 3 and parts[2] == "mcp" else None
        if mount is None:
            await _json(send, 404, {"error": f"no server at {scope['path']}"})
            return
        await self._serve(mount, scope, receive, send)

    async def _serve(self, mount: _Mount, scope: Scope, receive: Receive, send: Send) -> None:
        core = mount.core
        faults = core.spec.faults
        if faults.fail_to_start:
            core.fault("fail_to_start")
            await _json(send, 500, {"error": f"server {core.spec.id} failed to start (injected fault)"})
            return
        if scope["method"] == "POST" and (faults.crash_on_list is not None or faults.drop_mid_call):
            body = await read_body(receive)
            if self._drops(core, body):
                await abort(send)
            receive = _replay(body)
        await mount.handle(scope, receive, send)

    @staticmethod
    def _drops(core: ServerCore, body: bytes) -> bool:
        """Whether this request is one a fault says to cut off (recording the fault if so)."""
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or not isinstance(message.get("params", {}), dict):
            return False
        params = message.get("params") or {}
        if message.get("method") == "tools/list":
            try:
                page = core.page_index(params.get("cursor"))
            except Exception:
                return False
            if core.list_fault(page) == "crash_on_list":
                core.fault("crash_on_list", page=page)
                return True
        if message.get("method") == "tools/call" and isinstance(params.get("name"), str):
            name = params["name"]
            if core.spec.faults.calls_drop(name):
                core.record("tool_called", name=name, arguments=params.get("arguments") or {}, isError=True)
                core.fault("drop_mid_call", tool=name)
                return True
        return False

    async def _control(self, scope: Scope, receive: Receive, send: Send, parts: list[str]) -> None:
        headers = dict(scope["headers"])
        if self.token is not None and headers.get(b"x-fleet-token", b"").decode() != self.token:
            await _json(send, 403, {"error": "missing or wrong X-Fleet-Token"})
            return
        method = scope["method"]
        try:
            if parts == ["health"]:
                await _json(send, 200, {"ok": True, "pid": os.getpid(), "fleets": sorted(self._fleets)})
            elif parts == ["fleets"] and method == "POST":
                request = json.loads(await read_body(receive))
                spec = spec_from_dict(request["spec"], source=request.get("source", "<control request>"))
                urls = await self.add_fleet(spec, request.get("ledger"), name=request.get("name"))
                await _json(send, 200, {"fleet": urls.fleet, "servers": dict(urls)})
            elif len(parts) == 2 and parts[0] == "fleets" and method == "DELETE":
                await self.remove_fleet(parts[1])
                await _json(send, 200, {"removed": parts[1]})
            else:
                await _json(send, 404, {"error": "unknown control request"})
        except SpecError as exc:
            await _json(send, 400, {"error": str(exc), "kind": "spec_error"})
        except HostError as exc:
            await _json(send, 409, {"error": str(exc), "kind": "host_error"})
        except (ValueError, KeyError, TypeError) as exc:
            await _json(send, 400, {"error": f"malformed control request: {exc!r}", "kind": "bad_request"})


async def _own_manager(
    manager: StreamableHTTPSessionManager, mount: _Mount, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    # A session manager is entered and exited by this one task, as anyio requires.
    try:
        async with manager.run():
            task_status.started()
            await mount.stop.wait()
    finally:
        mount.done.set()


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    return receive


async def _json(send: Send, status: int, data: Any) -> None:
    body = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------------------------------------
# Running uvicorn


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: the caller decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _DroppedConnectionFilter(logging.Filter):
    """Keeps deliberate connection drops out of uvicorn's error log."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return not isinstance(exc, DropConnection)


@contextlib.asynccontextmanager
async def run_host(port: int = 0, *, token: str | None = None) -> AsyncIterator[FleetApp]:
    """Serve a `FleetApp` with uvicorn on 127.0.0.1 (``port`` 0 picks a free one) while inside."""
    app = FleetApp(token=token)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", ws="none", timeout_graceful_shutdown=2
    )
    server = _Uvicorn(config)
    logging.getLogger("uvicorn.error").addFilter(_DroppedConnectionFilter())
    async with app.running(), anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:
                if server.should_exit:
                    raise HostError(f"could not serve on 127.0.0.1:{port}")
                await anyio.sleep(0.005)
        bound = server.servers[0].sockets[0].getsockname()[1]
        app.base_url = f"http://127.0.0.1:{bound}"
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
) -> AsyncIterator[FleetUrls]:
    """Serve a fleet over Streamable HTTP in this process; yields server id → URL.

    ``spec`` is a `FleetSpec`, a preset name or a spec file. Must run on asyncio.
    """
    async with run_host(port) as app:
        yield await app.add_fleet(resolve_spec(spec), ledger, name=fleet)


# ---------------------------------------------------------------------------------------------
# The host process and its client


async def host_main() -> None:
    """``mcp-fleet host``: print one JSON line (url, port, token, pid), serve until stdin closes or a signal."""
    token = secrets.token_hex(16)
    async with run_host(token=token) as app:
        port = int(app.base_url.rsplit(":", 1)[1])
        sys.stdout.write(json.dumps({"url": app.base_url, "port": port, "token": token, "pid": os.getpid()}) + "\n")
        sys.stdout.flush()
        async with anyio.create_task_group() as tg:
            stop = anyio.Event()
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


class FleetHost:
    """A long-lived fleet host subprocess and a client for its control API.

    Start it once (``with FleetHost.start() as host:``), then add fleets to it at any
    time; each ``add_fleet`` returns the URL of every server of that fleet. The process
    ends when the ``with`` block exits, when `close` is called, or when this process
    ends (it watches its stdin), so it is never left behind.
    """

    def __init__(self, process: subprocess.Popen[bytes], url: str, token: str, log_path: Path) -> None:
        self.process = process
        self.url = url
        self.token = token
        self.log_path = log_path
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @classmethod
    @contextlib.contextmanager
    def start(cls, *, timeout: float = 60.0) -> Iterator[FleetHost]:
        """Spawn ``python -m mock_servers host`` and wait for its address.

        Raises:
            HostError: the process did not report an address within ``timeout`` seconds.
        """
        host = cls.spawn(timeout=timeout)
        try:
            yield host
        finally:
            host.close()

    @classmethod
    def spawn(cls, *, timeout: float = 60.0) -> FleetHost:
        """Like `start`, for callers that manage the lifetime themselves (call `close`)."""
        log = tempfile.NamedTemporaryFile(prefix="mcp-fleet-host-", suffix=".log", delete=False)  # noqa: SIM115
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        process = subprocess.Popen(
            [sys.executable, "-m", "mock_servers", "host"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )
        log.close()
        line = _read_line(process, timeout)
        try:
            info = json.loads(line)
            return cls(process, info["url"], info["token"], Path(log.name))
        except (ValueError, KeyError):
            process.kill()
            process.wait()
            text = Path(log.name).read_text(errors="replace")[-2000:]
            raise HostError(f"the fleet host did not start (first line {line!r}); its log ends with:\n{text}") from None

    def add_fleet(
        self,
        spec: FleetSpec | str | os.PathLike[str],
        ledger_path: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
    ) -> FleetUrls:
        """Serve a fleet (a `FleetSpec`, preset name or spec file); returns server id → URL.

        Raises:
            HostError: the host refused (name taken) or is gone.
        """
        body: dict[str, Any] = {"spec": spec_to_dict(resolve_spec(spec)), "name": name}
        if ledger_path is not None:
            body["ledger"] = str(Path(ledger_path).resolve())
        answer = self._request("POST", "/_fleet/fleets", body)
        return FleetUrls(answer["fleet"], answer["servers"])

    def remove_fleet(self, fleet: str | FleetUrls) -> None:
        """Stop serving a fleet, given its name or the `FleetUrls` that `add_fleet` returned."""
        name = fleet.fleet if isinstance(fleet, FleetUrls) else fleet
        self._request("DELETE", f"/_fleet/fleets/{name}", None)

    def health(self) -> dict[str, Any]:
        answer: dict[str, Any] = self._request("GET", "/_fleet/health", None)
        return answer

    def close(self, timeout: float = 10.0) -> None:
        """Stop the host process: close its stdin, then terminate it, then kill it."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                assert self.process.stdin is not None
                self.process.stdin.close()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(2)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(OSError):
            self.log_path.unlink()

    def _request(self, method: str, path: str, body: Any) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("X-Fleet-Token", self.token)
        request.add_header("Content-Type", "application/json")
        try:
            with self._opener.open(request, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError, KeyError, TypeError):
                detail = json.loads(detail)["error"]
            raise HostError(f"fleet host refused {method} {path}: {detail}") from None
        except OSError as exc:
            raise HostError(f"fleet host at {self.url} is unreachable: {exc}") from None


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    result: list[bytes] = []

    def read() -> None:
        assert process.stdout is not None
        result.append(process.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0].decode(errors="replace").strip() if result else ""
