"""The shapes the reference hands a model request and a model: definitions, tool results, messages.

Definitions, tool results and notices are the driver protocol's shapes (``conformance/PROTOCOL.md``
P24, P25, P40), declared here because the reference knows nothing of the suite; being
TypedDicts with the same keys, they read as the suite's types. Where JSON is arbitrary by
design (a tool's input schema, its arguments, its structured output) the type says so:
``dict[str, Any]``. A TypedDict checks nothing at run time: what a host hands in (base tools,
extra tools) is the shape it promises, and only what the design needs is checked.
"""

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = ["ContentBlock", "Definition", "Message", "Notice", "NoticeKind", "RequestedCall", "ToolResult"]


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
    """The tool result the model gets: content blocks, the error flag, structured output.

    ``structuredContent`` is absent rather than null: a null from a server is left out.
    """

    content: list[ContentBlock]
    isError: bool
    structuredContent: NotRequired[dict[str, Any]]


NoticeKind: TypeAlias = Literal["required_tool_inactive", "listing_failed_kept", "listing_failed_dropped"]


class Notice(TypedDict):
    """What a run tells its operator (a required tool left inactive, a failed re-listing)."""

    kind: NoticeKind
    server: str
    message: str
    tools: NotRequired[list[str]]


class RequestedCall(TypedDict):
    """A tool call the model asked for, as an assistant message records it."""

    name: str
    arguments: dict[str, Any]


class Message(TypedDict):
    """One message of the agent loop's conversation.

    ``system`` and ``user`` carry text; ``assistant`` the model's text and the calls it asked
    for; ``tool`` the tool's ``name`` and its result as JSON text.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: NotRequired[list[RequestedCall]]
    name: NotRequired[str]
