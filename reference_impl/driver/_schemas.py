"""The driver protocol's params schemas, read as data from the ``conformance`` package.

The protocol's JSON Schemas ship in ``conformance/protocol/``. The reference checks its
input against those very files, so that the suite and the reference hold one contract;
it reads them as data files and imports no code from the suite.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

__all__ = ["METHODS", "ParamsProblem", "params_problem", "preload"]

_LIMIT = 200
#: The protocol's methods, each with a params schema.
METHODS = ("initialize", "run.open", "run.definitions", "run.call", "run.request", "run.close", "shutdown")


@dataclass(frozen=True, slots=True)
class ParamsProblem:
    """The first way a request's params break the method's schema."""

    path: str
    message: str


@functools.cache
def _schema(method: str) -> Any:
    text = (
        resources.files("conformance").joinpath("protocol").joinpath(f"{method}.params.schema.json").read_text("utf-8")
    )
    return json.loads(text)


@functools.cache
def _validator(method: str) -> Draft202012Validator:
    return Draft202012Validator(_schema(method))


@functools.cache
def _accepts(method: str) -> jsonschema_rs.Draft202012Validator:
    """The schema compiled for a yes-or-no answer, which every request asks for."""
    return jsonschema_rs.Draft202012Validator(_schema(method))


def params_problem(method: str, params: Any) -> ParamsProblem | None:
    """The shallowest problem of ``params`` for ``method`` (a protocol method), or None."""
    try:
        if _accepts(method).is_valid(params):
            return None
    except ValueError:
        pass  # a string the compiled twin cannot hold (a lone surrogate): jsonschema decides
    # Only refused params pay for jsonschema's walk, which words the problem.
    errors = sorted(
        _validator(method).iter_errors(params), key=lambda error: (len(error.absolute_path), error.json_path)
    )
    if not errors:
        return None
    message = errors[0].message
    if len(message) > _LIMIT:
        message = message[: _LIMIT - 1] + "…"
    return ParamsProblem(errors[0].json_path, message)


def preload() -> None:
    """Read every method's schema now, so that checking params later opens no file."""
    for method in METHODS:
        _validator(method)
        _accepts(method)
