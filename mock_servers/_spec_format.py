"""The spec file format as types: what `spec_to_dict` writes and `spec_from_dict` reads.

Keys are snake_case, as in a JSON or TOML spec file. Every key the reader gives a default
is optional. The reader takes any plain data and checks it field by field (its errors
name the field); these types say what a valid document holds. The free-form parts of a
spec stay arbitrary JSON: an input schema, annotations and a definition captured from a
real server (``wire``) are served as written, and recorded samples are replayed as written.
"""

from typing import Any, NotRequired, TypeAlias, TypedDict

__all__ = [
    "AnnotationMixDocument",
    "ChangeDocument",
    "FaultsDocument",
    "RenameDocument",
    "SampleDocument",
    "SchemaShapesDocument",
    "ServerDocument",
    "SpecDocument",
    "ToolDocument",
    "UpdateDocument",
]

#: `AnnotationMix`'s fields by name: shares (numbers) and switches (booleans).
AnnotationMixDocument: TypeAlias = dict[str, float | bool]
#: `SchemaShapes`'s fields by name: ``max_properties`` and probabilities.
SchemaShapesDocument: TypeAlias = dict[str, int | float]
#: The faults a server shows, by `Faults` field name: a switch, a page index, seconds, a
#: count or a list of tool names (of bad-name kinds for ``bad_names``).
FaultsDocument: TypeAlias = dict[str, bool | int | float | list[str]]


class SampleDocument(TypedDict):
    """A recorded call: its arguments and the result replayed for equal ones."""

    arguments: dict[str, Any]
    result: dict[str, Any]


class ToolDocument(TypedDict, total=False):
    """An explicit tool: its fields, or the ``wire`` definition a real server listed."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    title: str
    wire: dict[str, Any]
    samples: list[SampleDocument]


# "from" is a keyword: the functional form spells the key as the file does.
RenameDocument = TypedDict("RenameDocument", {"from": str, "to": str})


class UpdateDocument(TypedDict):
    """New fields for a tool the server lists; a field left out keeps its value."""

    name: str
    description: NotRequired[str]
    input_schema: NotRequired[dict[str, Any]]
    annotations: NotRequired[dict[str, Any]]
    title: NotRequired[str]


class ChangeDocument(TypedDict, total=False):
    """A change of a live catalog: its trigger (none for one made on request) and its edits."""

    after_calls: int
    after_seconds: float
    remove: list[str]
    rename: list[RenameDocument]
    update: list[UpdateDocument]
    add: list[ToolDocument]
    notify: int
    list_error: bool
    list_hang: bool
    break_listen: bool


class ServerDocument(TypedDict):
    """One server of a spec file; only ``id`` is required."""

    id: str
    domain: NotRequired[str]
    tool_count: NotRequired[int]
    page_size: NotRequired[int]
    seed: NotRequired[int]
    annotations: NotRequired[AnnotationMixDocument]
    schema: NotRequired[SchemaShapesDocument]
    faults: NotRequired[FaultsDocument]
    tools: NotRequired[list[ToolDocument]]
    raw: NotRequired[bool]
    list_changed: NotRequired[bool]
    changes: NotRequired[list[ChangeDocument]]
    legacy_only: NotRequired[bool]


class SpecDocument(TypedDict):
    """A fleet spec file: its seed and its servers."""

    seed: NotRequired[int]
    servers: list[ServerDocument]
