"""The three watermarks and the capacities derived from them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DYNAMIC_LIMIT", "FAIRNESS_CAP", "FIRST_ROUND_LIMIT", "REQUEST_LIMIT", "Budgets"]

FIRST_ROUND_LIMIT = 96
DYNAMIC_LIMIT = 112
REQUEST_LIMIT = 128
FAIRNESS_CAP = 12
DEFAULT_MAX_ACTIVE_TOOLS = 24
MAX_ACTIVE_TOOLS_LIMIT = 96


@dataclass(frozen=True, slots=True)
class Budgets:
    """MCP capacities of one run, given its base tools and whether discovery is registered."""

    base_tools: int
    discovery_tools: int

    @property
    def first_round_capacity(self) -> int:
        return FIRST_ROUND_LIMIT - self.base_tools - self.discovery_tools

    @property
    def dynamic_capacity(self) -> int:
        return DYNAMIC_LIMIT - self.base_tools - self.discovery_tools
