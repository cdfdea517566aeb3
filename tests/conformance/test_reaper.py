"""certify's hold on the processes a driver starts: orphans reaped as they end, whatever is left
ended at the end (a daemon that forks and exits, again and again, included) and reported."""

from __future__ import annotations

import fcntl
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import _reaper
from conformance._reaper import MARKER, Reaper
from tests.conformance.cli_runs import SMOKE, certificate, environment, fake

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreapers and /proc are Linux's")

ROOT = Path(__file__).resolve().parents[2]
# Zombies certify may hold, at the middle look while the driver runs: what a factory of
# orphans (one every 10 ms) makes between two reaps. The middle, not the most: on a loaded
# machine the reaping thread may wait its turn for a while, where a pile only grows (hundreds
# by mid-run when nothing reaps).
ZOMBIE_BOUND = 64


def _stat(pid: str) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _zombie_children(pid: int) -> int:
    return sum(
        1
        for entry in os.listdir("/proc")
        if entry.isdigit() and (fields := _stat(entry)) is not None and fields[0] == "Z" and int(fields[1]) == pid
    )


def _held(lock: Path) -> bool:
    """Whether some process still holds a shared lock on ``lock`` (an exclusive one fails then)."""
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _end_incarnations(lock: Path) -> None:
    """Kill whatever incarnation of the daemon certify left, so a failing check leaves no survivor.

    An incarnation lives a few milliseconds before the next one takes over: look until the
    lock is free, killing every process whose environment names it.
    """
    mark = f"HOP_LOCK={lock}".encode()
    for _ in range(10_000):
        if not _held(lock):
            return
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and mark in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                continue


@pytest.mark.e2e
def test_a_hopping_daemon_and_a_zombie_factory_leave_no_zombie_pile_no_survivor_and_a_finding(tmp_path: Path) -> None:
    lock = tmp_path / "hopper.lock"
    lock.touch()
    command = [sys.executable, "-m", "conformance._cli", "certify", "-n", "1", "--sut-cmd", fake("hopper-and-zombies")]
    command += ["--out", str(tmp_path / "out"), "--", "-k", SMOKE]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=environment(HOP_LOCK=str(lock), HOP_GUARDIAN=str(os.getpid())),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    # Looks taken while the daemon lives, that is while the driver runs: before it starts and
    # after the sweep there is nothing to reap, and those looks would hide a pile in the median.
    looks: list[int] = []
    try:
        while True:
            zombies = _zombie_children(process.pid)
            if _held(lock):
                looks.append(zombies)
            try:
                process.wait(0.05)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stdout is not None
        output = process.stdout.read().decode(errors="replace")
        process.stdout.close()

    survived = _held(lock)
    _end_incarnations(lock)
    assert looks, "the daemon never ran: the check below could not fail"
    assert process.returncode == 1, output[-3000:]
    middle = statistics.median(looks)
    assert middle <= ZOMBIE_BOUND, f"certify held {middle:g} zombies at the middle look, {max(looks)} at most"
    assert not survived, "an incarnation of the daemon outlived certify"
    [failure] = [f for f in certificate(tmp_path / "out")["failures"] if f["label"] == "PRO-7.1"]
    assert "still running after the suite" in failure["message"]


@pytest.mark.e2e
def test_a_process_that_left_the_tree_is_found_by_the_mark_and_ended(tmp_path: Path) -> None:
    with Reaper() as reaper:
        env = {**os.environ, **reaper.environment()}
        # A double fork into a new session: its parent exits, so it is re-parented to the
        # subreaper; the mark is what else names it.
        script = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    print(os.getpid(), flush=True)\n    time.sleep(60)"
        with subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE) as parent:
            assert parent.stdout is not None
            daemon = int(parent.stdout.readline())
            parent.wait()
        assert MARKER in env and reaper.tracked

        left = reaper.sweep(grace=1)

    assert [process.pid for process in left] == [daemon]
    assert _stat(str(daemon)) is None


class _Kernel:
    """Processes as the sweep sees them, for a daemon faster than its looks: every read of a
    live incarnation finds that it has just forked its successor and exited (under load, the
    time between listing a child and reading its state is long enough for that)."""

    ME = 5_000_000  # past any pid_max: no /proc entry answers for these

    def __init__(self) -> None:
        self.state: dict[int, str] = {}
        self.status: dict[int, int] = {}
        self.next = self.ME + 1

    def spawn(self) -> int:
        pid, self.next = self.next, self.next + 1
        self.state[pid] = "S"
        return pid

    def children(self, pid: int) -> set[int]:
        return set(self.state) if pid == self.ME else set()

    def read(self, pid: int) -> _reaper._Process | None:
        if pid not in self.state:
            return None
        if self.state[pid] == "S":
            self.state[pid], self.status[pid] = "Z", 0
            self.spawn()
        return _reaper._Process(pid, self.ME, self.state[pid], pid, pid, pid)

    def kill(self, pid: int, signum: int) -> None:
        if self.state.get(pid) == "S" and signum == signal.SIGKILL:
            self.state[pid], self.status[pid] = "Z", signal.SIGKILL

    def waitpid(self, pid: int, options: int) -> tuple[int, int]:
        if self.state.get(pid) != "Z":
            raise ChildProcessError(pid)
        del self.state[pid]
        return pid, self.status.pop(pid)

    def table(self) -> dict[int, _reaper._Process]:
        listed = sorted(self.state)  # what a walk of /proc lists, read one by one after
        return {pid: process for pid in listed if (process := self.read(pid)) is not None}


def test_a_daemon_that_forks_and_exits_between_two_looks_is_still_ended_and_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child listed alive and read as ended has forked on its way out: its orphan, not in
    the list read, must still be looked for before the sweep may stop."""
    kernel = _Kernel()
    kernel.spawn()
    reaper = Reaper()
    reaper._me = kernel.ME
    for name, stand_in in {
        "_children": kernel.children,
        "_read": kernel.read,
        "_table": kernel.table,
        "_kill": kernel.kill,
        "_signal": lambda process, signum: kernel.kill(process.pid, signum) if kernel.read(process.pid) else None,
        "_killpg": kernel.kill,
        "_command": lambda pid: f"hopper {pid}",
        "_marked": lambda pid, mark: False,
    }.items():
        monkeypatch.setattr(_reaper, name, stand_in)
    monkeypatch.setattr(os, "waitpid", kernel.waitpid)

    leftovers = reaper.sweep(grace=0, limit=2)

    assert [pid for pid, state in kernel.state.items() if state != "Z"] == []
    assert leftovers
