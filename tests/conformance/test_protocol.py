"""The driver protocol's schemas and requirements: what ships, what they accept, and the paths they report."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from conformance import Definition, DriverSut, SutMisbehaved, UsageError
from conformance._cli import main
from conformance._protocol import METHODS, command, reply_problem, requirements, schema, schema_names, validate
from tests.fuzz import EXAMPLES, fuzzing
from tests.json_values import near

Argv = Callable[..., list[str]]

PROTOCOL = resources.files("conformance").joinpath("PROTOCOL.md").read_text(encoding="utf-8")
TOOL: Definition = {"name": "base", "description": "A base tool.", "inputSchema": {"type": "object"}}


def test_every_method_has_a_params_and_a_result_schema_and_there_is_one_for_errors() -> None:
    expected = {f"{method}.{direction}" for method in METHODS for direction in ("params", "result")}

    assert set(schema_names()) == expected | {"error", "run.call.discovery"}


def test_every_schema_is_draft_2020_12_and_self_contained() -> None:
    for name in schema_names():
        text = json.dumps(schema(name))
        assert schema(name)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert all(ref.startswith("#/$defs/") for ref in re.findall(r'"\$ref": "([^"]*)"', text)), name


def test_the_definition_is_the_same_in_every_schema_that_carries_one() -> None:
    carried = {
        name: schema(name)["$defs"]["definition"]
        for name in schema_names()
        if "definition" in json.dumps(schema(name).get("$defs", {}))
    }

    assert len(carried) == 4
    assert len({json.dumps(d, sort_keys=True) for d in carried.values()}) == 1


def _examples() -> list[tuple[str, Any]]:
    """Every example line of PROTOCOL.md: (arrow, parsed JSON, or the raw text when it is not JSON)."""
    lines = []
    for arrow, body in re.findall(r"^(→|←) (.*)$", PROTOCOL, flags=re.MULTILINE):
        try:
            lines.append((arrow, json.loads(body)))
        except ValueError:
            assert arrow == "→", f"the driver never writes a line that is not JSON: {body}"
            lines.append((arrow, body))
    return lines


def test_every_example_exchange_of_protocol_md_validates() -> None:
    pending: dict[Any, tuple[str, dict[str, Any]]] = {}
    invalid_params: list[str] = []
    for arrow, message in _examples():
        if arrow == "→":
            if isinstance(message, dict) and "id" in message and message["method"] in METHODS:
                method, params = message["method"], message.get("params", {})
                invalid_params += [f"{method} {problem}" for problem in validate(params, method, "params")]
                pending[message["id"]] = (method, params)
            elif isinstance(message, dict) and "id" in message:
                pending[message["id"]] = (message["method"], {})
            continue
        assert message["jsonrpc"] == "2.0"
        if message["id"] is None:
            assert message["error"]["code"] in (-32700, -32600), message
            continue
        method, params = pending.pop(message["id"])
        assert reply_problem(method, params, message) is None, message

    assert pending == {}
    assert invalid_params == ["run.open $.servers[0].transport.type: 'pigeon' is not one of ['stdio', 'http']"]


def _valid_values() -> list[tuple[str, Any, Any]]:
    """(method, direction, value) for every request and reply among PROTOCOL.md's examples."""
    values: list[tuple[str, Any, Any]] = []
    pending: dict[Any, str] = {}
    for arrow, message in _examples():
        if (
            not isinstance(message, dict)
            or message.get("id") is None
            or message.get("method", "") not in (*METHODS, "")
        ):
            continue
        if arrow == "→" and "id" in message:
            values.append((message["method"], "params", message.get("params", {})))
            pending[message["id"]] = message["method"]
        elif arrow == "←" and message["id"] in pending:
            method = pending[message["id"]]
            values.append(
                (method, "error", message["error"]) if "error" in message else (method, "result", message["result"])
            )
            if isinstance(message.get("result"), dict) and "structuredContent" in message["result"]:
                values.append((method, "discovery", message["result"]["structuredContent"]))
    return values


VALID = _valid_values()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_a_value_is_valid_exactly_when_jsonschema_accepts_it(examples: int) -> None:
    """The compiled validator answers first; it must never accept what jsonschema refuses."""

    @fuzzing(examples * 4)
    @given(st.sampled_from(VALID).flatmap(lambda seed: st.tuples(st.just(seed), near(seed[2]))))
    def check(drawn: tuple[tuple[str, Any, Any], Any]) -> None:
        (method, direction, _), value = drawn
        name = (
            "error"
            if direction == "error"
            else "run.call.discovery"
            if direction == "discovery"
            else f"{method}.{direction}"
        )
        full = Draft202012Validator(schema(name))

        assert (validate(value, method, direction) == []) == full.is_valid(value), value

    check()


def test_requirements_are_numbered_from_p1_without_gaps() -> None:
    numbers = [int(key[1:]) for key in requirements()]

    assert numbers == list(range(1, len(numbers) + 1))


@pytest.mark.parametrize(
    ("value", "method", "direction", "problem"),
    [
        (
            {"tools": [TOOL, TOOL, TOOL, {**TOOL, "inputSchema": ["x"]}]},
            "run.definitions",
            "result",
            "$.tools[3].inputSchema",
        ),
        ({"runId": ""}, "run.open", "result", "$.runId"),
        ({"content": [{"text": "x"}], "isError": False}, "run.call", "result", "$.content[0]"),
        ({"content": [], "isError": "false"}, "run.call", "result", "$.isError"),
        ({"name": "x", "version": "1"}, "initialize", "result", "$"),
        ({"servers": [{"transport": {"type": "stdio", "args": [1]}}]}, "run.open", "params", "$.servers[0].transport"),
        ({"servers": [], "callTimeoutSeconds": 0}, "run.open", "params", "$.callTimeoutSeconds"),
        ({"runId": 3}, "run.close", "params", "$.runId"),
        ({"code": -32000, "message": "x", "data": {"kind": "invalid_params"}}, "run.open", "error", "$.data.kind"),
        ({"code": -32000, "message": "x"}, "run.open", "error", "$"),
        ({"code": "-32601", "message": "x"}, "run.open", "error", "$.code"),
        (
            {"activated": [{"name": "a"}], "activeCount": 1, "remainingCapacity": -1},
            "run.call",
            "discovery",
            "$.remainingCapacity",
        ),
    ],
)
def test_a_value_that_breaks_its_schema_is_reported_with_the_json_path_first(
    value: Any, method: str, direction: Any, problem: str
) -> None:
    problems = validate(value, method, direction)

    assert problems
    assert problems[0].path == problem


def test_configuration_is_left_to_the_implementation() -> None:
    servers = [{"id": 7, "transport": {"type": "http", "url": "http://x/mcp"}, "policy": ["not", "an", "object"]}]

    assert validate({"servers": servers, "futureField": True}, "run.open", "params") == []


def test_a_problem_reads_as_path_then_message_and_quotes_a_huge_value_only_in_part() -> None:
    [problem] = validate({"tools": "x" * 100_000}, "run.request", "result")

    assert str(problem).startswith("$.tools: 'xxx")
    assert len(problem.message) <= 300


def test_reply_problem_names_the_method_the_schema_and_the_path() -> None:
    reply = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{**TOOL, "inputSchema": ["x"]}]}}

    problem = reply_problem("run.definitions", {"runId": "r"}, reply)

    assert problem == (
        "run.definitions: the result breaks run.definitions.result.schema.json at "
        "$.tools[0].inputSchema: ['x'] is not of type 'object'"
    )


def test_reply_problem_checks_the_structured_content_of_a_successful_discovery_call_only() -> None:
    result = {"content": [], "isError": False, "structuredContent": {"activated": []}}
    discovery = {"runId": "r", "name": "search_mcp_tools"}

    problem = reply_problem("run.call", discovery, {"result": result})

    assert problem is not None
    assert "run.call.discovery.schema.json at $.structuredContent: 'activeCount' is a required property" in problem
    assert "(and 1 more)" in problem
    assert reply_problem("run.call", {"runId": "r", "name": "gh__x"}, {"result": result}) is None
    refused = {
        "content": [{"type": "text", "text": "refused"}],
        "isError": True,
        "structuredContent": {"activated": []},
    }
    assert reply_problem("run.call", discovery, {"result": refused}) is None


@pytest.mark.parametrize(
    ("content", "is_error", "where"),
    [
        ([], True, "$.content: no item matches: An error result says what happened in a non-empty text block."),
        ([{"type": "text", "text": ""}], True, "$.content: no item matches"),
        ([{"type": "image", "data": "", "mimeType": "image/png"}], True, "$.content: no item matches"),
        ([{"type": "text"}], False, "$.content[0]: 'text' is a required property"),
        ([{"type": "text", "text": None}], False, "$.content[0].text: None is not of type 'string'"),
        ([{"type": "text", "text": "x", "annotations": None}], False, "$.content[0].annotations: None is not of type"),
    ],
)
def test_a_call_result_holds_mcp_content_blocks_and_an_error_says_what_happened(
    content: list[object], is_error: bool, where: str
) -> None:
    problem = reply_problem("run.call", {"name": "gh__x"}, {"result": {"content": content, "isError": is_error}})

    assert problem is not None
    assert f"run.call: the result breaks run.call.result.schema.json at {where}" in problem


def test_reply_problem_checks_an_error_against_the_error_schema() -> None:
    problem = reply_problem("run.request", {}, {"error": {"code": -32000, "message": "x", "data": {"kind": "oops"}}})

    assert problem is not None
    assert problem.startswith("run.request: the error breaks error.schema.json at $.data.kind: 'oops' is not one of")


def test_an_unknown_method_or_schema_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"unknown protocol method 'run\.explode'"):
        validate({}, "run.explode", "params")
    with pytest.raises(UsageError, match=r"no protocol schema named 'run\.explode\.params'"):
        schema("run.explode.params")


@pytest.mark.e2e
async def test_the_driver_client_reports_a_reply_that_breaks_a_schema_as_a_protocol_finding(
    fake_driver_argv: Argv,
) -> None:
    driver = DriverSut(fake_driver_argv(), timeout=5.0, grace=0.5)
    try:
        run_id = await driver.open_run({"servers": [], "baseTools": [TOOL], "userMessage": "bad-definitions"})

        with pytest.raises(SutMisbehaved) as caught:
            await driver.definitions(run_id)

        assert caught.value.message.startswith(
            "run.definitions: the result breaks run.definitions.result.schema.json at $.tools[0].inputSchema"
        )
        assert await driver.definitions(await driver.open_run({"servers": [], "baseTools": [TOOL]})) == [TOOL]
        assert driver.starts == 1
    finally:
        await driver.aclose()


def test_the_protocol_command_says_where_the_protocol_is_written(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["protocol"])

    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert out.startswith("driver protocol version 1\ndocument: ")
    assert "PROTOCOL.md" in out
    assert "  run.open.params\n" in out


@pytest.mark.parametrize(
    ("argument", "names"),
    [
        ("run.call", ["run.call.discovery", "run.call.params", "run.call.result"]),
        ("", list(schema_names())),
    ],
)
def test_protocol_schema_prints_the_schemas_of_a_method_or_all_of_them(
    argument: str, names: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert command(["--schema", argument] if argument else ["--schema"]) == 0

    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == names
    assert printed[names[-1]] == schema(names[-1])


def test_protocol_schema_prints_one_schema_by_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert command(["--schema", "error"]) == 0

    assert json.loads(capsys.readouterr().out) == schema("error")


@pytest.mark.parametrize("argument", ["run", "run.nope", "error.params"])
def test_protocol_schema_of_an_unknown_name_is_exit_2_naming_the_choices(
    argument: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["protocol", "--schema", argument])

    assert exited.value.code == 2
    assert f"protocol --schema {argument!r}: no such method or schema; methods: initialize, run.open" in (
        capsys.readouterr().err
    )
