"""Process groups: start a child in a group of its own, signal the group, wait on pidfds, kill what is left.

A child started by `ProcessGroup.start` leads a new session, so it and everything it starts
(unless they leave the group on purpose) can be signalled at once and waited for together.
Waits use pidfds where the platform has them (Linux), so nothing polls; elsewhere they fall
back to short sleeps. Every group still running when the interpreter exits is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import select
import signal
import subprocess
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

__all__ = [
    "ProcessGroup",
    "is_descendant",
    "pid_alive",
    "signal_verified",
    "start_time",
    "valid_pid",
    "wait_for_pids",
]

_LIVE: weakref.WeakSet[ProcessGroup] = weakref.WeakSet()
_FALLBACK_POLL = 0.01


class ProcessGroup:
    """A child process that leads its own process group, and the means to end the whole group.

    Use `start` (or ``with ProcessGroup.start(argv) as group:``), then `stop` when done:
    it closes the child's stdin (end of input is the polite way to ask a server to go),
    waits, sends SIGTERM to the group, waits, sends SIGKILL to whatever is left, reaps
    the leader and closes the pipes. `stop` is idempotent.

    Attributes:
        popen: the `subprocess.Popen` of the leader.
        pgid: the process group id (the leader's pid).
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pgid = popen.pid
        self._stopped = False
        _LIVE.add(self)

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stdin: int | IO[Any] | None = subprocess.PIPE,
        stdout: int | IO[Any] | None = subprocess.PIPE,
        stderr: int | IO[Any] | None = None,
    ) -> ProcessGroup:
        """Start ``argv`` (no shell) as the leader of a new session and process group.

        Raises:
            OSError: the program could not be started.
        """
        popen = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
        return cls(popen)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def signal(self, signum: int) -> None:
        """Send ``signum`` to every process of the group (nothing happens if it is gone)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signum)

    def members(self) -> list[int]:
        """The pids of the group's processes that are still running (zombies excluded)."""
        return group_members(self.pgid)

    def wait(self, timeout: float) -> int | None:
        """The leader's exit status, waiting at most ``timeout`` seconds; None if it still runs."""
        try:
            return self.popen.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def wait_group(self, timeout: float) -> bool:
        """Wait until every process of the group has exited; whether that happened in time."""
        deadline = time.monotonic() + timeout
        while True:
            self.popen.poll()  # reap the leader, so it does not linger as a zombie member
            members = self.members()
            if not members:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            wait_for_pids(members, min(left, 1.0))

    def stop(self, grace: float = 2.0, *, close_stdin_first: bool = True, close_output: bool = True) -> int | None:
        """End the whole group and return the leader's exit status (None if it could not be reaped).

        Closing stdin first gives the leader ``grace`` seconds to leave by itself; then the
        group gets SIGTERM and another ``grace`` seconds, then SIGKILL. Without
        ``close_output`` the child's stdout and stderr are left to whoever reads them: closing
        a stream another thread is reading blocks until that read ends.
        """
        if not self._stopped:
            self._stopped = True
            steps: list[int | None] = [None] if close_stdin_first and self.popen.stdin is not None else []
            for step in [*steps, signal.SIGTERM, signal.SIGKILL]:
                if step is None:
                    self.close_stdin()
                else:
                    self.signal(step)
                if self.wait_group(grace if step != signal.SIGKILL else max(grace, 5.0)):
                    break
            _close(self.popen.stdin)
            if close_output:
                _close(self.popen.stdout)
                _close(self.popen.stderr)
            _LIVE.discard(self)
        return self.wait(1.0)

    def close_stdin(self) -> None:
        """Close the child's stdin: the polite way to ask a server on stdin to go."""
        _close(self.popen.stdin)

    def kill(self) -> None:
        """SIGKILL the whole group at once, without waiting."""
        self.signal(signal.SIGKILL)

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ProcessGroup(pgid={self.pgid}, argv={self.popen.args!r})"


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def group_members(pgid: int) -> list[int]:
    """Running (not zombie) processes in process group ``pgid``; from /proc on Linux."""
    proc = Path("/proc")
    if not proc.is_dir():  # pragma: no cover - not Linux
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in _proc_entries(proc):
        try:
            fields = (proc / entry / "stat").read_bytes().rpartition(b")")[2].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry))
    return members


def _proc_entries(proc: Path) -> Iterable[str]:
    try:
        return [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:  # pragma: no cover
        return []


@functools.cache
def _pid_limit() -> int:
    """One more than the largest process id this system hands out."""
    with contextlib.suppress(OSError, ValueError):
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    return 2**31


def valid_pid(value: object) -> bool:
    """Whether ``value`` can be the id of one process: an integer from 1 to the system's maximum.

    0, -1 and other negative numbers are not: ``kill`` takes them for groups, or for every
    process the caller may signal.
    """
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value < _pid_limit()


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    except OSError:
        return None


def start_time(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks after boot (/proc); None where unknown.

    With the pid, it names one process: a pid can be reused, the pair cannot.
    """
    fields = _stat(pid) if valid_pid(pid) else None
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def is_descendant(pid: int, ancestor: int) -> bool:
    """Whether ``pid`` runs below ``ancestor`` (its parent, its parent's parent, …), from /proc."""
    seen = 0
    while valid_pid(pid) and pid != 1 and seen < 4096:
        fields = _stat(pid)
        if fields is None or len(fields) < 2:
            return False
        pid, seen = int(fields[1]), seen + 1
        if pid == ancestor:
            return True
    return False


def _environment_has(pid: int, name: str, value: str) -> bool:
    try:
        entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"{name}={value}".encode() in entries


def signal_verified(
    pid: int, signum: int, *, started: int, ancestor: int, marker: tuple[str, str] | None = None
) -> bool:
    """Signal process ``pid`` only once it is shown to be the process meant; whether it was signalled.

    Shown means: a valid pid whose start time is ``started`` (so not a reuse of the pid), and
    that runs below ``ancestor`` or carries the environment variable ``marker`` (name,
    value). The signal goes through a pidfd opened before the checks, so the process
    checked is the one signalled. Where pidfds or /proc are missing nothing is signalled.
    """
    if not valid_pid(pid) or pid == os.getpid():
        return False
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return False
    try:
        if start_time(pid) != started:
            return False
        if not (is_descendant(pid, ancestor) or (marker is not None and _environment_has(pid, *marker))):
            return False
        try:
            signal.pidfd_send_signal(fd, signum)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie counts as exited; an invalid pid never runs)."""
    if not valid_pid(pid):
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    fields = _stat(pid)
    if fields:
        return fields[0] not in (b"Z", b"X")
    # No /proc entry: its parent reaped it between the two looks, or there is no /proc here.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for_pids(pids: Iterable[int], timeout: float) -> None:
    """Block until every process of ``pids`` has exited or ``timeout`` seconds passed.

    The processes need not be children of this one. With pidfds the wait sleeps in the
    kernel until an exit; without them it polls.
    """
    deadline = time.monotonic() + timeout
    fds: list[int] = []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                continue
            except (AttributeError, OSError):  # pragma: no cover - no pidfds here
                _poll_until_gone(pid, deadline)
        while fds:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select(fds, [], [], left)
            for fd in ready:
                fds.remove(fd)
                os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)


def _poll_until_gone(pid: int, deadline: float) -> None:  # pragma: no cover - not Linux
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(_FALLBACK_POLL)


@atexit.register
def _kill_leftovers() -> None:
    for group in list(_LIVE):
        group.kill()
