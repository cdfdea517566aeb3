"""Seeing every process a certification starts, and ending what is left of them.

A driver under test may start processes in new sessions (its MCP servers, helpers),
where killing its process group does not reach them. On Linux the certifying process
makes itself a *child subreaper*: whatever is orphaned below it is re-parented to it
rather than to init, so after the suite ends every survivor is still a descendant here,
can be listed, ended and reported. Elsewhere only the process groups are ended, and the
certificate says what is not tracked.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Final

__all__ = ["Leftover", "TRACKING_NOTE", "become_subreaper", "descendants", "end_descendants", "reap_zombies"]

_PR_SET_CHILD_SUBREAPER: Final = 36
#: What the certificate says when processes that escape their group cannot be tracked.
TRACKING_NOTE: Final = (
    "processes the SUT starts in a new session are tracked on Linux only; on this platform they are not"
)


@dataclass(frozen=True, slots=True)
class Leftover:
    """A process still running below the certifying process."""

    pid: int
    command: str


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    path = ctypes.util.find_library("c")
    if path is None:
        return False
    try:
        libc = ctypes.CDLL(path, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) for every process /proc shows."""
    table: dict[int, tuple[int, str, str]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        if len(fields) > 1:
            table[int(entry)] = (int(fields[1]), fields[0].decode(), command)
    return table


def descendants(root: int | None = None) -> list[Leftover]:
    """Live (not zombie) processes below ``root`` (default: this process), parents first."""
    root = os.getpid() if root is None else root
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state, _command) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[Leftover] = []
    stack = sorted(children.get(root, []))
    while stack:
        pid = stack.pop(0)
        _ppid, state, command = table[pid]
        if state not in ("Z", "X"):
            found.append(Leftover(pid, command or f"[pid {pid}]"))
        stack.extend(sorted(children.get(pid, [])))
    return found


def reap_zombies() -> None:
    """Collect the exit status of any child that has ended (re-parented orphans included)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_descendants(grace: float = 2.0, *, spare: frozenset[int] = frozenset()) -> list[Leftover]:
    """End every process below this one but those in ``spare``: SIGTERM, then SIGKILL after ``grace`` s.

    Returns what was running when this was called.
    """
    found = [p for p in descendants() if p.pid not in spare]
    if not found:
        return found
    for process in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap_zombies()
        if not any(p.pid not in spare for p in descendants()):
            return found
        # Nothing to wait on for processes that are not our children: poll /proc briefly.
        time.sleep(0.05)
    for process in descendants():
        if process.pid in spare:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGKILL)
    reap_zombies()
    return found
