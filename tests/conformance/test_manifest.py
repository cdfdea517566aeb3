"""Every normative sentence of the specification has a check, or a stated reason why not, and
every MUST sentence a line of the reference that implements it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import conformance._manifest as manifest_module
from conformance._clauses import SENTENCES, load_clauses
from conformance._cli import main
from conformance._errors import ConformanceError
from conformance._manifest import (
    MANIFEST_PATH,
    PENDING,
    UNIMPLEMENTED,
    UNTESTED,
    ReferenceCitation,
    citations,
    implementations,
    manifest,
    manifest_document,
    reference_citations,
    reference_sources,
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


def test_every_must_sentence_has_a_line_of_the_reference_that_implements_it() -> None:
    implemented = implementations()

    missing = [
        sentence.id
        for clause in load_clauses().values()
        for sentence in clause.sentences
        if sentence.level == "MUST" and sentence.id not in implemented and sentence.id not in UNIMPLEMENTED
    ]

    assert missing == [], (
        f"MUST sentences no line of reference_impl cites: {missing}; cite each where it is implemented "
        "(`# DSC-5.2: why`), or say in UNIMPLEMENTED why no line of the reference can"
    )


def test_no_unimplemented_entry_names_an_implemented_or_unknown_sentence() -> None:
    implemented = implementations()

    stale = [ref for ref in UNIMPLEMENTED if ref in implemented or ref not in SENTENCES]

    assert stale == [], f"UNIMPLEMENTED entries for sentences the reference cites, or unknown: {stale}"


def test_the_reference_cites_only_known_clauses_and_sentences() -> None:
    unknown = [
        f"{c.location}: {c.ref}"
        for c in reference_citations()
        if c.ref not in SENTENCES and c.ref not in load_clauses()
    ]

    assert unknown == [], f"reference_impl cites ids SPEC.md does not define: {unknown}"


def test_every_implementing_place_is_a_line_that_cites_its_sentence() -> None:
    root = reference_sources().parent

    wrong = [
        place
        for sentence, places in implementations().items()
        for place in places
        if sentence not in _line(root, place)
    ]

    assert wrong == []


def _line(root: Path, place: str) -> str:
    path, number = place.rsplit(":", 1)
    return (root / path).read_text(encoding="utf-8").splitlines()[int(number) - 1]


def test_citations_are_collected_by_file_and_line_and_only_ids_of_spec_families_count(tmp_path: Path) -> None:
    package = tmp_path / "reference_impl"
    (package / "driver").mkdir(parents=True)
    (package / "__init__.py").write_text('"""UTF-8 names, SHA-256 digests and ID-11 are no citations."""\n')
    (package / "_a.py").write_text("x = 1\n# DSC-5.2: a null limit counts as 6 (ID-12); see DSC-5 and DSC-5.3.\n")
    (package / "driver" / "_b.py").write_text('"""PRO-1.1 and XYZ-9.9 and NOPE-3."""\n')

    found = reference_citations(package)

    assert found == [
        ReferenceCitation("DSC-5.2", "reference_impl/_a.py", 2),
        ReferenceCitation("DSC-5", "reference_impl/_a.py", 2),
        ReferenceCitation("DSC-5.3", "reference_impl/_a.py", 2),
        ReferenceCitation("PRO-1.1", "reference_impl/driver/_b.py", 1),
        ReferenceCitation("XYZ-9.9", "reference_impl/driver/_b.py", 1),
    ]
    assert implementations(package) == {
        "DSC-5.2": ["reference_impl/_a.py:2"],
        "DSC-5.3": ["reference_impl/_a.py:2"],
        "PRO-1.1": ["reference_impl/driver/_b.py:1"],
        "XYZ-9.9": ["reference_impl/driver/_b.py:1"],
    }


def test_the_manifest_carries_the_implementing_lines_of_each_sentence() -> None:
    document = manifest_document()["clauses"]
    implemented = implementations()

    rows = {s: row for clause in document.values() for s, row in clause["sentences"].items()}

    assert {s: row["implemented_by"] for s, row in rows.items() if "implemented_by" in row} == implemented


def test_without_the_reference_sources_the_manifest_is_refused_not_written_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "manifest.json"
    monkeypatch.setattr(manifest_module, "REFERENCE_PACKAGE", "no_such_reference_package")
    monkeypatch.setattr(manifest_module, "MANIFEST_PATH", target)

    with pytest.raises(ConformanceError, match="no_such_reference_package"):
        render_manifest()
    with pytest.raises(SystemExit) as exited:
        main(["manifest", "--write"])

    assert exited.value.code != 0
    assert "implemented_by cannot be collected" in capsys.readouterr().err
    assert not target.exists()
