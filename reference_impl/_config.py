"""Run configuration: servers, how to reach them, and their tool policies.

Everything here is validated when it is built, with messages that name the field and the
value (ERR-9.1), so that a bad configuration fails before any connection is opened.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._bounds import listed, shown
from ._budgets import DEFAULT_MAX_ACTIVE_TOOLS, MAX_ACTIVE_TOOLS_LIMIT
from ._errors import ConfigurationError

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_LIST_TIMEOUT",
    "HttpTarget",
    "MemoryTarget",
    "Mode",
    "ServerConfig",
    "SideEffects",
    "StdioTarget",
    "Target",
    "ToolPolicy",
    "validate_servers",
]

#: Seconds a server may take to start (or be reached) and complete the MCP handshake.
DEFAULT_CONNECT_TIMEOUT = 20.0
# ERR-5.2: how long a server may take to list its tools (ID-5).
DEFAULT_LIST_TIMEOUT = 30.0

Mode = Literal["auto", "allowlist", "all"]
SideEffects = Literal["allow", "readOnly"]

_MODES: tuple[Mode, ...] = ("auto", "allowlist", "all")
_SIDE_EFFECTS: tuple[SideEffects, ...] = ("allow", "readOnly")
_SERVER_ID = re.compile(r"[A-Za-z0-9_-]+")


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigurationError(f"{where} must be a list of tool names, got {shown(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigurationError(f"{where}[{i}] must be a string, got {shown(item)}")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The per-server ``toolPolicy``. Tool names are the server's original names (POL-9.5)."""

    mode: Mode = "auto"
    allowed_tools: tuple[str, ...] = ()
    denied_tools: tuple[str, ...] = ()
    pinned_tools: tuple[str, ...] = ()
    max_active_tools: int = DEFAULT_MAX_ACTIVE_TOOLS
    side_effects: SideEffects = "allow"

    def __post_init__(self) -> None:
        self.validate("policy")

    def validate(self, where: str) -> None:
        # ERR-3.4: an unknown mode or sideEffects is a configuration error.
        if self.mode not in _MODES:
            raise ConfigurationError(f"{where}.mode must be one of {list(_MODES)}, got {shown(self.mode)}")
        if self.side_effects not in _SIDE_EFFECTS:
            raise ConfigurationError(
                f"{where}.sideEffects must be one of {list(_SIDE_EFFECTS)}, got {shown(self.side_effects)}"
            )
        maximum = self.max_active_tools
        # ERR-3.3: an integer from 0 to 96; above 96 is an error here (ID-17), never more than 96 in effect.
        if isinstance(maximum, bool) or not isinstance(maximum, int) or not 0 <= maximum <= MAX_ACTIVE_TOOLS_LIMIT:
            raise ConfigurationError(
                f"{where}.maxActiveTools must be an integer from 0 to {MAX_ACTIVE_TOOLS_LIMIT}, got {shown(maximum)}"
            )
        # ERR-3.5: policy lists must be lists of strings.
        for attr, wire in (
            ("allowed_tools", "allowedTools"),
            ("denied_tools", "deniedTools"),
            ("pinned_tools", "pinnedTools"),
        ):
            _names(getattr(self, attr), f"{where}.{wire}")

    @classmethod
    def from_wire(cls, data: Any, where: str = "policy") -> ToolPolicy:
        """Build a policy from its JSON form (camelCase keys, every field optional)."""
        # POL-9: a server that gives no policy at all has every field at its default.
        if data is None:
            return cls()
        # ERR-3.6: a policy that is not an object, or has a field POL-9 does not name.
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{where} must be an object, got {shown(data)}")
        known = {"mode", "allowedTools", "deniedTools", "pinnedTools", "maxActiveTools", "sideEffects"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigurationError(
                f"{where} has unknown fields [{listed(unknown)}]; expected some of {sorted(known)}"
            )
        # An omitted field means: mode auto (POL-9.1), empty lists (POL-9.2), 24 (POL-9.3), sideEffects allow (POL-9.4).
        policy = object.__new__(cls)
        values = {
            "mode": data.get("mode", "auto"),
            "allowed_tools": _names(data.get("allowedTools", ()), f"{where}.allowedTools"),
            "denied_tools": _names(data.get("deniedTools", ()), f"{where}.deniedTools"),
            "pinned_tools": _names(data.get("pinnedTools", ()), f"{where}.pinnedTools"),
            "max_active_tools": data.get("maxActiveTools", DEFAULT_MAX_ACTIVE_TOOLS),
            "side_effects": data.get("sideEffects", "allow"),
        }
        for name, value in values.items():
            object.__setattr__(policy, name, value)
        policy.validate(where)
        return policy


@dataclass(frozen=True, slots=True)
class StdioTarget:
    """A server started as a subprocess that speaks MCP on its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class HttpTarget:
    """A server reached over Streamable HTTP."""

    url: str


@dataclass(frozen=True, slots=True)
class MemoryTarget:
    """An in-process ``mcp.server.Server`` reached without any transport."""

    server: Any


Target: TypeAlias = StdioTarget | HttpTarget | MemoryTarget


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One MCP server of a run."""

    id: str
    target: Target
    policy: ToolPolicy = field(default_factory=ToolPolicy)


def check_server_id(server_id: Any, where: str) -> str:
    # ERR-3.1: a missing or non-string id, an empty one, other characters than ASCII letters, digits, - and _, or __.
    if not isinstance(server_id, str):
        raise ConfigurationError(f"{where} must be a string, got {shown(server_id)}")
    if not _SERVER_ID.fullmatch(server_id):
        raise ConfigurationError(
            f"{where} must be a non-empty string of ASCII letters, digits, '-' and '_', got {shown(server_id)}"
        )
    if "__" in server_id:
        raise ConfigurationError(
            f"{where} must not contain '__' (it separates server and tool in qualified names), got {shown(server_id)}"
        )
    return server_id


def validate_servers(servers: Sequence[ServerConfig]) -> None:
    """Check ids and policies of a whole run; raise ConfigurationError on the first problem."""
    seen: set[str] = set()
    for i, server in enumerate(servers):
        check_server_id(server.id, f"servers[{i}].id")
        # ERR-3.2: an id repeated in the run.
        if server.id in seen:
            raise ConfigurationError(f"servers[{i}].id {shown(server.id)} is used by another server of this run")
        seen.add(server.id)
        if not isinstance(server.policy, ToolPolicy):
            raise ConfigurationError(f"servers[{i}].policy must be a ToolPolicy, got {shown(server.policy)}")
        server.policy.validate(f"servers[{i}].policy")
