"""Every normative sentence of the specification has a check, or a stated reason why not."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conformance._clauses import SENTENCES, load_clauses
from conformance._manifest import (
    MANIFEST_PATH,
    PENDING,
    UNTESTED,
    citations,
    manifest,
    manifest_document,
    render_manifest,
    suite_tests,
)


def test_every_must_and_should_sentence_has_a_check_a_reason_or_is_pending() -> None:
    gaps = [
        entry.sentence
        for entry in manifest()
        if not entry.checks and entry.untested_reason is None and entry.sentence not in PENDING
    ]

    assert gaps == [], f"sentences with no check, no reason in UNTESTED and not PENDING: {gaps}"


def test_every_may_sentence_is_untested_with_a_reason_or_checked() -> None:
    loose = [e.sentence for e in manifest() if e.level == "MAY" and not e.checks and e.untested_reason is None]

    assert loose == []


def test_no_pending_sentence_is_already_checked() -> None:
    stale = sorted(PENDING & set(citations()))

    assert stale == [], f"PENDING lists sentences that now have checks: {stale}"


def test_no_untested_entry_names_a_checked_or_unknown_sentence() -> None:
    cited = citations()

    stale = [ref for ref in UNTESTED if ref in cited or ref not in SENTENCES]

    assert stale == [], f"UNTESTED entries for sentences that are checked or unknown: {stale}"


def test_suite_cites_only_known_clauses_and_sentences() -> None:
    unknown = sorted(ref for ref in citations() if ref not in SENTENCES and ref not in load_clauses())

    assert unknown == []


def test_every_suite_test_cites_a_sentence() -> None:
    tests = set(suite_tests())
    citing = {t for ref, ts in citations().items() if ref in SENTENCES for t in ts}

    assert sorted(tests - citing) == []


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
        assert list(row["sentences"]) == [s.id for s in clause.sentences]
        for sentence in row["sentences"].values():
            assert len({"checks", "untested", "pending", "gap"} & set(sentence)) == 1


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
