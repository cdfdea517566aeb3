"""The suite's properties draw runs that open: generated, never filtered."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.suite._explore import BASES, FLEETS, plan
from conformance.suite._strategies import FleetAndPolicies, fleets_with_policies, opening
from mock_servers import FleetSpec, ServerSpec

# The widest fleets and base counts any property of the suite draws, errors included.
WIDE = fleets_with_policies(max_servers=3, max_tools=40)


# Drawing a fleet builds its catalogs, which a loaded machine makes slow to generate; every
# other health check stays on.
# What these check is what a draw holds, not how fast it comes: a slow or loaded machine takes
# longer than Hypothesis's default deadline to build a fleet of a hundred tools.
SLOW_TO_DRAW = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


@SLOW_TO_DRAW
@given(WIDE, st.integers(0, 97), st.booleans())
def test_every_draw_becomes_a_run_that_opens(fleet: FleetAndPolicies, base_count: int, discovery: bool) -> None:
    opened, base = opening(fleet, base_count, discovery=discovery)

    model = plan(opened, base)
    assert model.error is None, model.why
    assert model.discovery or not discovery
    assert 0 <= base <= base_count
    assert opened[0] is fleet[0]


@SLOW_TO_DRAW
@given(FLEETS, BASES)
def test_a_draw_that_opens_as_drawn_is_left_as_it_is(fleet: FleetAndPolicies, base_count: int) -> None:
    model = plan(fleet, base_count)
    if model.error is not None:
        return

    assert opening(fleet, base_count) == (fleet, base_count)


def test_required_tools_over_the_capacity_make_the_base_tools_give_way_first() -> None:
    spec = FleetSpec(servers=(ServerSpec(id="s0", tool_count=30), ServerSpec(id="s1", tool_count=30)))
    fleet: FleetAndPolicies = (spec, {"s0": {"mode": "all", "maxActiveTools": 30}, "s1": {}})

    opened, base = opening(fleet, 90, discovery=True)

    assert opened == fleet and base == 96 - 1 - 30


def test_required_tools_beyond_96_rank_instead_and_max_active_tools_makes_room_for_them() -> None:
    spec = FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=40) for i in range(3)))
    fleet: FleetAndPolicies = (spec, {f"s{i}": {"mode": "all", "maxActiveTools": 5} for i in range(3)})

    (_, policies), base = opening(fleet, 50)

    assert [p["mode"] for p in policies.values()] == ["auto", "all", "all"]
    assert [p["maxActiveTools"] for p in policies.values()] == [5, 40, 40]
    assert base == 96 - 1 - 80
