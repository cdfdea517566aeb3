"""What the specification lets the suite predict, computed without any ranker.

Policy (POL-*), the first-round count (SEL-1, SEL-2), the budgets (BUD-*) and the
refusals they imply (ERR-1, ERR-2, BUD-4) are fully determined by the servers' listings,
the policies and the number of base tools. The suite computes them here, before any fleet
is served, and compares what the SUT does against them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from conformance._wire_types import ToolPolicy
from mock_servers import ListedTool

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_ACTIVE",
    "DYNAMIC",
    "FIRST_ROUND",
    "FIRST_ROUND_SERVER_CAP",
    "MAX_LIMIT",
    "REQUEST",
    "FirstRound",
    "ServerModel",
    "Tools",
    "discovery_bound",
    "first_round",
    "read_only",
    "server_model",
]

FIRST_ROUND: Final = 96
DYNAMIC: Final = 112
REQUEST: Final = 128
DEFAULT_MAX_ACTIVE: Final = 24
FIRST_ROUND_SERVER_CAP: Final = 12
DEFAULT_LIMIT: Final = 6
MAX_LIMIT: Final = 12

#: Each server's listing: server id -> the tools it lists.
Tools = Mapping[str, Sequence[ListedTool]]
Refusal = Literal["selection_error"]


def read_only(tool: ListedTool) -> bool:
    """POL-5.1: the annotations carry ``readOnlyHint`` equal to the JSON value ``true``."""
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
    #: Pinned tools the server offers and its policy excludes (POL-7), which a run may be
    #: refused for (ID-9).
    excluded_pins: list[str] = field(default_factory=list)
    #: SEL-1.1's reading (ID-10): whether the cap of 12 counts the required tools.
    cap_counts_required: bool = True

    @property
    def first_round_cap(self) -> int:
        """SEL-1.1: ``max(required, min(12, maxActiveTools))``, or ``min(maxActiveTools,
        required + 12)`` where the cap of 12 counts only the ranked tools."""
        if self.cap_counts_required:
            return max(len(self.required), min(FIRST_ROUND_SERVER_CAP, self.max_active))
        return min(self.max_active, len(self.required) + FIRST_ROUND_SERVER_CAP)

    @property
    def ranked_room(self) -> int:
        """How many ranked tools the first round may take from this server (SEL-2.3)."""
        if self.mode != "auto":
            return 0
        return max(0, min(len(self.eligible) - len(self.required), self.first_round_cap - len(self.required)))


def server_model(
    server_id: str, tools: Iterable[ListedTool], policy: ToolPolicy, *, cap_counts_required: bool = True
) -> ServerModel:
    """POL-1..POL-7 and POL-9 for one server, and its first-round cap under SEL-1.1's reading."""
    tools = list(tools)
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
        excluded_pins=sorted((pinned & {t["name"] for t in tools}) - set(eligible)),
        cap_counts_required=cap_counts_required,
    )


@dataclass
class FirstRound:
    """What the first round must look like, or the error it must fail with."""

    servers: dict[str, ServerModel]
    base: int
    discovery: bool
    error: Refusal | None
    #: The sentence the refusal comes from ("BUD-4.1", "ERR-1.1", "ERR-2.1"), and why.
    error_sentence: str
    why: str
    mcp_count: int

    @property
    def capacity(self) -> int:
        """BUD-1.2: the first-round MCP capacity."""
        return FIRST_ROUND - self.base - int(self.discovery)

    @property
    def dynamic_capacity(self) -> int:
        """BUD-2.2: the dynamic MCP capacity."""
        return DYNAMIC - self.base - int(self.discovery)

    @property
    def auto_servers(self) -> list[str]:
        return [sid for sid, m in self.servers.items() if m.mode == "auto"]

    def refused_for_a_pin(self, kind: str, message: str) -> bool:
        """POL-7 (ID-9): a run with a pinned tool its policy excludes may be refused with a
        configuration or selection error naming that tool, whatever else it would do."""
        pins = [pin for m in self.servers.values() for pin in m.excluded_pins]
        return kind in ("config_error", "selection_error") and any(pin in message for pin in pins)

    def without_excluded_pins(self, policies: Mapping[str, ToolPolicy]) -> dict[str, ToolPolicy]:
        """``policies`` without the pinned tools they exclude. Such a pin is never required
        nor active (POL-7), so this is the same first round, the one a host that refuses
        such pins (ID-9) opens: a check meant for an open run reopens it so."""
        kept: dict[str, ToolPolicy] = {}
        for sid, policy in policies.items():
            excluded = set(self.servers[sid].excluded_pins) if sid in self.servers else set()
            kept[sid] = policy.copy()
            if excluded and "pinnedTools" in policy:
                kept[sid]["pinnedTools"] = [name for name in policy["pinnedTools"] if name not in excluded]
        return kept


def first_round(
    tools: Tools, policies: Mapping[str, ToolPolicy], base: int, *, cap_counts_required: bool = True
) -> FirstRound:
    """The first round the specification determines for these listings, policies and base
    tools, under one reading of SEL-1.1's cap of 12 (ID-10)."""
    servers = {
        sid: server_model(sid, tools[sid], policies.get(sid, {}), cap_counts_required=cap_counts_required)
        for sid in tools
    }
    discovery = any(m.mode == "auto" for m in servers.values())
    capacity = FIRST_ROUND - base - int(discovery)
    error: Refusal | None = None
    sentence, why = "", ""
    required_total = sum(len(m.required) for m in servers.values())
    over = [m.id for m in servers.values() if len(m.required) > m.max_active]
    if capacity < 0:
        error, sentence, why = "selection_error", "BUD-4.1", f"first-round capacity {capacity} < 0"
    elif over:
        error, sentence, why = "selection_error", "ERR-1.1", f"required tools over maxActiveTools on {over}"
    elif required_total > capacity:
        error, sentence, why = "selection_error", "ERR-2.1", f"{required_total} required tools > capacity {capacity}"
    count = 0
    if error is None:
        count = required_total + min(capacity - required_total, sum(m.ranked_room for m in servers.values()))
    return FirstRound(servers, base, discovery, error, sentence, why, count)


def discovery_bound(limit: int | None, room: int) -> int:
    """DSC-5.1–5.4: the most one call may activate for a valid ``limit`` with ``room`` left."""
    asked = DEFAULT_LIMIT if limit is None else min(limit, MAX_LIMIT)
    return max(0, min(asked, room))
