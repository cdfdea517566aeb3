"""The ``mcp_fleet`` fixture, used as a user uses it: in a pytest run of their own (pytester)."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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


ASYNC_HOST_TEST = """

import pytest


@pytest.mark.asyncio
async def test_an_async_test_of_the_host_uses_the_fixture_too(mcp_fleet):
    fleet = mcp_fleet("seed-example")
    catalog = await load_catalog(fleet.servers)
    assert sum(len(names) for names in catalog.values()) == 160
"""

# Host projects as they come. The environment of these tests has pytest-asyncio installed (the
# project's own tests need it); a host that installs this package alone does not get it (see
# test_installing_the_package_brings_no_asyncio_plugin), so `-p no:asyncio` stands for its
# absence. The third host uses pytest-asyncio itself, in strict mode.
HOSTS = {
    "filterwarnings-error": ("[pytest]\nfilterwarnings = error\n", ("-p", "no:asyncio"), ""),
    "no-asyncio-at-all": ("[pytest]\n", ("-p", "no:asyncio", "-p", "no:anyio"), ""),
    "own-asyncio-strict": (
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
        (),
        ASYNC_HOST_TEST,
    ),
}


# Each host project is a pytest run of its own; the one without any asyncio plugin runs with --full.
HOST_RUNS = [pytest.param(name, marks=pytest.mark.slow if name == "no-asyncio-at-all" else ()) for name in HOSTS]


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("host", HOST_RUNS)
def test_the_readme_example_passes_as_written_in_a_host_project_that_sees_no_conformance_options(
    host: str, pytester: pytest.Pytester
) -> None:
    ini, options, extra_tests = HOSTS[host]
    pytester.makeini(ini)
    pytester.makepyfile(test_host=readme_example() + extra_tests)

    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", *options)
    result.assert_outcomes(passed=3 if extra_tests else 2)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()

    shown = pytester.runpytest_subprocess("--help", *options).stdout.str()
    assert "mcp_fleet_check_cleanup" in shown
    for option in ("--sut", "--sut-cmd", "--clause", "--profile", "--conformance-"):
        assert option not in shown, f"{host}: pytest --help offers {option}"


@pytest.mark.e2e
def test_the_conformance_plugin_loads_when_asked_for(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:randomly", "-p", "conformance.plugin")
    result.stdout.fnmatch_lines(
        [
            "*fixtures defined from conformance.plugin*",
            "sut *",
            "*fixtures defined from mock_servers.pytest_plugin*",
            "mcp_fleet *",
        ]
    )
    shown = pytester.runpytest_subprocess("--help", "-p", "conformance.plugin").stdout.str()
    assert "--sut-cmd" in shown and "--conformance-thoroughness" in shown


def test_installing_the_package_brings_no_asyncio_plugin() -> None:
    """The pytest plugins of the package and of everything it requires (no extras) load in every
    run of a host project: none of them is pytest-asyncio's, and the package's own is the fleet's."""
    seen: set[str] = set()
    plugins: dict[str, str] = {}
    pending = ["mcp-adaptive-conformance"]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency of a dependency, not installed
        for entry in distribution.entry_points.select(group="pytest11"):
            plugins[entry.value] = str(distribution.metadata["Name"])
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)

    assert "pytest_asyncio.plugin" not in plugins, plugins
    assert "conformance.plugin" not in plugins, plugins
    assert plugins["mock_servers.pytest_plugin"] == "mcp-adaptive-conformance"
    assert "pytest-asyncio" not in seen


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


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.e2e
def test_the_ini_option_turns_the_check_off_for_a_project(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI + "mcp_fleet_check_cleanup = false\n")
    pytester.makepyfile(test_host=LEAKY)
    # In a subprocess: the leaked servers' process objects must not end up in this one.
    pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist").assert_outcomes(passed=2)


@pytest.mark.e2e
def test_loading_the_plugin_imports_no_mcp_machinery() -> None:
    code = "import sys, mock_servers.pytest_plugin; print(sorted(m for m in ('mcp', 'faker', 'uvicorn') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_unknown_transport_is_refused(tmp_path: Path) -> None:
    factory = FleetFactory(tmp_path, lambda: None)
    with pytest.raises(FleetArgumentError, match="transport must be 'http' or 'stdio', got 'sse'"):
        factory(preset("seed-example"), transport="sse")  # type: ignore[arg-type]
