"""The fleet specification: a typed, frozen model, and its JSON/TOML file format.

A spec file is a mapping with a ``seed`` and a list of ``servers``; every key is
snake_case except inside explicit tool definitions, whose ``annotations`` are kept in
wire form (``readOnlyHint``…) so that a raw server can send them exactly as written.
Validation errors name the file, the field path and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from mock_servers._errors import SpecError
from mock_servers._vocabulary import DOMAINS

__all__ = [
    "BAD_NAME_KINDS",
    "AnnotationMix",
    "Faults",
    "FleetSpec",
    "SchemaShapes",
    "ServerSpec",
    "ToolSpec",
    "load_spec",
    "preset",
    "preset_names",
    "spec_from_dict",
    "spec_to_dict",
]

#: Server ids are used as URL path segments and in ledger entries.
SERVER_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

#: Kinds of deliberately bad tool names a server can be asked to serve.
BAD_NAME_KINDS = ("double_underscore", "dot", "space", "slash", "non_ascii", "too_long", "empty")


@dataclass(frozen=True, slots=True)
class AnnotationMix:
    """How a server's generated tools are annotated.

    The three shares are of tools with ``readOnlyHint: true``, ``readOnlyHint: false``
    and no ``annotations`` at all; they sum to 1. With ``follow_names`` (the default)
    names and marks always agree: only tools whose names read (list, get, search…) are
    marked read-only and only the others writable, so the first two shares are upper
    bounds and the tools left over carry no annotations. Without it, marks are dealt
    at random and the shares are exact (to the nearest tool).
    """

    read_only: float = 0.5
    writable: float = 0.3
    none: float = 0.2
    follow_names: bool = True
    # Also set destructiveHint, idempotentHint, openWorldHint and title on annotated tools.
    extra_hints: bool = True
    # Share of tools that carry a top-level display ``title``.
    titles: float = 0.5


@dataclass(frozen=True, slots=True)
class SchemaShapes:
    """The shapes of generated input schemas (each a probability per tool or property)."""

    max_properties: int = 6
    nested: float = 0.2
    enums: float = 0.5
    arrays: float = 0.3
    required: float = 0.5


@dataclass(frozen=True, slots=True)
class Faults:
    """Misbehaviour a server is asked to show. Every fault is recorded in the ledger when it fires.

    The list faults take the index of the ``tools/list`` page on which they fire (0 is
    the first page). Tool-name lists accept ``"*"`` for every tool. The last four
    counts describe definitions an SDK-built server cannot send; they need ``raw``.
    """

    fail_to_start: bool = False
    error_on_list: int | None = None
    crash_on_list: int | None = None
    hang_on_list: int | None = None
    slow: float = 0.0
    tool_call_error: tuple[str, ...] = ()
    drop_mid_call: tuple[str, ...] = ()
    duplicate_names: int = 0
    bad_names: tuple[str, ...] = ()
    huge_descriptions: int = 0
    huge_description_chars: int = 100_000
    schema_not_object: int = 0
    missing_name: int = 0
    read_only_hint_string: int = 0
    read_only_hint_number: int = 0

    @property
    def needs_raw(self) -> bool:
        """Whether these faults can only be served by a raw JSON-RPC server."""
        return bool(
            self.schema_not_object or self.missing_name or self.read_only_hint_string or self.read_only_hint_number
        )

    def active(self) -> tuple[str, ...]:
        """The names of the faults that are switched on, in declaration order."""
        defaults = Faults()
        return tuple(name for name in _FAULT_FIELDS if getattr(self, name) != getattr(defaults, name))

    def calls_fail(self, tool: str) -> bool:
        return "*" in self.tool_call_error or tool in self.tool_call_error

    def calls_drop(self, tool: str) -> bool:
        return "*" in self.drop_mid_call or tool in self.drop_mid_call


_FAULT_FIELDS = tuple(Faults.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """An explicit tool, served as written next to the generated ones."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    # The definition exactly as a real server listed it (wire form, e.g. from ``mcp-fleet
    # capture``), served as written; the fields above mirror it.
    wire: Mapping[str, Any] | None = None
    # Recorded results replayed for calls with equal arguments: {"arguments", "result"} each.
    samples: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One mock MCP server of a fleet."""

    id: str
    domain: str = "code_hosting"
    tool_count: int = 20
    annotations: AnnotationMix = AnnotationMix()
    schema: SchemaShapes = SchemaShapes()
    page_size: int = 50
    seed: int = 0
    faults: Faults = Faults()
    tools: tuple[ToolSpec, ...] = ()
    raw: bool = False


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """A fleet: servers and the seed their own seeds derive from."""

    servers: tuple[ServerSpec, ...]
    seed: int = 0

    def server(self, server_id: str) -> ServerSpec:
        """The server with this id.

        Raises:
            KeyError: no server has this id.
        """
        for server in self.servers:
            if server.id == server_id:
                return server
        raise KeyError(server_id)


def derive_seed(fleet_seed: int, server_id: str) -> int:
    """A server's default seed: stable across machines, Python versions and runs."""
    digest = hashlib.sha256(f"{fleet_seed}:{server_id}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


# ---------------------------------------------------------------------------------------------
# Parsing


class _Reader:
    """Validates a plain mapping field by field, naming the path of every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, expected: str, value: Any) -> SpecError:
        return SpecError(self.source, path, expected, _short_repr(value))

    def mapping(self, value: Any, path: str, allowed: Sequence[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, "a table (mapping)", value)
        for key in value:
            if key not in allowed:
                where = f"{path}.{key}" if path else str(key)
                raise self.fail(where, f"one of the known keys ({', '.join(allowed)})", key)
        return value

    def integer(self, value: Any, path: str, low: int | None = None, high: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, "an integer", value)
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise self.fail(path, f"an integer {bounds}", value)
        return value

    def number(self, value: Any, path: str, low: float = 0.0, high: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(path, "a number", value)
        if value < low or (high is not None and value > high):
            bounds = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
            raise self.fail(path, f"a number {bounds}", value)
        return float(value)

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, "true or false", value)
        return value

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.fail(path, "a string", value)
        return value

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        if not isinstance(value, list | tuple):
            raise self.fail(path, "a list of strings", value)
        return tuple(self.string(item, f"{path}[{i}]") for i, item in enumerate(value))

    def page(self, value: Any, path: str) -> int | None:
        """A list-fault trigger: ``true`` (first page), a page index, or ``false``/absent."""
        if value is True:
            return 0
        if value is False or value is None:
            return None
        return self.integer(value, path, low=0)


def spec_from_dict(data: Mapping[str, Any], *, source: str = "<dict>") -> FleetSpec:
    """Build and validate a `FleetSpec` from a plain mapping (the parsed JSON or TOML).

    Raises:
        SpecError: naming ``source``, the field path and what was expected.
    """
    r = _Reader(source)
    top = r.mapping(data, "", ("seed", "servers"))
    seed = r.integer(top.get("seed", 0), "seed", low=0)
    raw_servers = top.get("servers")
    if not isinstance(raw_servers, list) or not raw_servers:
        raise r.fail("servers", "a non-empty list of servers", raw_servers)
    servers: list[ServerSpec] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_servers):
        server = _server_from_dict(r, raw, f"servers[{i}]", seed)
        if server.id in seen:
            raise r.fail(f"servers[{i}].id", f"an id not used before (servers[{seen[server.id]}] has it)", server.id)
        seen[server.id] = i
        servers.append(server)
    return FleetSpec(servers=tuple(servers), seed=seed)


_SERVER_KEYS = ("id", "domain", "tool_count", "annotations", "schema", "page_size", "seed", "faults", "tools", "raw")


def _server_from_dict(r: _Reader, raw: Any, path: str, fleet_seed: int) -> ServerSpec:
    d = r.mapping(raw, path, _SERVER_KEYS)
    if "id" not in d:
        raise r.fail(f"{path}.id", "a server id", None)
    server_id = r.string(d["id"], f"{path}.id")
    if not SERVER_ID.fullmatch(server_id):
        raise r.fail(f"{path}.id", "1 to 64 ASCII letters, digits, '.', '-' or '_'", server_id)
    domain = r.string(d.get("domain", "code_hosting"), f"{path}.domain")
    if domain not in DOMAINS:
        raise r.fail(f"{path}.domain", f"one of {', '.join(sorted(DOMAINS))}", domain)
    defaults = ServerSpec(id=server_id)
    tool_count = r.integer(d.get("tool_count", defaults.tool_count), f"{path}.tool_count", low=0, high=10_000)
    page_size = r.integer(d.get("page_size", defaults.page_size), f"{path}.page_size", low=1)
    seed = r.integer(d["seed"], f"{path}.seed", low=0) if "seed" in d else derive_seed(fleet_seed, server_id)
    raw_mode = r.boolean(d.get("raw", False), f"{path}.raw")
    mix = _mix_from_dict(r, d.get("annotations", {}), f"{path}.annotations")
    shapes = _shapes_from_dict(r, d.get("schema", {}), f"{path}.schema")
    faults = _faults_from_dict(r, d.get("faults", {}), f"{path}.faults")
    if faults.needs_raw and not raw_mode:
        raise r.fail(f"{path}.raw", "true: malformed definitions and non-boolean hints need a raw server", False)
    raw_tools = d.get("tools", [])
    if not isinstance(raw_tools, list):
        raise r.fail(f"{path}.tools", "a list of tools", raw_tools)
    tools = tuple(_tool_from_dict(r, t, f"{path}.tools[{i}]", raw_mode) for i, t in enumerate(raw_tools))
    return ServerSpec(
        id=server_id,
        domain=domain,
        tool_count=tool_count,
        annotations=mix,
        schema=shapes,
        page_size=page_size,
        seed=seed,
        faults=faults,
        tools=tools,
        raw=raw_mode,
    )


def _mix_from_dict(r: _Reader, raw: Any, path: str) -> AnnotationMix:
    d = r.mapping(raw, path, tuple(AnnotationMix.__dataclass_fields__))
    base = AnnotationMix()
    shares = {
        k: r.number(d.get(k, getattr(base, k)), f"{path}.{k}", 0.0, 1.0) for k in ("read_only", "writable", "none")
    }
    if set(d) & set(shares) and set(shares) - set(d):
        # A partial mix: the shares not given split what is left, in proportion to their defaults.
        given = sum(shares[k] for k in shares if k in d)
        missing = [k for k in shares if k not in d]
        weight = sum(getattr(base, k) for k in missing)
        for k in missing:
            shares[k] = max(0.0, 1.0 - given) * getattr(base, k) / weight if weight else 0.0
    if abs(sum(shares.values()) - 1.0) > 1e-6:
        raise r.fail(path, "read_only + writable + none = 1", f"{sum(shares.values()):g}")
    return AnnotationMix(
        read_only=shares["read_only"],
        writable=shares["writable"],
        none=shares["none"],
        follow_names=r.boolean(d.get("follow_names", base.follow_names), f"{path}.follow_names"),
        extra_hints=r.boolean(d.get("extra_hints", base.extra_hints), f"{path}.extra_hints"),
        titles=r.number(d.get("titles", base.titles), f"{path}.titles", 0.0, 1.0),
    )


def _shapes_from_dict(r: _Reader, raw: Any, path: str) -> SchemaShapes:
    d = r.mapping(raw, path, tuple(SchemaShapes.__dataclass_fields__))
    base = SchemaShapes()
    return SchemaShapes(
        max_properties=r.integer(d.get("max_properties", base.max_properties), f"{path}.max_properties", 1, 64),
        nested=r.number(d.get("nested", base.nested), f"{path}.nested", 0.0, 1.0),
        enums=r.number(d.get("enums", base.enums), f"{path}.enums", 0.0, 1.0),
        arrays=r.number(d.get("arrays", base.arrays), f"{path}.arrays", 0.0, 1.0),
        required=r.number(d.get("required", base.required), f"{path}.required", 0.0, 1.0),
    )


def _faults_from_dict(r: _Reader, raw: Any, path: str) -> Faults:
    d = r.mapping(raw, path, _FAULT_FIELDS)
    counts = {
        k: r.integer(d.get(k, 0), f"{path}.{k}", 0, 1000)
        for k in (
            "duplicate_names",
            "huge_descriptions",
            "schema_not_object",
            "missing_name",
            "read_only_hint_string",
            "read_only_hint_number",
        )
    }
    bad_names = r.strings(d.get("bad_names", []), f"{path}.bad_names")
    for i, kind in enumerate(bad_names):
        if kind not in BAD_NAME_KINDS:
            raise r.fail(f"{path}.bad_names[{i}]", f"one of {', '.join(BAD_NAME_KINDS)}", kind)
    return Faults(
        fail_to_start=r.boolean(d.get("fail_to_start", False), f"{path}.fail_to_start"),
        error_on_list=r.page(d.get("error_on_list"), f"{path}.error_on_list"),
        crash_on_list=r.page(d.get("crash_on_list"), f"{path}.crash_on_list"),
        hang_on_list=r.page(d.get("hang_on_list"), f"{path}.hang_on_list"),
        slow=r.number(d.get("slow", 0.0), f"{path}.slow", 0.0, 600.0),
        tool_call_error=r.strings(d.get("tool_call_error", []), f"{path}.tool_call_error"),
        drop_mid_call=r.strings(d.get("drop_mid_call", []), f"{path}.drop_mid_call"),
        bad_names=bad_names,
        huge_description_chars=r.integer(
            d.get("huge_description_chars", 100_000), f"{path}.huge_description_chars", 1, 10_000_000
        ),
        **counts,
    )


def _tool_from_dict(r: _Reader, raw: Any, path: str, raw_mode: bool) -> ToolSpec:
    d = r.mapping(raw, path, ("name", "description", "input_schema", "annotations", "title", "wire", "samples"))
    from mock_servers._spec_tools import samples_from, tool_from_wire

    samples = samples_from(r, d.get("samples", []), f"{path}.samples")
    if "wire" in d:
        return replace(tool_from_wire(r, d, path, raw_mode), samples=samples)
    if "name" not in d:
        raise r.fail(f"{path}.name", "a tool name", None)
    name = r.string(d["name"], f"{path}.name")
    description = r.string(d.get("description", ""), f"{path}.description")
    schema = d.get("input_schema", {"type": "object"})
    if not raw_mode and (not isinstance(schema, Mapping) or schema.get("type") != "object"):
        raise r.fail(f"{path}.input_schema", 'a JSON Schema object with "type": "object"', schema)
    annotations = d.get("annotations")
    if annotations is not None:
        annotations = r.mapping(annotations, f"{path}.annotations", _ANNOTATION_KEYS)
        if not raw_mode:
            for key, value in annotations.items():
                if key == "title":
                    r.string(value, f"{path}.annotations.title")
                else:
                    r.boolean(value, f"{path}.annotations.{key}")
    title = d.get("title")
    if title is not None:
        title = r.string(title, f"{path}.title")
    return ToolSpec(
        name=name,
        description=description,
        input_schema=_freeze_json(schema),
        annotations=_freeze_json(annotations) if annotations is not None else None,
        title=title,
        samples=samples,
    )


_ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _freeze_json(value: Any) -> Any:
    # A deep copy through JSON, so a spec never shares mutable state with its caller.
    return json.loads(json.dumps(value))


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------
# Files and presets


def load_spec(path: str | Path) -> FleetSpec:
    """Load a fleet spec from a ``.json`` or ``.toml`` file.

    Raises:
        SpecError: the file is missing, unreadable, not valid JSON/TOML, or not a valid spec.
    """
    p = Path(path)
    source = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(source, "", "a readable spec file", exc.strerror or type(exc).__name__) from None
    return _parse_text(text, p.suffix.lower(), source)


def _parse_text(text: str, suffix: str, source: str) -> FleetSpec:
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(source, f"line {exc.lineno}", "valid JSON", exc.msg) from None
    elif suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(source, "", "valid TOML", str(exc)) from None
    else:
        raise SpecError(source, "", "a file ending in .json or .toml", repr(suffix or "no suffix"))
    return spec_from_dict(data, source=source)


def preset_names() -> tuple[str, ...]:
    """The names of the presets shipped with the package."""
    folder = resources.files("mock_servers") / "presets"
    return tuple(sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")))


def preset(name: str) -> FleetSpec:
    """Load a shipped preset by name (``seed-example``, ``realistic``, ``large``, ``adversarial``).

    Raises:
        SpecError: there is no preset of that name.
    """
    names = preset_names()
    if name not in names:
        raise SpecError("presets", "name", f"one of {', '.join(names)}", repr(name))
    resource = resources.files("mock_servers") / "presets" / f"{name}.toml"
    return _parse_text(resource.read_text(encoding="utf-8"), ".toml", f"preset {name}")


def resolve_spec(source: str | os.PathLike[str] | FleetSpec) -> FleetSpec:
    """A spec from a `FleetSpec`, a preset name, or a path to a spec file."""
    if isinstance(source, FleetSpec):
        return source
    text = str(source)
    if not text.endswith((".json", ".toml")) and text in preset_names():
        return preset(text)
    return load_spec(text)


# ---------------------------------------------------------------------------------------------
# Serialisation


def spec_to_dict(spec: FleetSpec) -> dict[str, Any]:
    """The plain-data form of a spec; ``spec_from_dict(spec_to_dict(s)) == s``."""
    return {"seed": spec.seed, "servers": [server_to_dict(s) for s in spec.servers]}


def server_to_dict(server: ServerSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": server.id,
        "domain": server.domain,
        "tool_count": server.tool_count,
        "page_size": server.page_size,
        "seed": server.seed,
        "annotations": _dataclass_dict(server.annotations),
        "schema": _dataclass_dict(server.schema),
    }
    faults = {k: _fault_value(getattr(server.faults, k)) for k in server.faults.active()}
    if faults:
        out["faults"] = faults
    if server.tools:
        out["tools"] = [_tool_to_dict(t) for t in server.tools]
    if server.raw:
        out["raw"] = True
    return out


def _fault_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _dataclass_dict(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


def _tool_to_dict(tool: ToolSpec) -> dict[str, Any]:
    samples = {"samples": [_freeze_json(s) for s in tool.samples]} if tool.samples else {}
    if tool.wire is not None:
        return {"wire": _freeze_json(tool.wire), **samples}
    out: dict[str, Any] = {"name": tool.name, "description": tool.description, **samples}
    out["input_schema"] = _freeze_json(tool.input_schema)
    if tool.annotations is not None:
        out["annotations"] = _freeze_json(tool.annotations)
    if tool.title is not None:
        out["title"] = tool.title
    return out
