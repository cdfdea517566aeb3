"""Seeing every process a certification starts, reaping them as they end, and ending what is left.

A driver under test may start processes that leave its process group: MCP servers in
sessions of their own, helpers that background short-lived children, daemons that fork
and exit again and again. On Linux the certifying process makes itself a *child
subreaper*: whatever is orphaned below it is re-parented to it rather than to init. A
subreaper must then reap: :class:`Reaper` collects every orphan as it ends, from a thread,
so that a driver whose helpers leave thousands of short-lived orphans cannot fill the
process table with zombies. It also remembers the process group and session of every
process it sees below the run (in a scan every half second, and from every orphan it
reaps), and marks the run's environment with a variable of its own
(:data:`MARKER`), which every descendant inherits unless it clears its environment.

At the end, :meth:`Reaper.sweep` ends every process that is the run's: below this process
(which, as the subreaper, a fork-and-exit chain cannot leave), in a group or session seen
below it, or carrying the marker. It keeps sweeping until a pass finds nothing and leaves
this process no child at all, so that a daemon that forks and exits faster than one pass
is caught by the next: each of its orphans is a child of this process, found in a list the
kernel keeps per process rather than by a walk of every process, and killed without a look
at its state first (by the time of that look it may have forked again). A child the sweep
killed is reported from its wait status, however briefly it was seen.

Elsewhere (no ``/proc``, no subreaper) only what stays in the run's process groups is
ended, and :data:`UNTRACKED` says so on the certificate.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["MARKER", "UNTRACKED", "Leftover", "Reaper", "become_subreaper"]

_PR_SET_CHILD_SUBREAPER: Final = 36
#: The environment variable that marks every process of one certification run.
MARKER: Final = "MCP_CONFORMANCE_RUN"
#: What is not tracked where there is no subreaper and no /proc (a short note for the certificate).
UNTRACKED: Final = (
    "processes the SUT starts outside its process groups (a new session, a fork-and-exit daemon) are not "
    "tracked on this platform: only Linux re-parents them to the certifying process"
)
#: Seconds between two looks for ended orphans: a factory of short-lived orphans leaves at
#: most what it makes in this time.
REAP_INTERVAL: Final = 0.02
#: Seconds between two scans for the groups and sessions of the run's processes.
SCAN_INTERVAL: Final = 0.5
_PROC: Final = Path("/proc")


@dataclass(frozen=True, slots=True)
class Leftover:
    """A process still running below the certifying process."""

    pid: int
    command: str


@dataclass(frozen=True, slots=True)
class _Process:
    pid: int
    ppid: int
    state: str
    pgid: int
    sid: int
    started: int


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


def _read(pid: int) -> _Process | None:
    try:
        fields = (_PROC / str(pid) / "stat").read_bytes().rpartition(b")")[2].split()
    except OSError:
        return None
    if len(fields) < 20:
        return None
    return _Process(pid, int(fields[1]), fields[0].decode(), int(fields[2]), int(fields[3]), int(fields[19]))


def _table() -> dict[int, _Process]:
    """Every process /proc shows."""
    table: dict[int, _Process] = {}
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit() and (process := _read(int(entry))) is not None:
            table[process.pid] = process
    return table


def _command(pid: int) -> str:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return f"[pid {pid}]"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() or f"[pid {pid}]"


def _children(pid: int) -> set[int]:
    """The children of ``pid``, from the lists the kernel keeps per thread (no walk of /proc)."""
    found: set[int] = set()
    try:
        tasks = os.listdir(_PROC / str(pid) / "task")
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            found.update(int(child) for child in (_PROC / str(pid) / "task" / task / "children").read_text().split())
    return found


def _below(table: dict[int, _Process], root: int) -> list[_Process]:
    """The processes of ``table`` below ``root``, parents first."""
    children: dict[int, list[int]] = {}
    for process in table.values():
        children.setdefault(process.ppid, []).append(process.pid)
    found: list[_Process] = []
    stack = sorted(children.get(root, []))
    while stack:
        pid = stack.pop(0)
        found.append(table[pid])
        stack.extend(sorted(children.get(pid, [])))
    return found


def _marked(pid: int, mark: bytes) -> bool:
    try:
        return mark in (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _kill(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _signal(process: _Process, signum: int) -> None:
    """Signal ``process`` if its pid still names it (the start time matches), through a pidfd."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return
    try:
        now = _read(process.pid)
        if now is not None and now.started == process.started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(fd, signum)
    finally:
        os.close(fd)


def _killpg(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


class Reaper:
    """The certifying process's hold on everything a run starts (see the module docstring).

    Use as a context manager around the run: entering makes this process the subreaper
    and starts reaping; :meth:`environment` marks the run's processes; :meth:`protect`
    names the children someone else waits for (the suite's pytest); :meth:`sweep` ends
    what is left. Processes that were below this one before it started (the caller's own)
    are never touched.
    """

    def __init__(self, *, reap_interval: float = REAP_INTERVAL, scan_interval: float = SCAN_INTERVAL) -> None:
        self.tracked = False
        self._reap_interval, self._scan_interval = reap_interval, scan_interval
        self._me = os.getpid()
        self._mine = _read(self._me)
        self._token = uuid.uuid4().hex
        self._spare: frozenset[int] = frozenset()
        self._protected: set[int] = set()
        self._groups: set[int] = set()
        self._sessions: set[int] = set()
        self._own_groups: set[int] = set()
        self._own_sessions: set[int] = set()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: How many zombies waited to be reaped at most, at any look.
        self.most_zombies = 0

    @property
    def untracked(self) -> str:
        """What this platform does not track, for the certificate; empty where everything is."""
        return "" if self.tracked else UNTRACKED

    def environment(self) -> dict[str, str]:
        """The variable that marks the run: add it to the environment of what the run starts."""
        return {MARKER: self._token}

    def protect(self, pid: int) -> None:
        """A child of this process whose exit status someone else collects: never reap it."""
        with self._lock:
            self._protected.add(pid)

    @contextlib.contextmanager
    def spawning(self) -> Iterator[None]:
        """Hold reaping while a child is started and :meth:`protect`-ed, so it is never reaped in between."""
        with self._lock:
            yield

    def __enter__(self) -> Reaper:
        self.tracked = become_subreaper() and _PROC.is_dir()
        table = _table()
        self._spare = frozenset(p.pid for p in _below(table, self._me))
        # Groups and sessions this process and the caller's own processes live in are not the run's.
        for process in [p for p in table.values() if p.pid in self._spare or p.pid == self._me]:
            self._own_groups.add(process.pgid)
            self._own_sessions.add(process.sid)
        if self.tracked:
            self._thread = threading.Thread(target=self._watch, name="conformance-reaper", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.reap()

    # -- while the run goes on ------------------------------------------------------------------

    def _watch(self) -> None:
        next_scan = 0.0
        while not self._stop.is_set():
            self.reap()
            if time.monotonic() >= next_scan:
                self._note(_below(_table(), self._me))
                next_scan = time.monotonic() + self._scan_interval
            self._stop.wait(self._reap_interval)

    def _note(self, processes: Iterable[_Process]) -> None:
        with self._lock:
            for process in processes:
                if process.pid not in self._spare:
                    self._groups.add(process.pgid)
                    self._sessions.add(process.sid)

    def reap(self) -> dict[int, int]:
        """Collect every child of this process that has ended, but the protected ones; their
        wait statuses by pid."""
        statuses: dict[int, int] = {}
        with self._lock:
            zombies = [
                process
                for pid in _children(self._me)
                if pid not in self._protected and pid not in self._spare
                if (process := _read(pid)) is not None and process.state in ("Z", "X")
            ]
            self.most_zombies = max(self.most_zombies, len(zombies))
            self._note(zombies)  # an orphan's group and session outlive it in the processes it left
            for process in zombies:
                with contextlib.suppress(ChildProcessError):
                    pid, status = os.waitpid(process.pid, os.WNOHANG)
                    if pid:
                        statuses[pid] = status
        return statuses

    # -- at the end ----------------------------------------------------------------------------

    def _runs(self, table: dict[int, _Process]) -> list[_Process]:
        """The live processes of the run in ``table``."""
        mark = f"{MARKER}={self._token}".encode()
        below = {p.pid for p in _below(table, self._me)}
        since = self._mine.started if self._mine is not None else 0
        with self._lock:
            groups = self._groups - self._own_groups
            sessions = self._sessions - self._own_sessions
        found = []
        for process in table.values():
            if process.pid in self._spare or process.pid in self._protected or process.pid == self._me:
                continue
            if process.state in ("Z", "X"):
                continue
            ours = process.pid in below or (
                process.started >= since
                and (process.pgid in groups or process.sid in sessions or _marked(process.pid, mark))
            )
            if ours:
                found.append(process)
        return found

    def sweep(self, grace: float = 2.0, *, limit: float = 10.0) -> list[Leftover]:
        """End every process of the run: SIGTERM, then after ``grace`` seconds SIGKILL until none is left.

        Returns every process of the run that was running, in the order first seen.
        """
        self._stop.set()  # from here on this thread alone reaps: a pid it lists cannot be reused
        if self._thread is not None:
            self._thread.join(5)
        seen: dict[int, Leftover] = {}
        #: The children killed below, with their commands read just before.
        killed: dict[int, str] = {}

        def look() -> tuple[list[_Process], dict[int, _Process]]:
            for pid, status in self.reap().items():
                # Ended by the SIGKILL sent below: it was running, whatever it was read as.
                if pid in killed and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                    seen.setdefault(pid, Leftover(pid, killed[pid]))
            table = _table()
            found = self._runs(table)
            for process in found:
                seen.setdefault(process.pid, Leftover(process.pid, _command(process.pid)))
            return found, table

        found, _table_now = look()
        for process in found:
            _signal(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while found and time.monotonic() < deadline:
            time.sleep(0.05)
            found, _table_now = look()
        # SIGKILL, pass after pass, until one finds nothing: a chain that forks and exits
        # between passes is caught in a later one (its orphans are this process's children).
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            for pid in self._live_children():
                # Too short-lived for a walk of /proc to see, maybe: the kill is what shows it.
                seen.setdefault(pid, Leftover(pid, _command(pid)))
            # Every child is killed, whatever state it was last read in: a hopping daemon read
            # alive has forked and exited by the time it is read again. Its pid cannot name
            # another process meanwhile: only this thread reaps, and it has not yet.
            for pid in self._children_left():
                killed.setdefault(pid, _command(pid))
                _kill(pid, signal.SIGKILL)
            found, table = look()
            # Done when no process of the run is found and no child at all is left, not merely
            # no live one: a child read alive that has ended since may have forked on its way
            # out, and its orphan, now a child of this process, was not in the list read.
            if not found and not self._children_left():
                break
            mine = {process.pid for process in found}
            for process in found:
                members = {p.pid for p in table.values() if p.pgid == process.pgid and p.state not in ("Z", "X")}
                if process.pgid not in self._own_groups and members <= mine:
                    _killpg(process.pgid, signal.SIGKILL)  # the whole group at once: it is all the run's
                else:
                    _signal(process, signal.SIGKILL)
        self.reap()
        return list(seen.values())

    def _children_left(self) -> set[int]:
        """This process's children of the run, ended or not (zombies wait for `reap`)."""
        return _children(self._me) - self._spare - self._protected

    def _live_children(self) -> set[int]:
        return {
            pid
            for pid in self._children_left()
            if (process := _read(pid)) is not None and process.state not in ("Z", "X")
        }
