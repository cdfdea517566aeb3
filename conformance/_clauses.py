"""The clauses of ``SPEC.md``, parsed once from the copy shipped inside the package.

A clause is written as a level-3 heading ``### ID · LEVEL · PROFILE``, a body, and a line
``Sources: F1, R2, P3.`` citing the design's facts and rulings and the driver protocol's
numbered requirements. Tests cite clauses with :func:`clause`, which refuses an unknown id
when the test module is imported, so a typo never turns into a silently untested clause.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Final, Literal, cast

import pytest

from conformance._errors import SpecError, UnknownClause, UsageError

__all__ = [
    "CLAUSES",
    "Clause",
    "Level",
    "Profile",
    "clause",
    "clauses_of",
    "load_clauses",
    "parse_spec",
    "profile_of",
]

Level = Literal["MUST", "SHOULD", "MAY"]
Profile = Literal["core", "lexical"]

_HEADING: Final = re.compile(
    r"^### (?P<id>[A-Z]+-[1-9][0-9]*) · (?P<level>MUST|SHOULD|MAY) · (?P<profile>core|lexical)$"
)
_SOURCES: Final = re.compile(r"^Sources: (?P<items>[FRP][1-9][0-9]*(?:, [FRP][1-9][0-9]*)*)\.$")


@dataclass(frozen=True, slots=True)
class Clause:
    """One numbered requirement of the specification."""

    id: str
    level: Level
    profile: Profile
    # The `## ` section the clause sits in, for instance "Budgets".
    section: str
    # The body, paragraphs separated by a blank line, lines of a paragraph joined.
    text: str
    # Facts (F1–F31) and rulings (R1–R12) of the design, and requirements of PROTOCOL.md
    # (P1, P2, …), that the clause comes from.
    sources: tuple[str, ...]


def parse_spec(markdown: str) -> dict[str, Clause]:
    """Parse the clauses of a specification text, in document order.

    Raises:
        SpecError: a malformed clause heading, a clause without its ``Sources:`` line,
            text after it, or an id defined twice; the message names the line.
    """
    clauses: dict[str, Clause] = {}
    section = ""
    current: re.Match[str] | None = None
    start = 0
    body: list[str] = []
    closed = False

    def finish(lineno: int) -> None:
        if current is not None and not closed:
            raise SpecError(f"SPEC.md line {start}: clause {current['id']} has no 'Sources:' line before line {lineno}")

    for lineno, line in enumerate(markdown.splitlines(), start=1):
        stripped = line.rstrip()
        if stripped.startswith("## "):
            finish(lineno)
            section, current = stripped[3:].strip(), None
        elif stripped.startswith("### "):
            finish(lineno)
            current = _HEADING.match(stripped)
            if current is None:
                raise SpecError(
                    f"SPEC.md line {lineno}: expected '### ID · MUST|SHOULD|MAY · core|lexical', got {stripped!r}"
                )
            if current["id"] in clauses:
                raise SpecError(f"SPEC.md line {lineno}: clause {current['id']} is defined twice")
            start, body, closed = lineno, [], False
        elif current is None:
            continue
        elif closed:
            if stripped:
                raise SpecError(f"SPEC.md line {lineno}: text after the 'Sources:' line of clause {current['id']}")
        elif (sources := _SOURCES.match(stripped)) is not None:
            text = "\n\n".join(" ".join(p.split()) for p in "\n".join(body).strip().split("\n\n"))
            if not text:
                raise SpecError(f"SPEC.md line {start}: clause {current['id']} has no text")
            clauses[current["id"]] = Clause(
                id=current["id"],
                level=cast(Level, current["level"]),
                profile=cast(Profile, current["profile"]),
                section=section,
                text=text,
                sources=tuple(sources["items"].split(", ")),
            )
            closed = True
        elif stripped.startswith("Sources:"):
            raise SpecError(f"SPEC.md line {lineno}: expected 'Sources: F1, R2.', got {stripped!r}")
        else:
            body.append(stripped)
    finish(len(markdown.splitlines()) + 1)
    return clauses


def load_clauses() -> Mapping[str, Clause]:
    """Read and parse the ``SPEC.md`` shipped inside the ``conformance`` package."""
    try:
        text = resources.files("conformance").joinpath("SPEC.md").read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read the SPEC.md shipped with the conformance package: {exc}") from exc
    clauses = parse_spec(text)
    if not clauses:
        raise SpecError("the SPEC.md shipped with the conformance package defines no clause")
    return MappingProxyType(clauses)


#: Every clause of the shipped specification, by id, in document order.
CLAUSES: Final[Mapping[str, Clause]] = load_clauses()


def _known(clause_id: str) -> Clause:
    try:
        return CLAUSES[clause_id]
    except KeyError:
        close = difflib.get_close_matches(clause_id, list(CLAUSES), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; SPEC.md defines {', '.join(CLAUSES)}"
        raise UnknownClause(clause_id, hint) from None


def clause(*ids: str) -> pytest.MarkDecorator:
    """Mark a test as checking the given clauses: ``@clause("BUD-1", "BUD-3")``.

    Raises:
        UnknownClause: an id is not defined in SPEC.md (raised when the module is imported).
        UsageError: no id was given.
    """
    if not ids:
        raise UsageError("clause() needs at least one clause id, for instance clause('BUD-1')")
    for clause_id in ids:
        _known(clause_id)
    return pytest.mark.clause(*ids)


def profile_of(ids: Iterable[str]) -> Profile:
    """The profile of a test citing ``ids``: lexical if any cited clause is, else core.

    Raises:
        UnknownClause: an id is not defined in SPEC.md.
    """
    return "lexical" if any(_known(clause_id).profile == "lexical" for clause_id in ids) else "core"


def clauses_of(item: pytest.Item) -> tuple[str, ...]:
    """The clause ids an item cites through ``clause`` markers, in order, without repeats."""
    ids: dict[str, None] = {}
    for mark in item.iter_markers("clause"):
        ids.update(dict.fromkeys(str(arg) for arg in mark.args))
    return tuple(ids)
