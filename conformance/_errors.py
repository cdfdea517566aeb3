"""Errors of the conformance suite, and findings about the implementation it certifies.

Two roots keep "the suite could not do its job" apart from "the implementation broke a
clause", and a third carries the outcomes the design itself defines::

    ConformanceError                the suite or its configuration is broken (not a verdict)
     ├── SpecError                  SPEC.md cannot be parsed
     │    └── UnknownClause         a test cites a clause id that SPEC.md does not define
     ├── UsageError                 a bad option, SUT spec or adapter
     └── SutStartError              the SUT could not be started or never answered initialize

    AssertionError
     └── Nonconformance             a finding: the implementation broke one or more clauses
          └── SutMisbehaved         it crashed, hung, wrote garbage or broke the protocol
               └── SutBroken        it did so too often in a row: the rest is not run

    OutcomeError                    the SUT refused an operation, as the design allows

    Inconclusive                    a check established nothing: a clause it relies on
                                    broke first, or the SUT left it nothing to check

Findings subclass ``AssertionError``, so pytest reports them as test failures; everything
under ``ConformanceError`` is an error of the run itself. An ``OutcomeError`` is neither:
tests that expect a refusal assert on its ``kind``, and one that escapes a test fails it.
An ``Inconclusive`` is neither either: the plugin records the test as inconclusive, naming
the clause that broke first, so that a finding never blames a part of the SUT that is right.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, get_args

__all__ = [
    "OUTCOME_KINDS",
    "ConformanceError",
    "Inconclusive",
    "Nonconformance",
    "OutcomeError",
    "OutcomeKind",
    "SpecError",
    "SutBroken",
    "SutMisbehaved",
    "SutStartError",
    "UnknownClause",
    "UsageError",
    "escape_surrogates",
]

OutcomeKind = Literal[
    "selection_error",
    "config_error",
    "connection_error",
    "request_too_large",
    "invalid_params",
    "unknown_run",
]
OUTCOME_KINDS: Final[frozenset[str]] = frozenset(get_args(OutcomeKind))


class ConformanceError(Exception):
    """The suite, its specification or its configuration is broken; no verdict follows."""


class SpecError(ConformanceError):
    """The specification shipped with the suite cannot be parsed."""


class UnknownClause(SpecError, LookupError):
    """A test cites a clause id that the specification does not define."""

    def __init__(self, clause_id: str, hint: str = "") -> None:
        self.clause_id = clause_id
        super().__init__(f"unknown clause id {clause_id!r}{hint}")


class UsageError(ConformanceError):
    """An option, a SUT spec or an adapter object is not usable as given."""


class SutStartError(ConformanceError):
    """The system under test could not be started or never completed ``initialize``."""


class Nonconformance(AssertionError):
    """A finding: the implementation under test broke the cited clauses.

    Attributes:
        clauses: ids of the clauses broken, for instance ``("BUD-1",)``.
        message: what went wrong, in one sentence.
        expected: what the clauses require, when it can be stated as a value.
        observed: what the implementation did instead.
        case: the inputs that replay the finding (run parameters, calls made).
    """

    def __init__(
        self,
        clauses: Sequence[str],
        message: str,
        *,
        expected: object = None,
        observed: object = None,
        case: Mapping[str, Any] | None = None,
    ) -> None:
        self.clauses: tuple[str, ...] = tuple(clauses)
        self.message = message
        self.expected = expected
        self.observed = observed
        self.case: dict[str, Any] = dict(case or {})
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"[{', '.join(self.clauses)}] {self.message}" if self.clauses else self.message
        lines = [head]
        if self.expected is not None:
            lines.append(f"  expected: {_show(self.expected)}")
        if self.observed is not None:
            lines.append(f"  observed: {_show(self.observed)}")
        if self.case:
            lines.append(f"  case: {_show(self.case)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()


class SutMisbehaved(Nonconformance):
    """The SUT broke the adapter contract or the driver protocol itself.

    It crashed, hung past the per-call timeout, wrote a line that is not JSON, answered
    another request's id, answered with a JSON-RPC error where a result was due, or
    returned a value of the wrong shape. ``stderr_tail`` holds the last lines the SUT
    wrote to its stderr (empty for an in-process SUT).
    """

    def __init__(
        self,
        message: str,
        *,
        stderr_tail: str = "",
        observed: object = None,
        case: Mapping[str, Any] | None = None,
    ) -> None:
        self.stderr_tail = stderr_tail
        super().__init__((), message, observed=observed, case=case)

    def _render(self) -> str:
        text = super()._render()
        if self.stderr_tail:
            tail = "\n".join(f"    {line}" for line in self.stderr_tail.splitlines())
            text += f"\n  stderr (last lines):\n{tail}"
        return text


class SutBroken(SutMisbehaved):
    """The SUT crashed or hung on too many calls in a row; the suite stops calling it.

    Raised instead of calling it again. A test that meets it is reported as not run, not
    as another finding: the calls that broke it were the findings.
    """


class OutcomeError(Exception):
    """The SUT refused an operation with one of the outcomes the design defines.

    Not a failure by itself: a test that expects ``selection_error`` catches it and checks
    ``kind``. ``message`` is the SUT's own explanation.
    """

    def __init__(self, kind: OutcomeKind, message: str) -> None:
        self.kind: OutcomeKind = kind
        self.message = message
        super().__init__(kind, message)

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class Inconclusive(Exception):
    """A check established nothing about the clauses it cites.

    Either a sentence the check's oracle relies on broke first (``because`` names it: a
    host without read-only handling cannot show whether its catalog kept annotations), or
    the SUT's legitimate choices left nothing to check (``because`` is empty: a discovery
    that activates nothing, as DSC-5.6 allows, gives nothing to execute). Raised by the
    suite's ``precondition`` helpers; never a finding, never an error of the suite.
    """

    def __init__(self, because: str, reason: str, *, observed: object = None) -> None:
        self.because = because
        self.reason = reason
        self.observed = observed
        super().__init__(because, reason)

    def __str__(self) -> str:
        if self.because:
            return f"{self.because} broke first: {self.reason}"
        return f"nothing to check: {self.reason}"


def _show(value: object) -> str:
    if isinstance(value, str):
        return escape_surrogates(value)
    try:
        return escape_surrogates(json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr))
    except (TypeError, ValueError):
        return repr(value)


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``).

    A driver may echo one back (JSON allows ``"\\ud800"``), yet no UTF-8 text can hold it:
    a message carrying one raw cannot be printed, written or sent to another process (pytest-xdist
    refuses the report, which stops the whole session). Inside JSON, the escape reads back as
    the surrogate itself."""
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
