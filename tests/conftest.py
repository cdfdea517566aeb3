"""The ``e2e`` marker kept honest: a test that starts a process without it fails.

``scripts/test --quick`` runs the tests that start no process (``-m "not e2e"``); a test
that starts a certification, a driver, npm or a server carries ``@pytest.mark.e2e``. Every
process started through `subprocess` (asyncio's and anyio's included) is noted, and a phase
of an unmarked test that started one is reported failed, naming the command. Nothing the
test does is changed: the process runs as it would.
"""

from __future__ import annotations

import subprocess
from collections.abc import Generator, Iterator
from typing import Any

import pytest

_started: list[str] = []


@pytest.fixture(scope="session", autouse=True)
def _note_every_process_started() -> Iterator[None]:
    start = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def noted(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> Any:
        _started.append(subprocess.list2cmdline(args) if isinstance(args, list | tuple) else str(args))
        return start(self, args, *rest, **kwargs)

    subprocess.Popen._execute_child = noted  # type: ignore[attr-defined]
    try:
        yield
    finally:
        subprocess.Popen._execute_child = start  # type: ignore[attr-defined]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    started, _started[:] = list(_started), []
    if started and item.get_closest_marker("e2e") is None and not report.failed:
        shown = "\n  ".join(command[:200] for command in started[:5])
        report.outcome = "failed"
        report.longrepr = (
            f"this test started {len(started)} process(es) in its {report.when} but is not marked e2e "
            f"(add @pytest.mark.e2e, so that scripts/test --quick leaves it out):\n  {shown}"
        )
    return report
