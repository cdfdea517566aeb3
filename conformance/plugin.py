"""The pytest plugin that runs the conformance suite against a system under test.

Loaded on request (``-p conformance.plugin``, as ``certify`` and the suite's own
``pytest.ini`` ask for it; installing the package does not load it into a project's
pytest runs), it only adds its options and the ``clause`` marker until ``--sut`` or
``--sut-cmd`` (or their ini twins) name a system under test; then it registers :mod:`conformance._session`, which starts the SUT, picks
the profiles, and, when no test paths are given, collects the suite shipped in
``conformance/suite``. Heavy imports wait until then.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from conformance._keys import SESSION_KEY
from conformance._options import OPTIONS
from conformance._settings import read_settings, selected_clause_ids

if TYPE_CHECKING:
    from conformance._sut import Sut

__all__ = ["SUITE_DIR", "sut"]

#: The shipped suite, collected when a SUT is given without test paths.
SUITE_DIR: Final = Path(__file__).parent / "suite"

MARKER_HELP: Final = (
    "clause(*ids): the clauses of the adaptive-toolset specification (conformance/SPEC.md) "
    "that the test checks; cite them with conformance.clause(...), which rejects unknown ids"
)
NO_SUT: Final = "no system under test: run pytest with --sut MODULE:FACTORY or --sut-cmd COMMAND"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-conformance", "adaptive MCP toolset conformance")
    for option in OPTIONS:
        if option.repeatable:
            group.addoption(
                option.flag, dest=option.dest, action="append", default=[], metavar=option.metavar, help=option.help
            )
            parser.addini(option.dest, option.help, type="args")
        else:
            group.addoption(option.flag, dest=option.dest, metavar=option.metavar, help=option.help)
            parser.addini(option.dest, option.help)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    selected_clauses(config)
    settings = read_settings(config)
    if settings is None:
        return
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(SUITE_DIR)]
    from conformance import _session

    config.stash[SESSION_KEY] = _session.SutSession(settings)
    config.pluginmanager.register(_session, "mcp-conformance-session")


def selected_clauses(config: pytest.Config) -> frozenset[str]:
    """The clause ids given with ``--clause``; empty when the option is not used.

    Raises:
        pytest.UsageError: an id that SPEC.md does not define.
    """
    ids = frozenset(selected_clause_ids(config))
    if not ids:
        return ids
    from conformance._clauses import CLAUSES, SENTENCES

    unknown = sorted(ids - set(CLAUSES) - set(SENTENCES))
    if unknown:
        raise pytest.UsageError(
            f"mcp-conformance: --clause {', '.join(unknown)}: not a clause or sentence of SPEC.md; "
            f"it defines {', '.join(CLAUSES)} and their sentences (BUD-1.1, …)"
        )
    return ids


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--clause``, deselect every test that cites none of the given clauses or sentences."""
    wanted = selected_clauses(config)
    if not wanted:
        return
    from conformance._clauses import clauses_of, sentences_of

    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        cited = {*clauses_of(item), *sentences_of(item)}
        (kept if wanted & cited else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


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
