"""Errors raised by the mock fleet.

One small tree, rooted at `FleetError`::

    FleetError
    ├── SpecError (also ValueError)          a fleet spec file or dict is invalid
    ├── FleetArgumentError (also ValueError) a public function got an invalid argument
    ├── HostError (also RuntimeError)        a fleet host could not start or refused a request
    └── CaptureError                         a real server could not be captured
"""

from __future__ import annotations

__all__ = ["CaptureError", "FleetArgumentError", "FleetError", "HostError", "SpecError"]


class FleetError(Exception):
    """Root of every error raised by `mock_servers`."""


class SpecError(FleetError, ValueError):
    """A fleet specification is invalid.

    Attributes:
        source: where the spec came from (a file path, a preset name or ``"<dict>"``).
        field: the path of the offending field, e.g. ``servers[2].tool_count``.
        expected: what the field should have been.
        got: a short repr of what was given.
    """

    def __init__(self, source: str, field: str, expected: str, got: str) -> None:
        self.source = source
        self.field = field
        self.expected = expected
        self.got = got
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: expected {expected}, got {got}")


class FleetArgumentError(FleetError, ValueError):
    """A public function or strategy was called with an invalid argument."""


class HostError(FleetError, RuntimeError):
    """A fleet host could not be started, or it refused a control request."""


class CaptureError(FleetError):
    """A real server could not be captured: it failed to start, answered an error, or looped."""
