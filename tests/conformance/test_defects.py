"""The suite's worth: every deliberately defective implementation is caught on its clause.

Each case certifies a reference driver with one defect (``python -m
tests.conformance.defects NAME``), restricted with ``--clause`` to the tests that cite the
clause the defect breaks, and reads the certificate the run wrote (built from the
suite's own records, not from any report text): the run is non-conformant, every failure
is a finding about the implementation (no error of the suite, no protocol breakage), and
a failure names the expected clause. A control run shows that the same tests pass against
the plain reference driver. A sample of the defects runs by default; ``--full`` runs all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance._clauses import SENTENCES
from tests.conformance.defects import DEFECTS, SAMPLE, VARIANTS

ROOT = Path(__file__).resolve().parents[2]
# Generous: a run that hangs is a bug of the suite, reported as such rather than waited for.
RUN_TIMEOUT = 600


def certify(
    sut_cmd: list[str], clauses: list[str], out: Path, tests: Sequence[str] = (), options: Sequence[str] = ()
) -> tuple[int, dict[str, Any], str]:
    """Certify ``sut_cmd`` on the tests citing ``clauses`` (of ``tests``, if given), with more
    ``options`` of certify; (exit code, certificate, output)."""
    argv = [
        sys.executable,
        "-m",
        "conformance._cli",
        "certify",
        "-n",
        "1",
        "--sut-cmd",
        subprocess.list2cmdline(sut_cmd),
    ]
    for clause_id in clauses:
        argv += ["--clause", clause_id]
    # Only whether (and on which clause) a property fails matters here, not its shrunk example.
    argv += ["--no-shrink", "--out", str(out)]
    for test in tests:
        argv += ["--test", test]
    argv += options
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    output = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (out / "certificate.json").exists(), f"no certificate (exit {proc.returncode}):\n{output}"
    return proc.returncode, json.loads((out / "certificate.json").read_text()), output


def defect_cmd(name: str) -> list[str]:
    return [sys.executable, "-m", "tests.conformance.defects", name]


def _predicted(twin: str) -> list[str]:
    """The lexical-vector probes that the model of a wrong ranker predicts to fail (the first two)."""
    from conformance.suite import test_ranking
    from tests.conformance.vectors._defective import DEFECTIVE, observe

    caught = [probe for probe in test_ranking.PROBES if observe(probe, DEFECTIVE[twin]) is not None]
    assert caught, f"the lexical vectors do not catch {twin}"
    test = test_ranking.test_rankings_are_the_lexical_vectors.__name__
    return [f"test_ranking.py::{test}[{probe.id}]" for probe in caught[:2]]


def check_caught(name: str, tmp_path: Path) -> None:
    defect = DEFECTS[name]
    tests = _predicted(defect.twin) if defect.twin else ()
    code, cert, output = certify(defect_cmd(name), [defect.clause], tmp_path, tests)

    assert not cert["errors"], f"{name}: the suite broke instead of reporting a finding: {cert['errors']}\n{output}"
    protocol = [f["message"] for f in cert["failures"] if f["protocol"]]
    assert not protocol, f"{name}: the driver broke the protocol instead of failing a check: {protocol}"
    # A broken SHOULD sentence is a warning: the run still passes, with the clause failing.
    blocking = SENTENCES[defect.sentence].level == "MUST"
    assert cert["failures"], f"{name} ({defect.summary}) passed every test citing {defect.clause}"
    assert code == (1 if blocking else 0), f"{name}: exit {code} for a broken {SENTENCES[defect.sentence].level}"
    on_clause = [f for f in cert["failures"] if defect.clause in f["clauses"]]
    assert on_clause, f"{name}: caught, but not on {defect.clause}: {[f['label'] for f in cert['failures']]}"
    row = next(r for r in cert["clauses"] if r["clause"] == defect.clause)
    assert row["status"] == "fail"


@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_a_sample_of_defects_is_caught_on_its_clause(name: str, tmp_path: Path) -> None:
    check_caught(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(DEFECTS) - set(SAMPLE)))
def test_every_other_defect_is_caught_on_its_clause(name: str, tmp_path: Path) -> None:
    check_caught(name, tmp_path)


# The test command certifies the reference driver on the whole suite already; this run
# repeats it on the defects' clauses, in the shape the defect runs use.
@pytest.mark.slow
def test_the_reference_driver_passes_the_tests_the_defects_are_caught_by(tmp_path: Path) -> None:
    clauses = sorted({defect.clause for defect in DEFECTS.values()})

    code, cert, output = certify([sys.executable, "-m", "reference_impl.driver"], clauses, tmp_path)

    assert code == 0 and not cert["failures"] and not cert["errors"], output
    assert {r["clause"]: r["status"] for r in cert["clauses"] if r["clause"] in clauses} == dict.fromkeys(
        clauses, "pass"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_variant_that_chooses_otherwise_where_allowed_passes(name: str, tmp_path: Path) -> None:
    variant = VARIANTS[name]

    code, cert, output = certify(defect_cmd(name), list(variant.clauses), tmp_path)

    failures = [f"{f['label']}: {f['message']}" for f in cert["failures"]]
    assert code == 0 and not failures and not cert["errors"], f"{name} ({variant.choice}): {failures}\n{output}"


def _must_sentences() -> list[str]:
    from conformance._clauses import CLAUSES

    return [s.id for c in CLAUSES.values() for s in c.sentences if s.level == "MUST"]


def test_every_must_sentence_has_a_defect_the_suite_must_catch() -> None:
    covered = {d.sentence for d in DEFECTS.values()}

    missing = [s for s in _must_sentences() if s not in covered]

    assert missing == [], f"MUST sentences with no defect in tests/conformance/defects: {missing}"


def test_the_defective_driver_refuses_an_unknown_defect() -> None:
    proc = subprocess.run(
        [*defect_cmd("no_such_defect")], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2
    assert "first_round_97" in proc.stderr
