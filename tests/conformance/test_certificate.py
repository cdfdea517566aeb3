"""The certificate: every clause accounted for, the verdict and the exit code."""

from __future__ import annotations

from pathlib import Path

from conformance._certificate import _title
from conformance._clauses import CLAUSES
from conformance._expectations import Expectation
from conformance._reaper import Leftover
from tests.conformance.certificates import certificate, finding, record, session, statuses


def test_every_clause_passing_is_conformant_and_every_clause_is_listed(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"]), record("test_two", ["A-2"])])

    assert (cert["verdict"], cert["exit_code"]) == ("conformant", 0)
    assert statuses(cert) == {"A-1": "pass", "A-2": "pass", "A-3": "untested", "L-1": "not-applicable"}
    assert cert["clauses"][2]["reason"] == "a permission"
    assert cert["implementation"] == {"name": "acme", "version": "1.2", "profiles_claimed": ["core"]}
    assert cert["seed"] == 7 and cert["tests"]["pass"] == 2


def test_a_clause_title_is_its_whole_first_sentence(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"])])

    assert cert["clauses"][0]["title"] == "Hosts keep things"


def test_a_failure_names_its_sentence_with_the_sentence_text_and_level(tmp_path: Path) -> None:
    failing = record("test_one", ["A-1"], "finding", findings=[finding(["A-1.2"])], cites=["A-1.2"])

    cert = certificate(tmp_path, [failing, record("test_two", ["A-2"])])

    [entry] = cert["failures"]
    assert entry["label"] == "A-1.2" and entry["clauses"] == ["A-1"]
    assert entry["sentences"] == [{"id": "A-1.2", "text": "They keep them well."}]
    assert entry["level"] == "SHOULD" and cert["exit_code"] == 0


def test_a_must_failure_is_non_conformant_with_the_case_and_a_replay_command(tmp_path: Path) -> None:
    failing = record("test_one[http]", ["A-1", "A-2"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [failing, record("test_two", ["A-2"])])

    assert (cert["verdict"], cert["exit_code"]) == ("non-conformant", 1)
    assert statuses(cert)["A-1"] == "fail" and statuses(cert)["A-2"] == "pass"
    [entry] = cert["failures"]
    assert entry["clauses"] == ["A-1"] and entry["level"] == "MUST" and entry["id"] == "failure-1"
    assert entry["case"] == {"fleet": {"seed": 3}, "policies": {"s0": {"mode": "auto"}}}
    assert entry["falsifying_example"] == "Falsifying example: test_one(seed=3)"
    assert entry["replay"] == (
        f"mcp-conformance replay '--sut-cmd=node d.js' --seed=7 --examples={tmp_path.resolve()}/out/examples "
        "'test_x.py::test_one[http]'"
    )


def test_the_profiles_a_run_was_given_are_its_source_and_are_given_again_on_replay(tmp_path: Path) -> None:
    failing = record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [failing], profiles=("eviction", "refresh"))

    assert cert["profile_source"] == "--profile eviction --profile refresh"
    assert "--seed=7 --profile=eviction --profile=refresh --examples=" in cert["failures"][0]["replay"]
    assert certificate(tmp_path, [failing])["profile_source"] == "as claimed by the implementation"


def test_only_the_clauses_a_finding_names_are_failed(tmp_path: Path) -> None:
    failing = record("test_one", ["A-1", "A-2"], "finding", findings=[finding(["A-2"])])

    cert = certificate(tmp_path, [failing, record("test_two", ["A-1"])])

    assert statuses(cert)["A-1"] == "pass" and statuses(cert)["A-2"] == "fail"
    assert cert["clauses"][1]["failures"] == ["failure-1"]


def test_every_distinct_failure_of_a_property_is_listed(tmp_path: Path) -> None:
    three = [finding(["A-1"], "first"), finding(["A-1"], "second"), finding(["A-2"], "third")]

    cert = certificate(tmp_path, [record("test_one", ["A-1", "A-2"], "finding", findings=three)])

    assert [f["message"] for f in cert["failures"]] == ["first", "second", "third"]


def test_a_should_failure_is_a_warning_and_exits_0(tmp_path: Path) -> None:
    cert = certificate(
        tmp_path,
        [record("test_one", ["A-1"]), record("test_two", ["A-2"], "finding", findings=[finding(["A-2"])])],
    )

    assert (cert["verdict"], cert["exit_code"]) == ("conformant with warnings", 0)
    assert any("A-2" in line for line in cert["why"])


def test_protocol_findings_with_the_same_message_are_one_failure_that_blocks(tmp_path: Path) -> None:
    crash = finding([], "run.open: driver exited with code 3 without answering", protocol=True)
    tests = [record(f"test_{n}", ["A-1"], "finding", findings=[crash]) for n in range(3)]

    cert = certificate(tmp_path, [*tests, record("test_two", ["A-2"])])

    [entry] = cert["failures"]
    assert entry["label"] == "driver protocol" and len(entry["tests"]) == 3
    assert (cert["verdict"], cert["exit_code"]) == ("non-conformant", 1)
    assert "the driver protocol" in cert["why"][0]


def test_tests_not_run_after_the_sut_broke_are_listed_as_such(tmp_path: Path) -> None:
    crash = finding([], "driver did not answer within 30 s", protocol=True)
    tests = [
        record("test_one", ["A-1"], "finding", findings=[crash]),
        record("test_two", ["A-2"], "not-run", message="not run: the SUT crashed or hung on 3 calls in a row"),
    ]

    cert = certificate(tmp_path, tests)

    assert statuses(cert)["A-2"] == "not-run"
    assert cert["exit_code"] == 1 and any("not run" in line for line in cert["why"])


def test_a_run_cut_short_without_findings_is_incomplete(tmp_path: Path) -> None:
    tests = [record("test_one", ["A-1"]), record("test_two", ["A-2"], "not-run", message="not run: time ran out")]

    cut = certificate(tmp_path, tests)
    stopped = certificate(tmp_path, [record("test_one", ["A-1"]), record("test_two", ["A-2"])], stopped="SIGTERM")

    assert (cut["verdict"], cut["exit_code"]) == ("incomplete", 2)
    assert (stopped["verdict"], stopped["exit_code"]) == ("incomplete", 2)
    assert "SIGTERM" in stopped["why"][0]


def test_a_run_stopped_with_findings_is_incomplete_and_still_lists_them(tmp_path: Path) -> None:
    failing = record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [failing, record("test_two", ["A-2"])], stopped="SIGTERM")

    assert (cert["verdict"], cert["exit_code"]) == ("incomplete", 2)
    assert cert["why"] == ["terminated (SIGTERM); the run was stopped", "MUST clauses broken: A-1"]
    assert [f["clauses"] for f in cert["failures"]] == [["A-1"]] and statuses(cert)["A-1"] == "fail"


def test_processes_left_running_are_a_blocking_failure(tmp_path: Path) -> None:
    cert = certificate(
        tmp_path,
        [record("test_one", ["A-1"]), record("test_two", ["A-2"])],
        leftovers=(Leftover(4242, "sleep 1000"),),
    )

    assert cert["exit_code"] == 1
    assert cert["failures"][0]["observed"] == ["4242: sleep 1000"]


def test_a_test_that_breaks_in_setup_gives_no_verdict(tmp_path: Path) -> None:
    broke = record("test_one", ["A-1"], "error", message="fixture broke", when="setup")

    cert = certificate(tmp_path, [broke, record("t2", ["A-2"])])

    assert (cert["verdict"], cert["exit_code"]) == ("error", 2)
    assert statuses(cert)["A-1"] == "error"
    assert cert["errors"][0]["message"] == "fixture broke"


def test_a_pending_clause_makes_the_run_incomplete(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"])], pending=frozenset({"A-2.1"}))

    assert (cert["verdict"], cert["exit_code"]) == ("incomplete", 2)
    assert statuses(cert)["A-2"] == "untested"


def test_a_subset_that_passes_is_a_partial_run(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"])])

    assert (cert["verdict"], cert["exit_code"]) == ("partial", 0)
    assert statuses(cert)["A-2"] == "not-run"


def test_a_subset_that_leaves_a_must_clause_inconclusive_is_incomplete_not_partial(tmp_path: Path) -> None:
    waiting = record(
        "test_one", ["A-1"], "inconclusive", message="inconclusive: L-1.1 broke first", inconclusive_because="L-1.1"
    )

    cert = certificate(tmp_path, [waiting])

    assert statuses(cert)["A-2"] == "not-run"
    assert (cert["verdict"], cert["exit_code"]) == ("incomplete", 2)
    assert cert["why"] == ["MUST clauses not established: A-1"]


def test_a_clause_whose_only_test_failed_elsewhere_is_inconclusive_naming_where(tmp_path: Path) -> None:
    failing = record("test_one", ["A-1", "A-2"], "finding", findings=[finding(["A-2.1"])])

    cert = certificate(tmp_path, [failing])

    row = next(r for r in cert["clauses"] if r["clause"] == "A-1")
    assert (row["status"], row["inconclusive_because"]) == ("inconclusive", ["A-2"])
    assert row["reason"] == "every test citing it failed on another clause first (A-2)"


def test_a_suite_whose_pytest_broke_gives_no_verdict_though_every_record_passed(tmp_path: Path) -> None:
    tests = [record("test_one", ["A-1"]), record("test_two", ["A-2"])]

    broke = certificate(tmp_path, tests, pytest_exit=3)
    failed = certificate(
        tmp_path, [*tests, record("t3", ["A-1"], "finding", findings=[finding(["A-1"])])], pytest_exit=3
    )

    assert (broke["verdict"], broke["exit_code"]) == ("error", 2)
    assert broke["why"] == ["the suite's pytest ended with exit code 3, an internal error (see pytest.log)"]
    # A finding stands whatever became of pytest.
    assert (failed["verdict"], failed["exit_code"]) == ("non-conformant", 1)


def test_a_finding_stands_when_pytest_broke_but_the_certificate_says_the_rest_never_ran(tmp_path: Path) -> None:
    tests = [record("t1", ["A-1"], "finding", findings=[finding(["A-1"])])]

    cert = certificate(tmp_path, tests, pytest_exit=3)

    assert (cert["verdict"], cert["exit_code"]) == ("non-conformant", 1)
    assert cert["why"] == [
        "MUST clauses broken: A-1",
        "the suite's pytest ended with exit code 3, an internal error (see pytest.log)",
    ]
    # Not "not selected": the run was meant to reach them, and stopped first.
    unrun = next(row for row in cert["clauses"] if row["clause"] == "A-2")
    assert (unrun["status"], unrun["reason"]) == (
        "not-run",
        "no test citing it ran: the suite's pytest ended with exit code 3, an internal error (see pytest.log)",
    )


def test_an_inconclusive_test_leaves_its_clause_inconclusive_naming_what_broke_first(tmp_path: Path) -> None:
    waiting = record(
        "test_one",
        ["A-1"],
        "inconclusive",
        message="inconclusive: A-2.1 broke first: nothing was tidied",
        inconclusive_because="A-2.1",
    )

    cert = certificate(tmp_path, [waiting, record("test_two", ["A-2"], "finding", findings=[finding(["A-2.1"])])])

    row = next(r for r in cert["clauses"] if r["clause"] == "A-1")
    assert (row["status"], row["inconclusive_because"]) == ("inconclusive", ["A-2"])
    assert row["reason"] == "test_one: inconclusive: A-2.1 broke first: nothing was tidied"
    assert cert["tests"]["inconclusive"] == 1 and cert["errors"] == []
    assert (cert["verdict"], cert["exit_code"]) == ("incomplete", 2)


def test_an_inconclusive_test_does_not_undo_another_that_established_its_clause(tmp_path: Path) -> None:
    waiting = record("test_one", ["A-1"], "inconclusive", message="inconclusive: nothing to check: none found")

    cert = certificate(tmp_path, [waiting, record("test_two", ["A-1"]), record("test_three", ["A-2"])])

    assert statuses(cert)["A-1"] == "pass"
    assert (cert["verdict"], cert["exit_code"]) == ("conformant", 0)


def test_a_test_that_could_not_judge_because_another_sentence_broke_keeps_its_clause_unestablished(
    tmp_path: Path,
) -> None:
    """Other tests citing the clause passed, and nothing failed: the run is still no certificate."""
    waiting = record(
        "test_one", ["A-1"], "inconclusive", message="inconclusive: A-2.1 looks broken", inconclusive_because="A-2.1"
    )

    cert = certificate(tmp_path, [waiting, record("test_two", ["A-1"]), record("test_three", ["A-2"])])

    row = next(r for r in cert["clauses"] if r["clause"] == "A-1")
    assert (row["status"], row["inconclusive_because"]) == ("inconclusive", ["A-2"])
    assert row["reason"] == "test_one: inconclusive: A-2.1 looks broken"
    assert (cert["verdict"], cert["exit_code"]) == ("incomplete", 2)


def test_an_inconclusive_test_never_makes_an_expectation_stale(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "lands in 2.0"),)
    waiting = record("test_one", ["A-1"], "inconclusive", message="inconclusive: A-2 broke first: x")

    cert = certificate(tmp_path, [waiting], listed, mode="regression", expectations_file="x")

    assert cert["expectations"]["entries"][0]["status"] == "not checked in this run"


def test_nothing_tested_or_no_initialize_is_an_error(tmp_path: Path) -> None:
    only_skips = certificate(tmp_path, [record("test_one", ["A-1"], "skip", message="not applicable")])
    no_session = certificate(tmp_path, [], session=None)
    failed_start = certificate(tmp_path, [], session=session(implementation=None, problem="exited with code 3"))

    assert (only_skips["verdict"], only_skips["exit_code"]) == ("error", 2)
    assert statuses(only_skips)["A-1"] == "not-applicable"
    assert no_session["exit_code"] == 2
    assert "exited with code 3" in failed_start["why"][0]


def test_regression_mode_accepts_a_listed_failure(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "lands in 2.0"),)
    failing = record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [failing, record("t2", ["A-2"])], listed, mode="regression", expectations_file="x")

    assert (cert["verdict"], cert["exit_code"]) == ("no regressions", 0)
    assert statuses(cert)["A-1"] == "expected-fail"
    assert cert["expectations"]["entries"][0]["status"] == "failure seen, as expected"
    assert cert["failures"][0]["expected_failure"] == [{"clause": "A-1", "reason": "lands in 2.0", "test": None}]


def test_regression_mode_holds_a_baseline_whose_listed_failures_leave_a_clause_inconclusive(tmp_path: Path) -> None:
    hidden = record("test_one", ["A-1", "A-2"], "finding", findings=[finding(["A-2"])])

    baseline = certificate(tmp_path, [hidden], (Expectation("A-2", "lands in 2.0"),), mode="regression")
    unlisted = certificate(tmp_path, [hidden], (Expectation("A-3", "known"),), mode="regression")

    assert (baseline["verdict"], baseline["exit_code"]) == ("no regressions", 0)
    assert statuses(baseline)["A-1"] == "inconclusive"
    assert "not established behind the listed failures: A-1" in baseline["why"][0]
    # A failure nobody listed hides the clause: that is no baseline.
    assert (unlisted["verdict"], unlisted["exit_code"]) == ("incomplete", 2)


def test_a_protocol_finding_is_never_expected(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "lands in 2.0"),)
    crash = record("test_one", ["A-1"], "finding", findings=[finding([], "exited", protocol=True)])

    cert = certificate(tmp_path, [crash, record("t2", ["A-2"])], listed, mode="regression")

    assert cert["exit_code"] == 1


def test_a_listed_failure_that_passes_is_stale(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "lands in 2.0"),)

    cert = certificate(
        tmp_path, [record("test_one", ["A-1"]), record("t2", ["A-2"])], listed, expectations_file="known.toml"
    )

    assert (cert["verdict"], cert["exit_code"]) == ("stale expectations", 1)
    assert "known.toml" in cert["why"][0]


def test_an_expectation_for_one_test_does_not_cover_another(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "known", test="test_x.py::test_one"),)
    one = record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])])
    other = record("test_other", ["A-1"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [one, other, record("t2", ["A-2"])], listed, mode="regression")

    assert cert["exit_code"] == 1
    assert {f["test"]: bool(f["expected_failure"]) for f in cert["failures"]} == {
        "test_x.py::test_one": True,
        "test_x.py::test_other": False,
    }


def test_the_same_records_give_the_same_certificate(tmp_path: Path) -> None:
    tests = [
        record("test_b", ["A-2"], "finding", findings=[finding(["A-2"])]),
        record("test_a", ["A-1"], "finding", findings=[finding(["A-1"])]),
    ]

    forward = certificate(tmp_path, tests)
    backward = certificate(tmp_path, list(reversed(tests)))

    assert forward == backward
    assert [f["clauses"] for f in forward["failures"]] == [["A-1"], ["A-2"]]


def test_what_the_platform_could_not_track_is_a_note_of_the_certificate(tmp_path: Path) -> None:
    tracked = certificate(tmp_path, [record("test_one", ["A-1"])])
    untracked = certificate(tmp_path, [record("test_one", ["A-1"])], tracked=False, untracked="daemons escape here")

    assert tracked["notes"] == []
    assert untracked["notes"] == ["daemons escape here"]


def test_a_colon_inside_code_does_not_end_a_clause_title() -> None:
    title = _title(CLAUSES["POL-5"])

    assert title.startswith("Under `sideEffects: readOnly`, a tool is eligible only when")
    assert title.endswith("`readOnlyHint` equal to the JSON value `true`")
