"""Reading a fleet spec: from plain data, JSON or TOML text, a file or a shipped preset.

A spec file is a mapping with a ``seed`` and a list of ``servers``; every key is
snake_case except inside explicit tool definitions, whose ``annotations`` are kept in
wire form (``readOnlyHint``…) so that a raw server can send them exactly as written.
Every problem is collected before one `SpecError` is raised, naming the file, the field
path and what was expected. Explicit tools are read by `mock_servers._spec_tools`, a live
catalog's ``changes`` by `mock_servers._spec_changes`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from mock_servers._documents import parse_document
from mock_servers._errors import SpecError
from mock_servers._fields import FieldReader
from mock_servers._generate import generate_tools
from mock_servers._limits import LIMITS
from mock_servers._spec import (
    BAD_NAME_KINDS,
    CALL_FAULTS,
    FAULT_COUNTS,
    FAULT_FIELDS,
    SERVER_ID,
    AnnotationMix,
    CatalogChange,
    Faults,
    FleetSpec,
    SchemaShapes,
    ServerSpec,
    ToolSpec,
    derive_seed,
)
from mock_servers._spec_changes import changes_from, check_change_targets
from mock_servers._spec_tools import tool_from_dict
from mock_servers._vocabulary import DOMAINS

__all__ = ["load_spec", "preset", "preset_names", "resolve_spec", "spec_from_dict", "spec_from_text"]

#: Ids a URL cannot carry as a path segment: clients resolve them away.
_DOT_SEGMENTS = (".", "..")


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
    "legacy_only",
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
        tools = tuple(tool_from_dict(r, t, f"{path}.tools[{i}]", raw_mode) for i, t in enumerate(raw_tools))
        budget.take(r, path, 0, sum(len(t.description) for t in tools))
        if "changes" in d:
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
        legacy_only=r.boolean(d, "legacy_only", path, False),
    )
    if r.total == before:
        _check_fault_targets(r, server, path)
    if r.total == before and changes:
        _check_change_targets(r, server, path)
    return server


def _check_change_targets(r: FieldReader, server: ServerSpec, path: str) -> None:
    """Edits of a schedule must name tools the server lists when they fire, or they would fail then."""
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
    named = {k: [n for n in getattr(server.faults, k) if n != "*"] for k in CALL_FAULTS}
    if not any(named.values()):
        return
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
    d = r.mapping(raw, path, FAULT_FIELDS)
    counts = {k: r.integer(d, k, path, 0, 0, LIMITS.fault_count) for k in FAULT_COUNTS}
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
        slow_calls=r.number(d, "slow_calls", path, 0.0, LIMITS.slow_seconds),
        slow_last_page=r.number(d, "slow_last_page", path, 0.0, LIMITS.slow_seconds),
        tool_call_error=r.strings(d, "tool_call_error", path),
        error_on_call=r.strings(d, "error_on_call", path),
        drop_mid_call=r.strings(d, "drop_mid_call", path),
        bad_names=tuple(k for k in bad_names if k in BAD_NAME_KINDS),
        huge_description_chars=r.integer(d, "huge_description_chars", path, default_chars, 1, LIMITS.description_chars),
        **counts,
    )


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
