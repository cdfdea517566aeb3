"""Policy names the server does not offer, omitted policy fields, and tool names that
break the provider rule: example-based checks over small explicit fleets."""

from __future__ import annotations

import re
from typing import Any

import pytest

from conformance import OutcomeError, Sut, clause
from conformance.suite._model import (
    DEFAULT_MAX_ACTIVE,
    DISCOVERY,
    catalog,
    fail,
    mcp_definitions,
    names,
    open_params,
    run,
)
from mock_servers import Faults, FleetSpec, ServerSpec, ToolSpec, example_arguments, generate_tools

PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_SERVER = ServerSpec(id="s0", tool_count=20)
_TOOLS = {t["name"]: t for t in generate_tools(_SERVER)}
_NAMES = list(_TOOLS)

# What is eligible when the policy names a tool the server does not offer: None when the
# run must look exactly like the same run without the unknown name.
UNKNOWN_NAMES: dict[str, tuple[dict[str, Any], dict[str, Any], set[str] | None]] = {
    "pinned-unknown": ({"pinnedTools": ["no_such_tool"]}, {}, None),
    "pinned-other-case": ({"pinnedTools": [_NAMES[0].upper()]}, {}, None),
    "pinned-qualified": ({"pinnedTools": [f"s0__{_NAMES[0]}"]}, {}, None),
    "allowlist-with-unknown": (
        {"mode": "allowlist", "allowedTools": [_NAMES[1], "no_such_tool"]},
        {"mode": "allowlist", "allowedTools": [_NAMES[1]]},
        {_NAMES[1]},
    ),
    "auto-allowed-unknown-only": ({"allowedTools": ["no_such_tool"]}, {}, set()),
    "auto-allowed-with-unknown": (
        {"allowedTools": [_NAMES[2], "no_such_tool"]},
        {"allowedTools": [_NAMES[2]]},
        {_NAMES[2]},
    ),
    "all-pinned-unknown": ({"mode": "all", "pinnedTools": ["no_such_tool"]}, {"mode": "all"}, None),
}


async def _observe(sut: Sut, servers: list[dict[str, Any]]) -> list[dict[str, Any]] | OutcomeError:
    """The definitions at open and after a discovery call naming ``s0``; or the refusal."""
    try:
        async with sut.open(open_params(servers)) as r:
            defs = await r.definitions()
            if DISCOVERY in names(defs):
                await r.call(DISCOVERY, {"query": "s0", "limit": 12})
            return defs + [d for d in await r.definitions() if d not in defs]
    except OutcomeError as exc:
        return exc


@clause("POL-8")
@pytest.mark.parametrize("name", sorted(UNKNOWN_NAMES))
def test_a_name_the_server_does_not_offer_brings_no_other_tool(sut: Sut, fleets: Any, name: str) -> None:
    policy, without, eligible = UNKNOWN_NAMES[name]
    spec = FleetSpec(servers=(_SERVER,))
    with fleets.serve(spec, {"s0": policy}) as served:
        case = served.describe()
        got = run(_observe(sut, served.servers))
        if isinstance(got, OutcomeError):
            if got.kind == "config_error":
                return  # ID-3: an error is one of the two allowed answers
            raise fail(
                ("POL-8",),
                "a policy name the server does not offer failed the run with an unexpected kind",
                expected="config_error, or a run without the name",
                observed=str(got),
                case=case,
            )
        baseline = run(_observe(sut, [{**served.servers[0], "policy": without}]))
    active = names(mcp_definitions(got, []))
    if eligible is not None:
        outside = sorted(set(active) - {f"s0__{n}" for n in eligible})
        if outside:
            raise fail(
                ("POL-8",),
                "a policy name the server does not offer brought other tools in its place",
                expected=sorted(f"s0__{n}" for n in eligible),
                observed=active,
                case=case,
            )
        return
    if isinstance(baseline, OutcomeError) or names(got) != names(baseline):
        raise fail(
            ("POL-8",),
            "a policy name the server does not offer changed which tools are active",
            expected=names(baseline) if not isinstance(baseline, OutcomeError) else str(baseline),
            observed=names(got),
            case=case | {"same run without the name": without},
        )


DEFAULTS: dict[str, Any] = {
    "mode": "auto",
    "allowedTools": [],
    "deniedTools": [],
    "pinnedTools": [],
    "maxActiveTools": DEFAULT_MAX_ACTIVE,
    "sideEffects": "allow",
}
EXPLICIT_DEFAULTS = {
    "every-field": DEFAULTS,
    "mode-only": {"mode": "auto"},
    "lists-only": {k: DEFAULTS[k] for k in ("allowedTools", "deniedTools", "pinnedTools")},
    "max-active-only": {"maxActiveTools": DEFAULT_MAX_ACTIVE},
    "side-effects-only": {"sideEffects": "allow"},
}


async def _up_to_max_active(sut: Sut, servers: list[dict[str, Any]]) -> list[list[str]]:
    """Definition names at open and after each discovery call naming a server, until the
    servers reach their maxActiveTools."""
    seen = []
    async with sut.open(open_params(servers, user="")) as r:
        seen.append(names(await r.definitions()))
        for _ in range(3):
            for server in servers:
                await r.call(DISCOVERY, {"query": server["id"], "server_ids": [server["id"]], "limit": 12})
                seen.append(names(await r.definitions()))
    return seen


@clause("POL-9")
@pytest.mark.parametrize("name", sorted(EXPLICIT_DEFAULTS))
def test_omitted_policy_fields_behave_as_their_defaults(sut: Sut, fleets: Any, name: str) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=40), ServerSpec(id="s1", tool_count=30)), seed=5)
    explicit = EXPLICIT_DEFAULTS[name]
    with fleets.serve(spec) as served:
        case = served.describe() | {"explicit policy": explicit}
        omitted = run(_up_to_max_active(sut, served.servers))
        given = run(_up_to_max_active(sut, [{**s, "policy": dict(explicit)} for s in served.servers]))
    if omitted != given:
        step = next(i for i, (a, b) in enumerate(zip(omitted, given, strict=False)) if a != b)
        raise fail(
            ("POL-9",),
            "an empty policy and the same policy with its defaults written out gave different definitions",
            expected={"step": step, "definitions": omitted[step]},
            observed={"step": step, "definitions": given[step]},
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
)
BAD_NAME_FLEETS = {
    "generated": FleetSpec(
        servers=(ServerSpec(id="s0", tool_count=10, faults=Faults(bad_names=BAD_NAME_KINDS)),), seed=2
    ),
    "explicit": FleetSpec(servers=(ServerSpec(id="names", tool_count=0, tools=_EXPLICIT_BAD),)),
}


@clause("CAT-5")
@pytest.mark.parametrize("mode", ["all", "auto"])
@pytest.mark.parametrize("fleet", sorted(BAD_NAME_FLEETS))
def test_no_definition_breaks_the_provider_name_rule(sut: Sut, fleets: Any, fleet: str, mode: str) -> None:
    spec = BAD_NAME_FLEETS[fleet]
    sid = spec.servers[0].id
    with fleets.serve(spec, {sid: {"mode": mode}}) as served:
        case = served.describe()
        cat = catalog(served.tools)
        tools = served.tools[sid]

        async def body() -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any], Any, Any]]]:
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

        try:
            defs, mapped = run(body())
        except OutcomeError as exc:
            raise fail(
                ("CAT-5",),
                "a tool name that breaks the provider rule failed the run instead of being mapped or left out",
                observed=str(exc),
                case=case,
            ) from None
    broken = [n for n in names(defs) if not PROVIDER_NAME.match(n)]
    if broken:
        raise fail(
            ("CAT-5",),
            "definitions leave the host with names that break ^[A-Za-z0-9_-]{1,64}$",
            expected=[],
            observed=broken,
            case=case,
        )
    for exposed, tool, result, executed in mapped:
        want = [(tool["name"], example_arguments(tool))]
        if result["isError"] or executed != want:
            raise fail(
                ("CAT-5",),
                f"calling the mapped name {exposed!r} did not execute the original tool {tool['name']!r}",
                expected={"tools/call": want},
                observed={"result": result, "tools/call": executed},
                case=case,
            )


# A base tool named like a tool of the run: (policy of s0, the base tool's name). The tool is
# active (pinned), in the catalog but never active (denied), or the discovery tool, with and
# without an auto server to register it.
BASE_COLLISIONS: dict[str, tuple[dict[str, Any], str]] = {
    "active-mcp-tool": ({"pinnedTools": [_NAMES[0]]}, f"s0__{_NAMES[0]}"),
    "inactive-mcp-tool": ({"deniedTools": [_NAMES[1]]}, f"s0__{_NAMES[1]}"),
    "discovery-tool": ({}, DISCOVERY),
    "discovery-tool-unregistered": ({"mode": "all", "maxActiveTools": 20}, DISCOVERY),
}


@clause("DEF-5")
@pytest.mark.parametrize("name", sorted(BASE_COLLISIONS))
def test_a_base_tool_named_like_a_tool_of_the_run_is_a_config_error(sut: Sut, fleets: Any, name: str) -> None:
    policy, colliding = BASE_COLLISIONS[name]
    base = [{"name": colliding, "description": "A built-in tool.", "inputSchema": {"type": "object"}}]
    with fleets.serve(FleetSpec(servers=(_SERVER,)), {"s0": policy}) as served:
        case = served.describe() | {"baseTools": base}

        async def body() -> None:
            try:
                async with sut.open(open_params(served.servers, base)) as r:
                    defs = await r.definitions()
                    tool = _TOOLS.get(colliding.removeprefix("s0__"), {"inputSchema": {"type": "object"}})
                    result = await r.call(colliding, example_arguments(tool))
            except OutcomeError as exc:
                if exc.kind != "config_error" or colliding not in exc.message:
                    raise fail(
                        ("DEF-5",),
                        f"the run with a base tool named {colliding!r} failed, but not with a config_error naming it",
                        expected=f"config_error naming {colliding!r}",
                        observed=str(exc),
                        case=case,
                    ) from None
                return
            reached = served.ledger().calls("s0")
            raise fail(
                ("DEF-5",),
                f"a run opened with a base tool named {colliding!r}"
                + (", and a call by that name reached the server" if reached else ""),
                expected=f"config_error naming {colliding!r}",
                observed={"definitions": names(defs), "call": result, "server calls": reached},
                case=case,
            )

        run(body())
