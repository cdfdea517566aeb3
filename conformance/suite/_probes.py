"""The vector probes of :mod:`conformance.suite._vectors`, run against the SUT.

:func:`vector_diagnosis` serves the servable vector catalogs (once, on first use) and
returns the :class:`~conformance.suite._vectors.Diagnosis` that runs each probe at most
once: ``test_ranking.py`` checks the probes through it, and a lexical check elsewhere asks
it whether the sentences it relies on are found broken (:meth:`Diagnosis.explain`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from conformance import Run, Sut
from conformance._wire_types import ServerConfig, ToolPolicy
from conformance.suite._fleets import Fleets
from conformance.suite._preconditions import (
    activations_kept,
    discovery_passes_twelve,
    left_out_tools_activatable,
    precondition,
    required_all_active,
    twelve_per_server,
)
from conformance.suite._vectors import (
    Diagnosis,
    DiscoveryWalk,
    Outcome,
    Probe,
    VectorGroup,
    Violation,
    first_round_mismatch,
    load_vectors,
    plan,
)
from conformance.suite._wire import DISCOVERY, base_tools, open_params, run
from mock_servers import FleetSpec, ServerSpec, ToolSpec

__all__ = ["GROUPS", "PROBES", "vector_diagnosis"]

#: The vector groups a driver can serve, and the probes that check them.
GROUPS = tuple(group for group in load_vectors() if group.servable)
PROBES = [probe for group in GROUPS for probe in plan(group)]
_SCHEMA: dict[str, Any] = {"type": "object"}


def _spec(group: VectorGroup) -> FleetSpec:
    servers = []
    for server_id in group.servers:
        tools = [tool for tool in group.tools if tool.server == server_id]
        # Only a raw server can send a readOnlyHint that is not a JSON boolean.
        raw = any(not isinstance((tool.annotations or {}).get("readOnlyHint", False), bool) for tool in tools)
        specs = tuple(
            ToolSpec(name=tool.name, description=tool.description, input_schema=_SCHEMA, annotations=tool.annotations)
            for tool in tools
        )
        servers.append(ServerSpec(id=server_id, tool_count=0, tools=specs, raw=raw))
    return FleetSpec(servers=tuple(servers))


def _with_policies(probe: Probe, served: dict[str, ServerConfig]) -> list[ServerConfig]:
    """The servers ``probe`` opens its run over, from those served, under its policies."""
    policies = probe.policies()
    return [{**served[server_id], "policy": policies.get(server_id, ToolPolicy())} for server_id in probe.servers]


async def _observe(sut: Sut, probe: Probe, servers: list[ServerConfig]) -> Outcome | None:
    """Run one probe: the first thing it sees differ from the vectors, or None."""
    base = base_tools(probe.base_tools)
    params = open_params(servers, base, probe.user_message, probe.system_prompt)
    async with sut.open(params) as r:
        skip = {tool["name"] for tool in base} | {DISCOVERY}
        active = {d["name"] for d in await r.definitions() if d["name"] not in skip}
        found: Outcome | None = first_round_mismatch(probe, active)
        if found is not None:
            return found
        for check in probe.discoveries:
            steps = DiscoveryWalk(probe.group, check, active)
            while not steps.done:
                if (found := await _discover(r, check.case.user_message, steps)) is not None:
                    return found
            active = steps.active
    return None


async def _discover(r: Run, query: str, steps: DiscoveryWalk) -> Outcome | None:
    result = await r.call(DISCOVERY, {"query": query, "limit": 1})
    if result.get("isError"):
        return Violation(("DSC-5.7",), "a discovery call with limit 1 was an error result", result)
    structured = result.get("structuredContent") or {}
    names = [item.get("name") for item in structured.get("activated", []) if isinstance(item, Mapping)]
    return steps.see([str(name) for name in names])


@contextlib.contextmanager
def vector_diagnosis(sut: Sut, fleets: Fleets) -> Iterator[Diagnosis]:
    """The diagnosis of the vector probes against ``sut``; the catalogs are served on first use."""
    with contextlib.ExitStack() as stack:
        catalogs: dict[str, dict[str, ServerConfig]] = {}

        def observe(probe: Probe) -> Outcome | None:
            if probe.group.id not in catalogs:
                fleet = stack.enter_context(fleets.serve(_spec(probe.group)))
                catalogs[probe.group.id] = {s["id"]: s for s in fleet.servers}
            seen = run(_observe(sut, probe, _with_policies(probe, catalogs[probe.group.id])))
            if isinstance(seen, Violation) and "DSC-4.2" in seen.sentences:
                # A tool activated again is active already only if earlier activations stay.
                activations_kept(sut, fleets)
            return seen

        def relied_on(probe: Probe) -> None:
            # A vector's expected order counts its required tools as active (POL-6.2), and
            # each server under the cap of 12 (SEL-1.2).
            required_all_active(sut, fleets)
            twelve_per_server(sut, fleets)
            # Its discoveries may take a server past 12 active tools (SEL-1.3).
            if probe.discoveries:
                left_out_tools_activatable(sut, fleets)
                discovery_passes_twelve(sut, fleets)
            # The catalogs stay served for every probe of a group, so a probe opens its run
            # after other runs' discoveries over the same servers: a host whose runs carry
            # activations over (ISO-2.1) differs there, and not over a catalog served anew.
            if "ISO-2.1" in sut.cited:
                return
            with fleets.serve(_spec(probe.group)) as fresh:
                again = run(_observe(sut, probe, _with_policies(probe, {s["id"]: s for s in fresh.servers})))
            precondition(
                "ISO-2.1",
                again is not None,
                f"vector probe {probe.id} differs over servers earlier runs discovered tools of, "
                "and not over the same servers served anew",
            )

        yield Diagnosis(PROBES, observe, relied_on=relied_on)
