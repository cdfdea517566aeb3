"""Stale expectations in the JUnit report: one failed test case each, so that the report and the exit code agree."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from conformance._expectations import Expectation
from conformance._junit import STALE_CLASSNAME, add_stale_expectations
from tests.conformance.certificates import certificate, finding, record

# What pytest writes for one test reported as an expected failure.
REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" \
errors="0" failures="0" skipped="1" tests="1" time="1.0"><testcase classname="test_x" name="test_one" time="0.1">\
<skipped type="pytest.xfail" message="expected failure: lands in 2.0" /></testcase></testsuite></testsuites>"""


def test_each_stale_expectation_is_a_failed_test_case_named_for_it(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    listed = (Expectation("A-1", "lands in 2.0", "test_x.py::test_one"), Expectation("A-2", "tidying", None, 1))
    cert = certificate(
        tmp_path,
        [record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])]), record("test_two", ["A-2"])],
        listed,
        mode="regression",
        expectations_file="known.toml",
    )

    added = add_stale_expectations(report, cert)

    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    assert added == 1 and (suite.get("failures"), suite.get("tests"), suite.get("skipped")) == ("1", "2", "1")
    [case] = [c for c in suite.iter("testcase") if c.get("classname") == STALE_CLASSNAME]
    assert case.get("name") == "stale expectation A-2"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "A-2: the listed failure no longer happens; remove it from known.toml"


def test_a_report_is_left_alone_without_stale_entries_or_when_pytest_wrote_none(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    listed = (Expectation("A-1", "lands in 2.0"),)
    held = certificate(tmp_path, [record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])])], listed)
    stale = certificate(tmp_path, [record("test_one", ["A-1"])], listed)

    assert add_stale_expectations(report, held) == 0 and report.read_text() == REPORT
    assert add_stale_expectations(tmp_path / "missing.xml", stale) == 0
    assert not (tmp_path / "missing.xml").exists()
