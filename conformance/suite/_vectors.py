"""The lexical vectors (``conformance/vectors/lexical.json``) and the runs that observe them.

An implementation's definition order is its own (ID-1), so the suite observes rankings
through behaviour, one run (a *probe*) at a time:

- The first round. With ``95 - k`` base tools the first-round MCP capacity is ``k``, and
  the first round takes the best ``k`` tools of one global ranking (SEL-5): the active
  MCP tools are the ``k``-prefix of the case's first-round order.
- Discovery. With the first round full, the room under the dynamic watermark is 16. A
  discovery call with ``limit`` 1 activates the best candidate not active yet (DSC-10),
  so a sequence of calls reveals the discovery order one tool at a time, and once every
  relevant tool is active the next call activates nothing. An order longer than 16 is
  revealed in chunks: for a later chunk the tools of the earlier ones are pinned, so that
  they are active from the first round and take its whole capacity.

A score depends only on the tool, the message and the system prompt, never on the other
tools, so a run over some of the catalog's servers observes the orders restricted to
those servers. Each probe serves only the servers it needs, and one probe carries the
discovery checks of several cases that share its system prompt when their tools do not
overlap; the plan is computed from the vectors alone, so it is the same in every run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Final

from conformance.suite._predictions import DEFAULT_MAX_ACTIVE, DYNAMIC, FIRST_ROUND, FIRST_ROUND_SERVER_CAP

__all__ = [
    "ROOM",
    "DiscoveryCheck",
    "FirstRoundCheck",
    "Probe",
    "VectorCase",
    "VectorGroup",
    "VectorTool",
    "load_vectors",
    "plan",
    "walk",
]

#: Discovery room in a run whose first round is full: the dynamic capacity minus the first-round one.
ROOM: Final = DYNAMIC - FIRST_ROUND
#: The most base tools a run may have with the discovery tool registered (capacity 0).
_MAX_BASE: Final = FIRST_ROUND - 1
_PROVIDER_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class VectorTool:
    """A tool of a vector catalog, as its server lists it."""

    server: str
    name: str
    description: str
    annotations: Mapping[str, Any] | None

    @property
    def qualified(self) -> str:
        return f"{self.server}__{self.name}"


@dataclass(frozen=True, slots=True)
class VectorCase:
    """One message with its expected scores and orders."""

    id: str
    description: str
    clauses: tuple[str, ...]
    system_prompt: str
    user_message: str
    # Qualified name -> {"score": int, and the components that are not zero}.
    scores: Mapping[str, Mapping[str, Any]]
    first_round: tuple[str, ...]
    discovery: tuple[str, ...]

    def score(self, name: str) -> int:
        return int(self.scores[name]["score"])

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "description": self.description,
            "userMessage": self.user_message,
            "systemPrompt": self.system_prompt,
        }


@dataclass(frozen=True, slots=True)
class VectorGroup:
    """A catalog and the cases scored against it."""

    id: str
    description: str
    tools: tuple[VectorTool, ...]
    cases: tuple[VectorCase, ...]

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(tool.server for tool in self.tools))

    @property
    def servable(self) -> bool:
        """Whether every qualified name suits every provider, so no implementation maps it (ID-2)."""
        return all(_PROVIDER_NAME.fullmatch(tool.qualified) for tool in self.tools)

    def tool(self, qualified: str) -> VectorTool | None:
        return next((tool for tool in self.tools if tool.qualified == qualified), None)

    def server_of(self, qualified: str) -> str:
        return next(tool.server for tool in self.tools if tool.qualified == qualified)


def _number(case: VectorCase) -> str:
    return case.id.rsplit("-", 1)[-1]


def _group(raw: Mapping[str, Any]) -> VectorGroup:
    tools = tuple(
        VectorTool(server["id"], tool["name"], tool["description"], tool.get("annotations"))
        for server in raw["catalog"]
        for tool in server["tools"]
    )
    cases = tuple(
        VectorCase(
            id=case["id"],
            description=case["description"],
            clauses=tuple(case["clauses"]),
            system_prompt=case["systemPrompt"],
            user_message=case["userMessage"],
            scores=case["scores"],
            first_round=tuple(case["firstRound"]),
            discovery=tuple(case["discovery"]),
        )
        for case in raw["cases"]
    )
    return VectorGroup(raw["id"], raw["description"], tools, cases)


@cache
def load_vectors() -> tuple[VectorGroup, ...]:
    """The groups of the shipped ``vectors/lexical.json``."""
    text = resources.files("conformance").joinpath("vectors", "lexical.json").read_text(encoding="utf-8")
    return tuple(_group(raw) for raw in json.loads(text)["groups"])


def walk(order: Sequence[str], capacity: int, server_of: Mapping[str, str]) -> list[str]:
    """What a first round of ``capacity`` takes from ``order`` (SEL-5) under the default policy."""
    cap = min(FIRST_ROUND_SERVER_CAP, DEFAULT_MAX_ACTIVE)
    taken: list[str] = []
    per_server: dict[str, int] = {}
    for name in order:
        if len(taken) == capacity:
            break
        server = server_of[name]
        if per_server.get(server, 0) < cap:
            per_server[server] = per_server.get(server, 0) + 1
            taken.append(name)
    return taken


@dataclass(frozen=True, slots=True)
class FirstRoundCheck:
    """The first round of ``case`` at ``capacity`` takes exactly ``expected``."""

    case: VectorCase
    capacity: int
    expected: frozenset[str]


@dataclass(frozen=True, slots=True)
class DiscoveryCheck:
    """Discovery calls with the case's message as query activate ``expected``, one per call.

    When ``complete``, one more call activates nothing: the order has no further candidate.
    """

    case: VectorCase
    expected: tuple[str, ...]
    complete: bool
    # Where in the case's discovery order ``expected`` starts.
    start: int = 0


@dataclass(slots=True)
class Probe:
    """One run: its inputs, and the checks made on it in order."""

    group: VectorGroup
    system_prompt: str
    user_message: str = ""
    capacity: int = 0
    pinned: tuple[str, ...] = ()
    first_round: FirstRoundCheck | None = None
    discoveries: list[DiscoveryCheck] = field(default_factory=list)
    # Servers that must be served for the checks to see what they need.
    needed: set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        """``group:07@5+12+30d16``: case 07's first round at capacity 5, then the discovery
        orders of cases 12 and 30 (the latter from its 17th tool on)."""
        parts = []
        if self.first_round is not None:
            parts.append(f"{_number(self.first_round.case)}@{self.capacity}")
        for check in self.discoveries:
            parts.append(f"{_number(check.case)}d{check.start}" if check.start else _number(check.case))
        return f"{self.group.id}:{'+'.join(parts)}"

    @property
    def base_tools(self) -> int:
        return _MAX_BASE - self.capacity

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(s for s in self.group.servers if s in self.needed)

    @property
    def used(self) -> int:
        return sum(len(check.expected) for check in self.discoveries)

    @property
    def active(self) -> set[str]:
        fixed = set(self.pinned) | (set(self.first_round.expected) if self.first_round else set())
        return fixed.union(*(check.expected for check in self.discoveries))

    def policies(self) -> dict[str, dict[str, Any]]:
        pins: dict[str, list[str]] = {}
        for name in self.pinned:
            server = self.group.server_of(name)
            pins.setdefault(server, []).append(name[len(server) + 2 :])
        return {server: {"pinnedTools": names} for server, names in pins.items()}

    def cases(self) -> list[VectorCase]:
        found = [self.first_round.case] if self.first_round else []
        found += [check.case for check in self.discoveries]
        return list(dict.fromkeys(found))

    def _accepts(self, system_prompt: str, tools: Sequence[str], complete: bool) -> bool:
        if self.pinned or system_prompt != self.system_prompt:
            return False
        # A completeness check needs room left after its sequence, or "nothing more" means nothing.
        if self.used + len(tools) > ROOM - (1 if complete else 0):
            return False
        return self.active.isdisjoint(tools)


def first_round_capacity(case: VectorCase) -> int:
    """Where the first round is worth observing: the smallest score gap near the relevant tools.

    Among the capacities up to two past the discovery order's length, the one whose boundary
    has the smallest positive score gap (the earliest of equal gaps), so that a weight that is
    slightly off moves a tool across it; a tie when there is no gap, so that the tie-break
    decides. Ties between two relevant tools are left to discovery, which orders them anyway.
    """
    order = case.first_round
    relevant = set(case.discovery)
    best: tuple[int, int] | None = None
    for k in range(1, min(len(order), len(relevant) + 3)):
        above, below = order[k - 1], order[k]
        gap = case.score(above) - case.score(below)
        if gap == 0 and above in relevant and below in relevant:
            continue
        key = (gap if gap > 0 else 10**6, k)
        if best is None or key < best:
            best = key
    return 1 if best is None else best[1]


def first_round_tells_more(case: VectorCase) -> bool:
    """Whether the case's first round shows what its discovery order does not.

    That is so when nothing is relevant (the first round is then all there is to see), or
    when a tool that discovery would not activate outranks one it would.
    """
    relevant = len(case.discovery)
    return relevant == 0 or case.first_round[:relevant] != case.discovery


def plan(group: VectorGroup) -> list[Probe]:
    """The probes that check a servable group: the complete discovery order of every case, and
    a first-round prefix of every case whose first round tells more (:func:`first_round_tells_more`)."""
    server_of = {tool.qualified: tool.server for tool in group.tools}
    probes: list[Probe] = []
    for case in group.cases:
        if not first_round_tells_more(case):
            continue
        k = first_round_capacity(case)
        taken = walk(case.first_round, k, server_of)
        # Serve the servers of the next tool too, so that a swap across the boundary shows.
        probes.append(
            Probe(
                group,
                case.system_prompt,
                case.user_message,
                capacity=k,
                first_round=FirstRoundCheck(case, k, frozenset(taken)),
                needed={server_of[name] for name in case.first_round[: k + 1]},
            )
        )
    checks: list[tuple[DiscoveryCheck, set[str]]] = []
    # A blank query is invalid arguments (DSC-7), not a ranking: such cases have no discovery check.
    for case in (case for case in group.cases if case.user_message.strip()):
        order = case.discovery
        for start in range(0, len(order) + 1, ROOM) if len(order) >= ROOM else (0,):
            check = DiscoveryCheck(case, order[start : start + ROOM], start + ROOM > len(order), start)
            checks.append((check, {server_of[name] for name in order[: start + ROOM]}))
    # Longest first packs best; a check joins the probe it adds the fewest servers to.
    for check, servers in sorted(checks, key=lambda item: -len(item[0].expected)):
        hosts = [
            probe
            for probe in probes
            if check.start == 0 and probe._accepts(check.case.system_prompt, check.expected, check.complete)
        ]
        if hosts:
            # Best fit: the fewest servers added, then the least room left over.
            host = min(hosts, key=lambda probe: (len(servers - probe.needed), ROOM - probe.used - len(check.expected)))
            host.discoveries.append(check)
            host.needed |= servers
            continue
        pinned = check.case.discovery[: check.start]
        probes.append(
            Probe(
                group,
                check.case.system_prompt,
                capacity=len(pinned),
                pinned=pinned,
                discoveries=[check],
                needed=servers or set(group.servers),
            )
        )
    for probe in probes:
        # In case order, and the checks that expect nothing first, while the room is whole.
        probe.discoveries.sort(key=lambda check: (len(check.expected) > 0, group.cases.index(check.case)))
    return probes
