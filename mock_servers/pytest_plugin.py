"""The ``mcp_fleet`` pytest fixture: real mock MCP servers for the tests of an MCP host.

Installed through the ``pytest11`` entry point, so any project that installs this
distribution can write::

    def test_my_host_lists_every_page(mcp_fleet):
        fleet = mcp_fleet("seed-example")            # a preset, a spec file or a FleetSpec
        host = MyHost(fleet.servers)                 # {"github": {"type": "http", "url": ...}, ...}
        host.refresh_tools()
        assert fleet.ledger.listed_pages("github") == [0, 1]

``transport="stdio"`` describes stdio servers instead (``{"type": "stdio", "command": ...,
"args": [...], "env": {...}}``) for the host to spawn. When the test ends, a session the host
never closed or a server process still running fails it (at teardown); pass
``check_cleanup=False``, or set the ini option ``mcp_fleet_check_cleanup = false``, to only
stop them. Loading the plugin imports nothing heavy: the fleet machinery loads when a test
first asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mock_servers._fixture import FleetFactory

__all__ = ["mcp_fleet"]

CHECK_CLEANUP_HELP = (
    "whether mcp_fleet fails a test whose host left a session open or a server process running "
    "(default true; the servers are stopped either way)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("mcp_fleet_check_cleanup", CHECK_CLEANUP_HELP, type="bool", default=True)


class _Host:
    """The session's fleet host process, started the first time an HTTP fleet is wanted."""

    def __init__(self) -> None:
        self.host: Any = None

    def __call__(self) -> Any:
        if self.host is None:
            from mock_servers._host import FleetHost

            self.host = FleetHost.spawn()
        return self.host

    def close(self) -> None:
        host, self.host = self.host, None
        if host is not None:
            host.close()


@pytest.fixture(scope="session")
def _mcp_fleet_host() -> Iterator[_Host]:
    host = _Host()
    try:
        yield host
    finally:
        host.close()


@pytest.fixture
def mcp_fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, _mcp_fleet_host: _Host
) -> Iterator[FleetFactory]:
    """Serve mock MCP fleets for this test: ``mcp_fleet(spec, transport="http"|"stdio")`` → `ServedFleet`."""
    from mock_servers._fixture import FleetFactory

    check = bool(request.config.getini("mcp_fleet_check_cleanup"))
    factory = FleetFactory(tmp_path_factory.mktemp("mcp-fleet"), _mcp_fleet_host, check_cleanup=check)
    yield factory
    problems = factory.close()
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        pytest.fail(
            "the MCP host left the fleet unclean (the servers were stopped):\n"
            f"{listed}\n"
            "(close every client before the test ends, or pass check_cleanup=False to mcp_fleet)",
            pytrace=False,
        )
