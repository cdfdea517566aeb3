"""Fixtures of the shipped suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.suite._fleets import Fleets


@pytest.fixture(scope="session")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleets]:
    """The fleet server of this pytest process (started on first use)."""
    manager = Fleets(tmp_path_factory.mktemp("fleets"))
    try:
        yield manager
    finally:
        manager.close()
