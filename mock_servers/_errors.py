"""Errors raised by the mock fleet.

One small tree, rooted at `FleetError`::

    FleetError
    ├── SpecError (also ValueError)          a fleet spec file or dict is invalid
    ├── FleetArgumentError (also ValueError) a public function got an invalid argument
    ├── HostError (also RuntimeError)        a fleet host could not start or refused a request
    └── CaptureError                         a real server could not be captured
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["CaptureError", "FleetArgumentError", "FleetError", "HostError", "SpecError", "SpecProblem"]


class FleetError(Exception):
    """Root of every error raised by `mock_servers`."""


class SpecProblem(NamedTuple):
    """One thing wrong with a spec: where it came from, the field path, what was expected, what was given."""

    source: str
    field: str
    expected: str
    got: str

    def __str__(self) -> str:
        where = f"{self.source}: {self.field}" if self.field else self.source
        return f"{where}: expected {self.expected}, got {self.got}"


class SpecError(FleetError, ValueError):
    """A fleet specification is invalid.

    The message has one line per problem (``file: field: expected …, got …``).

    Attributes:
        source: where the spec came from (a file path, a preset name or ``"<dict>"``).
        field: the path of the (first) offending field, e.g. ``servers[2].tool_count``.
        expected: what the field should have been.
        got: a short repr of what was given.
        problems: every problem found, in document order (the first `SpecProblem` is the one above).
        total: how many problems there were; ``problems`` keeps the first 100.
    """

    def __init__(
        self, source: str, field: str, expected: str, got: str, *, more: Sequence[SpecProblem] = (), total: int = 0
    ) -> None:
        first = SpecProblem(source, field, expected, got)
        self.source, self.field, self.expected, self.got = first
        self.problems: tuple[SpecProblem, ...] = (first, *more)
        self.total = max(total, len(self.problems))
        lines = [str(p) for p in self.problems]
        if self.total > len(lines):
            lines.append(f"{source}: … and {self.total - len(lines)} more problems")
        super().__init__("\n".join(lines))

    @classmethod
    def of(cls, problems: Sequence[SpecProblem], total: int = 0) -> SpecError:
        """One error for several problems (at least one)."""
        first, *more = problems
        return cls(*first, more=more, total=total)


class FleetArgumentError(FleetError, ValueError):
    """A public function or strategy was called with an invalid argument."""


class HostError(FleetError, RuntimeError):
    """A fleet host could not be started, or it refused a control request."""


class CaptureError(FleetError):
    """A real server could not be captured: it failed to start, answered an error, or looped."""


class LedgerError(FleetError, OSError):
    """A ledger file cannot be written: a missing folder, a folder, a file that refuses writes."""
