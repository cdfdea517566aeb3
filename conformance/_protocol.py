"""The driver protocol's JSON Schemas, as shipped in ``conformance/protocol/``.

``PROTOCOL.md`` states the protocol; the schemas state the shape of every request's
params, every result and the error object. They are read once from the installed package
and checked with :mod:`jsonschema` (draft 2020-12). Every problem carries the JSON path of
the offending value, relative to the value checked (``$.tools[3].inputSchema``).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, Literal, cast

import jsonschema_rs
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from conformance._errors import SpecError, UsageError

__all__ = [
    "DISCOVERY_TOOL",
    "command",
    "METHODS",
    "PROTOCOL_VERSION",
    "Direction",
    "Problem",
    "reply_problem",
    "requirements",
    "schema",
    "schema_names",
    "validate",
]

PROTOCOL_VERSION: Final = "1"
#: The protocol's methods, in the order of a session.
METHODS: Final = ("initialize", "run.open", "run.definitions", "run.call", "run.request", "run.close", "shutdown")
DISCOVERY_TOOL: Final = "search_mcp_tools"
_SUFFIX: Final = ".schema.json"
_PROG: Final = "mcp-conformance"
_REQUIREMENT: Final = re.compile(r"^\*\*(P[1-9][0-9]*)\.\*\* (.*)$")
# A problem message quotes the offending value; a huge one is cut.
_MESSAGE_LIMIT: Final = 300

#: ``params`` and ``result`` of each method; ``error`` is the error object of any method;
#: ``discovery`` the ``structuredContent`` of a successful ``search_mcp_tools`` call.
Direction = Literal["params", "result", "error", "discovery"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One way a value breaks its schema."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _directory() -> Any:
    return resources.files("conformance").joinpath("protocol")


@functools.cache
def schema_names() -> tuple[str, ...]:
    """The names of the shipped schemas (``run.open.params``, ``error``, …), sorted."""
    try:
        names = [entry.name for entry in _directory().iterdir() if entry.name.endswith(_SUFFIX)]
    except OSError as exc:
        raise SpecError(f"cannot list the protocol schemas shipped with the conformance package: {exc}") from exc
    return tuple(sorted(name.removesuffix(_SUFFIX) for name in names))


@functools.cache
def schema(name: str) -> Mapping[str, Any]:
    """One shipped schema by name, as a JSON value.

    Raises:
        UsageError: no schema has this name.
        SpecError: the file cannot be read or is not a valid schema.
    """
    if name not in schema_names():
        raise UsageError(f"no protocol schema named {name!r}; the schemas are {', '.join(schema_names())}")
    try:
        value = json.loads(_directory().joinpath(name + _SUFFIX).read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(value)
    except (OSError, ValueError) as exc:
        raise SpecError(
            f"the protocol schema {name}{_SUFFIX} shipped with the conformance package is broken: {exc}"
        ) from exc
    return cast(Mapping[str, Any], value)


@functools.cache
def requirements() -> Mapping[str, str]:
    """The numbered requirements of ``PROTOCOL.md`` (``P1`` …) and the first line of each.

    Raises:
        SpecError: the document cannot be read, or numbers a requirement twice.
    """
    try:
        text = resources.files("conformance").joinpath("PROTOCOL.md").read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read the PROTOCOL.md shipped with the conformance package: {exc}") from exc
    found: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        match = _REQUIREMENT.match(line)
        if match is None:
            continue
        if match[1] in found:
            raise SpecError(f"PROTOCOL.md line {lineno}: requirement {match[1]} is numbered twice")
        found[match[1]] = match[2]
    return found


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name))


@functools.cache
def _accepts(name: str) -> jsonschema_rs.Draft202012Validator:
    """The same schema compiled for a yes-or-no answer: every reply of a run is checked,
    and jsonschema's walk costs milliseconds for a list of a hundred definitions."""
    return jsonschema_rs.Draft202012Validator(dict(schema(name)))


def _accepted(name: str, value: object) -> bool:
    try:
        return bool(_accepts(name).is_valid(value))
    except ValueError:
        # A string the compiled twin cannot hold (a lone surrogate): jsonschema decides.
        return False


def _schema_name(method: str, direction: Direction) -> str:
    if direction == "error":
        return "error"
    if direction == "discovery":
        return "run.call.discovery"
    if method not in METHODS:
        raise UsageError(f"unknown protocol method {method!r}; the methods are {', '.join(METHODS)}")
    return f"{method}.{direction}"


def validate(value: object, method: str, direction: Direction) -> list[Problem]:
    """Every problem of ``value`` as the ``direction`` of ``method``, the most shallow first.

    Returns an empty list when the value is valid.

    Raises:
        UsageError: an unknown method.
    """
    name = _schema_name(method, direction)
    if _accepted(name, value):
        return []
    # Only a value already refused pays for jsonschema's walk, which words every problem.
    errors = _validator(name).iter_errors(value)
    found = sorted(errors, key=lambda error: (len(error.absolute_path), error.json_path, error.message))
    return [Problem(error.json_path, _clip(_message(error))) for error in found]


def _message(error: Any) -> str:
    # jsonschema's own words for a failed ``contains`` repeat the whole array and say
    # nothing of what was missing; the schema's description says it.
    described = error.schema.get("description") if isinstance(error.schema, Mapping) else None
    if error.validator == "contains" and isinstance(described, str):
        return f"no item matches: {described}"
    return str(error.message)


def reply_problem(method: str, params: Mapping[str, Any], reply: Mapping[str, Any]) -> str | None:
    """What is wrong with a driver's reply to ``method`` (a parsed JSON-RPC response), or None.

    The result is checked against the method's result schema, an error against the error
    schema, and the ``structuredContent`` of a successful ``search_mcp_tools`` call
    against the discovery schema. The message names the method, the schema and the path.
    """
    if "error" in reply:
        direction: Direction = "error"
        value = reply["error"]
    else:
        direction, value = "result", reply.get("result")
    problems = validate(value, method, direction)
    if not problems and _is_discovery_success(method, params, value):
        direction, value = "discovery", value.get("structuredContent")
        problems = [Problem("$.structuredContent" + p.path[1:], p.message) for p in validate(value, method, direction)]
    if not problems:
        return None
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    name = _schema_name(method, direction)
    return f"{method}: the {'error' if direction == 'error' else 'result'} breaks {name}{_SUFFIX} at {first}{more}"


def _is_discovery_success(method: str, params: Mapping[str, Any], result: Any) -> bool:
    return (
        method == "run.call"
        and params.get("name") == DISCOVERY_TOOL
        and isinstance(result, Mapping)
        and result.get("isError") is False
    )


def _clip(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _selected(name: str) -> dict[str, Mapping[str, Any]]:
    """The schemas ``--schema NAME`` prints: all, a method's params and result, or one by name."""
    if not name:
        return {n: schema(n) for n in schema_names()}
    if name in schema_names():
        return {name: schema(name)}
    found = {n: schema(n) for n in schema_names() if name in METHODS and n.startswith(name + ".")}
    if not found:
        raise UsageError(
            f"protocol --schema {name!r}: no such method or schema; methods: {', '.join(METHODS)}; "
            f"schemas: {', '.join(schema_names())}"
        )
    return found


def command(argv: Sequence[str]) -> int:
    """``mcp-conformance protocol``: where the protocol is written, and its schemas on demand."""
    import argparse

    parser = argparse.ArgumentParser(
        prog=f"{_PROG} protocol",
        description="Show the driver protocol: its document, and its JSON Schemas with --schema.",
    )
    parser.add_argument(
        "--schema",
        nargs="?",
        const="",
        metavar="METHOD",
        help="print the JSON Schemas as one JSON object by name: all of them, a method's params and result "
        "(run.open), or one schema (run.open.params, error)",
    )
    args = parser.parse_args(list(argv))
    if args.schema is not None:
        chosen = _selected(args.schema)
        value = next(iter(chosen.values())) if args.schema in chosen else chosen
        sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
        return 0
    document = resources.files("conformance").joinpath("PROTOCOL.md")
    lines = [
        f"driver protocol version {PROTOCOL_VERSION}",
        f"document: {document}",
        f"schemas ({_PROG} protocol --schema NAME):",
        *(f"  {name}" for name in schema_names()),
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
