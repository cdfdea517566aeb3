"""Fixtures of the shipped suite."""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from conformance import OutcomeError, Sut
from conformance.suite import _wire
from conformance.suite._eligibility import PolicyDiagnosis
from conformance.suite._fleets import Fleets
from conformance.suite._probes import vector_diagnosis as _vector_diagnosis
from conformance.suite._vectors import Diagnosis


@pytest.fixture(scope="session")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleets]:
    """The fleet server of this pytest process (started on first use)."""
    manager = Fleets(tmp_path_factory.mktemp("fleets"))
    try:
        yield manager
    finally:
        manager.close()


@pytest.fixture(scope="session")
def vector_diagnosis(sut: Sut, fleets: Fleets) -> Iterator[Diagnosis]:
    """The lexical vector probes against the SUT, each run once in this pytest process, and the
    sentences a difference is blamed on."""
    with _vector_diagnosis(sut, fleets) as diagnosis:
        yield diagnosis


@pytest.fixture(scope="session")
def policy_diagnosis(sut: Sut, fleets: Fleets) -> PolicyDiagnosis:
    """Which policy rule the SUT misreads, asked on the way to a finding (see _eligibility)."""
    return PolicyDiagnosis(sut, fleets)


@pytest.fixture(autouse=True)
def _findings_diagnosed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Let this test's findings be diagnosed against the policies of the fleets it serves."""
    if not {"sut", "fleets"} <= set(request.fixturenames):
        yield
        return
    diagnosis: PolicyDiagnosis = request.getfixturevalue("policy_diagnosis")
    diagnosis.fleets.recent.clear()
    _wire.diagnosis = diagnosis
    try:
        yield
    finally:
        _wire.diagnosis = None


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """A refusal the test did not expect is a finding on the clauses it cites, unless it was
    for pins a policy excludes or a policy rule is misread: then the test is inconclusive,
    naming that."""
    try:
        return (yield)
    except OutcomeError as refused:
        diagnosis = _wire.diagnosis
        if diagnosis is not None:
            # No sentences given: the finding would be on the ones the test cites.
            broken_first = diagnosis.refusal_or_inconclusive(refused.kind) or diagnosis.finding_or_inconclusive(())
            if broken_first is not None:
                raise broken_first from refused
        raise
