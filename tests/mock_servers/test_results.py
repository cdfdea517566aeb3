"""Tool results: made with Faker per call, shaped by the tool, replayed when recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from mcp import Client

from mock_servers import Ledger, ServerSpec, ToolSpec, call_result, example_arguments, generate_tools, memory_server
from mock_servers._server import ServerCore
from mock_servers._vocabulary import DOMAINS
from tests.mock_servers.mock_fleet_helpers import list_all

GITHUB = ServerSpec(id="github", domain="code_hosting", tool_count=60, seed=11)
LINEAR = ServerSpec(id="linear", domain="issue_tracker", tool_count=60, seed=11)
OWNER = {"owner": "acme", "repo": "rocket"}


def structured(server: ServerSpec, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The structured result of a call with these arguments (and whatever else the tool requires)."""
    tool = next((t for t in generate_tools(server) if t["name"] == name), None)
    required = example_arguments(tool) if tool is not None else {}
    result = call_result(server, name, {**required, **arguments})
    assert result["isError"] is False, result
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    value: dict[str, Any] = result["structuredContent"]
    return value


def test_the_same_call_gets_the_same_result_and_other_calls_get_others() -> None:
    first = call_result(LINEAR, "list_issues", {"limit": 5})
    assert call_result(LINEAR, "list_issues", {"limit": 5}) == first
    assert call_result(LINEAR, "list_issues", {"limit": 4}) != first
    reseeded = ServerSpec(id="linear", domain="issue_tracker", tool_count=60, seed=12)
    assert call_result(reseeded, "list_issues", {"limit": 5}) != first


@pytest.mark.e2e
def test_results_are_the_same_in_a_fresh_interpreter() -> None:
    code = (
        "import json; from mock_servers import Ledger, ServerSpec, call_result; "
        "s = ServerSpec(id='linear', domain='issue_tracker', tool_count=60, seed=11); "
        "print(json.dumps(call_result(s, 'list_issues', {'limit': 5})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "7"}
    )
    assert json.loads(done.stdout) == call_result(LINEAR, "list_issues", {"limit": 5})


def test_a_listing_holds_at_most_limit_records_that_match_its_filters() -> None:
    for limit in (0, 1, 3):
        page = structured(GITHUB, "list_issues", {**OWNER, "state": "closed", "limit": limit})
        assert len(page["issues"]) <= limit
        assert all(issue["state"] == "closed" and issue["repo"] == "rocket" for issue in page["issues"])
    page = structured(GITHUB, "list_issues", {**OWNER})
    assert len(page["issues"]) >= 2
    assert len({issue["id"] for issue in page["issues"]}) == len(page["issues"])
    assert {"title", "body", "labels", "created_at", "url"} <= set(page["issues"][0])


def test_a_single_record_carries_the_id_asked_for_and_a_create_keeps_what_was_given() -> None:
    issue = structured(LINEAR, "get_issue", {"issue_id": "ENG-42"})
    assert issue["id"] == "ENG-42"
    assert issue["priority"] in ("urgent", "high", "medium", "low", "none")
    created = structured(LINEAR, "create_issue", {"title": "Crash on start", "priority": "urgent"})
    assert (created["title"], created["priority"]) == ("Crash on start", "urgent")
    closed = structured(GITHUB, "close_issue", {**OWNER, "issue_id": "7"})
    assert closed["status"] == "closed"
    assert structured(LINEAR, "delete_issue_comment", {"issue_comment_id": "c1"}) == {"id": "c1", "deleted": True}


def test_fixed_actions_have_their_own_shapes() -> None:
    data = ServerSpec(id="data", domain="data_platform", tool_count=60)
    rows = structured(data, "run_sql_query", {"project": "p", "sql": "select 1", "max_rows": 3})
    assert len(rows["rows"]) == 3
    assert all(len(row) == len(rows["columns"]) for row in rows["rows"])
    chat = ServerSpec(id="chat", domain="chat", tool_count=60)
    history = structured(chat, "get_channel_history", {"channel": "C1", "limit": 2})
    assert len(history["messages"]) == 2
    assert history["channel"] == "C1"


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_every_generated_tool_answers_its_example_arguments_with_a_record(domain: str) -> None:
    core = ServerCore(ServerSpec(id="s", domain=domain, tool_count=200, seed=3), Ledger(None), "memory")
    for tool in core.tools:
        outcome = core.outcome(tool, tool["name"], example_arguments(tool))
        assert outcome.is_error is False, outcome.text
        assert outcome.structured and json.loads(outcome.text) == outcome.structured


def test_dates_in_results_do_not_depend_on_the_clock() -> None:
    issue = structured(LINEAR, "get_issue", {"issue_id": "x"})
    assert "2024-01-01T00:00:00Z" <= issue["created_at"] <= issue["updated_at"] <= "2025-12-31T23:59:59Z"


OUTPUT_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/pr"}, "minItems": 1, "maxItems": 4},
            "total": {"type": "integer", "minimum": 0, "maximum": 10},
            "next": {"anyOf": [{"type": "null"}, {"type": "string", "format": "uri"}]},
        },
        "required": ["items", "total"],
        "additionalProperties": False,
        "$defs": {
            "pr": {
                "type": "object",
                "properties": {
                    "number": {"type": "integer", "exclusiveMinimum": 0},
                    "title": {"type": "string", "minLength": 3, "maxLength": 40},
                    "state": {"enum": ["open", "closed"]},
                    "author": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}},
                    "merged_at": {"type": ["string", "null"], "format": "date-time"},
                    "score": {"type": "number", "minimum": 0.5, "maximum": 0.75},
                },
                "required": ["number", "title", "state", "author"],
            }
        },
    },
    {"type": "object", "properties": {"ok": {"const": True}, "id": {"type": "string", "format": "uuid"}}},
    {
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
        ],
    },
]


@pytest.mark.parametrize("schema", OUTPUT_SCHEMAS, ids=["refs-and-bounds", "const-and-format", "all-of"])
def test_structured_content_is_an_instance_of_the_output_schema(schema: dict[str, Any]) -> None:
    wire = {"name": "list_things", "inputSchema": {"type": "object"}, "outputSchema": schema}
    server = ServerSpec(id="s", tool_count=0, tools=(ToolSpec(name="list_things", wire=wire),))
    for n in range(25):
        value = structured(server, "list_things", {"n": n})
        jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())


def test_structured_content_takes_the_values_of_arguments_of_the_same_name() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "title": {"type": "string"}},
        "required": ["id"],
    }
    wire = {"name": "get_ticket", "inputSchema": {"type": "object"}, "outputSchema": schema}
    server = ServerSpec(id="s", tool_count=0, tools=(ToolSpec(name="get_ticket", wire=wire),))
    assert structured(server, "get_ticket", {"id": 5})["id"] == 5
    # An argument that would break the schema is not copied.
    assert isinstance(structured(server, "get_ticket", {"id": "five"})["id"], int)


def test_an_unknown_tool_honours_only_the_limit_and_filters_its_input_schema_declares() -> None:
    declared = {
        "type": "object",
        "properties": {
            "per_page": {"type": "integer"},
            "state": {"enum": ["open", "closed"]},
            "sort": {"enum": ["created", "updated"]},
        },
    }
    tools = (
        ToolSpec(name="list_widgets", wire={"name": "list_widgets", "inputSchema": declared}),
        ToolSpec(name="find_gadgets", wire={"name": "find_gadgets", "inputSchema": {"type": "object"}}),
    )
    server = ServerSpec(id="s", tool_count=0, tools=tools)
    page = structured(server, "list_widgets", {"per_page": 1, "state": "closed", "sort": "updated"})
    [widget] = page["widgets"]
    assert widget["state"] == "closed"
    assert "sort" not in widget  # it orders the listing; no record has it
    # Arguments the schema does not declare are nobody's limit or filter.
    gadgets = structured(server, "find_gadgets", {"per_page": 1, "state": "closed"})["gadgets"]
    assert len(gadgets) >= 2 and not any("state" in g for g in gadgets)


def test_a_limit_that_would_break_the_output_schema_is_not_applied() -> None:
    schema = OUTPUT_SCHEMAS[0]
    declared = {"type": "object", "properties": {"limit": {"type": "integer"}, "state": {"enum": ["open", "closed"]}}}
    wire = {"name": "list_things", "inputSchema": declared, "outputSchema": schema}
    server = ServerSpec(id="s", tool_count=0, tools=(ToolSpec(name="list_things", wire=wire),))
    for n in range(10):
        value = structured(server, "list_things", {"limit": 0, "state": "open", "n": n})
        jsonschema.validate(value, schema)  # minItems 1: never cut to none
        assert all(item["state"] == "open" for item in value["items"])
    assert len(structured(server, "list_things", {"limit": 1})["items"]) == 1


def test_an_output_schema_the_generator_cannot_satisfy_gives_an_error_result_not_a_wrong_value() -> None:
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[0-9]{6}$"}},
        "required": ["code"],
    }
    wire = {"name": "get_code", "inputSchema": {"type": "object"}, "outputSchema": schema}
    server = ServerSpec(id="s", tool_count=0, tools=(ToolSpec(name="get_code", wire=wire),))
    result = call_result(server, "get_code", {})
    assert result["isError"] is True
    assert "output schema" in result["content"][0]["text"]
    assert "structuredContent" not in result


async def test_the_python_client_accepts_structured_content_for_an_output_schema() -> None:
    schema = OUTPUT_SCHEMAS[0]
    wire = {
        "name": "list_things",
        "description": "List things.",
        "inputSchema": {"type": "object"},
        "outputSchema": schema,
    }
    server = ServerSpec(id="s", tool_count=0, tools=(ToolSpec(name="list_things", wire=wire),))
    async with Client(memory_server(server)) as client:
        await list_all(client)
        result = await client.call_tool("list_things", {})
    assert result.is_error is False
    assert result.structured_content == call_result(server, "list_things", {})["structuredContent"]


RECORDED = {
    "content": [
        {"type": "text", "text": "3 open issues"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    ],
    "structuredContent": {"open": 3},
    "isError": False,
}


async def test_a_recorded_result_is_replayed_for_equal_arguments_only() -> None:
    tool = ToolSpec(
        name="count_open",
        input_schema={"type": "object", "properties": {"repo": {"type": "string"}}},
        samples=({"arguments": {"repo": "a"}, "result": RECORDED},),
    )
    server = ServerSpec(id="s", tool_count=0, tools=(tool,))
    assert call_result(server, "count_open", {"repo": "a"}) == RECORDED
    assert call_result(server, "count_open", {"repo": "b"})["content"] != RECORDED["content"]
    async with Client(memory_server(server), mode="legacy") as client:
        await list_all(client)
        replayed = await client.call_tool("count_open", {"repo": "a"})
    wire = replayed.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert {key: wire[key] for key in RECORDED} == RECORDED


@pytest.mark.e2e
def test_the_catalog_is_generated_without_loading_faker() -> None:
    code = (
        "import sys; from mock_servers import preset, generate_tools; "
        "[generate_tools(s) for s in preset('realistic').servers]; print('faker' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
