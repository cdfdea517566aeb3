"""Stdio servers forked by a fork server: served as alone, ended as the process the host started."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from mock_servers import (
    Faults,
    FleetHost,
    FleetSpec,
    ForkServer,
    ServerSpec,
    generate_tools,
    read_ledger,
    stdio_command,
    stdio_params,
    wait_for_exits,
)
from mock_servers._processes import pid_alive, wait_for_pids
from tests.mock_servers.mock_fleet_helpers import list_all

pytestmark = pytest.mark.e2e

SERVER = ServerSpec(id="github", tool_count=30, page_size=12, seed=9)
FLEET = FleetSpec(servers=(SERVER, ServerSpec(id="dead", faults=Faults(fail_to_start=True))))
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServer]:
    with ForkServer().start(wait=30) as started:
        yield started


def _parent_of(pid: int) -> int:
    # The field after the command's closing parenthesis: state, then the parent's pid.
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _launch(path: str, ledger: Path, server_id: str = "github") -> subprocess.Popen[bytes]:
    command = stdio_command(FLEET, server_id, ledger, forkserver=path)
    return subprocess.Popen(
        [command["command"], *command["args"]],
        env=command["env"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _ping(process: subprocess.Popen[bytes]) -> dict[str, object]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(PING).encode() + b"\n")
    process.stdin.flush()
    reply: dict[str, object] = json.loads(process.stdout.readline())
    return reply


def _close(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _server_pid(ledger: Path) -> int:
    started = read_ledger(ledger).of("process_started")
    assert len(started) == 1, started
    return int(started[0]["pid"])


async def test_a_forked_server_serves_and_records_its_whole_life_as_one_started_alone(
    forkserver: ForkServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with Client(stdio_params(FLEET, "github", ledger, forkserver=forkserver.path)) as client:
        tools = await list_all(client)
        parent = _parent_of(_server_pid(ledger))

    assert [t.name for t in tools] == [t["name"] for t in generate_tools(SERVER)]
    assert parent == forkserver.pid
    view = wait_for_exits(ledger, 10)
    assert [e["event"] for e in view] == [
        "process_started",
        "session_opened",
        "discovered",
        *["tools_listed"] * 3,
        "session_closed",
        "process_exit",
    ]
    assert view.processes_alive() == []


def test_closing_stdin_ends_the_server_and_its_launcher_with_status_0(forkserver: ForkServer, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    launcher = _launch(forkserver.path, ledger)
    assert _ping(launcher)["id"] == 1
    assert _server_pid(ledger) != launcher.pid

    assert launcher.stdin is not None
    launcher.stdin.close()

    assert launcher.wait(30) == 0
    _close(launcher)
    assert [e["reason"] for e in read_ledger(ledger).of("process_exit")] == ["stdin closed"]


def test_sigterm_to_the_launcher_reaches_the_server_and_both_end_as_it_would_alone(
    forkserver: ForkServer, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    launcher = _launch(forkserver.path, ledger)
    assert _ping(launcher)["id"] == 1

    launcher.send_signal(signal.SIGTERM)

    assert launcher.wait(30) == 128 + signal.SIGTERM
    _close(launcher)
    exits = read_ledger(ledger).of("process_exit")
    assert [(e["code"], e["reason"]) for e in exits] == [(128 + signal.SIGTERM, "SIGTERM")]


def test_a_launcher_killed_outright_takes_its_server_with_it(forkserver: ForkServer, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    launcher = _launch(forkserver.path, ledger)
    assert _ping(launcher)["id"] == 1
    server = _server_pid(ledger)

    launcher.kill()
    launcher.wait(30)
    _close(launcher)

    assert wait_for_exits(ledger, 10).processes_alive() == []
    assert not pid_alive(server)


def test_a_server_that_fails_to_start_fails_its_launcher_with_status_1_and_its_words(
    forkserver: ForkServer, tmp_path: Path
) -> None:
    launcher = _launch(forkserver.path, tmp_path / "ledger.jsonl", "dead")
    _out, err = launcher.communicate(timeout=30)

    assert launcher.returncode == 1
    assert b"fail_to_start" in err


def test_with_no_fork_server_listening_the_launcher_serves_itself(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    launcher = _launch(str(tmp_path / "nobody.sock"), ledger)
    try:
        assert _ping(launcher)["id"] == 1
        assert _server_pid(ledger) == launcher.pid
    finally:
        _close(launcher)
        launcher.wait(30)


def test_servers_outlive_their_fork_server_and_end_with_their_launchers(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    with ForkServer().start(wait=30) as forkserver:
        launcher = _launch(forkserver.path, ledger)
        assert _ping(launcher)["id"] == 1
        folder = Path(forkserver.path).parent

    assert not folder.exists()
    assert _ping(launcher)["id"] == 1
    assert launcher.stdin is not None
    launcher.stdin.close()
    # Its status went with the fork server: the launcher ends, unable to tell it.
    assert launcher.wait(30) == 1
    _close(launcher)
    assert wait_for_exits(ledger, 10).processes_alive() == []


def test_a_host_asked_for_one_forks_a_fork_server_that_ends_with_it(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    with FleetHost.start(forkserver=True) as host:
        assert host.forkserver is not None
        folder = Path(host.forkserver).parent
        launcher = _launch(host.forkserver, ledger)
        assert _ping(launcher)["id"] == 1
        forked_by = _parent_of(_server_pid(ledger))
        assert _parent_of(forked_by) == host.process.pid

    assert not folder.exists()
    assert not pid_alive(forked_by)
    # The server it forked is its launcher's to end, not the host's.
    assert _ping(launcher)["id"] == 1
    assert launcher.stdin is not None
    launcher.stdin.close()
    launcher.wait(30)
    _close(launcher)
    assert wait_for_exits(ledger, 10).processes_alive() == []


def test_a_host_not_asked_for_one_has_no_fork_server() -> None:
    with FleetHost.start() as host:
        assert host.forkserver is None


def test_a_fork_server_ends_when_the_process_that_started_it_is_killed(tmp_path: Path) -> None:
    code = "import sys; from mock_servers import ForkServer; f = ForkServer().start(wait=30); print(f.pid, f.path, flush=True); sys.stdin.read()"
    starter = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert starter.stdout is not None
    pid, path = starter.stdout.readline().split()
    forkserver = int(pid)
    assert pid_alive(forkserver)

    starter.kill()
    starter.wait(30)
    _close(starter)

    wait_for_pids([forkserver], 10)
    assert not pid_alive(forkserver)
    assert not Path(path.decode()).parent.exists()  # its private folder went with it


def test_a_host_killed_before_its_fork_server_listens_leaves_no_folder() -> None:
    # The caller and the host both killed while the host imports (what certify's sweep does
    # to a run stopped early): the folder is made by the process that listens, so there is none.
    launched = FleetHost.launch(forkserver=True)
    assert launched.forkserver is not None
    folder = Path(launched.forkserver).parent
    assert not folder.exists()
    launched.group.kill()
    launched.close()  # reaps it, closes its pipes
    assert not folder.exists()


def test_a_fork_server_refuses_a_private_folder_someone_else_made() -> None:
    squatted = Path(tempfile.mkdtemp(prefix="mcp-fork-"))
    try:
        path = str(squatted / "fork.sock")
        process = subprocess.run(
            [sys.executable, "-m", "mock_servers", "forkserver", path],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        assert process.returncode != 0 and "FileExistsError" in process.stderr
        assert not Path(path).exists()
    finally:
        shutil.rmtree(squatted)
