"""Generated catalogs for the benchmarks, built from the mock fleet's vocabularies."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mock_servers import FleetSpec, ListedTool, generate_tools, preset, spec_from_dict
from reference_impl import Catalog, MemoryTarget, ServerConfig, ToolDoc
from reference_impl._policy import Eligibility, resolve_policies

DOMAINS = (
    "code_hosting",
    "issue_tracker",
    "browser",
    "data_platform",
    "chat",
    "cloud",
    "docs",
    "calendar",
    "crm",
    "monitoring",
)
_PREFIX = {
    "code_hosting": "git",
    "issue_tracker": "tracker",
    "browser": "web",
    "data_platform": "data",
    "chat": "chat",
    "cloud": "cloud",
    "docs": "wiki",
    "calendar": "cal",
    "crm": "crm",
    "monitoring": "mon",
}
_SUFFIX = re.compile(r"_\d+$")


def fleet(tool_count: int, *, per_server: int = 100, seed: int = 100, id_prefix: str = "") -> FleetSpec:
    """A fleet of ``tool_count`` generated tools, ``per_server`` to a server, domains in turn."""
    servers: list[dict[str, Any]] = []
    left, k = tool_count, 0
    while left > 0:
        domain = DOMAINS[k % len(DOMAINS)]
        count = min(per_server, left)
        servers.append({"id": f"{id_prefix}{_PREFIX[domain]}-{k:04d}", "domain": domain, "tool_count": count})
        left -= count
        k += 1
    return spec_from_dict({"seed": seed, "servers": servers})


def listings(spec: FleetSpec) -> dict[str, list[ListedTool]]:
    return {server.id: generate_tools(server) for server in spec.servers}


@dataclass(frozen=True, slots=True)
class Run:
    """What the toolset builds when a run opens, without connections: for in-process measurements."""

    servers: tuple[ServerConfig, ...]
    catalog: Catalog
    eligibility: Eligibility
    docs: tuple[ToolDoc, ...]


def build_run(tools: Mapping[str, Sequence[Any]]) -> Run:
    servers = tuple(ServerConfig(id=sid, target=MemoryTarget(server=None)) for sid in tools)
    catalog = Catalog.from_listings(tools)
    eligibility = resolve_policies(servers, catalog)
    docs = tuple(ToolDoc(e.qualified_name, e.server_id, e.name, e.description, e.read_only) for e in catalog.entries)
    return Run(servers, catalog, eligibility, docs)


def realistic() -> dict[str, list[ListedTool]]:
    return listings(preset("realistic"))


def distractors(count: int, avoid: Sequence[str], seed: int = 2024) -> dict[str, list[ListedTool]]:
    """``count`` generated tools on servers of every domain, none named like a tool in ``avoid``.

    A distractor with the very name of a labelled tool (another ``list_pull_requests``) would
    make the label ambiguous, so those are left out; near neighbours (``list_pull_request_files``,
    ``list_issues_3`` of another tracker) stay in, as they would in a real deployment.
    """
    taken = set(avoid)
    out: dict[str, list[ListedTool]] = {}
    total, batch = 0, 0
    while total < count:
        spec = fleet(2000, seed=seed + batch, id_prefix=f"x{batch}")
        for server in spec.servers:
            kept = [t for t in generate_tools(server) if _SUFFIX.sub("", t["name"]) not in taken]
            kept = kept[: count - total]
            if kept:
                out[server.id] = kept
                total += len(kept)
            if total >= count:
                break
        batch += 1
    return out
