"""Checking plain data field by field: `FieldReader` collects every problem with its path.

Also the checks a spec's free-form parts need (input schemas and annotations must be plain
JSON that can be sent as UTF-8) and a repr of bad values that never fails and stays short.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from mock_servers._errors import SpecError, SpecProblem
from mock_servers._limits import LIMITS

__all__ = ["MAX_PROBLEMS", "FieldReader", "RawTable", "json_value_problem", "short_repr", "text_problem"]

#: How many problems a `SpecError` lists (it counts them all).
MAX_PROBLEMS = 100
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")
#: A table of input (a spec file's, a change a test asks for) read before it is validated:
#: its keys are checked against the known ones, its values one by one as they are read.
RawTable: TypeAlias = Mapping[str, Any]


class FieldReader:
    """Validates a plain mapping field by field, collecting every problem with its path.

    Each check records what is wrong and returns the field's default instead, so reading
    goes on and one `SpecError` reports every problem of a document.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[SpecProblem] = []
        self.total = 0

    def fail(self, path: str, expected: str, value: Any) -> None:
        self.total += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(SpecProblem(self.source, path, expected, short_repr(value)))

    def mapping(self, value: Any, path: str, allowed: Sequence[str]) -> RawTable:
        if not isinstance(value, Mapping):
            self.fail(path, "a table (mapping)", value)
            return {}
        for key in value:
            if key not in allowed:
                where = _join(path, str(key))
                self.fail(where, f"one of the known keys ({', '.join(allowed)})", key)
        return value

    def integer(self, raw: RawTable, key: str, path: str, default: int, low: int, high: int) -> int:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(_join(path, key), "an integer", value)
        elif not low <= value <= high:
            self.fail(_join(path, key), f"an integer between {low:,} and {high:,}", value)
        else:
            return value
        return default

    def number(self, raw: RawTable, key: str, path: str, default: float, high: float = 1.0) -> float:
        value = raw.get(key, default)
        try:
            number = float(value) if not isinstance(value, bool) and isinstance(value, int | float) else math.nan
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            self.fail(_join(path, key), "a number", value)
        elif not 0.0 <= number <= high:
            self.fail(_join(path, key), f"a number between 0 and {high:g}", value)
        else:
            return number
        return default

    def boolean(self, raw: RawTable, key: str, path: str, default: bool) -> bool:
        value = raw.get(key, default)
        if isinstance(value, bool):
            return value
        self.fail(_join(path, key), "true or false", value)
        return default

    def string(self, value: Any, path: str, default: str = "") -> str:
        if not isinstance(value, str):
            self.fail(path, "a string", value)
            return default
        problem = text_problem(value)
        if problem:
            self.fail(path, "UTF-8 text", problem)
            return default
        return value

    def strings(self, raw: RawTable, key: str, path: str) -> tuple[str, ...]:
        value = raw.get(key, [])
        if not isinstance(value, list | tuple):
            self.fail(_join(path, key), "a list of strings", value)
            return ()
        return tuple(self.string(item, f"{path}.{key}[{i}]") for i, item in enumerate(value))

    def page(self, raw: RawTable, key: str, path: str) -> int | None:
        """A list-fault trigger: ``true`` (first page), a page index, or ``false``/absent."""
        value = raw.get(key)
        if value is True:
            return 0
        if value is False or value is None:
            return None
        return self.integer(raw, key, path, 0, 0, LIMITS.fleet_tools)

    def error(self) -> SpecError:
        """The error reporting every problem recorded (call only when there is one)."""
        return SpecError.of(self.problems, self.total)

    def json_value(self, value: Any, path: str) -> bool:
        problem = json_value_problem(value)
        if problem is not None:
            where, expected, got = problem
            self.fail(f"{path}{where}", expected, got)
        return problem is None


def _join(path: str, key: str) -> str:
    key = key_text(key)
    return f"{path}.{key}" if path else key


def key_text(key: object) -> str:
    """A key as it appears in a field path: plain, or quoted when it holds anything else."""
    text = str(key)
    return text if _PLAIN_KEY.fullmatch(text) else json.dumps(text)


def text_problem(value: str) -> str | None:
    """What keeps ``value`` from being sent as UTF-8 text, if anything (a lone surrogate)."""
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate at index {exc.start}"
    return None


def json_value_problem(value: Any) -> tuple[str, str, Any] | None:
    """The first part of ``value`` that is not plain JSON: ``(path, expected, got)``, or None.

    JSON here means dicts with string keys, lists, strings (valid UTF-8), booleans, None,
    integers and finite floats, nested at most `LIMITS.nesting` deep. TOML dates and times,
    NaN and infinities are what a spec file most often smuggles in.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, level = stack.pop()
        if isinstance(item, Mapping):
            if level > LIMITS.nesting:
                return path, f"JSON nested at most {LIMITS.nesting} deep", "deeper nesting"
            for key, child in reversed(list(item.items())):
                if not isinstance(key, str) or text_problem(key):
                    return path, "string keys (UTF-8 text)", key
                stack.append((child, f"{path}.{key_text(key)}", level + 1))
        elif isinstance(item, list | tuple):
            if level > LIMITS.nesting:
                return path, f"JSON nested at most {LIMITS.nesting} deep", "deeper nesting"
            stack.extend((child, f"{path}[{i}]", level + 1) for i, child in reversed(list(enumerate(item))))
        elif isinstance(item, datetime.date | datetime.time):
            return path, "a JSON value (TOML dates and times are not JSON: quote them)", item
        elif isinstance(item, float) and not math.isfinite(item):
            return path, "a finite number (NaN and infinities are not JSON)", item
        elif isinstance(item, str) and text_problem(item):
            return path, "UTF-8 text", text_problem(item)
        elif not (item is None or isinstance(item, str | int | float)):
            return path, "a JSON value", item
    return None


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 70
_REPR.maxother = 70
_REPR.maxlong = 60


def short_repr(value: Any) -> str:
    """A repr of at most 80 characters that never fails (huge integers, deep nesting)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**60:
        text = f"an integer of {len(str(abs(value))) if value.bit_length() < 14_000 else 'over 4,300'} digits"
        return text
    try:
        text = _REPR.repr(value)
    except (ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."
