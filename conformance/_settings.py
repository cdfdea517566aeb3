"""What a run of the suite is asked to do, read from pytest's options and ini values.

Every option of the plugin (:data:`conformance._options.OPTIONS`) has an ini twin; the
command line wins. Values are checked here, once, by the option's own validator, with
messages that name the option and the value.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conformance._options import (
    BROKEN_AFTER,
    CLAUSE,
    DEFAULT_BROKEN_AFTER,
    DEFAULT_SHRINK_TIME,
    DEFAULT_TIMEOUT,
    EXAMPLES,
    EXPECTATIONS,
    MAX_TIME,
    MODE,
    PROFILE,
    REPORT,
    SHRINK_TIME,
    SUT,
    SUT_CMD,
    SUT_TIMEOUT,
    THOROUGHNESS,
    Mode,
    Option,
    OptionValueError,
    ProfileChoice,
    Thoroughness,
)

__all__ = ["Settings", "read_settings", "selected_clause_ids"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Settings:
    """What the options and ini values ask for, checked."""

    sut: str | None
    sut_cmd: str | None
    #: What ``--profile`` gave, in order (none: the profiles the SUT claims).
    profiles: tuple[ProfileChoice, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    thoroughness: Thoroughness = "default"
    shrink_time: float = DEFAULT_SHRINK_TIME
    max_time: float | None = None
    broken_after: int = DEFAULT_BROKEN_AFTER
    report: Path | None = None
    examples: Path | None = None
    expectations: Path | None = None
    mode: Mode = "certify"

    @property
    def profile_flags(self) -> str:
        """The ``--profile`` options as given ("" when none was)."""
        return " ".join(f"--profile {profile}" for profile in self.profiles)

    @property
    def describe(self) -> str:
        if self.sut_cmd is not None:
            return f"--sut-cmd {shlex.quote(self.sut_cmd)}"
        return f"--sut {self.sut}"


def _raw(config: pytest.Config, option: Option[Any]) -> str | None:
    value = config.getoption(option.dest, None)
    if isinstance(value, str) and value.strip():
        return value.strip()
    ini = config.getini(option.dest)
    return ini.strip() if isinstance(ini, str) and ini.strip() else None


def _read(config: pytest.Config, option: Option[_T]) -> _T | None:
    """The option's value from the command line or the ini file, checked; its default when unset."""
    raw = _raw(config, option)
    if raw is None:
        return option.default
    try:
        return option.parse(raw)
    except OptionValueError as exc:
        raise pytest.UsageError(f"mcp-conformance: {exc}") from None


def _given(config: pytest.Config, option: Option[Any]) -> list[str]:
    """What the command line gave for a repeatable ``option``, else its ini value's words."""
    given = config.getoption(option.dest, None) or []
    if not given:
        given = config.getini(option.dest) or []
    return [str(value).strip() for value in given if str(value).strip()]


def _read_all(config: pytest.Config, option: Option[_T]) -> tuple[_T, ...]:
    """Each value of a repeatable ``option``, checked, in the order given, without repeats."""
    try:
        values = [option.parse(text) for text in _given(config, option)]
    except OptionValueError as exc:
        raise pytest.UsageError(f"mcp-conformance: {exc}") from None
    return tuple(dict.fromkeys(values))


def selected_clause_ids(config: pytest.Config) -> list[str]:
    """The ids given with ``--clause`` (or the ini's ``conformance_clauses``)."""
    return _given(config, CLAUSE)


def read_settings(config: pytest.Config) -> Settings | None:
    """The run's settings; None when no SUT is named.

    Raises:
        pytest.UsageError: both a SUT and a SUT command, or a value that is out of range.
    """
    sut, sut_cmd = config.getoption(SUT.dest, None), config.getoption(SUT_CMD.dest, None)
    sut = sut.strip() if isinstance(sut, str) and sut.strip() else None
    sut_cmd = sut_cmd if isinstance(sut_cmd, str) and sut_cmd.strip() else None
    if sut is None and sut_cmd is None:
        sut, sut_cmd = _raw(config, SUT), _raw(config, SUT_CMD)
    if sut is None and sut_cmd is None:
        return None
    if sut is not None and sut_cmd is not None:
        raise pytest.UsageError("mcp-conformance: give either --sut or --sut-cmd, not both")
    mode: Mode = _or(_read(config, MODE), "certify")
    expectations = _read(config, EXPECTATIONS)
    if mode == "regression" and expectations is None:
        raise pytest.UsageError(
            f"mcp-conformance: {MODE.flag} regression needs {EXPECTATIONS.flag} {EXPECTATIONS.metavar}"
        )
    return Settings(
        sut=sut,
        sut_cmd=sut_cmd,
        profiles=_read_all(config, PROFILE),
        timeout=_or(_read(config, SUT_TIMEOUT), DEFAULT_TIMEOUT),
        thoroughness=_or(_read(config, THOROUGHNESS), "default"),
        shrink_time=_or(_read(config, SHRINK_TIME), DEFAULT_SHRINK_TIME),
        max_time=_read(config, MAX_TIME),
        broken_after=_or(_read(config, BROKEN_AFTER), DEFAULT_BROKEN_AFTER),
        report=_read(config, REPORT),
        examples=_read(config, EXAMPLES),
        expectations=expectations,
        mode=mode,
    )


def _or(value: _T | None, default: _T) -> _T:
    return default if value is None else value
