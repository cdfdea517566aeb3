"""Opening a first round over a served fleet, outside any property as several checks do."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest

from conformance import ConformanceError, Sut, load_sut
from conformance.suite._first_round import open_first_round
from conformance.suite._fleets import Fleets
from conformance.suite._strategies import FleetAndPolicies
from conformance.suite._wire import names
from mock_servers import FleetSpec, ServerSpec

FLEET: FleetAndPolicies = (FleetSpec(servers=(ServerSpec(id="s0", tool_count=3),)), {"s0": {"mode": "all"}})


@pytest.fixture
def sut() -> Iterator[Sut]:
    front = Sut(load_sut("reference"))
    asyncio.run(front.initialize())
    try:
        yield front
    finally:
        asyncio.run(front.aclose())


@pytest.mark.e2e
def test_a_fixed_case_opens_without_any_warning(sut: Sut, fleets: Fleets) -> None:
    with warnings.catch_warnings():
        # Hypothesis' deprecation of assume() outside a property among them.
        warnings.simplefilter("error")
        opened = open_first_round(sut, fleets, FLEET, 2)

    shown = names(opened.definitions(("POL-6.2",)))
    assert shown[:2] == ["base_0", "base_1"]
    assert sorted(shown[2:]) == sorted(f"s0__{t['name']}" for t in opened.tools["s0"])


def test_a_case_that_must_not_open_is_an_error_of_the_suite_not_a_finding(sut: Sut, fleets: Fleets) -> None:
    with pytest.raises(ConformanceError, match=r"must not open \(BUD-4.1"):
        open_first_round(sut, fleets, FLEET, 97)
