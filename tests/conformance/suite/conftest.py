"""Fixtures of the tests of the suite's helpers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.suite._fleets import Fleets


@pytest.fixture
def fleets(tmp_path: Path) -> Iterator[Fleets]:
    """A fleet host of this test's own (started on first use)."""
    served = Fleets(tmp_path)
    try:
        yield served
    finally:
        served.close()
