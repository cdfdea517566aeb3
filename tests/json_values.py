"""JSON values near a valid one: Hypothesis strategies for checks that two validators agree.

A value drawn at random almost never passes a schema, so agreement on random values says
little about the values that matter: those one edit away from valid, where a validator
that is too lenient accepts what the schema refuses.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

__all__ = ["JSON", "near"]

# Lone surrogates included: JSON's \ud800 escape reaches a parser as one.
TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([0, -1, 1.0, 0.5, -0.0, 86400, 86401, 2**63, 10**40, 1e-320])
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
    | st.sampled_from(["", "x", "stdio", "http", "http://h/mcp", "ftp://h", "invalid_params", "2.0", "1"])
)
JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6
)


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
                value = draw(JSON)
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if edit == "replace":
            parent[last] = draw(JSON)
        elif edit == "remove":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][draw(TEXT | st.sampled_from(sorted(map(str, parent[last])) or ["x"]))] = draw(JSON)
        elif isinstance(parent[last], list):
            parent[last].append(draw(JSON | st.sampled_from(parent[last] or [None])))
    return value
