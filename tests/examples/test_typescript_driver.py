"""examples/typescript-driver: the skeleton a team starts from can be baselined and then held to it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance._clauses import CLAUSES
from conformance._expectations import load_expectations
from tests.examples._node import EXAMPLES, build, certify, clause_statuses, npm_test

pytestmark = pytest.mark.e2e

# As a team runs it: default thoroughness; the baseline and the regression run share the seed.
SETTINGS = ("-n", "2", "--seed", "0", "--no-shrink")


@pytest.mark.slow  # two certifications: several minutes on two cores
def test_the_skeleton_answers_the_protocol_and_its_generated_baseline_holds_in_regression_mode(tmp_path: Path) -> None:
    driver = build("typescript-driver")
    own = npm_test("typescript-driver")
    assert own.returncode == 0, own.stdout[-5000:] + own.stderr[-3000:]
    command = f"node {driver.relative_to(EXAMPLES.parent)}"
    known = tmp_path / "known.toml"

    baseline = certify(
        *SETTINGS, "--sut-cmd", command, "--out", str(tmp_path / "baseline"), "--write-expectations", str(known)
    )

    first = json.loads((tmp_path / "baseline" / "certificate.json").read_text())
    statuses = clause_statuses(first)
    assert baseline.returncode == 1 and first["verdict"] == "non-conformant", baseline.stdout[-3000:]
    # Its placeholder host breaks clauses; its protocol shell breaks none and it never crashes.
    assert {clause: status for clause, status in statuses.items() if clause.startswith("PRO-")} == {
        clause: "pass" for clause in CLAUSES if clause.startswith("PRO-")
    }
    assert not [failure for failure in first["failures"] if failure["protocol"]]
    assert first["errors"] == []
    failing = sorted(clause for clause, status in statuses.items() if status == "fail")
    assert failing and sorted({entry.clause for entry in load_expectations(known)}) == failing
    junit = tmp_path / "report.xml"

    regression = certify(
        *SETTINGS,
        "--sut-cmd",
        command,
        "--out",
        str(tmp_path / "regression"),
        "--mode",
        "regression",
        "--expectations",
        str(known),
        "--",
        f"--junitxml={junit}",
    )

    second = json.loads((tmp_path / "regression" / "certificate.json").read_text())
    assert (regression.returncode, second["verdict"]) == (0, "no regressions"), regression.stdout[-5000:]
    assert sorted(c for c, s in clause_statuses(second).items() if s == "expected-fail") == failing
    assert {entry["status"] for entry in second["expectations"]["entries"]} == {"failure seen, as expected"}
    assert ", 0 stale; 0 unexpected failure(s)" in regression.stdout
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    assert cases
    assert not [
        case.get("name") for case in cases if case.find("failure") is not None or case.find("error") is not None
    ]
