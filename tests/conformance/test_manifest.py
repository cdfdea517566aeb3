"""Every clause of the specification has a suite test or a stated reason why not."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conformance._clauses import load_clauses
from conformance._manifest import (
    MANIFEST_PATH,
    PENDING,
    UNTESTED,
    citations,
    manifest,
    manifest_document,
    render_manifest,
)


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


def test_the_committed_manifest_is_what_spec_md_and_the_suite_generate() -> None:
    committed = MANIFEST_PATH.read_text(encoding="utf-8") if MANIFEST_PATH.exists() else ""

    assert committed == render_manifest(), (
        f"{MANIFEST_PATH} is out of date (a clause, its level or profile, or the tests citing it changed); "
        "regenerate it with: mcp-conformance manifest --write"
    )


def test_the_manifest_carries_every_clause_with_its_level_and_profile() -> None:
    document = manifest_document()["clauses"]

    assert list(document) == list(load_clauses())
    for clause_id, clause in load_clauses().items():
        row = document[clause_id]
        assert (row["level"], row["profile"]) == (clause.level, clause.profile)
        assert len({"tests", "untested", "pending", "gap"} & set(row)) == 1


def test_a_level_change_in_the_spec_changes_the_generated_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance._manifest as module

    real = load_clauses()
    first = next(iter(real))
    changed = {cid: (dataclasses.replace(c, level="SHOULD") if cid == first else c) for cid, c in real.items()}
    before = render_manifest()
    monkeypatch.setattr(module, "load_clauses", lambda: changed)

    after = render_manifest()

    assert before != after
    assert json.loads(after)["clauses"][first]["level"] == "SHOULD"
