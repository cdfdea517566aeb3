"""The selection trace: why each tool was taken or left, and what each discovery call matched."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ._ranking import ScoreBreakdown

__all__ = ["CandidateTrace", "DiscoveryTrace", "SelectionTrace"]

# Outcomes of the first round, per tool.
REQUIRED = "required"
SELECTED = "selected"
SERVER_CAP = "left: server at its first-round cap"
CAPACITY = "left: first-round capacity used up"


@dataclass(frozen=True, slots=True)
class CandidateTrace:
    """One catalog tool in the first round."""

    qualified_name: str
    server_id: str
    outcome: str
    score: ScoreBreakdown | None

    def __str__(self) -> str:
        score = f"  score {self.score}" if self.score is not None else ""
        return f"{self.qualified_name}: {self.outcome}{score}"


@dataclass(frozen=True, slots=True)
class DiscoveryTrace:
    """One call of the discovery tool."""

    query: str
    server_ids: tuple[str, ...]
    limit: int
    # qualified names of the candidates examined, best first (the walk stops at the limit)
    matched: tuple[str, ...]
    activated: tuple[str, ...]
    # qualified name -> why a matched candidate was not activated
    skipped: dict[str, str] = field(default_factory=dict)
    score: Callable[[str], ScoreBreakdown] | None = None

    def __str__(self) -> str:
        lines = [f"discovery {self.query!r} servers={list(self.server_ids) or 'all'} limit={self.limit}"]
        for name in self.matched:
            mark = "+" if name in self.activated else "-"
            why = f"  ({self.skipped[name]})" if name in self.skipped else ""
            score = f"  score {self.score(name)}" if self.score is not None else ""
            lines.append(f"  {mark} {name}{score}{why}")
        if not self.matched:
            lines.append("  (no candidate matched)")
        return "\n".join(lines)


class SelectionTrace:
    """First-round outcomes for every catalog tool, and every discovery call in order.

    Scores are computed when asked for, so keeping a trace costs the hot path nothing.
    """

    def __init__(
        self,
        names: tuple[str, ...],
        servers: tuple[str, ...],
        outcomes: dict[int, str],
        default_outcome: Callable[[int], str],
        score: Callable[[int], ScoreBreakdown],
    ) -> None:
        self._names = names
        self._servers = servers
        self._outcomes = outcomes
        self._default = default_outcome
        self._score = score
        self.discoveries: list[DiscoveryTrace] = []

    def candidate(self, index: int) -> CandidateTrace:
        outcome = self._outcomes.get(index) or self._default(index)
        scored = not outcome.startswith("excluded")
        return CandidateTrace(
            qualified_name=self._names[index],
            server_id=self._servers[index],
            outcome=outcome,
            score=self._score(index) if scored else None,
        )

    def candidates(self) -> Iterator[CandidateTrace]:
        for index in range(len(self._names)):
            yield self.candidate(index)

    def by_name(self, qualified_name: str) -> CandidateTrace:
        return self.candidate(self._names.index(qualified_name))

    def render(self, *, limit: int | None = None) -> str:
        """A readable report: taken tools first, then the rest, then discovery calls."""
        rows = sorted(self.candidates(), key=lambda c: (c.outcome not in (REQUIRED, SELECTED), c.qualified_name))
        shown = rows if limit is None else rows[:limit]
        lines = ["first round:"] + [f"  {row}" for row in shown]
        if len(shown) < len(rows):
            lines.append(f"  … {len(rows) - len(shown)} more")
        lines += [str(d) for d in self.discoveries]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()
