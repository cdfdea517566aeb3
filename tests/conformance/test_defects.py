"""The suite's worth: every deliberately defective implementation is caught on its clause.

Each case runs the shipped suite in a pytest subprocess against a reference driver with one
defect (``python -m tests.conformance.defects NAME``), restricted with ``--clause`` to the
tests that cite the clause the defect breaks, and reads the JUnit report: at least one
test fails, every failure is a finding (an assertion about the implementation, not an
error of the harness or a crash of the driver), and a failure names the expected clause.
A defect whose clause no suite test cites yet is skipped, saying so. A control run shows
that the same tests pass against the plain reference driver.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conformance.suite._model import NO_SHRINK_ENV
from tests.conformance.defects import DEFECTS

ROOT = Path(__file__).resolve().parents[2]
# Generous: a run that hangs is a bug of the suite, reported as such rather than waited for.
RUN_TIMEOUT = 600
# Exception types that mean the suite or the driver broke, not that it found the defect.
_CRASH = re.compile(
    r"^(?:[\w.]+\.)?(SutMisbehaved|ConformanceError|SpecError|UnknownClause|UsageError|SutStartError|"
    r"TypeError|AttributeError|NameError|KeyError|IndexError|ValueError|ImportError|ModuleNotFoundError|"
    r"RuntimeError|RecursionError|TimeoutError|OSError|hypothesis\.errors\.\w+)\b"
)
_HEADER = re.compile(r"\[((?:[A-Z]+-\d+)(?:, [A-Z]+-\d+)*)\]")


@dataclass
class Outcome:
    """What one suite run reported, test by test."""

    returncode: int
    output: str
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # test id -> (message, text) of its <failure> / <error>
    failures: dict[str, tuple[str, str]] = field(default_factory=dict)
    errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    cited: dict[str, set[str]] = field(default_factory=dict)

    def describe(self) -> str:
        return f"exit {self.returncode}\n{self.output[-6000:]}"


def run_suite(sut_cmd: list[str], clauses: list[str], tmp_path: Path, tests: Sequence[str] = ()) -> Outcome:
    """Run the shipped suite against ``sut_cmd``, only the tests citing ``clauses`` (of ``tests``, if given)."""
    junit = tmp_path / "r.xml"
    argv = [sys.executable, "-m", "pytest", "--sut-cmd", shlex.join(sut_cmd), *tests]
    for clause_id in clauses:
        argv += ["--clause", clause_id]
    argv += ["-p", "no:cacheprovider", "-p", "no:xdist", "-q", f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        # Only whether (and on which clause) a property fails matters here, not its
        # shrunk counterexample: report the first failing example at once.
        NO_SHRINK_ENV: "1",
    }
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    outcome = Outcome(proc.returncode, proc.stdout + proc.stderr)
    assert proc.returncode in (0, 1, 5), f"the suite did not run to a verdict: {outcome.describe()}"
    if not junit.exists():
        return outcome
    for case in ET.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome.cited[test_id] = {
            clause_id
            for prop in case.iter("property")
            if prop.get("name") == "clauses"
            for clause_id in (prop.get("value") or "").split()
        }
        failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
        if error is not None:
            outcome.errors[test_id] = (error.get("message") or "", error.text or "")
        elif failure is not None:
            outcome.failures[test_id] = (failure.get("message") or "", failure.text or "")
        elif skipped is not None:
            outcome.skipped.append(test_id)
        else:
            outcome.passed.append(test_id)
    return outcome


def defect_cmd(name: str) -> list[str]:
    return [sys.executable, "-m", "tests.conformance.defects", name]


def _ran(outcome: Outcome) -> int:
    return len(outcome.passed) + len(outcome.failures) + len(outcome.errors)


def _names_clause(message: str, text: str, clause_id: str, cited: set[str] | None) -> bool:
    """Whether a failure is a finding about ``clause_id``.

    A finding with an ``[IDS]`` header must name it there; one without (a plain assertion,
    a refusal that escaped the test) counts when the failing test cites the clause.
    """
    headers = _HEADER.findall(message.split("\n", 1)[0])
    if headers:
        return any(clause_id in found.split(", ") for found in headers)
    return cited is None or clause_id in cited


def _crash(message: str, text: str) -> str | None:
    """The crash a failure reports, or None when it is an assertion about the implementation."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    if _CRASH.match(first):
        return first
    for line in text.splitlines():
        body = line[1:].strip() if line.startswith("E ") else ""
        if _CRASH.match(body):
            return body
    return None


def _predicted(twin: str) -> list[str]:
    """The lexical-vector probes that the model of a wrong ranker predicts to fail (the first two)."""
    from conformance.suite import test_ranking
    from tests.conformance.vectors._defective import DEFECTIVE, observe

    caught = [probe for probe in test_ranking.PROBES if observe(probe, DEFECTIVE[twin]) is not None]
    assert caught, f"the lexical vectors do not catch {twin}"
    test = f"{Path(test_ranking.__file__).relative_to(ROOT)}::{test_ranking.test_rankings_are_the_lexical_vectors.__name__}"
    return [f"{test}[{probe.id}]" for probe in caught[:2]]


@pytest.mark.parametrize("name", list(DEFECTS))
def test_defect_is_caught_on_its_clause(name: str, tmp_path: Path) -> None:
    defect = DEFECTS[name]
    outcome = run_suite(defect_cmd(name), [defect.clause], tmp_path, _predicted(defect.twin) if defect.twin else ())
    if _ran(outcome) == 0:
        pytest.skip(f"no suite test cites {defect.clause} yet, so {name} ({defect.summary}) cannot be caught")

    assert not outcome.errors, f"{name}: the suite errored instead of reporting a finding: {outcome.errors}"
    assert outcome.failures, (
        f"{name} ({defect.summary}) passed every test citing {defect.clause}: {outcome.passed}\n{outcome.describe()}"
    )
    crashes = {test: crash for test, (message, text) in outcome.failures.items() if (crash := _crash(message, text))}
    assert not crashes, f"{name}: failures that are crashes, not findings: {crashes}\n{outcome.describe()}"
    for test in outcome.failures:
        cited = outcome.cited.get(test)
        assert cited is None or not cited or defect.clause in cited, f"{test} does not cite {defect.clause}: {cited}"
    on_clause = [
        test
        for test, (message, text) in outcome.failures.items()
        if _names_clause(message, text, defect.clause, outcome.cited.get(test))
    ]
    assert on_clause, (
        f"{name}: no failure names {defect.clause}; it was caught elsewhere: "
        f"{ {test: message[:300] for test, (message, _) in outcome.failures.items()} }"
    )


def test_the_reference_driver_passes_the_tests_the_defects_are_caught_by(tmp_path: Path) -> None:
    clauses = sorted({defect.clause for defect in DEFECTS.values()})
    outcome = run_suite([sys.executable, "-m", "reference_impl.driver"], clauses, tmp_path)
    if _ran(outcome) == 0:
        pytest.skip(f"no suite test cites any of {', '.join(clauses)} yet")
    assert not outcome.failures and not outcome.errors, (
        f"the reference driver fails {sorted(outcome.failures)} {sorted(outcome.errors)}\n{outcome.describe()}"
    )
    assert outcome.returncode == 0, outcome.describe()


def test_the_defective_driver_refuses_an_unknown_defect() -> None:
    proc = subprocess.run(
        [*defect_cmd("no_such_defect")], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2
    assert "first_round_97" in proc.stderr
