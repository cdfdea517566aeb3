"""``mcp-conformance baseline``: an expectations file from a certificate, which holds the same run in place."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance._baseline import PLACEHOLDER, baseline, read_certificate, write_baseline
from conformance._certificate import stale, unexpected
from conformance._cli import main
from conformance._errors import UsageError
from conformance._expectations import Expectation, load_expectations
from conformance._reaper import Leftover
from conformance._records import ResultRecord
from tests.conformance.certificates import CLAUSES, certificate, finding, record, statuses


def failing_run() -> list[ResultRecord]:
    """A MUST failure in two cases of one test, a SHOULD one, one test breaking two clauses, and passes."""
    return [
        record("test_one[http]", ["A-1"], "finding", findings=[finding(["A-1.1"], 'a "quoted"\nmessage')]),
        record("test_one[stdio]", ["A-1"], "finding", findings=[finding(["A-1.1"])]),
        record("test_three", ["A-2"], "finding", findings=[finding(["A-2"])]),
        record("test_both", ["A-1", "A-2"], "finding", findings=[finding(["A-1"]), finding(["A-2"])]),
        record("test_fine", ["A-1", "A-2"]),
    ]


def written(tmp_path: Path, text: str) -> tuple[Expectation, ...]:
    path = tmp_path / "expected.toml"
    path.write_text(text)
    return load_expectations(path, clauses=CLAUSES)


def test_a_baseline_lists_each_clause_and_test_that_failed_with_a_reason_to_edit(tmp_path: Path) -> None:
    cert = certificate(tmp_path, failing_run())

    result = baseline(cert)

    assert result.entries == 4 and result.unlisted == []
    assert written(tmp_path, result.text) == (
        Expectation("A-1", PLACEHOLDER, "test_x.py::test_both", 0),
        Expectation("A-1", PLACEHOLDER, "test_x.py::test_one", 1),
        Expectation("A-2", PLACEHOLDER, "test_x.py::test_both", 2),
        Expectation("A-2", PLACEHOLDER, "test_x.py::test_three", 3),
    )
    assert '# A-1.1 (MUST): a "quoted" message' in result.text


def test_a_regression_run_with_the_baseline_has_no_stale_and_no_unexpected_entry(tmp_path: Path) -> None:
    tests = failing_run()
    listed = written(tmp_path, baseline(certificate(tmp_path, tests)).text)

    again = certificate(tmp_path, tests, listed, mode="regression", expectations_file="expected.toml")

    assert (again["verdict"], again["exit_code"]) == ("no regressions", 0)
    assert stale(again["expectations"]["entries"]) == [] and unexpected(again["failures"]) == []
    assert statuses(again)["A-1"] == statuses(again)["A-2"] == "expected-fail"


def test_a_baseline_by_clause_covers_any_test_of_the_clause(tmp_path: Path) -> None:
    tests = failing_run()

    listed = written(tmp_path, baseline(certificate(tmp_path, tests), by="clause").text)
    again = certificate(tmp_path, tests, listed, mode="regression")

    assert listed == (Expectation("A-1", PLACEHOLDER, None, 0), Expectation("A-2", PLACEHOLDER, None, 1))
    assert again["verdict"] == "no regressions"


def test_a_failure_already_expected_keeps_its_entry_and_an_unchecked_entry_stays(tmp_path: Path) -> None:
    tests = [*failing_run(), record("test_fine_too", ["A-2"])]
    known = (
        Expectation("A-1", "lands in 2.0", "test_one"),
        Expectation("L-1", "not under test here", None, 1),
        Expectation("A-2", "was fixed", "test_fine_too", 2),
    )
    cert = certificate(tmp_path, tests, known, mode="regression")

    rebased = written(tmp_path, baseline(cert).text)

    assert [(e.clause, e.test, e.reason) for e in rebased] == [
        ("A-1", "test_one", "lands in 2.0"),
        ("A-1", "test_x.py::test_both", PLACEHOLDER),
        ("A-2", "test_x.py::test_both", PLACEHOLDER),
        ("A-2", "test_x.py::test_three", PLACEHOLDER),
        ("L-1", None, "not under test here"),
    ]


def test_what_no_expectations_file_can_accept_is_named_instead_of_listed(tmp_path: Path) -> None:
    tests = [
        *failing_run(),
        record("test_two", ["A-1"], "finding", findings=[finding([], "run.open: driver exited", protocol=True)]),
        record("test_four", ["A-2"], "error", message="fixture broke\nOSError: no ports", when="setup"),
    ]
    cert = certificate(tmp_path, tests, leftovers=(Leftover(4242, "sleep 1000"),))

    result = baseline(cert)

    assert result.entries == 4
    assert [line[:30] for line in result.unlisted] == [
        "driver protocol: run.open: dri",
        "PRO-7.1: 1 process(es) started",
        "test_x.py::test_four could not",
    ]
    assert "#   driver protocol: run.open: driver exited" in result.text
    assert "#   test_x.py::test_four could not run to the end: fixture broke OSError: no ports" in result.text


def test_a_baseline_of_a_run_without_failures_lists_nothing(tmp_path: Path) -> None:
    result = baseline(certificate(tmp_path, [record("test_fine", ["A-1", "A-2"])]))

    assert result.entries == 0 and tomllib.loads(result.text) == {}


def test_the_command_prints_the_file_for_a_certificate_folder_and_exits_1_when_some_cannot_be_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    crash = record("test_two", ["A-1"], "finding", findings=[finding([], "run.open: driver exited", protocol=True)])
    for folder, tests in ((good, failing_run()), (bad, [*failing_run(), crash])):
        folder.mkdir()
        (folder / "certificate.json").write_text(json.dumps(certificate(tmp_path, tests)))

    codes = []
    for folder in (good, bad / "certificate.json"):
        with pytest.raises(SystemExit) as ended:
            main(["baseline", str(folder)])
        codes.append(ended.value.code)
    out, err = capsys.readouterr()

    assert codes == [0, 1]
    assert out.count("[[expected_failure]]") == 8
    assert "1 failure(s) or error(s) of" in err and "driver protocol: run.open: driver exited" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "format: expected 'mcp-conformance-certificate/2', got 'list'"),
        ('{"format": "other/1"}', "format: expected 'mcp-conformance-certificate/2', got 'other/1'"),
        ("{", "not a JSON file"),
    ],
)
def test_a_file_that_is_not_a_certificate_is_refused_naming_it(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "certificate.json"
    path.write_text(content)

    with pytest.raises(UsageError) as refused:
        read_certificate(tmp_path)

    assert str(refused.value).startswith(f"{path}: ") and message in str(refused.value)


def test_a_certificate_missing_a_field_the_baseline_reads_is_refused_naming_the_field(tmp_path: Path) -> None:
    cert = json.loads(json.dumps(certificate(tmp_path, failing_run())))
    del cert["failures"][1]["test"]
    path = tmp_path / "certificate.json"
    path.write_text(json.dumps(cert))

    with pytest.raises(UsageError, match=r"failures\[1\]\.test: expected a str, got None"):
        read_certificate(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.update(errors=[{"test": 3}]), r"errors\[0\]: expected an object with a test and a message"),
        (lambda c: c["expectations"].update(entries=[{}]), "expectations.entries: expected a list of entries"),
        (lambda c: c.update(seed="0"), "seed: expected a int, got '0'"),
        (lambda c: c["failures"].__setitem__(0, []), r"failures\[0\]: expected an object"),
        (lambda c: c["failures"][0].update(expected_failure="x"), r"failures\[0\]\.expected_failure: expected a list"),
    ],
)
def test_each_field_the_baseline_reads_is_checked(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    cert = json.loads(json.dumps(certificate(tmp_path, failing_run())))
    change(cert)
    path = tmp_path / "certificate.json"
    path.write_text(json.dumps(cert))

    with pytest.raises(UsageError, match=message):
        read_certificate(path)


def test_an_expectations_file_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "known.toml"

    with pytest.raises(UsageError, match=f"--write-expectations {target}: cannot write the expectations file"):
        write_baseline(certificate(tmp_path, failing_run()), target)


def test_written_expectations_replace_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "known.toml"
    target.write_text("old")

    told = write_baseline(certificate(tmp_path, failing_run()), target)

    assert told == f"expectations: 4 known failure(s) written to {target}"
    assert len(written(tmp_path, target.read_text())) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expected.toml", "known.toml"]
