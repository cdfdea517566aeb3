"""The shapes the reference hands a model request and a model: definitions and tool results.

They are the driver protocol's shapes (``conformance/PROTOCOL.md`` P24, P25), declared here
because the reference knows nothing of the suite; being TypedDicts with the same keys, they
are the suite's types as far as a type checker is concerned. Where JSON is arbitrary by
design (a tool's input schema, its structured output) the type says so: ``dict[str, Any]``.
"""

from typing import Any, Literal, NotRequired, TypedDict

__all__ = ["ContentBlock", "Definition", "Notice", "ToolResult"]


class Definition(TypedDict):
    """A tool definition as a model request carries it; other fields are allowed."""

    name: str
    description: str
    inputSchema: dict[str, Any]


class ContentBlock(TypedDict):
    """An MCP content block of a tool result; a ``text`` block carries ``text``."""

    type: str
    text: NotRequired[str]
    annotations: NotRequired[dict[str, Any]]
    _meta: NotRequired[dict[str, Any]]


class ToolResult(TypedDict):
    """The tool result the model gets: content blocks, the error flag, structured output."""

    content: list[ContentBlock]
    isError: bool
    structuredContent: NotRequired[dict[str, Any] | None]


class Notice(TypedDict):
    """What a run tells its operator (a required tool left inactive, a failed re-listing)."""

    kind: Literal["required_tool_inactive", "listing_failed_kept", "listing_failed_dropped"]
    server: str
    message: str
    tools: NotRequired[list[str]]
