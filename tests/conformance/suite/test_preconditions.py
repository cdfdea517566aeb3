"""The controls a check runs before it blames its own sentence, against the reference and
against hosts that break the sentence the control names."""

from __future__ import annotations

import pytest

from conformance import Inconclusive
from conformance.suite._fleets import Fleets
from conformance.suite._preconditions import first_round_capacity_kept, required_all_active, required_left_out
from tests.conformance.suite.hosts import Front, one_more, twelve_per_server


@pytest.mark.e2e
def test_the_reference_passes_the_controls(front: Front, fleets: Fleets) -> None:
    sut = front(None)

    required_all_active(sut, fleets)
    first_round_capacity_kept(sut, fleets)
    assert required_left_out(sut, fleets) == ""


@pytest.mark.e2e
def test_a_host_that_leaves_required_tools_out_leaves_other_checks_inconclusive_naming_pol_6_2(
    front: Front, fleets: Fleets
) -> None:
    sut = front(twelve_per_server)

    assert required_left_out(sut, fleets).startswith("18 of them")
    with pytest.raises(Inconclusive) as caught:
        required_all_active(sut, fleets)
    assert caught.value.because == "POL-6.2"

    sut.cited = frozenset({"POL-6.2"})  # the checks of POL-6.2 report it themselves
    required_all_active(sut, fleets)


@pytest.mark.e2e
def test_a_host_whose_capacity_is_one_too_many_leaves_the_checks_of_refusals_inconclusive_naming_bud_1_2(
    front: Front, fleets: Fleets
) -> None:
    sut = front(one_more)

    sut.cited = frozenset({"ERR-2.1"})  # a check of refusals at the capacity's edge
    with pytest.raises(Inconclusive) as caught:
        first_round_capacity_kept(sut, fleets)
    assert caught.value.because == "BUD-1.2"

    sut.cited = frozenset()  # any other check stops at the watermark first
    with pytest.raises(Inconclusive) as caught:
        first_round_capacity_kept(sut, fleets)
    assert caught.value.because == "BUD-1.1"

    sut.cited = frozenset({"BUD-1.2"})
    first_round_capacity_kept(sut, fleets)
