"""Errors raised by the reference implementation.

One tree, rooted at :class:`ToolsetError`::

    ToolsetError
    ├── ConfigurationError      (also ValueError)  kind "config_error"
    ├── SelectionError          kind "selection_error"   (McpToolSelectionError)
    ├── ServerConnectionError   kind "connection_error"
    └── RequestTooLargeError    kind "request_too_large"

Every error carries ``kind`` (the driver protocol's ``data.kind``) and ``message``, so a
harness can classify it without importing this package.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "McpToolSelectionError",
    "RequestTooLargeError",
    "SelectionError",
    "ServerConnectionError",
    "ToolsetError",
]


class ToolsetError(Exception):
    """Root of every error the reference implementation raises on purpose."""

    kind = "toolset_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(ToolsetError, ValueError):
    """A server id, policy or tool naming that cannot make a valid run."""

    kind = "config_error"


class SelectionError(ToolsetError):
    """Required or non-MCP tools that do not fit the budgets."""

    kind = "selection_error"


McpToolSelectionError = SelectionError


class ServerConnectionError(ToolsetError):
    """A server that could not be started, reached or listed."""

    kind = "connection_error"

    def __init__(self, message: str, *, server_id: str | None = None) -> None:
        super().__init__(message)
        self.server_id = server_id


class RequestTooLargeError(ToolsetError):
    """A request that would carry more tool definitions than the provider accepts."""

    kind = "request_too_large"

    def __init__(self, message: str, *, count: int, limit: int) -> None:
        super().__init__(message)
        self.count = count
        self.limit = limit
