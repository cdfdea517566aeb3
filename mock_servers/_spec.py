"""The fleet specification: a typed, frozen model, and its plain-data form.

A spec is a `FleetSpec` of `ServerSpec` servers, each generating tools from a domain's
vocabulary (`AnnotationMix`, `SchemaShapes`), serving explicit ones (`ToolSpec`),
showing `Faults` and, for a live catalog, changing its tools (`CatalogChange`). Every spec stays within `LIMITS`, however it was built. Reading a spec
from a file or plain data, with errors that name the field, is `mock_servers._spec_reader`'s
job; `spec_to_dict` here writes the plain data it reads back.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mock_servers._errors import FleetArgumentError
from mock_servers._limits import LIMITS
from mock_servers._spec_format import (
    AnnotationMixDocument,
    ChangeDocument,
    FaultsDocument,
    SchemaShapesDocument,
    ServerDocument,
    SpecDocument,
    ToolDocument,
    UpdateDocument,
)

__all__ = [
    "BAD_NAME_KINDS",
    "CALL_FAULTS",
    "FAULT_COUNTS",
    "FAULT_FIELDS",
    "SERVER_ID",
    "AnnotationMix",
    "CatalogChange",
    "Faults",
    "FleetSpec",
    "Rename",
    "SchemaShapes",
    "ServerSpec",
    "ToolSpec",
    "ToolUpdate",
    "change_to_dict",
    "derive_seed",
    "freeze_json",
    "server_to_dict",
    "spec_to_dict",
]

#: Server ids are used as URL path segments and in ledger entries.
SERVER_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

#: Kinds of deliberately bad tool names a server can be asked to serve.
BAD_NAME_KINDS = ("double_underscore", "dot", "space", "slash", "non_ascii", "too_long", "empty")


@dataclass(frozen=True, slots=True)
class AnnotationMix:
    """How a server's generated tools are annotated.

    The three shares are of tools with ``readOnlyHint: true``, ``readOnlyHint: false``
    and no ``annotations`` at all; they sum to 1. With ``follow_names`` (the default)
    names and marks always agree: only tools whose names read (list, get, search…) are
    marked read-only and only the others writable, so the first two shares are upper
    bounds and the tools left over carry no annotations. Without it, marks are dealt
    at random and the shares are exact (to the nearest tool).
    """

    read_only: float = 0.5
    writable: float = 0.3
    none: float = 0.2
    follow_names: bool = True
    # Also set destructiveHint, idempotentHint, openWorldHint and title on annotated tools.
    extra_hints: bool = True
    # Share of tools that carry a top-level display ``title``.
    titles: float = 0.5


@dataclass(frozen=True, slots=True)
class SchemaShapes:
    """The shapes of generated input schemas (each a probability per tool or property)."""

    max_properties: int = 6
    nested: float = 0.2
    enums: float = 0.5
    arrays: float = 0.3
    required: float = 0.5


@dataclass(frozen=True, slots=True)
class Faults:
    """Misbehaviour a server is asked to show. Every fault is recorded in the ledger when it fires.

    The list faults take the index of the ``tools/list`` page on which they fire (0 is
    the first page). Tool-name lists accept ``"*"`` for every tool. The last four
    counts describe definitions an SDK-built server cannot send; they need ``raw``.
    """

    fail_to_start: bool = False
    error_on_list: int | None = None
    crash_on_list: int | None = None
    hang_on_list: int | None = None
    slow: float = 0.0
    slow_calls: float = 0.0
    # The last page of each listing is answered this long after it is recorded: a watcher of
    # the ledger (`await_listing`) already sees the listing complete while the client waits.
    slow_last_page: float = 0.0
    tool_call_error: tuple[str, ...] = ()
    error_on_call: tuple[str, ...] = ()
    drop_mid_call: tuple[str, ...] = ()
    duplicate_names: int = 0
    bad_names: tuple[str, ...] = ()
    huge_descriptions: int = 0
    huge_description_chars: int = 100_000
    schema_not_object: int = 0
    missing_name: int = 0
    read_only_hint_string: int = 0
    read_only_hint_number: int = 0

    @property
    def needs_raw(self) -> bool:
        """Whether these faults can only be served by a raw JSON-RPC server."""
        return bool(
            self.schema_not_object or self.missing_name or self.read_only_hint_string or self.read_only_hint_number
        )

    def active(self) -> tuple[str, ...]:
        """The names of the faults that are switched on, in declaration order."""
        defaults = Faults()
        return tuple(name for name in FAULT_FIELDS if getattr(self, name) != getattr(defaults, name))

    def __post_init__(self) -> None:
        _check_limit("huge_description_chars", self.huge_description_chars, LIMITS.description_chars)
        for name in FAULT_COUNTS:
            _check_limit(name, getattr(self, name), LIMITS.fault_count)

    def calls_fail(self, tool: str) -> bool:
        return "*" in self.tool_call_error or tool in self.tool_call_error

    def calls_error(self, tool: str) -> bool:
        return "*" in self.error_on_call or tool in self.error_on_call

    def calls_drop(self, tool: str) -> bool:
        return "*" in self.drop_mid_call or tool in self.drop_mid_call


FAULT_FIELDS = tuple(Faults.__dataclass_fields__)
#: The faults that name the tools whose calls they hit.
CALL_FAULTS = ("tool_call_error", "error_on_call", "drop_mid_call")
FAULT_COUNTS = (
    "duplicate_names",
    "huge_descriptions",
    "schema_not_object",
    "missing_name",
    "read_only_hint_string",
    "read_only_hint_number",
)


def _check_limit(name: str, value: int, limit: int) -> None:
    # Limits hold for every spec, however built, so no spec can make a server hold too much.
    if value > limit:
        raise FleetArgumentError(f"{name} is {value:,}, over the limit of {limit:,}")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """An explicit tool, served as written next to the generated ones."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    # The definition exactly as a real server listed it (wire form, e.g. from ``mcp-fleet
    # capture``), served as written; the fields above mirror it.
    wire: Mapping[str, Any] | None = None
    # Recorded results replayed for calls with equal arguments: {"arguments", "result"} each.
    samples: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        _check_limit("a description's length", len(self.description), LIMITS.description_chars)


@dataclass(frozen=True, slots=True)
class ToolUpdate:
    """New fields for a tool the server lists; a field left ``None`` keeps its value.

    ``annotations`` replaces the whole annotations object (``{}`` leaves an empty one).
    """

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Rename:
    """A tool listed from now on under another name, its definition otherwise unchanged."""

    old: str
    new: str


@dataclass(frozen=True, slots=True)
class CatalogChange:
    """One change of a live catalog, and the ``notifications/tools/list_changed`` it sends.

    A scheduled change (``ServerSpec.changes``) has exactly one trigger: ``after_calls``
    (as the server answers its Nth ``tools/call`` in all, before that result is sent) or
    ``after_seconds`` (from the moment the server began serving). Changes fire in the order
    listed, each once its trigger is met and every earlier one has fired. A change made on
    demand (a test's request) has no trigger. Edits apply in the order remove, rename,
    update, add; ``notify`` notifications follow (0: a silent change); ``list_error``
    makes every later ``tools/list`` answer a JSON-RPC error (``False`` heals it, ``None``
    leaves it as it is); ``list_hang`` makes every later ``tools/list`` never answer, the
    same way; ``break_listen`` ends every ``subscriptions/listen`` stream open then with a
    JSON-RPC error, after the notifications (a client hears of later changes only once it
    listens again).
    """

    after_calls: int | None = None
    after_seconds: float | None = None
    remove: tuple[str, ...] = ()
    rename: tuple[Rename, ...] = ()
    update: tuple[ToolUpdate, ...] = ()
    add: tuple[ToolSpec, ...] = ()
    notify: int = 1
    list_error: bool | None = None
    list_hang: bool | None = None
    break_listen: bool = False

    def __post_init__(self) -> None:
        _check_limit("notify", self.notify, LIMITS.notifications_per_change)
        if self.after_calls is not None and self.after_seconds is not None:
            raise FleetArgumentError("a change has one trigger: after_calls or after_seconds, not both")

    @property
    def trigger(self) -> str:
        """``after_calls``, ``after_seconds`` or ``request`` (a change made on demand)."""
        if self.after_calls is not None:
            return "after_calls"
        return "after_seconds" if self.after_seconds is not None else "request"


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One mock MCP server of a fleet."""

    id: str
    domain: str = "code_hosting"
    tool_count: int = 20
    annotations: AnnotationMix = AnnotationMix()
    schema: SchemaShapes = SchemaShapes()
    page_size: int = 50
    seed: int = 0
    faults: Faults = Faults()
    tools: tuple[ToolSpec, ...] = ()
    raw: bool = False
    # A live catalog: the server declares ``tools.listChanged`` and may change its tools.
    list_changed: bool = False
    changes: tuple[CatalogChange, ...] = ()
    # A server built before the 2026-07-28 revision: it speaks only the ``initialize``
    # handshake, so a client hears of its changes on the connection, never on a listen stream.
    legacy_only: bool = False

    def __post_init__(self) -> None:
        _check_limit("tool_count", self.tool_count, LIMITS.tools_per_server)
        _check_limit("the number of changes", len(self.changes), LIMITS.changes_per_server)
        if self.raw and (self.list_changed or self.changes):
            raise FleetArgumentError(f"server {self.id!r}: a raw server cannot serve a live catalog")

    @property
    def tools_total(self) -> int:
        """How many tools the server may list: explicit, generated, duplicated and added by changes."""
        added = sum(len(c.add) for c in self.changes)
        return len(self.tools) + self.tool_count + self.faults.duplicate_names + added

    @property
    def description_chars(self) -> int:
        """An upper bound on the characters of its huge, explicit and changed descriptions."""
        huge = self.faults.huge_descriptions * self.faults.huge_description_chars
        changed = sum(len(t.description) for c in self.changes for t in c.add) + sum(
            len(u.description or "") for c in self.changes for u in c.update
        )
        return huge + sum(len(t.description) for t in self.tools) + changed


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """A fleet: servers and the seed their own seeds derive from."""

    servers: tuple[ServerSpec, ...]
    seed: int = 0

    def __post_init__(self) -> None:
        _check_limit("the number of servers", len(self.servers), LIMITS.servers)
        _check_limit("the number of tools", sum(s.tools_total for s in self.servers), LIMITS.fleet_tools)
        chars = sum(s.description_chars for s in self.servers)
        _check_limit("the characters of huge and explicit descriptions", chars, LIMITS.fleet_description_chars)

    def server(self, server_id: str) -> ServerSpec:
        """The server with this id.

        Raises:
            KeyError: no server has this id.
        """
        for server in self.servers:
            if server.id == server_id:
                return server
        raise KeyError(server_id)


def derive_seed(fleet_seed: int, server_id: str) -> int:
    """A server's default seed: stable across machines, Python versions and runs."""
    digest = hashlib.sha256(f"{fleet_seed}:{server_id}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def freeze_json(value: Any) -> Any:
    """A deep copy of a JSON value, so that a spec never shares mutable state with its caller."""
    return json.loads(json.dumps(value))


# ---------------------------------------------------------------------------------------------
# Serialisation


def spec_to_dict(spec: FleetSpec) -> SpecDocument:
    """The plain-data form of a spec; ``spec_from_dict(spec_to_dict(s)) == s``."""
    return {"seed": spec.seed, "servers": [server_to_dict(s) for s in spec.servers]}


def server_to_dict(server: ServerSpec) -> ServerDocument:
    out: ServerDocument = {
        "id": server.id,
        "domain": server.domain,
        "tool_count": server.tool_count,
        "page_size": server.page_size,
        "seed": server.seed,
        "annotations": _annotation_mix(server.annotations),
        "schema": _schema_shapes(server.schema),
    }
    faults: FaultsDocument = {k: _fault_value(getattr(server.faults, k)) for k in server.faults.active()}
    if faults:
        out["faults"] = faults
    if server.tools:
        out["tools"] = [_tool_to_dict(t) for t in server.tools]
    if server.raw:
        out["raw"] = True
    if server.list_changed != bool(server.changes):
        out["list_changed"] = server.list_changed
    if server.changes:
        out["changes"] = [change_to_dict(c) for c in server.changes]
    if server.legacy_only:
        out["legacy_only"] = True
    return out


def change_to_dict(change: CatalogChange) -> ChangeDocument:
    """The plain-data form of a change, as a spec file writes it."""
    out: ChangeDocument = {}
    if change.after_calls is not None:
        out["after_calls"] = change.after_calls
    if change.after_seconds is not None:
        out["after_seconds"] = change.after_seconds
    if change.remove:
        out["remove"] = list(change.remove)
    if change.rename:
        out["rename"] = [{"from": r.old, "to": r.new} for r in change.rename]
    if change.update:
        out["update"] = [_update_to_dict(u) for u in change.update]
    if change.add:
        out["add"] = [_tool_to_dict(t) for t in change.add]
    out["notify"] = change.notify
    if change.list_error is not None:
        out["list_error"] = change.list_error
    if change.list_hang is not None:
        out["list_hang"] = change.list_hang
    if change.break_listen:
        out["break_listen"] = True
    return out


def _update_to_dict(update: ToolUpdate) -> UpdateDocument:
    out: UpdateDocument = {"name": update.name}
    if update.description is not None:
        out["description"] = update.description
    if update.input_schema is not None:
        out["input_schema"] = freeze_json(update.input_schema)
    if update.annotations is not None:
        out["annotations"] = freeze_json(update.annotations)
    if update.title is not None:
        out["title"] = update.title
    return out


def _fault_value(value: bool | int | float | tuple[str, ...]) -> bool | int | float | list[str]:
    return list(value) if isinstance(value, tuple) else value


def _annotation_mix(mix: AnnotationMix) -> AnnotationMixDocument:
    return {name: getattr(mix, name) for name in AnnotationMix.__dataclass_fields__}


def _schema_shapes(shapes: SchemaShapes) -> SchemaShapesDocument:
    return {name: getattr(shapes, name) for name in SchemaShapes.__dataclass_fields__}


def _tool_to_dict(tool: ToolSpec) -> ToolDocument:
    samples: ToolDocument = {"samples": [freeze_json(s) for s in tool.samples]} if tool.samples else {}
    if tool.wire is not None:
        return {"wire": freeze_json(tool.wire), **samples}
    out: ToolDocument = {"name": tool.name, "description": tool.description, **samples}
    out["input_schema"] = freeze_json(tool.input_schema)
    if tool.annotations is not None:
        out["annotations"] = freeze_json(tool.annotations)
    if tool.title is not None:
        out["title"] = tool.title
    return out
