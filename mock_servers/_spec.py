"""The fleet specification: a typed, frozen model, and its JSON/TOML file format.

A spec file is a mapping with a ``seed`` and a list of ``servers``; every key is
snake_case except inside explicit tool definitions, whose ``annotations`` are kept in
wire form (``readOnlyHint``…) so that a raw server can send them exactly as written.
Validation errors name the file, the field path and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from mock_servers._documents import parse_document
from mock_servers._errors import FleetArgumentError, SpecError
from mock_servers._fields import FieldReader
from mock_servers._limits import LIMITS
from mock_servers._vocabulary import DOMAINS

__all__ = [
    "BAD_NAME_KINDS",
    "AnnotationMix",
    "CatalogChange",
    "Faults",
    "FleetSpec",
    "Rename",
    "SchemaShapes",
    "ServerSpec",
    "ToolSpec",
    "ToolUpdate",
    "load_spec",
    "preset",
    "preset_names",
    "spec_from_dict",
    "spec_from_text",
    "spec_to_dict",
]

#: Server ids are used as URL path segments and in ledger entries.
SERVER_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
#: Ids a URL cannot carry as a path segment: clients resolve them away.
_DOT_SEGMENTS = (".", "..")

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
    error_on_call: tuple[str, ...] = ()
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

    def __post_init__(self) -> None:
        _check_limit("huge_description_chars", self.huge_description_chars, LIMITS.description_chars)
        for name in _FAULT_COUNTS:
            _check_limit(name, getattr(self, name), LIMITS.fault_count)

    def calls_fail(self, tool: str) -> bool:
        return "*" in self.tool_call_error or tool in self.tool_call_error

    def calls_error(self, tool: str) -> bool:
        return "*" in self.error_on_call or tool in self.error_on_call

    def calls_drop(self, tool: str) -> bool:
        return "*" in self.drop_mid_call or tool in self.drop_mid_call


_FAULT_FIELDS = tuple(Faults.__dataclass_fields__)
#: The faults that name the tools whose calls they hit.
_CALL_FAULTS = ("tool_call_error", "error_on_call", "drop_mid_call")
_FAULT_COUNTS = (
    "duplicate_names",
    "huge_descriptions",
    "schema_not_object",
    "missing_name",
    "read_only_hint_string",
    "read_only_hint_number",
)


def _check_limit(name: str, value: int, limit: int) -> None:
    # Limits hold for every spec, however built, so no spec can make a server hold too much.
    if value > limit:
        raise FleetArgumentError(f"{name} is {value:,}, over the limit of {limit:,}")


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

    def __post_init__(self) -> None:
        _check_limit("a description's length", len(self.description), LIMITS.description_chars)


@dataclass(frozen=True, slots=True)
class ToolUpdate:
    """New fields for a tool the server lists; a field left ``None`` keeps its value.

    ``annotations`` replaces the whole annotations object (``{}`` leaves an empty one).
    """

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Rename:
    """A tool listed from now on under another name, its definition otherwise unchanged."""

    old: str
    new: str


@dataclass(frozen=True, slots=True)
class CatalogChange:
    """One change of a live catalog, and the ``notifications/tools/list_changed`` it sends.

    A scheduled change (``ServerSpec.changes``) has exactly one trigger: ``after_calls``
    (as the server answers its Nth ``tools/call`` in all, before that result is sent) or
    ``after_seconds`` (from the moment the server began serving). Changes fire in the order
    listed, each once its trigger is met and every earlier one has fired. A change made on
    demand (a test's request) has no trigger. Edits apply in the order remove, rename,
    update, add; ``notify`` notifications follow (0: a silent change); ``list_error``
    makes every later ``tools/list`` answer a JSON-RPC error (``False`` heals it, ``None``
    leaves it as it is).
    """

    after_calls: int | None = None
    after_seconds: float | None = None
    remove: tuple[str, ...] = ()
    rename: tuple[Rename, ...] = ()
    update: tuple[ToolUpdate, ...] = ()
    add: tuple[ToolSpec, ...] = ()
    notify: int = 1
    list_error: bool | None = None

    def __post_init__(self) -> None:
        _check_limit("notify", self.notify, LIMITS.notifications_per_change)
        if self.after_calls is not None and self.after_seconds is not None:
            raise FleetArgumentError("a change has one trigger: after_calls or after_seconds, not both")

    @property
    def trigger(self) -> str:
        """``after_calls``, ``after_seconds`` or ``request`` (a change made on demand)."""
        if self.after_calls is not None:
            return "after_calls"
        return "after_seconds" if self.after_seconds is not None else "request"


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
    # A live catalog: the server declares ``tools.listChanged`` and may change its tools.
    list_changed: bool = False
    changes: tuple[CatalogChange, ...] = ()

    def __post_init__(self) -> None:
        _check_limit("tool_count", self.tool_count, LIMITS.tools_per_server)
        _check_limit("the number of changes", len(self.changes), LIMITS.changes_per_server)
        if self.raw and (self.list_changed or self.changes):
            raise FleetArgumentError(f"server {self.id!r}: a raw server cannot serve a live catalog")

    @property
    def tools_total(self) -> int:
        """How many tools the server may list: explicit, generated, duplicated and added by changes."""
        added = sum(len(c.add) for c in self.changes)
        return len(self.tools) + self.tool_count + self.faults.duplicate_names + added

    @property
    def description_chars(self) -> int:
        """An upper bound on the characters of its huge, explicit and changed descriptions."""
        huge = self.faults.huge_descriptions * self.faults.huge_description_chars
        changed = sum(len(t.description) for c in self.changes for t in c.add) + sum(
            len(u.description or "") for c in self.changes for u in c.update
        )
        return huge + sum(len(t.description) for t in self.tools) + changed


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """A fleet: servers and the seed their own seeds derive from."""

    servers: tuple[ServerSpec, ...]
    seed: int = 0

    def __post_init__(self) -> None:
        _check_limit("the number of servers", len(self.servers), LIMITS.servers)
        _check_limit("the number of tools", sum(s.tools_total for s in self.servers), LIMITS.fleet_tools)
        chars = sum(s.description_chars for s in self.servers)
        _check_limit("the characters of huge and explicit descriptions", chars, LIMITS.fleet_description_chars)

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


def spec_from_dict(data: Mapping[str, Any], *, source: str = "<dict>") -> FleetSpec:
    """Build and validate a `FleetSpec` from a plain mapping (the parsed JSON or TOML).

    Raises:
        SpecError: naming ``source`` and, for every problem found, the field path and
            what was expected.
    """
    r = FieldReader(source)
    top = r.mapping(data, "", ("seed", "servers"))
    seed = r.integer(top, "seed", "", 0, 0, LIMITS.seed) if "seed" in top else 0
    raw_servers = top.get("servers")
    if not isinstance(raw_servers, list) or not raw_servers:
        r.fail("servers", "a non-empty list of servers", raw_servers)
        raw_servers = []
    if len(raw_servers) > LIMITS.servers:
        r.fail("servers", f"at most {LIMITS.servers:,} servers", f"{len(raw_servers):,} servers")
        raw_servers = raw_servers[: LIMITS.servers]
    servers: list[ServerSpec] = []
    seen: dict[str, int] = {}
    budget = _Budget()
    for i, raw in enumerate(raw_servers):
        server = _server_from_dict(r, raw, f"servers[{i}]", seed, budget)
        if server.id in seen:
            r.fail(f"servers[{i}].id", f"an id not used before (servers[{seen[server.id]}] has it)", server.id)
        seen.setdefault(server.id, i)
        servers.append(server)
    if r.problems:
        raise r.error()
    return FleetSpec(servers=tuple(servers), seed=seed)


class _Budget:
    """What the servers read so far take of the fleet-wide limits (reported once, when first passed)."""

    def __init__(self) -> None:
        self.tools = 0
        self.chars = 0
        self.passed = False

    def take(self, r: FieldReader, path: str, tools: int, chars: int) -> bool:
        """Count a server's tools and description characters; False once past a limit."""
        self.tools += tools
        self.chars += chars
        if not self.passed and self.tools > LIMITS.fleet_tools:
            r.fail(path, f"at most {LIMITS.fleet_tools:,} tools in the whole fleet", f"{self.tools:,} so far")
            self.passed = True
        elif not self.passed and self.chars > LIMITS.fleet_description_chars:
            limit = LIMITS.fleet_description_chars
            r.fail(path, f"at most {limit:,} characters of descriptions in the whole fleet", f"{self.chars:,} so far")
            self.passed = True
        return not self.passed


_SERVER_KEYS = (
    "id",
    "domain",
    "tool_count",
    "annotations",
    "schema",
    "page_size",
    "seed",
    "faults",
    "tools",
    "raw",
    "list_changed",
    "changes",
)


def _server_from_dict(r: FieldReader, raw: Any, path: str, fleet_seed: int, budget: _Budget) -> ServerSpec:
    before = r.total
    d = r.mapping(raw, path, _SERVER_KEYS)
    server_id = _server_id(r, d, path)
    domain = r.string(d.get("domain", "code_hosting"), f"{path}.domain", "code_hosting")
    if domain not in DOMAINS:
        r.fail(f"{path}.domain", f"one of {', '.join(sorted(DOMAINS))}", domain)
        domain = "code_hosting"
    defaults = ServerSpec(id=server_id)
    tool_count = r.integer(d, "tool_count", path, defaults.tool_count, 0, LIMITS.tools_per_server)
    page_size = r.integer(d, "page_size", path, defaults.page_size, 1, LIMITS.fleet_tools)
    seed = r.integer(d, "seed", path, 0, 0, LIMITS.seed) if "seed" in d else derive_seed(fleet_seed, server_id)
    raw_mode = r.boolean(d, "raw", path, False)
    mix = _mix_from_dict(r, d.get("annotations", {}), f"{path}.annotations")
    shapes = _shapes_from_dict(r, d.get("schema", {}), f"{path}.schema")
    faults = _faults_from_dict(r, d.get("faults", {}), f"{path}.faults")
    if faults.needs_raw and not raw_mode:
        r.fail(f"{path}.raw", "true: malformed definitions and non-boolean hints need a raw server", False)
    raw_tools = d.get("tools", [])
    if not isinstance(raw_tools, list):
        r.fail(f"{path}.tools", "a list of tools", raw_tools)
        raw_tools = []
    huge = faults.huge_descriptions * faults.huge_description_chars
    tools: tuple[ToolSpec, ...] = ()
    changes: tuple[CatalogChange, ...] = ()
    if budget.take(r, path, tool_count + faults.duplicate_names + len(raw_tools), huge):
        tools = tuple(_tool_from_dict(r, t, f"{path}.tools[{i}]", raw_mode) for i, t in enumerate(raw_tools))
        budget.take(r, path, 0, sum(len(t.description) for t in tools))
        if "changes" in d:
            from mock_servers._spec_changes import changes_from  # the change reader builds on this module

            changes = changes_from(r, d["changes"], f"{path}.changes", raw_mode)
            added = [t for c in changes for t in c.add]
            budget.take(r, path, len(added), sum(len(t.description) for t in added))
    list_changed = r.boolean(d, "list_changed", path, bool(changes))
    if raw_mode and (list_changed or changes):
        r.fail(f"{path}.raw", "false: a live catalog (list_changed, changes) needs an SDK server", True)
    server = ServerSpec(
        id=server_id,
        domain=domain,
        tool_count=tool_count,
        annotations=mix,
        schema=shapes,
        page_size=page_size,
        seed=seed,
        faults=faults,
        tools=tools,
        raw=raw_mode and not (list_changed or changes),
        list_changed=list_changed,
        changes=changes,
    )
    if r.total == before:
        _check_fault_targets(r, server, path)
    if r.total == before and changes:
        _check_change_targets(r, server, path)
    return server


def _check_change_targets(r: FieldReader, server: ServerSpec, path: str) -> None:
    """Edits of a schedule must name tools the server lists when they fire, or they would fail then."""
    from mock_servers._generate import generate_tools  # generation builds on this module
    from mock_servers._spec_changes import check_change_targets

    names = [t["name"] for t in generate_tools(server) if isinstance(t.get("name"), str)]
    check_change_targets(r, names, server.changes, f"{path}.changes")


def _server_id(r: FieldReader, d: Mapping[str, Any], path: str) -> str:
    if "id" not in d:
        r.fail(f"{path}.id", "a server id", None)
        return f"<{path}>"
    server_id = r.string(d["id"], f"{path}.id")
    if not SERVER_ID.fullmatch(server_id):
        r.fail(f"{path}.id", "1 to 64 ASCII letters, digits, '.', '-' or '_'", server_id)
    elif server_id in _DOT_SEGMENTS:
        r.fail(f"{path}.id", "an id other than '.' and '..' (a URL cannot carry them as a path segment)", server_id)
    else:
        return server_id
    return f"<{path}>"


def _check_fault_targets(r: FieldReader, server: ServerSpec, path: str) -> None:
    """Faults that name tools must name tools the server lists, or they would never fire."""
    named = {k: [n for n in getattr(server.faults, k) if n != "*"] for k in _CALL_FAULTS}
    if not any(named.values()):
        return
    from mock_servers._generate import generate_tools  # generation builds on this module

    names = [t["name"] for t in generate_tools(server) if isinstance(t.get("name"), str)]
    known = set(names)
    for kind in named:
        for i, name in enumerate(getattr(server.faults, kind)):
            if name != "*" and name not in known:
                some = ", ".join(names[:4]) + (", …" if len(names) > 4 else "")
                r.fail(f"{path}.faults.{kind}[{i}]", f'"*" or a tool of this server ({some or "it has none"})', name)


def _mix_from_dict(r: FieldReader, raw: Any, path: str) -> AnnotationMix:
    d = r.mapping(raw, path, tuple(AnnotationMix.__dataclass_fields__))
    base = AnnotationMix()
    shares = {k: r.number(d, k, path, getattr(base, k)) for k in ("read_only", "writable", "none")}
    given_keys = [k for k in shares if k in d]
    if given_keys and len(given_keys) < len(shares):
        # A partial mix: the shares not given split what is left, in proportion to their defaults.
        given = sum(shares[k] for k in given_keys)
        missing = [k for k in shares if k not in d]
        weight = sum(getattr(base, k) for k in missing)
        for k in missing:
            shares[k] = max(0.0, 1.0 - given) * getattr(base, k) / weight if weight else 0.0
    if abs(sum(shares.values()) - 1.0) > 1e-6:
        r.fail(path, "read_only + writable + none = 1", f"{sum(shares.values()):g}")
        shares = {k: getattr(base, k) for k in shares}
    return AnnotationMix(
        read_only=shares["read_only"],
        writable=shares["writable"],
        none=shares["none"],
        follow_names=r.boolean(d, "follow_names", path, base.follow_names),
        extra_hints=r.boolean(d, "extra_hints", path, base.extra_hints),
        titles=r.number(d, "titles", path, base.titles),
    )


def _shapes_from_dict(r: FieldReader, raw: Any, path: str) -> SchemaShapes:
    d = r.mapping(raw, path, tuple(SchemaShapes.__dataclass_fields__))
    base = SchemaShapes()
    return SchemaShapes(
        max_properties=r.integer(d, "max_properties", path, base.max_properties, 1, 64),
        nested=r.number(d, "nested", path, base.nested),
        enums=r.number(d, "enums", path, base.enums),
        arrays=r.number(d, "arrays", path, base.arrays),
        required=r.number(d, "required", path, base.required),
    )


def _faults_from_dict(r: FieldReader, raw: Any, path: str) -> Faults:
    d = r.mapping(raw, path, _FAULT_FIELDS)
    counts = {k: r.integer(d, k, path, 0, 0, LIMITS.fault_count) for k in _FAULT_COUNTS}
    bad_names = r.strings(d, "bad_names", path)
    for i, kind in enumerate(bad_names):
        if kind not in BAD_NAME_KINDS:
            r.fail(f"{path}.bad_names[{i}]", f"one of {', '.join(BAD_NAME_KINDS)}", kind)
    default_chars = Faults().huge_description_chars
    return Faults(
        fail_to_start=r.boolean(d, "fail_to_start", path, False),
        error_on_list=r.page(d, "error_on_list", path),
        crash_on_list=r.page(d, "crash_on_list", path),
        hang_on_list=r.page(d, "hang_on_list", path),
        slow=r.number(d, "slow", path, 0.0, LIMITS.slow_seconds),
        tool_call_error=r.strings(d, "tool_call_error", path),
        error_on_call=r.strings(d, "error_on_call", path),
        drop_mid_call=r.strings(d, "drop_mid_call", path),
        bad_names=tuple(k for k in bad_names if k in BAD_NAME_KINDS),
        huge_description_chars=r.integer(d, "huge_description_chars", path, default_chars, 1, LIMITS.description_chars),
        **counts,
    )


def _tool_from_dict(r: FieldReader, raw: Any, path: str, raw_mode: bool) -> ToolSpec:
    d = r.mapping(raw, path, ("name", "description", "input_schema", "annotations", "title", "wire", "samples"))
    from mock_servers._spec_tools import samples_from, tool_from_wire

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
        input_schema=_freeze_json(schema),
        annotations=_freeze_json(annotations) if annotations is not None else None,
        title=title,
        samples=samples,
    )


_ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _freeze_json(value: Any) -> Any:
    # A deep copy through JSON, so a spec never shares mutable state with its caller.
    return json.loads(json.dumps(value))


# ---------------------------------------------------------------------------------------------
# Files and presets


def load_spec(path: str | Path) -> FleetSpec:
    """Load a fleet spec from a ``.json`` or ``.toml`` file.

    Raises:
        SpecError: the file is missing, unreadable, too large, not UTF-8, not valid
            JSON/TOML, or not a valid spec.
    """
    p = Path(path)
    source = str(path)
    if p.suffix.lower() not in (".json", ".toml"):
        raise SpecError(source, "", "a file ending in .json or .toml", repr(p.suffix or "no suffix"))
    try:
        with p.open("rb") as file:
            data = file.read(LIMITS.spec_bytes + 1)
    except OSError as exc:
        raise SpecError(source, "", "a readable spec file", exc.strerror or type(exc).__name__) from None
    return spec_from_dict(parse_document(data, p.suffix.lower(), source), source=source)


def spec_from_text(text: str, *, suffix: str = ".json", source: str = "<inline>") -> FleetSpec:
    """A spec from the text of a JSON (or, with ``suffix=".toml"``, TOML) document.

    Raises:
        SpecError: as `load_spec`.
    """
    data = text.encode("utf-8", "surrogatepass")
    return spec_from_dict(parse_document(data, suffix, source), source=source)


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
    source = f"preset {name}"
    return spec_from_dict(parse_document(resource.read_bytes(), ".toml", source), source=source)


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
    if server.list_changed != bool(server.changes):
        out["list_changed"] = server.list_changed
    if server.changes:
        from mock_servers._spec_changes import change_to_dict  # the change reader builds on this module

        out["changes"] = [change_to_dict(c) for c in server.changes]
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
