"""Fleets for a test: started on demand, described as driver-protocol connections, checked on teardown.

`FleetFactory` is what the ``mcp_fleet`` pytest fixture gives a test (see
`mock_servers.pytest_plugin`): calling it serves a fleet and returns a `ServedFleet`. HTTP
fleets share one fleet host process per test session; stdio fleets are only described (the
host under test spawns the servers). When the test ends, every fleet is checked: a session
its host never closed, or a server process still running, fails the test (the process is
stopped all the same), unless the check is turned off.

The ledger is written by the servers, and its path is on the command line the host under
test runs them with, so the host can write to it too: nothing in it is trusted. A process
the ledger names is signalled only once it is shown to be a server of the fleet: the pid
names a live process that started when its ``process_started`` event says (so the pid was
not reused), and that process runs below this one or carries this factory's mark in its
environment (``MCP_FLEET_FIXTURE``, set in every stdio server's ``env``). A forged line
(pid -1, the pid of an editor) gets no signal; it is reported.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mock_servers._control import ChangeApplied
from mock_servers._errors import FleetArgumentError
from mock_servers._generate import generate_tools
from mock_servers._launch import stdio_command
from mock_servers._ledger import Ledger, LedgerView, ProcessStarted, SessionOpened, read_ledger, wait_for_exits
from mock_servers._processes import signal_verified, start_time, wait_for_pids
from mock_servers._spec import CatalogChange, FleetSpec, spec_to_dict
from mock_servers._spec_format import ChangeDocument
from mock_servers._spec_reader import preset_names, resolve_spec
from mock_servers._wire import ListedTool

if TYPE_CHECKING:  # the SDK's server side loads only when a result is asked for
    from mock_servers._host import FleetHost
    from mock_servers._server import CallResult

__all__ = ["FleetFactory", "ServedFleet"]

Transport = Literal["http", "stdio"]
#: How long a stdio server may take to exit after its host has closed it.
EXIT_GRACE_SECONDS = 2.0
#: The environment variable that marks a stdio server as one a `FleetFactory` described.
MARKER = "MCP_FLEET_FIXTURE"


@dataclass
class ServedFleet:
    """A fleet being served for a test.

    Attributes:
        spec: the fleet's spec.
        transport: ``"http"`` or ``"stdio"``.
        servers: server id → the connection object of the driver protocol, ready for a host's
            configuration: ``{"type": "http", "url": …}`` or ``{"type": "stdio", "command": …,
            "args": […], "env": {…}}``.
        ledger_path: the ledger file every server of the fleet records into.
        check_cleanup: whether the end of the test checks that sessions and processes are gone.
    """

    spec: FleetSpec
    transport: Transport
    servers: dict[str, dict[str, Any]]
    ledger_path: Path
    check_cleanup: bool = True
    _release: Callable[[], None] = field(default=lambda: None, repr=False)
    # The fleet host and the fleet's name on it, for changes made on demand (HTTP only).
    _live: tuple[FleetHost, str] | None = field(default=None, repr=False)

    def change_tools(self, server_id: str, change: CatalogChange | ChangeDocument) -> ChangeApplied:
        """Change a server's tools now, and send ``notifications/tools/list_changed`` if it
        declares ``list_changed``: ``fleet.change_tools("github", {"remove": ["x"]})``.

        Returns ``{"catalog", "tools", "notified"}``; `await_listing` takes the ``catalog``.

        Raises:
            FleetArgumentError: the fleet is served over stdio (each server process keeps its
                own catalog, which only its schedule changes).
            HostError: no such server, or an edit that does not apply to its tools.
            SpecError: ``change`` is not a valid change.
        """
        host, name = self._live_host()
        return host.change_tools(name, server_id, change)

    def await_listing(self, server_id: str, after: int, timeout: float = 10.0) -> str:
        """Wait until the host has listed the server's tools again since catalog version ``after``:
        ``complete``, ``error`` (a listing refused by ``list_error`` or left hanging by ``list_hang``) or ``timeout``."""
        host, name = self._live_host()
        return str(host.await_listing(name, server_id, after, timeout))

    def _live_host(self) -> tuple[FleetHost, str]:
        if self._live is None:
            raise FleetArgumentError(
                "changes on demand need transport='http'; a stdio server changes only by the schedule of its spec"
            )
        return self._live

    @property
    def ledger(self) -> LedgerView:
        """What has happened so far, read afresh: ``.calls(server, tool)`` (each with its
        ``arguments``), ``.listed_pages(server)``, ``.faults(server, kind)``,
        ``.sessions_open()``, ``.processes_alive()``, ``.summary()``."""
        return read_ledger(self.ledger_path)

    @property
    def tools(self) -> dict[str, list[ListedTool]]:
        """Server id → the tool definitions it lists, in order, in wire form."""
        return {s.id: generate_tools(s) for s in self.spec.servers}

    def page_count(self, server_id: str) -> int:
        """How many ``tools/list`` pages the server's catalog takes."""
        server = self.spec.server(server_id)
        return max(1, -(-len(generate_tools(server)) // server.page_size))

    def call_result(self, server_id: str, tool: str, arguments: Mapping[str, Any] | None = None) -> CallResult:
        """The result the server gives for this call when no fault intervenes (see `call_result`)."""
        from mock_servers._server import call_result

        return call_result(self.spec.server(server_id), tool, arguments)

    def sessions_left_open(self, server_id: str | None = None) -> list[SessionOpened]:
        """``session_opened`` events of sessions not closed so far (a stdio session ends with its process)."""
        view = self.ledger
        alive = {e["pid"] for e in view.processes_alive()}
        return [
            session
            for session in view.sessions_open(server_id)
            if session.get("transport") != "stdio" or session["pid"] in alive
        ]

    def leftovers(self) -> list[str]:
        """What the host left behind so far: sessions never closed and server processes still running."""
        problems = []
        for session in self.sessions_left_open():
            where = (
                f"pid {session['pid']}"
                if session.get("transport") == "stdio"
                else f"session {session.get('sessionId')}"
            )
            problems.append(f"server {session['server']!r} ({session.get('transport')}, {where}): session never closed")
        for process in self.ledger.processes_alive():
            problems.append(f"server {process['server']!r} (stdio, pid {process['pid']}): process still running")
        return problems


class FleetFactory:
    """``mcp_fleet(spec, transport="http")``: serve a fleet for the current test (see `ServedFleet`)."""

    def __init__(self, workdir: Path, host: Callable[[], Any], *, check_cleanup: bool = True) -> None:
        self._workdir = workdir
        self._host = host
        self._check_cleanup = check_cleanup
        self._fleets: list[ServedFleet] = []
        self._counter = itertools.count(1)
        self._token = uuid.uuid4().hex

    def __call__(
        self,
        spec: FleetSpec | str | os.PathLike[str],
        *,
        transport: Transport = "http",
        check_cleanup: bool | None = None,
        ledger: str | os.PathLike[str] | None = None,
    ) -> ServedFleet:
        """Serve ``spec`` (a `FleetSpec`, a preset name or a spec file) for this test.

        Raises:
            FleetArgumentError: ``transport`` is neither ``"http"`` nor ``"stdio"``.
            SpecError: the spec is invalid or the file is missing.
            LedgerError: ``ledger`` cannot be written (a missing folder, a folder).
            HostError: the fleet host could not serve it.
        """
        if transport not in ("http", "stdio"):
            raise FleetArgumentError(f"transport must be 'http' or 'stdio', got {transport!r}")
        resolved = resolve_spec(spec)
        n = next(self._counter)
        ledger_path = Path(ledger) if ledger is not None else self._workdir / f"ledger-{n}.jsonl"
        Ledger(ledger_path)  # a ledger that cannot be written fails here, not after the test
        check = self._check_cleanup if check_cleanup is None else check_cleanup
        if transport == "stdio":
            fleet = self._stdio(spec, resolved, ledger_path, n, check)
        else:
            host = self._host()
            urls = host.add_fleet(resolved, ledger_path)
            servers = {sid: {"type": "http", "url": url} for sid, url in urls.items()}
            fleet = ServedFleet(
                resolved, "http", servers, ledger_path, check, lambda: host.remove_fleet(urls), (host, urls.fleet)
            )
        self._fleets.append(fleet)
        return fleet

    def _stdio(self, source: object, spec: FleetSpec, ledger_path: Path, n: int, check: bool) -> ServedFleet:
        if isinstance(source, str) and source in preset_names() and not source.endswith((".json", ".toml")):
            where: str | Path = source
        else:
            # A spec of any size travels as a file: a command line has a length limit.
            where = self._workdir / f"fleet-{n}.json"
            where.write_text(json.dumps(spec_to_dict(spec)), encoding="utf-8")
        servers = {}
        for server in spec.servers:
            command = stdio_command(where, server.id, ledger_path)
            servers[server.id] = {"type": "stdio", **command, "env": {**command["env"], MARKER: self._token}}
        return ServedFleet(spec, "stdio", servers, ledger_path, check)

    def close(self) -> list[str]:
        """Stop every fleet; returns what their hosts left behind (for fleets that check)."""
        problems: list[str] = []
        for fleet in self._fleets:
            if fleet.transport == "stdio":
                wait_for_exits(fleet.ledger_path, EXIT_GRACE_SECONDS)
            found = fleet.leftovers()
            with contextlib.suppress(Exception):
                fleet._release()
            spared = _stop(fleet.ledger, self._token)
            if fleet.check_cleanup and found:
                problems += found
            problems += [
                f"server {event['server']!r} (pid {event['pid']}): not signalled, since it could not be shown to be "
                "a server of this fleet (its start time or ancestry does not match the ledger)"
                for event in spared
            ]
        self._fleets.clear()
        return problems


def _stop(view: LedgerView, token: str) -> list[ProcessStarted]:
    """End the server processes a host left running: SIGTERM (the server records its exit), then SIGKILL.

    Only a process shown to be the fleet's is signalled; returns the events of those that
    could not be.
    """
    spared = []
    for event in view.processes_alive():
        pid, started = event["pid"], event.get("started")
        signalled = False
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if not isinstance(started, int) or start_time(pid) != started:
                break  # gone, or never shown to be the process the event names
            if not signal_verified(pid, signum, started=started, ancestor=os.getpid(), marker=(MARKER, token)):
                break
            signalled = True
            wait_for_pids([pid], 2.0)
        if not signalled and start_time(pid) == started:
            spared.append(event)
    return spared
