"""Explicit tools given in wire form (``wire``) and with recorded results (``samples``): their reading.

A ``wire`` tool is a definition exactly as a real server listed it (``mcp-fleet capture``
writes them); it is served as written. ``samples`` are recorded ``tools/call`` results,
replayed for calls with equal arguments. Part of the spec reader (`mock_servers._spec`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mock_servers._fields import FieldReader
from mock_servers._spec import ToolSpec, _freeze_json, _tool_from_dict

__all__ = ["samples_from", "tool_from_wire"]


def tool_from_wire(r: FieldReader, d: Mapping[str, Any], path: str, raw_mode: bool) -> ToolSpec:
    """A tool given as its exact wire definition (``wire``), checked as far as the server mode needs.

    Problems are recorded on ``r``; what is returned then stands in for the tool.
    """
    if set(d) - {"wire", "samples"}:
        r.fail(path, "either wire or the snake_case fields, not both", sorted(set(d) - {"wire", "samples"}))
    wire = d["wire"]
    if not isinstance(wire, Mapping) or not r.json_value(wire, f"{path}.wire"):
        if not isinstance(wire, Mapping):
            r.fail(f"{path}.wire", "a tool definition (mapping) in wire form", wire)
        return ToolSpec(name="")
    if not raw_mode:
        if "inputSchema" not in wire:
            r.fail(f"{path}.wire.inputSchema", 'a JSON Schema object with "type": "object"', None)
        checked = {
            "name": wire.get("name"),
            "description": wire.get("description", ""),
            "input_schema": wire.get("inputSchema"),
            "annotations": wire.get("annotations"),
            "title": wire.get("title"),
        }
        _tool_from_dict(r, {k: v for k, v in checked.items() if v is not None}, f"{path}.wire", raw_mode)
    name, description, title = wire.get("name"), wire.get("description"), wire.get("title")
    annotations, schema = wire.get("annotations"), wire.get("inputSchema")
    return ToolSpec(
        name=name if isinstance(name, str) else "",
        description=description if isinstance(description, str) else "",
        input_schema=_freeze_json(schema) if isinstance(schema, Mapping) else {"type": "object"},
        annotations=_freeze_json(annotations) if isinstance(annotations, Mapping) else None,
        title=title if isinstance(title, str) else None,
        wire=_freeze_json(wire),
    )


def samples_from(r: FieldReader, raw: Any, path: str) -> tuple[Mapping[str, Any], ...]:
    """Recorded calls; problems are recorded on ``r`` and the bad samples left out."""
    if not isinstance(raw, list):
        r.fail(path, "a list of recorded calls", raw)
        return ()
    kept = []
    for i, sample in enumerate(raw):
        where = f"{path}[{i}]"
        d = r.mapping(sample, where, ("arguments", "result"))
        if not r.json_value(d, where):
            continue
        if not isinstance(d.get("arguments"), Mapping):
            r.fail(f"{where}.arguments", "the call's arguments (a mapping)", d.get("arguments"))
            continue
        result = d.get("result")
        if not isinstance(result, Mapping):
            r.fail(f"{where}.result", "a tools/call result (a mapping)", result)
            continue
        if not isinstance(result.get("content", []), list):
            r.fail(f"{where}.result.content", "a list of content blocks", result.get("content"))
            continue
        kept.append(_freeze_json(d))
    return tuple(kept)
