"""The shapes a fleet serves and takes on the wire: the tool definitions a server lists,
and the tool policy a host is configured with for a server.

A server lists its tools in MCP's wire form (camelCase). Some are malformed on purpose: a
fault leaves a name out (``missing_name``), gives an input schema that is not an object
schema (``schema_not_object``; a raw server's explicit tool may even give a list or a
string, which the types do not admit) or a ``readOnlyHint`` that is not a boolean
(``read_only_hint_string``, ``read_only_hint_number``), and a tool captured from a real
server (``ToolSpec.wire``) is served exactly as that server listed it. The types say what a
listed tool may hold, malformed ones included. A TypedDict checks nothing at run time.
"""

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = ["JsonSchema", "ListedTool", "ToolAnnotations", "ToolPolicy"]

#: A JSON Schema: arbitrary JSON by nature.
JsonSchema: TypeAlias = dict[str, Any]


class ToolAnnotations(TypedDict, total=False):
    """MCP's hints about a tool's behaviour, as a server of the fleet lists them.

    ``readOnlyHint`` is a boolean, except where a fault serves it as ``"true"`` or ``1``.
    """

    title: str
    readOnlyHint: bool | str | int
    destructiveHint: bool
    idempotentHint: bool
    openWorldHint: bool


class ListedTool(TypedDict):
    """A tool definition as a server of the fleet lists it; other fields are allowed.

    ``name`` is absent only where the ``missing_name`` fault took it out.
    """

    name: NotRequired[str]
    description: str
    inputSchema: JsonSchema
    title: NotRequired[str]
    annotations: NotRequired[ToolAnnotations]
    outputSchema: NotRequired[JsonSchema]


class ToolPolicy(TypedDict, total=False):
    """A server's ``toolPolicy`` in the wire form of the conformance suite's driver protocol
    (its P21, SPEC.md POL-9); every field optional.

    The protocol leaves a policy open (an invalid one is a ``config_error``); these are the
    fields a valid one may hold.
    """

    mode: Literal["auto", "allowlist", "all"]
    allowedTools: list[str]
    deniedTools: list[str]
    pinnedTools: list[str]
    maxActiveTools: int
    sideEffects: Literal["allow", "readOnly"]
