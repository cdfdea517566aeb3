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
    # POL-2.1: a denied tool is never eligible, and denial is checked first: it wins over pinning
    # (POL-2.2) and over allowing (POL-2.3).
    if entry.name in policy.denied_tools:
        return "denied"
    # POL-3.1, POL-3.2: allowlist admits only the listed tools, none when the list is empty.
    # POL-4.1, POL-4.2: so does auto with a non-empty list, for the first round and for discovery alike
    # (both read this one eligibility); an empty list restricts nothing in auto (POL-4.3), and any list
    # restricts nothing in all (POL-4.4).
    restricted = policy.mode == "allowlist" or (policy.mode == "auto" and bool(policy.allowed_tools))
    if restricted and entry.name not in policy.allowed_tools:
        return "not in allowedTools"
    # POL-5.1 to POL-5.5: only readOnlyHint equal to JSON true, never a name or description; under allow
    # annotations restrict nothing (POL-5.6).
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


def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog, *, strict: bool = True) -> Eligibility:
    """Apply every server's policy to the catalog.

    Pinned and allowlisted names the server does not offer are a configuration error: an
    administrator's declaration is never silently ignored, and never stands for another tool.
    A pinned tool the policy excludes is left out with a warning, for the same reason (ID-9).
    With ``strict=False`` (a catalog refreshed mid-run, whose server removed a named tool)
    they match nothing instead.
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
        # POL-8.1, POL-8.2: a name the server does not offer is a configuration error here (ID-3), never another tool.
        missing = sorted({name for name in declared if name not in offered})
        if missing and strict:
            raise ConfigurationError(
                f"server {server.id!r} does not offer [{listed(missing)}], named in its policy "
                "(pinnedTools/allowedTools); fix the names or remove them"
            )
        needed: list[int] = []
        for entry in entries:
            reason = exclusion_reason(entry, policy)
            if reason is not None:
                excluded[entry.index] = reason
                # POL-7.1: a pinned tool the policy excludes (denied, POL-7.2; not read-only, POL-7.3; outside
                # allowedTools, POL-7.4) is neither required nor active: left out with a warning (ID-9).
                if entry.name in policy.pinned_tools:
                    _log.warning(
                        "server %r: pinned tool %r is left out of the run: %s; remove it from pinnedTools "
                        "or change the policy that excludes it",
                        server.id,
                        entry.name,
                        reason,
                    )
            # POL-6.1: required are the eligible pinned tools and, outside auto, every eligible tool.
            elif policy.mode != "auto" or entry.name in policy.pinned_tools:
                needed.append(entry.index)
        required[server.id] = tuple(needed)
    auto = frozenset(server.id for server in servers if server.policy.mode == "auto")
    return Eligibility(excluded=excluded, required=required, auto_servers=auto)
