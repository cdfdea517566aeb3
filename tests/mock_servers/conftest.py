"""Shared fixtures: one fleet host per test session (or per xdist worker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mock_servers import FleetHost


@pytest.fixture(scope="session")
def fleet_host() -> Iterator[FleetHost]:
    with FleetHost.start() as host:
        yield host
