"""Spec documents as bytes and plain data: decoding, parsing and the limits of JSON values.

Whatever a file holds, reading it either gives plain data (dicts, lists, strings, numbers)
or raises `SpecError` naming the file and what was expected: the size, the encoding (UTF-8;
a UTF-16 file is recognised and named), the syntax, the nesting depth, and integers too
long for Python to convert are all checked here, so no parser error escapes as a traceback.
"""

from __future__ import annotations

import codecs
import json
import tomllib
from collections.abc import Iterator, Mapping
from typing import Any

from mock_servers._errors import SpecError
from mock_servers._limits import LIMITS

__all__ = ["parse_document"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def parse_document(data: bytes, suffix: str, source: str) -> Any:
    """The plain data of a ``.json`` or ``.toml`` document.

    Raises:
        SpecError: too large, not UTF-8, not valid JSON/TOML, or nested too deep.
    """
    if len(data) > LIMITS.spec_bytes:
        raise SpecError(source, "", f"a spec of at most {LIMITS.spec_bytes:,} bytes", f"{len(data):,} bytes")
    if suffix not in (".json", ".toml"):
        raise SpecError(source, "", "a file ending in .json or .toml", repr(suffix or "no suffix"))
    text = _decode(data, source)
    try:
        value = json.loads(text, parse_constant=_refuse_constant) if suffix == ".json" else tomllib.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(source, f"line {exc.lineno} column {exc.colno}", "valid JSON", exc.msg) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "", "valid TOML", str(exc)) from None
    except RecursionError:
        raise SpecError(source, "", f"a document nested at most {LIMITS.nesting} deep", "deeper nesting") from None
    except _NonFinite as exc:
        raise SpecError(source, "", "valid JSON (NaN and Infinity are not JSON)", exc.args[0]) from None
    except ValueError as exc:  # an integer literal of more than 4,300 digits
        raise SpecError(source, "", "numbers Python can read", str(exc).split(";")[0]) from None
    depth = _depth(value)
    if depth > LIMITS.nesting:
        raise SpecError(source, "", f"a document nested at most {LIMITS.nesting} deep", f"{depth} levels")
    return value


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _decode(data: bytes, source: str) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            raise SpecError(source, "", "UTF-8 text", f"{encoding} text (save the file as UTF-8)")
    if len(data) >= 2 and (data[0] == 0) != (data[1] == 0):
        raise SpecError(source, "", "UTF-8 text", "UTF-16 text without a byte order mark (save the file as UTF-8)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(source, f"line {line}", "UTF-8 text", f"byte {data[exc.start]:#04x}") from None


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        yield from value.values()
    elif isinstance(value, list | tuple):
        yield from value


def _depth(value: Any) -> int:
    """How deeply lists and tables nest in ``value`` (a scalar is 0); without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            deepest = max(deepest, level)
            if level <= LIMITS.nesting:
                stack.extend((child, level + 1) for child in _children(item))
    return deepest
