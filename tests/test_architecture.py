"""ARCHITECTURE.md names every module of the three packages, each in its package's section, and no module that is
gone; its module → clause table of the reference is what the reference's modules cite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance._clauses import clause_id_of, load_clauses
from conformance._manifest import reference_citations

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reference_impl", "mock_servers", "conformance")
# A module as the page names it: `_spec`, `suite/_named`, `driver/__main__`, or `_fixture.FleetFactory`.
NAMED = re.compile(r"`((?:[a-z]+/)?_{0,2}[a-z0-9_]+)(?:\.[A-Z][A-Za-z]*)?`")


def _section(package: str) -> str:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.MULTILINE)
    found = [part for part in parts if part.startswith(f"`{package}`")]
    assert len(found) == 1, f"ARCHITECTURE.md has no section '## `{package}`: …'"
    return found[0]


def _modules(package: str) -> set[str]:
    folder = ROOT / package
    return {
        str(path.relative_to(folder).with_suffix("")) for path in folder.rglob("*.py") if path.name != "__init__.py"
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_is_named_in_its_package_section(package: str) -> None:
    named = set(NAMED.findall(_section(package)))
    missing = sorted(_modules(package) - named)
    assert not missing, f"ARCHITECTURE.md, section {package}: say what these modules are: {missing}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_named_in_a_section_is_gone(package: str) -> None:
    named = {name for name in NAMED.findall(_section(package)) if name.startswith("_") or "/" in name}
    gone = sorted(named - _modules(package) - {"__all__", "__init__"})
    assert not gone, f"ARCHITECTURE.md, section {package}, names modules that do not exist: {gone}"


# A row of the reference's module → clause table: | `_catalog` | CAT-1, CAT-2 |
CLAUSE_ROW = re.compile(r"^\| `(?P<module>[^`]+)` \| (?P<clauses>[A-Z]+-[0-9]+(?:, [A-Z]+-[0-9]+)*) \|$", re.MULTILINE)


def cited_clauses() -> dict[str, str]:
    """Module of ``reference_impl`` -> the clauses whose sentences (or whole ids) it cites, in SPEC order."""
    order = list(load_clauses())
    cited: dict[str, set[str]] = {}
    for citation in reference_citations():
        module = citation.path.removeprefix("reference_impl/").removesuffix(".py")
        clause = clause_id_of(citation.ref)
        if clause in order:
            cited.setdefault(module, set()).add(clause)
    return {module: ", ".join(sorted(ids, key=order.index)) for module, ids in sorted(cited.items())}


def test_the_module_to_clause_table_is_what_the_reference_cites() -> None:
    table = {row["module"]: row["clauses"] for row in CLAUSE_ROW.finditer(_section("reference_impl"))}

    expected = cited_clauses()

    rendered = "\n".join(f"| `{module}` | {clauses} |" for module, clauses in expected.items())
    assert table == expected, (
        "ARCHITECTURE.md's module → clause table of reference_impl differs from the sentence ids its modules "
        f"cite; the rows as the citations give them:\n{rendered}"
    )
