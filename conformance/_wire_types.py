"""The driver protocol's wire shapes as types: the params and results of ``PROTOCOL.md``.

One TypedDict per object the JSON Schemas of ``protocol/`` describe, with the same keys,
required where the schema requires them (a test holds the two together). They are what
:class:`~conformance.SystemUnderTest` takes and answers, in-process or through a driver.
A TypedDict says what a valid message holds; it checks nothing at run time (the suite
validates every answer against the schemas), and an answer may carry keys it does not
list (P2). Where JSON is arbitrary by design (a tool's ``inputSchema``, its
``arguments``, a result's ``structuredContent``) the type says so: ``dict[str, Any]``.
"""

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

# A server's tool policy (P21, SPEC.md POL-9): the fleet's policy strategies draw it too, and
# the fleet imports nothing of this package, so the one definition lives there.
from mock_servers import ToolPolicy

__all__ = [
    "ActivatedTool",
    "CallParams",
    "ContentBlock",
    "Definition",
    "DefinitionsResult",
    "DiscoveryContent",
    "ErrorData",
    "ErrorObject",
    "EvictedTool",
    "HttpTransport",
    "InitializeParams",
    "InitializeResult",
    "JsonObject",
    "Notice",
    "OpenParams",
    "OpenResult",
    "RequestParams",
    "RequestResult",
    "RunParams",
    "ServerConfig",
    "StdioTransport",
    "ToolPolicy",
    "ToolResult",
    "Transport",
]

#: A JSON object whose keys nobody fixes: a JSON Schema, a tool's arguments or structured output.
JsonObject: TypeAlias = dict[str, Any]


class InitializeParams(TypedDict, total=False):
    """``initialize`` params (P17); an absent ``protocolVersion`` means ``"1"``."""

    protocolVersion: str


class InitializeResult(TypedDict):
    """``initialize`` result (P17, P18): who the implementation is and its profiles."""

    name: str
    version: str
    profiles: list[str]
    protocolVersion: NotRequired[str]


class Definition(TypedDict):
    """A tool definition as a model request carries it (P19, P24); other fields are allowed."""

    name: str
    description: str
    inputSchema: JsonObject


class StdioTransport(TypedDict):
    """A server started as a child process speaking MCP on stdio (P20)."""

    type: Literal["stdio"]
    command: str
    args: NotRequired[list[str]]
    env: NotRequired[dict[str, str]]


class HttpTransport(TypedDict):
    """A Streamable HTTP endpoint (P20)."""

    type: Literal["http"]
    url: str


Transport: TypeAlias = StdioTransport | HttpTransport


class ServerConfig(TypedDict):
    """One of ``run.open``'s servers (P19).

    The schema lets ``id`` and ``policy`` be anything (configuration, judged by SPEC.md
    ERR-3); the types are those of a valid configuration, and a check that sends an
    invalid one says so with a cast.
    """

    id: NotRequired[str]
    transport: Transport
    policy: NotRequired[ToolPolicy | None]


class OpenParams(TypedDict, total=False):
    """``run.open`` params (P19, P22); every field has a default."""

    servers: list[ServerConfig]
    baseTools: list[Definition]
    userMessage: str
    systemPrompt: str
    listTimeoutSeconds: float
    callTimeoutSeconds: float
    connectTimeoutSeconds: float
    #: The eviction profile (P37): the active set rolls, least recently used first.
    eviction: Literal["lru"]
    #: The refresh profile (P38): servers are listed again on tools/list_changed.
    refresh: bool


class OpenResult(TypedDict):
    """``run.open`` result: the run's id."""

    runId: str


class RunParams(TypedDict):
    """The params of ``run.definitions`` and ``run.close``: the run's id."""

    runId: str


class CallParams(TypedDict):
    """``run.call`` params (P25); ``arguments`` defaults to ``{}``."""

    runId: str
    name: str
    arguments: NotRequired[JsonObject]


class RequestParams(TypedDict):
    """``run.request`` params (P27); ``extraTools`` defaults to ``[]``."""

    runId: str
    extraTools: NotRequired[list[Definition]]


class Notice(TypedDict):
    """What a run tells its operator (P40): a required tool left inactive, a failed re-listing."""

    kind: Literal["required_tool_inactive", "listing_failed_kept", "listing_failed_dropped"]
    server: str
    message: str
    tools: NotRequired[list[str]]


class DefinitionsResult(TypedDict):
    """``run.definitions`` result (P24, P40): the tools of the next model request, the run's notices."""

    tools: list[Definition]
    notices: NotRequired[list[Notice]]


class RequestResult(TypedDict):
    """``run.request`` result (P27): the tools of the whole request."""

    tools: list[Definition]


class ContentBlock(TypedDict):
    """An MCP content block of a tool result (P25); a ``text`` block carries ``text``."""

    type: str
    text: NotRequired[str]
    annotations: NotRequired[JsonObject]
    _meta: NotRequired[JsonObject]


class ToolResult(TypedDict):
    """``run.call`` result (P25): the tool result the model would get."""

    content: list[ContentBlock]
    isError: bool
    structuredContent: NotRequired[JsonObject | None]


class ActivatedTool(TypedDict):
    """A tool a discovery call activated, under the name the model will see (P26)."""

    name: str
    description: str


class EvictedTool(TypedDict):
    """A tool a discovery call evicted, under the name the model called it by (P26, SPEC.md EVC)."""

    name: str


class DiscoveryContent(TypedDict):
    """The ``structuredContent`` of a successful ``search_mcp_tools`` call (P26, SPEC.md DSC-6)."""

    activated: list[ActivatedTool]
    activeCount: int
    remainingCapacity: int
    evicted: NotRequired[list[EvictedTool]]


class ErrorData(TypedDict, total=False):
    """The ``data`` of an error (P32): the outcome's kind, its message, for invalid params a path."""

    kind: str
    message: str
    path: str


class ErrorObject(TypedDict):
    """The ``error`` member of an error reply (P32)."""

    code: int
    message: str
    data: NotRequired[ErrorData]
