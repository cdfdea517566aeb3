from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mock_servers import Ledger, read_ledger, wait_for_exits

WRITER = """
import sys
from mock_servers import Ledger
ledger = Ledger(sys.argv[1], transport="stdio")
for i in range(200):
    ledger.record("tool_called", sys.argv[2], name="t", arguments={"i": i, "pad": "x" * 3000})
"""


@pytest.mark.e2e
def test_several_processes_append_whole_lines_to_one_ledger(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    root = str(Path(__file__).resolve().parents[2])
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"s{n}"], env={"PYTHONPATH": root}) for n in range(4)
    ]
    assert [w.wait(60) for w in writers] == [0, 0, 0, 0]
    view = read_ledger(path)
    assert len(view) == 800
    for n in range(4):
        calls = view.calls(f"s{n}")
        assert [c["arguments"]["i"] for c in calls] == list(range(200))
        assert [c["seq"] for c in calls] == list(range(1, 201))


def test_a_missing_ledger_reads_as_empty_and_a_null_ledger_writes_nothing(tmp_path: Path) -> None:
    Ledger(None).record("tool_called", "s", name="t")
    assert len(read_ledger(tmp_path / "absent.jsonl")) == 0


def test_sessions_are_matched_per_server_and_process(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.record("session_opened", "a")
    ledger.record("session_opened", "b")
    ledger.record("session_closed", "a")
    view = read_ledger(tmp_path / "ledger.jsonl")
    assert [e["server"] for e in view.sessions_open()] == ["b"]
    assert view.every_session_closed("a")
    assert not view.every_session_closed()


@pytest.mark.e2e
def test_a_process_that_exited_without_a_record_is_not_alive(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    Ledger(path).record("process_started", "gone", pid=child.pid)
    Ledger(path).record("process_started", "me")
    alive = read_ledger(path).processes_alive()
    assert [e["server"] for e in alive] == ["me"]


def test_the_summary_counts_events_per_server(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.record("tools_listed", "a", page=0)
    ledger.record("tools_listed", "a", page=1)
    ledger.record("fleet_added", None)
    view = read_ledger(tmp_path / "ledger.jsonl")
    assert view.summary() == {"a": {"tools_listed": 2}, "-": {"fleet_added": 1}}
    assert view.listed_pages("a") == [0, 1]


@pytest.mark.e2e
def test_wait_for_exits_returns_once_a_started_process_has_exited(tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger.jsonl"
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    Ledger(ledger_path).record("process_started", None, pid=child.pid)
    assert read_ledger(ledger_path).processes_alive()

    assert child.stdin is not None
    child.stdin.close()
    view = wait_for_exits(ledger_path, timeout=10)

    assert view.processes_alive() == []
    child.wait()


@pytest.mark.e2e
def test_wait_for_exits_gives_up_after_the_timeout_and_names_who_is_left(tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger.jsonl"
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        Ledger(ledger_path).record("process_started", None, pid=child.pid)
        view = wait_for_exits(ledger_path, timeout=0.2)
        assert [event["pid"] for event in view.processes_alive()] == [child.pid]
    finally:
        child.kill()
        child.communicate()


def test_lines_that_are_not_events_are_skipped_and_described(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path).record("tools_listed", "a", page=0)
    with path.open("ab") as file:
        file.write(b'{"seq": 2, "server": "a", "event": "tool_called"}\n')  # no pid
        file.write(b"\xff\xfe not text\n")
        file.write(b"[1, 2]\n")
        file.write('{"seq": 3, "pid": 1, "server": "a", "event": "tool_called", "name": "é'.encode()[:-1])  # torn
    view = read_ledger(path)
    assert [e["event"] for e in view] == ["tools_listed"]
    assert view.skipped == 4
    assert view.problems == (
        'line 2: no "pid" integer',
        "line 3: not UTF-8 (byte 0xff at column 1)",
        "line 4: a JSON list, not an event object",
        "line 5: not UTF-8 (byte 0xc3 at column 70); it is the last line and has no newline, "
        "so its writer was probably cut off",
    )


@pytest.mark.e2e
def test_sessions_of_a_process_that_died_without_a_record_are_not_open(tmp_path: Path) -> None:
    # What `kill -9` of `mcp-fleet serve` leaves behind: session_opened and nothing after it.
    path = tmp_path / "ledger.jsonl"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    ledger = Ledger(path, transport="http")
    ledger.record("session_opened", "gone", pid=child.pid, era="legacy", sessionId="s1")
    ledger.record("session_opened", "here", era="legacy", sessionId="s2")
    assert [e["server"] for e in read_ledger(path).sessions_open()] == ["here"]
