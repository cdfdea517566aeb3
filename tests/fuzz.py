"""Crash fuzzing as a standing test: a few examples in the default run, many under ``--full``.

A fuzz test takes ``examples`` from :data:`EXAMPLES` and runs its property with
:func:`fuzzing`::

    @pytest.mark.parametrize("examples", EXAMPLES)
    def test_x_never_crashes(examples: int) -> None:
        @fuzzing(examples)
        @given(...)
        def check(value): ...

        check()
"""

from __future__ import annotations

from typing import Final

import pytest
from hypothesis import HealthCheck, settings

__all__ = ["EXAMPLES", "fuzzing"]

#: How many examples a fuzz test draws: a few by default, many in ``scripts/test --full``.
EXAMPLES: Final = [
    pytest.param(25, id="quick"),
    pytest.param(1000, id="long", marks=pytest.mark.slow),
]


def fuzzing(examples: int) -> settings:
    """Hypothesis settings for a crash fuzz of ``examples`` examples: no deadline, no database."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
