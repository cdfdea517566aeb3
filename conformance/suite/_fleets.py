"""Fleets served for the suite's tests: one mock fleet host per pytest process.

Each pytest process (each xdist worker) starts its own fleet host the first time a test
needs one and stops it at the end of the session, so workers never share ports. A test
serves a fleet per example with :meth:`Fleets.serve` and gets back the ``servers``
parameter of ``run.open``, a fresh ledger and the tools each server lists.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from conformance._wire_types import ServerConfig, StdioTransport, ToolPolicy
from conformance.suite._wire import fail, portable
from mock_servers import (
    CatalogChange,
    ChangeDocument,
    FleetHost,
    FleetSpec,
    FleetUrls,
    LedgerView,
    ListedTool,
    ProcessStarted,
    generate_tools,
    read_ledger,
    spec_to_dict,
    stdio_command,
    wait_for_exits,
    wait_for_listing,
)

__all__ = ["RELIST_SECONDS", "Fleet", "Fleets", "Transport", "expect_nothing_left", "tools_of"]

Transport = Literal["http", "stdio"]
#: How long a server may wait to be listed again after a change (PROTOCOL.md P39).
RELIST_SECONDS = 10.0
#: Server id -> the tool policy the run is given for it.
Policies = Mapping[str, ToolPolicy]


def tools_of(spec: FleetSpec) -> dict[str, list[ListedTool]]:
    """What each server of ``spec`` lists, without serving it: what the oracle needs."""
    return {s.id: generate_tools(s) for s in spec.servers}


@dataclass
class Fleet:
    """A fleet being served for one example."""

    spec: FleetSpec
    policies: dict[str, ToolPolicy]
    #: The ``servers`` parameter of ``run.open``.
    servers: list[ServerConfig]
    ledger_path: Path
    tools: dict[str, list[ListedTool]]
    #: The host serving the fleet and its name there (HTTP fleets): live catalogs change through it.
    host: FleetHost | None = None
    urls: FleetUrls | None = None
    #: Where the policies of the runs opened over this fleet are noted (`Fleets.recent`).
    recent: collections.deque[tuple[FleetSpec, dict[str, ToolPolicy]]] | None = None

    async def change_tools(self, server_id: str, change: CatalogChange | ChangeDocument) -> int:
        """Change a server's tools now and send its notifications; the catalog version it made.

        In a thread: an implementation tested in this process keeps serving meanwhile.
        """
        host, urls = self._live()
        answer = await asyncio.to_thread(host.change_tools, urls, server_id, change)
        return int(answer["catalog"])

    async def relisted(self, server_id: str, catalog: int, timeout: float = RELIST_SECONDS) -> str:
        """Wait until the server has been listed again since ``catalog``: ``complete``, ``error`` or ``timeout``.

        A fleet served over stdio (whose changes are scheduled in its spec) is watched
        through its ledger, where only ``complete`` or ``timeout`` can be read.
        """
        if self.host is None:
            listed = await asyncio.to_thread(wait_for_listing, self.ledger_path, server_id, catalog, timeout)
            return "complete" if listed else "timeout"
        host, urls = self._live()
        return await asyncio.to_thread(host.await_listing, urls, server_id, catalog, timeout)

    def _live(self) -> tuple[FleetHost, FleetUrls]:
        if self.host is None or self.urls is None:
            raise RuntimeError("live catalogs change only on fleets served over HTTP")
        return self.host, self.urls

    def ledger(self) -> LedgerView:
        return read_ledger(self.ledger_path)

    def processes_alive(self, seconds: float = 8.0) -> list[ProcessStarted]:
        """Server processes still running, after giving them ``seconds`` to exit (stdio)."""
        return list(wait_for_exits(self.ledger_path, seconds).processes_alive())

    def describe(self) -> dict[str, Any]:
        """What replays the fleet: the spec and the policies."""
        return {"fleet": spec_to_dict(self.spec), "policies": self.policies}

    def with_policies(self, policies: Policies) -> list[ServerConfig]:
        """The ``servers`` parameter with other policies (server id -> wire policy)."""
        if self.recent is not None:
            self.recent.append((self.spec, {s.id: policies.get(s.id, ToolPolicy()).copy() for s in self.spec.servers}))
        return [{**s, "policy": policies.get(s.get("id", ""), ToolPolicy()).copy()} for s in self.servers]


class Fleets:
    """Serves fleets over HTTP on a lazily started host, or over stdio."""

    def __init__(self, workdir: Path) -> None:
        self._workdir = workdir
        self._host: FleetHost | None = None
        self._counter = itertools.count()
        #: The fleets served last, with their policies: what a finding may be diagnosed against.
        self.recent: collections.deque[tuple[FleetSpec, dict[str, ToolPolicy]]] = collections.deque(maxlen=4)

    @property
    def host(self) -> FleetHost:
        if self._host is None:
            # Its fork server starts stdio servers in a tenth of the time a process of their own takes.
            self._host = FleetHost.spawn(forkserver=True)
        return self._host

    def close(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            host.close()

    def _ledger(self) -> Path:
        return self._workdir / f"ledger-{next(self._counter)}.jsonl"

    @contextlib.contextmanager
    def serve(
        self,
        spec: FleetSpec,
        policies: Policies | None = None,
        *,
        transport: Transport = "http",
        record: bool = True,
    ) -> Iterator[Fleet]:
        """Serve ``spec``; ``policies`` maps server id to a wire ``toolPolicy`` (default ``{}``).

        ``transport`` is ``"http"`` (on the shared host) or ``"stdio"`` (the SUT spawns
        each server as a subprocess). Unless ``record`` is false, the fleet joins `recent`.
        """
        ledger = self._ledger()
        given: Policies = policies or {}
        pol = {s.id: given.get(s.id, ToolPolicy()).copy() for s in spec.servers}
        if record:
            self.recent.append((spec, pol))
        tools = tools_of(spec)
        if transport == "stdio":
            servers: list[ServerConfig] = []
            for s in spec.servers:
                command = stdio_command(spec, s.id, ledger, forkserver=self.host.forkserver)
                transport_params: StdioTransport = {"type": "stdio", **command}
                servers.append({"id": s.id, "transport": transport_params, "policy": pol[s.id].copy()})
            yield Fleet(spec, pol, servers, ledger, tools, recent=self.recent if record else None)
            return
        urls = self.host.add_fleet(spec, ledger)
        try:
            servers = [
                {"id": s.id, "transport": {"type": "http", "url": urls[s.id]}, "policy": pol[s.id].copy()}
                for s in spec.servers
            ]
            yield Fleet(spec, pol, servers, ledger, tools, self.host, urls, self.recent if record else None)
        finally:
            with contextlib.suppress(Exception):
                self.host.remove_fleet(urls)


def expect_nothing_left(sentence: str, what: str, served: Fleet) -> None:
    """Every stdio server process of ``served`` has ended and every session is closed."""
    alive = served.processes_alive()
    if alive or not served.ledger().every_session_closed():
        raise fail(
            (sentence,),
            f"{what} left server processes or sessions behind",
            expected=[],
            observed=alive or portable(served.ledger().sessions_open()),
            case=served.describe(),
        )
