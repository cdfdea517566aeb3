"""What ``mcp-conformance certify`` prints: progress by section while the suite runs, then the summary.

The console is pinned as a whole (``__snapshots__/test_progress/``), like the certificate's documents.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from conformance._expectations import Expectation
from conformance._progress import Progress
from conformance._records import EventName, EventRecord, Records, ResultRecord
from tests.conformance.certificates import certificate, finding, record, session

PATHS = [Path("certificate/certificate.json"), Path("certificate/certificate.md")]


def in_module(module: str, test: ResultRecord) -> ResultRecord:
    return {**test, "module": module, "nodeid": f"{module}::{test['name']}"}


def event(name: EventName, nodeid: str = "", message: str = "") -> EventRecord:
    return EventRecord(record="event", event=name, nodeid=nodeid, message=message)


def test_progress_names_each_section_as_it_ends_and_the_tests_still_running(
    text_snapshot: SnapshotAssertion,
) -> None:
    now = [0.0]
    out = io.StringIO()
    progress = Progress(out, clock=lambda: now[0])
    progress.say("certifying --sut-cmd 'node d.js' (seed 0, thoroughness default, up to 300 s)")
    records = Records(
        session=session(), events=[event("collected", message=json.dumps({"test_a.py": 2, "test_b.py": 2}))]
    )
    progress.update(records)
    records.events += [event("start", "test_a.py::test_one"), event("start", "test_b.py::test_slow")]
    records.tests.append(in_module("test_a.py", record("test_one", ["A-1"])))
    progress.update(records)
    now[0] = 31.0
    progress.tick()
    records.events.append(event("shrinking", "test_a.py::test_two", "shrinking its counterexample for at most 20 s"))
    records.tests.append(
        in_module("test_a.py", record("test_two", ["A-1"], "finding", findings=[finding(["A-1.2"]), finding(["A-1"])]))
    )
    records.events.append(
        event("broken", "test_b.py::test_slow", "not run: the SUT crashed or hung on 3 calls in a row")
    )
    records.tests += [
        in_module("test_b.py", record("test_slow", ["A-2"], "finding", findings=[finding([], protocol=True)])),
        in_module("test_b.py", record("test_late", ["A-2"], "not-run", message="not run: the SUT is broken")),
    ]
    now[0] = 40.0
    progress.update(records)
    progress.update(records)  # nothing new: nothing printed twice

    assert out.getvalue() == text_snapshot


def test_one_test_in_one_section_is_counted_in_the_singular() -> None:
    out = io.StringIO()
    progress = Progress(out, clock=lambda: 0.0)
    records = Records(session=session(), events=[event("collected", message=json.dumps({"test_a.py": 1}))])
    records.tests.append(in_module("test_a.py", record("test_one", ["A-1"])))
    progress.update(records)

    assert out.getvalue().splitlines()[1:] == [
        "mcp-conformance: 1 test in 1 section",
        "mcp-conformance:   a                1 test: 1 passed",
    ]


def test_the_summary_gives_the_verdict_why_and_the_first_failures_with_their_replay(
    tmp_path: Path, text_snapshot: SnapshotAssertion
) -> None:
    out = io.StringIO()
    tests = [record(f"test_{n}", ["A-1"], "finding", findings=[finding(["A-1"], f"finding {n}")]) for n in range(12)]

    Progress(out).summary(certificate(tmp_path, tests, examples_dir=Path("/work/certificate/examples")), PATHS)

    assert out.getvalue() == text_snapshot


@pytest.mark.parametrize(
    ("verdict", "unlisted"),
    [("non-conformant", "nobody listed this"), ("error", None)],
    ids=["non-conformant", "error"],
)
def test_a_regression_summary_lists_stale_and_unexpected_entries_whatever_the_verdict(
    tmp_path: Path, text_snapshot: SnapshotAssertion, verdict: str, unlisted: str | None
) -> None:
    out = io.StringIO()
    listed = (
        Expectation("A-1", "lands in 2.0", "test_x.py::test_one"),
        Expectation("A-2", "tidying lands in 2.1", None, 1),
    )
    tests = [
        record("test_one", ["A-1"], "finding", findings=[finding(["A-1"], "expected and seen")]),
        record("test_two", ["A-2"]),
        record("test_four", ["A-1"], "error", message="fixture broke", when="setup"),
    ]
    if unlisted:
        tests.append(record("test_three", ["A-1"], "finding", findings=[finding(["A-1"], unlisted)]))
    cert = certificate(
        tmp_path,
        tests,
        listed,
        mode="regression",
        expectations_file="known.toml",
        examples_dir=Path("/work/certificate/examples"),
    )

    Progress(out).summary(cert, PATHS)

    assert cert["verdict"] == verdict
    assert out.getvalue() == text_snapshot
