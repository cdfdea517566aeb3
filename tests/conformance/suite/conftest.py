"""Fixtures of the tests of the suite's helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from conformance import Sut, load_sut
from conformance.suite._fleets import Fleets
from tests.conformance.suite.hosts import Edit, Edited, Front, OpenEdit


@pytest.fixture(scope="session")
def shared_fleets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleets]:
    """One fleet host per worker (started on first use), as the suite's own runs have: a host
    costs a second or two to start, more than most of the tests that use it."""
    served = Fleets(tmp_path_factory.mktemp("fleets"))
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def fleets(shared_fleets: Fleets) -> Fleets:
    """The worker's fleet host, with no fleet of an earlier test among the recent ones (as
    before each test of the suite)."""
    shared_fleets.recent.clear()
    return shared_fleets


@pytest.fixture
def front() -> Iterator[Front]:
    """Start the reference as a SUT, its definitions and run parameters passed through the
    edits given; every one started is closed after the test."""
    started: list[Sut] = []

    def start(edit: Edit | None = None, opening: OpenEdit | None = None) -> Sut:
        reference = load_sut("reference")
        sut = Sut(reference if edit is None and opening is None else Edited(reference, edit, opening))
        asyncio.run(sut.initialize())
        started.append(sut)
        return sut

    yield start
    for sut in started:
        asyncio.run(sut.aclose())
