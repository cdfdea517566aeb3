"""Fixtures of the conformance harness tests.

The ``pytester`` plugin is requested by the test modules that use it: pytest refuses
``pytest_plugins`` in a conftest below the top level.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FAKE_DRIVER = Path(__file__).with_name("fake_driver.py")
# The ini of projects run by pytester; their in-process runs import the plugin's package
# before pytest could rewrite its asserts.
INI = (
    "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    "filterwarnings = ignore:Module already imported:pytest.PytestAssertRewriteWarning\n"
)


@pytest.fixture
def fake_driver_argv() -> Callable[..., list[str]]:
    """The command line of the fake driver in a given start mode."""

    def argv(mode: str = "good") -> list[str]:
        return [sys.executable, str(FAKE_DRIVER), mode]

    return argv
