from __future__ import annotations

import re
from importlib import resources

import pytest

from conformance import CLAUSES, SpecError, UnknownClause, UsageError, clause, profile_of
from conformance._clauses import SENTENCES, clause_id_of, parse_spec
from conformance._protocol import requirements
from tests.conformance.conftest import INI

pytest_plugins = ["pytester"]

SPEC = resources.files("conformance").joinpath("SPEC.md").read_text(encoding="utf-8")


def test_every_clause_heading_of_the_spec_is_parsed() -> None:
    headings = re.findall(r"^### (\S+)", SPEC, flags=re.MULTILINE)

    assert list(CLAUSES) == headings
    assert len(set(headings)) == len(headings)


def test_every_clause_has_a_valid_level_profile_text_and_sources() -> None:
    for clause_id, parsed in CLAUSES.items():
        assert parsed.id == clause_id
        assert parsed.level in ("MUST", "SHOULD", "MAY")
        assert parsed.profile in ("core", "lexical", "eviction", "refresh")
        assert parsed.text and parsed.section
        assert parsed.sources


def test_every_fact_and_ruling_is_cited_by_some_clause() -> None:
    cited = {source for parsed in CLAUSES.values() for source in parsed.sources}

    assert {f"F{n}" for n in range(1, 32)} | {f"R{n}" for n in range(1, 14)} <= cited


def test_every_protocol_requirement_a_clause_cites_is_numbered_in_protocol_md() -> None:
    cited = {source for parsed in CLAUSES.values() for source in parsed.sources if source.startswith("P")}

    assert cited
    assert cited <= set(requirements())


def test_the_driver_protocol_clauses_cite_protocol_md_only() -> None:
    protocol = [parsed for parsed in CLAUSES.values() if parsed.section == "Driver protocol"]

    assert [parsed.id for parsed in protocol] == [f"PRO-{n}" for n in range(1, 10)]
    assert all(parsed.sources and all(s.startswith("P") for s in parsed.sources) for parsed in protocol)


def test_a_clause_keeps_its_section_text_and_sources() -> None:
    parsed = CLAUSES["CAT-2"]

    assert (parsed.level, parsed.profile, parsed.section, parsed.sources) == ("MUST", "core", "Catalog", ("R8", "R14"))
    assert parsed.text.startswith("Listing follows `nextCursor` from page to page until a page has no cursor")
    assert [(s.id, s.level) for s in parsed.sentences] == [
        ("CAT-2.1", "MUST"),
        ("CAT-2.2", "MUST"),
        ("CAT-2.3", "MUST"),
        ("CAT-2.4", "MAY"),
    ]


def test_a_sentence_has_its_clause_level_unless_marked_and_continuation_lines_join_it() -> None:
    parsed = parse_spec(
        "### DSC-9 · MUST · core\n1. One call\n   activates tools.\n2. (MAY) It may find none.\nSources: F1.\n"
    )["DSC-9"]

    assert [(s.id, s.level, s.text) for s in parsed.sentences] == [
        ("DSC-9.1", "MUST", "One call activates tools."),
        ("DSC-9.2", "MAY", "It may find none."),
    ]


def test_a_withdrawn_sentence_keeps_its_number_and_binds_nothing() -> None:
    parsed = parse_spec(
        "### DSC-9 · MUST · core\n1. One call\n   activates tools.\n2. (Withdrawn) Said by DSC-9.1.\n"
        "3. It reports them.\nSources: F1.\n"
    )["DSC-9"]

    assert [s.id for s in parsed.sentences] == ["DSC-9.1", "DSC-9.3"]
    assert dict(parsed.withdrawn) == {"DSC-9.2": "Said by DSC-9.1."}
    assert "Said by" not in parsed.text


def test_a_clause_whose_every_sentence_is_withdrawn_is_refused() -> None:
    with pytest.raises(SpecError, match="has no sentence that is not withdrawn"):
        parse_spec("### DSC-9 · MUST · core\n1. (Withdrawn) Said by DSC-8.1.\nSources: F1.\n")


def test_citing_a_withdrawn_sentence_is_refused_with_where_its_rule_went() -> None:
    with pytest.raises(UnknownClause, match=r"'DSC-4\.4'; DSC-4\.4 is withdrawn: .*POL-1\.4"):
        clause("DSC-4.4")


def test_every_sentence_of_the_spec_has_an_id_in_the_table() -> None:
    assert list(SENTENCES) == [s.id for c in CLAUSES.values() for s in c.sentences]
    assert all(SENTENCES[s].text for s in SENTENCES)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("### CAT-1 · MUST\n1. Body.\nSources: F1.\n", "line 1: expected '### ID"),
        ("### CAT-1 · MUST · core\n1. Body.\n### CAT-2 · MUST · core\n1. Body.\nSources: F1.\n", "no 'Sources:' line"),
        (
            "### CAT-1 · MUST · core\n1. Body.\nSources: F1.\n### CAT-1 · MAY · core\n1. X.\nSources: F2.\n",
            "defined twice",
        ),
        ("### CAT-1 · MUST · core\n1. Body.\nSources: F1\n", "expected 'Sources: F1, R2.'"),
        ("### CAT-1 · MUST · core\n1. Body.\nSources: X1.\n", "expected 'Sources: F1, R2.'"),
        ("### CAT-1 · MUST · core\n1. Body.\nSources: F1.\nStray text.\n", "text after the 'Sources:' line"),
        ("### CAT-1 · MUST · core\nSources: F1.\n", "has no sentence"),
        ("### CAT-1 · MUST · core\n1. Body.\n", "no 'Sources:' line"),
        ("### CAT-1 · MUST · core\nBody.\nSources: F1.\n", "expected a numbered sentence"),
        ("### CAT-1 · MUST · core\n1. One.\n3. Three.\nSources: F1.\n", "sentence 3 where 2 is due"),
    ],
)
def test_a_malformed_spec_is_refused_naming_the_line(text: str, problem: str) -> None:
    with pytest.raises(SpecError, match=re.escape(problem)):
        parse_spec(text)


def test_sources_may_cite_facts_rulings_and_protocol_requirements() -> None:
    parsed = parse_spec("### PRO-9 · MUST · core\n1. Body.\nSources: F1, R2, P13.\n")

    assert parsed["PRO-9"].sources == ("F1", "R2", "P13")


def test_clause_returns_a_marker_with_the_cited_ids() -> None:
    mark = clause("BUD-1", "BUD-3.2")

    assert (mark.name, mark.args) == ("clause", ("BUD-1", "BUD-3.2"))


def test_clause_with_an_unknown_sentence_suggests_the_closest_one() -> None:
    with pytest.raises(UnknownClause, match=r"unknown clause id 'BUD-3.9'; did you mean 'BUD-3.4'\?"):
        clause("BUD-3.9")


def test_a_sentence_id_names_its_clause() -> None:
    assert clause_id_of("DSC-10.3") == "DSC-10"
    assert clause_id_of("DSC-10") == "DSC-10"


def test_clause_with_an_unknown_id_suggests_the_closest_one() -> None:
    with pytest.raises(UnknownClause, match=r"unknown clause id 'BUD-10'; did you mean 'BUD-1'\?"):
        clause("BUD-10")


def test_clause_without_ids_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        clause()


def test_a_test_module_citing_an_unknown_clause_fails_when_imported(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(
        """
        from conformance import clause

        @clause("GATE-99")
        def test_gate():
            pass
        """
    )

    result = pytester.runpytest()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*UnknownClause: unknown clause id 'GATE-99'*"])


def test_the_profile_of_a_test_is_lexical_when_any_cited_clause_is() -> None:
    assert profile_of(["SEL-4", "SEL-5"]) == "lexical"
    assert profile_of(["SEL-4.1", "DSC-10.2"]) == "lexical"
    assert profile_of(["SEL-4"]) == "core"
    assert profile_of([]) == "core"


def test_the_profile_of_a_test_is_the_optional_profile_it_cites_and_one_only() -> None:
    assert profile_of(["DEF-1.1", "EVC-2.1"]) == "eviction"
    assert profile_of(["RFR-1.1", "GATE-1.1"]) == "refresh"
    with pytest.raises(UsageError, match=r"the profiles \['eviction', 'refresh'\]; cite those of one of them"):
        profile_of(["EVC-1.1", "RFR-1.1"])
