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
from tests.conformance.defects import DEFECTS, SAMPLE

#: MUST sentences that have no hand-written defect yet.
WITHOUT_DEFECT: frozenset[str] = frozenset(
    {
        "CAT-1.1",
        "CAT-1.2",
        "CAT-1.3",
        "CAT-2.2",
        "CAT-2.3",
        "CAT-3.1",
        "CAT-3.2",
        "CAT-4.1",
        "CAT-4.2",
        "CAT-4.3",
        "POL-1.1",
        "POL-1.2",
        "POL-1.3",
        "POL-1.4",
        "POL-2.1",
        "POL-2.3",
        "POL-3.1",
        "POL-3.2",
        "POL-4.1",
        "POL-4.2",
        "POL-4.3",
        "POL-4.4",
        "POL-5.1",
        "POL-5.3",
        "POL-5.5",
        "POL-5.6",
        "POL-6.1",
        "POL-6.2",
        "POL-6.3",
        "POL-7.1",
        "POL-7.2",
        "POL-7.3",
        "POL-7.4",
        "POL-8.1",
        "POL-8.2",
        "POL-9.1",
        "POL-9.2",
        "POL-9.3",
        "POL-9.4",
        "POL-9.5",
        "DEF-1.1",
        "DEF-1.2",
        "DEF-1.3",
        "DEF-2.1",
        "DEF-3.1",
        "DEF-4.1",
        "DEF-4.2",
        "DEF-5.2",
        "DEF-5.3",
        "DEF-5.4",
        "ISO-1.2",
        "ISO-2.1",
    }
)

ROOT = Path(__file__).resolve().parents[2]
# Generous: a run that hangs is a bug of the suite, reported as such rather than waited for.
RUN_TIMEOUT = 600


def certify(
    sut_cmd: list[str], clauses: list[str], out: Path, tests: Sequence[str] = ()
) -> tuple[int, dict[str, Any], str]:
    """Certify ``sut_cmd`` on the tests citing ``clauses`` (of ``tests``, if given); (exit code, certificate, output)."""
    argv = [sys.executable, "-m", "conformance._cli", "certify", "--sut-cmd", subprocess.list2cmdline(sut_cmd)]
    for clause_id in clauses:
        argv += ["--clause", clause_id]
    # Only whether (and on which clause) a property fails matters here, not its shrunk example.
    argv += ["--no-shrink", "--out", str(out)]
    for test in tests:
        argv += ["--test", test]
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


def test_the_reference_driver_passes_the_tests_the_defects_are_caught_by(tmp_path: Path) -> None:
    clauses = sorted({defect.clause for defect in DEFECTS.values()})

    code, cert, output = certify([sys.executable, "-m", "reference_impl.driver"], clauses, tmp_path)

    assert code == 0 and not cert["failures"] and not cert["errors"], output
    assert {r["clause"]: r["status"] for r in cert["clauses"] if r["clause"] in clauses} == dict.fromkeys(
        clauses, "pass"
    )


def _must_sentences() -> list[str]:
    from conformance._clauses import CLAUSES

    return [s.id for c in CLAUSES.values() for s in c.sentences if s.level == "MUST"]


def test_every_must_sentence_has_a_defect_the_suite_must_catch() -> None:
    covered = {d.sentence for d in DEFECTS.values()}

    missing = [s for s in _must_sentences() if s not in covered and s not in WITHOUT_DEFECT]

    assert missing == [], f"MUST sentences with no defect in tests/conformance/defects: {missing}"


def test_no_sentence_is_listed_as_without_a_defect_once_it_has_one() -> None:
    covered = {d.sentence for d in DEFECTS.values()}

    assert sorted(WITHOUT_DEFECT & covered) == []
    assert sorted(WITHOUT_DEFECT - set(_must_sentences())) == []


def test_the_defective_driver_refuses_an_unknown_defect() -> None:
    proc = subprocess.run(
        [*defect_cmd("no_such_defect")], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2
    assert "first_round_97" in proc.stderr
