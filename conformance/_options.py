"""Every option of a conformance run, in one table: the plugin's flag, its ini twin, and the
name ``mcp-conformance certify`` and ``replay`` give it.

The plugin adds each record as a command-line flag and an ini value (:mod:`conformance.plugin`);
``certify`` and ``replay`` generate their arguments from the same records
(:mod:`conformance._cli`). One validator per kind of value checks what either is given, with a
message that names the option as the user wrote it and the value. Nothing here imports pytest,
so the command line starts fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, get_args

from conformance._errors import UsageError

__all__ = [
    "BROKEN_AFTER",
    "CLAUSE",
    "EXAMPLES",
    "EXPECTATIONS",
    "MAX_COUNT",
    "MAX_SECONDS",
    "MAX_TIME",
    "MODE",
    "MODES",
    "OPTIONS",
    "PROFILE",
    "PROFILE_CHOICES",
    "REPORT",
    "SHRINK_TIME",
    "SUT",
    "SUT_CMD",
    "SUT_TIMEOUT",
    "THOROUGHNESS",
    "THOROUGHNESS_CHOICES",
    "Choice",
    "Command",
    "Count",
    "Mode",
    "Option",
    "OptionValueError",
    "PathValue",
    "ProfileChoice",
    "Seconds",
    "Text",
    "Thoroughness",
    "ValueType",
]

ProfileChoice = Literal["core", "lexical", "eviction", "refresh", "all"]
Thoroughness = Literal["quick", "default", "deep"]
Mode = Literal["certify", "regression"]
#: The commands of ``mcp-conformance`` that run the suite.
Command = Literal["certify", "replay"]
PROFILE_CHOICES: Final[tuple[ProfileChoice, ...]] = get_args(ProfileChoice)
THOROUGHNESS_CHOICES: Final[tuple[Thoroughness, ...]] = get_args(Thoroughness)
MODES: Final[tuple[Mode, ...]] = get_args(Mode)

#: No duration option accepts more than a day: beyond it a value is a typo, and clocks,
#: timers and event loops overflow long before 1e308.
MAX_SECONDS: Final = 86_400.0
#: The largest count an option accepts (--broken-after).
MAX_COUNT: Final = 10_000

DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_SHRINK_TIME: Final = 20.0
DEFAULT_BROKEN_AFTER: Final = 3
#: certify's time budget when none is given; the plugin has none by default.
DEFAULT_MAX_TIME: Final = 300.0
#: Seconds past --max-time a certify run may take to wind down before it is stopped.
WIND_DOWN: Final = 30.0

BOTH: Final[tuple[Command, ...]] = ("certify", "replay")
CERTIFY: Final[tuple[Command, ...]] = ("certify",)

_T_co = TypeVar("_T_co", covariant=True)
_T = TypeVar("_T")


class OptionValueError(UsageError):
    """A value an option does not accept; the message names the option and the value."""


class ValueType(Protocol[_T_co]):
    """A kind of option value: reads the text given for option ``name`` or refuses it."""

    def parse(self, name: str, text: str) -> _T_co: ...


@dataclass(frozen=True, slots=True)
class Seconds:
    """A duration in seconds: finite, positive (or 0 when ``zero``), at most ``maximum``."""

    zero: bool = False
    maximum: float = MAX_SECONDS

    def parse(self, name: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low = value >= 0 if self.zero else value > 0
        if not (math.isfinite(value) and low and value <= self.maximum):
            what = "a number of seconds, 0 or more" if self.zero else "a positive number of seconds"
            raise OptionValueError(f"{name} must be {what}, at most {self.maximum:g}, got {text!r}")
        return value


@dataclass(frozen=True, slots=True)
class Count:
    """A whole number from ``minimum`` to ``maximum``, written in digits."""

    minimum: int = 1
    maximum: int = MAX_COUNT

    def parse(self, name: str, text: str) -> int:
        digits = text.strip()
        # Bounded before int(): a thousand-digit number is refused, not converted.
        if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(self.maximum)):
            value = -1
        else:
            value = int(digits)
        if not self.minimum <= value <= self.maximum:
            raise OptionValueError(
                f"{name} must be a whole number, {self.minimum} or more, at most {self.maximum}, got {text!r}"
            )
        return value


@dataclass(frozen=True, slots=True)
class Choice(Generic[_T]):
    """One of a few words."""

    choices: tuple[_T, ...]

    def parse(self, name: str, text: str) -> _T:
        for choice in self.choices:
            if text.strip() == choice:
                return choice
        raise OptionValueError(f"{name} must be one of {', '.join(map(str, self.choices))}, got {text!r}")


@dataclass(frozen=True, slots=True)
class Text:
    """Any text that is not blank."""

    def parse(self, name: str, text: str) -> str:
        if not text.strip():
            raise OptionValueError(f"{name} is empty")
        return text


@dataclass(frozen=True, slots=True)
class PathValue:
    """A file or folder; whether it must exist is for the option's user to say."""

    def parse(self, name: str, text: str) -> Path:
        if not text.strip():
            raise OptionValueError(f"{name} is empty; give a path")
        return Path(text)


@dataclass(frozen=True, slots=True)
class Option(Generic[_T]):
    """One option of a run: the plugin's flag, its ini twin ``dest``, and how certify offers it."""

    flag: str
    dest: str
    metavar: str
    help: str
    value: ValueType[_T]
    default: _T | None = None
    repeatable: bool = False
    #: The name certify and replay give the option, and which of them offer it.
    cli: str | None = None
    commands: tuple[Command, ...] = ()
    #: certify's default, where it differs from the plugin's.
    cli_default: _T | None = None
    #: certify's help, where it says more than the plugin's.
    cli_help: str = ""

    @property
    def choices(self) -> tuple[str, ...] | None:
        value = self.value
        return tuple(map(str, value.choices)) if isinstance(value, Choice) else None

    def parse(self, text: str, *, name: str | None = None) -> _T:
        """``text`` read as this option's value; ``name`` is how the user wrote the option."""
        return self.value.parse(name or self.flag, text)


SUT: Final = Option(
    "--sut",
    "conformance_sut",
    "SPEC",
    "system under test in this process: 'module:factory' (called with no arguments) "
    "or 'reference' for the bundled reference implementation",
    Text(),
    cli="--sut",
    commands=BOTH,
)
SUT_CMD: Final = Option(
    "--sut-cmd",
    "conformance_sut_cmd",
    "COMMAND",
    "system under test as a driver program speaking the driver protocol over stdio, "
    'for instance "node driver.js" (split like a shell would, but run without one); '
    "'reference' runs the bundled reference driver",
    Text(),
    cli="--sut-cmd",
    commands=BOTH,
)
PROFILE: Final = Option(
    "--profile",
    "conformance_profile",
    "PROFILE",
    "a profile whose tests run: core, lexical, eviction, refresh or all (repeatable: the tests of every profile "
    "given run; default: the profiles the SUT claims in initialize); tests of other profiles are skipped as not "
    "applicable",
    Choice(PROFILE_CHOICES),
    repeatable=True,
    cli="--profile",
    commands=BOTH,
)
SUT_TIMEOUT: Final = Option(
    "--sut-timeout",
    "conformance_sut_timeout",
    "SECONDS",
    f"seconds each call to the SUT may take before it counts as hung (default {DEFAULT_TIMEOUT:g})",
    Seconds(),
    default=DEFAULT_TIMEOUT,
    cli="--sut-timeout",
    commands=BOTH,
)
CLAUSE: Final = Option(
    "--clause",
    "conformance_clauses",
    "ID",
    "run only the tests that cite this clause or sentence id, e.g. BUD-1 or BUD-1.2 (repeatable: "
    "tests citing any of the given ids run, every other collected test is deselected)",
    Text(),
    repeatable=True,
    cli="--clause",
    commands=CERTIFY,
)
THOROUGHNESS: Final = Option(
    "--conformance-thoroughness",
    "conformance_thoroughness",
    "LEVEL",
    "how many examples each property draws: quick (half), default, deep (four times)",
    Choice(THOROUGHNESS_CHOICES),
    default="default",
    cli="--thoroughness",
    commands=BOTH,
)
SHRINK_TIME: Final = Option(
    "--conformance-shrink-time",
    "conformance_shrink_time",
    "SECONDS",
    "seconds a failing property may spend shrinking its counterexample; 0 reports the first "
    f"failing example as found (default {DEFAULT_SHRINK_TIME:g})",
    Seconds(zero=True),
    default=DEFAULT_SHRINK_TIME,
    cli="--shrink-time",
    commands=CERTIFY,
)
MAX_TIME: Final = Option(
    "--conformance-max-time",
    "conformance_max_time",
    "SECONDS",
    "time budget of the session: tests that would start after it are not run, and properties "
    "stop drawing examples (default: none)",
    Seconds(),
    cli="--max-time",
    commands=CERTIFY,
    cli_default=DEFAULT_MAX_TIME,
    cli_help="time budget: no test starts after it, properties stop drawing examples, and the run is "
    f"stopped {WIND_DOWN:g} s later; the verdict is then 'incomplete' (default {DEFAULT_MAX_TIME:g})",
)
BROKEN_AFTER: Final = Option(
    "--conformance-broken-after",
    "conformance_broken_after",
    "N",
    "after N consecutive crashes or hangs the SUT is declared broken and the remaining tests "
    f"are not run (default {DEFAULT_BROKEN_AFTER})",
    Count(),
    default=DEFAULT_BROKEN_AFTER,
    cli="--broken-after",
    commands=CERTIFY,
)
REPORT: Final = Option(
    "--conformance-report",
    "conformance_report",
    "PATH",
    "append one JSON line per test result to PATH (xdist workers write PATH.<worker id>); "
    "mcp-conformance certify reads these files",
    PathValue(),
)
EXAMPLES: Final = Option(
    "--conformance-examples",
    "conformance_examples",
    "DIR",
    "save the failing examples of property tests to DIR (a Hypothesis example database) and "
    "replay the examples saved there first, so a failure found once is reproduced exactly",
    PathValue(),
    # certify saves them beside the certificate; replay reads the ones a certificate saved.
    cli="--examples",
    commands=("replay",),
)
EXPECTATIONS: Final = Option(
    "--conformance-expectations",
    "conformance_expectations",
    "FILE",
    "TOML file of known failures by clause, each with a reason; in regression mode they are "
    "reported as expected failures (xfail), also in JUnit XML",
    PathValue(),
    cli="--expectations",
    commands=CERTIFY,
)
MODE: Final = Option(
    "--conformance-mode",
    "conformance_mode",
    "MODE",
    "certify (default): an expected failure on a MUST clause is refused and every other failure "
    "counts; regression: failures listed in the expectations file are expected, and a listed "
    "failure that passes fails the run",
    Choice(MODES),
    default="certify",
    cli="--mode",
    commands=CERTIFY,
)

#: Every option, in the order ``--help`` lists them.
OPTIONS: Final[tuple[Option[Any], ...]] = (
    SUT,
    SUT_CMD,
    PROFILE,
    SUT_TIMEOUT,
    CLAUSE,
    THOROUGHNESS,
    SHRINK_TIME,
    MAX_TIME,
    BROKEN_AFTER,
    REPORT,
    EXAMPLES,
    EXPECTATIONS,
    MODE,
)
