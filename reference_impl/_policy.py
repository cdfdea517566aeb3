"""Eligibility and required tools: the policy filter that runs before any ranking."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._bounds import listed
from ._catalog import Catalog, CatalogEntry
from ._config import ServerConfig, ToolPolicy
from ._errors import ConfigurationError

__all__ = ["Eligibility", "exclusion_reason", "resolve_policies"]

_log = logging.getLogger("reference_impl")


def exclusion_reason(entry: CatalogEntry, policy: ToolPolicy) -> str | None:
    """Why the policy keeps this tool out, or None when it is eligible.

    Order matters: deny always wins; then the allow list where it applies; then the
    read-only boundary, which trusts only an explicit ``readOnlyHint: true``.
    """
    if entry.name in policy.denied_tools:
        return "denied"
    restricted = policy.mode == "allowlist" or (policy.mode == "auto" and bool(policy.allowed_tools))
    if restricted and entry.name not in policy.allowed_tools:
        return "not in allowedTools"
    if policy.side_effects == "readOnly" and not entry.read_only:
        return "read-only policy and readOnlyHint is not true"
    return None


@dataclass(frozen=True, slots=True)
class Eligibility:
    """The outcome of the policy filter for one run."""

    # entry index -> reason it is excluded
    excluded: Mapping[int, str]
    # entry indexes, per server, that must be active from the first round
    required: Mapping[str, tuple[int, ...]]
    auto_servers: frozenset[str]

    def is_eligible(self, index: int) -> bool:
        return index not in self.excluded


def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
    """Apply every server's policy to the catalog.

    Pinned and allowlisted names the server does not offer are a configuration error: an
    administrator's declaration is never silently ignored, and never stands for another tool.
    A pinned tool the policy excludes is left out with a warning, for the same reason (ID-9).
    """
    excluded: dict[int, str] = {}
    required: dict[str, tuple[int, ...]] = {}
    for server in servers:
        policy = server.policy
        entries = catalog.by_server.get(server.id, [])
        offered = {entry.name for entry in entries}
        declared = list(policy.pinned_tools)
        if policy.mode in ("allowlist", "auto"):  # allowedTools is ignored in "all" mode
            declared += policy.allowed_tools
        missing = sorted({name for name in declared if name not in offered})
        if missing:
            raise ConfigurationError(
                f"server {server.id!r} does not offer [{listed(missing)}], named in its policy "
                "(pinnedTools/allowedTools); fix the names or remove them"
            )
        needed: list[int] = []
        for entry in entries:
            reason = exclusion_reason(entry, policy)
            if reason is not None:
                excluded[entry.index] = reason
                if entry.name in policy.pinned_tools:
                    _log.warning(
                        "server %r: pinned tool %r is left out of the run: %s; remove it from pinnedTools "
                        "or change the policy that excludes it",
                        server.id,
                        entry.name,
                        reason,
                    )
            elif policy.mode != "auto" or entry.name in policy.pinned_tools:
                needed.append(entry.index)
        required[server.id] = tuple(needed)
    auto = frozenset(server.id for server in servers if server.policy.mode == "auto")
    return Eligibility(excluded=excluded, required=required, auto_servers=auto)
