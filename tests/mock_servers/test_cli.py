"""The mcp-fleet command line, run as users run it (a subprocess) where the process matters."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mock_servers import Ledger, read_ledger
from mock_servers._cli import main
from tests.mock_servers.mock_fleet_helpers import free_port_pair, list_all

ROOT = str(Path(__file__).resolve().parents[2])


def test_show_prints_a_table_of_servers_with_annotation_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "seed-example"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["server", "domain", "tools", "pages", "readOnly", "writable", "none", "faults"]
    assert lines[2].split()[:4] == ["github", "code_hosting", "40", "2×20"]
    assert "4 servers, 160 tools, seed 2024" in out


def test_show_with_tools_lists_every_tool_and_its_read_only_mark(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "adversarial", "--tools"]) == 0
    out = capsys.readouterr().out
    assert 'readOnly="true"' in out
    assert "  _search " in out


def test_a_bad_spec_file_exits_2_with_file_field_and_expectation_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "fleet.toml"
    spec.write_text('[[servers]]\nid = "a"\npage_size = -1\n')
    assert main(["show", str(spec)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"mcp-fleet: invalid spec: {spec}: servers[0].page_size: expected an integer between 1 and 100,000, got -1\n"
    )


@pytest.mark.parametrize("flag", ["--server-id", "--server"])
def test_an_unknown_server_for_stdio_exits_2(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stdio", "seed-example", flag, "gitlab"]) == 2
    assert "servers: github, linear, browser, data" in capsys.readouterr().err


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, "-m", "mock_servers", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.e2e
@pytest.mark.parametrize("processes", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_serve_on_a_port_in_use_says_so_in_one_line_and_exits_2(processes: int) -> None:
    first = free_port_pair()
    port = first + processes - 1  # with two processes, the second one's port is the one taken
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        done = run_cli("serve", "seed-example", "--port", str(first), "--processes", str(processes))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"mcp-fleet serve: cannot listen on 127.0.0.1:{port}: already in use\n"


@pytest.mark.parametrize("args", [["--port", "99999"], ["--port", "-1"], ["--processes", "0"], ["--session-idle", "0"]])
def test_serve_with_an_impossible_option_says_so_in_one_line_and_exits_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "seed-example", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mcp-fleet serve: ")


@pytest.mark.e2e
def test_show_into_a_pipe_closed_early_exits_quietly() -> None:
    env = {**os.environ, "PYTHONPATH": ROOT}
    command = [sys.executable, "-m", "mock_servers", "show", "realistic", "--json"]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == b"{\n"
        process.stdout.close()  # as `| head -1` does
        assert process.wait(60) == 141
        assert process.stderr.read() == b""


def test_schema_prints_the_shipped_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "mcp-fleet spec"
    assert schema["required"] == ["servers"]


@pytest.mark.e2e
def test_ledger_summarises_events_sessions_processes_and_faults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path, transport="stdio")
    ledger.record("session_opened", "github")
    ledger.record("tools_listed", "github", page=0)
    ledger.record("fault", "github", fault="slow")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    ledger.record("process_started", "linear", pid=gone.pid)
    assert main(["ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["server", "fault", "process_started", "session_opened", "tools_listed"]
    assert "4 events" in out
    assert "sessions still open: 1" in out
    assert "processes still alive: 0" in out
    assert "faults fired: github:slow ×1" in out


def test_ledger_reports_lines_it_cannot_read_and_summarises_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path).record("tools_listed", "github", page=0)
    with path.open("ab") as file:
        file.write(b'{"event": "tool_called"}\n\xff\n{"seq": 9, "pid": 1, "server": "a", "event": "x\xc3')
    assert main(["ledger", str(path)]) == 0
    captured = capsys.readouterr()
    assert "1 events (3 lines skipped)" in captured.out
    assert captured.err.splitlines() == [
        f'mcp-fleet ledger: {path}: skipped line 2: no "pid" that is a process id (an integer from 1 to the largest the system hands out)',
        f"mcp-fleet ledger: {path}: skipped line 3: not UTF-8 (byte 0xff at column 1)",
        f"mcp-fleet ledger: {path}: skipped line 4: not UTF-8 (byte 0xc3 at column 48); it is the last line "
        "and has no newline, so its writer was probably cut off",
    ]


def test_a_file_that_is_not_a_ledger_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n- milk\n")
    assert main(["ledger", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"mcp-fleet ledger: {path} is not a ledger: no line of it is a ledger event"
    )


@pytest.mark.slow
@pytest.mark.e2e
def test_serve_large_starts_answers_and_stops_on_sigterm_leaving_no_process(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    command = [sys.executable, "-m", "mock_servers", "serve", "--preset", "large", "--ledger", str(ledger)]
    env = {**os.environ, "PYTHONPATH": ROOT}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as process:
        try:
            assert process.stdout is not None
            endpoints = json.loads(process.stdout.readline())
            assert len(endpoints["servers"]) == 100
            assert anyio.run(count_tools, endpoints["servers"]["monitor-99"]) == 100
            process.send_signal(signal.SIGTERM)
            assert process.wait(30) == 0
        finally:
            if process.poll() is None:
                process.kill()
    view = read_ledger(ledger)
    assert view.of("process_exit")[0]["reason"] == "SIGTERM"
    assert view.processes_alive() == []
    assert view.listed_pages("monitor-99") == [0, 1]


async def count_tools(url: str) -> int:
    async with Client(url) as client:
        return len(await list_all(client))


def test_ledger_of_a_folder_says_it_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"mcp-fleet ledger: {tmp_path} is a folder; give the ledger file in it\n"


def test_ledger_with_forged_pids_neither_crashes_nor_reports_them_alive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.jsonl"
    forged = [{"event": "process_started", "server": "s", "pid": pid} for pid in (-1, 0, 2**63, 10**400)]
    path.write_text("".join(json.dumps(event) + "\n" for event in forged))
    Ledger(path).record("tools_listed", "s", page=0)

    assert main(["ledger", str(path)]) == 0

    captured = capsys.readouterr()
    assert "processes still alive: 0" in captured.out and "1 events (4 lines skipped)" in captured.out
    assert "Traceback" not in captured.err


def test_serve_with_an_unknown_preset_names_the_presets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--preset", "nope"]) == 2
    assert capsys.readouterr().err.startswith("mcp-fleet serve: --preset: no preset named 'nope'; presets: ")


@pytest.mark.e2e
@pytest.mark.parametrize("command", [["serve", "seed-example"], ["stdio", "seed-example", "--server-id", "github"]])
@pytest.mark.parametrize(
    "where", ["missing/ledger.jsonl", *(pytest.param(w, marks=pytest.mark.slow) for w in ("folder", "/proc/version"))]
)
def test_a_ledger_that_cannot_be_written_fails_at_start_with_exit_2(
    tmp_path: Path, command: list[str], where: str
) -> None:
    (tmp_path / "folder").mkdir()
    path = tmp_path / where

    done = run_cli(*command, "--ledger", str(path), timeout=60)

    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"mcp-fleet {command[0]}: cannot write the ledger {path}"), done.stderr
    assert "Traceback" not in done.stderr
