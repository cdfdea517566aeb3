"""The first round over generated fleets and policies: budgets, policy, required tools,
fairness and fill, the discovery tool's presence, and what a definition carries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar, cast

from hypothesis import example, given
from hypothesis import strategies as st

from conformance import OutcomeError, Sut, clause
from conformance.suite._model import (
    DISCOVERY,
    FIRST_ROUND,
    base_tools,
    catalog,
    examples,
    fail,
    first_round,
    fleets_with_policies,
    mcp_definitions,
    names,
    open_params,
    run,
)
from mock_servers import AnnotationMix, FleetSpec, ServerSpec, generate_tools

FLEETS = fleets_with_policies(max_servers=3, max_tools=30)
BASES = st.integers(0, 8) | st.integers(60, 97)


def _auto(*tool_counts: int, **policy: Any) -> tuple[FleetSpec, dict[str, dict[str, Any]]]:
    """``len(tool_counts)`` servers ``s0``, ``s1``… with the same policy (``auto`` unless given)."""
    spec = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, n in enumerate(tool_counts)), seed=7)
    return spec, {s.id: dict(policy) for s in spec.servers}


# Fleets whose first round fills the 96 definitions exactly (base tools, the discovery
# tool and as many ranked tools as the capacity takes): one definition more shows.
FULL_FIRST_ROUNDS = [
    (_auto(20), 90),  # capacity 5 of 20 eligible tools
    (_auto(20, 20, 20), 60),  # capacity 35 of 36 first-round places
    (_auto(30, 30, 30, 30, 30), 47),  # capacity 48 of 60 first-round places
    (_auto(3, 40), 94),  # capacity 1
]
# Servers with more than 12 eligible tools and a maxActiveTools above 12.
OVER_FAIRNESS_CAP = [
    (_auto(30), 0),
    (_auto(25, 25, maxActiveTools=40), 3),
    (_auto(20, 4, maxActiveTools=96), 0),
]
_S0 = [t["name"] for t in generate_tools(ServerSpec(id="s0", tool_count=10))]
# A tool both pinned and denied, in every mode.
PINNED_AND_DENIED = [
    ((FleetSpec(servers=(ServerSpec(id="s0", tool_count=10),)), {"s0": policy}), 0)
    for policy in (
        {"pinnedTools": [_S0[0]], "deniedTools": [_S0[0]]},
        {"mode": "all", "pinnedTools": [_S0[0], _S0[1]], "deniedTools": [_S0[1]]},
        {"mode": "allowlist", "allowedTools": _S0[:3], "pinnedTools": [_S0[2]], "deniedTools": [_S0[2]]},
        {"mode": "auto", "allowedTools": _S0[:4], "pinnedTools": [_S0[3]], "deniedTools": [_S0[3]]},
    )
]


# Read-only over a server whose tools are marked true, false or not at all, at random:
# only the ones marked true may become active (POL-5), in every mode.
READ_ONLY_MIXED = [
    (
        (
            FleetSpec(
                servers=(
                    ServerSpec(
                        id="s0",
                        tool_count=20,
                        annotations=AnnotationMix(read_only=0.4, writable=0.3, none=0.3, follow_names=False),
                    ),
                )
            ),
            {"s0": {"mode": mode, "sideEffects": "readOnly"}},
        ),
        0,
    )
    for mode in ("auto", "all")
]


_F = TypeVar("_F", bound=Callable[..., None])


def with_examples(cases: list[tuple[Any, int]]) -> Callable[[_F], _F]:
    """Decorate a ``(fleet, base_count)`` property with each case as an explicit example."""

    def decorate(test: _F) -> _F:
        for fleet, base_count in reversed(cases):
            test = example(fleet=fleet, base_count=base_count)(test)
        return test

    return decorate


def observe(sut: Sut, fleets: Any, spec: Any, policies: Any, base_count: int) -> tuple[Any, Any, dict[str, Any]]:
    """Open a run and read its first definitions: (model, definitions or OutcomeError, case)."""
    base = base_tools(base_count)
    with fleets.serve(spec, policies) as fleet:
        model = first_round(fleet.tools, fleet.policies, base_count)
        case = {**fleet.describe(), "baseTools": len(base), "model": model.why or f"{model.mcp_count} MCP tools"}

        async def body() -> Any:
            try:
                async with sut.open(open_params(fleet.servers, base)) as r:
                    return await r.definitions()
            except OutcomeError as exc:
                return exc

        return model, run(body()), {**case, "tools": fleet.tools}


def _defs(model: Any, got: Any, case: dict[str, Any], clauses: tuple[str, ...]) -> list[dict[str, Any]] | None:
    """The definitions, or None when the run was (rightly) refused; refusals that the
    model does not predict, and acceptances it does not allow, are findings."""
    if isinstance(got, OutcomeError):
        if model.error is None:
            raise fail(
                clauses,
                "run.open refused a run that fits every budget and cap",
                expected="an open run",
                observed=str(got),
                case=_short(case),
            )
        if got.kind != model.error:
            raise fail(
                clauses, f"run.open refused with {got.kind}", expected=model.error, observed=str(got), case=_short(case)
            )
        return None
    if model.error is not None:
        if clauses_not_about_errors(clauses):
            return None
        _raise_accepted(model, got, case, clauses)
    return cast(list[dict[str, Any]], got)


def clauses_not_about_errors(clauses: tuple[str, ...]) -> bool:
    return not any(c in ("BUD-4", "ERR-1", "ERR-2", "POL-6", "POL-7") for c in clauses)


def _raise_accepted(model: Any, got: Any, case: dict[str, Any], clauses: tuple[str, ...]) -> NoReturn:
    raise fail(
        clauses,
        "run.open accepted a run that must fail",
        expected=f"{model.error}: {model.why}",
        observed=names(got),
        case=_short(case),
    )


def _short(case: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in case.items() if k != "tools"}


@clause("BUD-1")
@examples(12)
@given(FLEETS, BASES)
@with_examples(FULL_FIRST_ROUNDS)
def test_first_request_carries_at_most_96_definitions(sut: Sut, fleets: Any, fleet: Any, base_count: int) -> None:
    spec, policies = fleet
    model, got, case = observe(sut, fleets, spec, policies, base_count)
    defs = _defs(model, got, case, ("BUD-1",))
    if defs is not None and len(defs) > FIRST_ROUND:
        raise fail(
            ("BUD-1",),
            "the first request carries too many definitions",
            expected=f"<= {FIRST_ROUND}",
            observed=len(defs),
            case=_short(case),
        )


@clause("BUD-4", "ERR-1", "ERR-2", "POL-6", "POL-7")
@examples(15)
@given(FLEETS, BASES)
def test_required_tools_all_present_or_selection_error(sut: Sut, fleets: Any, fleet: Any, base_count: int) -> None:
    spec, policies = fleet
    model, got, case = observe(sut, fleets, spec, policies, base_count)
    clauses = ("BUD-4", "ERR-1", "ERR-2", "POL-6", "POL-7")
    defs = _defs(model, got, case, clauses)
    if defs is None:
        return
    shown = set(names(defs))
    missing = [f"{m.id}__{n}" for m in model.servers.values() for n in m.required if f"{m.id}__{n}" not in shown]
    if missing:
        raise fail(
            ("POL-6",),
            "required tools are missing from the first round",
            expected=[],
            observed=missing,
            case=_short(case),
        )


@clause("POL-1", "POL-2", "POL-3", "POL-4", "POL-5")
@examples(15)
@given(FLEETS, BASES)
@with_examples(PINNED_AND_DENIED + READ_ONLY_MIXED)
def test_only_eligible_tools_are_active(sut: Sut, fleets: Any, fleet: Any, base_count: int) -> None:
    spec, policies = fleet
    model, got, case = observe(sut, fleets, spec, policies, base_count)
    defs = _defs(model, got, case, ("POL-1",))
    if defs is None:
        return
    cat = catalog(case["tools"])
    base = names(base_tools(base_count))
    for d in mcp_definitions(defs, base):
        if d["name"] not in cat:
            raise fail(
                ("POL-1", "DEF-1"), "a definition names no tool of the catalog", observed=d["name"], case=_short(case)
            )
        sid, tool = cat[d["name"]]
        m = model.servers[sid]
        if tool["name"] not in m.eligible:
            pol = case["policies"][sid]
            clauses = ["POL-1"]
            if tool["name"] in pol.get("deniedTools", []):
                clauses.append("POL-2")
            if pol.get("sideEffects") == "readOnly":
                clauses.append("POL-5")
            if pol.get("mode") == "allowlist":
                clauses.append("POL-3")
            if pol.get("mode", "auto") == "auto" and pol.get("allowedTools"):
                clauses.append("POL-4")
            raise fail(
                clauses,
                f"{d['name']} is active although the policy of {sid} does not admit it",
                expected=f"eligible tools of {sid}: {m.eligible}",
                observed={"tool": tool["name"], "annotations": tool.get("annotations")},
                case=_short(case),
            )


@clause("SEL-1", "SEL-2")
@examples(15)
@given(FLEETS, BASES)
@with_examples(OVER_FAIRNESS_CAP + FULL_FIRST_ROUNDS)
def test_first_round_fills_to_the_policy_determined_count(sut: Sut, fleets: Any, fleet: Any, base_count: int) -> None:
    spec, policies = fleet
    model, got, case = observe(sut, fleets, spec, policies, base_count)
    defs = _defs(model, got, case, ("SEL-2",))
    if defs is None:
        return
    mcp = mcp_definitions(defs, names(base_tools(base_count)))
    per_server: dict[str, int] = {}
    for d in mcp:
        sid = d["name"].split("__", 1)[0]
        per_server[sid] = per_server.get(sid, 0) + 1
    for sid, m in model.servers.items():
        if per_server.get(sid, 0) > m.first_round_cap:
            raise fail(
                ("SEL-1",),
                f"{sid} has more first-round tools than its fairness cap",
                expected=f"<= max(required {len(m.required)}, min(12, maxActiveTools {m.max_active}))",
                observed=per_server.get(sid, 0),
                case=_short(case),
            )
    if len(mcp) != model.mcp_count:
        raise fail(
            ("SEL-2",),
            "the first round did not fill to the count policy and budgets determine",
            expected=model.mcp_count,
            observed={"count": len(mcp), "active": names(mcp)},
            case=_short(case),
        )


@clause("DSC-1", "DSC-2")
@examples(10)
@given(FLEETS, st.integers(0, 5))
def test_discovery_tool_registered_exactly_with_an_auto_server(
    sut: Sut, fleets: Any, fleet: Any, base_count: int
) -> None:
    spec, policies = fleet
    model, got, case = observe(sut, fleets, spec, policies, base_count)
    defs = _defs(model, got, case, ("DSC-1",))
    if defs is None:
        return
    found = [d for d in defs if d["name"] == DISCOVERY]
    if bool(found) != model.discovery:
        raise fail(
            ("DSC-1",),
            "the discovery tool's presence does not match the servers' modes",
            expected=model.discovery,
            observed=bool(found),
            case=_short(case),
        )
    if found:
        schema = found[0]["inputSchema"]
        props = schema.get("properties", {})
        ok = (
            schema.get("type") == "object"
            and props.get("query", {}).get("type") == "string"
            and "query" in schema.get("required", [])
            and props.get("server_ids", {}).get("type") == "array"
            and props.get("server_ids", {}).get("items", {}).get("type") == "string"
            and props.get("limit", {}).get("type") == "integer"
            and "server_ids" not in schema.get("required", [])
            and "limit" not in schema.get("required", [])
        )
        if not ok:
            raise fail(
                ("DSC-2",),
                "the discovery tool's input schema is not as specified",
                expected="object; required string query; optional string-array server_ids, integer limit",
                observed=schema,
            )


@clause("DEF-1", "CAT-3", "DEF-4")
@examples(10)
@given(FLEETS, st.integers(0, 5))
def test_definitions_are_base_discovery_and_active_tools_with_listed_schemas(
    sut: Sut, fleets: Any, fleet: Any, base_count: int
) -> None:
    spec, policies = fleet
    base = base_tools(base_count)
    with fleets.serve(spec, policies) as served:
        model = first_round(served.tools, served.policies, base_count)
        if model.error:
            return
        case = served.describe()

        async def body() -> tuple[Any, Any]:
            async with sut.open(open_params(served.servers, base)) as r:
                return await r.definitions(), await r.definitions()

        first, second = run(body())
    if first != second:
        raise fail(
            ("DEF-4",), "two reads of an unchanged run differ", expected=names(first), observed=names(second), case=case
        )
    got_names = names(first)
    if len(set(got_names)) != len(got_names):
        raise fail(("DEF-1",), "a definition appears twice", observed=got_names, case=case)
    for b in base:
        if b not in first:
            raise fail(("DEF-1",), "a base tool is missing or altered", expected=b, observed=got_names, case=case)
    cat = catalog(served.tools)
    for d in mcp_definitions(first, names(base)):
        if d["name"] not in cat:
            raise fail(
                ("DEF-1", "CAT-3"),
                "a definition is neither a base tool, the discovery tool nor a qualified "
                "MCP tool name (serverId__toolName)",
                observed=d["name"],
                case=case,
            )
        _, tool = cat[d["name"]]
        if d["description"] != tool.get("description", "") or d["inputSchema"] != tool["inputSchema"]:
            raise fail(
                ("DEF-1",),
                f"{d['name']} does not carry the description and schema its server listed",
                expected={"description": tool.get("description"), "inputSchema": tool["inputSchema"]},
                observed={"description": d["description"], "inputSchema": d["inputSchema"]},
                case=case,
            )
