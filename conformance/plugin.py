"""The pytest plugin that runs the conformance suite against a system under test.

Installed through the ``pytest11`` entry point, it only adds its options and the
``clause`` marker until ``--sut`` or ``--sut-cmd`` (or their ini twins) name a system
under test; then it registers :mod:`conformance._pytest`, which starts the SUT, picks the
profiles, and, when no test paths are given, collects the suite shipped in
``conformance/suite``. Heavy imports wait until then.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from conformance._pytest import Settings, SutSession
    from conformance._sut import Sut

__all__ = ["SUITE_DIR", "sut"]

#: The shipped suite, collected when a SUT is given without test paths.
SUITE_DIR: Final = Path(__file__).parent / "suite"
PROFILE_CHOICES: Final = ("core", "lexical", "all")
DEFAULT_TIMEOUT: Final = 30.0

MARKER_HELP: Final = (
    "clause(*ids): the clauses of the adaptive-toolset specification (conformance/SPEC.md) "
    "that the test checks; cite them with conformance.clause(...), which rejects unknown ids"
)
HELP_SUT: Final = (
    "system under test in this process: 'module:factory' (called with no arguments) "
    "or 'reference' for the bundled reference implementation"
)
HELP_SUT_CMD: Final = (
    "system under test as a driver program speaking the driver protocol over stdio, "
    'for instance "node driver.js" (split like a shell would, but run without one); '
    "'reference' runs the bundled reference driver"
)
HELP_PROFILE: Final = (
    "profiles whose tests run: core, lexical or all (default: the profiles the SUT claims in "
    "initialize); tests of other profiles are skipped as not applicable"
)
HELP_CLAUSE: Final = (
    "run only the tests that cite this clause id (repeatable: tests citing any of the given "
    "ids run, every other collected test is deselected)"
)
HELP_REPORT: Final = (
    "append one JSON line per test result (clauses cited, outcome, and the fields of every "
    "Nonconformance: clauses, message, expected, observed, case) to PATH; xdist workers "
    "write PATH.<worker id>; mcp-conformance certify reads these files"
)
HELP_EXAMPLES: Final = (
    "save the failing examples of property tests to DIR (a Hypothesis example database) and "
    "replay the examples saved there first, so a failure found once is reproduced exactly"
)
HELP_TIMEOUT: Final = f"seconds each call to the SUT may take before it counts as hung (default {DEFAULT_TIMEOUT:g})"
NO_SUT: Final = "no system under test: run pytest with --sut MODULE:FACTORY or --sut-cmd COMMAND"

SESSION_KEY: Final[pytest.StashKey[SutSession]] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-conformance", "adaptive MCP toolset conformance")
    group.addoption("--sut", dest="conformance_sut", metavar="SPEC", help=HELP_SUT)
    group.addoption("--sut-cmd", dest="conformance_sut_cmd", metavar="COMMAND", help=HELP_SUT_CMD)
    group.addoption("--profile", dest="conformance_profile", choices=PROFILE_CHOICES, help=HELP_PROFILE)
    group.addoption("--sut-timeout", dest="conformance_sut_timeout", metavar="SECONDS", help=HELP_TIMEOUT)
    group.addoption("--clause", dest="conformance_clauses", action="append", default=[], metavar="ID", help=HELP_CLAUSE)
    group.addoption("--conformance-report", dest="conformance_report", metavar="PATH", help=HELP_REPORT)
    group.addoption("--conformance-examples", dest="conformance_examples", metavar="DIR", help=HELP_EXAMPLES)
    parser.addini("conformance_sut", HELP_SUT)
    parser.addini("conformance_sut_cmd", HELP_SUT_CMD)
    parser.addini("conformance_profile", HELP_PROFILE)
    parser.addini("conformance_sut_timeout", HELP_TIMEOUT)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    selected_clauses(config)
    settings = read_settings(config)
    if settings is None:
        return
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(SUITE_DIR)]
    from conformance import _pytest

    config.stash[SESSION_KEY] = _pytest.SutSession(settings)
    config.pluginmanager.register(_pytest, "mcp-conformance-session")


def read_settings(config: pytest.Config) -> Settings | None:
    """The SUT settings from the command line, else the ini file; None when no SUT is named.

    Raises:
        pytest.UsageError: both a SUT and a SUT command, or a bad profile or timeout.
    """
    sut, sut_cmd = _option(config, "conformance_sut"), _option(config, "conformance_sut_cmd")
    if sut is None and sut_cmd is None:
        sut, sut_cmd = _ini(config, "conformance_sut"), _ini(config, "conformance_sut_cmd")
    if sut is None and sut_cmd is None:
        return None
    if sut is not None and sut_cmd is not None:
        raise pytest.UsageError("mcp-conformance: give either --sut or --sut-cmd, not both")
    profile = _option(config, "conformance_profile") or _ini(config, "conformance_profile")
    if profile is not None and profile not in PROFILE_CHOICES:
        raise pytest.UsageError(f"mcp-conformance: profile must be core, lexical or all, got {profile!r}")
    raw_timeout = _option(config, "conformance_sut_timeout") or _ini(config, "conformance_sut_timeout")
    timeout = DEFAULT_TIMEOUT
    if raw_timeout is not None:
        try:
            timeout = float(raw_timeout)
        except ValueError:
            timeout = math.nan
        if not (math.isfinite(timeout) and timeout > 0):
            raise pytest.UsageError(
                f"mcp-conformance: --sut-timeout must be a positive number of seconds, got {raw_timeout!r}"
            )
    from conformance._pytest import Settings

    return Settings(sut=sut, sut_cmd=sut_cmd, profile=profile, timeout=timeout)


def selected_clauses(config: pytest.Config) -> frozenset[str]:
    """The clause ids given with ``--clause``; empty when the option is not used.

    Raises:
        pytest.UsageError: an id that SPEC.md does not define.
    """
    ids = frozenset(str(value).strip() for value in config.getoption("conformance_clauses") or ())
    if not ids:
        return ids
    from conformance._clauses import CLAUSES

    unknown = sorted(ids - set(CLAUSES))
    if unknown:
        raise pytest.UsageError(
            f"mcp-conformance: --clause {', '.join(unknown)}: not a clause of SPEC.md; it defines {', '.join(CLAUSES)}"
        )
    return ids


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--clause``, deselect every test that cites none of the given clauses."""
    wanted = selected_clauses(config)
    if not wanted:
        return
    from conformance._pytest import clauses_of

    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (kept if wanted.intersection(clauses_of(item)) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _option(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(name)
    return value if isinstance(value, str) and value.strip() else None


def _ini(config: pytest.Config, name: str) -> str | None:
    value = config.getini(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


@pytest.fixture(scope="session")
def sut(request: pytest.FixtureRequest) -> Sut:
    """The system under test, started once per session (once per xdist worker).

    Tests open runs on it (``async with sut.open(params) as run``); runs a test leaves
    open are closed after it.
    """
    session = request.config.stash.get(SESSION_KEY, None)
    if session is None or session.front is None:
        pytest.fail(NO_SUT, pytrace=False)
    return session.front
