"""The wire types hold the keys the protocol's schemas describe, required where they require them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, get_args, get_type_hints

import pytest

import conformance
from conformance import _wire_types as wire
from conformance._protocol import schema, schema_names


def _keys(typed: Any) -> tuple[set[str], set[str]]:
    return set(typed.__required_keys__ | typed.__optional_keys__), set(typed.__required_keys__)


def _branch(node: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """The ``then`` of the ``allOf`` branch whose ``if`` pins ``type`` to ``kind``."""
    for case in node.get("allOf", [node]):
        if case.get("if", {}).get("properties", {}).get("type", {}).get("const") == kind:
            return dict(case["then"])
    raise AssertionError(f"no branch for type {kind!r}")


def _object(node: Mapping[str, Any], *, then: Mapping[str, Any] | None = None) -> tuple[set[str], set[str]]:
    keys = set(node.get("properties", {})) | set((then or {}).get("properties", {}))
    return keys, set(node.get("required", []))


def _defs(name: str, definition: str) -> Mapping[str, Any]:
    return dict(schema(name)["$defs"][definition])


OPEN = "run.open.params"
CALL_RESULT = "run.call.result"

SHAPES: dict[str, tuple[Any, tuple[set[str], set[str]]]] = {
    "initialize.params": (wire.InitializeParams, _object(schema("initialize.params"))),
    "initialize.result": (wire.InitializeResult, _object(schema("initialize.result"))),
    "run.open.params": (wire.OpenParams, _object(schema(OPEN))),
    "run.open.params#server": (wire.ServerConfig, _object(_defs(OPEN, "server"))),
    "run.open.params#definition": (wire.Definition, _object(_defs(OPEN, "definition"))),
    "run.open.params#transport/stdio": (
        wire.StdioTransport,
        _object(
            {
                "properties": {"type": {}, **_branch(_defs(OPEN, "transport"), "stdio")["properties"]},
                "required": ["type", *_branch(_defs(OPEN, "transport"), "stdio")["required"]],
            }
        ),
    ),
    "run.open.params#transport/http": (
        wire.HttpTransport,
        _object(
            {
                "properties": {"type": {}, **_branch(_defs(OPEN, "transport"), "http")["properties"]},
                "required": ["type", *_branch(_defs(OPEN, "transport"), "http")["required"]],
            }
        ),
    ),
    "run.open.result": (wire.OpenResult, _object(schema("run.open.result"))),
    "run.definitions.params": (wire.RunParams, _object(schema("run.definitions.params"))),
    "run.close.params": (wire.RunParams, _object(schema("run.close.params"))),
    "run.definitions.result": (wire.DefinitionsResult, _object(schema("run.definitions.result"))),
    "run.definitions.result#notice": (
        wire.Notice,
        _object(schema("run.definitions.result")["properties"]["notices"]["items"]),
    ),
    "run.request.result": (wire.RequestResult, _object(schema("run.request.result"))),
    "run.request.params": (wire.RequestParams, _object(schema("run.request.params"))),
    "run.request.params#definition": (wire.Definition, _object(_defs("run.request.params", "definition"))),
    "run.call.params": (wire.CallParams, _object(schema("run.call.params"))),
    "run.call.result": (wire.ToolResult, _object(schema(CALL_RESULT))),
    "run.call.result#content": (
        wire.ContentBlock,
        _object(_defs(CALL_RESULT, "content"), then=_defs(CALL_RESULT, "content")["then"]),
    ),
    "run.call.discovery": (wire.DiscoveryContent, _object(schema("run.call.discovery"))),
    "run.call.discovery#activated": (
        wire.ActivatedTool,
        _object(schema("run.call.discovery")["properties"]["activated"]["items"]),
    ),
    "run.call.discovery#evicted": (
        wire.EvictedTool,
        _object(schema("run.call.discovery")["properties"]["evicted"]["items"]),
    ),
    "error": (wire.ErrorObject, _object(schema("error"))),
    "error#data": (wire.ErrorData, _object(schema("error")["properties"]["data"])),
}


@pytest.mark.parametrize("where", sorted(SHAPES))
def test_a_wire_type_has_the_keys_of_its_schema_and_requires_what_it_requires(where: str) -> None:
    typed, (keys, required) = SHAPES[where]

    assert _keys(typed) == (keys, required), where


def test_every_schema_with_keys_has_a_wire_type() -> None:
    covered = {where.partition("#")[0] for where in SHAPES}
    keyless = {name for name in schema_names() if not schema(name).get("properties")}

    assert set(schema_names()) - keyless <= covered, set(schema_names()) - keyless - covered


def test_the_policy_type_holds_the_fields_the_schema_names() -> None:
    # The schema leaves a policy open (an invalid one is a config_error), and names its fields in words.
    described = _defs(OPEN, "server")["properties"]["policy"]["description"]
    named = re.search(r"\(([^)]*)\)", described)

    assert named is not None
    assert _keys(wire.ToolPolicy) == ({field.strip() for field in named.group(1).split(",")}, set())


def test_the_transport_kinds_are_the_schemas() -> None:
    kinds = {get_args(get_type_hints(t)["type"])[0] for t in get_args(wire.Transport)}

    assert kinds == set(_defs(OPEN, "transport")["properties"]["type"]["enum"])


def test_the_wire_types_a_third_party_needs_are_exported() -> None:
    for name in ("Definition", "ToolResult", "ContentBlock", "OpenParams", "ServerConfig", "ToolPolicy"):
        assert name in conformance.__all__
        assert getattr(conformance, name) is getattr(wire, name)
