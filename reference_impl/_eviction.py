"""Recency for the ``eviction`` profile: when each active tool was last used, and who goes first.

A tool's last use is the later of its activation and its last call that succeeded. Tools
activated together (the first round, one discovery call) share a moment; among tools of one
moment the smallest qualified name goes first, so the same run always evicts the same tools
(EVC-3.2, EVC-3.3, EVC-3.4).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["EVICTION_POLICIES", "Recency"]

#: The eviction policies a run can be opened with.
EVICTION_POLICIES = ("lru",)


class Recency:
    """The last use of each active tool, by qualified name."""

    def __init__(self) -> None:
        self._moment = 0
        self._last: dict[str, int] = {}

    def use(self, names: Iterable[str]) -> None:
        """Mark these tools as used now, together."""
        self._moment += 1
        for name in names:
            self._last[name] = self._moment

    def forget(self, name: str) -> None:
        self._last.pop(name, None)

    def least_recent(self, names: Iterable[str]) -> list[str]:
        """``names``, least recently used first, ties by qualified name (code points)."""
        # EVC-3.2: earliest last use first; EVC-3.3: ties in code-point order of qualified names (str order).
        return sorted(names, key=lambda name: (self._last.get(name, 0), name))
