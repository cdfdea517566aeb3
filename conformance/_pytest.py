"""The active half of the pytest plugin, registered only when a SUT is named.

It starts the SUT at session start (in every xdist worker, and briefly in the xdist
controller for the report header), asks it who it is, skips tests of profiles not under
test as not applicable, closes runs a test left open, and shuts the SUT down at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import pytest
import pytest_asyncio

from conformance._clauses import Profile, profile_of
from conformance._driver import DriverSut
from conformance._errors import ConformanceError, Nonconformance, OutcomeError
from conformance._loading import driver_argv, load_sut
from conformance._sut import Implementation, Sut
from conformance.plugin import SESSION_KEY

__all__ = ["CLAUSES_KEY", "Settings", "SutSession", "clauses_of"]

_T = TypeVar("_T")

#: The clause ids an item cites, set at collection.
CLAUSES_KEY: Final = pytest.StashKey[tuple[str, ...]]()
_PROFILES: Final[dict[str, frozenset[Profile]]] = {
    "core": frozenset({"core"}),
    "lexical": frozenset({"lexical"}),
    "all": frozenset({"core", "lexical"}),
}


@dataclass(frozen=True, slots=True)
class Settings:
    """What the options and ini values ask for."""

    sut: str | None
    sut_cmd: str | None
    profile: str | None
    timeout: float

    @property
    def describe(self) -> str:
        if self.sut_cmd is not None:
            return f"--sut-cmd {shlex.quote(self.sut_cmd)}"
        return f"--sut {self.sut}"


class SutSession:
    """The SUT of one pytest process and what it claimed."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.front: Sut | None = None
        self.implementation: Implementation | None = None

    @property
    def profiles(self) -> frozenset[Profile]:
        """The profiles whose tests run."""
        if self.settings.profile is not None:
            return _PROFILES[self.settings.profile]
        claimed = self.implementation.profiles if self.implementation else ()
        return _PROFILES["all"] if "lexical" in claimed else _PROFILES["core"]

    def start(self) -> None:
        """Build the SUT and run ``initialize``.

        Raises:
            pytest.UsageError: the SUT cannot be loaded or started, or answers badly.
        """
        settings = self.settings
        try:
            if settings.sut_cmd is not None:
                driver = DriverSut(driver_argv(settings.sut_cmd), timeout=settings.timeout)
                self.front = Sut(driver, describe=settings.describe)
            else:
                adapter = load_sut(settings.sut or "")
                self.front = Sut(adapter, timeout=settings.timeout, describe=settings.describe)
            self.implementation = _run(self.front.initialize())
        except (ConformanceError, Nonconformance, OutcomeError) as exc:
            self.close()
            raise pytest.UsageError(f"mcp-conformance: {settings.describe}: {exc}") from None

    def close(self) -> None:
        """Close runs left open and shut the SUT down; idempotent."""
        front, self.front = self.front, None
        if front is not None:
            with contextlib.suppress(ConformanceError, Nonconformance, OutcomeError):
                _run(front.aclose())

    def header(self) -> list[str]:
        impl = self.implementation
        if impl is None:
            return [f"mcp-conformance: {self.settings.describe} (not started)"]
        claimed = ", ".join(impl.profiles) or "nothing"
        chosen = ", ".join(sorted(self.profiles))
        source = f"--profile {self.settings.profile}" if self.settings.profile else "as claimed"
        return [
            f"mcp-conformance: {self.settings.describe}: {impl.name} {impl.version}, claims {claimed}",
            f"mcp-conformance: profiles under test: {chosen} ({source}); per-call timeout {self.settings.timeout:g} s",
        ]

    def not_applicable(self, profile: Profile) -> str | None:
        """Why a test of ``profile`` does not run, or None when it does."""
        if profile in self.profiles:
            return None
        if self.settings.profile is not None:
            return f"not applicable: profile {profile!r} is not under test (--profile {self.settings.profile})"
        name = self.implementation.name if self.implementation else "the SUT"
        return f"not applicable: {name} does not claim the {profile!r} profile"


def _run(coro: Coroutine[Any, Any, _T]) -> _T:
    return asyncio.run(coro)


def _session(config: pytest.Config) -> SutSession:
    return config.stash[SESSION_KEY]


def clauses_of(item: pytest.Item) -> tuple[str, ...]:
    """The clause ids an item cites through ``clause`` markers, in order, without repeats."""
    ids: dict[str, None] = {}
    for mark in item.iter_markers("clause"):
        ids.update(dict.fromkeys(str(arg) for arg in mark.args))
    return tuple(ids)


def _is_xdist_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and config.pluginmanager.has_plugin("dsession")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    state = _session(session.config)
    state.start()
    if _is_xdist_controller(session.config):
        # The controller runs no test: it only needed the answer for the header.
        state.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _session(config).header()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _session(config)
    for item in items:
        ids = clauses_of(item)
        try:
            profile = profile_of(ids)
        except ConformanceError as exc:
            raise pytest.UsageError(f"mcp-conformance: {item.nodeid}: {exc}") from None
        item.stash[CLAUSES_KEY] = ids
        if ids:
            item.user_properties.append(("clauses", " ".join(ids)))
        reason = state.not_applicable(profile)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_sessionfinish(session: pytest.Session) -> None:
    _session(session.config).close()


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.close()


@pytest_asyncio.fixture(autouse=True, loop_scope="function")
async def _mcp_conformance_close_runs(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Close, in the test's own event loop, any run the test left open."""
    yield
    front = _session(request.config).front
    if front is not None and front.open_runs:
        await front.close_open_runs()
