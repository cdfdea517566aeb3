"""The optional profiles ``eviction`` and ``refresh``: claimed by the reference only when turned on.

Not claimed, their clauses are not applicable; forced with ``--profile``, the reference
without the option breaks them, as a host that only grows or reads its catalog once would.
(The reference with the options is certified ``conformant`` for each by ``scripts/test``.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conformance.certifying import certify

REFERENCE = [sys.executable, "-m", "reference_impl.driver"]


@pytest.mark.e2e
@pytest.mark.slow
def test_the_reference_without_the_optional_profiles_breaks_their_clauses_when_forced(tmp_path: Path) -> None:
    tests = [
        "test_eviction.py::test_the_least_recently_used_goes_first_and_comes_back_when_found_again",
        "test_refresh.py::test_a_tool_the_server_removed_leaves_the_definitions_the_gate_and_discovery",
    ]

    code, cert, output = certify(REFERENCE, [], tmp_path, tests, ["--profile", "eviction", "--profile", "refresh"])

    assert (code, cert["verdict"]) == (1, "non-conformant"), output
    assert sorted(f["clauses"] for f in cert["failures"]) == [["EVC-5"], ["RFR-1"]]
    assert cert["profiles_under_test"] == ["eviction", "refresh"]
    assert cert["profile_source"] == "--profile eviction --profile refresh"


@pytest.mark.e2e
@pytest.mark.slow
def test_the_profiles_of_an_implementation_that_does_not_claim_them_are_not_applicable(tmp_path: Path) -> None:
    code, cert, output = certify(REFERENCE, ["EVC-3", "BUD-4"], tmp_path)

    statuses = {row["clause"]: row["status"] for row in cert["clauses"]}
    assert (code, cert["verdict"], cert["profiles_under_test"]) == (0, "partial", ["core", "lexical"]), output
    assert {statuses[c] for c in statuses if c.startswith(("EVC-", "RFR-"))} == {"not-applicable"}
    assert statuses["BUD-4"] == "pass"
