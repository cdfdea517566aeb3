"""Every clause of the specification has a suite test or a stated reason why not."""

from __future__ import annotations

from conformance._clauses import load_clauses
from conformance._manifest import PENDING, UNTESTED, citations, manifest


def test_every_clause_has_a_test_a_reason_or_is_pending() -> None:
    gaps = [
        entry.clause
        for entry in manifest()
        if not entry.tests and entry.untested_reason is None and entry.clause not in PENDING
    ]

    assert gaps == [], f"clauses with no suite test, no reason in UNTESTED and not PENDING: {gaps}"


def test_no_pending_clause_is_already_tested() -> None:
    stale = sorted(PENDING & set(citations()))

    assert stale == [], f"PENDING lists clauses that now have tests: {stale}"


def test_no_untested_entry_names_a_tested_or_unknown_clause() -> None:
    cited = citations()
    known = load_clauses()

    stale = [clause for clause in UNTESTED if clause in cited or clause not in known]

    assert stale == [], f"UNTESTED entries for clauses that are tested or unknown: {stale}"


def test_suite_cites_only_known_clauses() -> None:
    unknown = sorted(set(citations()) - set(load_clauses()))

    assert unknown == []
