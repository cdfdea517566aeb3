"""Fixtures of the conformance harness tests.

The ``pytester`` plugin is requested by the test modules that use it: pytest refuses
``pytest_plugins`` in a conftest below the top level.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

FAKE_DRIVER = Path(__file__).with_name("fake_driver.py")
#: The fake driver's command. It runs nothing of the measured packages, so it starts without
#: coverage: measured, it and the processes some of its modes fork by the hundred would each
#: write an empty data file (a tenth of a second apiece).
FAKE_DRIVER_ARGV = (
    "env",
    "-u",
    "COVERAGE_PROCESS_START",
    "-u",
    "COVERAGE_PROCESS_CONFIG",
    sys.executable,
    str(FAKE_DRIVER),
)
# The ini of projects run by pytester: they ask for the conformance plugin (installing the
# package does not load it); their in-process runs import the plugin's package before
# pytest could rewrite its asserts.
INI = (
    "[pytest]\naddopts = -p conformance.plugin\nasyncio_default_fixture_loop_scope = function\n"
    "filterwarnings = ignore:Module already imported:pytest.PytestAssertRewriteWarning\n"
)

# An in-process SUT for pytester projects: ``fake_sut:core`` claims the core profile,
# ``fake_sut:lexical`` both, and ``fake_sut:broken`` cannot be created.
FAKE_SUT = """
from pathlib import Path


class FakeSut:
    def __init__(self, profiles):
        self.profiles = list(profiles)
        self.runs = 0

    async def initialize(self):
        return {"name": "fake-sut", "version": "9.9", "profiles": self.profiles}

    async def open_run(self, params):
        self.runs += 1
        return f"run-{self.runs}"

    async def definitions(self, run_id):
        return []

    async def call(self, run_id, name, arguments):
        return {"content": [], "isError": True}

    async def request(self, run_id, extra_tools=()):
        return list(extra_tools)

    async def close_run(self, run_id):
        with Path("closed.log").open("a") as log:
            log.write(run_id + "\\n")

    async def aclose(self):
        pass


def core():
    return FakeSut(["core"])


def lexical():
    return FakeSut(["core", "lexical"])


def broken():
    raise RuntimeError("cannot reach the toolset")
"""


@pytest.fixture
def fake_driver_argv() -> Callable[..., list[str]]:
    """The command line of the fake driver in a given start mode."""

    def argv(mode: str = "good") -> list[str]:
        return [*FAKE_DRIVER_ARGV, mode]

    return argv


class TextSnapshot(SingleFileSnapshotExtension):
    """One readable file per snapshot, named for the test."""

    _write_mode = WriteMode.TEXT

    @classmethod
    def get_snapshot_name(cls, *, test_location, index):  # type: ignore[no-untyped-def,override]
        return str(super().get_snapshot_name(test_location=test_location, index=index))


@pytest.fixture
def text_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """A snapshot kept as a plain text file in ``__snapshots__/<test module>/``."""
    return snapshot.use_extension(TextSnapshot)
