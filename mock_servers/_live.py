"""Live catalogs: a server's tools as they stand now, how a change edits them, and who is told.

`LiveCatalog` holds the definitions a server lists and applies a `CatalogChange` to them
(remove, rename, update, add, in that order). `Notifier` sends
``notifications/tools/list_changed`` to every client that can receive one: on the handshake
era through each session the server has seen, on the 2026-07-28 era through the
``subscriptions/listen`` streams open on the server's bus, and can break those streams.
`ListingWatch` tells a test when a client has listed the tools again after a change, so
that it need not sleep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ServerEvent, ToolsListChanged

from mock_servers._generate import build_catalog
from mock_servers._spec import CatalogChange, ServerSpec, ToolSpec
from mock_servers._spec_changes import apply_names_or_fail, updated_tool
from mock_servers._wire import ListedTool, ToolAnnotations

__all__ = ["ChangeReport", "ListingWatch", "LiveCatalog", "Notifier"]


@dataclass(frozen=True, slots=True)
class ChangeReport:
    """What a change did, by tool name (the ledger's ``tools_changed`` event)."""

    catalog: int
    removed: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...]
    updated: tuple[str, ...]
    added: tuple[str, ...]
    tools: int
    list_error: bool
    list_hang: bool


def _tool_to_wire(tool: ToolSpec) -> ListedTool:
    # An explicit tool in a change is served exactly as one in the spec would be: its wire
    # form and annotations are JSON from outside, served as written.
    if tool.wire is not None:
        return cast(ListedTool, {key: _copy(value) for key, value in tool.wire.items()})
    out: ListedTool = {"name": tool.name, "description": tool.description, "inputSchema": _copy(tool.input_schema)}
    if tool.annotations is not None:
        out["annotations"] = cast(ToolAnnotations, _copy(tool.annotations))
    if tool.title is not None:
        out["title"] = tool.title
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(item) for item in value]
    return value


class LiveCatalog:
    """The tools a server lists now: its generated catalog, as every change so far left it.

    ``version`` counts the changes applied (0: the catalog as generated). The faults of the
    spec that mark tools (``bad_names``, ``huge_descriptions``…) stay with their tools.
    """

    def __init__(self, spec: ServerSpec) -> None:
        built = build_catalog(spec)
        self.tools: list[ListedTool] = built.tools
        self._marks: dict[int, list[str]] = {id(built.tools[i]): kinds for i, kinds in built.faulty.items()}
        self.version = 0
        self.list_error = False
        self.list_hang = False
        self.by_name: dict[str, ListedTool] = {}
        self._index()

    def _index(self) -> None:
        self.by_name = {}
        for tool in self.tools:
            name = tool.get("name")
            if isinstance(name, str) and name not in self.by_name:
                self.by_name[name] = tool

    def faults_at(self, index: int) -> list[str]:
        """The spec faults that the tool at this listing position carries."""
        return self._marks.get(id(self.tools[index]), [])

    def names(self) -> list[str]:
        return [t["name"] for t in self.tools if isinstance(t.get("name"), str)]

    def apply(self, change: CatalogChange) -> ChangeReport:
        """Edit the tools as ``change`` says and count the version up.

        Raises:
            FleetArgumentError: an edit names a tool the server does not list (or adds a name
                it has); nothing is changed then.
        """
        apply_names_or_fail(self.names(), change)
        tools = list(self.tools)
        for name in change.remove:
            tools.remove(next(t for t in tools if t.get("name") == name))
        for rename in change.rename:
            i = next(i for i, t in enumerate(tools) if t.get("name") == rename.old)
            tools[i] = self._carry(tools[i], {**tools[i], "name": rename.new})
        for update in change.update:
            i = next(i for i, t in enumerate(tools) if t.get("name") == update.name)
            tools[i] = self._carry(tools[i], updated_tool(tools[i], update))
        tools += [_tool_to_wire(t) for t in change.add]
        self.tools = tools
        self._index()
        self.version += 1
        if change.list_error is not None:
            self.list_error = change.list_error
        if change.list_hang is not None:
            self.list_hang = change.list_hang
        return ChangeReport(
            catalog=self.version,
            removed=change.remove,
            renamed=tuple((r.old, r.new) for r in change.rename),
            updated=tuple(u.name for u in change.update),
            added=tuple(t.name for t in change.add),
            tools=len(tools),
            list_error=self.list_error,
            list_hang=self.list_hang,
        )

    def _carry(self, old: ListedTool, new: ListedTool) -> ListedTool:
        marks = self._marks.pop(id(old), None)
        if marks is not None:
            self._marks[id(new)] = marks
        return new


class _Bus:
    """A `mcp.server.subscriptions.SubscriptionBus` that knows how many streams listen."""

    def __init__(self) -> None:
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}

    def __len__(self) -> int:
        return len(self._listeners)

    async def publish(self, event: ServerEvent) -> None:
        for listener in list(self._listeners.values()):
            listener(event)
        # Lets the streams drain between the events of a storm.
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None) and None


@dataclass
class Notifier:
    """Where ``notifications/tools/list_changed`` go: handshake-era connections and listen streams."""

    bus: _Bus = field(default_factory=_Bus)
    _connections: dict[int, Any] = field(default_factory=dict)
    _streams: dict[object, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._listen = ListenHandler(self.bus)

    async def listen(self, ctx: Any, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        """Serve a ``subscriptions/listen`` stream (the SDK's handler), one `break_streams` can end."""
        token = object()
        self._streams[token] = False
        try:
            result = await self._listen(ctx, params)
        finally:
            broken = self._streams.pop(token)
        if broken:
            # Answered on the stream's own request: the client's subscription ends as lost.
            raise MCPError(types.INTERNAL_ERROR, "the subscriptions/listen stream broke (break_listen set by a change)")
        return result

    def break_streams(self) -> int:
        """End every listen stream open now with a JSON-RPC error, once it has sent the events
        it holds; how many there were."""
        for token in self._streams:
            self._streams[token] = True
        # The SDK's graceful close: each stream drains, then its handler returns (and raises here).
        self._listen.close()
        return len(self._streams)

    def add_connection(self, connection: Any) -> None:
        """Remember a handshake-era connection (an SDK ``Connection``) until it closes."""
        key = id(connection)
        if key not in self._connections:
            self._connections[key] = connection
            connection.exit_stack.callback(self._connections.pop, key, None)

    async def send(self) -> tuple[int, int]:
        """Send one notification to every client that can get it; (connections, streams) reached."""
        connections = list(self._connections.values())
        for connection in connections:
            # Best effort, as the SDK makes it: a stream that has gone drops it.
            await connection.send_tool_list_changed()
        streams = len(self.bus)
        await self.bus.publish(ToolsListChanged())
        return len(connections), streams


class ListingWatch:
    """Whether a client has listed the tools, or failed to, since a given catalog version.

    A listing counts once it has served its last page (no ``nextCursor``) having begun,
    with page 0, at that version or later; a ``tools/list`` refused by ``list_error``, or left
    unanswered by ``list_hang``, counts as a failed one.
    """

    def __init__(self) -> None:
        self._started = -1
        self.complete = -1
        self.failed = -1
        self._wake = anyio.Event()

    def page(self, version: int, first: bool, last: bool) -> None:
        if first:
            self._started = version
        if last and self._started >= 0:
            self.complete = max(self.complete, self._started)
            self._poke()

    def refused(self, version: int) -> None:
        self.failed = max(self.failed, version)
        self._poke()

    def _poke(self) -> None:
        self._wake.set()
        self._wake = anyio.Event()

    def outcome(self, version: int) -> str | None:
        if self.complete >= version:
            return "complete"
        if self.failed >= version:
            return "error"
        return None

    async def wait(self, version: int, timeout: float) -> str:
        """``complete``, ``error`` or, after ``timeout`` seconds, ``timeout``."""
        with anyio.move_on_after(timeout):
            while (outcome := self.outcome(version)) is None:
                await self._wake.wait()
            return outcome
        return "timeout"
