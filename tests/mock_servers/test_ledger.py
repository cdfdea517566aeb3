from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_servers import Ledger, LedgerError, _ledger, read_ledger, wait_for_exits, wait_for_listing
from mock_servers._cli import main
from mock_servers._processes import start_time, valid_pid
from tests.fuzz import EXAMPLES, fuzzing

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


def test_a_listing_counts_from_a_first_page_served_after_the_change_to_its_last_page(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    ledger.record("tools_listed", "s", page=0, cursor=None, nextCursor=None, catalog=0)
    ledger.record("tools_listed", "other", page=0, cursor=None, nextCursor=None, catalog=1)
    assert read_ledger(path).listed_since("s", 0)
    assert not read_ledger(path).listed_since("s", 1)
    ledger.record("tools_listed", "s", page=0, cursor=None, nextCursor="1", catalog=1)
    assert not read_ledger(path).listed_since("s", 1)
    ledger.record("tools_listed", "s", page=1, cursor="1", nextCursor=None, catalog=1)
    assert read_ledger(path).listed_since("s", 1)
    assert not read_ledger(path).listed_since("s", 2)


def test_a_listing_whose_version_is_no_integer_follows_no_change(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path).record("tools_listed", "s", page=0, cursor=None, nextCursor=None, catalog="9")
    Ledger(path).record("tools_listed", "s", page=False, cursor=None, nextCursor=None, catalog=9)
    assert not read_ledger(path).listed_since("s", 0)


def test_wait_for_listing_returns_once_the_ledger_shows_the_listing_or_the_time_is_up(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    assert not wait_for_listing(path, "s", 0, 0.05)
    Ledger(path).record("tools_listed", "s", page=0, cursor=None, nextCursor=None, catalog=3)
    assert wait_for_listing(path, "s", 3, 60)


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
        'line 2: no "pid" that is a process id (an integer from 1 to the largest the system hands out)',
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


# Hostile ledgers: the host under test can write the file.

PIDS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([-1, 0, 1, 2**22, 2**31, 2**63, os.getpid()]),
    st.floats(),
    st.text(max_size=5),
    st.booleans(),
    st.none(),
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
EVENTS = st.fixed_dictionaries(
    {},
    optional={
        "event": st.sampled_from(["process_started", "process_exit", "session_opened", "session_closed"]) | VALUES,
        "pid": PIDS,
        "server": st.none() | st.text(max_size=5) | VALUES,
        "sessionId": VALUES,
        "seq": VALUES,
        "ts": VALUES,
        "started": VALUES,
        "page": VALUES,
        "name": VALUES,
        "fault": VALUES,
        "transport": VALUES,
    },
)
LINES = st.one_of(
    EVENTS.map(lambda event: json.dumps(event).encode()),
    st.binary(max_size=40),
    st.integers(1, 5000).map(lambda depth: b'{"event": "x", "pid": 1, "server": null, "a": ' + b"[" * depth),
)


@pytest.mark.parametrize("examples", EXAMPLES)
def test_no_line_a_host_can_write_crashes_the_reader_or_counts_as_a_live_process(examples: int) -> None:
    @fuzzing(examples)
    @given(st.lists(LINES, max_size=8))
    def check(lines: list[bytes]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "ledger.jsonl"
            path.write_bytes(b"\n".join(lines))
            view = read_ledger(path)
            for query in (view.sessions_open, view.processes_alive, view.summary, view.faults, view.calls):
                query()
            view.listed_pages("a")
            assert all(valid_pid(e["pid"]) and e["pid"] != 0 for e in view)
            alive = {e["pid"] for e in view.processes_alive()}
            assert alive <= {os.getpid()}
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                assert main(["ledger", str(path), "--events"]) in (0, 2)
            assert "Traceback" not in err.getvalue()

    check()


@pytest.mark.parametrize("pid", [-1, 0, -4242, 2**22 + 1, 2**40, 10**30])
def test_a_pid_that_names_no_single_process_is_skipped_and_never_alive(tmp_path: Path, pid: int) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text(json.dumps({"event": "process_started", "server": "s", "pid": pid}) + "\n")

    view = read_ledger(path)

    assert (len(view), view.skipped, view.processes_alive()) == (0, 1, [])
    assert "process id" in view.problems[0]


def test_a_pid_handed_to_another_process_is_not_the_server(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    mine = start_time(os.getpid())
    assert mine is not None
    Ledger(path).record("process_started", "reused", started=mine + 1)
    Ledger(path).record("process_started", "same", started=mine)

    assert [e["server"] for e in read_ledger(path).processes_alive()] == ["same"]


@pytest.mark.e2e
def test_a_server_reaped_while_the_ledger_looks_at_it_is_not_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.jsonl"
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    started = start_time(child.pid)
    Ledger(path).record("process_started", "s", pid=child.pid, started=started)

    def reaped_first(pid: int) -> int | None:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
        return start_time(pid)

    monkeypatch.setattr(_ledger, "start_time", reaped_first)

    assert read_ledger(path).processes_alive() == []


@pytest.mark.parametrize("where", ["missing/ledger.jsonl", "folder", "/proc/version"])
def test_a_ledger_that_cannot_be_written_is_an_error_at_once(tmp_path: Path, where: str) -> None:
    (tmp_path / "folder").mkdir()
    path = tmp_path / where

    with pytest.raises(LedgerError, match=f"cannot write the ledger {path}"):
        Ledger(path).record_or_raise("process_started", None)


def test_a_lone_surrogate_in_an_event_is_written_as_its_escape(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"

    Ledger(path).record_or_raise("tool_called", "s", name="t", arguments={"path": "\ud800"})

    assert read_ledger(path).calls("s")[0]["arguments"] == {"path": "\ud800"}
