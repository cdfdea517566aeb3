from __future__ import annotations

import hashlib
import json
import re
import sys
from types import FrameType
from typing import TYPE_CHECKING

import pytest

from mock_servers import (
    LIMITS,
    MCP_TOOL_NAME,
    PROVIDER_TOOL_NAME,
    AnnotationMix,
    Faults,
    ServerSpec,
    ToolSpec,
    example_arguments,
    generate_tools,
    preset,
)
from mock_servers._generate import _huge, is_read_name
from mock_servers._vocabulary import DOMAINS, with_article

if TYPE_CHECKING:
    from _typeshed import TraceFunction

# sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of {server id: tools} per preset.
# A change here changes every catalog users have pinned: update the digests deliberately.
PRESET_DIGESTS = {
    "seed-example": "2c8abf2f8c3a3a28ab73017e3a1ef1f58f49d3f318530142eed35b5d6ea7a09f",
    "realistic": "ee2aaa30255feb878c8368141f9e727c59336d87f66f621d3efc6d5561892ceb",
    "large": "553614af17dd90e33fe5c6fbd9aac762c563a4878f3d9240cb32b5dc98aa2c66",
    "adversarial": "d8c14f0ca5da07d705e398d6c4362f066ef2e5fb69b0226c1ff60392e343757a",
}


def catalog_digest(name: str) -> str:
    catalog = {s.id: generate_tools(s) for s in preset(name).servers}
    canonical = json.dumps(catalog, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize("name", sorted(PRESET_DIGESTS))
def test_every_preset_generates_the_stored_catalog_byte_for_byte(name: str) -> None:
    assert catalog_digest(name) == PRESET_DIGESTS[name]


def test_the_seed_example_has_four_servers_of_forty_well_named_tools() -> None:
    for server in preset("seed-example").servers:
        tools = generate_tools(server)
        names = [t["name"] for t in tools]
        assert len(tools) == 40
        assert len(set(names)) == 40
        assert all(MCP_TOOL_NAME.fullmatch(n) and PROVIDER_TOOL_NAME.fullmatch(n) for n in names)
        assert all("__" not in n for n in names)


def test_generated_tools_have_believable_names_descriptions_and_object_schemas() -> None:
    tools = {t["name"]: t for s in preset("seed-example").servers for t in generate_tools(s)}
    assert {"list_pull_requests", "browser_take_screenshot", "run_sql_query"} <= set(tools)
    pr = tools["list_pull_requests"]
    assert "pull requests" in pr["description"]
    assert pr["inputSchema"]["type"] == "object"
    assert set(pr["inputSchema"]["required"]) >= {"owner", "repo"}


def test_in_the_realistic_preset_read_only_marks_agree_with_tool_names() -> None:
    for server in preset("realistic").servers:
        for tool in generate_tools(server):
            hint = tool.get("annotations", {}).get("readOnlyHint")
            if hint is not None:
                assert hint is is_read_name(tool["name"]), tool["name"]


def test_the_realistic_preset_has_about_150_tools_with_mixed_annotations() -> None:
    tools = [t for s in preset("realistic").servers for t in generate_tools(s)]
    hints = [t.get("annotations", {}).get("readOnlyHint", "absent") for t in tools]
    assert 140 <= len(tools) <= 160
    assert {True, False, "absent"} <= set(hints)


def test_without_follow_names_the_annotation_shares_are_exact() -> None:
    mix = AnnotationMix(read_only=0.3, writable=0.5, none=0.2, follow_names=False)
    tools = generate_tools(ServerSpec(id="s", tool_count=40, annotations=mix))
    hints = [t.get("annotations", {}).get("readOnlyHint", "absent") for t in tools]
    assert (hints.count(True), hints.count(False), hints.count("absent")) == (12, 20, 8)


def test_names_get_a_numeric_suffix_once_the_vocabulary_runs_out() -> None:
    tools = generate_tools(ServerSpec(id="s", domain="calendar", tool_count=120))
    names = [t["name"] for t in tools]
    assert len(names) == len(set(names)) == 120
    assert "list_events_2" in names


@pytest.mark.parametrize("count", [3, 501], ids=["kept", "built-each-time"])
def test_each_caller_gets_tools_of_its_own_to_change(count: int) -> None:
    server = ServerSpec(id="s", tool_count=count, seed=11)
    first = generate_tools(server)
    served = json.dumps(first)
    first[0]["name"] = "changed"
    first[1]["inputSchema"]["properties"] = {}
    first.pop()
    assert json.dumps(generate_tools(server)) == served


def test_explicit_tools_come_first_and_generated_names_avoid_them() -> None:
    explicit = ToolSpec(name="list_pull_requests", description="Mine", input_schema={"type": "object"})
    tools = generate_tools(ServerSpec(id="s", tool_count=60, tools=(explicit,)))
    assert tools[0] == {"name": "list_pull_requests", "description": "Mine", "inputSchema": {"type": "object"}}
    assert [t["name"] for t in tools].count("list_pull_requests") == 1
    assert len(tools) == 61


def test_name_faults_produce_names_outside_the_rules() -> None:
    faults = Faults(
        bad_names=("double_underscore", "dot", "space", "non_ascii", "too_long", "empty"), duplicate_names=2
    )
    names = [t["name"] for t in generate_tools(ServerSpec(id="s", tool_count=12, faults=faults))]
    assert len(names) == 14
    assert len(set(names)) == 12
    assert any("__" in n for n in names)
    assert any("." in n and MCP_TOOL_NAME.fullmatch(n) and not PROVIDER_TOOL_NAME.fullmatch(n) for n in names)
    assert sum(not MCP_TOOL_NAME.fullmatch(n) for n in names) == 4  # space, non-ASCII, too long, empty


def test_wire_level_faults_change_the_definitions_as_asked() -> None:
    faults = Faults(read_only_hint_string=1, read_only_hint_number=1, schema_not_object=1, missing_name=1)
    tools = generate_tools(ServerSpec(id="s", tool_count=10, faults=faults, raw=True))
    hints = [t.get("annotations", {}).get("readOnlyHint") for t in tools]
    assert "true" in hints
    assert any(h == 1 and h is not True for h in hints)
    assert sum("name" not in t for t in tools) == 1
    assert sum(t["inputSchema"].get("type") != "object" for t in tools) == 1


def test_huge_descriptions_have_the_requested_length() -> None:
    faults = Faults(huge_descriptions=1, huge_description_chars=20_000)
    lengths = sorted(len(t["description"]) for t in generate_tools(ServerSpec(id="s", tool_count=5, faults=faults)))
    assert lengths[-1] == 20_000
    assert lengths[-2] < 500


def test_example_arguments_fill_exactly_the_required_properties() -> None:
    for tool in generate_tools(ServerSpec(id="s", domain="crm", tool_count=30)):
        args = example_arguments(tool)
        assert sorted(args) == sorted(tool["inputSchema"].get("required", []))


@pytest.mark.parametrize(
    ("noun", "expected"),
    [
        ("issue", "an issue"),
        ("organization", "an organization"),
        ("on-call schedule", "an on-call schedule"),
        ("user", "a user"),
        ("pull request", "a pull request"),
        ("SLO", "an SLO"),
        ("DNS record", "a DNS record"),
    ],
)
def test_nouns_take_the_article_their_first_sound_asks_for(noun: str, expected: str) -> None:
    assert with_article(noun) == expected


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_generated_descriptions_use_a_before_consonant_sounds_and_an_before_vowels(domain: str) -> None:
    # Every template and entity of the domain appears among 200 tools over a few seeds.
    for seed in range(5):
        for tool in generate_tools(ServerSpec(id="s", domain=domain, tool_count=200, seed=seed)):
            for article, word in re.findall(r"\b([Aa]n?) ([\w-]+)", tool["description"]):
                assert with_article(word).split()[0] == article.lower(), tool["description"]


def test_a_huge_description_is_built_without_a_loop_over_its_length() -> None:
    # Repeated appends made a 4 M character description take half a minute: count the lines run instead.
    lines = 0

    def trace(frame: FrameType, event: str, arg: object) -> TraceFunction | None:
        nonlocal lines
        if frame.f_code.co_name == "_huge":
            lines += event == "line"
            return trace
        return None

    previous = sys.gettrace()  # coverage's tracer, when measured: put it back afterwards
    sys.settrace(trace)
    try:
        description = _huge("Short.", LIMITS.description_chars)
    finally:
        sys.settrace(previous)
    assert len(description) == LIMITS.description_chars
    assert description.startswith("Short. This tool accepts")
    assert lines < 10
