"""DESIGN.md resolves every source that SPEC.md cites, and every item it states is cited."""

from __future__ import annotations

import re
from collections import Counter
from importlib import resources

from conformance import CLAUSES

DESIGN = resources.files("conformance").joinpath("DESIGN.md").read_text(encoding="utf-8")
SPEC = resources.files("conformance").joinpath("SPEC.md").read_text(encoding="utf-8")

# An item is a list entry that starts with its bold id: "- **F12.** Some words ...".
_ITEM = re.compile(r"^- \*\*(?P<id>[FR][1-9][0-9]*)\.\*\* \S", re.MULTILINE)


def _defined() -> list[str]:
    return [match["id"] for match in _ITEM.finditer(DESIGN)]


def _cited() -> set[str]:
    """The design's facts and rulings that SPEC.md cites (P-numbers are PROTOCOL.md's)."""
    return {source for clause in CLAUSES.values() for source in clause.sources if source[0] in "FR"}


def test_every_source_a_clause_cites_is_defined_in_the_design() -> None:
    undefined = sorted(_cited() - set(_defined()))

    assert undefined == [], f"SPEC.md cites sources that DESIGN.md does not state: {undefined}"


def test_every_fact_and_ruling_of_the_design_is_cited_by_a_clause() -> None:
    uncited = sorted(set(_defined()) - _cited(), key=lambda item: (item[0], int(item[1:])))

    assert uncited == [], f"DESIGN.md states items that no clause of SPEC.md cites: {uncited}"


def test_each_item_is_defined_once_and_the_numbering_has_no_gaps() -> None:
    defined = _defined()
    twice = sorted(item for item, count in Counter(defined).items() if count > 1)
    facts = sorted(int(item[1:]) for item in defined if item.startswith("F"))
    rulings = sorted(int(item[1:]) for item in defined if item.startswith("R"))

    assert twice == []
    assert facts == list(range(1, 32))
    assert rulings == list(range(1, 15))


def test_the_design_speaks_only_of_the_design() -> None:
    # The design is stated in this project's own words; it points at nothing outside it.
    assert not re.search(r"\.\./|article|https?://", DESIGN)


def test_the_specification_links_the_design() -> None:
    intro = SPEC.split("\n## ", 1)[0]

    assert "[`DESIGN.md`](DESIGN.md)" in intro
