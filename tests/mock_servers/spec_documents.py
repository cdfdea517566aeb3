"""Hypothesis strategies for fleet spec documents a careless or hostile user might write.

Documents are mostly plausible (the known keys, in the right places) with wrong types,
boundary and huge numbers, NaN, dates, deep nesting and odd text mixed in, serialised as
JSON or TOML text, and sometimes mangled as bytes (non-UTF-8, UTF-16, cut short).
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any

from hypothesis import strategies as st

from mock_servers import LIMITS, spec_to_dict
from mock_servers._spec import BAD_NAME_KINDS, FAULT_FIELDS, AnnotationMix, SchemaShapes
from mock_servers._vocabulary import DOMAINS
from mock_servers.strategies import fleet_specs

SERVER_KEYS = (
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
CHANGE_KEYS = ("after_calls", "after_seconds", "remove", "rename", "update", "add", "notify", "list_error")
TOOL_KEYS = ("name", "description", "input_schema", "annotations", "title")
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "title")

numbers = st.one_of(
    st.integers(-3, 12),
    st.sampled_from(
        [
            LIMITS.tools_per_server,
            LIMITS.tools_per_server + 1,
            LIMITS.fault_count + 1,
            LIMITS.seed,
            LIMITS.seed + 1,
            10**80,
            -(10**30),
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 1.0, 0.0, 1e308, -0.0]),
)
texts = st.one_of(
    st.sampled_from(["a", "github", ".", "..", "*", "a b", "list_issues", "x" * 70, "", "é", "a__b"]),
    st.just("\ud800"),
    st.sampled_from(sorted(DOMAINS)),
    st.sampled_from(BAD_NAME_KINDS),
    st.text(max_size=12),
)
dates = st.one_of(st.dates(), st.times(), st.datetimes())
scalars = st.one_of(st.none(), st.booleans(), numbers, texts, dates)


def nested(depth: int) -> Any:
    value: Any = "deep"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


anything = st.recursive(
    scalars | st.integers(1, 200).map(nested),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


def tables(keys: tuple[str, ...], value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), value, max_size=len(keys))


faults = tables(FAULT_FIELDS, scalars | st.lists(texts, max_size=3) | st.lists(st.sampled_from(BAD_NAME_KINDS)))
schema_values = st.one_of(
    st.just({"type": "object"}),
    st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(st.text(max_size=5), anything)}),
    anything,
)
tools = tables(TOOL_KEYS, scalars | schema_values | tables(HINTS, scalars))
changes = tables(
    CHANGE_KEYS,
    scalars | st.lists(texts, max_size=3) | st.lists(tools, max_size=2) | st.lists(tables(("from", "to"), texts)),
)
servers = tables(
    SERVER_KEYS,
    st.one_of(
        scalars,
        tables(tuple(AnnotationMix.__dataclass_fields__), scalars),
        tables(tuple(SchemaShapes.__dataclass_fields__), scalars),
        faults,
        st.lists(tools, max_size=3),
        st.lists(changes, max_size=3),
    ),
)
valid_documents = st.one_of(
    fleet_specs(max_servers=3, max_tools=12, explicit_tools=True, faults=True).map(spec_to_dict),
    fleet_specs(max_servers=2, max_tools=8, explicit_tools=True, faults=True, raw=True).map(spec_to_dict),
    fleet_specs(max_servers=2, max_tools=8, explicit_tools=True, live=True).map(spec_to_dict),
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """A valid document with one value, anywhere in it, replaced or removed."""
    document = draw(valid_documents)
    places: list[tuple[Any, Any]] = []
    stack: list[Any] = [document]
    while stack:
        item = stack.pop()
        keys = list(item) if isinstance(item, dict) else range(len(item)) if isinstance(item, list) else []
        for key in keys:
            places.append((item, key))
            stack.append(item[key])
    container, key = draw(st.sampled_from(places))
    if isinstance(container, dict) and draw(st.booleans()):
        del container[key]
    else:
        container[key] = draw(scalars | anything)
    return document


documents = st.one_of(
    valid_documents,
    mutated(),
    st.fixed_dictionaries({"servers": st.lists(servers, max_size=4)}, optional={"seed": scalars}),
    anything,
)


def to_toml(document: Any) -> str:
    """TOML text for a document (top level as ``key = inline value`` lines); None has no TOML form, so it is left out."""
    if not isinstance(document, dict):
        return f"value = {_toml_value(document)}\n"
    return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in document.items() if v is not None)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        items = (f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items() if v is not None)
        return "{ " + ", ".join(items) + " }"
    return '"?"'


def to_json(document: Any) -> str:
    return json.dumps(document, default=str)  # NaN and Infinity come out as the bare words JSON lacks


@st.composite
def spec_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """(suffix, bytes) of a spec file."""
    document = draw(documents)
    suffix = draw(st.sampled_from([".json", ".toml"]))
    text = to_json(document) if suffix == ".json" else to_toml(document)
    data = text.encode("utf-8", "surrogatepass")
    mangle = draw(st.sampled_from(["none"] * 6 + ["bytes", "utf-16", "cut"]))
    if mangle == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    elif mangle == "utf-16":
        data = text.encode("utf-16", "surrogatepass")
    elif mangle == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    return suffix, data
