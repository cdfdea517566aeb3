"""Running the shipped suite in a pytest of its own, for ``certify`` and ``replay``.

The suite runs in a child pytest that ignores the caller's setup: it is given the
suite's own ``pytest.ini`` (``-c``), the suite's folder as root and conftest boundary, no
auto-loaded plugins (only the ones it needs, named with ``-p``), none of the caller's
``PYTEST_ADDOPTS``, and a private Hypothesis storage folder, so the same options give the
same verdict in any directory and nothing is written outside the output folder.

While it runs, :func:`supervise` reads the records the plugin writes and reports
progress, enforces the time budget, and on SIGINT or SIGTERM ends the whole process tree
(pytest, its workers, the SUT and whatever the SUT started) before returning.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Final, Literal

from conformance import _reaper
from conformance._options import (
    BROKEN_AFTER,
    CLAUSE,
    EXAMPLES,
    EXPECTATIONS,
    MAX_TIME,
    MODE,
    PROFILE,
    REPORT,
    SHRINK_TIME,
    SUT_TIMEOUT,
    THOROUGHNESS,
    Mode,
    ProfileChoice,
    Thoroughness,
)
from conformance._records import Records, read_records

__all__ = [
    "SUITE_DIR",
    "SUITE_INI",
    "Outcome",
    "Stopped",
    "SuiteOptions",
    "pytest_command",
    "pytest_env",
    "supervise",
]

SUITE_DIR: Final = Path(__file__).parent / "suite"
SUITE_INI: Final = SUITE_DIR / "pytest.ini"
#: The only plugins the suite's pytest loads (auto-loading is off).
PLUGINS: Final = ("conformance.plugin", "_hypothesis_pytestplugin")
XDIST_PLUGINS: Final = ("xdist.plugin", "xdist.looponfail")
#: Environment variables of the caller that would change the suite's run.
_DROPPED_ENV: Final = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_XDIST_WORKER",
    "PYTEST_CURRENT_TEST",
    "PYTHONWARNINGS",
)
#: Why a run was stopped before its end: "" (it was not), the time limit, or a signal.
Stopped = Literal["", "time", "SIGINT", "SIGTERM"]
#: Seconds pytest gets to tear down after SIGINT before its group is killed.
STOP_GRACE: Final = 10.0


@dataclass(frozen=True, slots=True)
class SuiteOptions:
    """One run of the suite: what to test and how."""

    sut_option: str
    sut_value: str
    work: Path
    report: Path
    examples: Path
    profiles: Sequence[ProfileChoice] = ()
    timeout: str | None = None
    seed: int = 0
    thoroughness: Thoroughness = "default"
    shrink_time: float | None = None
    max_time: float | None = None
    broken_after: int | None = None
    clauses: Sequence[str] = ()
    workers: str | None = None
    expectations: Path | None = None
    mode: Mode = "certify"
    tests: Sequence[str] = ()
    extra: Sequence[str] = ()
    quiet: bool = True


def pytest_command(options: SuiteOptions) -> list[str]:
    """The child pytest's command line."""
    # Option values go as --option=value: pytest would take a bare value naming an
    # existing path for a test path.
    argv = [sys.executable, "-m", "pytest", "-c", str(SUITE_INI), f"--rootdir={SUITE_DIR}"]
    argv += [f"--confcutdir={SUITE_DIR}", "-p", "no:cacheprovider"]
    for plugin in PLUGINS:
        argv += ["-p", plugin]
    if options.workers:
        for plugin in XDIST_PLUGINS:
            argv += ["-p", plugin]
        argv.append(f"--numprocesses={options.workers}")
    argv += [f"{options.sut_option}={options.sut_value}", f"--hypothesis-seed={options.seed}"]
    argv.append(f"{THOROUGHNESS.flag}={options.thoroughness}")
    argv += [f"{PROFILE.flag}={profile}" for profile in options.profiles]
    if options.timeout:
        argv.append(f"{SUT_TIMEOUT.flag}={options.timeout}")
    if options.shrink_time is not None:
        argv.append(f"{SHRINK_TIME.flag}={options.shrink_time:g}")
    if options.max_time is not None:
        argv.append(f"{MAX_TIME.flag}={options.max_time:g}")
    if options.broken_after is not None:
        argv.append(f"{BROKEN_AFTER.flag}={options.broken_after}")
    if options.expectations is not None:
        argv += [f"{EXPECTATIONS.flag}={options.expectations}", f"{MODE.flag}={options.mode}"]
    argv += [f"{CLAUSE.flag}={clause_id}" for clause_id in options.clauses]
    argv += [f"{REPORT.flag}={options.report}", f"{EXAMPLES.flag}={options.examples}"]
    argv += [f"--basetemp={options.work / 'tmp'}"]
    if options.quiet:
        argv.append("-q")
    argv += list(options.extra)
    argv += [str(SUITE_DIR / test) for test in options.tests] or [str(SUITE_DIR)]
    return argv


def pytest_env(options: SuiteOptions, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child pytest's environment: the caller's, without what would change the run."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _DROPPED_ENV}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(options.work / "hypothesis")
    return env


@dataclass(slots=True)
class Outcome:
    """How the child pytest ended."""

    returncode: int | None
    #: Why it was stopped before it ended by itself.
    stopped: Stopped = ""
    #: Processes still running below this one after pytest ended, ended since.
    leftovers: list[_reaper.Leftover] = field(default_factory=list)
    #: Whether processes that escape their group were tracked (Linux).
    tracked: bool = True
    #: What was not tracked on this platform, for the certificate ("" where everything was).
    untracked: str = ""
    seconds: float = 0.0


class _Signals:
    """SIGINT and SIGTERM set a flag instead of killing this process, while installed."""

    def __init__(self) -> None:
        self.received: Stopped = ""
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received:
            # A second signal: the user means it.
            raise KeyboardInterrupt
        self.received = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Signals]:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._handle)
        try:
            yield self
        finally:
            for number, handler in self._previous.items():
                signal.signal(number, handler)  # type: ignore[arg-type]


def supervise(
    options: SuiteOptions,
    *,
    on_records: Callable[[Records], None] = lambda records: None,
    on_tick: Callable[[], None] = lambda: None,
    log: IO[bytes] | None = None,
    hard_limit: float | None = None,
    poll: float = 0.5,
) -> Outcome:
    """Run the suite's pytest to its end, a signal, or ``hard_limit`` seconds, and clean up.

    ``on_records`` gets everything written so far each time new records arrive, and
    ``on_tick`` is called every ``poll`` seconds. Output of pytest goes to ``log`` (None:
    this process's own stdout and stderr).
    """
    # Reaps the run's orphans as they end and, at the end, ends whatever the run left.
    reaper = _reaper.Reaper()
    started = time.monotonic()
    options.work.mkdir(parents=True, exist_ok=True)
    report_glob = f"{options.report.name}*"
    seen = 0
    with reaper, _Signals().installed() as signals:
        outcome = Outcome(returncode=None, tracked=reaper.tracked, untracked=reaper.untracked)
        with reaper.spawning():
            process = subprocess.Popen(
                pytest_command(options),
                stdin=subprocess.DEVNULL,
                stdout=log if log is not None else None,
                stderr=subprocess.STDOUT if log is not None else None,
                env=pytest_env(options) | reaper.environment(),
                start_new_session=True,
            )
            reaper.protect(process.pid)
        try:
            while True:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    outcome.returncode = process.wait(timeout=poll)
                size = sum(p.stat().st_size for p in options.report.parent.glob(report_glob))
                if size != seen:
                    seen = size
                    on_records(read_records(options.report.parent.glob(report_glob)))
                on_tick()
                if outcome.returncode is not None:
                    break
                if signals.received:
                    outcome.stopped = signals.received
                elif hard_limit is not None and time.monotonic() - started >= hard_limit:
                    outcome.stopped = "time"
                if outcome.stopped:
                    outcome.returncode = _stop(process)
                    on_records(read_records(options.report.parent.glob(report_glob)))
                    break
        except KeyboardInterrupt:
            outcome.stopped = outcome.stopped or "SIGINT"
            outcome.returncode = _stop(process, grace=0.5)
        finally:
            if process.poll() is None:
                outcome.returncode = _stop(process, grace=0.5)
            found = reaper.sweep()
            # After a forced stop the suite's own processes are among them: not the SUT's doing.
            outcome.leftovers = [] if outcome.stopped else found
            outcome.seconds = round(time.monotonic() - started, 1)
    return outcome


def _stop(process: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> int:
    """End pytest's process group: SIGINT (it tears down, closing the SUT), then SIGKILL."""
    for signum, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)
        try:
            return process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return process.wait()
