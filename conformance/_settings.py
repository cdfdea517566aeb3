"""What a run of the suite is asked to do, read from pytest's options and ini values.

Every option of the plugin has an ini twin; the command line wins. Values are checked
here, once, with messages that name the option and the value.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

__all__ = ["MODES", "PROFILE_CHOICES", "Option", "OPTIONS", "Settings", "read_settings"]

PROFILE_CHOICES: Final = ("core", "lexical", "eviction", "refresh", "all")
THOROUGHNESS_CHOICES: Final = ("quick", "default", "deep")
MODES: Final = ("certify", "regression")
DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_SHRINK_TIME: Final = 20.0
DEFAULT_BROKEN_AFTER: Final = 3


@dataclass(frozen=True, slots=True)
class Option:
    """One option of the plugin and its ini twin."""

    flag: str
    dest: str
    metavar: str
    help: str
    choices: tuple[str, ...] | None = None
    repeatable: bool = False


OPTIONS: Final = (
    Option(
        "--sut",
        "conformance_sut",
        "SPEC",
        "system under test in this process: 'module:factory' (called with no arguments) "
        "or 'reference' for the bundled reference implementation",
    ),
    Option(
        "--sut-cmd",
        "conformance_sut_cmd",
        "COMMAND",
        "system under test as a driver program speaking the driver protocol over stdio, "
        'for instance "node driver.js" (split like a shell would, but run without one); '
        "'reference' runs the bundled reference driver",
    ),
    Option(
        "--profile",
        "conformance_profile",
        "PROFILE",
        "profiles whose tests run: core, lexical, eviction, refresh or all (default: the profiles the SUT claims in "
        "initialize); tests of other profiles are skipped as not applicable",
        choices=PROFILE_CHOICES,
    ),
    Option(
        "--sut-timeout",
        "conformance_sut_timeout",
        "SECONDS",
        f"seconds each call to the SUT may take before it counts as hung (default {DEFAULT_TIMEOUT:g})",
    ),
    Option(
        "--clause",
        "conformance_clauses",
        "ID",
        "run only the tests that cite this clause or sentence id, e.g. BUD-1 or BUD-1.2 (repeatable: "
        "tests citing any of the given ids run, every other collected test is deselected)",
        repeatable=True,
    ),
    Option(
        "--conformance-thoroughness",
        "conformance_thoroughness",
        "LEVEL",
        "how many examples each property draws: quick (half), default, deep (four times)",
        choices=THOROUGHNESS_CHOICES,
    ),
    Option(
        "--conformance-shrink-time",
        "conformance_shrink_time",
        "SECONDS",
        "seconds a failing property may spend shrinking its counterexample; 0 reports the first "
        f"failing example as found (default {DEFAULT_SHRINK_TIME:g})",
    ),
    Option(
        "--conformance-max-time",
        "conformance_max_time",
        "SECONDS",
        "time budget of the session: tests that would start after it are not run, and properties "
        "stop drawing examples (default: none)",
    ),
    Option(
        "--conformance-broken-after",
        "conformance_broken_after",
        "N",
        "after N consecutive crashes or hangs the SUT is declared broken and the remaining tests "
        f"are not run (default {DEFAULT_BROKEN_AFTER})",
    ),
    Option(
        "--conformance-report",
        "conformance_report",
        "PATH",
        "append one JSON line per test result to PATH (xdist workers write PATH.<worker id>); "
        "mcp-conformance certify reads these files",
    ),
    Option(
        "--conformance-examples",
        "conformance_examples",
        "DIR",
        "save the failing examples of property tests to DIR (a Hypothesis example database) and "
        "replay the examples saved there first, so a failure found once is reproduced exactly",
    ),
    Option(
        "--conformance-expectations",
        "conformance_expectations",
        "FILE",
        "TOML file of known failures by clause; in regression mode they are reported as expected "
        "failures (xfail), also in JUnit XML",
    ),
    Option(
        "--conformance-mode",
        "conformance_mode",
        "MODE",
        "certify (default): every failure counts; regression: failures listed in the expectations file are expected",
        choices=MODES,
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """What the options and ini values ask for, checked."""

    sut: str | None
    sut_cmd: str | None
    profile: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    thoroughness: str = "default"
    shrink_time: float = DEFAULT_SHRINK_TIME
    max_time: float | None = None
    broken_after: int = DEFAULT_BROKEN_AFTER
    report: Path | None = None
    examples: Path | None = None
    expectations: Path | None = None
    mode: str = "certify"

    @property
    def describe(self) -> str:
        if self.sut_cmd is not None:
            return f"--sut-cmd {shlex.quote(self.sut_cmd)}"
        return f"--sut {self.sut}"


def _value(config: pytest.Config, dest: str) -> str | None:
    value = config.getoption(dest, None)
    if isinstance(value, str) and value.strip():
        return value.strip()
    ini = config.getini(dest)
    return ini.strip() if isinstance(ini, str) and ini.strip() else None


def selected_clause_ids(config: pytest.Config) -> list[str]:
    """The ids given with ``--clause`` (or the ini's ``conformance_clauses``)."""
    given = config.getoption("conformance_clauses", None) or []
    if not given:
        given = config.getini("conformance_clauses") or []
    return [str(value).strip() for value in given if str(value).strip()]


def _seconds(option: str, raw: str | None, default: float | None, *, zero: bool = False) -> float | None:
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        what = "a number of seconds, 0 or more" if zero else "a positive number of seconds"
        raise pytest.UsageError(f"mcp-conformance: {option} must be {what}, got {raw!r}")
    return value


def read_settings(config: pytest.Config) -> Settings | None:
    """The run's settings; None when no SUT is named.

    Raises:
        pytest.UsageError: both a SUT and a SUT command, or a value that is out of range.
    """
    sut, sut_cmd = config.getoption("conformance_sut", None), config.getoption("conformance_sut_cmd", None)
    sut = sut.strip() if isinstance(sut, str) and sut.strip() else None
    sut_cmd = sut_cmd if isinstance(sut_cmd, str) and sut_cmd.strip() else None
    if sut is None and sut_cmd is None:
        sut, sut_cmd = _value(config, "conformance_sut"), _value(config, "conformance_sut_cmd")
    if sut is None and sut_cmd is None:
        return None
    if sut is not None and sut_cmd is not None:
        raise pytest.UsageError("mcp-conformance: give either --sut or --sut-cmd, not both")
    choices = {o.dest: o for o in OPTIONS}
    picked: dict[str, str | None] = {}
    for dest in ("conformance_profile", "conformance_thoroughness", "conformance_mode"):
        value = _value(config, dest)
        option = choices[dest]
        if value is not None and option.choices is not None and value not in option.choices:
            raise pytest.UsageError(
                f"mcp-conformance: {option.flag} must be one of {', '.join(option.choices)}, got {value!r}"
            )
        picked[dest] = value
    timeout = _seconds("--sut-timeout", _value(config, "conformance_sut_timeout"), DEFAULT_TIMEOUT)
    shrink = _seconds(
        "--conformance-shrink-time", _value(config, "conformance_shrink_time"), DEFAULT_SHRINK_TIME, zero=True
    )
    max_time = _seconds("--conformance-max-time", _value(config, "conformance_max_time"), None)
    raw_broken = _value(config, "conformance_broken_after")
    broken_after = DEFAULT_BROKEN_AFTER
    if raw_broken is not None:
        if not raw_broken.isdigit() or int(raw_broken) < 1:
            raise pytest.UsageError(
                f"mcp-conformance: --conformance-broken-after must be a whole number, 1 or more, got {raw_broken!r}"
            )
        broken_after = int(raw_broken)
    paths = {
        dest: Path(value) if (value := _value(config, dest)) is not None else None
        for dest in ("conformance_report", "conformance_examples", "conformance_expectations")
    }
    mode = picked["conformance_mode"] or "certify"
    if mode == "regression" and paths["conformance_expectations"] is None:
        raise pytest.UsageError("mcp-conformance: --conformance-mode regression needs --conformance-expectations FILE")
    return Settings(
        sut=sut,
        sut_cmd=sut_cmd,
        profile=picked["conformance_profile"],
        timeout=timeout if timeout is not None else DEFAULT_TIMEOUT,
        thoroughness=picked["conformance_thoroughness"] or "default",
        shrink_time=shrink if shrink is not None else DEFAULT_SHRINK_TIME,
        max_time=max_time,
        broken_after=broken_after,
        report=paths["conformance_report"],
        examples=paths["conformance_examples"],
        expectations=paths["conformance_expectations"],
        mode=mode,
    )
