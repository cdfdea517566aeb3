"""The run's catalog: every listed tool, under its qualified name, with its full definition."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ._errors import ConfigurationError, ServerConnectionError
from ._wire import Definition

__all__ = ["SEPARATOR", "Catalog", "CatalogEntry", "exposed_name", "qualified_name"]

SEPARATOR = "__"
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_PROVIDER_CHAR = re.compile(r"[^A-Za-z0-9_-]")


def qualified_name(server_id: str, tool_name: str) -> str:
    # CAT-3.1: the name the model sees and calls is the server id, two underscores, the original name.
    return f"{server_id}{SEPARATOR}{tool_name}"


def exposed_name(qualified: str) -> str:
    """The name the model sees: the qualified name, mapped when a provider would reject it.

    The strictest provider rule is ``^[A-Za-z0-9_-]{1,64}$`` (CAT-5.1). A name that breaks it
    has its other characters replaced by ``_`` and is cut to 55 characters plus ``_`` and eight
    hex digits of its SHA-256, so that two different names stay different: the mapped name of
    CAT-5.2 (ID-2), through which the gate still reaches the tool.
    """
    if _PROVIDER_NAME.fullmatch(qualified):
        return qualified
    digest = hashlib.sha256(qualified.encode("utf-8")).hexdigest()[:8]
    return f"{_NOT_PROVIDER_CHAR.sub('_', qualified)[:55]}_{digest}"


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One tool of the catalog, kept whether or not it is ever selected (CAT-1.2, CAT-1.3)."""

    index: int
    server_id: str
    name: str
    qualified_name: str
    exposed_name: str
    description: str
    input_schema: Mapping[str, Any]
    # The annotations exactly as the server sent them: read-only needs the raw JSON value.
    annotations: Mapping[str, Any] | None

    @property
    def read_only(self) -> bool:
        """True only for ``readOnlyHint`` equal to the JSON value ``true`` (POL-5.1 to POL-5.4, RNK-4.1).

        ``is True``: no annotations, no hint, ``false``, ``"true"`` and ``1`` are all not read-only
        (POL-5.2, POL-5.3, POL-5.4).
        """
        return self.annotations is not None and self.annotations.get("readOnlyHint") is True

    def definition(self) -> Definition:
        return {
            # DEF-1.1, DEF-1.2: the exposed name, and the description and input schema as the server listed them.
            "name": self.exposed_name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }


def _entry_from_raw(server_id: str, position: int, raw: Any, index: int) -> CatalogEntry:
    where = f"server {server_id!r} listed a malformed tool at position {position}"
    # ERR-8.1, ERR-8.2: a malformed definition fails the run (ID-4), naming the server and the tool's position.
    if not isinstance(raw, Mapping):
        raise ServerConnectionError(f"{where}: expected an object, got {raw!r:.80}", server_id=server_id)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ServerConnectionError(
            f"{where}: 'name' must be a non-empty string, got {name!r:.80}", server_id=server_id
        )
    schema = raw.get("inputSchema")
    if not isinstance(schema, Mapping):
        raise ServerConnectionError(
            f"{where} ({name!r}): 'inputSchema' must be an object, got {schema!r:.80}", server_id=server_id
        )
    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        raise ServerConnectionError(
            f"{where} ({name!r}): 'description' must be a string, got {description!r:.80}",
            server_id=server_id,
        )
    annotations = raw.get("annotations")
    if annotations is not None and not isinstance(annotations, Mapping):
        annotations = None
    qualified = qualified_name(server_id, name)
    return CatalogEntry(
        index=index,
        server_id=server_id,
        name=name,
        qualified_name=qualified,
        exposed_name=exposed_name(qualified),
        # DEF-1.2: a tool listed without a description gets the empty one, never text of the host's.
        description=description or "",
        # CAT-1.3: the complete schema stays in the catalog, selected or not.
        input_schema=schema,
        annotations=annotations,
    )


class Catalog:
    """Every tool of every server of the run, in a deterministic order.

    Entries are ordered by qualified name, so the order in which servers are configured or
    tools are listed never changes anything downstream (SEL-4.2, SEL-4.3, SEL-4.5).
    """

    def __init__(self, entries: Sequence[CatalogEntry]) -> None:
        self.entries: tuple[CatalogEntry, ...] = tuple(entries)
        self.by_exposed: dict[str, CatalogEntry] = {e.exposed_name: e for e in self.entries}
        self.by_qualified: dict[str, CatalogEntry] = {e.qualified_name: e for e in self.entries}
        self.by_server: dict[str, list[CatalogEntry]] = {}
        for entry in self.entries:
            self.by_server.setdefault(entry.server_id, []).append(entry)

    @classmethod
    def from_listings(cls, listings: Mapping[str, Sequence[Any]]) -> Catalog:
        """Build from raw ``tools/list`` items per server id; malformed or colliding tools fail."""
        provisional = [
            _entry_from_raw(server_id, position, raw, 0)
            for server_id, tools in listings.items()
            for position, raw in enumerate(tools)
        ]
        # CAT-3.2: tools of one original name on two servers differ by their prefix; both are kept.
        provisional.sort(key=lambda e: e.qualified_name)
        seen: dict[str, CatalogEntry] = {}
        for entry in provisional:
            # ERR-4.1: two tools that would share a name (qualified or exposed) fail the run; so does a
            # server listing one name twice (ERR-4.2).
            for key in {entry.qualified_name, entry.exposed_name}:
                other = seen.get(key)
                if other is not None:
                    raise ConfigurationError(
                        f"tools {other.name!r} of server {other.server_id!r} and {entry.name!r} of server "
                        f"{entry.server_id!r} would both be named {key!r}; rename a server id or a tool"
                    )
                seen[key] = entry
        entries = [replace(entry, index=i) for i, entry in enumerate(provisional)]
        return cls(entries)

    def __len__(self) -> int:
        return len(self.entries)
