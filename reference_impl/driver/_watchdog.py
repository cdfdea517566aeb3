"""A watchdog process that ends the driver's stdio servers should the driver die without ending them.

Each stdio server leads a process group of its own, and the driver ends that group when the
server's run closes, on ``shutdown``, at the end of its input and on SIGTERM or SIGINT
(PRO-7.1, PRO-7.2). A
driver killed outright (SIGKILL, of it or of its whole process group) ends nothing: its
servers see the end of their input and may leave, but what they started in their group
stays. The watchdog covers that case. It is a small process in a session of its own (a
signal to the driver's group does not reach it), told over a pipe which groups are alive
(``+PGID`` and ``-PGID`` lines); when the pipe reaches end of file, which happens however
the driver ends, it ends every group still listed (SIGTERM, then SIGKILL) and exits.

A per-server ``PR_SET_PDEATHSIG`` was the other choice: it is Linux only, fires when the
*thread* that started the server ends rather than the process, and ends only the server,
not what the server started, so it would not do the job.

Run as a script (``python -I -S _watchdog.py``) it imports the standard library alone and
starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from typing import IO

__all__ = ["Watchdog"]

#: Seconds the watchdog gives the groups it ends between SIGTERM and SIGKILL.
GRACE = 1.0


class Watchdog:
    """The driver's side: starts the watchdog on the first group it is told of, and tells it the rest.

    Use it as a listener of :data:`reference_impl._groups.GROUPS`; :meth:`close` ends it.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None
        self._broken = False

    def __call__(self, change: str, pgid: int) -> None:
        if self._broken:
            return
        try:
            if self._pipe is None:
                self._start()
            assert self._pipe is not None
            self._pipe.write(f"{change}{pgid}\n".encode())
            self._pipe.flush()
        except OSError as error:
            # Without a watchdog the servers are still ended on every other way out.
            self._broken = True
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(f"the stdio servers' watchdog is not running: {error}\n")

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._pipe = self._process.stdin

    def close(self, timeout: float = 2.0) -> None:
        """End the watchdog (it ends whatever groups it still lists) and reap it."""
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                self._pipe.close()
        if self._process is not None:
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = self._pipe = None


def _running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` runs; a zombie, which no signal ends, does not."""
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:  # no /proc: a signal 0 says whether the group has members at all
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _end(groups: Iterable[int]) -> None:
    alive = set(groups)
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pgid in list(alive):
            try:
                os.killpg(pgid, signum)
            except (ProcessLookupError, PermissionError):
                alive.discard(pgid)
        deadline = time.monotonic() + GRACE
        while alive and time.monotonic() < deadline:
            alive = {pgid for pgid in alive if _running(pgid)}
            time.sleep(0.02)
        if not alive:
            return


def main() -> None:
    groups: set[int] = set()

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for raw in sys.stdin.buffer:
            line = raw.strip()
            with contextlib.suppress(ValueError):
                pgid = int(line[1:])
                # Only real process groups: never 0, -1 or a negative number, which signal far more.
                if line[:1] == b"+" and pgid > 1:
                    groups.add(pgid)
                elif line[:1] == b"-":
                    groups.discard(pgid)
    finally:
        _end(groups)


if __name__ == "__main__":
    main()
