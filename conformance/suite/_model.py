"""What the specification lets the suite predict, computed without any ranker.

Policy (POL-*), the first-round count (SEL-1, SEL-2) and the budgets (BUD-*) are fully
determined by the servers' listings, the policies and the number of base tools, so the
suite computes them here and compares the SUT's definitions against them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import strategies as st

from conformance._errors import Nonconformance
from conformance._properties import property_settings
from mock_servers import FleetSpec, ServerSpec
from mock_servers.strategies import fleet_specs, tool_policies

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])

DISCOVERY = "search_mcp_tools"
FIRST_ROUND = 96
DYNAMIC = 112
REQUEST = 128
DEFAULT_MAX_ACTIVE = 24
FIRST_ROUND_SERVER_CAP = 12


def examples(n: int) -> Callable[[_F], _F]:
    """Settings for a property over served fleets that draws ``n`` examples at default thoroughness.

    Explicit ``@example`` cases always run first; the run's thoroughness scales ``n``.
    """
    return property_settings(n)


def run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run one example's async body in a fresh event loop."""
    return asyncio.run(coro)


def base_tools(count: int, prefix: str = "base") -> list[dict[str, Any]]:
    """``count`` non-MCP tool definitions with names no MCP tool can take."""
    return [
        {
            "name": f"{prefix}_{i}",
            "description": f"Built-in helper number {i}.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
        for i in range(count)
    ]


def qualified(server_id: str, name: str) -> str:
    return f"{server_id}__{name}"


def open_params(
    servers: Sequence[Mapping[str, Any]],
    base: Sequence[Mapping[str, Any]] = (),
    user: str = "",
    system: str = "",
) -> dict[str, Any]:
    return {"servers": list(servers), "baseTools": list(base), "userMessage": user, "systemPrompt": system}


def _deny_a_pinned_tool(policy: dict[str, Any], deny: bool) -> dict[str, Any]:
    """``policy`` with its first pinned tool also denied, when ``deny`` (POL-2, POL-7)."""
    pinned = policy.get("pinnedTools") or []
    if not deny or not pinned:
        return policy
    denied = list(policy.get("deniedTools") or [])
    return {**policy, "deniedTools": [*denied, pinned[0]] if pinned[0] not in denied else denied}


def server_policies(server: ServerSpec, *, unknown_names: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """A wire policy for ``server``; now and then a tool is both pinned and denied."""
    return st.tuples(tool_policies(server, unknown_names=unknown_names), st.booleans()).map(
        lambda drawn: _deny_a_pinned_tool(*drawn)
    )


def fleets_with_policies(
    *, unknown_names: bool = False, **fleet_kwargs: Any
) -> st.SearchStrategy[tuple[FleetSpec, dict[str, dict[str, Any]]]]:
    """A fleet and a wire policy for each of its servers."""
    return fleet_specs(**fleet_kwargs).flatmap(
        lambda spec: st.tuples(
            st.just(spec),
            st.fixed_dictionaries({s.id: server_policies(s, unknown_names=unknown_names) for s in spec.servers}),
        )
    )


def read_only(tool: Mapping[str, Any]) -> bool:
    annotations = tool.get("annotations")
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


@dataclass
class ServerModel:
    """One server's policy consequences."""

    id: str
    mode: str
    max_active: int
    eligible: list[str]
    required: list[str]
    pinned_not_eligible: list[str] = field(default_factory=list)

    @property
    def first_round_cap(self) -> int:
        return max(len(self.required), min(FIRST_ROUND_SERVER_CAP, self.max_active))

    @property
    def ranked_room(self) -> int:
        """How many ranked tools the first round may take from this server."""
        if self.mode != "auto":
            return 0
        return max(0, min(len(self.eligible) - len(self.required), self.first_round_cap - len(self.required)))


def server_model(server_id: str, tools: Iterable[Mapping[str, Any]], policy: Mapping[str, Any]) -> ServerModel:
    mode = policy.get("mode", "auto")
    allowed = set(policy.get("allowedTools", []))
    denied = set(policy.get("deniedTools", []))
    pinned = set(policy.get("pinnedTools", []))
    read_only_only = policy.get("sideEffects", "allow") == "readOnly"
    eligible = []
    for tool in tools:
        name = tool["name"]
        if name in denied:
            continue
        if mode == "allowlist" and name not in allowed:
            continue
        if mode == "auto" and allowed and name not in allowed:
            continue
        if read_only_only and not read_only(tool):
            continue
        eligible.append(name)
    required = [n for n in eligible if mode != "auto" or n in pinned]
    return ServerModel(
        id=server_id,
        mode=mode,
        max_active=policy.get("maxActiveTools", DEFAULT_MAX_ACTIVE),
        eligible=eligible,
        required=required,
        pinned_not_eligible=sorted(pinned - set(eligible)),
    )


@dataclass
class FirstRound:
    """What the first round must look like, or the error it must fail with."""

    servers: dict[str, ServerModel]
    base: int
    discovery: bool
    error: str | None  # "selection_error" or None
    why: str
    mcp_count: int

    @property
    def capacity(self) -> int:
        return FIRST_ROUND - self.base - int(self.discovery)

    @property
    def dynamic_capacity(self) -> int:
        return DYNAMIC - self.base - int(self.discovery)


def first_round(
    tools: Mapping[str, Sequence[Mapping[str, Any]]], policies: Mapping[str, Mapping[str, Any]], base: int
) -> FirstRound:
    servers = {sid: server_model(sid, tools[sid], policies.get(sid, {})) for sid in tools}
    discovery = any(m.mode == "auto" for m in servers.values())
    capacity = FIRST_ROUND - base - int(discovery)
    error, why = None, ""
    required_total = sum(len(m.required) for m in servers.values())
    over = [m.id for m in servers.values() if len(m.required) > m.max_active]
    if capacity < 0:
        error, why = "selection_error", f"first-round capacity {capacity} < 0 (BUD-4)"
    elif over:
        error, why = "selection_error", f"required tools over maxActiveTools on {over} (ERR-1)"
    elif required_total > capacity:
        error, why = "selection_error", f"{required_total} required tools > capacity {capacity} (ERR-2)"
    count = 0
    if error is None:
        count = required_total + min(capacity - required_total, sum(m.ranked_room for m in servers.values()))
    return FirstRound(servers, base, discovery, error, why, count)


def mcp_definitions(defs: Sequence[Mapping[str, Any]], base_names: Iterable[str]) -> list[Mapping[str, Any]]:
    skip = set(base_names) | {DISCOVERY}
    return [d for d in defs if d["name"] not in skip]


def names(defs: Iterable[Mapping[str, Any]]) -> list[str]:
    return [d["name"] for d in defs]


def catalog(tools: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Qualified name → (server id, wire tool)."""
    return {qualified(sid, t["name"]): (sid, t) for sid, ts in tools.items() for t in ts}


def fail(
    clauses: Sequence[str], message: str, *, expected: object = None, observed: object = None, case: Any = None
) -> Nonconformance:
    return Nonconformance(clauses, message, expected=expected, observed=observed, case=case)


def result_text(result: Mapping[str, Any]) -> str:
    return " ".join(str(c.get("text", "")) for c in result.get("content", []) if isinstance(c, Mapping))


#: Ledger fields that change from run to run (processes, clocks, session ids).
_VOLATILE = frozenset({"pid", "ts", "seq", "sessionId"})


def portable(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Ledger events without what changes between runs, for a finding's ``observed``."""
    return [{k: v for k, v in e.items() if k not in _VOLATILE} for e in events]
