"""The catalog (CAT-*): every page listed, every tool kept with its definition, qualified
names, calls routed by prefix with names and arguments unchanged, and names that break
the provider rule."""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mock_servers
from conformance import OutcomeError, Sut, clause
from conformance._wire_types import ServerConfig, StdioTransport, ToolPolicy, ToolResult
from conformance.suite._fleets import Fleets
from conformance.suite._paged_server import ENDINGS, ENV_LOG, ENV_PAGES
from conformance.suite._paged_server import PATH as PAGED_SERVER
from conformance.suite._preconditions import (
    named_activation_missed,
    original_names_sent,
    precondition,
    required_all_active,
    writes_allowed_by_default,
)
from conformance.suite._predictions import read_only as read_only_tool
from conformance.suite._strategies import examples
from conformance.suite._wire import (
    DISCOVERY,
    Definition,
    base_tools,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    portable,
    refusal_or,
    run,
)
from mock_servers import Faults, FleetSpec, ListedTool, ServerSpec, ToolSpec, example_arguments

PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_T = TypeVar("_T")


@clause("CAT-1.1")
def test_every_configured_server_is_listed_when_the_run_opens(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(
        servers=(
            ServerSpec(id="alpha", tool_count=5, page_size=2),
            ServerSpec(id="beta", tool_count=0),
            ServerSpec(id="gamma", domain="chat", tool_count=7),
        ),
        seed=3,
    )
    policies: dict[str, ToolPolicy] = {s.id: {"mode": "all", "maxActiveTools": 96} for s in spec.servers}
    with fleets.serve(spec, policies) as served:
        defs = run(_definitions(sut, served.servers))
        unlisted = [s.id for s in spec.servers if not served.ledger().listed_pages(s.id)]
        case = served.describe()
        listed = sorted(catalog(served.tools))
    shown = sorted(names(mcp_definitions(defs, [])))
    if unlisted or shown != listed:
        raise fail(
            ("CAT-1.1",),
            "the run did not list the tools of every configured server when it opened",
            expected={"servers listed": [s.id for s in spec.servers], "tools": listed},
            observed={"servers never listed": unlisted, "missing": sorted(set(listed) - set(shown))},
            case=case,
        )


@clause("CAT-1.2", "CAT-2.1", "CAT-2.2")
@examples(5)
@given(st.sampled_from((1, 2, 3, 7)), st.integers(13, 30), st.integers(0, 1000))
def test_tools_on_later_pages_are_in_the_catalog_with_their_definitions_and_annotations(
    sut: Sut, fleets: Fleets, page_size: int, count: int, seed: int
) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=count, page_size=page_size, seed=seed),), seed=seed)
    every_policy: ToolPolicy = {"mode": "all", "maxActiveTools": 96}
    read_only_policy: ToolPolicy = {**every_policy, "sideEffects": "readOnly"}
    with fleets.serve(spec, {"s0": every_policy}) as served:

        async def body() -> tuple[Any, Any]:
            async with sut.open(open_params(served.servers)) as r:
                every = await r.definitions()
            async with sut.open(open_params(served.with_policies({"s0": read_only_policy}))) as r:
                read_only = await r.definitions()
            return every, read_only

        every, read_only = run(body())
        case = served.describe()
        tools = served.tools["s0"]
        unread = sorted(set(range(-(-len(tools) // page_size))) - set(served.ledger().listed_pages("s0")))
    listed = {f"s0__{t['name']}": t for t in tools}
    shown = {d["name"]: d for d in mcp_definitions(every, [])}
    if sorted(shown) != sorted(listed):
        if not unread:
            # Every page was read: the tools are missing from the first round, which `all`
            # mode fills with every one of them only while required tools are all activated.
            required_all_active(sut, fleets)
        raise fail(
            ("CAT-2.1",) if unread else ("CAT-2.2",),
            "mode 'all' did not expose every tool of every tools/list page"
            + (f"; pages never read: {unread}" if unread else ", although every page was read"),
            expected=sorted(listed),
            observed={"missing": sorted(set(listed) - set(shown)), "extra": sorted(set(shown) - set(listed))},
            case=case,
        )
    for name, tool in listed.items():
        kept = {"description": shown[name]["description"], "inputSchema": shown[name]["inputSchema"]}
        if kept != {"description": tool.get("description", ""), "inputSchema": tool["inputSchema"]}:
            raise fail(
                ("CAT-1.2",),
                f"{name} (page {tools.index(tool) // page_size}) lacks the description or input schema it was listed with",
                expected={"description": tool.get("description", ""), "inputSchema": tool["inputSchema"]},
                observed=kept,
                case=case,
            )
    marked = sorted(q for q, t in listed.items() if read_only_tool(t))
    active = sorted(names(mcp_definitions(read_only, [])))
    # A catalog that lost annotations admits fewer tools, never more: more is read-only
    # handling broken, which says nothing of the catalog.
    writes = sorted(set(active) - set(marked))
    precondition(
        "POL-5.1", not writes, f"under sideEffects readOnly, tools without readOnlyHint true are active: {writes}"
    )
    if active != marked:
        raise fail(
            ("CAT-1.2",),
            "under sideEffects readOnly, the active tools are not the ones listed with readOnlyHint true: "
            "the catalog did not keep the annotations",
            expected=marked,
            observed=active,
            case=case | {"policies": {"s0": read_only_policy}},
        )


#: Base tools that, with the discovery tool, leave a first-round capacity of 2.
_LEFT_OUT_BASE = 93


@clause("CAT-1.3")
def test_a_tool_left_out_of_the_first_round_can_still_be_activated_with_its_schema(sut: Sut, fleets: Fleets) -> None:
    # 12 tools on pages of 7 and a first round of 2: 10 are left out, few enough that
    # discovery scoped to the server must activate one named by its qualified name (DSC-5.8),
    # and never more than 12 active tools of it, the first round's cap (past it is SEL-1.3's).
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=12, page_size=7),), seed=4)
    base = base_tools(_LEFT_OUT_BASE)
    with fleets.serve(spec) as served:
        listed = catalog(served.tools)
        case = served.describe() | {"baseTools": _LEFT_OUT_BASE}

        async def body() -> tuple[list[str], list[tuple[str, dict[str, object]]]]:
            async with sut.open(open_params(served.servers, base)) as r:
                first = names(mcp_definitions(await r.definitions(), names(base)))
                left_out = sorted(set(listed) - set(first))
                missed: list[tuple[str, dict[str, object]]] = []
                for name in left_out:
                    active = names(await r.definitions())
                    if name in active:
                        continue
                    result = await r.call(DISCOVERY, {"query": name, "server_ids": ["s0"], "limit": 12})
                    shown = {d["name"]: d for d in await r.definitions()}
                    if name not in shown:
                        await named_activation_missed(r, name, listed[name][1], result)
                        missed.append((name, {"result": result}))
                    elif shown[name]["inputSchema"] != listed[name][1]["inputSchema"]:
                        missed.append((name, {"inputSchema": shown[name]["inputSchema"]}))
                return left_out, missed

        left_out, missed = run(body())
    precondition(
        "BUD-1.2", len(left_out) >= 10, f"a first round of capacity 2 left only {len(left_out)} of 12 tools out"
    )
    precondition("SEL-2.1", len(left_out) <= 10, f"a first round of capacity 2 left {len(left_out)} of 12 tools out")
    if missed:
        name, observed = missed[0]
        raise fail(
            ("CAT-1.3",),
            f"{name}, left out of the first round, could not be activated later with its full input schema",
            expected={"activated": name, "inputSchema": listed[name][1]["inputSchema"]},
            observed=observed | {"left out of the first round": left_out},
            case=case | {"steps": "one discovery call per tool left out, query its name, server_ids ['s0']"},
        )


def _paged_listing(ending: str) -> list[dict[str, Any]]:
    """Pages with an empty page that has a cursor, pages smaller and larger than the
    first, and an empty last page that ends the listing as ``ending`` says."""
    sizes = (3, 0, 1, 5, 0)
    tools = [
        {
            "name": f"paged_{i}",
            "description": f"Paged tool number {i}.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }
        for i in range(sum(sizes))
    ]
    pages = []
    for i, size in enumerate(sizes):
        first = sum(sizes[:i])
        pages.append({"tools": tools[first : first + size], "next": "cursor" if i < len(sizes) - 1 else ending})
    return pages


@clause("CAT-1.4")
def test_a_stdio_server_starts_with_the_environment_it_is_configured_with(
    sut: Sut, fleets: Fleets, tmp_path: Path
) -> None:
    """The server is a script run with no arguments (``args`` left out) that finds its
    listing only in ``env``: without those variables, or given any argument, it exits."""
    tool = {"name": "from_env", "description": "Listed from the environment.", "inputSchema": {"type": "object"}}
    log = tmp_path / "cursors.jsonl"
    script = tmp_path / "serve-from-env"
    # An argument the configuration did not give (a host's default flag) ends it at once.
    script.write_text(
        '#!/bin/sh\n[ "$#" -eq 0 ] || { echo "unexpected arguments: $*" >&2; exit 64; }\n'
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(PAGED_SERVER))}\n"
    )
    script.chmod(0o755)
    env = {ENV_PAGES: json.dumps([{"tools": [tool], "next": "absent"}]), ENV_LOG: str(log)}
    transport: StdioTransport = {"type": "stdio", "command": str(script), "env": env}
    policy: ToolPolicy = {"mode": "all"}
    got = run(refusal_or(sut, open_params([{"id": "envsrv", "transport": transport, "policy": policy}])))
    case = {"transport": transport, "policies": {"envsrv": policy}}
    shown = [] if isinstance(got, OutcomeError) else names(mcp_definitions(got, []))
    if "envsrv__from_env" not in shown:
        writes_allowed_by_default(sut, fleets)
        raise fail(
            ("CAT-1.4",),
            "a stdio server configured with env and no args was not started with exactly those",
            expected="an open run exposing envsrv__from_env",
            observed=str(got) if isinstance(got, OutcomeError) else shown,
            case=case,
        )


@clause("CAT-2.1", "CAT-2.3")
@pytest.mark.parametrize("ending", ENDINGS)
def test_listing_reads_every_page_that_has_a_cursor_and_stops_at_the_end(
    sut: Sut, fleets: Fleets, tmp_path: Path, ending: str
) -> None:
    pages = _paged_listing(ending)
    log = tmp_path / "cursors.jsonl"
    log.touch()
    policy: ToolPolicy = {"mode": "all", "maxActiveTools": 96}
    transport: StdioTransport = {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(PAGED_SERVER), json.dumps(pages), str(log)],
    }
    got = run(refusal_or(sut, open_params([{"id": "paged", "transport": transport, "policy": policy}])))
    requested = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    case = {"pages": pages, "policies": {"paged": policy}}
    if isinstance(got, OutcomeError):
        raise fail(
            ("CAT-2.1",),
            f"the run failed on a listing whose last page ends with nextCursor {ending}",
            expected="an open run",
            observed={"refusal": str(got), "cursors requested": requested},
            case=case,
        )
    listed = [f"paged__{t['name']}" for page in pages for t in page["tools"]]
    shown = names(mcp_definitions(got, []))
    missing = sorted(set(listed) - set(shown))
    if missing:
        writes_allowed_by_default(sut, fleets)
        raise fail(
            ("CAT-2.3",),
            "a page with a cursor (empty, or smaller than the first) was the last page read",
            expected=listed,
            observed={"missing": missing, "cursors requested": requested},
            case=case,
        )


#: The fewest pages an implementation that bounds its listings must follow (CAT-2.4, ID-8).
LEAST_PAGE_BOUND = 1000


@clause("CAT-2.1")
def test_a_listing_of_1000_pages_is_read_to_its_end(sut: Sut, fleets: Fleets, tmp_path: Path) -> None:
    """999 empty pages with a cursor, then the one tool: a bound on pages, where there is
    one, lies past them."""
    tool = {"name": "last_page", "description": "Listed on page 1,000.", "inputSchema": {"type": "object"}}
    pages: list[dict[str, Any]] = [{"tools": [], "next": "cursor"} for _ in range(LEAST_PAGE_BOUND - 1)]
    pages.append({"tools": [tool], "next": "absent"})
    log = tmp_path / "cursors.jsonl"
    log.touch()
    policy: ToolPolicy = {"mode": "all"}
    transport: StdioTransport = {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(PAGED_SERVER), json.dumps(pages), str(log)],
    }
    got = run(refusal_or(sut, open_params([{"id": "paged", "transport": transport, "policy": policy}])))
    read = len(log.read_text(encoding="utf-8").splitlines())
    case = {"pages": f"{LEAST_PAGE_BOUND - 1} empty pages with a cursor, then one with the tool", "policies": policy}
    if isinstance(got, OutcomeError) or "paged__last_page" not in names(got):
        if not isinstance(got, OutcomeError):
            writes_allowed_by_default(sut, fleets)
        raise fail(
            ("CAT-2.1",),
            f"a listing of {LEAST_PAGE_BOUND} pages was not read to its end",
            expected=f"an open run with paged__last_page active, after {LEAST_PAGE_BOUND} tools/list requests",
            observed={"run": str(got) if isinstance(got, OutcomeError) else names(got), "pages requested": read},
            case=case,
        )


@clause("CAT-3.2")
def test_two_servers_may_offer_the_same_tool_name(sut: Sut, fleets: Fleets) -> None:
    same = ToolSpec(name="search", description="Searches.", input_schema={"type": "object"})
    spec = FleetSpec(
        servers=(
            ServerSpec(id="github", tool_count=0, tools=(same,)),
            ServerSpec(id="linear", tool_count=0, tools=(same,)),
        )
    )
    with fleets.serve(spec, {"github": {"mode": "all"}, "linear": {"mode": "all"}}) as served:
        defs = run(_definitions(sut, served.servers))
        case = served.describe()
    shown = sorted(names(mcp_definitions(defs, [])))
    if shown != ["github__search", "linear__search"]:
        raise fail(
            ("CAT-3.2",),
            "two servers offering the same tool name are not both exposed under their qualified names",
            expected=["github__search", "linear__search"],
            observed=shown,
            case=case,
        )


async def _definitions(sut: Sut, servers: list[ServerConfig]) -> list[Definition]:
    async with sut.open(open_params(servers)) as r:
        return await r.definitions()


@clause("CAT-4.1", "CAT-4.2", "CAT-4.3")
def test_a_call_reaches_the_server_its_prefix_names_with_the_original_name_and_arguments(
    sut: Sut, fleets: Fleets
) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}
    same = ToolSpec(name="search", description="Searches.", input_schema=schema)
    spec = FleetSpec(
        servers=(
            ServerSpec(id="github", tool_count=0, tools=(same,)),
            ServerSpec(id="linear", tool_count=0, tools=(same,)),
        )
    )
    arguments = {"q": "flaky login test ✓", "n": 7, "nested": {"keep": [1, "two", None]}}
    with fleets.serve(spec, {"github": {"mode": "all"}, "linear": {"mode": "all"}}) as served:

        async def body() -> ToolResult:
            async with sut.open(open_params(served.servers)) as r:
                return await r.call("linear__search", arguments)

        result = run(body())
        calls = served.ledger().calls()
        case = served.describe() | {"call": {"name": "linear__search", "arguments": arguments}}
    if [c.get("server") for c in calls] != ["linear"]:
        raise fail(
            ("CAT-4.1",),
            "the call did not reach exactly the server its prefix names",
            expected=["linear"],
            observed={"result": result, "tools/call": portable(calls)},
            case=case,
        )
    if calls[0].get("name") != "search":
        raise fail(
            ("CAT-4.2",),
            "the server got another tool name",
            expected="search",
            observed=calls[0].get("name"),
            case=case,
        )
    if calls[0].get("arguments") != arguments:
        raise fail(
            ("CAT-4.3",),
            "the server got other arguments",
            expected=arguments,
            observed=calls[0].get("arguments"),
            case=case,
        )


# Recorded results of one tool: content blocks of several kinds with their optional fields,
# structuredContent, and an error result that carries structuredContent too.
_REPORTS: tuple[dict[str, Any], ...] = (
    {
        "arguments": {"n": 1},
        "result": {
            "content": [
                {"type": "text", "text": "Two rows.", "annotations": {"audience": ["user"], "priority": 0.5}},
                {
                    "type": "resource_link",
                    "uri": "https://example.com/rows/1",
                    "name": "rows-1",
                    "mimeType": "text/csv",
                },
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "structuredContent": {"rows": [{"id": 1, "ok": True}, {"id": 2, "ok": None}]},
            "isError": False,
        },
    },
    {
        "arguments": {"n": 2},
        "result": {
            "content": [{"type": "text", "text": "Quota exceeded."}],
            "structuredContent": {"retryAfter": 30},
            "isError": True,
        },
    },
)


@clause("CAT-4.4")
@pytest.mark.parametrize("sample", [0, 1], ids=["success", "error"])
def test_the_caller_gets_the_servers_result_unchanged(sut: Sut, fleets: Fleets, sample: int) -> None:
    report = ToolSpec(name="report", description="Reports rows.", samples=_REPORTS)
    spec = FleetSpec(servers=(ServerSpec(id="stats", tool_count=0, tools=(report,)),))
    arguments = dict(_REPORTS[sample]["arguments"])
    with fleets.serve(spec, {"stats": {"mode": "all"}}) as served:

        async def body() -> ToolResult:
            async with sut.open(open_params(served.servers)) as r:
                return await r.call("stats__report", arguments)

        result = run(body())
        case = served.describe() | {"call": {"name": "stats__report", "arguments": arguments}}
    # Through the package, on use: what a server answers loads the MCP SDK, which no other
    # check needs in this process.
    sent = mock_servers.call_result(spec.servers[0], "report", arguments)
    # Nothing taken away, nothing added; a null structuredContent means absent (PROTOCOL.md P25).
    got = {key: value for key, value in result.items() if not (key == "structuredContent" and value is None)}
    if got != sent:
        original_names_sent(served.ledger().calls())
        raise fail(
            ("CAT-4.4",),
            "the result of the call is not the one the server sent",
            expected=sent,
            observed=result,
            case=case,
        )


BAD_NAME_KINDS = ("dot", "space", "slash", "non_ascii", "too_long")
_EXPLICIT_BAD = (
    ToolSpec(name="get.item", description="Fetches one item by its dotted name."),
    ToolSpec(name="list items", description="Lists the items with a space in the name."),
    ToolSpec(name="repo/files", description="Reads repository files behind a slash."),
    ToolSpec(name="café_menu", description="Shows the menu with an accented name."),
    ToolSpec(name="search_" + "very_long_name_" * 5, description="Searches with a name over the limit."),
    ToolSpec(name="plain_tool", description="A tool whose name is fine."),
    # Qualified names (``names__`` and these) of exactly 64 characters, and of 65.
    ToolSpec(name="search_" + "within_the_limit_" * 2 + "within_the_limit", description="A name at the limit."),
    ToolSpec(name="search_" + "within_the_limit_" * 2 + "within_the_limits", description="A name one over the limit."),
)
BAD_NAME_FLEETS = {
    "generated": FleetSpec(
        servers=(ServerSpec(id="s0", tool_count=10, faults=Faults(bad_names=BAD_NAME_KINDS)),), seed=2
    ),
    "explicit": FleetSpec(servers=(ServerSpec(id="names", tool_count=0, tools=_EXPLICIT_BAD),)),
}


def _mapped_or_left_out(body: Coroutine[Any, Any, _T], what: str, case: object) -> _T:
    """Run ``body``; a run that fails over names breaking the provider rule breaks CAT-5.2."""
    try:
        return run(body)
    except OutcomeError as exc:
        raise fail(
            ("CAT-5.2",), f"{what} failed the run instead of being mapped or left out", observed=str(exc), case=case
        ) from None


@clause("CAT-5.1", "CAT-5.2", "CAT-3.1")
@pytest.mark.parametrize("mode", ["all", "auto"])
@pytest.mark.parametrize("fleet", sorted(BAD_NAME_FLEETS))
def test_no_definition_breaks_the_provider_name_rule(
    sut: Sut, fleets: Fleets, fleet: str, mode: Literal["all", "auto"]
) -> None:
    spec = BAD_NAME_FLEETS[fleet]
    sid = spec.servers[0].id
    with fleets.serve(spec, {sid: {"mode": mode}}) as served:
        case = served.describe()
        cat = catalog(served.tools)
        tools = served.tools[sid]

        async def body() -> tuple[list[Definition], list[tuple[str, ListedTool, Any, Any]]]:
            async with sut.open(open_params(served.servers)) as r:
                defs = await r.definitions()
                mapped = []
                for d in mcp_definitions(defs, []):
                    if d["name"] in cat or not PROVIDER_NAME.match(d["name"]):
                        continue
                    # Exposed under another name: the original is the one it describes.
                    same = [
                        t
                        for t in tools
                        if t.get("description", "") == d["description"] and t["inputSchema"] == d["inputSchema"]
                    ]
                    if len(same) != 1:
                        continue
                    arguments = example_arguments(same[0])
                    seen = len(served.ledger().calls(sid))
                    result = await r.call(d["name"], arguments)
                    executed = [(c.get("name"), c.get("arguments")) for c in served.ledger().calls(sid)[seen:]]
                    mapped.append((d["name"], same[0], result, executed))
                return defs, mapped

        defs, mapped = _mapped_or_left_out(body(), "a tool name that breaks the provider rule", case)
    fine = sorted(q for q in cat if PROVIDER_NAME.match(q))
    if mode == "all" and not set(fine) <= set(names(defs)):
        writes_allowed_by_default(sut, fleets)
        raise fail(
            ("CAT-3.1",),
            "a tool whose qualified name obeys ^[A-Za-z0-9_-]{1,64}$ is not shown under that name",
            expected=fine,
            observed={"missing": sorted(set(fine) - set(names(defs)))},
            case=case,
        )
    broken = [n for n in names(defs) if not PROVIDER_NAME.match(n)]
    if broken:
        raise fail(
            ("CAT-5.1",),
            "definitions leave the host with names that break ^[A-Za-z0-9_-]{1,64}$",
            expected=[],
            observed=broken,
            case=case,
        )
    for exposed, tool, result, executed in mapped:
        want = [(tool["name"], example_arguments(tool))]
        if result["isError"] or executed != want:
            original_names_sent(served.ledger().calls())
            raise fail(
                ("CAT-5.2",),
                f"calling the mapped name {exposed!r} did not execute the original tool {tool['name']!r}",
                expected={"tools/call": want},
                observed={"result": result, "tools/call": executed},
                case=case,
            )


# Two tools whose qualified names break the provider rule (too long; one has a dot as well)
# and agree on far more than their first 55 characters: a mapping that only cuts names
# short gives both the same name.
_SHARED = "export_" + "quarterly_report_" * 4
LOOKALIKES = (
    ToolSpec(name=_SHARED + "as_csv", description="Exports the quarterly report as comma-separated values."),
    ToolSpec(name=_SHARED + "as.pdf", description="Exports the quarterly report as a printable document."),
)


@clause("CAT-5.2")
def test_mapped_names_of_tools_that_share_a_long_prefix_stay_apart(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="reports", tool_count=0, tools=LOOKALIKES),))
    with fleets.serve(spec, {"reports": {"mode": "all"}}) as served:
        case = served.describe()

        async def body() -> tuple[list[Definition], dict[str, list[Any]]]:
            async with sut.open(open_params(served.servers)) as r:
                defs = mcp_definitions(await r.definitions(), [])
                reached: dict[str, list[Any]] = {}
                for d in defs:
                    seen = len(served.ledger().calls("reports"))
                    result = await r.call(d["name"], {})
                    executed = [c.get("name") for c in served.ledger().calls("reports")[seen:]]
                    reached.setdefault(d["name"], []).append({"isError": result["isError"], "tools/call": executed})
                return defs, reached

        defs, reached = _mapped_or_left_out(body(), "two tools whose names share a long prefix", case)
    # Each tool is known by its description; a tool left out (ID-2) has no definition at all.
    original = {t.description: t.name for t in LOOKALIKES}
    exposed = {original[d["description"]]: d["name"] for d in defs if d.get("description") in original}
    want = {name: [{"isError": False, "tools/call": [tool]}] for tool, name in exposed.items()}
    if len(set(exposed.values())) != len(exposed) or {name: reached[name] for name in want} != want:
        original_names_sent(served.ledger().calls())
        raise fail(
            ("CAT-5.2",),
            "two tools whose names share a long prefix are not each reachable under a mapped name of their own",
            expected=want,
            observed={"exposed": exposed, "calls": reached},
            case=case,
        )
