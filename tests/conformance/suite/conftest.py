"""Fixtures of the tests of the suite's helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import Sut, load_sut
from conformance.suite._fleets import Fleets
from tests.conformance.suite.hosts import Edit, Edited, Front, OpenEdit


@pytest.fixture
def fleets(tmp_path: Path) -> Iterator[Fleets]:
    """A fleet host of this test's own (started on first use)."""
    served = Fleets(tmp_path)
    try:
        yield served
    finally:
        served.close()


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
