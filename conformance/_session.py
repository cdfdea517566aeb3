"""The active half of the pytest plugin, registered only when a SUT is named.

It starts the SUT at session start (in every xdist worker, and briefly in the xdist
controller for the report header), asks it who it is, skips tests of profiles not under
test as not applicable, guards property tests (:mod:`conformance._properties`), stops
running tests once the SUT is declared broken or the time budget is spent, closes runs a
test left open, writes a record per test (:mod:`conformance._records`) and shuts the SUT
down at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Coroutine, Generator, Iterator
from pathlib import Path
from typing import Any, Final, TypeVar

import pytest

from conformance import _properties
from conformance._clauses import PROFILES, Profile, clause_id_of, clauses_of, profile_of, sentences_of
from conformance._driver import DriverSut
from conformance._errors import (
    ConformanceError,
    Inconclusive,
    Nonconformance,
    OutcomeError,
    SutBroken,
    SutMisbehaved,
    escape_surrogates,
)
from conformance._expectations import Expectation, expected_failure_of, load_expectations
from conformance._keys import CLAUSES_KEY, SESSION_KEY
from conformance._loading import driver_argv, load_sut
from conformance._records import (
    EventName,
    EventRecord,
    FindingRecord,
    Kind,
    Record,
    ResultRecord,
    SessionRecord,
    append_record,
    jsonable,
)
from conformance._settings import Settings
from conformance._sut import Implementation, Sut

__all__ = ["SutSession", "finding_record"]

_T = TypeVar("_T")

_PROFILES: Final[dict[str, frozenset[Profile]]] = {
    **{profile: frozenset({profile}) for profile in PROFILES},
    "all": frozenset(PROFILES),
}
#: Why a test did not run (the SUT broke, the time ran out): set at setup, read at report.
_NOT_RUN_KEY: Final = pytest.StashKey[str]()
_GUARD_KEY: Final = pytest.StashKey[_properties.PropertyGuard]()
_SUITE_DIR: Final = Path(__file__).parent / "suite"
# Hypothesis prints fixtures by repr in a falsifying example; their addresses change every run.
_ADDRESS: Final = re.compile(r" at 0x[0-9a-fA-F]+")


class SutSession:
    """The SUT of one pytest process, what it claimed, and the run's budget."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.front: Sut | None = None
        self.implementation: Implementation | None = None
        self.problem = ""
        self.expectations: tuple[Expectation, ...] = ()
        self.started = time.monotonic()
        self.deadline = None if settings.max_time is None else self.started + settings.max_time
        self.announced_broken = False

    @property
    def profiles(self) -> frozenset[Profile]:
        """The profiles whose tests run."""
        if self.settings.profiles:
            return frozenset().union(*(_PROFILES[choice] for choice in self.settings.profiles))
        claimed = self.implementation.profiles if self.implementation else ()
        return frozenset(p for p in PROFILES if p == "core" or p in claimed)

    def start(self) -> None:
        """Build the SUT and run ``initialize``.

        Raises:
            pytest.UsageError: the SUT cannot be loaded or started, or answers badly.
        """
        settings = self.settings
        try:
            if settings.sut_cmd is not None:
                driver = DriverSut(driver_argv(settings.sut_cmd), timeout=settings.timeout)
                self.front = Sut(driver, describe=settings.describe, broken_after=settings.broken_after)
            else:
                adapter = load_sut(settings.sut or "")
                self.front = Sut(
                    adapter, timeout=settings.timeout, describe=settings.describe, broken_after=settings.broken_after
                )
            self.implementation = _run(self.front.initialize())
        except (ConformanceError, Nonconformance, OutcomeError) as exc:
            self.close()
            self.problem = str(exc)
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
        source = self.settings.profile_flags or "as claimed"
        return [
            f"mcp-conformance: {self.settings.describe}: {impl.name} {impl.version}, claims {claimed}",
            f"mcp-conformance: profiles under test: {chosen} ({source}); per-call timeout {self.settings.timeout:g} s",
        ]

    def not_applicable(self, profile: Profile) -> str | None:
        """Why a test of ``profile`` does not run, or None when it does."""
        if profile in self.profiles:
            return None
        if self.settings.profiles:
            return f"not applicable: profile {profile!r} is not under test ({self.settings.profile_flags})"
        name = self.implementation.name if self.implementation else "the SUT"
        return f"not applicable: {name} does not claim the {profile!r} profile"

    def not_run(self) -> str | None:
        """Why no further test runs (the SUT is broken, the time is up), or None."""
        if self.front is not None and self.front.broken is not None:
            return f"not run: {self.front.broken}"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return f"not run: the time budget of {self.settings.max_time:g} s ran out"
        return None

    def broken(self) -> str | None:
        return None if self.front is None else self.front.broken

    # -- records

    def write(self, config: pytest.Config, record: Record) -> None:
        path = self.settings.report
        if path is None:
            return
        worker = getattr(config, "workerinput", {}).get("workerid")
        append_record(Path(f"{path}.{worker}") if worker else path, record)

    def event(self, config: pytest.Config, event: EventName, nodeid: str, message: str = "") -> None:
        self.write(config, EventRecord(record="event", event=event, nodeid=nodeid, message=message))

    def session_record(self, config: pytest.Config) -> SessionRecord:
        impl = self.implementation
        seed = config.getoption("hypothesis_seed", None)
        return SessionRecord(
            record="session",
            sut=self.settings.describe,
            implementation=None
            if impl is None
            else {"name": impl.name, "version": impl.version, "profiles": list(impl.profiles)},
            problem=self.problem,
            profiles_under_test=sorted(self.profiles),
            profile_options=list(self.settings.profiles),
            timeout=self.settings.timeout,
            seed=None if seed is None else str(seed),
            thoroughness=self.settings.thoroughness,
            shrink_time=self.settings.shrink_time,
        )


def _run(coro: Coroutine[Any, Any, _T]) -> _T:
    return asyncio.run(coro)


def _session(config: pytest.Config) -> SutSession:
    return config.stash[SESSION_KEY]


def _is_xdist_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and config.pluginmanager.has_plugin("dsession")


def pytest_configure(config: pytest.Config) -> None:
    state = _session(config)
    examples = state.settings.examples
    if examples is not None:
        examples.mkdir(parents=True, exist_ok=True)
    # Before collection imports the suite: its property settings inherit this profile.
    _properties.configure(database=examples, thoroughness=state.settings.thoroughness)
    if state.settings.expectations is not None:
        try:
            state.expectations = load_expectations(state.settings.expectations)
        except ConformanceError as exc:
            raise pytest.UsageError(f"mcp-conformance: {exc}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    state = _session(session.config)
    try:
        state.start()
    finally:
        state.write(session.config, state.session_record(session.config))
    if _is_xdist_controller(session.config):
        # The controller runs no test: it only needed the answer for the header.
        state.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _session(config).header()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _session(config)
    for item in items:
        ids = clauses_of(item)
        if not ids and _in_suite(item):
            raise pytest.UsageError(f"mcp-conformance: {item.nodeid}: a test of the shipped suite cites no clause")
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
        _guard(state, item)


def pytest_collection_finish(session: pytest.Session) -> None:
    counts: dict[str, int] = {}
    for item in session.items:
        counts[item.path.name] = counts.get(item.path.name, 0) + 1
    _session(session.config).event(session.config, "collected", "", json.dumps(counts, sort_keys=True))


def _in_suite(item: pytest.Item) -> bool:
    return item.path.is_relative_to(_SUITE_DIR)


def _guard(state: SutSession, item: pytest.Item) -> None:
    """Wrap a Hypothesis property's body in a :class:`~conformance._properties.PropertyGuard`."""
    test = getattr(item, "obj", None)
    handle = getattr(test, "hypothesis", None)
    inner = getattr(handle, "inner_test", None)
    if handle is None or inner is None:
        return
    previous = getattr(inner, "mcp_conformance_guard", None)
    if isinstance(previous, _properties.PropertyGuard):
        inner = previous.inner
    max_examples = int(getattr(test, _properties.MAX_EXAMPLES_ATTR, 0))
    config = item.config
    guard = _properties.PropertyGuard(
        inner,
        max_examples=max_examples,
        fixtures=getattr(item, "fixturenames", ()),
        shrink_time=state.settings.shrink_time,
        deadline=state.deadline,
        broken=state.broken,
        on_shrinking=lambda message: state.event(config, "shrinking", item.nodeid, message),
    )
    handle.inner_test = guard.wrapper()
    item.stash[_GUARD_KEY] = guard


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = _session(item.config)
    state.event(item.config, "start", item.nodeid)
    if state.front is not None:
        state.front.cited = frozenset(sentences_of(item))
    reason = state.not_run()
    if reason is not None and not state.announced_broken and state.broken() is not None:
        state.announced_broken = True
        state.event(item.config, "broken", item.nodeid, reason)
    if reason is not None:
        item.stash[_NOT_RUN_KEY] = reason
        pytest.skip(reason)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _session(session.config).close()


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.close()


@pytest.fixture(autouse=True)
def _mcp_conformance_close_runs(request: pytest.FixtureRequest) -> Iterator[None]:
    """Close any run the test left open.

    A plain fixture, so that the suite needs no asyncio plugin: its tests run each
    example's body with ``asyncio.run`` and a driver's runs belong to no event loop.
    """
    yield
    front = _session(request.config).front
    if front is not None and front.open_runs:
        _run(front.close_open_runs())


# --- Records (``--conformance-report``) and expected failures (regression mode).


def _exceptions(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and, for an exception group (Hypothesis reporting several bugs), its members."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _exceptions(inner)
    else:
        yield exc


# Values that change from run to run however the run goes: the ports of served fleets.
_PORT: Final = re.compile(r"(127\.0\.0\.1|localhost):\d+")


def _steady(value: object, temp: str | None) -> Any:
    """``value`` as JSON, with ports and the run's temporary folder replaced by placeholders."""
    data = jsonable(value)
    if data is None:
        return None
    text = _PORT.sub(r"\1:<port>", json.dumps(data, ensure_ascii=False))
    if temp:
        text = text.replace(json.dumps(temp)[1:-1], "<tmp>")
    return json.loads(text)


def finding_record(exc: BaseException, cited: tuple[str, ...], temp: str | None = None) -> FindingRecord:
    """The fields of a finding as JSON values; the sentences it breaks default to the ones the test cites."""
    notes = [str(note) for note in getattr(exc, "__notes__", ())]
    example = _ADDRESS.sub("", "\n".join(n for n in notes if not n.startswith("You can reproduce")))
    if isinstance(exc, Nonconformance):
        protocol = isinstance(exc, SutMisbehaved)
        return FindingRecord(
            clauses=[] if protocol else list(exc.clauses or cited),
            protocol=protocol,
            message=escape_surrogates(exc.message),
            expected=_steady(exc.expected, temp),
            observed=_steady(exc.observed, temp),
            case=_steady(exc.case, temp),
            example=example,
            stderr_tail=exc.stderr_tail if isinstance(exc, SutMisbehaved) else "",
        )
    if isinstance(exc, OutcomeError):
        message = f"the SUT refused an operation the test expected to succeed: {exc}"
    else:
        message = str(exc).strip() or type(exc).__name__
    return FindingRecord(
        clauses=list(cited),
        protocol=False,
        message=escape_surrogates(message),
        expected=None,
        observed=None,
        case=None,
        example=example,
        stderr_tail="",
    )


def _stray(ref: str, item: pytest.Item) -> bool:
    """Whether a finding's sentence or clause is one the test does not cite."""
    if "." in ref:
        return ref not in sentences_of(item)
    return clause_id_of(ref) not in clauses_of(item)


def _classify(
    members: list[BaseException], cited: tuple[str, ...], when: str, item: pytest.Item
) -> tuple[Kind, str, list[FindingRecord]]:
    """What a failed phase means: findings about the SUT, the SUT broken, or the suite breaking."""
    if when == "call" and members and all(isinstance(e, SutBroken) for e in members):
        return "not-run", f"not run: {members[0]}", []
    members = [e for e in members if not isinstance(e, SutBroken)]
    inconclusive = [e for e in members if isinstance(e, Inconclusive)]
    if when == "call" and inconclusive and len(inconclusive) == len(members):
        return "inconclusive", _inconclusive_message(inconclusive[0]), []
    members = [e for e in members if not isinstance(e, Inconclusive)]
    findings_only = when == "call" and members and all(isinstance(e, AssertionError | OutcomeError) for e in members)
    if not findings_only:
        broke = next((e for e in members if not isinstance(e, AssertionError | OutcomeError)), None)
        what = f"{type(broke).__name__}: {broke}" if broke is not None else f"failed in {when}"
        return "error", escape_surrogates(what), []
    basetemp = item.config.getoption("basetemp", None)
    findings = [finding_record(e, cited, str(basetemp) if basetemp else None) for e in members]
    stray = sorted({c for f in findings for c in f["clauses"] if _stray(c, item)})
    if stray:
        return (
            "error",
            f"the suite is wrong: a finding names {', '.join(stray)}, which the test does not cite "
            f"({', '.join(cited) or 'no clause'})",
            findings,
        )
    return "finding", "", findings


def _inconclusive_message(exc: Inconclusive) -> str:
    return f"inconclusive: {exc}"


def _because(members: list[BaseException]) -> str:
    """The clause an inconclusive test names as broken first ("" when none broke)."""
    return next((e.because for e in members if isinstance(e, Inconclusive)), "")


def _cites(item: pytest.Item) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(arg) for mark in item.iter_markers("clause") for arg in mark.args))


def _test_record(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> ResultRecord:
    clause_ids: tuple[str, ...] = item.stash[CLAUSES_KEY] if CLAUSES_KEY in item.stash else clauses_of(item)
    cited = _cites(item)
    guard = item.stash.get(_GUARD_KEY, None)
    record = ResultRecord(
        record="test",
        nodeid=item.nodeid,
        module=item.path.name,
        name=item.name,
        clauses=list(clause_ids),
        cites=list(cited),
        kind="pass",
        when=report.when,
        duration=round(report.duration, 3),
        message="",
        findings=[],
        property=None if guard is None else dict(guard.stats),  # type: ignore[typeddict-item]
        inconclusive_because="",
    )
    if report.skipped:
        not_run = item.stash.get(_NOT_RUN_KEY, None)
        longrepr = report.longrepr
        record["kind"] = "not-run" if not_run else "skip"
        record["message"] = not_run or (str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr))
        return record
    if report.failed:
        exc = call.excinfo.value if call.excinfo is not None else None
        members = list(_exceptions(exc)) if exc is not None else []
        kind, message, findings = _classify(members, cited, report.when, item)
        record["kind"], record["findings"] = kind, findings
        record["message"] = message if kind != "error" or message else report.longreprtext
        if kind == "inconclusive":
            record["inconclusive_because"] = _because(members)
        return record
    if guard is not None and guard.stats["cut_short"]:
        record["kind"] = "not-run"
        record["message"] = (
            f"not run to the end: the time budget ran out after {guard.stats['examples']} of "
            f"{guard.stats['max_examples']} examples"
        )
        return record
    outcome = guard.inconclusive() if guard is not None and report.when == "call" else None
    if outcome is not None:
        record["kind"], record["message"] = "inconclusive", _inconclusive_message(outcome)
        record["inconclusive_because"] = outcome.because
    return record


def _portable(report: pytest.TestReport) -> None:
    """Escape the lone surrogates of a report's text, which a driver's replies may carry into
    a message: pytest-xdist cannot send such a report, and stops the whole session instead."""
    if report.longrepr is not None:
        text = report.longreprtext
        escaped = escape_surrogates(text)
        if escaped != text:
            report.longrepr = escaped
    report.sections = [(title, escape_surrogates(content)) for title, content in report.sections]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _portable(report)
    if report.when != "call" and report.passed:
        return report
    state = _session(item.config)
    record = _test_record(item, call, report)
    state.write(item.config, record)
    if (record["kind"] == "not-run" and report.failed) or record["kind"] == "inconclusive":
        # Neither a failure nor a pass: pytest and JUnit show it as skipped, with the reason.
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, record["message"])
    elif record["kind"] == "finding" and state.settings.mode == "regression":
        cover = expected_failure_of(state.expectations, record["nodeid"], record["findings"])
        if cover:
            report.outcome = "skipped"
            report.wasxfail = "expected failure: " + "; ".join(dict.fromkeys(e.reason for e in cover))
    return report
