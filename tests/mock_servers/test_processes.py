"""Process groups: a child and everything it starts are ended together, and waits use pidfds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from mock_servers import ProcessGroup, _processes
from mock_servers._processes import pid_alive, signal_verified, start_time, valid_pid, wait_for_pids

pytestmark = pytest.mark.e2e

# A parent that ignores SIGTERM and the end of its input, with a grandchild that does the same.
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(600)"],
    stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(600)
"""


def test_stop_ends_a_group_that_ignores_end_of_input_and_sigterm() -> None:
    group = ProcessGroup.start([sys.executable, "-c", STUBBORN])
    assert group.popen.stdout is not None
    grandchild = int(group.popen.stdout.readline())
    assert sorted(group.members()) == sorted([group.pid, grandchild])

    code = group.stop(grace=0.2)

    assert code == -signal.SIGKILL
    assert group.members() == []
    assert not pid_alive(grandchild)


def test_a_child_that_leaves_at_the_end_of_its_input_gets_no_signal() -> None:
    with ProcessGroup.start([sys.executable, "-c", "import sys; sys.stdin.read()"]) as group:
        assert group.members() == [group.pid]
    assert group.popen.returncode == 0
    assert group.stop() == 0  # idempotent


def test_wait_for_pids_returns_once_every_process_has_exited() -> None:
    children = [subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)]
    children.append(subprocess.Popen([sys.executable, "-c", "pass"]))
    for child in children:
        if child.stdin is not None:
            child.stdin.close()
    wait_for_pids([c.pid for c in children], timeout=30)
    assert [c.wait(1) for c in children] == [0, 0]


def test_wait_for_pids_gives_up_at_the_deadline() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        wait_for_pids([child.pid], timeout=0.1)
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.communicate()


def test_a_process_reaped_while_it_is_looked_at_has_exited(monkeypatch: pytest.MonkeyPatch) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # a zombie: signals still reach it
    read_stat = _processes._stat

    def reaped_first(pid: int) -> list[bytes] | None:
        child.wait()
        return read_stat(pid)

    monkeypatch.setattr(_processes, "_stat", reaped_first)

    assert not pid_alive(child.pid)


@pytest.mark.parametrize("value", [-1, 0, -12, 2**22 + 1, 2**31, 10**30, True, 1.0, "12", None])
def test_only_an_integer_the_system_hands_out_is_a_process_id(value: object) -> None:
    assert not valid_pid(value)
    assert not pid_alive(value)  # type: ignore[arg-type]


def test_a_process_id_is_any_integer_from_1_to_the_largest_the_system_hands_out() -> None:
    assert valid_pid(1) and valid_pid(os.getpid())


def test_a_child_shown_to_be_the_one_started_is_signalled() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = start_time(child.pid)
        assert started is not None

        assert not signal_verified(child.pid, signal.SIGTERM, started=started + 1, ancestor=os.getpid())
        assert child.poll() is None
        assert signal_verified(child.pid, signal.SIGTERM, started=started, ancestor=os.getpid())
        assert child.wait(10) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()


def test_a_process_not_below_the_ancestor_and_without_the_mark_is_never_signalled() -> None:
    parent = os.getppid()
    started = start_time(parent)
    assert started is not None

    # Signal 0 only checks: the parent of this test run is not ours to signal, and is not.
    assert not signal_verified(parent, 0, started=started, ancestor=os.getpid())
    assert not signal_verified(parent, 0, started=started, ancestor=os.getpid(), marker=("MCP_FLEET_FIXTURE", "x"))
    assert not signal_verified(-1, 0, started=0, ancestor=os.getpid())
    assert not signal_verified(os.getpid(), 0, started=start_time(os.getpid()) or 0, ancestor=parent)


def test_a_process_not_below_the_ancestor_is_signalled_when_it_carries_the_mark() -> None:
    env = {**os.environ, "MCP_FLEET_FIXTURE": "token"}
    marked = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = start_time(marked.pid)
        assert started is not None
        # `unrelated` is no ancestor of `marked`: only the mark can show it is the one meant.
        assert not signal_verified(
            marked.pid, 0, started=started, ancestor=unrelated.pid, marker=("MCP_FLEET_FIXTURE", "x")
        )
        assert signal_verified(
            marked.pid, 0, started=started, ancestor=unrelated.pid, marker=("MCP_FLEET_FIXTURE", "token")
        )
    finally:
        for child in (marked, unrelated):
            child.kill()
            child.wait()
