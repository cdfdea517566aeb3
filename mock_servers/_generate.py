"""Deterministic generation of a server's tool catalog from its spec.

Only `random.Random` seeded with an integer, ordered vocabularies and plain string
operations are used, so the same spec gives the same catalog, byte for byte, on every
machine and on every Python version the project supports.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from mock_servers._spec import AnnotationMix, Faults, SchemaShapes, ServerSpec, ToolSpec
from mock_servers._vocabulary import DOMAINS, VERBS, Action, Domain, Entity, Param, with_article
from mock_servers._wire import JsonSchema, ListedTool, ToolAnnotations

__all__ = [
    "MCP_TOOL_NAME",
    "PROVIDER_TOOL_NAME",
    "Catalog",
    "build_catalog",
    "example_arguments",
    "generate_tools",
    "is_read_name",
]

#: MCP's tool-name rule (SEP-986).
MCP_TOOL_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
#: The stricter rule of model providers' function-calling APIs.
PROVIDER_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_READ_WORDS = (
    "list",
    "get",
    "find",
    "check",
    "search",
    "read",
    "find",
    "view",
    "download",
    "describe",
    "export",
    "count",
    "query",
    "preview",
    "explain",
    "snapshot",
    "take",
)
_OPEN_WORLD_DOMAINS = ("browser", "cloud", "chat")
# Verb parameters a call cannot do without (the others are optional).
_ESSENTIAL_EXTRAS = ("assignee", "text", "email", "target", "new_name", "at", "content")
_LIMIT = Param("limit", "integer", "Maximum number of results to return")
_SINCE = Param("since", "date", "Only items updated after this time (ISO 8601)")
_QUERY = Param("query", "string", "Search terms")


@dataclass(frozen=True, slots=True)
class _Candidate:
    name: str
    read: bool
    verb: str = ""
    entity: Entity | None = None
    action: Action | None = None


@dataclass(slots=True)
class Catalog:
    """A server's tools in wire form, and which of them carry a fault (by index)."""

    tools: list[ListedTool]
    faulty: dict[int, list[str]] = field(default_factory=dict)


def generate_tools(server: ServerSpec) -> list[ListedTool]:
    """The tool definitions a server serves, in wire form and listing order.

    Each has ``name``, ``description``, ``inputSchema`` and, where set, ``annotations``
    and ``title`` (camelCase, as on the wire; `ListedTool` says which faults break that). Explicit tools come first,
    then ``tool_count`` generated ones, then the faults of the spec are applied.
    """
    return build_catalog(server).tools


def build_catalog(server: ServerSpec) -> Catalog:
    """Like `generate_tools`, also telling which tools carry which fault."""
    explicit = [_explicit_to_wire(t) for t in server.tools]
    taken = tuple(t.name for t in server.tools)
    # Large servers are built afresh each time: kept, a few hundred of them would hold gigabytes.
    make = _generated if server.tool_count <= _CACHED_TOOL_COUNT else _generated.__wrapped__
    generated = json.loads(
        make(server.seed, server.domain, server.tool_count, server.annotations, server.schema, taken)
    )
    catalog = Catalog(tools=explicit + generated)
    _apply_faults(random.Random(server.seed * 7919 + 17), catalog, server.faults)
    return catalog


#: The most generated tools of a server whose catalog is kept for the next caller.
_CACHED_TOOL_COUNT = 500


@functools.lru_cache(maxsize=256)
def _generated(
    seed: int, domain_name: str, count: int, mix: AnnotationMix, shapes: SchemaShapes, taken: tuple[str, ...]
) -> str:
    """The generated tools of a server, as JSON: the same spec is served, listed and checked
    against many times over (the suite asks for the tools of each server of each example a
    few times), and each caller gets a copy of its own to change."""
    rng = random.Random(seed)
    domain = DOMAINS[domain_name]
    chosen = _choose(rng, _candidates(domain_name), count, mix, list(taken))
    generated = [_build_tool(rng, c, domain, shapes) for c in chosen]
    _annotate(rng, generated, [c.read for c in chosen], mix, domain)
    return json.dumps(generated)


def is_read_name(name: str) -> bool:
    """Whether a tool name reads like a read-only operation (its verb is list, get, search…)."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    if words and words[0] == "browser":
        words = words[1:]
    return bool(words) and words[0] in _READ_WORDS


# ---------------------------------------------------------------------------------------------
# Names


def _snake(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


@functools.cache
def _candidates(domain_name: str) -> tuple[_Candidate, ...]:
    domain = DOMAINS[domain_name]
    out: list[_Candidate] = []
    seen: list[str] = []
    for entity in domain.entities:
        for verb_key in entity.verbs:
            verb = VERBS[verb_key]
            word = "get" if verb_key == "get_all" else verb_key
            noun = entity.many if verb.plural else entity.one
            name = f"{domain.prefix}{word}_{_snake(noun)}"
            if name not in seen:
                seen.append(name)
                out.append(_Candidate(name, verb.read, verb=verb_key, entity=entity))
    for action in domain.actions:
        if action.name not in seen:
            seen.append(action.name)
            out.append(_Candidate(action.name, action.read, action=action))
    return tuple(out)


def _choose(
    rng: random.Random, pool: Sequence[_Candidate], count: int, mix: AnnotationMix, taken: list[str]
) -> list[_Candidate]:
    pool = [c for c in pool if c.name not in taken]
    reads = [c for c in pool if c.read]
    writes = [c for c in pool if not c.read]
    rng.shuffle(reads)
    rng.shuffle(writes)
    weight = mix.read_only + mix.writable
    share = mix.read_only / weight if weight else 0.5
    want_reads = min(len(reads), int(min(count, len(pool)) * share + 0.5))
    picked = reads[:want_reads] + writes[: max(0, min(count, len(pool)) - want_reads)]
    if len(picked) < min(count, len(pool)):
        picked += reads[want_reads : want_reads + min(count, len(pool)) - len(picked)]
    # Listing order follows the vocabulary, so related tools sit together as on a real server.
    order = {c.name: i for i, c in enumerate(pool)}
    picked.sort(key=lambda c: order[c.name])
    variant = 2
    base = list(picked) or pool
    names = [c.name for c in picked] + list(taken)
    while len(picked) < count and base:
        for c in base:
            if len(picked) >= count:
                break
            name = f"{c.name}_{variant}"
            if name not in names:
                names.append(name)
                picked.append(_Candidate(name, c.read, c.verb, c.entity, c.action))
        variant += 1
    return picked


# ---------------------------------------------------------------------------------------------
# Descriptions and schemas


def _build_tool(rng: random.Random, c: _Candidate, domain: Domain, shapes: SchemaShapes) -> ListedTool:
    if c.action is not None:
        description = c.action.description
        params = [(p, p.name in c.action.required) for p in c.action.params]
    else:
        assert c.entity is not None
        description, params = _entity_tool(rng, c, domain)
    variant = re.search(r"_(\d+)$", c.name)
    if variant and (c.action is None or c.action.name != c.name):
        description += f" This is variant {variant.group(1)}, kept for clients of an older {domain.container} API."
    return {"name": c.name, "description": description, "inputSchema": _schema(rng, params, shapes)}


def _entity_tool(rng: random.Random, c: _Candidate, domain: Domain) -> tuple[str, list[tuple[Param, bool]]]:
    entity = c.entity
    assert entity is not None
    verb = VERBS[c.verb]
    attrs = [f.name.replace("_", " ") for f in entity.fields[:3]]
    attr_words = ", ".join(attrs[:-1]) + f" and {attrs[-1]}" if len(attrs) > 1 else (attrs[0] if attrs else "fields")
    template = verb.templates[rng.randrange(len(verb.templates))]
    parent = entity.parent or "item"
    description = template.format(
        one=entity.one,
        many=entity.many,
        container=domain.container,
        attrs=attr_words,
        parent=parent,
        a_one=with_article(entity.one),
        a_parent=with_article(parent),
        a_container=with_article(domain.container),
    )
    filters = [f for f in entity.fields if f.kind == "enum"]
    if verb.plural and filters:
        description += f" Filter by {filters[0].name.replace('_', ' ')}."
    elif not verb.read and verb.destructive and "cannot be undone" not in description:
        description += " Use with care."
    description = f"{description} ({domain.label})" if rng.random() < 0.15 else description

    params: list[tuple[Param, bool]] = [(p, True) for p in domain.context]
    if entity.parent:
        params.append((Param(f"{_snake(entity.parent)}_id", "string", f"ID of the {entity.parent}"), True))
    own_id = Param(f"{_snake(entity.one)}_id", "string", f"ID of the {entity.one}")
    if c.verb == "search":
        params.append((_QUERY, True))
        params += [(f, False) for f in filters[:1]]
        params.append((_LIMIT, False))
    elif verb.plural:
        params += [(f, False) for f in filters]
        params.append((_LIMIT, False))
        if rng.random() < 0.5:
            params.append((_SINCE, False))
    elif c.verb in ("create", "add", "upload", "send"):
        params += [(f, i == 0) for i, f in enumerate(entity.fields)]
    elif c.verb == "update":
        params.append((own_id, True))
        params += [(f, False) for f in entity.fields]
    else:
        params.append((own_id, True))
    params += [(p, p.name in _ESSENTIAL_EXTRAS) for p in verb.extra if p.name not in [q.name for q, _ in params]]
    return description, params


def _property(p: Param) -> dict[str, Any]:
    if p.kind == "integer":
        prop: dict[str, Any] = {"type": "integer", "description": p.doc}
        if p.name == "limit":
            prop.update(minimum=1, maximum=100)
        return prop
    if p.kind == "boolean":
        return {"type": "boolean", "description": p.doc}
    if p.kind == "date":
        return {"type": "string", "format": "date-time", "description": p.doc}
    if p.kind == "enum":
        return {"type": "string", "enum": list(p.values), "description": p.doc}
    if p.kind == "strings":
        return {"type": "array", "items": {"type": "string"}, "description": p.doc}
    return {"type": "string", "description": p.doc}


def _schema(rng: random.Random, params: list[tuple[Param, bool]], shapes: SchemaShapes) -> JsonSchema:
    kept: list[tuple[Param, bool]] = []
    for p, essential in params:
        if p.kind == "enum" and not essential and rng.random() >= shapes.enums:
            p = Param(p.name, "string", f"{p.doc}, for example {p.values[0]}")
        if p.kind == "strings" and not essential and rng.random() >= shapes.arrays:
            continue
        kept.append((p, essential))
    essentials: list[tuple[Param, bool]] = [(p, e) for p, e in kept if e]
    optional: list[tuple[Param, bool]] = [(p, e) for p, e in kept if not e]
    kept = essentials + optional[: max(0, shapes.max_properties - len(essentials))]
    required = [p.name for p, e in kept if e or rng.random() < shapes.required * 0.5]
    properties = {p.name: _property(p) for p, _ in kept}
    loose = [p for p, _ in kept if p.name not in required]
    if len(loose) >= 2 and rng.random() < shapes.nested:
        nested = {p.name: properties.pop(p.name) for p in loose}
        properties["options"] = {"type": "object", "description": "Optional settings", "properties": nested}
    schema: JsonSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


# ---------------------------------------------------------------------------------------------
# Annotations


def _annotate(
    rng: random.Random, tools: list[ListedTool], reads: list[bool], mix: AnnotationMix, domain: Domain
) -> None:
    n = len(tools)
    n_none = min(n, int(mix.none * n + 0.5))
    n_read_only = min(n - n_none, int(mix.read_only * n + 0.5))
    order = list(range(n))
    rng.shuffle(order)
    if mix.follow_names:
        # Names and marks agree: only read-named tools are marked read-only and only
        # write-named ones writable; the tools left over carry no annotations.
        read_named = [i for i in order if reads[i]]
        write_named = [i for i in order if not reads[i]]
        n_writable = min(len(write_named), n - n_none - n_read_only)
        read_only = set(read_named[:n_read_only])
        bare = set(range(n)) - read_only - set(write_named[:n_writable])
    else:
        bare = set(order[:n_none])
        read_only = set(order[n_none : n_none + n_read_only])
    open_world = domain.key in _OPEN_WORLD_DOMAINS
    for i, tool in enumerate(tools):
        title = _title(tool["name"])
        if rng.random() < mix.titles:
            tool["title"] = title
        if i in bare:
            continue
        is_read_only = i in read_only
        annotations: ToolAnnotations = {"readOnlyHint": is_read_only}
        if mix.extra_hints:
            verb = VERBS.get(tool["name"].removeprefix(domain.prefix).split("_")[0])
            if not is_read_only:
                annotations["destructiveHint"] = bool(verb and verb.destructive)
                annotations["idempotentHint"] = bool(verb and verb.idempotent)
            annotations["openWorldHint"] = open_world
            annotations["title"] = title
        tool["annotations"] = annotations


def _title(name: str) -> str:
    return " ".join(w.capitalize() for w in name.split("_") if w)


# ---------------------------------------------------------------------------------------------
# Explicit tools and faults


def _explicit_to_wire(tool: ToolSpec) -> ListedTool:
    # What a spec gives as wire form, input schema or annotations is JSON from outside,
    # served as written (a raw server's input schema may be any JSON value): the types are
    # what a listed tool holds, nothing checks them here.
    if tool.wire is not None:
        return cast(ListedTool, copy.deepcopy(dict(tool.wire)))
    schema = cast(JsonSchema, copy.deepcopy(tool.input_schema))
    out: ListedTool = {"name": tool.name, "description": tool.description, "inputSchema": schema}
    if tool.annotations is not None:
        out["annotations"] = cast(ToolAnnotations, copy.deepcopy(dict(tool.annotations)))
    if tool.title is not None:
        out["title"] = tool.title
    return out


def _bad_name(kind: str, name: str) -> str:
    if kind == "double_underscore":
        return name.replace("_", "__", 1) if "_" in name else f"{name}__x"
    if kind in ("dot", "space", "slash"):
        sep = {"dot": ".", "space": " ", "slash": "/"}[kind]
        return name.replace("_", sep, 1) if "_" in name else f"{name}{sep}x"
    if kind == "non_ascii":
        return name.replace("e", "é", 1) if "e" in name else f"{name}_é"
    if kind == "too_long":
        return (name + "_with_extended_options" * 8)[:140]
    return ""  # empty


def _apply_faults(rng: random.Random, catalog: Catalog, faults: Faults) -> None:
    tools = catalog.tools

    def targets(count: int, kind: str, prefer: list[int] | None = None) -> list[int]:
        if not tools or count <= 0:
            return []
        pool = prefer if prefer else list(range(len(tools)))
        picked = rng.sample(pool, min(count, len(pool)))
        for i in picked:
            catalog.faulty.setdefault(i, []).append(kind)
        return sorted(picked)

    for kind, i in zip(faults.bad_names, targets(len(faults.bad_names), "bad_names"), strict=False):
        tools[i]["name"] = _bad_name(kind, tools[i]["name"])
    for i in targets(faults.huge_descriptions, "huge_descriptions"):
        tools[i]["description"] = _huge(tools[i]["description"], faults.huge_description_chars)
    for i in targets(faults.schema_not_object, "schema_not_object"):
        tools[i]["inputSchema"] = {"type": "array", "items": {"type": "string"}}
    writes = [i for i, t in enumerate(tools) if t.get("annotations", {}).get("readOnlyHint") is not True]
    for i in targets(faults.read_only_hint_string, "read_only_hint_string", writes):
        tools[i].setdefault("annotations", {})["readOnlyHint"] = "true"
    writes = [i for i in writes if i not in catalog.faulty or "read_only_hint_string" not in catalog.faulty[i]]
    for i in targets(faults.read_only_hint_number, "read_only_hint_number", writes):
        tools[i].setdefault("annotations", {})["readOnlyHint"] = 1
    for i in targets(faults.missing_name, "missing_name"):
        del tools[i]["name"]
    originals = [i for i, t in enumerate(tools) if "name" in t and i not in catalog.faulty]
    for n, i in enumerate(targets(faults.duplicate_names, "duplicate_names", originals)):
        duplicate = copy.deepcopy(tools[i])
        duplicate["description"] = f"{duplicate['description']} (second definition {n + 1} under the same name)"
        tools.append(duplicate)
        catalog.faulty.setdefault(len(tools) - 1, []).append("duplicate_names")


def _huge(description: str, chars: int) -> str:
    filler = " This tool accepts every documented parameter and returns the full record."
    # One multiplication, not repeated appends: linear in ``chars``.
    repeats = max(0, -(-(chars - len(description)) // len(filler)))
    return (description + filler * repeats)[:chars]


# ---------------------------------------------------------------------------------------------
# Arguments


def example_arguments(tool: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a generated tool's input schema (its required properties only)."""
    schema = tool.get("inputSchema")
    value = _example(schema) if isinstance(schema, Mapping) else {}
    return value if isinstance(value, dict) else {}


def _example(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _example(props.get(name, {})) for name in schema.get("required", [])}
    if kind == "array":
        return [_example(schema.get("items", {"type": "string"}))]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if schema.get("format") == "date-time":
        return "2025-01-01T09:00:00Z"
    return "example"
