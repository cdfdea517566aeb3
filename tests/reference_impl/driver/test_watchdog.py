"""The watchdog ends the process groups it was told of when its input ends, and no others."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from mock_servers._processes import pid_alive, wait_for_pids
from reference_impl.driver import _watchdog
from reference_impl.driver._watchdog import Watchdog

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


def _group() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


@pytest.mark.e2e
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


@pytest.mark.e2e
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


def test_a_watchdog_that_cannot_start_is_reported_once_and_then_left_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("no processes left")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    watchdog = Watchdog()

    watchdog("+", 4242)
    watchdog("+", 4243)
    watchdog.close()

    assert capsys.readouterr().err == "the stdio servers' watchdog is not running: no processes left\n"


@pytest.mark.e2e
def test_without_proc_a_group_is_running_while_a_signal_still_reaches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    group = _group()

    def no_proc(path: str) -> list[str]:
        raise FileNotFoundError(path)

    try:
        monkeypatch.setattr(os, "listdir", no_proc)
        assert _watchdog._running(group.pid)
        group.kill()
        group.wait()
        assert not _watchdog._running(group.pid)
    finally:
        group.kill()
        group.wait()
