"""The guide (``conformance/README.md``) and the README document what the commands really offer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance._certificate import EXIT_CODES
from conformance._cli import certify_parser

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "conformance" / "README.md"


def _section(title: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^#)", text, re.M | re.S)
    assert match, f"the guide has lost its section {title!r}"
    return match.group(1)


def _documented_flags(table: str) -> set[str]:
    """The flags named in the first column of a markdown table."""
    flags: set[str] = set()
    for row in table.splitlines():
        if row.startswith("| `"):
            first = row.split(" | ")[0]
            flags |= {flag for flag in re.findall(r"`(-[-\w]*)", first) if flag != "--"}
    return flags


def test_the_guide_documents_every_option_of_certify_and_no_other() -> None:
    offered = {flag for action in certify_parser()._actions for flag in action.option_strings} - {"-h", "--help"}

    documented = _documented_flags(_section("Options"))

    assert documented, "no option found in the guide's table"
    # A long flag is enough where the short one has a twin (-v, --verbose).
    missing = {flag for flag in offered - documented if flag.startswith("--") or flag == "-n"}
    assert not missing, f"certify offers options the guide does not document: {sorted(missing)}"
    assert documented <= offered, f"the guide documents options certify lacks: {sorted(documented - offered)}"


@pytest.mark.parametrize("document", [GUIDE, ROOT / "README.md"], ids=["guide", "readme"])
def test_each_document_gives_every_verdict_with_its_exit_code(document: Path) -> None:
    text = document.read_text(encoding="utf-8")

    rows = {verdict: int(code) for code, verdict in re.findall(r"^\| (\d) \| `([^`]+)` \|", text, re.M)}

    assert rows == dict(EXIT_CODES)
