"""Bounds on what a hostile peer can make the reference write or keep.

Error texts quote the values they refuse, and a caller decides how large those are: twenty
thousand server ids, a tool name of ten megabytes. Every quote goes through :func:`shown`
or :func:`listed`, which keep the start and say how much was cut ("… 19,990 more"), so an
error stays a sentence a person can read. :func:`unencodable` finds strings that JSON
text in UTF-8 cannot carry (lone surrogates), before they reach a transport that would
fail on them mid-write.
"""

from __future__ import annotations

import itertools
import reprlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_QUOTE", "clip", "deeper_than", "listed", "shown", "unencodable"]

#: Characters of one quoted value.
MAX_QUOTE: Final = 80
#: Items of a quoted list.
MAX_ITEMS: Final = 10
#: Levels of nesting of a JSON value the reference passes on (the MCP SDK's JSON parser
#: refuses about 200, its serializer about 255, each in a way that can lose a connection).
MAX_DEPTH: Final = 128

# reprlib bounds the work as well as the text: a huge value is never rendered whole.
_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = MAX_QUOTE + 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = MAX_ITEMS


def clip(text: str, limit: int = MAX_QUOTE) -> str:
    """``text`` cut to ``limit`` characters, followed by "… N more characters" when cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… {len(text) - limit:,} more characters"


def shown(value: Any, limit: int = MAX_QUOTE) -> str:
    """``repr(value)``, bounded: strings by characters, containers by items and depth."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else f"{value[:limit]!r}… {len(value) - limit:,} more characters"
    if isinstance(value, list | tuple) and len(value) > MAX_ITEMS:
        return f"[{listed(value)}]"
    if isinstance(value, Mapping) and len(value) > MAX_ITEMS:
        pairs = (f"{shown(key)}: {_REPR.repr(item)}" for key, item in value.items())
        return f"{{{_joined(pairs, len(value))}}}"
    return clip(_REPR.repr(value), limit)


def listed(items: Iterable[Any], limit: int = MAX_ITEMS) -> str:
    """The items quoted and separated by commas, the first ``limit`` of them, then "… N more"."""
    seen = list(items)
    return _joined((shown(item) for item in seen[:limit]), len(seen), limit)


def _joined(quoted: Iterable[str], total: int, limit: int = MAX_ITEMS) -> str:
    text = ", ".join(itertools.islice(quoted, limit))
    return f"{text}, … {total - limit:,} more" if total > limit else text


def unencodable(value: Any, path: str = "$") -> str | None:
    """The JSON path of the first string in ``value`` (keys included) that UTF-8 cannot encode.

    Such a string holds a lone surrogate: JSON can carry one escaped (``"\\ud800"``), but
    no UTF-8 text can, and a transport that writes UTF-8 fails on it.
    """
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not _encodes(item):
                return where
        elif isinstance(item, Mapping):
            for key, child in reversed(list(item.items())):
                if isinstance(key, str) and not _encodes(key):
                    return f"{where} (a key)"
                stack.append((child, f"{where}.{clip(str(key), 40)}"))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def deeper_than(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON value nests more than ``limit`` arrays and objects (a scalar is level 0)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list | tuple) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
