"""The watchdog ends the process groups it was told of when its input ends, and no others."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from mock_servers._processes import pid_alive, wait_for_pids
from reference_impl.driver import _watchdog
from reference_impl.driver._watchdog import Watchdog

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


def _group() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def test_at_the_end_of_its_input_it_ends_the_groups_still_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    listed, removed, forged = _group(), _group(), _group()
    lines = f"+{listed.pid}\n+{removed.pid}\n-{removed.pid}\n+-1\n+0\n+1\nnonsense\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))
    try:
        _watchdog.main()

        assert listed.wait(5) is not None
        assert removed.poll() is None and forged.poll() is None
    finally:
        for group in (listed, removed, forged):
            group.kill()
            group.wait()


def test_the_driver_side_starts_one_watchdog_that_outlives_a_killed_driver_long_enough() -> None:
    group = _group()
    watchdog = Watchdog()
    try:
        watchdog("+", group.pid)
        watchdog("+", group.pid)
        process = watchdog._process
        assert process is not None

        watchdog.close()  # as the end of the driver would: the pipe closes

        assert process.returncode == 0
        wait_for_pids([group.pid], 5)
        assert group.wait(5) is not None and not pid_alive(group.pid)
    finally:
        group.kill()
        group.wait()
