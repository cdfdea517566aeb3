"""The process groups of the stdio servers alive in this process, apart from the SDK.

A host ending in a hurry (a signal) ends them all at once, and a watchdog is told which
groups to end should the host die. Kept apart from the stdio transport, which needs the MCP
SDK, so that a driver starts without loading it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any, Final

__all__ = ["GROUPS", "ProcessGroups", "kill_group"]


class ProcessGroups:
    """The process groups of the stdio servers alive in this process, and who wants to know."""

    def __init__(self) -> None:
        self._live: set[int] = set()
        #: Set while the host ends in a hurry (a signal): servers get a short grace.
        self.hurry = False
        self._listeners: list[Callable[[str, int], None]] = []

    def __iter__(self) -> Any:
        return iter(sorted(self._live))

    def __len__(self) -> int:
        return len(self._live)

    def listen(self, listener: Callable[[str, int], None]) -> None:
        """Call ``listener("+", pgid)`` when a group starts and ``("-", pgid)`` once it has ended."""
        self._listeners.append(listener)
        for pgid in self:
            listener("+", pgid)

    def unlisten(self, listener: Callable[[str, int], None]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def add(self, pgid: int) -> None:
        self._live.add(pgid)
        self._tell("+", pgid)

    def discard(self, pgid: int) -> None:
        if pgid in self._live:
            self._live.discard(pgid)
            self._tell("-", pgid)

    def kill_all(self) -> None:
        """SIGKILL every live group now."""
        for pgid in self:
            kill_group(pgid, signal.SIGKILL)

    def _tell(self, change: str, pgid: int) -> None:
        for listener in self._listeners:
            with contextlib.suppress(Exception):  # a listener that fails must not cost a server
                listener(change, pgid)


#: The groups of this process's stdio servers.
GROUPS: Final = ProcessGroups()


def kill_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to group ``pgid``, which may have ended already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
