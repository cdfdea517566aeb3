"""The active half of the pytest plugin, registered only when a SUT is named.

It starts the SUT at session start (in every xdist worker, and briefly in the xdist
controller for the report header), asks it who it is, skips tests of profiles not under
test as not applicable, closes runs a test left open, and shuts the SUT down at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
from collections.abc import AsyncIterator, Coroutine, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import pytest
import pytest_asyncio

from conformance._clauses import Profile, profile_of
from conformance._driver import DriverSut
from conformance._errors import ConformanceError, Nonconformance, OutcomeError, SutMisbehaved
from conformance._loading import driver_argv, load_sut
from conformance._sut import Implementation, Sut
from conformance.plugin import SESSION_KEY

__all__ = ["CLAUSES_KEY", "Settings", "SutSession", "clauses_of", "finding_record"]

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
    _write_record(session.config, _session_record(state))
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
    examples = config.getoption("conformance_examples", None)
    if isinstance(examples, str) and examples.strip():
        _use_example_database(items, Path(examples))


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


# --- Structured results for certificates (``--conformance-report``) and exact replay
# (``--conformance-examples``).

#: How much of a failure's text a result line keeps.
_TEXT_LIMIT: Final = 12_000


def _report_path(config: pytest.Config) -> Path | None:
    value = config.getoption("conformance_report", None)
    if not isinstance(value, str) or not value.strip():
        return None
    worker = getattr(config, "workerinput", {}).get("workerid")
    return Path(f"{value}.{worker}") if worker else Path(value)


def _write_record(config: pytest.Config, record: dict[str, Any]) -> None:
    path = _report_path(config)
    if path is None:
        return
    line = json.dumps(record, ensure_ascii=False, sort_keys=True, default=repr) + "\n"
    with path.open("a", encoding="utf-8") as out:
        out.write(line)


def _session_record(state: SutSession) -> dict[str, Any]:
    impl = state.implementation
    return {
        "record": "session",
        "pid": os.getpid(),
        "sut": state.settings.describe,
        "implementation": None
        if impl is None
        else {"name": impl.name, "version": impl.version, "profiles": list(impl.profiles)},
        "profiles_under_test": sorted(state.profiles),
        "profile_option": state.settings.profile,
        "timeout": state.settings.timeout,
    }


def _use_example_database(items: list[pytest.Item], directory: Path) -> None:
    """Give every Hypothesis test of the session an example database in ``directory``.

    The suite's own settings say ``database=None`` (nothing is written unless asked); here
    it is asked, so each property saves its failing (shrunk) example and replays the saved
    ones first on the next run. Hypothesis reads these settings when the test is called.
    """
    from hypothesis import settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    directory.mkdir(parents=True, exist_ok=True)
    database = DirectoryBasedExampleDatabase(str(directory))
    for item in items:
        test: object = getattr(item, "obj", None)
        if not getattr(test, "is_hypothesis_test", False) or getattr(test, "_mcp_conformance_examples", None):
            continue
        current = getattr(test, "_hypothesis_internal_use_settings", None) or settings.default
        setattr(test, "_hypothesis_internal_use_settings", settings(current, database=database))  # noqa: B010
        setattr(test, "_mcp_conformance_examples", str(directory))  # noqa: B010


def _exceptions(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and, for an exception group (Hypothesis reporting several bugs), its members."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _exceptions(inner)
    else:
        yield exc


def _jsonable(value: object) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr))


def finding_record(exc: Nonconformance) -> dict[str, Any]:
    """The fields of a finding, as JSON values (what is not JSON becomes its ``repr``)."""
    return {
        "clauses": list(exc.clauses),
        "message": exc.message,
        "expected": _jsonable(exc.expected),
        "observed": _jsonable(exc.observed),
        "case": _jsonable(exc.case),
        "stderr_tail": exc.stderr_tail if isinstance(exc, SutMisbehaved) else "",
        "misbehaved": isinstance(exc, SutMisbehaved),
        "notes": [str(note) for note in getattr(exc, "__notes__", ())],
        "text": str(exc)[:_TEXT_LIMIT],
    }


def _test_record(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> dict[str, Any]:
    cited: tuple[str, ...] = item.stash[CLAUSES_KEY] if CLAUSES_KEY in item.stash else clauses_of(item)
    record: dict[str, Any] = {
        "record": "test",
        "nodeid": item.nodeid,
        "path": str(item.path),
        "name": item.name,
        "clauses": list(cited),
        "when": report.when,
        "outcome": report.outcome,
        "duration": round(report.duration, 3),
        "kind": "pass",
        "message": "",
        "findings": [],
    }
    if report.skipped:
        longrepr = report.longrepr
        record["kind"] = "skip"
        record["message"] = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        return record
    if not report.failed:
        return record
    record["message"] = report.longreprtext[-_TEXT_LIMIT:]
    exc = call.excinfo.value if call.excinfo is not None else None
    members = list(_exceptions(exc)) if exc is not None else []
    record["findings"] = [finding_record(e) for e in members if isinstance(e, Nonconformance)]
    record["exception"] = type(exc).__name__ if exc is not None else None
    # A finding is an assertion (or a refusal the test did not expect) raised by the test
    # itself; anything else, or a failure in setup or teardown, is the suite breaking.
    is_finding = report.when == "call" and all(isinstance(e, AssertionError | OutcomeError) for e in members)
    record["kind"] = "finding" if is_finding and members else "error"
    return record


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if _report_path(item.config) is not None and (report.when == "call" or not report.passed):
        _write_record(item.config, _test_record(item, call, report))
    return report
