"""``mcp-fleet serve``: spreading a fleet over processes, stable URLs, and ending the whole tree on a signal."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mock_servers import FleetArgumentError, FleetSpec, ServerSpec, preset, read_ledger
from mock_servers._processes import pid_alive, wait_for_pids
from mock_servers._serve import endpoint_urls, partition
from tests.mock_servers.mock_fleet_helpers import free_port_pair, list_all, post_initialize

ROOT = str(Path(__file__).resolve().parents[2])


def test_a_fleet_is_cut_in_order_into_parts_of_about_equal_tool_counts() -> None:
    counts = [40, 5, 5, 5, 5, 20, 0, 0, 10, 10]
    spec = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=n) for i, n in enumerate(counts)))
    parts = partition(spec, 3)
    assert [[s.id for s in part.servers] for part in parts] == [
        ["s0"],
        ["s1", "s2", "s3", "s4"],
        ["s5", "s6", "s7", "s8", "s9"],
    ]
    assert [len(p.servers) for p in partition(spec, 50)] == [1] * 10
    with pytest.raises(FleetArgumentError, match="processes must be a positive integer"):
        partition(spec, 0)


async def tool_count(url: str) -> int:
    async with Client(url) as client:
        return len(await list_all(client))


@pytest.mark.e2e
def test_serve_over_two_processes_gives_stable_urls_and_sigint_ends_every_process(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    port = free_port_pair()
    command = [sys.executable, "-m", "mock_servers", "serve", "seed-example", "--port", str(port)]
    command += ["--processes", "2", "--ledger", str(ledger)]
    env = {**os.environ, "PYTHONPATH": ROOT}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            first = json.loads(process.stdout.readline())
            assert first["servers"] == endpoint_urls(preset("seed-example"), port, processes=2)
            assert first["pid"] == process.pid and len(first["pids"]) == 3
            assert [anyio.run(tool_count, first["servers"][s]) for s in ("github", "data")] == [40, 40]
            session = post_initialize(first["servers"]["linear"])  # a client that then vanishes

            process.send_signal(signal.SIGINT)
            assert process.wait(60) == 0
            assert b"Traceback" not in process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
    wait_for_pids(first["pids"], timeout=30)
    assert [pid for pid in first["pids"] if pid_alive(pid)] == []
    view = read_ledger(ledger)
    assert [(e["pid"], e["reason"]) for e in view.of("process_exit")] == [(process.pid, "SIGINT")]
    assert sorted(e["pid"] for e in view.of("fleet_removed")) == sorted(first["pids"][1:])
    assert [e["sessionId"] for e in view.of("session_closed")] == [session]


def test_sigterm_with_calls_in_flight_ends_serve_without_a_traceback(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = tmp_path / "slow.json"
    spec.write_text(json.dumps({"servers": [{"id": "slow", "tool_count": 2, "faults": {"slow": 120}}]}))
    command = [sys.executable, "-m", "mock_servers", "serve", str(spec), "--ledger", str(ledger)]
    env = {**os.environ, "PYTHONPATH": ROOT}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            url = json.loads(process.stdout.readline())["servers"]["slow"]
            clients = [threading.Thread(target=_list_in_vain, args=(url,), daemon=True) for _ in range(3)]
            for client in clients:
                client.start()
            deadline = time.monotonic() + 30
            while len(read_ledger(ledger).faults("slow", "slow")) < 3 and time.monotonic() < deadline:
                wait_for_pids([process.pid], 0.05)  # the three listings are in flight, each held 120 s

            process.send_signal(signal.SIGTERM)

            assert process.wait(30) == 0
            assert b"Traceback" not in process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()


def _list_in_vain(url: str) -> None:
    with contextlib.suppress(BaseException):
        anyio.run(tool_count, url)
