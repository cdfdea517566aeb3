"""The driver's check of request params: the protocol's schemas, answered fast and worded by jsonschema."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from reference_impl.driver._schemas import METHODS, params_problem
from tests.fuzz import EXAMPLES, fuzzing
from tests.json_values import near

VALID: list[tuple[str, Any]] = [
    ("initialize", {"protocolVersion": "1"}),
    (
        "run.open",
        {
            "servers": [
                {
                    "id": "a",
                    "transport": {"type": "stdio", "command": "srv", "args": ["-q"]},
                    "policy": {"mode": "auto"},
                },
                {"id": "b", "transport": {"type": "http", "url": "http://127.0.0.1:1/mcp"}},
            ],
            "baseTools": [{"name": "base", "description": "A base tool.", "inputSchema": {"type": "object"}}],
            "userMessage": "list the issues",
            "callTimeoutSeconds": 20,
        },
    ),
    ("run.definitions", {"runId": "r1"}),
    ("run.call", {"runId": "r1", "name": "search_mcp_tools", "arguments": {"query": "issues", "limit": 3}}),
    ("run.request", {"runId": "r1", "extraTools": []}),
    ("run.close", {"runId": "r1"}),
    ("shutdown", {}),
]


def _full(method: str) -> Draft202012Validator:
    text = resources.files("conformance").joinpath("protocol", f"{method}.params.schema.json").read_text("utf-8")
    return Draft202012Validator(json.loads(text))


def test_the_seeds_are_valid_params_of_every_method() -> None:
    assert sorted({method for method, _ in VALID}) == sorted(METHODS)
    assert [params_problem(method, params) for method, params in VALID] == [None] * len(VALID)


@pytest.mark.parametrize("examples", EXAMPLES)
def test_params_pass_exactly_when_jsonschema_accepts_them(examples: int) -> None:
    """The compiled validator answers first; it must never accept what jsonschema refuses."""

    @fuzzing(examples * 4)
    @given(st.sampled_from(VALID).flatmap(lambda seed: st.tuples(st.just(seed[0]), near(seed[1]))))
    def check(drawn: tuple[str, Any]) -> None:
        method, params = drawn

        assert (params_problem(method, params) is None) == _full(method).is_valid(params), params

    check()


def test_a_key_the_compiled_validator_cannot_read_is_judged_by_jsonschema() -> None:
    # A lone surrogate (JSON's "\ud800") cannot cross into the compiled validator.
    assert params_problem("run.close", {"runId": "r1", "\ud800": 1}) is None
    problem = params_problem("run.close", {"runId": 7, "\ud800": 1})

    assert problem is not None and problem.path == "$.runId"
