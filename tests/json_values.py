"""JSON values for Hypothesis: any value, and values near a valid one, for checks that two
validators agree.

A value drawn at random almost never passes a schema, so agreement on random values says
little about the values that matter: those one edit away from valid, where a validator
that is too lenient accepts what the schema refuses.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

__all__ = ["JSON", "TEXT", "near"]

#: Text of any code point, lone surrogates included: JSON's \ud800 escape reaches a parser as one.
TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=30)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
#: Any JSON value.
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
# Values at the edges the protocol's schemas draw: bounds, integers written as floats, huge
# integers, the enums' words, URLs with and without a scheme they allow.
_NUMBERS: list[object] = [0, -1, 1.0, 0.5, -0.0, 86400, 86401, 2**63, 10**40, 1e-320]
_WORDS: list[object] = ["", "x", "1", "2.0", "stdio", "http", "http://h/mcp", "ftp://h", "invalid_params"]
_EDGES = st.sampled_from(_NUMBERS + _WORDS)
_REPLACEMENTS = JSON | _EDGES


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


@st.composite
def near(draw: st.DrawFn, valid: Any) -> Any:
    """``valid`` with a few edits: a node replaced, a key removed, a key or an item added."""
    value = copy.deepcopy(valid)
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(_paths(value)))
        edit = draw(st.sampled_from(["replace", "remove", "add"]))
        if not path:
            if edit == "replace":
                value = draw(_REPLACEMENTS)
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if edit == "replace":
            parent[last] = draw(_REPLACEMENTS)
        elif edit == "remove":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][draw(TEXT | st.sampled_from(sorted(map(str, parent[last])) or ["x"]))] = draw(_REPLACEMENTS)
        elif isinstance(parent[last], list):
            parent[last].append(draw(_REPLACEMENTS | st.sampled_from(parent[last] or [None])))
    return value
