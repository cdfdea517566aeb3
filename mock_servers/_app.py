"""The ASGI application of a fleet host: many fleets of servers in one process, each on its own path.

A `FleetApp` serves any number of fleets, added and removed while it runs; server ``s`` of
fleet ``f`` lives at ``/f/s/mcp``, and ``/_fleet/...`` is a small control API (add a fleet,
remove it, health; change a server's tools and wait for a client to list them again)
guarded by a token. `mock_servers._http` runs it with uvicorn.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from mock_servers._control import SESSION_IDLE_SECONDS, ChangeApplied, FleetUrls
from mock_servers._errors import FleetArgumentError, HostError, LedgerError, SpecError
from mock_servers._ledger import Ledger
from mock_servers._raw import (
    MAX_BODY,
    HTTPRequestEvent,
    HTTPScope,
    RawHttpServer,
    Receive,
    Scope,
    Send,
    abort,
    read_body,
)
from mock_servers._server import ServerCore, legacy_refusal, sdk_server_for
from mock_servers._spec import CatalogChange, FleetSpec
from mock_servers._spec_changes import change_from_dict
from mock_servers._spec_reader import spec_from_dict

__all__ = ["MAX_SESSIONS", "FleetApp"]

#: Legacy-era HTTP sessions one server keeps open at once. A client that opens one more is
#: refused (HTTP 503) until a session closes or idles out: clients that vanish without a
#: DELETE cost a server at most this many sessions' memory (about 40 KB each), not more.
MAX_SESSIONS = 1000

_SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)
_CONTROL = "_fleet"


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

    def __init__(self, *, token: str | None = None, session_idle_seconds: float = SESSION_IDLE_SECONDS) -> None:
        self.token = token
        self.session_idle_seconds = session_idle_seconds
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
        # Written or refused before anything serves: a ledger that records nothing must not
        # pass for a clean one.
        ledger.record_or_raise("fleet_added", None, fleet=name, servers=[s.id for s in spec.servers])
        fleet = _Fleet(name, ledger, {}, anyio.Event())
        for server in spec.servers:
            core = ServerCore(server, ledger, "http", fleet.stopping)
            mount = _Mount(core, None)
            if server.raw:
                raw = RawHttpServer(core, self.session_idle_seconds, max_sessions=MAX_SESSIONS)
                mount.handle = raw
                await self._tg.start(_own_raw, raw, mount)
            else:
                manager = StreamableHTTPSessionManager(
                    app=sdk_server_for(core),
                    security_settings=_SECURITY,
                    session_idle_timeout=self.session_idle_seconds,
                    max_sessions=MAX_SESSIONS,
                )
                mount.handle = manager.handle_request
                await self._tg.start(_own_manager, manager, mount)
            fleet.mounts[server.id] = mount
        self._fleets[name] = fleet
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

    def _core(self, fleet: str, server_id: str) -> ServerCore:
        served = self._fleets.get(fleet)
        if served is None:
            raise HostError(f"no fleet named {fleet!r}")
        mount = served.mounts.get(server_id)
        if mount is None:
            raise HostError(f"fleet {fleet!r} has no server {server_id!r}; it has {sorted(served.mounts)}")
        return mount.core

    async def change_tools(self, fleet: str, server_id: str, change: CatalogChange) -> ChangeApplied:
        """Change a server's tools now (see `ServerCore.change`).

        Raises:
            HostError: no such fleet or server.
            FleetArgumentError: an edit does not apply to the server's tools.
        """
        return await self._core(fleet, server_id).change(change)

    async def await_listing(self, fleet: str, server_id: str, after: int, timeout: float) -> str:
        """``complete``, ``error`` or ``timeout``: whether a client listed the tools since version ``after``."""
        return await self._core(fleet, server_id).watch.wait(after, timeout)

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

    async def _serve(self, mount: _Mount, scope: HTTPScope, receive: Receive, send: Send) -> None:
        core = mount.core
        faults = core.spec.faults
        if faults.fail_to_start:
            core.fault("fail_to_start")
            await _json(send, 500, {"error": f"server {core.spec.id} failed to start (injected fault)"})
            return
        # A raw server refuses the 2026-07-28 revision itself, in its own protocol.
        legacy = core.spec.legacy_only and not core.spec.raw
        if scope["method"] == "POST" and (faults.crash_on_list is not None or faults.drop_mid_call or legacy):
            try:
                body = await read_body(receive, MAX_BODY)
            except ValueError:
                await _json(send, 413, {"error": f"a request body is at most {MAX_BODY:,} bytes"})
                return
            if legacy and (refusal := legacy_refusal(body)) is not None:
                await _json(send, 200, refusal)
                return
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

    async def _control(self, scope: HTTPScope, receive: Receive, send: Send, parts: list[str]) -> None:
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
            elif len(parts) == 5 and parts[0] == "fleets" and parts[2] == "servers" and parts[4] == "changes":
                if method != "POST":
                    await _json(send, 405, {"error": "POST a change"})
                    return
                body = await read_body(receive)
                change = change_from_dict(json.loads(body) if body else {}, source="<change request>")
                await _json(send, 200, await self.change_tools(parts[1], parts[3], change))
            elif len(parts) == 5 and parts[0] == "fleets" and parts[2] == "servers" and parts[4] == "listing":
                query = dict(_query(scope))
                after, timeout = int(query.get("after", "1")), float(query.get("timeout", "10"))
                if not (after >= 0 and 0 <= timeout <= 600):
                    raise ValueError(f"after must be 0 or more and timeout 0 to 600 seconds, got {query}")
                outcome = await self.await_listing(parts[1], parts[3], after, timeout)
                await _json(send, 200, {"outcome": outcome})
            else:
                await _json(send, 404, {"error": "unknown control request"})
        except SpecError as exc:
            await _json(send, 400, {"error": str(exc), "kind": "spec_error"})
        except FleetArgumentError as exc:
            await _json(send, 400, {"error": str(exc), "kind": "bad_change"})
        except LedgerError as exc:
            await _json(send, 400, {"error": str(exc), "kind": "ledger_error"})
        except HostError as exc:
            await _json(send, 409, {"error": str(exc), "kind": "host_error"})
        except (ValueError, KeyError, TypeError) as exc:
            await _json(send, 400, {"error": f"malformed control request: {exc!r}", "kind": "bad_request"})


async def _own_manager(
    manager: StreamableHTTPSessionManager, mount: _Mount, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    # A session manager is entered and exited by this one task, as anyio requires.
    try:
        async with manager.run(), anyio.create_task_group() as schedule:
            schedule.start_soon(mount.core.run_schedule)
            task_status.started()
            await mount.stop.wait()
            schedule.cancel_scope.cancel()
    finally:
        mount.done.set()


async def _own_raw(
    raw: RawHttpServer, mount: _Mount, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(raw.expire_idle_sessions)
            task_status.started()
            await mount.stop.wait()
            tg.cancel_scope.cancel()
    finally:
        raw.close_sessions()
        mount.done.set()


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> HTTPRequestEvent:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    return receive


def _query(scope: HTTPScope) -> list[tuple[str, str]]:
    return parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1"))


async def _json(send: Send, status: int, data: Any) -> None:
    body = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
