"""The plugin's records of inconclusive tests: neither a pass, nor a finding, nor an error."""

from __future__ import annotations

import pytest

from conformance._records import ResultRecord, read_records
from tests.conformance.conftest import FAKE_SUT, INI

pytest_plugins = ["pytester"]

CHECKS = """
from hypothesis import example, given, settings, strategies as st

from conformance import clause
from conformance.suite._preconditions import nothing_to_check, precondition


@clause("POL-4.3")
def test_relies_on_the_cap(sut):
    precondition("SEL-1.1", False, "the first round left no tool out")
    raise AssertionError("never reached: a finding would blame POL-4.3")


@clause("GATE-3.1")
@settings(max_examples=30, database=None)
@given(st.integers(0, 100))
def test_never_anything_to_check(sut, n):
    nothing_to_check("discovery activated nothing")


@clause("ISO-1.1")
@settings(max_examples=60, database=None)
@given(st.integers(0, 1000))
def test_seldom_anything_to_check(sut, n):
    if n % 40:
        nothing_to_check("discovery activated nothing")


@clause("ISO-2.1")
@settings(max_examples=10, database=None)
@given(st.integers(0, 100))
@example(n=3)
def test_once_relies_on_a_broken_clause(sut, n):
    precondition("DSC-5.8", n != 3, "discovery did not activate a tool asked for by name")


@clause("DEF-3.1")
def test_names_no_sentence(sut):
    precondition("NOPE-9.9", False, "a typo of the suite")
"""


@pytest.fixture
def records(pytester: pytest.Pytester) -> dict[str, ResultRecord]:
    pytester.makeini(INI)
    pytester.makepyfile(fake_sut=FAKE_SUT, test_checks=CHECKS)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--sut", "fake_sut:core", "--conformance-report", "records.jsonl", "-rs", "test_checks.py"
    )
    result.assert_outcomes(passed=1, skipped=3, failed=1)
    result.stdout.fnmatch_lines(["SKIPPED * inconclusive: SEL-1.1 broke first: the first round left no tool out"])
    return {r["name"]: r for r in read_records([pytester.path / "records.jsonl"]).tests}


def test_a_failed_precondition_is_inconclusive_naming_the_clause_that_broke_first(
    records: dict[str, ResultRecord],
) -> None:
    record = records["test_relies_on_the_cap"]

    assert (record["kind"], record["inconclusive_because"]) == ("inconclusive", "SEL-1.1")
    assert record["findings"] == []
    assert record["message"] == "inconclusive: SEL-1.1 broke first: the first round left no tool out"


def test_a_property_with_nothing_to_check_in_any_example_is_inconclusive(records: dict[str, ResultRecord]) -> None:
    record = records["test_never_anything_to_check"]

    assert (record["kind"], record["inconclusive_because"]) == ("inconclusive", "")
    assert (
        record["message"] == "inconclusive: nothing to check: discovery activated nothing (in each of its 30 examples)"
    )


def test_a_property_with_something_to_check_in_some_examples_passes(records: dict[str, ResultRecord]) -> None:
    assert records["test_seldom_anything_to_check"]["kind"] == "pass"


def test_one_example_relying_on_a_broken_clause_makes_the_property_inconclusive(
    records: dict[str, ResultRecord],
) -> None:
    record = records["test_once_relies_on_a_broken_clause"]

    assert (record["kind"], record["inconclusive_because"]) == ("inconclusive", "DSC-5.8")


def test_a_precondition_naming_no_sentence_is_an_error_of_the_suite(records: dict[str, ResultRecord]) -> None:
    record = records["test_names_no_sentence"]

    assert record["kind"] == "error"
    assert "NOPE-9.9" in record["message"]
