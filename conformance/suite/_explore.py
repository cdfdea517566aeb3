"""Discovery sequences on one run, and what the suite predicts about them.

Every discovery property drives the same kind of sequence (:func:`explore`) and checks
one invariant of the :class:`Trace`, so that a failure reports the sentence it breaks
rather than the first of several checks that happens to fail.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from conformance import ConformanceError, OutcomeError, Run, Sut
from conformance._wire_types import Definition, ServerConfig, ToolPolicy, ToolResult
from conformance.suite._fleets import Fleets, tools_of
from conformance.suite._preconditions import named_activation_is_due
from conformance.suite._predictions import FirstRound, Tools, first_round
from conformance.suite._strategies import FleetAndPolicies, fleets_with_policies
from conformance.suite._wire import (
    DISCOVERY,
    activated,
    base_tools,
    catalog,
    mcp_definitions,
    names,
    open_params,
    qualified,
    run,
)
from mock_servers import FleetSpec, ListedTool, ToolCalled

__all__ = ["BASES", "FLEETS", "STEPS", "Step", "Steps", "Then", "Trace", "explore", "plan", "saturating_steps"]

FLEETS = fleets_with_policies(max_servers=3, min_tools=5, max_tools=40)
BASES = st.integers(0, 4) | st.integers(70, 95)
#: Each step: which query word, which ``limit`` (None: left out), scoped to one auto server or not.
STEPS = st.lists(
    st.tuples(st.integers(0, 10_000), st.none() | st.integers(1, 20), st.booleans()), min_size=1, max_size=5
)
Steps = list[tuple[int, int | None, bool]]


def _words(tools: Tools) -> list[str]:
    """Query words: the servers' ids (which match every tool of a server) and the words of the tools."""
    words: set[str] = set()
    for ts in tools.values():
        for t in ts:
            words.update(w for w in re.split(r"[^a-z0-9]+", (t["name"] + " " + t.get("description", "")).lower()) if w)
    return sorted(tools) + (sorted(words) or ["tool"])


@dataclass
class Step:
    """One discovery call and the definitions read right after it."""

    arguments: dict[str, Any]
    scope: list[str] | None
    limit: int | None
    result: ToolResult
    activated: list[str]
    #: MCP tools active before the call (the first round and the activations reported so far).
    before: list[str]
    definitions: list[Definition]


@dataclass
class Trace:
    """A discovery sequence on one run, with what the suite predicts about it."""

    model: FirstRound
    tools: dict[str, list[ListedTool]]
    base: list[str]
    start: list[Definition]
    case: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    #: ``tools/call`` events the servers saw after the steps.
    calls: list[ToolCalled] = field(default_factory=list)
    #: What ``then`` returned.
    after: Any = None
    #: ``tools/call`` events the servers saw after ``then``.
    calls_after: list[ToolCalled] = field(default_factory=list)

    @property
    def catalog(self) -> dict[str, tuple[str, ListedTool]]:
        return catalog(self.tools)

    def mcp(self, defs: list[Definition]) -> list[str]:
        return names(mcp_definitions(defs, self.base))

    def per_server(self, active: set[str]) -> dict[str, int]:
        per: dict[str, int] = {}
        cat = self.catalog
        for n in active:
            if n in cat:
                per[cat[n][0]] = per.get(cat[n][0], 0) + 1
        return per

    def candidate(self, active: Iterable[str]) -> tuple[str, bool] | None:
        """A tool discovery may still activate, given the active MCP tools, and whether a call
        asking for it by its qualified name, scoped to its server, must activate it
        (DSC-5.8); None when no server has one left.

        It comes from the server whose candidates DSC-5.8 covers, the fewest first.
        """
        shown = set(active)
        per = self.per_server(shown)
        room = self.model.dynamic_capacity - len(shown)
        best: tuple[tuple[bool, int, str], str, bool] | None = None
        for sid in self.model.auto_servers:
            m = self.model.servers[sid]
            left = [qualified(sid, n) for n in m.eligible if qualified(sid, n) not in shown]
            server_room = m.max_active - per.get(sid, 0)
            if not left or server_room <= 0 or room <= 0:
                continue
            due = named_activation_is_due(len(left), server_room, room)
            key = (not due, len(left), sid)
            if best is None or key < best[0]:
                best = (key, left[-1], due)
        return None if best is None else (best[1], best[2])


Then = Callable[[Run, Trace], Awaitable[Any]]


def plan(fleet: FleetAndPolicies, base_count: int) -> FirstRound:
    """The first round the oracle predicts, computed before anything is served."""
    spec, policies = fleet
    return first_round(tools_of(spec), policies, base_count)


def explore(
    sut: Sut,
    fleets: Fleets,
    fleet: FleetAndPolicies,
    base_count: int,
    steps: Steps,
    then: Then | None = None,
) -> Trace:
    """Open a run, make the discovery calls ``steps`` describe, read the definitions after
    each, then run ``then`` on the open run.

    The run must open with the discovery tool registered (check :func:`plan` first).
    """
    spec, policies = fleet
    base = base_tools(base_count)
    with fleets.serve(spec, policies) as served:
        model = first_round(served.tools, served.policies, base_count)
        if model.error is not None or not model.discovery:
            raise ConformanceError("explore() needs a run that opens with the discovery tool: draw it with opening()")
        trace = Trace(model, served.tools, names(base), [], served.describe() | {"baseTools": base_count})
        words = _words(served.tools)
        auto_ids = model.auto_servers

        async def body(servers: list[ServerConfig]) -> None:
            async with sut.open(open_params(servers, base)) as r:
                trace.start = await r.definitions()
                active = list(trace.mcp(trace.start))
                for word_index, limit, scoped in steps:
                    args: dict[str, Any] = {"query": words[word_index % len(words)]}
                    scope = [auto_ids[word_index % len(auto_ids)]] if scoped else None
                    if scope:
                        args["server_ids"] = scope
                    if limit is not None:
                        args["limit"] = limit
                    result = await r.call(DISCOVERY, args)
                    found = activated(result)
                    defs = await r.definitions()
                    trace.steps.append(Step(args, scope, limit, result, found, list(active), defs))
                    active += [q for q in found if q not in active]
                    trace.case["steps"] = r.case["steps"]
                trace.calls = served.ledger().calls()
                if then is not None:
                    trace.after = await then(r, trace)
                    trace.case["steps"] = r.case["steps"]
                    trace.calls_after = served.ledger().calls()

        try:
            run(body(served.servers))
        except OutcomeError as refused:
            # A run refused for a pinned tool its policy excludes is a reading POL-7 allows
            # (ID-9): the same run without those pins has the same first round, and opens.
            if not model.refused_for_a_pin(refused.kind, refused.message):
                raise
            trace.case["policies"] = model.without_excluded_pins(served.policies)
            run(body(served.with_policies(trace.case["policies"])))
        return trace


def saturating_steps(spec: FleetSpec, policies: Mapping[str, ToolPolicy], rounds: int) -> Steps:
    """Discovery calls, each naming one auto server (a relevance signal for every tool of
    it) scoped to that server with limit 12, ``rounds`` times over the auto servers."""
    auto = [s.id for s in spec.servers if policies.get(s.id, ToolPolicy()).get("mode", "auto") == "auto"]
    # The query words of explore() start with the sorted server ids, and its scope picks
    # from the auto servers in fleet order: callers keep both orders the same.
    ids = sorted(s.id for s in spec.servers)
    return [(ids.index(sid), 12, True) for _ in range(rounds) for sid in auto]
