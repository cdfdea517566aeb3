"""Fixtures of the shipped suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance import Sut
from conformance.suite._fleets import Fleets
from conformance.suite._probes import vector_diagnosis as _vector_diagnosis
from conformance.suite._vectors import Diagnosis


@pytest.fixture(scope="session")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleets]:
    """The fleet server of this pytest process (started on first use)."""
    manager = Fleets(tmp_path_factory.mktemp("fleets"))
    try:
        yield manager
    finally:
        manager.close()


@pytest.fixture(scope="session")
def vector_diagnosis(sut: Sut, fleets: Fleets) -> Iterator[Diagnosis]:
    """The lexical vector probes against the SUT, each run once in this pytest process, and the
    sentences a difference is blamed on."""
    with _vector_diagnosis(sut, fleets) as diagnosis:
        yield diagnosis
