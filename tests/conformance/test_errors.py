from __future__ import annotations

from conformance import (
    ConformanceError,
    Nonconformance,
    OutcomeError,
    SpecError,
    SutMisbehaved,
    SutStartError,
    UnknownClause,
    UsageError,
)


def test_suite_errors_share_one_root_apart_from_findings() -> None:
    for error in (SpecError, UnknownClause, UsageError, SutStartError):
        assert issubclass(error, ConformanceError)
        assert not issubclass(error, AssertionError)
    assert issubclass(UnknownClause, SpecError)
    assert not issubclass(OutcomeError, (ConformanceError, AssertionError))


def test_findings_are_assertion_errors_so_pytest_reports_them_as_failures() -> None:
    assert issubclass(Nonconformance, AssertionError)
    assert issubclass(SutMisbehaved, Nonconformance)


def test_a_finding_shows_its_clauses_expectation_observation_and_case() -> None:
    finding = Nonconformance(
        ["BUD-1"], "the first request is too large", expected="at most 96", observed=97, case={"userMessage": "hi"}
    )

    assert str(finding) == (
        '[BUD-1] the first request is too large\n  expected: at most 96\n  observed: 97\n  case: {"userMessage": "hi"}'
    )
    assert (finding.clauses, finding.case) == (("BUD-1",), {"userMessage": "hi"})


def test_misbehaviour_shows_the_stderr_tail_indented() -> None:
    misbehaved = SutMisbehaved("driver exited with code 3", stderr_tail="Traceback\nValueError: x")

    assert str(misbehaved) == ("driver exited with code 3\n  stderr (last lines):\n    Traceback\n    ValueError: x")
    assert misbehaved.clauses == ()


def test_a_case_added_later_shows_in_the_message() -> None:
    misbehaved = SutMisbehaved("hung")
    misbehaved.case = {"open": {}}

    assert str(misbehaved) == 'hung\n  case: {"open": {}}'


def test_an_outcome_error_reads_as_kind_and_message() -> None:
    refused = OutcomeError("selection_error", "github: 30 required tools exceed maxActiveTools 24")

    assert str(refused) == "selection_error: github: 30 required tools exceed maxActiveTools 24"
    assert refused.kind == "selection_error"


def test_a_lone_surrogate_a_finding_quotes_is_shown_as_its_escape() -> None:
    """A driver may echo one back; raw, the message could be neither printed nor sent to a worker."""
    finding = Nonconformance(["GATE-4.5"], "odd", observed={"text": "\ud800"}, case={"note": "\udfff"})

    text = str(finding)

    assert text.encode("utf-8")
    assert '"text": "\\ud800"' in text and '"note": "\\udfff"' in text
