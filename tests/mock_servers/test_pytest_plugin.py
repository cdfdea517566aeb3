"""The ``mcp_fleet`` fixture, used as a user uses it: in a pytest run of their own (pytester)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mock_servers import FleetArgumentError, FleetFactory, preset, read_ledger

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[2] / "mock_servers" / "README.md"
INI = "[pytest]\nfilterwarnings = error\nasyncio_default_fixture_loop_scope = function\n"


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- example: test_my_host.py -->\n```python\n(.*?)```", text, re.S)
    assert match, "the README has lost its example test"
    return match.group(1)


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini(INI)
    pytester.makepyfile(test_host=source)
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", *args)


@pytest.mark.e2e
def test_the_readme_example_passes_as_written(pytester: pytest.Pytester) -> None:
    result = run(pytester, readme_example())
    result.assert_outcomes(passed=2)


LEAKY = """
import json
import subprocess
import urllib.request

HELD = []  # the host keeps its process objects, as a leaky host would


def start_and_forget(connection):
    process = subprocess.Popen([connection["command"], *connection["args"]], env=connection["env"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\\n')
    process.stdin.flush()
    process.stdout.readline()  # the server is up; the host "forgets" to close it
    HELD.append(process)
    return process.pid


def test_leaves_a_server_running(mcp_fleet):
    fleet = mcp_fleet("seed-example", transport="stdio")
    print("LEAK", start_and_forget(fleet.servers["github"]), fleet.ledger_path)


def test_leaves_a_server_running_but_does_not_check(mcp_fleet):
    fleet = mcp_fleet("seed-example", transport="stdio", check_cleanup=False)
    print("LEAK", start_and_forget(fleet.servers["linear"]), fleet.ledger_path)
"""

OPEN_HTTP_SESSION = """

def test_opens_an_http_session_and_walks_away(mcp_fleet):
    fleet = mcp_fleet("seed-example")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    request = urllib.request.Request(fleet.servers["data"]["url"], data=json.dumps(hello).encode(), headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request) as response:
        assert b'"result"' in response.read()  # the handshake answered: the session is open
"""


@pytest.mark.e2e
def test_a_host_that_leaves_sessions_or_processes_behind_fails_at_teardown(pytester: pytest.Pytester) -> None:
    result = run(pytester, LEAKY + OPEN_HTTP_SESSION, "-s")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_a_server_running *",
            "*the MCP host left the fleet unclean (the servers were stopped):*",
            "*server 'github' (stdio, pid *): session never closed*",
            "*server 'github' (stdio, pid *): process still running*",
            "*ERROR at teardown of test_opens_an_http_session_and_walks_away*",
            "*server 'data' (http, session *): session never closed*",
        ]
    )
    # Checked or not, every leftover process was stopped (and recorded its exit).
    leaks = re.findall(r"LEAK (\d+) (\S+)", result.stdout.str())
    assert len(leaks) == 2
    for pid, ledger in leaks:
        exits = [e for e in read_ledger(ledger).of("process_exit") if e["pid"] == int(pid)]
        assert [e["reason"] for e in exits] == ["SIGTERM"]


@pytest.mark.e2e
def test_the_ini_option_turns_the_check_off_for_a_project(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI + "mcp_fleet_check_cleanup = false\n")
    pytester.makepyfile(test_host=LEAKY)
    # In a subprocess: the leaked servers' process objects must not end up in this one.
    pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist").assert_outcomes(passed=2)


@pytest.mark.e2e
def test_the_fixture_and_the_conformance_plugin_are_both_loaded(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:randomly")
    result.stdout.fnmatch_lines(
        [
            "*fixtures defined from conformance.plugin*",
            "sut *",
            "*fixtures defined from mock_servers.pytest_plugin*",
            "mcp_fleet *",
        ]
    )


@pytest.mark.e2e
def test_loading_the_plugin_imports_no_mcp_machinery() -> None:
    code = "import sys, mock_servers.pytest_plugin; print(sorted(m for m in ('mcp', 'faker', 'uvicorn') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_unknown_transport_is_refused(tmp_path: Path) -> None:
    factory = FleetFactory(tmp_path, lambda: None)
    with pytest.raises(FleetArgumentError, match="transport must be 'http' or 'stdio', got 'sse'"):
        factory(preset("seed-example"), transport="sse")  # type: ignore[arg-type]
