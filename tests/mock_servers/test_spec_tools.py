"""Explicit tools given in wire form (``wire``) and with recorded results (``samples``)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mock_servers import SpecError, call_result, generate_tools, spec_from_dict, spec_to_dict

DEFINITION = {
    "name": "search_code",
    "title": "Search code",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "default": None}}},
    "outputSchema": {"type": "object", "properties": {"hits": {"type": "integer"}}},
    "icons": [{"src": "https://example.com/icon.png"}],
    "_meta": {"vendor/origin": "captured"},
    "annotations": {"readOnlyHint": True},
}
SAMPLE = {"arguments": {"q": "x"}, "result": {"content": [{"type": "text", "text": "1 hit"}], "isError": False}}


def fleet(tool: dict[str, Any], **server: Any) -> dict[str, Any]:
    return {"servers": [{"id": "s", "tool_count": 0, "tools": [tool], **server}]}


def test_a_wire_definition_is_served_exactly_as_written_and_survives_a_round_trip() -> None:
    spec = spec_from_dict(fleet({"wire": DEFINITION, "samples": [SAMPLE]}))
    [tool] = spec.servers[0].tools
    assert (tool.name, tool.title, tool.description) == ("search_code", "Search code", "")
    assert generate_tools(spec.servers[0]) == [DEFINITION]
    assert "description" not in generate_tools(spec.servers[0])[0]
    assert tool.samples == (SAMPLE,)
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec


def test_a_raw_server_keeps_values_the_sdk_could_not_send() -> None:
    odd = {"name": "lies", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": "true", "x-vendor": 1}}
    spec = spec_from_dict(fleet({"wire": odd}, raw=True))
    assert generate_tools(spec.servers[0]) == [odd]


@pytest.mark.parametrize(
    ("tool", "field", "expected"),
    [
        ({"wire": DEFINITION, "description": "x"}, "servers[0].tools[0]", "either wire or the snake_case fields"),
        ({"wire": ["search_code"]}, "servers[0].tools[0].wire", "a tool definition (mapping)"),
        ({"wire": {"name": "t"}}, "servers[0].tools[0].wire.inputSchema", 'a JSON Schema object with "type"'),
        (
            {"wire": {"name": "t", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": "yes"}}},
            "servers[0].tools[0].wire.annotations.readOnlyHint",
            "true or false",
        ),
        ({"wire": {"inputSchema": {"type": "object"}}}, "servers[0].tools[0].wire.name", "a tool name"),
        ({"name": "t", "samples": {"arguments": {}}}, "servers[0].tools[0].samples", "a list of recorded calls"),
        (
            {"name": "t", "samples": [{"result": {}}]},
            "servers[0].tools[0].samples[0].arguments",
            "the call's arguments",
        ),
        (
            {"name": "t", "samples": [{"arguments": {}, "result": {"content": "hi"}}]},
            "servers[0].tools[0].samples[0].result.content",
            "a list of content blocks",
        ),
    ],
)
def test_a_bad_wire_tool_or_sample_names_the_field(tool: dict[str, Any], field: str, expected: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_dict(fleet(tool))
    assert caught.value.field == field
    assert caught.value.expected.startswith(expected)


def test_the_readme_examples_of_spec_files_load() -> None:
    readme = (Path(__file__).resolve().parents[2] / "mock_servers" / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme, re.S)
    assert len(blocks) >= 2
    for block in blocks:
        # A block of explicit tools alone belongs to some server.
        text = block if block.lstrip().startswith(("seed", "[[servers]]")) else f'[[servers]]\nid = "s"\n{block}'
        spec = spec_from_dict(tomllib.loads(text), source="README")
        for server in spec.servers:
            for tool in server.tools:
                for sample in tool.samples:
                    assert call_result(server, tool.name, sample["arguments"]) == sample["result"]
