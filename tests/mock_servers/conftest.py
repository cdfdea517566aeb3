"""Shared fixtures: one fleet host per test session (or per xdist worker), and Node for the TypeScript client."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from mock_servers import FleetHost
from tests.mock_servers.mock_fleet_helpers import NODE_DIR


@pytest.fixture(scope="session")
def fleet_host() -> Iterator[FleetHost]:
    with FleetHost.start() as host:
        yield host


@pytest.fixture(scope="session")
def node() -> str:
    """The ``node`` executable, with the official TypeScript SDK installed beside ts_client.mjs."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: the TypeScript SDK client check needs them")
    if not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, timeout=300, capture_output=True
        )
    return node
