"""Defects of isolation (ISO-*): runs that share what discovery activated, and activations
that outlive their run."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from reference_impl import _policy, _toolset
from reference_impl._catalog import Catalog
from reference_impl._config import ServerConfig
from reference_impl._policy import Eligibility
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import _session
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect
from tests.conformance.defects.policy import gate_also_runs

__all__: list[str] = []

# Open runs by fleet: the servers and the catalog they listed.
_OPEN_BY_FLEET: dict[tuple[Any, ...], list[AdaptiveToolset]] = {}


def _fleet_key(toolset: AdaptiveToolset) -> tuple[Any, ...]:
    servers = tuple((server.id, repr(server.target)) for server in toolset.servers)
    return servers, tuple(entry.qualified_name for entry in toolset.catalog.entries)


@defect("ISO-1.1", "concurrent runs over one fleet share one active set")
def shared_active_set() -> None:
    """Runs open at the same time over the same fleet share one active set."""
    original = _toolset.open_toolset

    @asynccontextmanager
    async def open_toolset(*args: Any, **kwargs: Any) -> AsyncIterator[AdaptiveToolset]:
        async with original(*args, **kwargs) as toolset:
            key = _fleet_key(toolset)
            group = _OPEN_BY_FLEET.setdefault(key, [])
            if group:
                shared = group[0]
                for i in toolset._active:
                    if i not in shared._active_set:
                        shared._activate(i)
                toolset._active = shared._active
                toolset._active_set = shared._active_set
                toolset._per_server = shared._per_server
                toolset._active_by_name = shared._active_by_name
            group.append(toolset)
            try:
                yield toolset
            finally:
                group.remove(toolset)
                if not group:
                    del _OPEN_BY_FLEET[key]

    _swap(_session, "open_toolset", open_toolset)


def _server_key(toolset: AdaptiveToolset, server_id: str) -> str:
    """Where a server of the run is reached: the same server for every run of the process."""
    return next(repr(server.target) for server in toolset.servers if server.id == server_id)


# Tools discovery activated in any run, by where their server is reached, and tool name.
_ACTIVATED: set[tuple[str, str]] = set()


def _remember_activations() -> None:
    activate = AdaptiveToolset._activate

    def _activate(self: AdaptiveToolset, i: int) -> None:
        activate(self, i)
        entry = self.catalog.entries[i]
        _ACTIVATED.add((_server_key(self, entry.server_id), entry.name))

    _swap(AdaptiveToolset, "_activate", _activate)


@defect("ISO-1.2", "the gate runs what discovery activated in any run of the process")
def shared_gate() -> None:
    """Definitions stay per run, but the gate checks one process-wide list of activated tools."""
    _remember_activations()
    gate_also_runs(lambda toolset, entry: (_server_key(toolset, entry.server_id), entry.name) in _ACTIVATED)


@defect("ISO-2.1", "tools discovery activated are pinned for every later run")
def activations_pinned_for_later_runs() -> None:
    """What discovery activated once is required in every run opened after it over that server."""
    _remember_activations()
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
        eligibility = resolve(servers, catalog)
        required = dict(eligibility.required)
        for server in servers:
            remembered = [
                e.index
                for e in catalog.by_server.get(server.id, [])
                if (repr(server.target), e.name) in _ACTIVATED and eligibility.is_eligible(e.index)
            ]
            required[server.id] = tuple(sorted({*required[server.id], *remembered}))
        return dataclasses.replace(eligibility, required=required)

    _swap(_toolset, "resolve_policies", resolve_policies)
