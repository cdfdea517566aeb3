"""The property guard: inconclusive examples neither fail nor filter a property."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import Inconclusive
from conformance._properties import PropertyGuard


def guarded(body: Any, *, max_examples: int = 20) -> tuple[Any, PropertyGuard]:
    """``body(n)`` as a Hypothesis property over integers, its inner test guarded."""

    @settings(max_examples=max_examples, database=None, deadline=None)
    @given(st.integers(0, 1000))
    def prop(n: int) -> None:
        body(n)

    handle: Any = prop.hypothesis  # type: ignore[attr-defined]
    guard = PropertyGuard(
        handle.inner_test,
        max_examples=max_examples,
        fixtures=(),
        shrink_time=5.0,
        deadline=None,
        broken=lambda: None,
        on_shrinking=lambda _message: None,
    )
    handle.inner_test = guard.wrapper()
    return prop, guard


def test_examples_with_nothing_to_check_pass_for_hypothesis_and_no_health_check_fires() -> None:
    def body(n: int) -> None:
        if n % 50:  # 98% of examples: far more than Hypothesis' filter health check lets through
            raise Inconclusive("", "the SUT activated nothing")

    prop, guard = guarded(body, max_examples=60)

    prop()

    assert guard.inconclusive() is None
    assert guard.stats["examples"] == 60


def test_a_property_none_of_whose_examples_had_anything_to_check_is_inconclusive() -> None:
    def body(n: int) -> None:
        raise Inconclusive("", "the SUT activated nothing")

    prop, guard = guarded(body)

    prop()

    outcome = guard.inconclusive()
    assert outcome is not None and outcome.because == ""
    assert outcome.reason == "the SUT activated nothing (in each of its 20 examples)"


def test_a_clause_that_broke_first_makes_the_property_inconclusive_naming_it() -> None:
    def body(n: int) -> None:
        if n == 0:
            raise Inconclusive("SEL-1.1", "the first round left no tool out")

    prop, guard = guarded(body)

    prop()

    outcome = guard.inconclusive()
    assert outcome is not None and outcome.because == "SEL-1.1"
    assert guard.stats["shrink_steps"] == 0


def test_a_finding_on_another_example_still_fails_the_property() -> None:
    def body(n: int) -> None:
        if n == 0:
            raise Inconclusive("SEL-1.1", "the first round left no tool out")
        if n > 10:
            raise AssertionError("a finding")

    prop, _guard = guarded(body)

    with pytest.raises(AssertionError, match="a finding"):
        prop()


def test_hypothesis_own_health_check_still_stops_filtering_outside_the_guard() -> None:
    """The project's own properties keep Hypothesis' health checks: only the shipped suite's
    guard turns an example with nothing to check into a pass."""
    from hypothesis import assume
    from hypothesis.errors import FailedHealthCheck

    @settings(database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(0, 1000))
    def prop(n: int) -> None:
        assume(n % 50 == 0)

    with pytest.raises(FailedHealthCheck):
        prop()
