"""Reading a spec's explicit tools: snake_case fields, wire form (``wire``) and recorded results (``samples``).

A ``wire`` tool is a definition exactly as a real server listed it (``mcp-fleet capture``
writes them); it is served as written. ``samples`` are recorded ``tools/call`` results,
replayed for calls with equal arguments. Part of the spec reader (`mock_servers._spec_reader`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mock_servers._fields import FieldReader
from mock_servers._limits import LIMITS
from mock_servers._spec import ToolSpec, freeze_json

__all__ = ["samples_from", "tool_from_dict", "tool_from_wire"]


def tool_from_dict(r: FieldReader, raw: Any, path: str, raw_mode: bool) -> ToolSpec:
    """An explicit tool, given by its snake_case fields or as its wire definition (``wire``).

    Problems are recorded on ``r``; what is returned then stands in for the tool.
    """
    d = r.mapping(raw, path, ("name", "description", "input_schema", "annotations", "title", "wire", "samples"))
    samples = samples_from(r, d.get("samples", []), f"{path}.samples")
    if "wire" in d:
        return replace(tool_from_wire(r, d, path, raw_mode), samples=samples)
    if "name" not in d:
        r.fail(f"{path}.name", "a tool name", None)
    name = r.string(d.get("name", ""), f"{path}.name")
    description = r.string(d.get("description", ""), f"{path}.description")
    if len(description) > LIMITS.description_chars:
        r.fail(f"{path}.description", f"at most {LIMITS.description_chars:,} characters", f"{len(description):,}")
        description = ""
    schema = d.get("input_schema", {"type": "object"})
    if not r.json_value(schema, f"{path}.input_schema"):
        schema = {"type": "object"}
    elif not raw_mode and (not isinstance(schema, Mapping) or schema.get("type") != "object"):
        r.fail(f"{path}.input_schema", 'a JSON Schema object with "type": "object"', schema)
    annotations = d.get("annotations")
    if annotations is not None:
        annotations = r.mapping(annotations, f"{path}.annotations", _ANNOTATION_KEYS)
        if not r.json_value(annotations, f"{path}.annotations"):
            annotations = {}
        elif not raw_mode:
            for key in annotations:
                if key == "title":
                    r.string(annotations[key], f"{path}.annotations.title")
                else:
                    r.boolean(annotations, key, f"{path}.annotations", False)
    title = d.get("title")
    if title is not None:
        title = r.string(title, f"{path}.title")
    return ToolSpec(
        name=name,
        description=description,
        input_schema=freeze_json(schema),
        annotations=freeze_json(annotations) if annotations is not None else None,
        title=title,
        samples=samples,
    )


_ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


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
        tool_from_dict(r, {k: v for k, v in checked.items() if v is not None}, f"{path}.wire", raw_mode)
    name, description, title = wire.get("name"), wire.get("description"), wire.get("title")
    annotations, schema = wire.get("annotations"), wire.get("inputSchema")
    return ToolSpec(
        name=name if isinstance(name, str) else "",
        description=description if isinstance(description, str) else "",
        input_schema=freeze_json(schema) if isinstance(schema, Mapping) else {"type": "object"},
        annotations=freeze_json(annotations) if isinstance(annotations, Mapping) else None,
        title=title if isinstance(title, str) else None,
        wire=freeze_json(wire),
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
        kept.append(freeze_json(d))
    return tuple(kept)
