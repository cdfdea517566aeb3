"""The fleet fixture's teardown: it signals the servers a host left running, and nothing else,
whatever the ledger (which the host under test can write) says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mock_servers import FleetFactory, FleetSpec, LedgerError, ServerSpec, read_ledger
from mock_servers._processes import start_time, wait_for_pids

SPEC = FleetSpec(servers=(ServerSpec(id="s", tool_count=2),))


def _no_host() -> None:
    raise AssertionError("a stdio fleet needs no fleet host")


class Signals(list[tuple[int, int]]):
    """Every signal sent, as (pid, signal); only those to ``allowed`` pids really go out."""

    def __init__(self) -> None:
        super().__init__()
        self.allowed: set[int] = set()


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> Signals:
    sent = Signals()
    real_pidfd_send, real_kill = signal.pidfd_send_signal, os.kill

    def pidfd_send_signal(fd: int, signum: int, *args: object) -> None:
        info = Path(f"/proc/self/fdinfo/{fd}").read_text()
        pid = int(next(line.split()[1] for line in info.splitlines() if line.startswith("Pid:")))
        sent.append((pid, signum))
        if pid in sent.allowed:
            real_pidfd_send(fd, signum)

    def kill(pid: int, signum: int) -> None:
        if signum == 0:  # a probe: does the process exist
            real_kill(pid, signum)
        else:
            sent.append((pid, signum))

    monkeypatch.setattr(signal, "pidfd_send_signal", pidfd_send_signal)
    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(os, "killpg", lambda pgid, signum: sent.append((-pgid, signum)))
    return sent


def _start_server(fleet_servers: dict[str, dict[str, Any]], ledger: Path) -> subprocess.Popen[bytes]:
    """Start the fleet's stdio server as a host would, and leave it running."""
    server = fleet_servers["s"]
    env = {**os.environ, **server["env"]}
    process = subprocess.Popen(
        [server["command"], *server["args"]],
        env=env,
        stdin=subprocess.PIPE,  # both kept open: the server leaves when either closes
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    while not read_ledger(ledger).of("process_started", "s"):
        wait_for_pids([process.pid], 0.05)
        assert process.poll() is None, "the server did not start"
    return process


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


def test_teardown_signals_a_server_left_running_and_no_process_a_forged_line_names(
    tmp_path: Path, signals: Signals
) -> None:
    factory = FleetFactory(tmp_path, _no_host)
    fleet = factory(SPEC, transport="stdio")
    server = _start_server(fleet.servers, fleet.ledger_path)
    signals.allowed.add(server.pid)
    parent = os.getppid()
    forged = [
        {"event": "process_started", "server": "s", "pid": -1},
        {"event": "process_started", "server": "s", "pid": 0},
        {"event": "process_started", "server": "s", "pid": 2**40},
        # A process of someone else's, with the start time that names it: the pid and time
        # are right, but it does not run below the test, nor carry the fixture's mark.
        {"event": "process_started", "server": "s", "pid": parent, "started": start_time(parent)},
    ]
    with fleet.ledger_path.open("a") as ledger:
        ledger.writelines(json.dumps(event) + "\n" for event in forged)

    try:
        problems = factory.close()
    finally:
        server.kill()
        server.wait()
        _close_pipes(server)

    assert {pid for pid, _signum in signals} == {server.pid}
    assert signals[0] == (server.pid, signal.SIGTERM)
    assert any(f"pid {server.pid}): process still running" in problem for problem in problems)
    assert any(f"(pid {parent}): not signalled" in problem for problem in problems)


def test_a_server_left_running_is_ended_and_reported(tmp_path: Path) -> None:
    factory = FleetFactory(tmp_path, _no_host)
    fleet = factory(SPEC, transport="stdio")
    server = _start_server(fleet.servers, fleet.ledger_path)

    problems = factory.close()

    assert server.wait(10) == 128 + signal.SIGTERM  # it recorded its exit on SIGTERM
    _close_pipes(server)
    assert [e["reason"] for e in read_ledger(fleet.ledger_path).of("process_exit")] == ["SIGTERM"]
    assert problems == [
        f"server 's' (stdio, pid {server.pid}): session never closed",
        f"server 's' (stdio, pid {server.pid}): process still running",
    ]


@pytest.mark.parametrize("where", ["missing/ledger.jsonl", "folder"])
def test_a_ledger_the_fixture_cannot_write_is_an_error_when_the_fleet_is_asked_for(tmp_path: Path, where: str) -> None:
    (tmp_path / "folder").mkdir()

    with pytest.raises(LedgerError, match="cannot write the ledger"):
        FleetFactory(tmp_path, _no_host)(SPEC, transport="stdio", ledger=tmp_path / where)
