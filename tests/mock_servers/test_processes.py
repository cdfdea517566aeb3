"""Process groups: a child and everything it starts are ended together, and waits use pidfds."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from mock_servers import ProcessGroup
from mock_servers._processes import pid_alive, wait_for_pids

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
